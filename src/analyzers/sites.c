/*
 * sites.c - the call sites of a finding: the lines of the program that made the calls it charges
 * (waits, copies, allocator calls, kernel launches), each with the calls made there and the part of
 * the finding's cost charged to them.
 *
 * A rule charges each call its part with ru_sites_add() and lists the sites with
 * ru_sites_evidence(); ru_add_kernel_sites() does both for the kernels a match function picks,
 * charged their own GPU time. record captures a stack at every wait, copy and allocator call, and
 * at kernel launches once per Python call site and on threads without Python frames for a sample
 * of each kernel function's launches (src/collectors/stacks.c), so a call either has the stack of
 * its call site or none. A call without one is counted at the stack most calls of the same kernel
 * name (or kind) and thread had (the sampled launches stand for the others); a name never seen with
 * a stack stays without a site. The sites are merged by stack and listed most cost first in the
 * finding's evidence as "sites" (stack_id, count, cost_ns), which the report renderers show as
 * `where:` lines.
 */
#include <stdlib.h>
#include <string.h>

#include "cuscope/grow.h"
#include "sites.h"
#include "cuscope/checked.h"

static int cmp_use(const void *x, const void *y)
{
	const struct ru_site_use *a = x, *b = y;

	if (a->name_id != b->name_id)
		return a->name_id < b->name_id ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return (a->stack_id > b->stack_id) - (a->stack_id < b->stack_id);
}

struct site_sum {
	int64_t stack_id, count, ns;
};

static int cmp_site_stack(const void *x, const void *y)
{
	const struct site_sum *a = x, *b = y;

	return (a->stack_id > b->stack_id) - (a->stack_id < b->stack_id);
}

static int cmp_site_ns(const void *x, const void *y)
{
	const struct site_sum *a = x, *b = y;

	if (a->ns != b->ns)
		return a->ns > b->ns ? -1 : 1;
	return (a->stack_id > b->stack_id) - (a->stack_id < b->stack_id);
}

int ru_sites_add(struct ru_sites *u, int64_t name_id, uint32_t tid, int64_t stack_id, int32_t step,
		 int64_t cost_ns)
{
	struct ru_site_use *x;

	if (cs_grow((void **)&u->v, &u->cap, u->n + 1, sizeof(*u->v)))
		return CS_ERR_NOMEM;
	x = &u->v[u->n++];
	x->name_id = name_id;
	x->tid = tid;
	x->stack_id = stack_id == CS_ID_NONE ? -1 : stack_id;
	x->step = step;
	x->ns = cost_ns > 0 ? cost_ns : 0;
	return 0;
}

void ru_sites_free(struct ru_sites *u)
{
	free(u->v);
	memset(u, 0, sizeof(*u));
}

/* Keep the uses of the given steps only (steps[0..nsteps), any order). */
static int keep_steps(struct ru_sites *u, const int32_t *steps, int32_t nsteps)
{
	int32_t top = -1;
	int8_t *in;
	size_t w = 0;

	for (int32_t i = 0; i < nsteps; i++)
		if (steps[i] > top)
			top = steps[i];
	in = calloc((size_t)top + 2, 1);
	if (!in)
		return CS_ERR_NOMEM;
	for (int32_t i = 0; i < nsteps; i++)
		if (steps[i] >= 0)
			in[steps[i]] = 1;
	for (size_t i = 0; i < u->n; i++)
		if (u->v[i].step >= 0 && u->v[i].step <= top && in[u->v[i].step])
			u->v[w++] = u->v[i];
	u->n = w;
	free(in);
	return 0;
}

int ru_sites_evidence(cJSON *e, struct ru_sites *u, const int32_t *steps, int32_t nsteps, int max,
		      int64_t *stack_id)
{
	struct ru_site_use *x;
	struct site_sum *v = NULL;
	int64_t n, m = 0;
	int rc = CS_ERR_NOMEM;
	cJSON *sites;

	if (steps && keep_steps(u, steps, nsteps))
		return CS_ERR_NOMEM;
	x = u->v;
	n = (int64_t)u->n;
	if (!n)
		return 0;
	/* Per name and thread: the uses without a stack (sorted first, as -1) take the stack with
	 * the most uses among the others. */
	cs_sort(x, (size_t)n, sizeof(*x), cmp_use);
	for (int64_t i = 0, end; i < n; i = end) {
		int64_t best = -1, best_n = 0;

		for (end = i + 1;
		     end < n && x[end].name_id == x[i].name_id && x[end].tid == x[i].tid; end++)
			;
		for (int64_t j = i, run; j < end; j = run) {
			for (run = j + 1; run < end && x[run].stack_id == x[j].stack_id; run++)
				;
			if (x[j].stack_id >= 0 && run - j > best_n) {
				best = x[j].stack_id;
				best_n = run - j;
			}
		}
		for (int64_t j = i; j < end && x[j].stack_id < 0; j++)
			x[j].stack_id = best;
	}
	v = malloc((size_t)n * sizeof(*v));
	if (!v)
		goto out;
	for (int64_t i = 0; i < n; i++) {
		if (x[i].stack_id < 0)
			continue;
		v[m].stack_id = x[i].stack_id;
		v[m].count = 1;
		v[m].ns = x[i].ns;
		m++;
	}
	cs_sort(v, (size_t)m, sizeof(*v), cmp_site_stack);
	{
		int64_t w = 0;

		for (int64_t i = 0; i < m; i++) {
			if (w > 0 && v[w - 1].stack_id == v[i].stack_id) {
				v[w - 1].count++;
				cs_sat_accum(&v[w - 1].ns, v[i].ns);
				continue;
			}
			v[w++] = v[i];
		}
		m = w;
	}
	cs_sort(v, (size_t)m, sizeof(*v), cmp_site_ns);
	rc = 0;
	if (!m)
		goto out;
	*stack_id = v[0].stack_id;
	sites = cJSON_AddArrayToObject(e, "sites");
	for (int64_t i = 0; sites && i < m && i < max; i++) {
		cJSON *o = cJSON_CreateObject();

		if (!o) {
			sites = NULL;
			break;
		}
		cJSON_AddNumberToObject(o, "stack_id", (double)v[i].stack_id);
		cJSON_AddNumberToObject(o, "count", (double)v[i].count);
		cJSON_AddNumberToObject(o, "cost_ns", (double)v[i].ns);
		cJSON_AddItemToArray(sites, o);
	}
	if (!sites)
		rc = CS_ERR_NOMEM;
out:
	free(v);
	return rc;
}

int ru_add_kernel_sites(cJSON *e, const cs_analysis *a, const cs_steps *s,
			int (*match)(const cs_a_kernel *k, void *arg), void *arg, int max,
			int64_t *stack_id)
{
	struct ru_sites u = {0};
	int rc = CS_ERR_NOMEM;

	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];

		if (!match(k, arg) || k->start == CS_TS_UNKNOWN || k->end == CS_TS_UNKNOWN ||
		    k->end < k->start ||
		    cs_steps_find_steady(s, cs_launch_time(k->launch_start, k->start)) < 0)
			continue;
		if (ru_sites_add(&u, k->name_id, k->launch_tid, k->stack_id, -1, k->end - k->start))
			goto out;
	}
	rc = ru_sites_evidence(e, &u, NULL, 0, max, stack_id);
out:
	ru_sites_free(&u);
	return rc;
}
