/*
 * gpu_order.h - a fact of the analysis: the GPU work of a process (its kernels, copies and
 * memsets) merged in start order, as a walk over the loaded arrays that allocates nothing. The
 * device-to-host waits, the host waits, the host-to-device stalls and launch-starvation's idle
 * by cause all walk it.
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
/* Next piece of GPU work with known start and end; 0 at the end. */
int fact_gpu_next(struct fact_gpu_iter *it, struct fact_gpu_work *w);

/* Host time the launch of w was finished: launch_end, else launch_start, else CS_TS_UNKNOWN. */
int64_t fact_gpu_launched(const struct fact_gpu_work *w);

#endif
