/*
 * comm_not_overlapped.c - the comm-not-overlapped rule: the NCCL kernels of a process run with no
 * compute of the process beside them, so the step waits for the communication in full. Of each
 * steady step's NCCL kernel time, the part that no compute kernel on another stream covers is
 * exposed; what of it is waiting for a slower rank (the gap between this rank's own time and the
 * slowest rank's, include/cuscope/ranks.h) is left to rank-straggler. The rest could hide behind
 * the step's compute: the rule charges the smaller of the two. docs/rules/comm-not-overlapped.md
 * has the criterion.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "finding_kit.h"
#include "estimates.h"
#include "rules.h"
#include "cuscope/ranks.h"
#include "cuscope/sort.h"

#define RULE_ID RULE_ID_COMM_NOT_OVERLAPPED

/* Communication counts as overlapped when compute covers at least half of it. */
#define MAX_OVERLAP_SHARE 0.5
/* A hideable exposure under this share of the step is not reported. */
#define MIN_SHARE 0.01
/* Kernel names listed in the evidence. */
#define MAX_NAMES 4

int cs_rule_comm_not_overlapped_check(cs_rule_ctx *ctx, cs_error *err)
{
	const cs_steps *s = ctx->steps;
	cs_rank_step *m = NULL;
	struct cs_rule_cache own = {0};
	const cs_rank_view *vp = NULL;
	int32_t me = -1;
	int64_t *lost = NULL, *exposed = NULL, *comm = NULL, *wait = NULL, ne = 0;
	int64_t comm_total = 0, overlap_total = 0, nk = 0;
	int32_t *steps = NULL, nsteps = 0;
	cs_report_finding *f = NULL;
	char title[256], b1[32], b2[32];
	double share, ov;
	int rc = CS_ERR_NOMEM;

	if (s->n == 0 || ctx->step_median <= 0)
		return 0;
	m = calloc((size_t)s->n, sizeof(*m));
	lost = calloc((size_t)s->n * 4, sizeof(*lost));
	steps = calloc((size_t)s->n, sizeof(*steps));
	if (!m || !lost || !steps)
		goto out;
	exposed = lost + s->n;
	comm = exposed + s->n;
	wait = comm + s->n;
	/* with other ranks: their measures (the report builds them once), and the waiting for the
	 * slowest rank is not this rule's */
	rc = ru_rank_measures(ctx, &own, m, &vp, &me, err);
	if (rc < 0)
		goto out;
	for (int32_t i = 0; i < s->n; i++)
		nk += s->v[i].warmup ? 0 : m[i].comm_kernels;
	if (nk == 0)
		goto out;
	for (int32_t i = 0; i < s->n; i++) {
		int64_t w = 0, x, hide, rest;

		if (s->v[i].warmup || m[i].comm_kernels == 0)
			continue;
		if (me >= 0 && i < vp->nrows) {
			for (int32_t j = 0; j < vp->n; j++)
				if (vp->v[j].m[i].own_ns - m[i].own_ns > w)
					w = vp->v[j].m[i].own_ns - m[i].own_ns;
		}
		x = m[i].comm_exposed_ns - w;
		if (x < 0)
			x = 0;
		/* compute of the step that no communication ran beside: what x could hide behind */
		rest = m[i].compute_ns - m[i].comm_overlap_ns;
		hide = x < rest ? x : rest;
		if (hide < 0)
			hide = 0;
		comm_total += m[i].comm_ns;
		overlap_total += m[i].comm_overlap_ns;
		lost[ne] = hide;
		exposed[ne] = x;
		comm[ne] = m[i].comm_ns;
		wait[ne] = w;
		ne++;
		if (hide > 0)
			steps[nsteps++] = i;
	}
	if (ne == 0 || comm_total == 0)
		goto out;
	ov = (double)overlap_total / (double)comm_total;
	if (ov >= MAX_OVERLAP_SHARE)
		goto out;
	{
		int64_t lm = cs_median_i64(lost, ne);

		share = (double)lm / (double)ctx->step_median;
		if (share < MIN_SHARE || lm <= 0)
			goto out;
		snprintf(
			title, sizeof(title),
			"NCCL kernels run with no compute beside them: %s of communication exposed "
			"per step, %.0f%% overlapped",
			ru_fmt_ns(b1, sizeof(b1), cs_median_i64(exposed, ne)), 100.0 * ov);
		rc = CS_ERR_NOMEM;
		f = ru_step_finding(
			ctx, RULE_ID, ru_severity(share), title,
			"Issue the collectives asynchronously (async_op=True, or DDP, "
			"which all-reduces gradient buckets during the backward pass) and "
			"wait only where the result is needed; with DDP, keep "
			"bucket_cap_mb small enough that the first buckets start early.",
			steps, nsteps, lm);
		if (!f)
			goto out;
	}
	{
		cJSON *ev = f->evidence, *names;
		const struct ru_field fields[] = {
			{"comm_median_ns", (double)cs_median_i64(comm, ne), NULL},
			{"overlapped_share", ov, NULL},
			{"exposed_median_ns", (double)cs_median_i64(exposed, ne), NULL},
			{"rank_wait_median_ns", (double)cs_median_i64(wait, ne), NULL},
			{"nccl_kernels", (double)nk, NULL},
			{"hideable_median", 0, ru_fmt_ns(b2, sizeof(b2), f->lost_ns_per_step)},
		};
		int ok = !ru_add_fields(ev, fields, sizeof(fields) / sizeof(fields[0])), nn = 0;

		names = cJSON_AddArrayToObject(ev, "kernels");
		ok &= names != NULL;
		for (int64_t i = 0; ok && i < ctx->a->nkernels && nn < MAX_NAMES; i++) {
			const cs_a_kernel *k = &ctx->a->kernels[i];
			const char *nm = cs_analysis_string(ctx->a, k->name_id);
			const cJSON *it;
			int dup = 0;

			if (k->pid != s->pid || !cs_is_nccl_kernel(nm))
				continue;
			cJSON_ArrayForEach(it, names)
			{
				if (!strcmp(it->valuestring, nm))
					dup = 1;
			}
			if (!dup) {
				ok &= cJSON_AddItemToArray(names, cJSON_CreateString(nm));
				nn++;
			}
		}
		if (ok)
			rc = 0;
	}
out:
	rc = ru_finish(ctx, f, rc, err);
	ru_cache_free(&own);
	free(m);
	free(lost);
	free(steps);
	return rc;
}
