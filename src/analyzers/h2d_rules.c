/*
 * h2d_rules.c - the run of the rules of the host-to-device stalls (dataloader-stall,
 * host-created-tensor), the call sites of the copies they charge and their fix as an edit
 * (h2d_rules.h).
 */
#include <stdlib.h>

#include "h2d_rules.h"
#include "cache.h"
#include "edits.h"
#include "finding_kit.h"
#include "h2d_stalls.h"
#include "recurrence.h"
#include "sites.h"

int ru_edit_h2d(cs_report_finding *f, const cs_analysis *a, const cs_steps *s,
		const struct fact_h2d_stalls *h,
		int (*own)(const cs_analysis *a, const struct fact_h2d_stall *y),
		const int32_t *steps, int32_t nsteps, int device)
{
	uint8_t *in = ru_steps_mask(s, steps, nsteps);
	int rc = 0;

	if (!in)
		return CS_ERR_NOMEM;
	for (int64_t i = 0; i < h->n && rc == 0; i++) {
		const struct fact_h2d_stall *y = &h->v[i];

		if (y->step < 0 || y->step >= s->n || !in[y->step] || !own(a, y))
			continue;
		rc = cs_edit_add(&f->edit, CS_EDIT_HOST_CUT, CS_EDIT_COPY, y->copy, y->stretch_ns);
		if (rc == 0 && device)
			rc = cs_edit_add(&f->edit, CS_EDIT_ASYNC, CS_EDIT_COPY, y->copy, 0);
	}
	free(in);
	return rc ? CS_ERR_NOMEM : 0;
}

int ru_h2d_sites(cJSON *e, const cs_analysis *a, const struct fact_h2d_stalls *h,
		 int (*own)(const cs_analysis *a, const struct fact_h2d_stall *y),
		 const int32_t *steps, int32_t nsteps, int max, int64_t *stack_id)
{
	struct ru_sites u = {0};
	int rc = CS_ERR_NOMEM;

	for (int64_t i = 0; i < h->n; i++) {
		const struct fact_h2d_stall *y = &h->v[i];
		const cs_a_copy *c = &a->copies[y->copy];

		if (own(a, y) &&
		    ru_sites_add(&u, -1, c->launch_tid, c->stack_id, y->step, y->stall_ns))
			goto out;
	}
	rc = ru_sites_evidence(e, &u, steps, nsteps, max, stack_id);
out:
	ru_sites_free(&u);
	return rc;
}

int ru_run_h2d_rule(cs_rule_ctx *ctx, const struct ru_h2d_rule *rule, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	struct cs_rule_cache own = {0};
	const struct fact_h2d_stalls *h = NULL;
	char *sums = NULL;
	int64_t *cost = NULL, *tmp = NULL;
	int32_t *steps = NULL, nsteps = 0;
	struct ru_recur r;
	int rc = 0;

	if (cs_steps_steady(s) <= 0 || a->ncopies == 0)
		return 0;
	sums = calloc((size_t)s->n + 1, rule->sum_size);
	cost = calloc((size_t)s->n + 1, sizeof(*cost));
	tmp = calloc((size_t)s->n + 1, sizeof(*tmp));
	if (!sums || !cost || !tmp || ru_cached_h2d_stalls(ctx, &own, &h))
		goto nomem;
	rule->sum(a, s, h, sums);
	for (int32_t i = 0; i < s->n; i++)
		cost[i] = rule->cost(sums + (size_t)i * rule->sum_size);
	rc = ru_recur_find(s, ctx->step_median, cost, 1, rule->min_steps, rule->min_step_share,
			   RU_RARE_MIN_STEPS, RU_MIN_LOSS_SHARE, tmp, &steps, &nsteps, &r);
	if (rc < 0)
		goto nomem;
	if (rc)
		rc = rule->emit(ctx, h, sums, steps, nsteps, &r, tmp, err);
	goto out;
nomem:
	rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory");
out:
	free(sums);
	free(cost);
	free(tmp);
	free(steps);
	ru_cache_free(&own);
	return rc;
}
