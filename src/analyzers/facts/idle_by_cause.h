/*
 * idle_by_cause.h - a fact of the analysis: the GPU idle of a process's steady steps split by
 * cause (enum cs_idle_cause of analyze.h: launch overhead, host work, host waits, the input
 * pipeline, pageable copies, device-to-host waits, allocator calls), from one scan of the gaps
 * the host caused. launch-starvation decides on it, charging each gap to the step of the work
 * that ends it; pageable-memcpy, low-utilization and the report's GPU idle line read the idle of
 * each step's span (cs_steps_idle_by_cause()).
 *
 * A fact takes what it is made of as parameters and knows nothing of the rules' cache; the cache
 * (cache.h, ru_cached_idle_by_cause) computes the idle of each step once per process and run.
 */
#ifndef CUSCOPE_FACT_IDLE_BY_CAUSE_H
#define CUSCOPE_FACT_IDLE_BY_CAUSE_H

#include <stdint.h>

#include "cuscope/analyze.h"
#include "d2h_waits.h"
#include "gpu_order.h"
#include "launch_calls.h"

/* What the scan sums in one step. */
struct fact_idle_step {
	int64_t idle[CS_IDLE_NCAUSES];
	int64_t gaps[CS_IDLE_NCAUSES]; /* gaps with some of their idle charged to the cause */
	int64_t work;		       /* kernels, copies and memsets that ran */
	int64_t work_ns;	       /* their summed duration */
	int64_t launches;	       /* host launch calls: one per kernel, one per graph launch */
	int64_t kernels;	       /* kernels launched in the step */
	int64_t graph_kernels;	       /* of them replayed from a CUDA graph */
	int64_t biggest_gap;	       /* the largest counted gap */
	int64_t biggest_next;	       /* kernel index after it, or -1 */
	int64_t first_kernel;	       /* launch time of the step's first and last kernel */
	int64_t last_kernel;
};

struct fact_idle_inputs;

/* A scan of the starved gaps of one process's steady steps. */
struct fact_idle_scan {
	/* per step (s->n): the launches from fact_idle_scan_prepare(), the gaps once
	 * fact_idle_scan_gaps() has run */
	struct fact_idle_step *acc;
	struct fact_idle_inputs *in; /* the host intervals, launch calls and windows it reads */
};

/*
 * Make what a scan of the starved gaps of the steady steps of s reads, with the device-to-host
 * waits d, the launch calls lc and the launch lag (fact_gpu_launch_lag()) of the steps' process:
 * the host intervals, the launch pace and the launches per step in sc->acc. 0 or CS_ERR_NOMEM; sc
 * is freed with fact_idle_scan_free() in both cases. The rule's scan and the idle by cause each
 * run on these inputs.
 */
int fact_idle_scan_prepare(const cs_analysis *a, const cs_steps *s, const struct fact_waits *d,
			   const struct fact_launch_calls *lc, int64_t lag,
			   struct fact_idle_scan *sc);
void fact_idle_scan_free(struct fact_idle_scan *sc);

/* Told of the work w that ended a gap of step with ns of the idle launch-starvation counts (all
 * but d2h-sync's, the input pipeline's and the allocator calls'): 0, or non-zero to stop the
 * scan, which then returns CS_ERR_NOMEM. */
typedef int (*fact_idle_late_fn)(void *arg, const struct fact_gpu_work *w, int32_t step,
				 int64_t ns);

/*
 * The starved gaps of the steady steps into sc->acc, each charged to the step of the work that
 * ends it (launch-starvation's way), late() (when not NULL) told of each with counted idle. 0, or
 * CS_ERR_NOMEM.
 */
int fact_idle_scan_gaps(const cs_analysis *a, const cs_steps *s, struct fact_idle_scan *sc,
			fact_idle_late_fn late, void *arg);

/*
 * The GPU idle of each step by cause (s->n * CS_IDLE_NCAUSES into idle): each gap charged piece
 * by piece to the steady step whose span holds it, from a prepared scan it leaves as it was. 0,
 * or CS_ERR_NOMEM.
 */
int fact_idle_by_cause(const cs_analysis *a, const cs_steps *s, const struct fact_idle_scan *sc,
		       int64_t *idle);

#endif
