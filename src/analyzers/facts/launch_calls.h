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

struct fact_launch_call {
	int64_t start;	 /* launch_start: known */
	int64_t end;	 /* launch_end as recorded: CS_TS_UNKNOWN, or even before start */
	uint32_t tid;	 /* launching thread */
	int32_t is_copy; /* 0: a kernel (of a->kernels), 1: a memcpy or memset (a->copies) */
};

struct fact_launch_calls {
	struct fact_launch_call *v;
	int64_t n;
};

/*
 * The calls of pid's kernels, then its copies and memsets, whose launch start is known, sorted by
 * start and, among equal starts, in that order (each array in its own order: the order a stable
 * sort of the kernels' calls followed by the copies' gives). 0, or CS_ERR_NOMEM.
 */
int fact_launch_calls(const cs_analysis *a, uint32_t pid, struct fact_launch_calls *out);
void fact_launch_calls_free(struct fact_launch_calls *f);

#endif
