/*
 * d2h_waits.h - a fact of the analysis: the host waits of one process (stream, context or event
 * synchronize, a synchronous memcpy, a query that ended a polling loop), each with the GPU idle
 * after it and what it cost. d2h-sync reports those that waited for a device-to-host copy and
 * launch-starvation leaves their windows to it; sync-call and pageable-memcpy report the others.
 *
 * A fact takes what it is made of as parameters and knows nothing of the rules' cache; the cache
 * (cache.h, ru_cached_d2h and ru_cached_host_waits) computes each once per process and run.
 */
#ifndef CUSCOPE_FACT_D2H_WAITS_H
#define CUSCOPE_FACT_D2H_WAITS_H

#include <stdint.h>

#include "cuscope/analyze.h"

/* ---- device-to-host copies followed by a host wait (d2h-sync) ---- */

struct fact_wait {
	int64_t sync;		      /* index in a->syncs */
	int64_t first_copy;	      /* index in a->copies of the first copy it waited for */
	int32_t step;		      /* steady step of the wait, or -1 */
	int32_t copies;		      /* DtoH copies since the previous host wait */
	int64_t bytes;		      /* their bytes */
	int drained;		      /* all GPU work queued before the wait ended had ended */
	int64_t idle_start, idle_end; /* the GPU idle right after the wait (none: equal) */
	int64_t refill_ns;	      /* starved gaps while the queue refilled, at most the lead */
	int64_t window_end;	      /* end of the time after the wait that it is charged for */
	int32_t refill_gaps;	      /* gaps counted in refill_ns */
	int64_t cost;		      /* GPU time it cost: see fact_d2h_waits() */
};
struct fact_waits {
	struct fact_wait *v;
	int64_t n;
	/* The GPU's own gap between two pieces of work when the next was already queued (the
	 * median over the process's back-to-back pairs), and how many pairs it comes from. */
	int64_t floor_ns;
	int64_t floor_pairs;
};

/*
 * The GPU's own gap between two pieces of work of process pid when the second was already queued:
 * in start order, each piece launched (its launch call returned) before the GPU work so far ended
 * and starting at or after that end leaves a gap the host did not cause. ns is the median of those
 * gaps, pairs how many there were (0: none, and ns 0). The waits' facts below take it as their
 * floor; it is computed once for both. 0, or CS_ERR_NOMEM.
 */
struct fact_floor {
	int64_t ns, pairs;
	int64_t lag; /* fact_gpu_launch_lag() of pid */
};
int fact_gpu_floor(const cs_analysis *a, uint32_t pid, struct fact_floor *out);

/*
 * The host waits (stream, context or event synchronize, a synchronous memcpy) of the steps'
 * process that waited for a device-to-host copy launched since the previous host wait, each with
 * the GPU idle after it. A wait drained the GPU when every piece of GPU work launched before it
 * ended had ended by the time it returned (the GPU had nothing left to run); its idle runs from
 * the later of the wait's start and the end of that work to the start of the first work launched
 * after it. A drained wait whose idle is longer than the GPU's own back-to-back gap (floor_ns,
 * measured in the same trace) costs that idle in full, plus the starved gaps that follow while
 * the host refills the queue (each next piece of work launched only after the GPU ran out of
 * work), until work is queued ahead again, the next host wait or the end of the step, counted up
 * to the lead the host had before the wait (the time it waited). A query is a host wait only when
 * it ends a polling loop (load.c marks it: done right after not ready, same thread and stream);
 * other queries and stream-wait-event are never listed.
 */
int fact_d2h_waits(const cs_analysis *a, const cs_steps *s, const struct fact_floor *floor,
		   struct fact_waits *out);
void fact_waits_free(struct fact_waits *d);
static inline int64_t fact_wait_idle(const struct fact_wait *w)
{
	return w->idle_end > w->idle_start ? w->idle_end - w->idle_start : 0;
}
/* GPU time a wait cost: nothing unless it drained the GPU, else the idle and the refill. */
static inline int64_t fact_wait_cost(const struct fact_wait *w)
{
	return w->cost;
}

/* ---- host waits with no device-to-host copy to wait for (sync-call) ---- */

/*
 * The explicit host waits of the steps' process: stream, context or event synchronize (and a query
 * that ended a polling loop) with no device-to-host copy launched since the previous host wait
 * ended (those are fact_d2h_waits()'s), not a synchronous memcpy, and not followed by a device
 * memory release before the next launch (the caching allocator's own waits, which the memory
 * rules judge). Each has its idle, drained flag, refill and cost as fact_d2h_waits() computes them,
 * in one pass over all the host waits of the process, so that the idle before a piece of work
 * goes to the first wait that ended before it was launched, whichever rule that wait is of: a
 * wait's idle is never also a device-to-host wait's. copies, bytes are 0 and first_copy is -1.
 * The wait a blocking copy from pageable memory made right after its call
 * (fact_pageable_copy_waits()) is not explicit: *copy gives those, computed in the same pass.
 * copy_wait is the process's fact_pageable_copy_waits() (a->ncopies entries). 0 or CS_ERR_NOMEM;
 * both freed with fact_waits_free().
 */
int fact_host_waits(const cs_analysis *a, const cs_steps *s, const int64_t *copy_wait,
		    const struct fact_floor *floor, struct fact_waits *sync, struct fact_waits *copy);

#endif
