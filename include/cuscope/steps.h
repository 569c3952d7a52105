/*
 * steps.h - the training steps of the model of a trace (src/model/steps.c, docs/steps.md): how
 * they are found (NVTX ranges, cudaProfilerStart/Stop, the period of the GPU work, windows), their
 * times, and the search for the step of a time.
 */
#ifndef CUSCOPE_STEPS_H
#define CUSCOPE_STEPS_H

#include <stdint.h>

#include "cuscope/error.h"
#include "cuscope/model.h"

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
