/*
 * mem_rules.h - what the two rules of the allocator's release bursts (empty-cache-in-loop,
 * memory-ceiling-thrash; the bursts: facts/release_bursts.h) share: their run, the call sites of
 * the allocator calls they charge, their evidence and the fix as an edit of the run.
 */
#ifndef CUSCOPE_MEM_RULES_H
#define CUSCOPE_MEM_RULES_H

#include <stdint.h>

#include "cuscope/analyze.h"
#include "release_bursts.h"

/*
 * The run of a rule about release bursts (empty-cache-in-loop, memory-ceiling-thrash): the steady
 * steps with a burst for which keep() holds; when there are at least min_steps of them and at least
 * min_share of the steady steps, emit() is called with the bursts, their summary (sum->keep is
 * keep) and those steps. Otherwise, when direct is not NULL, the bursts for which direct() holds
 * (direct evidence, a subset of keep's) are reported however few: emit() gets them with sum->keep
 * set to direct. Otherwise, when there are at least min_steps and the 95% interval of their share
 * of the steady steps holds min_share, emit() gets them with sum->near set; sum->near is also set
 * for a recurring pattern whose interval holds min_share, unless direct evidence is among it.
 * With rare, a pattern in fewer steps than that (at least RU_RARE_MIN_STEPS) is reported when its
 * cost over the steady state (the total divided by the steady steps) is at least rare_min_share
 * of the median step (each burst charged the GPU idle from its first release to
 * the last allocation that filled the cache again, beyond the idle share of the steady steps
 * without a burst): sum->rare is set, sum->lost is that cost per step and
 * sum->lost_each the mean cost in an affected step.
 */
typedef int (*ru_mem_emit_fn)(cs_rule_ctx *ctx, const struct fact_bursts *m,
			      const struct fact_bursts_summary *sum, const int32_t *steps,
			      int32_t n, cs_error *err);
int ru_mem_rule_run(cs_rule_ctx *ctx, int (*keep)(const struct fact_burst *b),
		    int (*direct)(const struct fact_burst *b), int32_t min_steps, double min_share,
		    int rare, double rare_min_share, ru_mem_emit_fn emit, cs_error *err);
/*
 * The call sites of the allocator calls a memory rule's cost charges, for keep's bursts in steps
 * (n of them): with API rows each allocator call of those steps with the GPU idle while it ran
 * (what fact_bursts_step_cost() sums), else each release of the bursts with the GPU idle since the
 * burst's previous release. Listed as ru_sites_evidence() does (at most max, *stack_id the
 * costliest site's, left alone without stacks). 0, or CS_ERR_NOMEM.
 */
int ru_mem_sites(cJSON *e, const cs_analysis *a, const cs_steps *s, const struct fact_bursts *m,
		 int (*keep)(const struct fact_burst *b), const int32_t *steps, int32_t n, int max,
		 int64_t *stack_id);
/* The evidence both memory rules give (docs/rules/): the summary, the reserved peak, failed
 * allocations, the device's memory and the steps. */
void ru_mem_evidence(cJSON *e, const cs_rule_ctx *ctx, const struct fact_bursts *m,
		     const struct fact_bursts_summary *sum, int32_t n);
/*
 * The fix of a memory rule as an edit of the run (docs/replay.md): the device allocator calls of
 * the steps' process from the first release of each burst keep() holds to the last allocation that
 * filled the cache again are not made, nor, for a retry, the synchronizations in that window (the
 * allocator's wait for every stream before it frees). 0 or CS_ERR_NOMEM.
 */
int ru_edit_bursts(cs_report_finding *f, const cs_analysis *a, const cs_steps *s,
		   const struct fact_bursts *m, int (*keep)(const struct fact_burst *b));

/*
 * The end of a memory rule's finding f, its own evidence written: f's first and last the bounds
 * of the bursts of m that keep() holds, their call sites in steps[0..n) (ru_mem_sites(), at most
 * max) and the fix (ru_edit_bursts()); then f handed to the report (ru_emit()). f is freed. 0, or
 * the error, set in err.
 */
int ru_mem_finish(cs_rule_ctx *ctx, cs_report_finding *f, const struct fact_bursts *m,
		  int (*keep)(const struct fact_burst *b), const int32_t *steps, int32_t n, int max,
		  cs_error *err);

#endif
