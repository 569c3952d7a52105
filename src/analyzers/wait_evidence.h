/*
 * wait_evidence.h - what the rules about host waits (d2h-sync, sync-call) sum and say alike: the
 * waits of each step, the finding's title and bounds, the waits' medians per step, those that
 * cost GPU time by sync type, the costliest of them, their call sites and the waits' noise floor.
 */
#ifndef CUSCOPE_WAIT_EVIDENCE_H
#define CUSCOPE_WAIT_EVIDENCE_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/analyze.h"
#include "d2h_waits.h"
#include "recurrence.h"

/* The waits of one step. */
struct ru_wait_sum {
	int64_t waits;	   /* all of them */
	int64_t draining;  /* those that cost GPU time */
	int64_t wait_ns;   /* the time they held the host */
	int64_t idle_ns;   /* the GPU idle charged to them: the rule's cost */
	int64_t refill_ns; /* the time the GPU took to fill up again after them */
};
/*
 * Add the wait w of a to its step's sum x; when it costs GPU time, it is charged its idle less
 * taken (the part of it another rule charges; at least 0).
 */
void ru_wait_sum_add(struct ru_wait_sum *x, const cs_analysis *a, const struct fact_wait *w,
		     int64_t taken);

/* The sync types a finding counts its waits by. */
#define RU_WAIT_TYPES 9
/*
 * The medians over steps[0..nsteps) of sum (by step index) added to e as "idle_ns_per_step" and
 * "draining_waits_per_step", then the waits of d that cost GPU time, by sync type, as
 * "waits_by_type"; *best is the costliest of them (-1: none). tmp has room for nsteps values. 0,
 * or CS_ERR_NOMEM.
 */
int ru_add_wait_types(cJSON *e, const cs_analysis *a, const struct fact_waits *d,
		      const struct ru_wait_sum *sum, const int32_t *steps, int32_t nsteps,
		      int64_t *tmp, int64_t *best);
/*
 * The medians over steps[0..nsteps) of sum added to e as "wait_ns_per_step",
 * "refill_ns_per_step" and "waits_per_step"; tmp has room for nsteps values.
 */
void ru_add_wait_times(cJSON *e, const struct ru_wait_sum *sum, const int32_t *steps,
		       int32_t nsteps, int64_t *tmp);
/*
 * The call sites of the waits of d that cost GPU time, merged by the wait's stack (with
 * copy_stack, by the stack of the first copy it waited for when the wait has none), most idle
 * first, as ru_sites_evidence() lists them (stack_id, count: the waits, cost_ns: their idle): at
 * most max of them added to e as "sites", and the costliest site's stack given to *stack_id;
 * then the waits' noise floor and the steady and affected (nsteps) steps. 0, or CS_ERR_NOMEM.
 */
int ru_add_wait_sites(cJSON *e, const cs_analysis *a, const cs_steps *s, const struct fact_waits *d,
		      int32_t nsteps, int copy_stack, int max, int64_t *stack_id);
/*
 * The costliest wait w as e's "costliest_wait": ru_costliest_wait() adds its step, sync type and
 * times and returns the object (NULL without memory), to which the rule adds its own, then
 * ru_costliest_wait_idle() the GPU idle after it and the window it is charged for.
 */
cJSON *ru_costliest_wait(cJSON *e, const cs_analysis *a, const struct fact_wait *w);
void ru_costliest_wait_idle(cJSON *ex, const struct fact_wait *w);
/*
 * The title of a finding about host waits, into buf: "<what> the GPU N times per step: X of GPU
 * idle per step (S%)" when r is recurring (N: the median of the waits that drained it per step),
 * else "<what> the GPU in K of N steady steps: ..." (with the median idle of the affected steps),
 * with ru_recur_near_text()'s words. what: "explicit synchronize drains"; sum: by step index;
 * steps[0..nsteps): the affected steps; tmp: room for nsteps values.
 */
void ru_wait_title(char *buf, size_t size, const char *what, const struct ru_recur *r,
		   const struct ru_wait_sum *sum, const int32_t *steps, int32_t nsteps,
		   int64_t *tmp);
/*
 * f's first and last: the start of the first wait of d that costs GPU time in a steady step (with
 * copy_start, the start of the first copy it waited for) and the end of the window the last one
 * is charged for.
 */
void ru_wait_span(cs_report_finding *f, const cs_analysis *a, const struct fact_waits *d,
		  int copy_start);

#endif
