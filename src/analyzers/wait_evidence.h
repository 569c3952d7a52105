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

/* The waits of one step. */
struct ru_wait_sum {
	int64_t waits;	   /* all of them */
	int64_t draining;  /* those that cost GPU time */
	int64_t wait_ns;   /* the time they held the host */
	int64_t idle_ns;   /* the GPU idle charged to them: the rule's cost */
	int64_t refill_ns; /* the time the GPU took to fill up again after them */
	int64_t copies;	   /* the device-to-host copies they waited for */
	int64_t bytes;	   /* those copies' bytes */
	int64_t left_ns;   /* the idle left to another rule (the input's), not charged to them */
};
/*
 * Add the wait w of a to its step's sum x; when it costs GPU time, it is charged its idle less
 * taken (the part of it another rule charges, added to left_ns; at least 0).
 */
void ru_wait_sum_add(struct ru_wait_sum *x, const cs_analysis *a, const struct fact_wait *w,
		     int64_t taken);

/*
 * The decision and the finding of a rule about host waits (d2h-sync, sync-call), into *f (NULL
 * when there is none):
 * - whether the GPU idle charged to the waits d of ctx's run recurs in its steady steps:
 *   ru_recur_find() on the idle of sum (by step index) with RU_WAIT_MIN_STEPS,
 *   RU_WAIT_MIN_STEP_SHARE, RU_RARE_MIN_STEPS and RU_MIN_LOSS_SHARE (skip_ends as there);
 * - if it does, the finding of rule (ru_recur_finding()) with fix, titled "<what> the GPU N times
 *   per step: X of GPU idle per step (S%)" when it recurs in about every step (N: the median of
 *   the waits that drained it per step), else "<what> the GPU in K of N steady steps: ..." (with
 *   the median idle of the affected steps), with ru_recur_near_text()'s words;
 * - its first and last: the start of the first wait that costs GPU time in a steady step (with
 *   copies, of the first copy it waited for) and the end of the window the last one is charged
 *   for;
 * - its evidence: the medians of sum over the affected steps, the waits that cost GPU time by
 *   sync type, the costliest of them (with copies, its first copy; else its stream), their call
 *   sites (merged by the wait's stack; with copies, by the first copy's when the wait has none;
 *   the costliest site's stack as f's), the noise floor, the steady and affected steps, the idle
 *   left to the input's rules when there is some, and the decision (ru_recur_evidence());
 * - its fix as an edit of the run, ru_edit_no_waits() (with copies).
 * copies: the waits are those of device-to-host copies (d2h-sync). idle and tmp: s->n + 1 values
 * each, as ru_recur_arrays() makes them. 0 or CS_ERR_NOMEM.
 */
int ru_wait_report(const cs_rule_ctx *ctx, const char *rule, const char *what, const char *fix,
		   const struct fact_waits *d, int copies, int skip_ends,
		   const struct ru_wait_sum *sum, int64_t *idle, int64_t *tmp,
		   cs_report_finding **f);

#endif
