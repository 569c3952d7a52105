/*
 * rule_util.c - helpers the rules share: severities, formatting, the run of the rules about the
 * allocator's release bursts (docs/rules/ explains how each rule uses them), evidence and call
 * sites, and the cache that computes the facts of facts/ once per run.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/sort.h"
#include "cuscope/grow.h"
#include "cuscope/units.h"
#include "gpu_order.h"
#include "launch_calls.h"
#include "rule_util.h"
#include "cuscope/checked.h"
#include "cuscope/u64map.h"

int ru_severity(double share)
{
	if (share >= 0.10)
		return CS_SEV_ERROR;
	if (share >= 0.03)
		return CS_SEV_WARNING;
	return CS_SEV_INFO;
}

int ru_i64_push(struct ru_i64 *x, int64_t v)
{
	if (cs_grow((void **)&x->v, &x->cap, (size_t)x->n + 1, sizeof(*x->v)))
		return CS_ERR_NOMEM;
	x->v[x->n++] = v;
	return 0;
}

void ru_i64_free(struct ru_i64 *x)
{
	free(x->v);
	memset(x, 0, sizeof(*x));
}

void ru_sort_i64(int64_t *v, int64_t n)
{
	if (n > 1)
		cs_sort_i64(v, (size_t)n);
}

void ru_median_interval(int64_t *v, int64_t n, int64_t *lo, int64_t *hi)
{
	double half, w;
	int64_t a, b;

	*lo = *hi = 0;
	if (n <= 0)
		return;
	ru_sort_i64(v, n);
	half = (double)n / 2;
	w = 0.98 * sqrt((double)n);
	a = (int64_t)floor(half - w);
	b = (int64_t)ceil(half + w) - 1;
	*lo = v[a < 0 ? 0 : a];
	*hi = v[b >= n ? n - 1 : b < 0 ? 0 : b];
}

void ru_share_interval(int64_t k, int64_t n, double *lo, double *hi)
{
	const double z = 1.96;
	double p, d, c, h;

	*lo = 0;
	*hi = 1;
	if (n <= 0)
		return;
	p = (double)k / (double)n;
	d = 1 + z * z / (double)n;
	c = (p + z * z / (2.0 * (double)n)) / d;
	h = z * sqrt(p * (1 - p) / (double)n + z * z / (4.0 * (double)n * (double)n)) / d;
	*lo = c - h > 0 ? c - h : 0;
	*hi = c + h < 1 ? c + h : 1;
}

const char *ru_fmt_ns(char *buf, size_t size, int64_t ns)
{
	return cs_fmt_duration_title(buf, size, ns);
}

const char *ru_fmt_bytes(char *buf, size_t size, int64_t bytes)
{
	return cs_fmt_bytes_title(buf, size, bytes);
}

const char *ru_fmt_steps(char *buf, size_t size, int32_t n, int32_t steady)
{
	if (n >= steady)
		snprintf(buf, size, "every step");
	else
		snprintf(buf, size, "in %d of %d steps", n, steady);
	return buf;
}

int ru_steps_nonzero(const cs_steps *s, const int64_t *per_step, int32_t **out, int32_t *n)
{
	int32_t *v = malloc(((size_t)s->n + 1) * sizeof(*v));

	*out = NULL;
	*n = 0;
	if (!v)
		return CS_ERR_NOMEM;
	for (int32_t i = 0; i < s->n; i++)
		if (!s->v[i].warmup && per_step[i])
			v[(*n)++] = i;
	*out = v;
	return 0;
}

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

/* ---- once per run ---- */

/* The cache of ctx's run, or own when the rule runs on its own. */
static struct cs_rule_cache *cache_of(cs_rule_ctx *ctx, struct cs_rule_cache *own)
{
	return ctx->cache ? ctx->cache : own;
}

/* fact_gpu_floor() of the steps' process, which both waits' facts take: computed once. */
static int cached_floor(cs_rule_ctx *ctx, struct cs_rule_cache *own, const struct fact_floor **out)
{
	struct cs_rule_cache *c = cache_of(ctx, own);

	if (!c->have_floor) {
		int rc = fact_gpu_floor(ctx->a, ctx->steps->pid, &c->floor);

		if (rc)
			return rc;
		c->have_floor = 1;
	}
	*out = &c->floor;
	return 0;
}

int ru_cached_d2h(cs_rule_ctx *ctx, struct cs_rule_cache *own, const struct fact_waits **out)
{
	struct cs_rule_cache *c = cache_of(ctx, own);

	if (!c->have_d2h) {
		const struct fact_floor *floor;
		int rc = cached_floor(ctx, own, &floor);

		if (!rc)
			rc = fact_d2h_waits(ctx->a, ctx->steps, floor, &c->d2h);

		if (rc)
			return rc;
		c->have_d2h = 1;
	}
	*out = &c->d2h;
	return 0;
}

int ru_cached_launch_calls(cs_rule_ctx *ctx, struct cs_rule_cache *own,
			   const struct fact_launch_calls **out)
{
	struct cs_rule_cache *c = cache_of(ctx, own);

	if (!c->launch_calls) {
		struct fact_launch_calls *f = calloc(1, sizeof(*f));

		if (!f || fact_launch_calls(ctx->a, ctx->steps->pid, f)) {
			free(f);
			return CS_ERR_NOMEM;
		}
		c->launch_calls = f;
	}
	*out = c->launch_calls;
	return 0;
}

int ru_cached_launch_ops(cs_rule_ctx *ctx, struct cs_rule_cache *own, const struct ru_op **out,
			 int64_t *n)
{
	struct cs_rule_cache *c = cache_of(ctx, own);

	if (!c->have_ops) {
		int rc = ru_launch_ops(ctx->a, ctx->steps, &c->ops, &c->nops);

		if (rc)
			return rc;
		c->have_ops = 1;
	}
	*out = c->ops;
	*n = c->nops;
	return 0;
}

int ru_rank_measures(cs_rule_ctx *ctx, struct cs_rule_cache *own, cs_rank_step *m,
		     const cs_rank_view **vp, int32_t *me, cs_error *err)
{
	const cs_steps *s = ctx->steps;
	struct cs_rule_cache *c = cache_of(ctx, own);

	/* the report's view, of two processes or more (one process compares with no one) */
	*vp = ctx->procs ? ctx->procs->ranks : NULL;
	*me = -1;
	for (int32_t j = 0; *vp && j < (*vp)->n; j++)
		if ((*vp)->v[j].pid == s->pid && (*vp)->v[j].steps->n == s->n)
			*me = j;
	if (*me >= 0) {
		memcpy(m, (*vp)->v[*me].m, (size_t)s->n * sizeof(*m));
		return 0;
	}
	/* several rules ask: each measured every kernel of the process again */
	if (!c->measures) {
		cs_rank_step *x = calloc((size_t)s->n + 1, sizeof(*x));
		int rc;

		if (!x)
			return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
		rc = cs_rank_steps_measure(ctx->a, s, x, err);
		if (rc < 0) {
			free(x);
			return rc;
		}
		c->measures = x;
	}
	memcpy(m, c->measures, (size_t)s->n * sizeof(*m));
	return 0;
}

int ru_cached_h2d_stalls(cs_rule_ctx *ctx, struct cs_rule_cache *own,
			 const struct ru_h2d_stalls **out)
{
	struct cs_rule_cache *c = cache_of(ctx, own);

	if (!c->have_h2d) {
		const struct fact_launch_calls *lc;
		int rc = ru_cached_launch_calls(ctx, own, &lc);

		if (rc == 0)
			rc = ru_h2d_stalls(ctx->a, ctx->steps, lc, &c->h2d);
		if (rc)
			return rc;
		c->have_h2d = 1;
	}
	*out = &c->h2d;
	return 0;
}

int ru_cached_pageable_copy_waits(cs_rule_ctx *ctx, struct cs_rule_cache *own, const int64_t **out)
{
	struct cs_rule_cache *c = cache_of(ctx, own);

	if (!c->have_copy_wait) {
		int rc = ru_pageable_copy_waits(ctx->a, ctx->steps->pid, &c->copy_wait);

		if (rc)
			return rc;
		c->have_copy_wait = 1;
	}
	*out = c->copy_wait;
	return 0;
}

int ru_cached_host_waits(cs_rule_ctx *ctx, struct cs_rule_cache *own,
			 const struct fact_waits **sync, const struct fact_waits **copy)
{
	struct cs_rule_cache *c = cache_of(ctx, own);

	if (!c->have_host_waits) {
		const int64_t *copy_wait;
		const struct fact_floor *floor;
		int rc = ru_cached_pageable_copy_waits(ctx, own, &copy_wait);

		if (!rc)
			rc = cached_floor(ctx, own, &floor);
		if (!rc)
			rc = fact_host_waits(ctx->a, ctx->steps, copy_wait, floor, &c->sync_waits,
					     &c->copy_waits);
		if (rc)
			return rc;
		c->have_host_waits = 1;
	}
	if (sync)
		*sync = &c->sync_waits;
	if (copy)
		*copy = &c->copy_waits;
	return 0;
}

/* fact_release_bursts() from the cache; with api, also the allocator call costs (alloc_api_cost).
 */
static int cached_mem(cs_rule_ctx *ctx, struct cs_rule_cache *own, int api,
		      const struct fact_bursts **out)
{
	struct cs_rule_cache *c = cache_of(ctx, own);
	int rc;

	if (!c->have_mem) {
		rc = fact_release_bursts(ctx->a, ctx->steps, &c->mem);
		if (rc)
			return rc;
		c->have_mem = 1;
	}
	if (api && !c->have_api_cost) {
		rc = fact_bursts_api_cost(ctx->a, ctx->steps, &c->mem);
		if (rc)
			return rc;
		c->have_api_cost = 1;
	}
	*out = &c->mem;
	return 0;
}

void ru_cache_trim(struct cs_rule_cache *c, unsigned keep)
{
	if (!(keep & CS_FACT_LAUNCH_CALLS) && c->launch_calls) {
		fact_launch_calls_free(c->launch_calls);
		free(c->launch_calls);
		c->launch_calls = NULL;
	}
	if (!(keep & CS_FACT_WAITS)) {
		fact_waits_free(&c->d2h);
		fact_waits_free(&c->sync_waits);
		fact_waits_free(&c->copy_waits);
		free(c->copy_wait);
		c->copy_wait = NULL;
		c->have_d2h = c->have_host_waits = c->have_copy_wait = 0;
	}
	if (!(keep & CS_FACT_LAUNCH_ORDER)) {
		free(c->ops);
		c->ops = NULL;
		c->nops = 0;
		c->have_ops = 0;
	}
}

void ru_cache_free(struct cs_rule_cache *c)
{
	fact_waits_free(&c->d2h);
	fact_bursts_free(&c->mem);
	ru_h2d_stalls_free(&c->h2d);
	fact_waits_free(&c->sync_waits);
	fact_waits_free(&c->copy_waits);
	free(c->copy_wait);
	free(c->idle);
	if (c->launch_calls)
		fact_launch_calls_free(c->launch_calls);
	free(c->launch_calls);
	free(c->ops);
	free(c->measures);
	memset(c, 0, sizeof(*c));
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
	rc = cached_mem(ctx, &own, 0, &m);
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
	if (cached_mem(ctx, &own, 1, &m)) {
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
	cJSON_AddNumberToObject(e, "gpu_idle_ns_per_step", (double)sum->lost);
	cJSON_AddNumberToObject(e, "allocator_calls_per_step", (double)sum->calls);
	cJSON_AddNumberToObject(e, "allocator_host_ns_per_step", (double)sum->host);
	cJSON_AddNumberToObject(e, "reserved_before", (double)sum->reserved_before);
	cJSON_AddNumberToObject(e, "reserved_after", (double)sum->reserved_after);
	cJSON_AddNumberToObject(e, "reserved_peak", (double)m->reserved_peak);
	cJSON_AddNumberToObject(e, "failed_allocations", (double)m->steady_failed);
	cJSON_AddNumberToObject(e, "device_memory", (double)m->device_total);
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

int ru_emit(cs_rule_ctx *ctx, cs_report_finding *f, cs_error *err)
{
	int rc = ctx->emit(ctx, f);

	cs_finding_free(f);
	if (rc < 0)
		return cs_error_set(err, rc, "cannot add a finding");
	return 0;
}

/* ---- evidence of the rules about host waits ---- */

int64_t ru_median_field(const void *per_step, size_t size, const int32_t *steps, int32_t n,
			size_t offset, int64_t *tmp)
{
	for (int32_t i = 0; i < n; i++)
		tmp[i] = *(const int64_t *)((const char *)per_step + (size_t)steps[i] * size +
					    offset);
	return cs_median_i64(tmp, n);
}

int ru_add_wait_types(cJSON *e, const cs_analysis *a, const struct fact_waits *d, int64_t *best)
{
	static const int32_t type_of[RU_WAIT_TYPES] = {CS_SYNC_UNKNOWN,
						       CS_SYNC_EVENT_SYNCHRONIZE,
						       CS_SYNC_STREAM_WAIT_EVENT,
						       CS_SYNC_STREAM_SYNCHRONIZE,
						       CS_SYNC_CONTEXT_SYNCHRONIZE,
						       CS_SYNC_MEMCPY,
						       CS_SYNC_EVENT_QUERY,
						       CS_SYNC_STREAM_QUERY,
						       CS_SYNC_HOST_FUNC};
	int64_t count[RU_WAIT_TYPES] = {0};
	cJSON *types;

	*best = -1;
	for (int64_t i = 0; i < d->n; i++) {
		const cs_a_sync *y = &a->syncs[d->v[i].sync];

		if (d->v[i].step < 0 || fact_wait_cost(&d->v[i]) == 0)
			continue;
		for (int k = 0; k < RU_WAIT_TYPES; k++)
			if (type_of[k] == y->type)
				count[k]++;
		if (*best < 0 || fact_wait_cost(&d->v[i]) > fact_wait_cost(&d->v[*best]))
			*best = i;
	}
	types = cJSON_AddObjectToObject(e, "waits_by_type");
	if (!types)
		return CS_ERR_NOMEM;
	for (int k = 0; k < RU_WAIT_TYPES; k++)
		if (count[k])
			cJSON_AddNumberToObject(types, cs_sync_type_name(type_of[k]),
						(double)count[k]);
	return 0;
}

int ru_add_wait_sites(cJSON *e, const cs_analysis *a, const struct fact_waits *d, int copy_stack,
		      int max, int64_t *stack_id)
{
	struct ru_sites u = {0};
	int rc = 0;

	for (int64_t i = 0; i < d->n && !rc; i++) {
		const struct fact_wait *w = &d->v[i];
		const cs_a_sync *y = &a->syncs[w->sync];

		if (w->step < 0 || fact_wait_cost(w) == 0)
			continue;
		rc = ru_sites_add(&u, -1, y->tid,
				  y->stack_id == CS_ID_NONE && copy_stack
					  ? a->copies[w->first_copy].stack_id
					  : y->stack_id,
				  -1, fact_wait_cost(w));
	}
	if (!rc)
		rc = ru_sites_evidence(e, &u, NULL, 0, max, stack_id);
	ru_sites_free(&u);
	return rc;
}

/* ---- recurring or rare: the decision of the wait rules ---- */

int ru_recur_decide(const cs_steps *s, int64_t step_median, const int64_t *cost, int32_t *steps,
		    int32_t *nsteps, int skip_ends, int32_t min_steps, double min_step_share,
		    int32_t min_rare_steps, double min_loss_share, int64_t *tmp, struct ru_recur *r)
{
	int32_t n = *nsteps;
	int64_t lost_lo, lost_hi;

	memset(r, 0, sizeof(*r));
	r->steady = cs_steps_steady(s);
	r->min_loss_share = min_loss_share;
	r->min_step_share = min_step_share;
	/* once is an event, not a pattern of the loop: a pattern recurs */
	if (r->steady <= 0 || n < min_rare_steps)
		return 0;
	/* the share of steady steps with the cost, and its 95% interval (k of n) */
	ru_share_interval(n, r->steady, &r->steps_lo, &r->steps_hi);
	r->recurring = n >= min_steps && r->steps_hi >= min_step_share;
	if (!r->recurring && skip_ends) {
		int32_t m = 0;

		for (int32_t i = 0; i < n; i++)
			if (steps[i] != s->warmup && steps[i] != s->n - 1)
				steps[m++] = steps[i];
		*nsteps = n = m;
		if (n < min_rare_steps)
			return 0;
	}
	for (int32_t i = 0; i < n; i++)
		tmp[i] = cost[steps[i]];
	ru_median_interval(tmp, n, &lost_lo, &lost_hi);
	if (r->recurring) {
		/* in (about) every step: the median step's loss, and its 95% interval */
		r->near_steps = n < min_step_share * r->steady || r->steps_lo < min_step_share;
		for (int32_t i = 0; i < n; i++)
			tmp[i] = cost[steps[i]];
		r->lost = cs_median_i64(tmp, n);
	} else {
		/*
		 * In a few steps only (every Nth step, a rare event): direct evidence however rare.
		 * What it cost over the steady state, per step: the total divided by the steady
		 * steps. The steps that have it are where the program put it (counted, not
		 * sampled); its interval is that of the loss in one of them, times k/n.
		 */
		int64_t total = 0;

		for (int32_t i = 0; i < n; i++)
			cs_sat_accum(&total, cost[steps[i]]);
		r->lost = total / r->steady;
		lost_lo = (int64_t)((double)lost_lo * n / r->steady);
		lost_hi = (int64_t)((double)lost_hi * n / r->steady);
	}
	if (step_median > 0) {
		r->share = (double)r->lost / (double)step_median;
		r->share_lo = (double)lost_lo / (double)step_median;
		r->share_hi = (double)lost_hi / (double)step_median;
	}
	if (r->share_hi < min_loss_share)
		return 0;
	r->near_loss = r->share_lo < min_loss_share;
	r->near = r->near_loss || r->near_steps;
	return 1;
}

void ru_recur_near_text(const struct ru_recur *r, char *loss, size_t loss_size, char *steps,
			size_t steps_size)
{
	loss[0] = steps[0] = '\0';
	if (r->near_loss)
		snprintf(loss, loss_size, "; near the %.0f%% threshold (95%% interval %.1f-%.1f%%)",
			 r->min_loss_share * 100, r->share_lo * 100, r->share_hi * 100);
	if (r->near_steps)
		snprintf(steps, steps_size,
			 "; near the %.0f%% threshold of steps (95%% interval %.0f-%.0f%%)",
			 r->min_step_share * 100, r->steps_lo * 100, r->steps_hi * 100);
}

void ru_recur_rare_text(const struct ru_recur *r, int32_t nsteps, int64_t each, char *buf,
			size_t size)
{
	char b1[32], b2[32];

	snprintf(buf, size,
		 "in %d of %d steady steps: %s of GPU idle each time, %s per step over the steady "
		 "state (%.1f%%)",
		 (int)nsteps, (int)r->steady, ru_fmt_ns(b1, sizeof(b1), each),
		 ru_fmt_ns(b2, sizeof(b2), r->lost), r->share * 100);
}

void ru_recur_evidence(cJSON *e, const struct ru_recur *r, int32_t nsteps)
{
	double affected = r->steady > 0 ? (double)nsteps / (double)r->steady : 0;

	cJSON_AddNumberToObject(e, "loss_share", r->share);
	cJSON_AddNumberToObject(e, "loss_share_low", r->share_lo);
	cJSON_AddNumberToObject(e, "loss_share_high", r->share_hi);
	cJSON_AddNumberToObject(e, "min_loss_share", r->min_loss_share);
	cJSON_AddNumberToObject(e, "threshold_margin", r->share - r->min_loss_share);
	cJSON_AddNumberToObject(e, "affected_share", affected);
	cJSON_AddNumberToObject(e, "affected_share_low", r->steps_lo);
	cJSON_AddNumberToObject(e, "affected_share_high", r->steps_hi);
	cJSON_AddNumberToObject(e, "min_affected_share", r->min_step_share);
	cJSON_AddNumberToObject(e, "affected_share_margin", affected - r->min_step_share);
	cJSON_AddBoolToObject(e, "near_threshold", r->near);
	cJSON_AddBoolToObject(e, "recurring", r->recurring);
}

/* ---- GPU work in the order the host launched it ---- */

/*
 * Within a step: by launching thread, then launch time. Equal keys keep the order of the list,
 * which ru_launch_ops() makes by index, a kernel before the memset of the same index: the order
 * of a comparison of the index too, without sorting by it.
 */
static const cs_sort_key op_keys[] = {
	{offsetof(struct ru_op, tid), CS_KEY_U32},
	{offsetof(struct ru_op, launch), CS_KEY_I64},
};

/* The steady step of work launched at launch_start (start when unknown), or -1; *hint as
 * cs_steps_find_near() keeps it. */
static int32_t op_step(const cs_steps *s, int64_t launch_start, int64_t start, int *hint)
{
	int i = cs_steps_find_near(s, cs_launch_time(launch_start, start), hint);

	return i >= 0 && !s->v[i].warmup ? i : -1;
}

/* The steady step of kernel i when it is a launch of s's process, else -1. */
static int32_t kernel_step(const cs_analysis *a, const cs_steps *s, int64_t i, int *hint)
{
	const cs_a_kernel *k = &a->kernels[i];

	if (k->pid != s->pid || k->graph)
		return -1;
	return op_step(s, k->launch_start, k->start, hint);
}

/* The steady step of copy i when it is a memset of s's process, else -1. */
static int32_t memset_step(const cs_analysis *a, const cs_steps *s, int64_t i, int *hint)
{
	const cs_a_copy *c = &a->copies[i];

	if (c->pid != s->pid || !c->is_memset)
		return -1;
	return op_step(s, c->launch_start, c->start, hint);
}

/*
 * Each kernel and memset of a steady step, by index, a kernel before the memset of the same
 * index, to its step: with fill unset counted in at[step], else written at v[at[step]++].
 */
static void op_pass(const cs_analysis *a, const cs_steps *s, int64_t *at, struct ru_op *v,
		    int fill)
{
	int hk = -1, hc = -1;

	for (int64_t i = 0; i < a->nkernels || i < a->ncopies; i++) {
		int32_t st = i < a->nkernels ? kernel_step(a, s, i, &hk) : -1;

		if (st >= 0 && fill) {
			const cs_a_kernel *k = &a->kernels[i];
			struct ru_op *o = &v[at[st]++];

			o->step = st;
			o->index = (uint32_t)i;
			/* load.c bounds name ids by the strings' count: only a file of billions of
			 * them would reach this */
			o->name = k->name_id <= INT32_MAX ? (int32_t)k->name_id : CS_ID_NONE;
			o->size = k->grid_blocks;
			o->launch = cs_launch_time(k->launch_start, k->start);
			o->tid = k->launch_tid;
			o->is_kernel = 1;
		} else if (st >= 0) {
			at[st]++;
		}
		st = i < a->ncopies ? memset_step(a, s, i, &hc) : -1;
		if (st >= 0 && fill) {
			const cs_a_copy *c = &a->copies[i];
			struct ru_op *o = &v[at[st]++];

			o->step = st;
			o->index = (uint32_t)i;
			o->name = -1;
			o->size = c->bytes;
			o->launch = cs_launch_time(c->launch_start, c->start);
			o->tid = c->launch_tid;
			o->is_kernel = 0;
		} else if (st >= 0) {
			at[st]++;
		}
	}
}

int ru_launch_ops(const cs_analysis *a, const cs_steps *s, struct ru_op **out, int64_t *n)
{
	struct ru_op *v = NULL;
	int64_t *at;

	*out = NULL;
	*n = 0;
	/* an index has 31 bits in a ru_op (load.c refuses more kernels) */
	if (a->nkernels > INT32_MAX || a->ncopies > INT32_MAX)
		return CS_ERR_NOMEM;
	at = calloc((size_t)s->n + 1, sizeof(*at));
	if (!at)
		return CS_ERR_NOMEM;
	/*
	 * Sorted by step as a counting sort makes it, straight into place: a pass counts each
	 * step's work, a second writes it, and then each step's few thousand are sorted alone.
	 * A sort of the whole array would need a second array as large (the radix sort's), or
	 * pointers to every record and a comparison each (a merge sort's).
	 */
	op_pass(a, s, at, NULL, 0);
	/* at[st]: where step st begins, then (after the second pass) where the next begins */
	for (int32_t i = 0; i < s->n; i++) {
		int64_t c = at[i];

		at[i] = *n;
		*n += c;
	}
	v = cs_big_alloc((size_t)(*n + 1) * sizeof(*v));
	if (!v) {
		free(at);
		*n = 0;
		return CS_ERR_NOMEM;
	}
	op_pass(a, s, at, v, 1);
	for (int32_t i = 0; i < s->n; i++) {
		int64_t b = i > 0 ? at[i - 1] : 0;

		cs_sort_records(v + b, (size_t)(at[i] - b), sizeof(*v), op_keys, 2);
	}
	free(at);
	*out = v;
	return 0;
}

int32_t ru_repeats_at(const struct ru_op *ops, int64_t i, int64_t end, int32_t pmax,
		      int32_t *period)
{
	int32_t best_r = 1, best_p = 1;

	for (int32_t p = 1; p <= pmax && i + 2 * (int64_t)p <= end; p++) {
		int64_t k = 0;
		int32_t r;

		while (i + k + p < end && ops[i + k].name == ops[i + k + p].name)
			k++;
		r = (int32_t)((k + p) / p);
		/* the smallest period that covers the most */
		if (r >= 2 && (int64_t)r * p > (int64_t)best_r * best_p) {
			best_r = r;
			best_p = p;
		}
	}
	*period = best_p;
	return best_r;
}

int64_t ru_gpu_idle(const cs_analysis *a, uint32_t pid, int64_t t0, int64_t t1)
{
	int64_t busy;

	if (t1 <= t0 || t0 == CS_TS_UNKNOWN)
		return 0;
	busy = cs_analysis_gpu_busy(a, pid, t0, t1);
	return busy < cs_sat_sub(t1, t0) ? cs_sat_sub(cs_sat_sub(t1, t0), busy) : 0;
}

/* ---- kernel names ---- */

int64_t ru_mode_nonzero(int64_t *v, int32_t n)
{
	int32_t best_n = 0;
	int64_t best = 0;

	ru_sort_i64(v, n);
	for (int32_t i = 0, j; i < n; i = j) {
		for (j = i; j < n && v[j] == v[i]; j++)
			;
		if (v[i] != 0 && j - i > best_n) {
			best_n = j - i;
			best = v[i];
		}
	}
	return best;
}

/* ---- blocking copies from pageable memory ---- */

struct tid_call {
	uint32_t tid;
	int64_t t;
};

/* by thread, then time */
static const cs_sort_key tid_call_keys[] = {
	{offsetof(struct tid_call, tid), CS_KEY_U32},
	{offsetof(struct tid_call, t), CS_KEY_I64},
};

/* The first launch call of thread tid at or after t in the sorted calls, or INT64_MAX. */
static int64_t next_call(const struct tid_call *v, int64_t n, uint32_t tid, int64_t t)
{
	int64_t lo = 0, hi = n;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (v[mid].tid < tid || (v[mid].tid == tid && v[mid].t < t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].tid == tid ? v[lo].t : INT64_MAX;
}

static int is_pageable_h2d(const cs_a_copy *c)
{
	return !c->is_memset && (c->copy_kind == CS_COPY_HTOD || c->copy_kind == CS_COPY_HTOA) &&
	       c->src_kind == CS_MEM_PAGEABLE && c->launch_start != CS_TS_UNKNOWN &&
	       c->launch_end != CS_TS_UNKNOWN;
}

/* The launch calls of pid by thread, then start: *n of them into *out, freed with free(). */
static int tid_calls(const cs_analysis *a, uint32_t pid, struct tid_call **out, int64_t *n)
{
	struct tid_call *calls = malloc(((size_t)(a->nkernels + a->ncopies) + 1) * sizeof(*calls));

	*out = calls;
	*n = 0;
	if (!calls)
		return CS_ERR_NOMEM;
	for (int64_t i = 0; i < a->nkernels + a->ncopies; i++) {
		const cs_a_kernel *k = i < a->nkernels ? &a->kernels[i] : NULL;
		const cs_a_copy *c = k ? NULL : &a->copies[i - a->nkernels];
		int64_t t = k ? k->launch_start : c->launch_start;

		if ((k ? k->pid : c->pid) != pid || t == CS_TS_UNKNOWN)
			continue;
		calls[*n].tid = k ? k->launch_tid : c->launch_tid;
		calls[(*n)++].t = t;
	}
	cs_sort_records(calls, (size_t)*n, sizeof(*calls), tid_call_keys, 2);
	return 0;
}

int ru_pageable_copy_waits(const cs_analysis *a, uint32_t pid, int64_t **wait_of)
{
	struct tid_call *calls = NULL;
	int64_t n = 0, *w;

	w = malloc((size_t)(a->ncopies > 0 ? a->ncopies : 1) * sizeof(*w));
	if (!w)
		return CS_ERR_NOMEM;
	for (int64_t i = 0; i < a->ncopies; i++)
		w[i] = -1;
	for (int64_t i = 0; i < a->ncopies; i++) {
		const cs_a_copy *c = &a->copies[i];
		int64_t stop;

		if (c->pid != pid || !is_pageable_h2d(c))
			continue;
		/* every launch call of the process, sorted: made for the first pageable copy (many
		 * traces have none) */
		if (!calls && tid_calls(a, pid, &calls, &n)) {
			free(w);
			return CS_ERR_NOMEM;
		}
		/* the thread's next launch call after this copy's own */
		stop = next_call(calls, n, c->launch_tid, c->launch_start + 1);
		for (int64_t j = cs_analysis_sync_at(a, c->launch_end);
		     j < a->nsyncs && a->syncs[j].start < stop; j++) {
			const cs_a_sync *y = &a->syncs[j];

			if (y->pid != pid || y->tid != c->launch_tid)
				continue;
			if (y->host_wait)
				w[i] = j;
			break;
		}
	}
	free(calls);
	*wait_of = w;
	return 0;
}

uint8_t *ru_steps_mask(const cs_steps *s, const int32_t *steps, int32_t n)
{
	uint8_t *in = calloc((size_t)s->n + 1, 1);

	for (int32_t i = 0; in && i < n; i++)
		if (steps[i] >= 0 && steps[i] < s->n)
			in[steps[i]] = 1;
	return in;
}

int ru_edit_no_waits(cs_report_finding *f, const struct fact_waits *d, int copies)
{
	for (int64_t i = 0; i < d->n; i++) {
		const struct fact_wait *w = &d->v[i];

		if (w->step < 0)
			continue;
		if (cs_edit_add(&f->edit, CS_EDIT_NO_WAIT, CS_EDIT_SYNC, w->sync, 0))
			return CS_ERR_NOMEM;
		if (copies && w->first_copy >= 0 &&
		    cs_edit_add(&f->edit, CS_EDIT_NO_WAIT, CS_EDIT_COPY, w->first_copy, 0))
			return CS_ERR_NOMEM;
	}
	return 0;
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

int ru_edit_h2d(cs_report_finding *f, const cs_analysis *a, const cs_steps *s,
		const struct ru_h2d_stalls *h,
		int (*own)(const cs_analysis *a, const struct ru_h2d_stall *y),
		const int32_t *steps, int32_t nsteps, int device)
{
	uint8_t *in = ru_steps_mask(s, steps, nsteps);
	int rc = 0;

	if (!in)
		return CS_ERR_NOMEM;
	for (int64_t i = 0; i < h->n && rc == 0; i++) {
		const struct ru_h2d_stall *y = &h->v[i];

		if (y->step < 0 || y->step >= s->n || !in[y->step] || !own(a, y))
			continue;
		rc = cs_edit_add(&f->edit, CS_EDIT_HOST_CUT, CS_EDIT_COPY, y->copy, y->stretch_ns);
		if (rc == 0 && device)
			rc = cs_edit_add(&f->edit, CS_EDIT_ASYNC, CS_EDIT_COPY, y->copy, 0);
	}
	free(in);
	return rc ? CS_ERR_NOMEM : 0;
}

int ru_edit_kernel_time(cs_report_finding *f, const cs_analysis *a, const cs_steps *s,
			const int32_t *steps, int32_t n,
			int (*match)(const cs_a_kernel *k, void *arg), void *arg, double factor)
{
	uint8_t *in = ru_steps_mask(s, steps, n);
	int rc = 0;

	if (!in)
		return CS_ERR_NOMEM;
	for (int64_t i = 0; i < a->nkernels && rc == 0; i++) {
		const cs_a_kernel *k = &a->kernels[i];
		int st;

		if (k->pid != s->pid || k->start == CS_TS_UNKNOWN || k->end == CS_TS_UNKNOWN ||
		    k->end <= k->start)
			continue;
		st = cs_steps_find_launch(s, k->launch_start, k->start);
		if (st < 0 || !in[st] || !match(k, arg))
			continue;
		rc = cs_edit_add(&f->edit, CS_EDIT_GPU_TIME, CS_EDIT_KERNEL, i,
				 (int64_t)((double)(k->end - k->start) * factor));
	}
	free(in);
	return rc ? CS_ERR_NOMEM : 0;
}
