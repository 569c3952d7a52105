/*
 * h2d_stalls.h - a fact of the analysis: the host-to-device copies of the steady steps asked for
 * after the launching thread made no CUDA call for far longer than its launch pace while the GPU
 * ran out of work. dataloader-stall reports those at the step's boundary (the next batch),
 * host-created-tensor those inside the step (a tensor made on the host); d2h-sync leaves their
 * windows to them.
 *
 * A fact takes what it is made of as parameters and knows nothing of the rules' cache; the cache
 * (cache.h, ru_cached_h2d_stalls) computes it once per process and run.
 */
#ifndef CUSCOPE_FACT_H2D_STALLS_H
#define CUSCOPE_FACT_H2D_STALLS_H

#include <stdint.h>

#include "cuscope/analyze.h"

struct fact_launch_calls;

struct fact_h2d_stall {
	int64_t copy;	    /* index in a->copies */
	int32_t step;	    /* steady step of its launch */
	int64_t stall_ns;   /* GPU idle from the end of the earlier work (or the thread's last CUDA
			     * call, when later) to the copy's launch call */
	int64_t stretch_ns; /* the launching thread's time without a CUDA call before it */
	int in_step;	    /* host-created-tensor's: inside the step, not the next batch's */
};
struct fact_h2d_stalls {
	struct fact_h2d_stall *v;
	int64_t n;
	int64_t far; /* the launch pace: median time between launch calls + 5 robust deviations */
};
/*
 * Each host-to-device copy (not a memset) of the steps' process launched in a steady step after
 * all the process's earlier GPU work had ended, whose launching thread made no recorded CUDA call
 * (launch, host wait, API row) for longer than far before it. in_step says who owns it: where the
 * program marked its steps, a copy launched between the step's first and last kernel launch is
 * host-created-tensor's and one at the boundary dataloader-stall's; with steps from the kernel
 * sequence's period, whose phase is arbitrary, a copy with more than 10% of the step's kernels
 * (and more than 2) launched before it and after it is inside. 0, or CS_ERR_NOMEM; freed with
 * fact_h2d_stalls_free().
 */
int fact_h2d_stalls(const cs_analysis *a, const cs_steps *s, const struct fact_launch_calls *lc,
		    struct fact_h2d_stalls *out);
void fact_h2d_stalls_free(struct fact_h2d_stalls *x);

#endif
