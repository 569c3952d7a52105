/*
 * wait_evidence.h - what the rules about host waits (d2h-sync, sync-call) decide and say alike:
 * the waits of each step, whether their cost recurs, and the finding: its title and bounds, the
 * waits' medians per step, those that cost GPU time by sync type, the costliest of them, their
 * call sites and the waits' noise floor.
 */
#ifndef CUSCOPE_WAIT_EVIDENCE_H
#define CUSCOPE_WAIT_EVIDENCE_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/analyze.h"
#include "d2h_waits.h"
#include "recurrence.h"

/* A recurring pattern: draining waits in at least this share of the steady steps ... */
#define RU_WAIT_MIN_STEP_SHARE 0.5
/* ... and in at least this many of them, costing at least RU_MIN_LOSS_SHARE of the median step
 * (fewer steps: a pattern in a few steps, at least RU_RARE_MIN_STEPS of them). */
#define RU_WAIT_MIN_STEPS 3
/* Call sites listed in the evidence. */
#define RU_WAIT_MAX_SITES 5

/*
 * The decision and the finding of a rule about host waits (d2h-sync, sync-call):
 * - the waits d of ctx's run summed by step, each charged its idle less taken[i] when taken is
 *   not NULL (the part of it another rule charges);
 * - whether the GPU idle charged to them recurs in its steady steps: ru_recur_find() with
 *   RU_WAIT_MIN_STEPS, RU_WAIT_MIN_STEP_SHARE, RU_RARE_MIN_STEPS and RU_MIN_LOSS_SHARE (skip_ends
 *   as there);
 * - if it does, the finding of rule (ru_recur_finding()) with fix, titled "<what> the GPU N times
 *   per step: X of GPU idle per step (S%)" when it recurs in about every step (N: the median of
 *   the waits that drained it per step), else "<what> the GPU in K of N steady steps: ..." (with
 *   the median idle of the affected steps), with ru_recur_near_text()'s words;
 * - its first and last: the start of the first wait that costs GPU time in a steady step (with
 *   copies, of the first copy it waited for) and the end of the window the last one is charged
 *   for;
 * - its evidence: the medians of the sums over the affected steps, the waits that cost GPU time by
 *   sync type, the costliest of them (with copies, its first copy; else its stream), their call
 *   sites (merged by the wait's stack; with copies, by the first copy's when the wait has none;
 *   the costliest site's stack as f's), the noise floor, the steady and affected steps, the idle
 *   left to the input's rules when there is some, and the decision (ru_recur_evidence());
 * - its fix as an edit of the run, ru_edit_no_waits() (with copies);
 * then the finding handed to the report (ru_finish()). copies: the waits are those of
 * device-to-host copies (d2h-sync). 0, or the error, set in err.
 */
int ru_wait_report(cs_rule_ctx *ctx, const char *rule, const char *what, const char *fix,
		   const struct fact_waits *d, const int64_t *taken, int copies, int skip_ends,
		   cs_error *err);

#endif
