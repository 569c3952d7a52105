/*
 * model.h - the one in-memory model of a trace: its events loaded once into compact arrays, sorted
 * by start time (kernels also by stream through stream_order), with the lookups every reader shares;
 * its training steps are steps.h. report, diff and gate, export and view read a trace through it;
 * the rules (analyze.h) and their facts derive everything else from it.
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
	/* Where the rules look for the program's source files when they are not at their recorded
	 * paths (report --source-dir); NULL: the current directory. Set by the caller. */
	const char *source_dir;
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
/* The same, a window asked for by the option asked_as ("--time-range") rather than --window. */
char *cs_load_window_text_as(char *buf, size_t size, const cs_load_window *w, const char *asked_as);
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
/* Does the API call of this name enqueue a host function (cudaLaunchHostFunc, a stream
 * callback)? */
int cs_api_is_host_func(const char *name);
/* Host time a piece of GPU work was launched: launch_start, or start when that is unknown. */
static inline int64_t cs_launch_time(int64_t launch_start, int64_t start)
{
	return launch_start != CS_TS_UNKNOWN ? launch_start : start;
}

#endif
