/* recurrence.c - recurring or rare: whether a cost of some steady steps is a finding
 * (recurrence.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/checked.h"
#include "cuscope/sort.h"
#include "recurrence.h"
#include "finding_kit.h"
#include "estimates.h"

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

void *ru_recur_arrays(const cs_steps *s, size_t size, int64_t **cost, int64_t **tmp)
{
	size_t n = (size_t)s->n + 1;
	/* the sums, then the two arrays of int64_t at an offset aligned for them */
	size_t off = (n * size + sizeof(int64_t) - 1) / sizeof(int64_t) * sizeof(int64_t);
	char *sum = calloc(1, off + 2 * n * sizeof(int64_t));

	*cost = sum ? (int64_t *)(sum + off) : NULL;
	*tmp = sum ? *cost + n : NULL;
	return sum;
}

int ru_recur_find(const cs_steps *s, int64_t step_median, const int64_t *cost, int skip_ends,
		  int32_t min_steps, double min_step_share, int32_t min_rare_steps,
		  double min_loss_share, int64_t *tmp, int32_t **steps, int32_t *nsteps,
		  struct ru_recur *r)
{
	if (ru_steps_nonzero(s, cost, steps, nsteps))
		return CS_ERR_NOMEM;
	return ru_recur_decide(s, step_median, cost, *steps, nsteps, skip_ends, min_steps,
			       min_step_share, min_rare_steps, min_loss_share, tmp, r);
}

cs_report_finding *ru_recur_finding(const char *rule, const struct ru_recur *r, const char *title,
				    const char *fix, const int32_t *steps, int32_t nsteps)
{
	cs_report_finding *f = ru_finding_new(rule, r->near ? CS_SEV_INFO : ru_severity(r->share),
					      title, fix, steps, nsteps, r->lost);

	if (f)
		f->step_share = r->share;
	return f;
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
