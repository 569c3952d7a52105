/*
 * model.h - the one in-memory model of a trace: its events loaded once into compact arrays, sorted
 * by start time (kernels also by stream through stream_order), with the lookups every reader shares,
 * and its training steps. report, diff and gate, export and view read a trace through it; the rules
 * (analyze.h) and their facts derive everything else from it.
 *
 * A trace of 10 million events must be read once: nothing that works on the model queries SQLite
 * itself.
 */
#ifndef CUSCOPE_MODEL_H
#define CUSCOPE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/error.h"
#include "cuscope/trace.h"

/* ---- the loaded trace ---- */

/* Times are ns since the trace start; CS_TS_UNKNOWN when unknown. */
typedef struct cs_a_kernel {
	int64_t start, end;
	int64_t launch_start, launch_end; /* host API call that launched it */
	int64_t name_id;		  /* StringIds id: cs_analysis_string() gives the text */
	int64_t stack_id;
	uint32_t pid, launch_tid;
	uint32_t stream_id;
	int32_t device_id;
	int32_t graph;	     /* 1 when replayed from a CUDA graph */
	int32_t grid_blocks; /* gridX * gridY * gridZ */
} cs_a_kernel;

typedef struct cs_a_copy { /* memcpy and memset */
	int64_t start, end;
	int64_t launch_start, launch_end;
	int64_t bytes;
	int64_t stack_id;
	uint32_t pid, launch_tid;
	uint32_t stream_id;
	int32_t device_id;
	int32_t copy_kind;	    /* enum cs_copy_kind; CS_COPY_UNKNOWN for memsets */
	int32_t src_kind, dst_kind; /* enum cs_mem_kind */
	int32_t is_async;
	int32_t is_memset;
} cs_a_copy;

typedef struct cs_a_memory {
	int64_t start;
	int64_t bytes;
	uint64_t address;
	int64_t stack_id;
	uint32_t pid;
	int32_t device_id;
	int32_t op; /* enum cs_mem_op */
	int32_t is_vmm;
	int32_t result; /* 0 = success */
	int32_t mem_kind;
} cs_a_memory;

/* 1 when a memory row is about GPU memory that allocators manage: device, managed and array
 * allocations, VMM operations, and rows of unknown kind (failed calls). Pinned and pageable host
 * memory (cudaHostAlloc, pin_memory) and a module's static __device__ variables are not. */
int cs_a_memory_is_device(const cs_a_memory *r);

typedef struct cs_a_sync {
	int64_t start, end;
	int64_t stack_id;
	uint32_t pid, tid;
	int64_t stream_id; /* CS_ID_NONE when not stream-specific */
	int32_t type;	   /* enum cs_sync_type */
	int32_t host_wait; /* cs_sync_type_is_host_wait(type), or a query that ended a polling loop
			    */
	int32_t cbid;
	int32_t result; /* the call's result: 0 = success (for a query: done) */
} cs_a_sync;

typedef struct cs_a_api {
	int64_t start, end;
	int64_t name_id;
	int64_t stack_id;
	uint32_t pid, tid;
	int32_t cbid;
	int32_t result;
} cs_a_api;

typedef struct cs_a_nvtx {
	int64_t start, end;
	int64_t text_id;
	uint32_t pid, tid;
	int32_t type; /* enum cs_nvtx_type */
	int32_t depth;
} cs_a_nvtx;

/*
 * A window of a trace too large for memory: the events that start in [start, end) only
 * (cs_analysis_load_opts(), docs/commands/report.md, "Large traces").
 */
typedef struct cs_load_window {
	int on;		    /* 1 when only the window was loaded; 0: the whole trace */
	int asked;	    /* 1 when the window was asked for (cs_load_opts.from, to) */
	int by_limit;	    /* 1 when max_bytes chose the window (or narrowed the one asked) */
	int64_t start, end; /* ns since the trace start */
	int64_t trace_start, trace_end; /* the whole trace's first and last timestamp */
	int64_t events, trace_events;	/* rows loaded, rows of the trace */
	int64_t bytes, trace_bytes;	/* estimated memory of the window's model and the whole's */
	int64_t asked_bytes;		/* that of the window asked, before the limit narrowed it */
	int64_t max_bytes;		/* the limit (0 = none) */
} cs_load_window;

typedef struct cs_analysis {
	cs_trace *trace;
	int64_t trace_start, trace_end;
	cs_a_kernel *kernels;
	int64_t nkernels;
	cs_a_copy *copies; /* memcpys and memsets together, by start */
	int64_t ncopies;
	cs_a_memory *memory;
	int64_t nmemory;
	cs_a_sync *syncs;
	int64_t nsyncs;
	cs_a_api *apis;
	int64_t napis;
	cs_a_nvtx *nvtx;
	int64_t nnvtx;
	int64_t device_memory_total; /* of the first device, bytes; 0 when unknown */
	/* Kernel indices grouped by stream (pid, device, stream, in order of first appearance),
	 * each group by start; nkernels entries. */
	int32_t *kernel_stream_order;
	/* Longest end - start of each array, ns (0 when empty). */
	int64_t kernel_longest, copy_longest, sync_longest;
	struct cs_analysis_index *index; /* internal lookup tables of load.c */
	cs_load_window window;		 /* what was loaded: the whole trace, or a window of it */
} cs_analysis;

/* Load everything the analyzers need from an open trace (one pass per table). */
int cs_analysis_load(cs_trace *t, cs_analysis *a, cs_error *err);
void cs_analysis_free(cs_analysis *a);

/* What cs_analysis_load_opts() loads. */
typedef struct cs_load_opts {
	int64_t max_bytes; /* the most the model may need (cs_analysis_estimate()); 0: any */
	/* only the events that start in [from, to), ns since the trace start; CS_TS_UNKNOWN leaves
	 * that side open (both: the whole trace) */
	int64_t from, to;
} cs_load_opts;

/*
 * cs_analysis_load() within a memory limit, or of a window of the trace. When the estimated model
 * of the whole trace (or of the window o->from .. o->to) needs more than o->max_bytes, the events
 * of a contiguous time range in its middle (steady state: the start holds warm-up) are loaded
 * instead, as many as fit; a->window says which, and a->trace_start and a->trace_end are its
 * bounds. Without a window and within the limit, the same as cs_analysis_load(). o NULL: no limit.
 * Errors: those of cs_analysis_load(); CS_ERR_INVALID when the window asked holds no part of the
 * trace, or when the limit holds no event of it (err says so in one line).
 */
int cs_analysis_load_opts(cs_trace *t, cs_analysis *a, const cs_load_opts *o, cs_error *err);
/* The memory the model of a trace with these row counts needs, bytes: its arrays and indices and
 * what the rules build from them (about 105 bytes per event, measured). */
int64_t cs_analysis_estimate(const int64_t counts[CS_EV_COUNT]);
/*
 * The window w as one line for people (into buf, returned): "41.2 s to 58.9 s of 100 s: the middle
 * 18.3 million of 100 million events; the whole would need 9.80 GiB, over the memory limit of
 * 4.00 GiB (--max-memory)". "" when w holds the whole trace.
 */
char *cs_load_window_text(char *buf, size_t size, const cs_load_window *w);
/* The default limit of the model's memory: a quarter of the physical memory, at most 4 GiB. */
int64_t cs_analysis_default_max_bytes(void);
/* Text of a StringIds id ("" when unknown); lives as long as the trace. */
const char *cs_analysis_string(const cs_analysis *a, int64_t id);
/* One more than the largest kernel name id (0 when none): the size of an array by name id, which
 * load.c keeps small (name ids beyond the strings are dropped). Found while loading. */
int64_t cs_analysis_kernel_names(const cs_analysis *a);
/* Index of the first element of a start-sorted array with start >= t (binary search). */
int64_t cs_analysis_kernel_at(const cs_analysis *a, int64_t t);
int64_t cs_analysis_copy_at(const cs_analysis *a, int64_t t);
int64_t cs_analysis_sync_at(const cs_analysis *a, int64_t t);
int64_t cs_analysis_memory_at(const cs_analysis *a, int64_t t);
int64_t cs_analysis_api_at(const cs_analysis *a, int64_t t);
int64_t cs_analysis_nvtx_at(const cs_analysis *a, int64_t t);
/*
 * Index of the first kernel (copy) that may overlap time t: every element before it ends at or
 * before t. Scan from there while start < t1 to find all elements overlapping [t, t1).
 */
int64_t cs_analysis_kernel_overlapping(const cs_analysis *a, int64_t t);
int64_t cs_analysis_copy_overlapping(const cs_analysis *a, int64_t t);
/*
 * GPU busy time in [t0, t1): the union of the GPU intervals of kernels, memcpys and memsets of
 * process pid (0 = every process), clipped to the window, ns.
 */
int64_t cs_analysis_gpu_busy(const cs_analysis *a, uint32_t pid, int64_t t0, int64_t t1);
/* The time of the last event of process pid (the latest start or end of any kind), as
 * cs_trace_unended() gives it; CS_TS_UNKNOWN when it has none. */
int64_t cs_analysis_last_time(const cs_analysis *a, uint32_t pid);
/* Host time a piece of GPU work was launched: launch_start, or start when that is unknown. */
static inline int64_t cs_launch_time(int64_t launch_start, int64_t start)
{
	return launch_start != CS_TS_UNKNOWN ? launch_start : start;
}

/* ---- steps ---- */

enum cs_step_method {
	CS_STEPS_NONE = 0, /* no repeating structure: the whole trace is one step */
	CS_STEPS_NVTX,	   /* NVTX ranges named by --step-range */
	CS_STEPS_PROFILER, /* cudaProfilerStart/Stop */
	CS_STEPS_PERIOD,   /* the repeating period of the kernel sequence */
	CS_STEPS_WINDOWS,  /* none of those: the run cut into windows of equal length (with
			    * cs_step_opts.windows), for the rules to run on */
};

typedef struct cs_step {
	int64_t start, end; /* host-side span: from the first launch of the step to the first launch
			     * of the next (or the step's last GPU end) */
	int64_t gpu_start, gpu_end; /* first GPU start, last GPU end of the step's work */
	int64_t gpu_busy; /* ns when any kernel, copy or memset of the process ran (union of
			   * intervals) in the span, or in the GPU window with CS_STEP_TIME_GPU */
	int64_t kernels;  /* kernels launched in the step */
	int32_t index;	  /* 0-based */
	int32_t warmup;	  /* 1 for warm-up steps */
} cs_step;

/* Where a step's time comes from (docs/steps.md, "Step time"). */
enum cs_step_timing {
	CS_STEP_TIME_HOST = 0, /* the host span: the host sets the pace */
	CS_STEP_TIME_GPU,      /* the host runs ahead: the GPU's period, from the GPU start of the
				* step's first work to that of the next step */
};

typedef struct cs_step_opts {
	const char *step_range; /* fnmatch pattern of NVTX range text, or NULL */
	int warmup;		/* steps to mark as warm-up; -1 = default */
	uint32_t pid; /* process to take steps from; 0 = the process with the most kernels */
	/* when no steps are found: 1 cuts the process's launches into windows of equal length
	 * (CS_STEPS_WINDOWS, docs/steps.md), 0 makes the whole trace one step (CS_STEPS_NONE) */
	int windows;
} cs_step_opts;

typedef struct cs_steps {
	cs_step *v;
	int32_t n;
	enum cs_step_method method;
	int32_t warmup;	    /* how many of v are warm-up */
	int32_t period;	    /* kernels per step for CS_STEPS_PERIOD, else 0 */
	int32_t period_ops; /* GPU operations (kernels, memcpys, memsets) per step, likewise */
	enum cs_step_timing timing; /* where step times come from (cs_step_time) */
	uint32_t pid;
	char detail[160]; /* one line on how the steps were found */
} cs_steps;

int cs_steps_detect(const cs_analysis *a, const cs_step_opts *o, cs_steps *out, cs_error *err);
void cs_steps_free(cs_steps *s);
/* Index of the step containing host time t, or -1. */
int cs_steps_find(const cs_steps *s, int64_t t);
/* cs_steps_find_near() when the hint's step is not the answer: a binary search. */
int cs_steps_find_search(const cs_steps *s, int64_t t, int *hint);
/* cs_steps_find() for times asked in about their order: *hint (-1 at first) keeps the step of
 * the last search, and a time in it or between it and the next takes no search (inline: the
 * rules ask it for each of millions of kernels). */
static inline int cs_steps_find_near(const cs_steps *s, int64_t t, int *hint)
{
	int j = *hint;

	if (s && j >= 0 && j < s->n && t != CS_TS_UNKNOWN && s->v[j].start <= t &&
	    (j + 1 >= s->n || s->v[j + 1].start > t))
		return t < s->v[j].end ? j : -1;
	return cs_steps_find_search(s, t, hint);
}
/* cs_steps_find_steady() with a hint, as cs_steps_find_near(). */
static inline int cs_steps_find_steady_near(const cs_steps *s, int64_t t, int *hint)
{
	int st = cs_steps_find_near(s, t, hint);

	return st >= 0 && !s->v[st].warmup ? st : -1;
}
/* The steady-state (not warm-up) step that contains host time t, or -1. */
int cs_steps_find_steady(const cs_steps *s, int64_t t);
/*
 * Time of step i, ns: the GPU's period with CS_STEP_TIME_GPU (from the GPU start of its first work
 * to the next step's; the last step to its GPU end; the span for a step without GPU work), else
 * its host span end - start.
 */
int64_t cs_step_time(const cs_steps *s, int32_t i);
/* Name of a step timing: "host", "gpu". */
const char *cs_step_timing_name(int timing);
/* Median, p10 and p90 of the steady-state (non-warm-up) step times (cs_step_time), ns; 0 when no
 * steps. */
void cs_steps_duration_stats(const cs_steps *s, int64_t *median, int64_t *p10, int64_t *p90);
/* GPU busy share of the steady steps' time (of every step when none is steady); 0 without steps. */
double cs_steps_busy_share(const cs_steps *s);
/*
 * Index of the step of GPU work launched at launch_start (start when the launch time is unknown),
 * or -1 when it was launched outside every step.
 */
int cs_steps_find_launch(const cs_steps *s, int64_t launch_start, int64_t start);
/* Number of steady-state steps (s->n - s->warmup). */
int32_t cs_steps_steady(const cs_steps *s);
/* The default number of warm-up steps of s: up to the last step of the first half whose host
 * span is an outlier, far over the median of all the steps (docs/steps.md). */
int32_t cs_steps_default_warmup(const cs_steps *s);
/*
 * Per-step sums of the GPU time (end - start) of the kernels for which match(k, arg) is non-zero
 * (every kernel when match is NULL), each counted in the step of its launch; out has s->n slots,
 * overwritten. Kernels of all processes are counted (filter on k->pid in match).
 */
void cs_steps_kernel_time(const cs_analysis *a, const cs_steps *s,
			  int (*match)(const cs_a_kernel *k, void *arg), void *arg, int64_t *out);
/*
 * Median of per_step (s->n values) over the steady-state steps, or over all steps when none is
 * steady; with nonzero_only, over the steps whose value is not 0 (0 when there are none).
 */
int64_t cs_steps_median(const cs_steps *s, const int64_t *per_step, int nonzero_only);
/* Name of a step detection method: "none", "nvtx", "profiler", "period", "windows". */
const char *cs_step_method_name(int method);

#endif
