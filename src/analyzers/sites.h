/*
 * sites.h - the call sites of a finding (sites.c): the launches or calls it charges, each with
 * its part of the cost, merged by the stack of their call and listed in the evidence, costliest
 * first. The kernels' names and time by name are facts/kernel_names.h.
 */
#ifndef CUSCOPE_SITES_H
#define CUSCOPE_SITES_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/analyze.h"

/*
 * The call sites of the kernels that match, launched in steady steps (sites.c): merged by
 * the stack of their launch (a launch without one counted at the stack most launches of its name
 * and thread had), most GPU time first; at most max of them added to e as "sites" (stack_id,
 * count, cost_ns) and the costliest site's stack given to *stack_id (left alone when no kernel
 * has a site). 0, or CS_ERR_NOMEM.
 */
int ru_add_kernel_sites(cJSON *e, const cs_analysis *a, const cs_steps *s,
			int (*match)(const cs_a_kernel *k, void *arg), void *arg, int max,
			int64_t *stack_id);

/* One launch charged with a part of a finding's cost, for its call sites. */
struct ru_site_use {
	int64_t name_id;  /* the kernel's name id (a memcpy or memset: -1) */
	int64_t stack_id; /* of its launch; -1 when none */
	int64_t ns;	  /* the cost charged to it */
	uint32_t tid;	  /* launching thread */
	int32_t step;	  /* the step it counts in (-1: any) */
};
struct ru_sites {
	struct ru_site_use *v;
	size_t n, cap;
};
/* Charge cost_ns to a launch (stack_id CS_ID_NONE when it has none) counted in step. 0, or
 * CS_ERR_NOMEM. */
int ru_sites_add(struct ru_sites *u, int64_t name_id, uint32_t tid, int64_t stack_id, int32_t step,
		 int64_t cost_ns);
/*
 * The call sites of the launches of u, as ru_add_kernel_sites() lists those of kernels, with the
 * costs charged to them: with steps (not NULL) only the launches counted in one of
 * steps[0..nsteps). Reorders and filters u. 0, or CS_ERR_NOMEM.
 */
int ru_sites_evidence(cJSON *e, struct ru_sites *u, const int32_t *steps, int32_t nsteps, int max,
		      int64_t *stack_id);
void ru_sites_free(struct ru_sites *u);

#endif
