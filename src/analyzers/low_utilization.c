/*
 * low_utilization.c - the low-utilization rule: in the steady steps the GPU is busy less than half
 * of the step time. It is a summary, not one more cause: it runs after the other rules
 * (cs_analyzer_after_others()), names the findings of this process that explain the idle, largest
 * first, and charges as its own cost only the idle that none of them explains, described by what
 * the timeline shows (launch-starvation's split of the host-caused idle: launch overhead, host
 * work without CUDA calls, host waits, the input pipeline, pageable copies, after device-to-host
 * reads). docs/rules/low-utilization.md has the decision and the measured values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/grow.h"

#include "cache.h"
#include "finding_kit.h"
#include "estimates.h"
#include "rules.h"
#include "cuscope/checked.h"
#include "cuscope/sort.h"

#define RULE_ID RULE_ID_LOW_UTILIZATION

/*
 * The GPU is busy less than this share of the median steady step: it idles more than it works,
 * so the step is set by the host, not by the GPU, and filling the idle would make it more than
 * twice as fast.
 */
#define MIN_BUSY_SHARE 0.5
/* ... in at least this share of the steady steps, and this many. */
#define MIN_STEP_SHARE 0.5
#define MIN_STEPS      3
/* Causes named in the title; the evidence lists them all. */
#define MAX_TITLE_CAUSES 3

struct cause {
	const cs_report_finding *f;
	int64_t per_step; /* its cost spread over the steady steps */
};

static int cmp_cause(const void *pa, const void *pb)
{
	const struct cause *x = pa, *y = pb;

	if (x->per_step != y->per_step)
		return x->per_step > y->per_step ? -1 : 1;
	return strcmp(x->f->rule, y->f->rule);
}

/* What the timeline shows, by launch-starvation's causes (enum cs_idle_cause). */
static const char *timeline_words(int c)
{
	switch (c) {
	case CS_IDLE_LAUNCH:
		return "host-bound launches (short kernels launched one by one)";
	case CS_IDLE_HOST:
		return "gaps without CUDA calls (host work between launches)";
	case CS_IDLE_WAIT:
		return "host waits";
	case CS_IDLE_INPUT:
		return "host work before host-to-device copies (a batch, or tensors made on the "
		       "host)";
	case CS_IDLE_PAGEABLE:
		return "copies of pageable memory holding the host";
	case CS_IDLE_D2H:
		return "the idle after device-to-host reads";
	case CS_IDLE_ALLOC:
		return "device allocator calls holding the host";
	default:
		return "?";
	}
}

/* The other rules' findings of this process that cost GPU time, largest first, into *out. */
static int named_causes(const cs_rule_ctx *ctx, struct cause **out, int32_t *n)
{
	const cs_report *r = ctx->found;
	int32_t steady = cs_steps_steady(ctx->steps);

	*out = NULL;
	*n = 0;
	if (!r || r->n == 0 || steady <= 0)
		return 0;
	*out = calloc((size_t)r->n, sizeof(**out));
	if (!*out)
		return CS_ERR_NOMEM;
	for (int32_t i = 0; i < r->n; i++) {
		const cs_report_finding *f = r->v[i];
		int64_t per;

		if (f->pid != ctx->steps->pid || !strcmp(f->rule, RULE_ID) ||
		    f->lost_ns_per_step <= 0)
			continue;
		per = cs_finding_total_lost(f) / steady;
		if (per <= 0)
			continue;
		(*out)[*n].f = f;
		(*out)[(*n)++].per_step = per;
	}
	cs_sort(*out, (size_t)*n, sizeof(**out), cmp_cause);
	return 0;
}

struct decision {
	int64_t med, lo,
		hi; /* busy share of the steady steps, millionths: median and 95% interval */
	int near;
	int64_t idle, step;		   /* median idle and step time of the affected steps */
	int64_t by_cause[CS_IDLE_NCAUSES]; /* median timeline idle per cause, affected steps */
	int64_t queued;			   /* median idle that no cause holds (work was queued) */
};

static int emit_finding(cs_rule_ctx *ctx, const struct decision *d, const int32_t *steps, int32_t n,
			cs_error *err)
{
	const cs_steps *s = ctx->steps;
	struct cause *causes = NULL;
	int32_t nc = 0;
	int64_t explained = 0, rest;
	int top = -1;
	cs_report_finding *f = NULL;
	cJSON *e, *list, *by;
	char title[700], fix[700], named[360] = "", tail[240] = "", near[96] = "", b1[32], b2[32];
	double step_median = (double)(ctx->step_median > 0 ? ctx->step_median : d->step);
	size_t len;

	if (named_causes(ctx, &causes, &nc))
		goto nomem;
	for (int32_t i = 0; i < nc; i++)
		cs_sat_accum(&explained, causes[i].per_step);
	if (explained > d->idle)
		explained = d->idle; /* the rules' costs may overlap: never more than the idle */
	rest = d->idle - explained;
	for (int c = 0; c < CS_IDLE_NCAUSES; c++)
		if (d->by_cause[c] > 0 && (top < 0 || d->by_cause[c] > d->by_cause[top]))
			top = c;

	for (int32_t i = 0; i < nc && i < MAX_TITLE_CAUSES; i++) {
		len = strlen(named);
		snprintf(named + len, sizeof(named) - len, "%s%s %s", i ? ", " : "",
			 causes[i].f->rule, ru_fmt_ns(b1, sizeof(b1), causes[i].per_step));
	}
	if (nc > MAX_TITLE_CAUSES) {
		len = strlen(named);
		snprintf(named + len, sizeof(named) - len, " and %d more",
			 (int)(nc - MAX_TITLE_CAUSES));
	}
	if (top >= 0)
		snprintf(tail, sizeof(tail), "; the timeline shows mostly %s (%s per step)",
			 timeline_words(top), ru_fmt_ns(b2, sizeof(b2), d->by_cause[top]));
	else
		snprintf(tail, sizeof(tail),
			 "; the timeline shows GPU idle with work already queued (dependencies "
			 "between streams, device-side waits)");
	if (d->near)
		snprintf(near, sizeof(near),
			 "; near the %.0f%% threshold (95%% interval %.0f-%.0f%%)",
			 MIN_BUSY_SHARE * 100, (double)d->lo / 1e4, (double)d->hi / 1e4);
	len = (size_t)snprintf(title, sizeof(title),
			       "GPU busy %.0f%% of the step: %s idle per step",
			       (double)d->med / 1e4, ru_fmt_ns(b1, sizeof(b1), d->idle));
	if (nc > 0 && len < sizeof(title))
		len += (size_t)snprintf(title + len, sizeof(title) - len,
					", largest causes found: %s", named);
	if (len < sizeof(title)) {
		if (nc == 0)
			snprintf(title + len, sizeof(title) - len,
				 "; no other rule explains it%s%s", tail, near);
		else if (rest > 0)
			snprintf(title + len, sizeof(title) - len, "; %s not explained by them%s%s",
				 ru_fmt_ns(b2, sizeof(b2), rest), tail, near);
		else
			snprintf(title + len, sizeof(title) - len, "%s", near);
	}
	if (nc > 0)
		snprintf(fix, sizeof(fix),
			 "Fix the findings named here, largest first (%s's: see its fix); the GPU "
			 "time they free is what this summary counts.%s",
			 causes[0].f->rule,
			 rest > 0 ? " For the rest, see what the timeline shows in the evidence "
				    "(timeline_idle_ns_by_cause)."
				  : "");
	else
		snprintf(fix, sizeof(fix),
			 "Give the GPU more work per host action: larger batches, fewer and larger "
			 "kernels (torch.compile, CUDA graphs), host work and waits out of the "
			 "step, "
			 "the next batch prepared ahead; the evidence splits the idle by what the "
			 "timeline shows.");
	f = ru_step_finding(ctx, RULE_ID,
			    d->near ? CS_SEV_INFO : ru_severity((double)rest / step_median), title,
			    fix, steps, n, rest);
	if (!f)
		goto nomem;
	f->step_share = (double)rest / step_median;
	e = f->evidence;
	cJSON_AddNumberToObject(e, "busy_share", (double)d->med / 1e6);
	cJSON_AddNumberToObject(e, "busy_share_low", (double)d->lo / 1e6);
	cJSON_AddNumberToObject(e, "busy_share_high", (double)d->hi / 1e6);
	cJSON_AddNumberToObject(e, "min_busy_share", MIN_BUSY_SHARE);
	cJSON_AddNumberToObject(e, "threshold_margin", MIN_BUSY_SHARE - (double)d->med / 1e6);
	cJSON_AddBoolToObject(e, "near_threshold", d->near);
	cJSON_AddNumberToObject(e, "idle_ns_per_step", (double)d->idle);
	cJSON_AddNumberToObject(e, "step_ns", (double)d->step);
	cJSON_AddNumberToObject(e, "explained_ns_per_step", (double)explained);
	cJSON_AddNumberToObject(e, "unexplained_ns_per_step", (double)rest);
	list = cJSON_AddArrayToObject(e, "causes");
	for (int32_t i = 0; list && i < nc; i++) {
		cJSON *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(list, o))
			goto nomem;
		cJSON_AddStringToObject(o, "rule", causes[i].f->rule);
		cJSON_AddStringToObject(o, "severity", cs_severity_name(causes[i].f->severity));
		cJSON_AddNumberToObject(o, "lost_ns_per_steady_step", (double)causes[i].per_step);
		cJSON_AddNumberToObject(o, "steps", causes[i].f->nsteps);
	}
	by = cJSON_AddObjectToObject(e, "timeline_idle_ns_by_cause");
	if (!list || !by)
		goto nomem;
	for (int c = 0; c < CS_IDLE_NCAUSES; c++)
		cJSON_AddNumberToObject(by, cs_idle_cause_name(c), (double)d->by_cause[c]);
	cJSON_AddNumberToObject(e, "timeline_idle_ns_work_queued", (double)d->queued);
	cJSON_AddNumberToObject(e, "steady_steps", cs_steps_steady(s));
	cJSON_AddNumberToObject(e, "affected_steps", n);
	free(causes);
	return ru_emit(ctx, f, err);
nomem:
	free(causes);
	cs_finding_free(f);
	return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
}

int cs_rule_low_utilization_check(cs_rule_ctx *ctx, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	int64_t *busy_pm = NULL, *tmp = NULL, *idle = NULL;
	const int64_t *by = NULL;
	struct cs_rule_cache own = {0};
	int32_t *steps = NULL, n = 0, m = 0, steady = cs_steps_steady(s);
	struct decision d;
	int rc = 0;

	if (steady <= 0 || (a->nkernels == 0 && a->ncopies == 0))
		return 0;
	memset(&d, 0, sizeof(d));
	busy_pm = calloc((size_t)s->n + 1, sizeof(*busy_pm));
	tmp = calloc((size_t)s->n + 1, sizeof(*tmp));
	idle = calloc((size_t)s->n + 1, sizeof(*idle));
	steps = calloc((size_t)s->n + 1, sizeof(*steps));
	if (!busy_pm || !tmp || !idle || !steps) {
		rc = CS_ERR_NOMEM;
		goto out;
	}
	for (int32_t i = 0; i < s->n; i++) {
		int64_t t = cs_step_time(s, i);

		if (s->v[i].warmup || t <= 0)
			continue;
		busy_pm[i] = cs_sat_from_double((double)s->v[i].gpu_busy * 1e6 / (double)t);
		idle[i] = t > s->v[i].gpu_busy ? t - s->v[i].gpu_busy : 0;
		tmp[m++] = busy_pm[i];
		if (busy_pm[i] < MIN_BUSY_SHARE * 1e6)
			steps[n++] = i;
	}
	d.med = cs_median_i64(tmp, m);
	ru_median_interval(tmp, m, &d.lo, &d.hi);
	/* the 95% interval of the median wholly over the threshold, or too few steps: nothing */
	if (d.lo >= MIN_BUSY_SHARE * 1e6 || n < MIN_STEPS)
		goto out;
	d.near = d.hi >= MIN_BUSY_SHARE * 1e6;
	if (!d.near && (d.med >= MIN_BUSY_SHARE * 1e6 || n < MIN_STEP_SHARE * steady))
		goto out;
	for (int32_t i = 0; i < n; i++)
		tmp[i] = idle[steps[i]];
	d.idle = cs_median_i64(tmp, n);
	for (int32_t i = 0; i < n; i++)
		tmp[i] = cs_step_time(s, steps[i]);
	d.step = cs_median_i64(tmp, n);
	/* what the timeline shows: the host-caused idle by cause, and the rest (work was queued) */
	rc = ru_cached_idle_by_cause(ctx, &own, &by);
	if (rc)
		goto out;
	for (int c = 0; c < CS_IDLE_NCAUSES; c++) {
		for (int32_t i = 0; i < n; i++)
			tmp[i] = by[(size_t)steps[i] * CS_IDLE_NCAUSES + (size_t)c];
		d.by_cause[c] = cs_median_i64(tmp, n);
	}
	for (int32_t i = 0; i < n; i++) {
		int64_t q = idle[steps[i]];

		for (int c = 0; c < CS_IDLE_NCAUSES; c++)
			q -= by[(size_t)steps[i] * CS_IDLE_NCAUSES + (size_t)c];
		tmp[i] = q > 0 ? q : 0;
	}
	d.queued = cs_median_i64(tmp, n);
	rc = emit_finding(ctx, &d, steps, n, err);
out:
	free(busy_pm);
	free(tmp);
	free(idle);
	ru_cache_free(&own);
	free(steps);
	return ru_finish(ctx, NULL, rc, err);
}
