/*
 * h2d_rules.h - what the two rules of the host-to-device stalls (dataloader-stall,
 * host-created-tensor; the stalls: facts/h2d_stalls.h) share: their run, the call sites of the
 * copies they charge and the fix as an edit of the run.
 */
#ifndef CUSCOPE_H2D_RULES_H
#define CUSCOPE_H2D_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/analyze.h"
#include "h2d_stalls.h"

struct ru_recur;

/* What a rule that charges the host-to-device stalls (dataloader-stall, host-created-tensor) gives
 * ru_run_h2d_rule(). */
struct ru_h2d_rule {
	size_t sum_size; /* of its per-step sum */
	void (*sum)(const cs_analysis *a, const cs_steps *s, const struct fact_h2d_stalls *h,
		    void *sums);
	int64_t (*cost)(const void *sum); /* one step's cost */
	int (*emit)(cs_rule_ctx *ctx, const struct fact_h2d_stalls *h, const void *sums,
		    int32_t *steps, int32_t nsteps, const struct ru_recur *r, int64_t *tmp,
		    cs_error *err);
	int32_t min_steps;
	double min_step_share;
};
/*
 * The call sites of the copies that ended the stalls of h that own() keeps, in steps[0..nsteps),
 * each charged its stall's idle, as ru_sites_evidence() lists them (at most max, *stack_id the
 * costliest site's, left alone without stacks). 0, or CS_ERR_NOMEM.
 */
int ru_h2d_sites(cJSON *e, const cs_analysis *a, const struct fact_h2d_stalls *h,
		 int (*own)(const cs_analysis *a, const struct fact_h2d_stall *y),
		 const int32_t *steps, int32_t nsteps, int max, int64_t *stack_id);
/*
 * The fix of an input rule as an edit of the run (docs/replay.md): the host time without a CUDA
 * call before each copy own() holds in steps (the batch or the tensor being made) is gone from
 * the launching thread; with device, the copy becomes the launch of a kernel that makes the data
 * on the device (its call an asynchronous launch). 0 or CS_ERR_NOMEM.
 */
int ru_edit_h2d(cs_report_finding *f, const cs_analysis *a, const cs_steps *s,
		const struct fact_h2d_stalls *h,
		int (*own)(const cs_analysis *a, const struct fact_h2d_stall *y),
		const int32_t *steps, int32_t nsteps, int device);
/*
 * The whole run of such a rule: the stalls (cached), the per-step sums and costs, the recurrence
 * (ru_recur_decide with the rule's minimums, RU_RARE_MIN_STEPS and RU_MIN_LOSS_SHARE) and, when it
 * recurs, the rule's emit.
 */
int ru_run_h2d_rule(cs_rule_ctx *ctx, const struct ru_h2d_rule *rule, cs_error *err);

#endif
