/*
 * mem_rules.c - the run of the rules about the allocator's release bursts (empty-cache-in-loop,
 * memory-ceiling-thrash; docs/rules/ explains how each uses it), the call sites and evidence they
 * give and their fix as an edit (mem_rules.h).
 */
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "mem_rules.h"
#include "finding_kit.h"
#include "estimates.h"
#include "recurrence.h"
#include "release_bursts.h"
#include "sites.h"

/* A release a burst counts (classify_row()'s MEM_RELEASE, less the pages' bookkeeping). */
static int is_release(const cs_a_memory *r)
{
	return cs_a_memory_is_device(r) && r->result == 0 &&
	       (r->op == CS_MEMOP_FREE || r->op == CS_MEMOP_VMM_RELEASE);
}

int ru_mem_sites(cJSON *e, const cs_analysis *a, const cs_steps *s, const struct fact_bursts *m,
		 int (*keep)(const struct fact_burst *b), const int32_t *steps, int32_t n, int max,
		 int64_t *stack_id)
{
	struct ru_sites u = {0};
	uint8_t *hit = calloc((size_t)s->n + 1, 1);
	int rc = CS_ERR_NOMEM;

	if (!hit)
		return CS_ERR_NOMEM;
	for (int32_t i = 0; i < m->n; i++)
		if (m->v[i].step >= 0 && keep(&m->v[i]))
			hit[m->v[i].step] = 1;
	if (m->have_api) {
		/* the allocator calls of those steps, as fact_bursts_api_cost() counts them */
		for (int64_t i = 0; i < a->napis; i++) {
			const cs_a_api *x = &a->apis[i];
			int st;

			if (x->pid != s->pid || x->name_id < 0 || x->start == CS_TS_UNKNOWN ||
			    x->end == CS_TS_UNKNOWN || x->end < x->start)
				continue;
			st = cs_steps_find_steady(s, x->start);
			if (st < 0 || !hit[st] ||
			    !fact_is_alloc_api(cs_analysis_string(a, x->name_id)))
				continue;
			if (ru_sites_add(&u, -1, x->tid, x->stack_id, st,
					 (x->end - x->start) -
						 cs_analysis_gpu_busy(a, s->pid, x->start, x->end)))
				goto out;
		}
	} else {
		/* the releases of the bursts, each with the idle since the one before it */
		for (int32_t i = 0; i < m->n; i++) {
			const struct fact_burst *b = &m->v[i];
			int64_t prev = CS_TS_UNKNOWN;

			if (b->step < 0 || !keep(b))
				continue;
			for (int64_t j = b->first; j <= b->last && j < a->nmemory; j++) {
				const cs_a_memory *r = &a->memory[j];
				int64_t cost = 0;

				if (r->pid != s->pid || !is_release(r))
					continue;
				if (prev != CS_TS_UNKNOWN && r->start > prev)
					cost = (r->start - prev) -
					       cs_analysis_gpu_busy(a, s->pid, prev, r->start);
				prev = r->start;
				if (ru_sites_add(&u, -1, 0, r->stack_id, b->step, cost))
					goto out;
			}
		}
	}
	rc = ru_sites_evidence(e, &u, steps, n, max, stack_id);
out:
	ru_sites_free(&u);
	free(hit);
	return rc;
}

/* Marks in hit the steps of the bursts keep() holds for and lists them in steps; how many. */
static int32_t steps_with(const cs_steps *s, const struct fact_bursts *m,
			  int (*keep)(const struct fact_burst *b), uint8_t *hit, int32_t *steps)
{
	int32_t n = 0;

	memset(hit, 0, (size_t)s->n + 1);
	for (int32_t i = 0; i < m->n; i++)
		if (keep(&m->v[i]))
			hit[m->v[i].step] = 1;
	for (int32_t i = 0; i < s->n; i++)
		if (hit[i])
			steps[n++] = i;
	return n;
}

int ru_mem_rule_run(cs_rule_ctx *ctx, int (*keep)(const struct fact_burst *b),
		    int (*direct)(const struct fact_burst *b), int32_t min_steps, double min_share,
		    int rare, double rare_min_share, ru_mem_emit_fn emit, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	struct cs_rule_cache own = {0};
	const struct fact_bursts *m;
	struct fact_bursts_summary sum = {0};
	int64_t *cost = NULL;
	int32_t *steps = NULL, n = 0, nd, steady = cs_steps_steady(s);
	uint8_t *hit = NULL;
	double lo, hi;
	int rc, near = 0, is_rare = 0;

	if (steady <= 0 || a->nmemory == 0)
		return 0;
	rc = ru_cached_bursts(ctx, &own, 0, &m);
	if (rc)
		return cs_error_set(err, rc, "out of memory");
	cost = calloc((size_t)s->n + 1, sizeof(*cost));
	steps = calloc((size_t)s->n + 1, sizeof(*steps));
	hit = calloc((size_t)s->n + 1, 1);
	if (!cost || !steps || !hit) {
		rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory");
		goto out;
	}
	nd = direct ? steps_with(s, m, direct, hit, steps) : 0;
	n = steps_with(s, m, keep, hit, steps);
	ru_share_interval(n, steady, &lo, &hi);
	if (n < min_steps || n < min_share * steady) {
		/* not recurring enough to infer: direct evidence, however rare, else near the
		 * threshold (info) */
		if (nd > 0) {
			keep = direct;
			n = steps_with(s, m, keep, hit, steps);
			min_share = 0; /* no threshold on how many steps */
		} else if (rare && n >= RU_RARE_MIN_STEPS) {
			/* in a few steps: counts when it costs enough over the steady state
			 * (decided below, once the cost is known) */
			is_rare = 1;
		} else if (n >= min_steps && hi >= min_share) {
			near = 1;
		} else {
			goto out;
		}
	} else {
		/* recurring; near the threshold unless direct evidence settles it */
		near = nd == 0 && lo < min_share;
	}
	/* what the allocator calls cost: only for a rule that reports */
	if (ru_cached_bursts(ctx, &own, 1, &m)) {
		rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory");
		goto out;
	}
	fact_bursts_step_cost(a, s, m, keep, cost);
	rc = fact_bursts_summarize(s, ctx->step_median, m, keep, cost, steps, n, &sum);
	if (rc) {
		rc = cs_error_set(err, rc, "out of memory");
		goto out;
	}
	if (is_rare) {
		/* what it cost over the steady state, per step; else near the threshold, or nothing
		 */
		int64_t total = fact_bursts_rare_total(a, s, m, keep, hit),
			amortized = total / steady;
		double share =
			ctx->step_median > 0 ? (double)amortized / (double)ctx->step_median : 0;

		if (share >= rare_min_share) {
			sum.rare = 1;
			sum.lost_each = total / n;
			sum.lost = amortized;
			sum.share = share;
		} else if (n >= min_steps && hi >= min_share) {
			near = 1;
		} else {
			goto out;
		}
	}
	sum.step_share = (double)n / (double)steady;
	ru_share_interval(n, steady, &sum.step_share_lo, &sum.step_share_hi);
	sum.min_step_share = min_share;
	sum.near = near;
	rc = emit(ctx, m, &sum, steps, n, err);
out:
	ru_cache_free(&own);
	free(sum.tmp);
	free(cost);
	free(steps);
	free(hit);
	return rc;
}

void ru_mem_evidence(cJSON *e, const cs_rule_ctx *ctx, const struct fact_bursts *m,
		     const struct fact_bursts_summary *sum, int32_t n)
{
	const struct ru_field fields[] = {
		{"gpu_idle_ns_per_step", (double)sum->lost, NULL},
		{"allocator_calls_per_step", (double)sum->calls, NULL},
		{"allocator_host_ns_per_step", (double)sum->host, NULL},
		{"reserved_before", (double)sum->reserved_before, NULL},
		{"reserved_after", (double)sum->reserved_after, NULL},
		{"reserved_peak", (double)m->reserved_peak, NULL},
		{"failed_allocations", (double)m->steady_failed, NULL},
		{"device_memory", (double)m->device_total, NULL},
	};

	ru_add_fields(e, fields, sizeof(fields) / sizeof(fields[0]));
	cJSON_AddBoolToObject(e, "cost_from_api_calls", m->have_api);
	cJSON_AddNumberToObject(e, "steady_steps", cs_steps_steady(ctx->steps));
	cJSON_AddNumberToObject(e, "affected_steps", n);
	cJSON_AddNumberToObject(e, "affected_share_low", sum->step_share_lo);
	cJSON_AddNumberToObject(e, "affected_share_high", sum->step_share_hi);
	cJSON_AddNumberToObject(e, "min_affected_share", sum->min_step_share);
	cJSON_AddNumberToObject(e, "affected_share_margin", sum->step_share - sum->min_step_share);
	cJSON_AddBoolToObject(e, "near_threshold", sum->near);
	cJSON_AddBoolToObject(e, "rare", sum->rare);
	if (sum->rare)
		cJSON_AddNumberToObject(e, "gpu_idle_ns_each", (double)sum->lost_each);
}

int ru_edit_bursts(cs_report_finding *f, const cs_analysis *a, const cs_steps *s,
		   const struct fact_bursts *m, int (*keep)(const struct fact_burst *b))
{
	struct fact_alloc_calls calls = {0};
	int rc = fact_alloc_calls(a, s->pid, 1, &calls);

	for (int32_t i = 0; rc == 0 && i < m->n; i++) {
		const struct fact_burst *b = &m->v[i];
		int64_t end = b->t_realloc_end > b->t_last ? b->t_realloc_end : b->t_last;

		if (b->step < 0 || !keep(b))
			continue;
		for (int64_t k = 0; rc == 0 && k < calls.n; k++) {
			const cs_a_api *x = &a->apis[calls.v[k]];

			if (x->start >= b->t_first && x->start <= end)
				rc = cs_edit_add(&f->edit, CS_EDIT_DROP_CALL, CS_EDIT_API,
						 calls.v[k], 0);
		}
		for (int64_t k = cs_analysis_sync_at(a, b->t_first);
		     rc == 0 && b->retry && k < a->nsyncs && a->syncs[k].start <= end; k++)
			if (a->syncs[k].pid == s->pid && a->syncs[k].host_wait)
				rc = cs_edit_add(&f->edit, CS_EDIT_DROP_CALL, CS_EDIT_SYNC, k, 0);
	}
	free(calls.v);
	return rc ? CS_ERR_NOMEM : 0;
}

int ru_mem_finish(cs_rule_ctx *ctx, cs_report_finding *f, const struct fact_bursts *m,
		  int (*keep)(const struct fact_burst *b), const int32_t *steps, int32_t n, int max,
		  cs_error *err)
{
	for (int32_t i = 0; i < m->n; i++) {
		const struct fact_burst *b = &m->v[i];

		if (!keep(b))
			continue;
		if (f->first == CS_TS_UNKNOWN)
			f->first = b->t_first;
		f->last = b->t_last;
	}
	if (ru_mem_sites(f->evidence, ctx->a, ctx->steps, m, keep, steps, n, max, &f->stack_id) ||
	    ru_edit_bursts(f, ctx->a, ctx->steps, m, keep))
		return ru_finish(ctx, f, CS_ERR_NOMEM, err);
	return ru_emit(ctx, f, err);
}
