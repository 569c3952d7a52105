/*
 * small_allreduce_buckets.c - the small-allreduce-buckets rule: a process runs many small NCCL
 * all-reduces per step (a DDP bucket_cap_mb far too small, gradients all-reduced one parameter at
 * a time, gradients that are not in one contiguous buffer), and each pays NCCL's fixed latency.
 *
 * Kernel records carry no byte counts, so kernel time stands for size. The fixed latency L is the
 * time of the smallest all-reduce of the steady steps; an all-reduce is latency-bound when it
 * took at most twice L. Within a step the latency-bound all-reduces move data that would take
 * their time less L each at the link's rate; fewer, larger all-reduces (buckets whose data takes
 * at least BUCKET_FACTOR x L) would carry it, so the step pays (small - buckets) x L of latency
 * it need not, of which the share of its communication that is exposed (not beside compute, not
 * waiting for a slower rank) is lost. docs/rules/small-allreduce-buckets.md has the criterion.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_names.h"
#include "cache.h"
#include "finding_kit.h"
#include "estimates.h"
#include "rules.h"
#include "cuscope/checked.h"
#include "cuscope/ranks.h"
#include "cuscope/sort.h"

#define RULE_ID RULE_ID_SMALL_ALLREDUCE_BUCKETS

/* An all-reduce is latency-bound when it took at most this many times the smallest one. */
#define SMALL_FACTOR 2
/* A bucket carries enough when its data takes at least this many times the latency. */
#define BUCKET_FACTOR 4
/* The smallest all-reduce must be this short to be a latency: an all-reduce of a few KB takes
 * well under it on NVLink or InfiniBand, a 25 MB DDP bucket takes longer on any link. */
#define MAX_LATENCY_NS (50 * RU_US)
/* Latency-bound all-reduces per steady step (median) before the rule speaks. */
#define MIN_SMALL 8
/* A loss under this share of the median step is not reported. */
#define MIN_SHARE 0.01

/* 1 when an NCCL kernel name is an all-reduce's. */
static int is_allreduce(const char *name)
{
	return cs_is_nccl_kernel(name) && strstr(name, "AllReduce") != NULL;
}

int cs_rule_small_allreduce_buckets_check(cs_rule_ctx *ctx, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	cs_rank_step *m = NULL;
	struct cs_rule_cache own = {0};
	const cs_rank_view *vp = NULL;
	int32_t me = -1, steady = 0, nsteps = 0, *steps = NULL;
	int64_t *n_all = NULL, *n_small = NULL, *bw = NULL, *t_all = NULL, *lost = NULL;
	int64_t *excess = NULL, *nb = NULL, *durs = NULL, ndurs = 0, lat = -1;
	int8_t *is_ar = NULL;
	struct fact_name_memo *cache = NULL;
	cs_report_finding *f = NULL;
	char title[320], b1[32], b2[32], b3[32];
	int rc = CS_ERR_NOMEM;

	if (s->n == 0 || ctx->step_median <= 0)
		return 0;
	is_ar = calloc((size_t)a->nkernels + 1, 1);
	cache = fact_name_memo_new(is_allreduce);
	if (!is_ar || !cache)
		goto out;
	rc = 0;
	/* the all-reduce kernels of the steady steps: their durations and the smallest */
	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];
		int st;

		if (k->pid != s->pid || k->start == CS_TS_UNKNOWN || k->end <= k->start)
			continue;
		if (!fact_name_memo_get(cache, a, k->name_id))
			continue;
		st = cs_steps_find_launch(s, k->launch_start, k->start);
		if (st < 0 || s->v[st].warmup)
			continue;
		is_ar[i] = 1;
		ndurs++;
		if (lat < 0 || cs_sat_sub(k->end, k->start) < lat)
			lat = cs_sat_sub(k->end, k->start);
	}
	if (ndurs == 0 || lat <= 0 || lat > MAX_LATENCY_NS)
		goto out;
	rc = CS_ERR_NOMEM;
	n_all = calloc((size_t)s->n * 7, sizeof(*n_all));
	durs = calloc((size_t)ndurs, sizeof(*durs));
	m = calloc((size_t)s->n, sizeof(*m));
	steps = calloc((size_t)s->n, sizeof(*steps));
	if (!n_all || !durs || !m || !steps)
		goto out;
	n_small = n_all + s->n;
	bw = n_small + s->n;
	t_all = bw + s->n;
	lost = t_all + s->n;
	excess = lost + s->n;
	nb = excess + s->n;
	ndurs = 0;
	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];
		int st;
		int64_t d;

		if (!is_ar[i])
			continue;
		st = cs_steps_find_launch(s, k->launch_start, k->start);
		d = cs_sat_sub(k->end, k->start);
		durs[ndurs++] = d;
		n_all[st]++;
		t_all[st] = cs_sat_add(t_all[st], d);
		if (d <= SMALL_FACTOR * lat) {
			n_small[st]++;
			bw[st] += d - lat;
		}
	}
	/* the exposed share of each step's communication, less the waiting for a slower rank
	 * (the measures of comm-not-overlapped, include/cuscope/ranks.h) */
	rc = ru_rank_measures(ctx, &own, m, &vp, &me, err);
	if (rc < 0)
		goto out;
	for (int32_t i = 0; i < s->n; i++) {
		int64_t w = 0, x, b;
		double frac;

		if (s->v[i].warmup)
			continue;
		if (me >= 0 && i < vp->nrows) {
			for (int32_t j = 0; j < vp->n; j++)
				if (vp->v[j].m[i].own_ns - m[i].own_ns > w)
					w = vp->v[j].m[i].own_ns - m[i].own_ns;
		}
		b = (bw[i] + BUCKET_FACTOR * lat - 1) / (BUCKET_FACTOR * lat);
		nb[steady] = b < 1 ? 1 : b;
		excess[steady] = n_small[i] > nb[steady] ? (n_small[i] - nb[steady]) * lat : 0;
		x = m[i].comm_exposed_ns - w;
		frac = m[i].comm_ns > 0 && x > 0 ? (double)x / (double)m[i].comm_ns : 0.0;
		if (frac > 1.0)
			frac = 1.0;
		lost[steady] = (int64_t)((double)excess[steady] * frac);
		if (lost[steady] > 0)
			steps[nsteps++] = i;
		/* compact the per-step counts to the steady steps, for their medians */
		n_all[steady] = n_all[i];
		n_small[steady] = n_small[i];
		t_all[steady] = t_all[i];
		steady++;
	}
	if (steady == 0)
		goto out;
	{
		int64_t small_med = cs_median_i64(n_small, steady);
		int64_t all_med = cs_median_i64(n_all, steady);
		int64_t lm = cs_median_i64(lost, steady);
		int64_t xm = cs_median_i64(excess, steady);
		int64_t nbm = cs_median_i64(nb, steady);
		int64_t tm = cs_median_i64(t_all, steady);
		double share = (double)lm / (double)ctx->step_median;

		if (small_med < MIN_SMALL || lm <= 0 || share < MIN_SHARE)
			goto out;
		snprintf(title, sizeof(title),
			 "%lld NCCL all-reduces per step, %lld of them latency-bound (at most %dx "
			 "the smallest, %s): %s of fixed latency per step beyond %lld larger "
			 "buckets, %s of it exposed",
			 (long long)all_med, (long long)small_med, SMALL_FACTOR,
			 ru_fmt_ns(b1, sizeof(b1), lat), ru_fmt_ns(b2, sizeof(b2), xm),
			 (long long)nbm, ru_fmt_ns(b3, sizeof(b3), lm));
		rc = CS_ERR_NOMEM;
		f = ru_step_finding(
			ctx, RULE_ID, ru_severity(share), title,
			"All-reduce fewer, larger buffers: with DDP raise bucket_cap_mb "
			"(default 25) and set gradient_as_bucket_view=True; keep gradients in "
			"one contiguous flat buffer (views of it per parameter) and all-reduce "
			"the buffer, not each parameter's gradient.",
			steps, nsteps, lm);
		if (!f)
			goto out;
		{
			const struct ru_field ev[] = {
				{"allreduces_per_step", (double)all_med, NULL},
				{"small_per_step", (double)small_med, NULL},
				{"latency_ns", (double)lat, NULL},
				{"allreduce_median_ns", (double)cs_median_i64(durs, ndurs), NULL},
				{"allreduce_ns_per_step", (double)tm, NULL},
				{"buckets_needed", (double)nbm, NULL},
				{"excess_latency_ns", (double)xm, NULL},
				{"size_measure", 0,
				 "kernel time (NCCL kernel records carry no byte counts)"},
			};

			if (!ru_add_fields(f->evidence, ev, sizeof(ev) / sizeof(ev[0])))
				rc = 0;
		}
	}
out:
	rc = ru_finish(ctx, f, rc, err);
	ru_cache_free(&own);
	free(is_ar);
	free(cache);
	free(n_all);
	free(durs);
	free(m);
	free(steps);
	return rc;
}
