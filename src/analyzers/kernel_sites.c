/*
 * kernel_sites.c - the call sites of a kernel finding: the lines that launched its kernels.
 *
 * record captures a kernel launch's stack once per Python call site, and on threads without
 * Python frames for a sample of each kernel function's launches (src/collectors/stacks.c), so a
 * kernel either has the stack of its launch or none. A kernel without one is counted at the stack
 * most of the launches of the same name and thread had (the sampled launches stand for the
 * others); a name never seen with a stack stays without a site. The sites are merged by stack and
 * listed most GPU time first in the finding's evidence as "sites" (stack_id, count, cost_ns),
 * which the report renderers show as `where:` lines.
 */
#include <stdlib.h>
#include <string.h>

#include "cuscope/grow.h"
#include "rule_util.h"
#include "cuscope/checked.h"

struct kernel_use {
	int64_t name_id, stack_id;
	uint32_t tid;
	int64_t ns;
};

static int cmp_use(const void *x, const void *y)
{
	const struct kernel_use *a = x, *b = y;

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

int ru_add_kernel_sites(cJSON *e, const cs_analysis *a, const cs_steps *s,
			int (*match)(const cs_a_kernel *k, void *arg), void *arg, int max,
			int64_t *stack_id)
{
	struct kernel_use *u = NULL;
	struct site_sum *v = NULL;
	size_t cap = 0;
	int64_t n = 0, m = 0;
	int rc = CS_ERR_NOMEM;
	cJSON *sites;

	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];

		if (!match(k, arg) || k->start == CS_TS_UNKNOWN || k->end == CS_TS_UNKNOWN ||
		    k->end < k->start ||
		    ru_steady_step(s, cs_launch_time(k->launch_start, k->start)) < 0)
			continue;
		if (cs_grow((void **)&u, &cap, (size_t)n + 1, sizeof(*u)))
			goto out;
		u[n].name_id = k->name_id;
		u[n].tid = k->launch_tid;
		u[n].stack_id = k->stack_id == CS_ID_NONE ? -1 : k->stack_id;
		u[n].ns = k->end - k->start;
		n++;
	}
	if (!n)
		return 0;
	/* Per name and thread: the launches without a stack (sorted first, as -1) take the stack
	 * with the most launches among the others. */
	cs_sort(u, (size_t)n, sizeof(*u), cmp_use);
	for (int64_t i = 0, end; i < n; i = end) {
		int64_t best = -1, best_n = 0;

		for (end = i + 1;
		     end < n && u[end].name_id == u[i].name_id && u[end].tid == u[i].tid; end++)
			;
		for (int64_t j = i, run; j < end; j = run) {
			for (run = j + 1; run < end && u[run].stack_id == u[j].stack_id; run++)
				;
			if (u[j].stack_id >= 0 && run - j > best_n) {
				best = u[j].stack_id;
				best_n = run - j;
			}
		}
		for (int64_t j = i; j < end && u[j].stack_id < 0; j++)
			u[j].stack_id = best;
	}
	v = malloc((size_t)n * sizeof(*v));
	if (!v)
		goto out;
	for (int64_t i = 0; i < n; i++) {
		if (u[i].stack_id < 0)
			continue;
		v[m].stack_id = u[i].stack_id;
		v[m].count = 1;
		v[m].ns = u[i].ns;
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
	free(u);
	free(v);
	return rc;
}
