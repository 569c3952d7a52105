/* cache.c - the run's cache of the facts, each computed once per process and run (cache.h). */
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "source_made.h"
#include "idle_by_cause.h"
#include "launch_calls.h"
#include "launch_ops.h"
#include "pageable_copies.h"

/* The cache of ctx's run, or own when the rule runs on its own. */
static struct cs_rule_cache *cache_of(cs_rule_ctx *ctx, struct cs_rule_cache *own)
{
	return ctx->cache ? ctx->cache : own;
}

int ru_cached_floor(cs_rule_ctx *ctx, struct cs_rule_cache *own, const struct fact_floor **out)
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
		int rc = ru_cached_floor(ctx, own, &floor);

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

int ru_cached_launch_ops(cs_rule_ctx *ctx, struct cs_rule_cache *own,
			 const struct fact_launch_op **out, int64_t *n)
{
	struct cs_rule_cache *c = cache_of(ctx, own);

	if (!c->have_ops) {
		int rc = fact_launch_ops(ctx->a, ctx->steps, &c->ops, &c->nops);

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
			 const struct fact_h2d_stalls **out)
{
	struct cs_rule_cache *c = cache_of(ctx, own);

	if (!c->have_h2d) {
		const struct fact_launch_calls *lc;
		int rc = ru_cached_launch_calls(ctx, own, &lc);

		if (rc == 0)
			rc = fact_h2d_stalls(ctx->a, ctx->steps, lc, &c->h2d);
		/* a boundary copy whose source made the tensor on the host is no batch */
		if (rc == 0)
			rc = ru_h2d_by_source(ctx->a, &c->h2d);
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
		int rc = fact_pageable_copy_waits(ctx->a, ctx->steps->pid, &c->copy_wait);

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
			rc = ru_cached_floor(ctx, own, &floor);
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

int ru_cached_bursts(cs_rule_ctx *ctx, struct cs_rule_cache *own, int api,
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
	fact_h2d_stalls_free(&c->h2d);
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

/* cs_steps_idle_by_cause() with the context's cache for the device-to-host waits and the launch
 * calls, from the prepared scan sc, or a scan of its own when sc is NULL */
static int idle_by_cause(cs_rule_ctx *ctx, struct cs_rule_cache *own,
			 const struct fact_idle_scan *sc, int64_t *idle)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	const struct fact_launch_calls *lc;
	const struct fact_waits *d;
	const struct fact_floor *floor;
	struct fact_idle_scan mine;
	int rc;

	if (s->n > 0)
		memset(idle, 0, (size_t)s->n * CS_IDLE_NCAUSES * sizeof(*idle));
	if (cs_steps_steady(s) <= 0 || a->nkernels == 0)
		return 0;
	if (sc)
		return fact_idle_by_cause(a, s, sc, idle);
	rc = ru_cached_d2h(ctx, own, &d);
	if (rc == 0)
		rc = ru_cached_launch_calls(ctx, own, &lc);
	if (rc == 0)
		rc = ru_cached_floor(ctx, own, &floor);
	if (rc)
		return rc;
	rc = fact_idle_scan_prepare(a, s, d, lc, floor->lag, &mine);
	if (rc == 0)
		rc = fact_idle_by_cause(a, s, &mine, idle);
	fact_idle_scan_free(&mine);
	return rc;
}

int cs_steps_idle_by_cause(const cs_analysis *a, const cs_steps *s, int64_t *idle, cs_error *err)
{
	struct cs_rule_cache own = {0};
	cs_rule_ctx ctx = {a, s, 0, NULL, NULL, NULL, NULL, NULL};
	int rc = idle_by_cause(&ctx, &own, NULL, idle);

	ru_cache_free(&own);
	return rc ? cs_error_set(err, rc, "out of memory") : 0;
}

int ru_cached_idle_by_cause_from(cs_rule_ctx *ctx, struct cs_rule_cache *own,
				 const struct fact_idle_scan *sc, const int64_t **out)
{
	struct cs_rule_cache *c = cache_of(ctx, own);

	if (!c->idle) {
		int64_t *idle = calloc((size_t)ctx->steps->n * CS_IDLE_NCAUSES + 1, sizeof(*idle));
		int rc = idle ? idle_by_cause(ctx, own, sc, idle) : CS_ERR_NOMEM;

		if (rc) {
			free(idle);
			return rc;
		}
		c->idle = idle;
	}
	*out = c->idle;
	return 0;
}

int ru_cached_idle_by_cause(cs_rule_ctx *ctx, struct cs_rule_cache *own, const int64_t **out)
{
	return ru_cached_idle_by_cause_from(ctx, own, NULL, out);
}
