/*
 * recurrence.h - whether a cost seen in some steady steps is a finding, and how sure: in about
 * every step (recurring) or in a few (every Nth step, a rare event), with the 95% intervals of
 * its share of the step and of the steps that have it; the titles' words and the evidence of
 * that decision. The rules about waits, stalls and slow kernels decide with it.
 */
#ifndef CUSCOPE_RECURRENCE_H
#define CUSCOPE_RECURRENCE_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/analyze.h"

/* A pattern seen in a few steps only (every Nth step) counts when it recurs: at least this many
 * steps have it, and it costs at least RU_MIN_LOSS_SHARE of the median step over the steady state.
 */
#define RU_RARE_MIN_STEPS 2
#define RU_MIN_LOSS_SHARE 0.02

/*
 * Whether a cost seen in some steady steps is a finding, and how sure (d2h-sync, sync-call): in
 * at least min_steps steps and a 95% interval of their share that reaches min_step_share, the
 * median cost of those steps (recurring); else, in at least min_rare_steps, the total divided by
 * the steady steps (a pattern in a few steps; with skip_ends the first and the last steady step,
 * the loop's boundaries, do not count). A finding when the cost's 95% interval reaches
 * min_loss_share of step_median; near (info) when an interval holds its threshold.
 */
struct ru_recur {
	int recurring, near, near_loss, near_steps;
	int32_t steady;
	int64_t lost;			  /* per step */
	double share, share_lo, share_hi; /* lost / step_median, and its interval */
	double steps_lo, steps_hi;	  /* interval of the share of steady steps */
	double min_loss_share, min_step_share;
};
/* cost: per step index; steps (nsteps of them, may be shortened) the steady steps with a cost;
 * tmp: room for nsteps values. 1: a finding, in r; 0: none. */
int ru_recur_decide(const cs_steps *s, int64_t step_median, const int64_t *cost, int32_t *steps,
		    int32_t *nsteps, int skip_ends, int32_t min_steps, double min_step_share,
		    int32_t min_rare_steps, double min_loss_share, int64_t *tmp,
		    struct ru_recur *r);
/*
 * The arrays a rule decides with for the steps of s, zeroed: its per-step sums (returned, s->n + 1
 * structs of size bytes), *cost (s->n + 1 values: the cost by step index) and *tmp (s->n + 1
 * values: ru_recur_find()'s room), in one block: freeing the sums frees all three. NULL without
 * memory (and *cost and *tmp NULL).
 */
void *ru_recur_arrays(const cs_steps *s, size_t size, int64_t **cost, int64_t **tmp);
/*
 * ru_recur_decide() on the steady steps whose cost (per step index) is non-zero
 * (ru_steps_nonzero()), which it gives to *steps (malloc'd, the caller frees it; *nsteps of
 * them, as ru_recur_decide() leaves them); the other parameters are ru_recur_decide()'s. 1: a
 * finding, in r; 0: none; CS_ERR_NOMEM.
 */
int ru_recur_find(const cs_steps *s, int64_t step_median, const int64_t *cost, int skip_ends,
		  int32_t min_steps, double min_step_share, int32_t min_rare_steps,
		  double min_loss_share, int64_t *tmp, int32_t **steps, int32_t *nsteps,
		  struct ru_recur *r);
/* The title's "; near the N% threshold (95% interval a-b%)" for the cost (loss) and for the share
 * of steps (steps), each empty unless r is near that threshold. */
void ru_recur_near_text(const struct ru_recur *r, char *loss, size_t loss_size, char *steps,
			size_t steps_size);
/* The title's "in K of N steady steps: X of GPU idle each time, Y per step over the steady state
 * (Z%)" of a pattern in a few steps (each: the cost in one of them). */
void ru_recur_rare_text(const struct ru_recur *r, int32_t nsteps, int64_t each, char *buf,
			size_t size);
/*
 * The finding of rule about a cost r decided on (ru_finding_new(): steps[0..nsteps), title, fix):
 * r's loss per step and share of the step, whose severity it has (ru_severity()); info when r is
 * near a threshold, as a value whose interval holds it could fall either side of it in another
 * run. NULL without memory.
 */
cs_report_finding *ru_recur_finding(const char *rule, const struct ru_recur *r, const char *title,
				    const char *fix, const int32_t *steps, int32_t nsteps);
/* r's shares, intervals, thresholds and margins as evidence (nsteps: the affected steps). */
void ru_recur_evidence(cJSON *e, const struct ru_recur *r, int32_t nsteps);

#endif
