/*
 * wait_evidence.h - the evidence of the rules about host waits (d2h-sync, sync-call): the waits
 * that cost GPU time by sync type, and their call sites.
 */
#ifndef CUSCOPE_WAIT_EVIDENCE_H
#define CUSCOPE_WAIT_EVIDENCE_H

#include <stdint.h>

#include "cuscope/analyze.h"
#include "d2h_waits.h"

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
 * most max of them added to e as "sites", and the costliest site's stack given to *stack_id. 0,
 * or CS_ERR_NOMEM.
 */
int ru_add_wait_sites(cJSON *e, const cs_analysis *a, const struct fact_waits *d, int copy_stack,
		      int max, int64_t *stack_id);

#endif
