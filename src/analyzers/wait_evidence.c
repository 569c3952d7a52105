/* wait_evidence.c - what the rules about host waits decide and say alike (wait_evidence.h). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "cache.h"
#include "cuscope/checked.h"
#include "edits.h"
#include "finding_kit.h"
#include "sites.h"
#include "wait_evidence.h"

/* The waits of one step. */
struct wait_sum {
	int64_t waits;	   /* all of them */
	int64_t draining;  /* those that cost GPU time */
	int64_t wait_ns;   /* the time they held the host */
	int64_t idle_ns;   /* the GPU idle charged to them: the rule's cost */
	int64_t refill_ns; /* the time the GPU took to fill up again after them */
	int64_t copies;	   /* the device-to-host copies they waited for */
	int64_t bytes;	   /* those copies' bytes */
	int64_t left_ns;   /* the idle left to another rule (the input's), not charged to them */
};

/* The medians of the waits' sums in a finding's evidence, first and after the sync types. */
static const struct ru_median_key idle_medians[] = {
	{"idle_ns_per_step", offsetof(struct wait_sum, idle_ns)},
	{"draining_waits_per_step", offsetof(struct wait_sum, draining)},
};
static const struct ru_median_key copy_medians[] = {
	{"copies_per_step", offsetof(struct wait_sum, copies)},
	{"bytes_per_step", offsetof(struct wait_sum, bytes)},
};
static const struct ru_median_key time_medians[] = {
	{"wait_ns_per_step", offsetof(struct wait_sum, wait_ns)},
	{"refill_ns_per_step", offsetof(struct wait_sum, refill_ns)},
	{"waits_per_step", offsetof(struct wait_sum, waits)},
};

/*
 * Add the wait w of a to its step's sum x; when it costs GPU time, it is charged its idle less
 * taken (the part of it another rule charges, added to left_ns; at least 0).
 */
static void wait_sum_add(struct wait_sum *x, const cs_analysis *a, const struct fact_wait *w,
			 int64_t taken)
{
	const cs_a_sync *y = &a->syncs[w->sync];
	int64_t cost = fact_wait_cost(w);

	x->waits++;
	if (y->end != CS_TS_UNKNOWN && y->end > y->start)
		cs_sat_accum(&x->wait_ns, y->end - y->start);
	if (cost > 0) {
		x->draining++;
		cs_sat_accum(&x->idle_ns, cost > taken ? cost - taken : 0);
		cs_sat_accum(&x->refill_ns, w->refill_ns);
	}
	x->copies += w->copies;
	cs_sat_accum(&x->bytes, w->bytes);
	cs_sat_accum(&x->left_ns, taken);
}

/* The sync types a finding counts its waits by. */
#define WAIT_TYPES 9
/*
 * The medians over steps[0..nsteps) of sum (by step index) added to e as "idle_ns_per_step" and
 * "draining_waits_per_step", then the waits of d that cost GPU time, by sync type, as
 * "waits_by_type"; *best is the costliest of them (-1: none). tmp has room for nsteps values. 0,
 * or CS_ERR_NOMEM.
 */

static int add_wait_types(cJSON *e, const cs_analysis *a, const struct fact_waits *d,
			  const struct wait_sum *sum, const int32_t *steps, int32_t nsteps,
			  int64_t *tmp, int64_t *best)
{
	static const int32_t type_of[WAIT_TYPES] = {CS_SYNC_UNKNOWN,
						    CS_SYNC_EVENT_SYNCHRONIZE,
						    CS_SYNC_STREAM_WAIT_EVENT,
						    CS_SYNC_STREAM_SYNCHRONIZE,
						    CS_SYNC_CONTEXT_SYNCHRONIZE,
						    CS_SYNC_MEMCPY,
						    CS_SYNC_EVENT_QUERY,
						    CS_SYNC_STREAM_QUERY,
						    CS_SYNC_HOST_FUNC};
	int64_t count[WAIT_TYPES] = {0};
	cJSON *types;

	ru_add_medians(e, idle_medians, sizeof(idle_medians) / sizeof(*idle_medians), sum,
		       sizeof(*sum), steps, nsteps, tmp);
	*best = -1;
	for (int64_t i = 0; i < d->n; i++) {
		const cs_a_sync *y = &a->syncs[d->v[i].sync];

		if (d->v[i].step < 0 || fact_wait_cost(&d->v[i]) == 0)
			continue;
		for (int k = 0; k < WAIT_TYPES; k++)
			if (type_of[k] == y->type)
				count[k]++;
		if (*best < 0 || fact_wait_cost(&d->v[i]) > fact_wait_cost(&d->v[*best]))
			*best = i;
	}
	types = cJSON_AddObjectToObject(e, "waits_by_type");
	if (!types)
		return CS_ERR_NOMEM;
	for (int k = 0; k < WAIT_TYPES; k++)
		if (count[k])
			cJSON_AddNumberToObject(types, cs_sync_type_name(type_of[k]),
						(double)count[k]);
	return 0;
}

/*
 * The call sites of the waits of d that cost GPU time, merged by the wait's stack (with
 * copy_stack, by the stack of the first copy it waited for when the wait has none), most idle
 * first, as ru_sites_evidence() lists them (stack_id, count: the waits, cost_ns: their idle): at
 * most RU_WAIT_MAX_SITES of them added to e as "sites", and the costliest site's stack given to
 * *stack_id; then the waits' noise floor and the steady and affected (nsteps) steps. 0, or
 * CS_ERR_NOMEM.
 */
static int add_wait_sites(cJSON *e, const cs_analysis *a, const cs_steps *s,
			  const struct fact_waits *d, int32_t nsteps, int copy_stack,
			  int64_t *stack_id)
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
		rc = ru_sites_evidence(e, &u, NULL, 0, RU_WAIT_MAX_SITES, stack_id);
	ru_sites_free(&u);
	if (rc)
		return rc;
	cJSON_AddNumberToObject(e, "noise_floor_ns", (double)d->floor_ns);
	cJSON_AddNumberToObject(e, "back_to_back_pairs", (double)d->floor_pairs);
	cJSON_AddNumberToObject(e, "steady_steps", cs_steps_steady(s));
	cJSON_AddNumberToObject(e, "affected_steps", nsteps);
	return 0;
}

/*
 * The costliest wait w of a as e's "costliest_wait": its step, sync type and times; with copies,
 * the first copy it waited for, else its stream when known; the GPU idle after it and the window
 * it is charged for. 0, or CS_ERR_NOMEM.
 */
static int add_costliest(cJSON *e, const cs_analysis *a, const struct fact_wait *w, int copies)
{
	const cs_a_sync *y = &a->syncs[w->sync];
	cJSON *ex = cJSON_AddObjectToObject(e, "costliest_wait");

	if (!ex)
		return CS_ERR_NOMEM;
	cJSON_AddNumberToObject(ex, "step", w->step);
	cJSON_AddStringToObject(ex, "type", cs_sync_type_name(y->type));
	cJSON_AddNumberToObject(ex, "wait_start", (double)y->start);
	cJSON_AddNumberToObject(ex, "wait_end",
				(double)(y->end != CS_TS_UNKNOWN ? y->end : y->start));
	if (copies) {
		const cs_a_copy *c = &a->copies[w->first_copy];

		cJSON_AddNumberToObject(ex, "copy_start", (double)c->start);
		cJSON_AddNumberToObject(ex, "copy_bytes", (double)c->bytes);
		cJSON_AddStringToObject(ex, "copy_dst", cs_mem_kind_name(c->dst_kind));
	} else if (y->stream_id != CS_ID_NONE) {
		cJSON_AddNumberToObject(ex, "stream", (double)y->stream_id);
	}
	cJSON_AddNumberToObject(ex, "idle_start", (double)w->idle_start);
	cJSON_AddNumberToObject(ex, "idle_end", (double)w->idle_end);
	cJSON_AddNumberToObject(ex, "idle_ns", (double)fact_wait_idle(w));
	cJSON_AddNumberToObject(ex, "refill_gaps", w->refill_gaps);
	cJSON_AddNumberToObject(ex, "refill_ns", (double)w->refill_ns);
	cJSON_AddNumberToObject(ex, "window_end", (double)w->window_end);
	return 0;
}

/*
 * The title of a finding about host waits, into buf: "<what> the GPU N times per step: X of GPU
 * idle per step (S%)" when r is recurring (N: the median of the waits that drained it per step),
 * else "<what> the GPU in K of N steady steps: ..." (with the median idle of the affected steps),
 * with ru_recur_near_text()'s words. sum: by step index; steps[0..nsteps): the affected steps;
 * tmp: room for nsteps values.
 */
static void wait_title(char *buf, size_t size, const char *what, const struct ru_recur *r,
		       const struct wait_sum *sum, const int32_t *steps, int32_t nsteps,
		       int64_t *tmp)
{
	int64_t per = ru_median_field(sum, sizeof(*sum), steps, nsteps,
				      offsetof(struct wait_sum, draining), tmp);
	char b1[32], b2[96], b3[96], rare[200];

	ru_recur_near_text(r, b2, sizeof(b2), b3, sizeof(b3));
	if (r->recurring) {
		snprintf(buf, size,
			 "%s the GPU %lld time%s per step: %s of GPU idle per step (%.1f%%)%s%s",
			 what, (long long)per, per == 1 ? "" : "s",
			 ru_fmt_ns(b1, sizeof(b1), r->lost), r->share * 100, b2, b3);
	} else {
		ru_recur_rare_text(r, nsteps,
				   ru_median_field(sum, sizeof(*sum), steps, nsteps,
						   offsetof(struct wait_sum, idle_ns), tmp),
				   rare, sizeof(rare));
		snprintf(buf, size, "%s the GPU %s%s", what, rare, b2);
	}
}

/*
 * f's first and last: the start of the first wait of d that costs GPU time in a steady step (with
 * copy_start, the start of the first copy it waited for) and the end of the window the last one
 * is charged for.
 */
static void wait_span(cs_report_finding *f, const cs_analysis *a, const struct fact_waits *d,
		      int copy_start)
{
	for (int64_t i = 0; i < d->n; i++) {
		const struct fact_wait *w = &d->v[i];

		if (w->step < 0 || fact_wait_cost(w) == 0)
			continue;
		if (f->first == CS_TS_UNKNOWN)
			f->first = copy_start ? a->copies[w->first_copy].start
					      : a->syncs[w->sync].start;
		f->last = w->window_end;
	}
}

/*
 * The decision and the finding of ru_wait_report() on the sums of the waits d by step (sum), into
 * *f (NULL when there is none). idle and tmp: s->n + 1 values each, as ru_recur_arrays() makes
 * them. 0 or CS_ERR_NOMEM.
 */
static int wait_finding(cs_rule_ctx *ctx, const char *rule, const char *what, const char *fix,
			const struct fact_waits *d, int copies, int skip_ends,
			const struct wait_sum *sum, int64_t *idle, int64_t *tmp,
			cs_report_finding **f)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	int32_t *steps = NULL, nsteps = 0;
	struct ru_recur r;
	cJSON *e;
	char title[400];
	int64_t best = -1, left;
	int rc;

	*f = NULL;
	for (int32_t i = 0; i < s->n; i++)
		idle[i] = sum[i].idle_ns;
	rc = ru_recur_find(s, ctx->step_median, idle, skip_ends, RU_WAIT_MIN_STEPS,
			   RU_WAIT_MIN_STEP_SHARE, RU_RARE_MIN_STEPS, RU_MIN_LOSS_SHARE, tmp,
			   &steps, &nsteps, &r);
	if (rc <= 0)
		goto out;
	rc = CS_ERR_NOMEM;
	wait_title(title, sizeof(title), what, &r, sum, steps, nsteps, tmp);
	*f = ru_recur_finding(rule, &r, title, fix, steps, nsteps);
	if (!*f)
		goto out;
	wait_span(*f, a, d, copies);
	e = (*f)->evidence;
	/* which APIs waited, and the costliest wait */
	if (add_wait_types(e, a, d, sum, steps, nsteps, tmp, &best))
		goto out;
	if (copies)
		ru_add_medians(e, copy_medians, sizeof(copy_medians) / sizeof(*copy_medians), sum,
			       sizeof(*sum), steps, nsteps, tmp);
	ru_add_medians(e, time_medians, sizeof(time_medians) / sizeof(*time_medians), sum,
		       sizeof(*sum), steps, nsteps, tmp);
	if (best >= 0 && add_costliest(e, a, &d->v[best], copies))
		goto out;
	/* call sites, when the trace has backtraces */
	if (add_wait_sites(e, a, s, d, nsteps, copies, &(*f)->stack_id))
		goto out;
	/* left to dataloader-stall / host-created-tensor: only when there is some */
	left = ru_median_field(sum, sizeof(*sum), steps, nsteps, offsetof(struct wait_sum, left_ns),
			       tmp);
	if (left > 0)
		cJSON_AddNumberToObject(e, "idle_left_to_input_stalls_ns", (double)left);
	ru_recur_evidence(e, &r, nsteps);
	/* the fix as an edit of the run: no wait of the steady steps holds the host (the value is
	 * read later, or the synchronize is gone; docs/replay.md) */
	if (copies) {
		struct cs_rule_cache own = {0};
		const struct fact_launch_op *ops = NULL;
		int64_t nops = 0;
		int bad = ru_cached_launch_ops(ctx, &own, &ops, &nops) ||
			  ru_edit_no_waits(*f, a, d, copies, ops, nops);

		ru_cache_free(&own);
		if (bad)
			goto out;
	} else if (ru_edit_no_waits(*f, a, d, copies, NULL, 0)) {
		goto out;
	}
	rc = 0;
out:
	if (rc < 0) {
		cs_finding_free(*f);
		*f = NULL;
	}
	free(steps);
	return rc;
}

int ru_wait_report(cs_rule_ctx *ctx, const char *rule, const char *what, const char *fix,
		   const struct fact_waits *d, const int64_t *taken, int copies, int skip_ends,
		   cs_error *err)
{
	struct wait_sum *sum;
	int64_t *idle, *tmp;
	cs_report_finding *f = NULL;
	int rc = CS_ERR_NOMEM;

	if (d->n == 0)
		return 0;
	sum = ru_recur_arrays(ctx->steps, sizeof(*sum), &idle, &tmp);
	if (sum) {
		for (int64_t i = 0; i < d->n; i++)
			if (d->v[i].step >= 0)
				wait_sum_add(&sum[d->v[i].step], ctx->a, &d->v[i],
					     taken ? taken[i] : 0);
		rc = wait_finding(ctx, rule, what, fix, d, copies, skip_ends, sum, idle, tmp, &f);
	}
	free(sum);
	return ru_finish(ctx, f, rc, err);
}
