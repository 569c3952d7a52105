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
