/*
 * h2d_rules.c - the run of the rules of the host-to-device stalls (dataloader-stall,
 * host-created-tensor), their per-step sums and the end of their finding: the call sites of the
 * copies they charge and their fix as an edit (h2d_rules.h).
 */
#include <stddef.h>
#include <stdlib.h>

#include "cuscope/checked.h"

#include "h2d_rules.h"
#include "cache.h"
#include "edits.h"
#include "finding_kit.h"
#include "h2d_stalls.h"
#include "recurrence.h"
#include "sites.h"

/* The fix as an edit of the run (ru_run_h2d_rule()). 0 or CS_ERR_NOMEM. */
static int edit_h2d(cs_report_finding *f, const cs_analysis *a, const cs_steps *s,
		    const struct fact_h2d_stalls *h, ru_h2d_own_fn own, const int32_t *steps,
		    int32_t nsteps, int device)
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

/* The call sites of the copies (ru_run_h2d_rule()). 0, or CS_ERR_NOMEM. */
static int h2d_sites(cJSON *e, const cs_analysis *a, const struct fact_h2d_stalls *h,
		     ru_h2d_own_fn own, const int32_t *steps, int32_t nsteps, int max,
		     int64_t *stack_id)
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

/* The stalls of h that own() keeps into sum, by step (s->n of them). */
static void sum_stalls(const cs_analysis *a, const cs_steps *s, const struct fact_h2d_stalls *h,
		       ru_h2d_own_fn own, struct ru_h2d_sum *sum)
{
	for (int32_t i = 0; i < s->n; i++)
		sum[i].copy = -1;
	for (int64_t i = 0; i < h->n; i++) {
		const struct fact_h2d_stall *y = &h->v[i];
		const cs_a_copy *c = &a->copies[y->copy];
		struct ru_h2d_sum *x = &sum[y->step];

		if (!own(a, y))
			continue;
		cs_sat_accum(&x->idle_ns, y->stall_ns);
		x->copies++;
		cs_sat_accum(&x->bytes, c->bytes);
		if (c->src_kind == CS_MEM_PAGEABLE)
			x->pageable++;
		if (y->stretch_ns > x->stretch_ns) {
			x->stretch_ns = y->stretch_ns;
			x->copy = y->copy;
		}
	}
}

/* The sums over steps[0..nsteps) into m; tmp has room for nsteps values. */
static void median_sums(const struct ru_h2d_sum *sum, const int32_t *steps, int32_t nsteps,
			int64_t *tmp, struct ru_h2d_median *m)
{
	m->stretch_ns = ru_median_field(sum, sizeof(*sum), steps, nsteps,
					offsetof(struct ru_h2d_sum, stretch_ns), tmp);
	m->idle_ns = ru_median_field(sum, sizeof(*sum), steps, nsteps,
				     offsetof(struct ru_h2d_sum, idle_ns), tmp);
	m->copies = ru_median_field(sum, sizeof(*sum), steps, nsteps,
				    offsetof(struct ru_h2d_sum, copies), tmp);
	m->bytes = ru_median_field(sum, sizeof(*sum), steps, nsteps,
				   offsetof(struct ru_h2d_sum, bytes), tmp);
	m->pageable = m->all = 0;
	m->best = -1;
	for (int32_t i = 0; i < nsteps; i++) {
		const struct ru_h2d_sum *x = &sum[steps[i]];

		m->pageable += x->pageable;
		m->all += x->copies;
		if (x->copy >= 0 && (m->best < 0 || x->stretch_ns > sum[m->best].stretch_ns))
			m->best = steps[i];
	}
}

/* The finding of ru_run_h2d_rule() about steps[0..nsteps) that r decided on (sum by step index,
 * m), handed to the report. 0, or the error, set in err. */
static int h2d_finding(cs_rule_ctx *ctx, const struct ru_h2d_rule *rule,
		       const struct fact_h2d_stalls *h, const struct ru_h2d_sum *sum,
		       const struct ru_h2d_median *m, const int32_t *steps, int32_t nsteps,
		       const struct ru_recur *r, cs_error *err)
{
	cs_report_finding *f;
	cJSON *e;
	char title[480], near1[96], near2[96], rare[200];

	ru_recur_near_text(r, near1, sizeof(near1), near2, sizeof(near2));
	if (!r->recurring)
		ru_recur_rare_text(r, nsteps, m->idle_ns, rare, sizeof(rare));
	rule->title(title, sizeof(title), m, r, near1, near2, r->recurring ? NULL : rare);
	f = ru_recur_finding(rule->id, r, title,
			     r->recurring || !rule->rare_fix ? rule->fix : rule->rare_fix, steps,
			     nsteps);
	if (!f || rule->evidence(ctx->a, f, h, sum, m))
		return ru_finish(ctx, f, CS_ERR_NOMEM, err);
	ru_finding_span(f, ctx->a, ctx->steps, steps, nsteps);
	e = f->evidence;
	cJSON_AddNumberToObject(e, "steady_steps", cs_steps_steady(ctx->steps));
	cJSON_AddNumberToObject(e, "affected_steps", nsteps);
	ru_recur_evidence(e, r, nsteps);
	if (h2d_sites(e, ctx->a, h, rule->own, steps, nsteps, RU_H2D_MAX_SITES, &f->stack_id) ||
	    edit_h2d(f, ctx->a, ctx->steps, h, rule->own, steps, nsteps, rule->device))
		return ru_finish(ctx, f, CS_ERR_NOMEM, err);
	return ru_emit(ctx, f, err);
}

int ru_run_h2d_rule(cs_rule_ctx *ctx, const struct ru_h2d_rule *rule, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	struct cs_rule_cache own = {0};
	const struct fact_h2d_stalls *h = NULL;
	struct ru_h2d_sum *sum = NULL;
	struct ru_h2d_median m;
	int64_t *cost = NULL, *tmp = NULL;
	int32_t *steps = NULL, nsteps = 0;
	struct ru_recur r;
	int rc = CS_ERR_NOMEM;

	if (cs_steps_steady(s) <= 0 || a->ncopies == 0)
		return 0;
	sum = ru_recur_arrays(s, sizeof(*sum), &cost, &tmp);
	if (!sum || ru_cached_h2d_stalls(ctx, &own, &h))
		goto out;
	sum_stalls(a, s, h, rule->own, sum);
	for (int32_t i = 0; i < s->n; i++)
		cost[i] = sum[i].idle_ns;
	rc = ru_recur_find(s, ctx->step_median, cost, 1, RU_H2D_MIN_STEPS, RU_H2D_MIN_STEP_SHARE,
			   RU_RARE_MIN_STEPS, RU_MIN_LOSS_SHARE, tmp, &steps, &nsteps, &r);
	if (rc > 0) {
		median_sums(sum, steps, nsteps, tmp, &m);
		rc = h2d_finding(ctx, rule, h, sum, &m, steps, nsteps, &r, err);
	}
out:
	free(sum);
	free(steps);
	ru_cache_free(&own);
	return ru_finish(ctx, NULL, rc, err);
}
