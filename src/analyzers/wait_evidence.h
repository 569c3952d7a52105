/*
 * wait_evidence.h - what the findings of the rules about host waits (d2h-sync, sync-call) say
 * alike: their title, the waits that cost GPU time by sync type, the costliest of them, their call
 * sites and the waits' noise floor.
 */
#ifndef CUSCOPE_WAIT_EVIDENCE_H
#define CUSCOPE_WAIT_EVIDENCE_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/analyze.h"
#include "d2h_waits.h"
#include "recurrence.h"

/* The sync types a finding counts its waits by. */
#define RU_WAIT_TYPES 9
/*
 * The waits of d that cost GPU time, by sync type, added to e as "waits_by_type"; *best is the
 * costliest of them (-1: none). 0, or CS_ERR_NOMEM.
 */
int ru_add_wait_types(cJSON *e, const cs_analysis *a, const struct fact_waits *d, int64_t *best);
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
 * idle per step (S%)" when r is recurring (per: the waits that drained it per step), else "<what>
 * the GPU in K of N steady steps: ..." (each: the idle in one of the nsteps affected steps), with
 * ru_recur_near_text()'s words. what: "explicit synchronize drains".
 */
void ru_wait_title(char *buf, size_t size, const char *what, const struct ru_recur *r, int64_t per,
		   int64_t each, int32_t nsteps);

#endif
