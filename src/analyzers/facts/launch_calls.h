/*
 * launch_calls.h - a fact of the analysis: the launch calls of one process (the host calls that
 * enqueued its kernels, memcpys and memsets), by start. launch-starvation measures the host's
 * launch pace from them and h2d_stalls the time since a thread's last CUDA call; both used to
 * gather and sort the same ten million calls each.
 *
 * A fact takes what it is made of as parameters and knows nothing of the rules' cache; the cache
 * (cache.h, ru_cached_launch_calls) computes it once per process and run.
 */
#ifndef CUSCOPE_FACT_LAUNCH_CALLS_H
#define CUSCOPE_FACT_LAUNCH_CALLS_H

#include <stdint.h>

#include "cuscope/analyze.h"

/*
 * One call in 16 bytes (8 million calls on the 10-million-event trace: 128 MiB, not 192): the end
 * as an offset from the start. A call whose end is that far from its start that the offset does
 * not fit has FACT_CALL_END_FAR there and its end and thread in the fact's far[], at the index its
 * tid field holds. Read the end and the thread with fact_launch_call_end() and _tid().
 */
#define FACT_CALL_END_UNKNOWN INT32_MIN	      /* launch_end not recorded */
#define FACT_CALL_END_FAR     (INT32_MIN + 1) /* launch_end in far[] */
struct fact_launch_call {
	int64_t start;	 /* launch_start: known */
	int32_t end_rel; /* launch_end - start as recorded (even negative), or one of the above */
	uint32_t tid;	 /* launching thread; with FACT_CALL_END_FAR the index in far[] */
};

struct fact_launch_call_far {
	int64_t end;
	uint32_t tid;
};

struct fact_launch_calls {
	struct fact_launch_call *v;
	int64_t n;
	struct fact_launch_call_far *far; /* the calls whose end is too far from the start */
	size_t nfar, far_cap;
};

/* launch_end as recorded: CS_TS_UNKNOWN, or even before start */
static inline int64_t fact_launch_call_end(const struct fact_launch_calls *lc,
					   const struct fact_launch_call *c)
{
	if (c->end_rel > FACT_CALL_END_FAR)
		return c->start + c->end_rel;
	return c->end_rel == FACT_CALL_END_UNKNOWN ? CS_TS_UNKNOWN : lc->far[c->tid].end;
}

/* the launching thread */
static inline uint32_t fact_launch_call_tid(const struct fact_launch_calls *lc,
					    const struct fact_launch_call *c)
{
	return c->end_rel == FACT_CALL_END_FAR ? lc->far[c->tid].tid : c->tid;
}

/*
 * The calls of pid's kernels, then its copies and memsets, whose launch start is known, sorted by
 * start and, among equal starts, in that order (each array in its own order: the order a stable
 * sort of the kernels' calls followed by the copies' gives). 0, or CS_ERR_NOMEM.
 */
int fact_launch_calls(const cs_analysis *a, uint32_t pid, struct fact_launch_calls *out);
void fact_launch_calls_free(struct fact_launch_calls *f);

#endif
