/*
 * gpu_order.h - a fact of the analysis: the GPU work of a process (its kernels, copies and
 * memsets) merged in start order, as a walk over the loaded arrays that allocates nothing. The
 * device-to-host waits, the host waits, the host-to-device stalls and launch-starvation's idle
 * by cause all walk it. Also the walk over the kernels launched in the steady steps, which the
 * host-to-device stalls and the idle by cause count per step.
 */
#ifndef CUSCOPE_FACT_GPU_ORDER_H
#define CUSCOPE_FACT_GPU_ORDER_H

#include <stdint.h>

#include "cuscope/analyze.h"

struct fact_gpu_work {
	int64_t start, end;
	int64_t launch_start, launch_end; /* CS_TS_UNKNOWN when not known */
	int64_t index;			  /* in a->kernels or a->copies */
	int is_kernel;
	int graph; /* a kernel replayed from a CUDA graph */
};

/* Merges kernels and copies (memsets included) of one process (pid 0: all) by start. */
struct fact_gpu_iter {
	const cs_analysis *a;
	uint32_t pid;
	int64_t k, c;
};
void fact_gpu_iter_init(struct fact_gpu_iter *it, const cs_analysis *a, uint32_t pid);

/* Defined here so that the walks, each over millions of kernels, have them inlined. */
static inline int fact_gpu_kernel_ok(const cs_a_kernel *k, uint32_t pid)
{
	return (!pid || k->pid == pid) && k->start != CS_TS_UNKNOWN && k->end != CS_TS_UNKNOWN &&
	       k->end >= k->start;
}

static inline int fact_gpu_copy_ok(const cs_a_copy *c, uint32_t pid)
{
	return (!pid || c->pid == pid) && c->start != CS_TS_UNKNOWN && c->end != CS_TS_UNKNOWN &&
	       c->end >= c->start;
}

/* Next piece of GPU work with known start and end; 0 at the end. */
static inline int fact_gpu_next(struct fact_gpu_iter *it, struct fact_gpu_work *w)
{
	const cs_analysis *a = it->a;
	int have_k, have_c;

	while (it->k < a->nkernels && !fact_gpu_kernel_ok(&a->kernels[it->k], it->pid))
		it->k++;
	while (it->c < a->ncopies && !fact_gpu_copy_ok(&a->copies[it->c], it->pid))
		it->c++;
	have_k = it->k < a->nkernels;
	have_c = it->c < a->ncopies;
	if (!have_k && !have_c)
		return 0;
	if (have_k && (!have_c || a->kernels[it->k].start <= a->copies[it->c].start)) {
		const cs_a_kernel *k = &a->kernels[it->k];

		*w = (struct fact_gpu_work){k->start, k->end, k->launch_start, k->launch_end,
					    it->k++,  1,      k->graph};
	} else {
		const cs_a_copy *c = &a->copies[it->c];

		*w = (struct fact_gpu_work){
			c->start, c->end, c->launch_start, c->launch_end, it->c++, 0, 0};
	}
	return 1;
}

/* Host time the launch of w was finished: launch_end, else launch_start, else CS_TS_UNKNOWN. */
static inline int64_t fact_gpu_launched(const struct fact_gpu_work *w)
{
	if (w->launch_end != CS_TS_UNKNOWN)
		return w->launch_end;
	return w->launch_start;
}

/*
 * The process's launch lag: how long after its launch call returned a kernel starts on a GPU that
 * had nothing to run (the median over the kernels launched so, CUDA graphs' left out, in 10 ns
 * bins up to 50 us), 0 when fewer than FACT_LAG_MIN were or the median is not positive. Work whose
 * call returned less than this before the GPU ran out could not have started sooner: the GPU's
 * gap before it is the host's, though the call ended first. Allocates nothing.
 */
#define FACT_LAG_MIN 20
int64_t fact_gpu_launch_lag(const cs_analysis *a, uint32_t pid);

/* Was w queued ahead: launched (fact_gpu_launched()) at least lag before reach, the end of the
 * GPU work so far, so that a gap before it is the GPU's own? */
static inline int fact_gpu_queued(const struct fact_gpu_work *w, int64_t lag, int64_t reach)
{
	int64_t launched = fact_gpu_launched(w);

	return launched == CS_TS_UNKNOWN || reach == CS_TS_UNKNOWN || launched + lag <= reach;
}

/*
 * The kernels of the process of s launched in its steady steps (by launch time, cs_launch_time()),
 * in the order of a->kernels: fact_steady_kernels_init() starts the walk over a with the steps s,
 * fact_steady_kernel_next() gives the next kernel.
 */
struct fact_steady_kernels {
	const cs_analysis *a;
	const cs_steps *s;
	int64_t i; /* the next kernel to look at */
	int hint;  /* cs_steps_find_steady_near()'s */
};

static inline void fact_steady_kernels_init(struct fact_steady_kernels *it, const cs_analysis *a,
					    const cs_steps *s)
{
	*it = (struct fact_steady_kernels){a, s, 0, -1};
}

/* The next kernel of the walk into *k, its launch time into *t; returns its steady step's index,
 * or -1 after the last kernel. */
static inline int fact_steady_kernel_next(struct fact_steady_kernels *it, const cs_a_kernel **k,
					  int64_t *t)
{
	while (it->i < it->a->nkernels) {
		const cs_a_kernel *x = &it->a->kernels[it->i++];
		int64_t l = cs_launch_time(x->launch_start, x->start);
		int st;

		if (x->pid != it->s->pid ||
		    (st = cs_steps_find_steady_near(it->s, l, &it->hint)) < 0)
			continue;
		*k = x;
		*t = l;
		return st;
	}
	return -1;
}

/* Widen [*first, *last] (each CS_TS_UNKNOWN until set) to hold t. */
static inline void fact_span_widen(int64_t *first, int64_t *last, int64_t t)
{
	if (*first == CS_TS_UNKNOWN || t < *first)
		*first = t;
	if (*last == CS_TS_UNKNOWN || t > *last)
		*last = t;
}

#endif
