/*
 * rank_straggler.c - the rank-straggler rule: one rank of a data-parallel job is consistently the
 * slowest, and every other rank waits for it in its collectives each step. The rule compares the
 * ranks' own time per step (step time less exposed communication, which holds the waiting:
 * include/cuscope/ranks.h) across the ranks, aligned by step index, and names the cause the trace
 * shows. The finding is reported in the straggler's process. docs/rules/rank-straggler.md has the
 * criterion.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "finding_kit.h"
#include "estimates.h"
#include "rules.h"
#include "cuscope/ranks.h"
#include "cuscope/sort.h"

#define RULE_ID RULE_ID_RANK_STRAGGLER

/* A lag under this share of the step is not reported: it is within what ranks differ by. */
#define MIN_SHARE 0.01

static const char *cause_text(int cause)
{
	switch (cause) {
	case CS_RANK_CAUSE_COMPUTE:
		return "more kernel time";
	case CS_RANK_CAUSE_HOST_WAIT:
		return "a longer host wait";
	case CS_RANK_CAUSE_IDLE_BEFORE:
		return "a longer GPU idle before the step";
	default:
		return "cause not visible in the trace";
	}
}

static const char *cause_fix(int cause)
{
	switch (cause) {
	case CS_RANK_CAUSE_COMPUTE:
		return "This rank runs more GPU work per step than the others: balance the work "
		       "(equal batch and sequence sizes per rank, the same model shards), and "
		       "check "
		       "that its GPU is not throttled or shared.";
	case CS_RANK_CAUSE_HOST_WAIT:
		return "This rank waits on the host longer each step: remove the synchronizations "
		       "(.item(), .cpu(), prints) that only it does, such as logging on rank 0.";
	case CS_RANK_CAUSE_IDLE_BEFORE:
		return "This rank's GPU idles before each step: its input pipeline or host work is "
		       "slower; give its DataLoader more workers and pinned memory, or move its "
		       "extra "
		       "host work (logging, checkpoints) out of the step.";
	default:
		return "Every other rank waits for this one in its collectives: find what it does "
		       "differently (its data, its host work, its GPU) with cuscope report --pid.";
	}
}

int cs_rule_rank_straggler_check(cs_rule_ctx *ctx, cs_error *err)
{
	cs_report_processes own = {NULL, 0, 0, NULL};
	const cs_report_processes *procs = ctx->procs;
	const cs_rank_view *vp;
	cs_rank_straggler sg;
	cs_report_finding *f = NULL;
	const cs_rank_entry *e;
	int32_t *steps = NULL, n = 0;
	int64_t *work = NULL;
	char title[256], b1[32], who[32];
	double share;
	int rc = 0;

	if (!procs) {
		/* run on its own: find the steps of every process as the report does */
		const cs_analyzer *none[] = {NULL};
		cs_report tmp = {NULL, 0, 0};

		rc = cs_report_run_processes(ctx->a, NULL, none, &own, &tmp, err);
		cs_report_free(&tmp);
		if (rc < 0) {
			cs_report_processes_free(&own);
			return rc;
		}
		procs = &own;
	}
	/* the report builds the view of two processes or more (cs_report_run_processes); one
	 * process is no one's straggler */
	vp = procs->ranks;
	if (!vp || !cs_rank_view_straggler(vp, &sg))
		goto out;
	e = &vp->v[sg.entry];
	if (e->pid != ctx->steps->pid || ctx->step_median <= 0)
		goto out;
	share = (double)sg.behind_ns / (double)ctx->step_median;
	if (share < MIN_SHARE)
		goto out;
	rc = CS_ERR_NOMEM;
	steps = malloc((size_t)vp->nrows * sizeof(*steps));
	work = malloc((size_t)vp->nrows * 2 * sizeof(*work));
	if (!steps || !work)
		goto out;
	for (int32_t i = 0; i < vp->nrows; i++)
		if (vp->rows[i].steady && vp->rows[i].slowest == sg.entry &&
		    vp->rows[i].behind_ns > 0 && i < ctx->steps->n && !ctx->steps->v[i].warmup)
			steps[n++] = i;
	if (e->rank != CS_ID_NONE)
		snprintf(who, sizeof(who), "rank %d", e->rank);
	else
		snprintf(who, sizeof(who), "pid %u", e->pid);
	snprintf(title, sizeof(title),
		 "%s is the slowest in %d of %d steps, %s behind the others (%s)", who, sg.slowest,
		 sg.steady, ru_fmt_ns(b1, sizeof(b1), sg.behind_ns), cause_text(sg.cause));
	f = ru_step_finding(ctx, RULE_ID, ru_severity(share), title, cause_fix(sg.cause), steps, n,
			    sg.behind_ns);
	if (!f)
		goto out;
	{
		cJSON *ev = f->evidence, *ranks;
		const struct ru_field fields[] = {
			{"rank", e->rank, NULL},
			{"pid", e->pid, NULL},
			{"slowest_steps", sg.slowest, NULL},
			{"steady_steps", sg.steady, NULL},
			{"behind_ns", (double)sg.behind_ns, NULL},
			{"behind_ci95_lo_ns", (double)sg.behind_lo, NULL},
			{"behind_ci95_hi_ns", (double)sg.behind_hi, NULL},
			{"others_own_median_ns", (double)sg.own_median, NULL},
			{"cause", 0, cs_rank_cause_name(sg.cause)},
			{"cause_steps", sg.cause_steps, NULL},
		};
		int ok = !ru_add_fields(ev, fields, sizeof(fields) / sizeof(fields[0]));

		ranks = cJSON_AddArrayToObject(ev, "ranks");
		ok &= ranks != NULL;
		for (int32_t j = 0; ok && j < vp->n; j++) {
			cJSON *o = cJSON_CreateObject();
			int64_t *own = work, *comp = own + vp->nrows, m = 0;

			for (int32_t i = 0; i < vp->nrows; i++)
				if (vp->rows[i].steady) {
					own[m] = vp->v[j].m[i].own_ns;
					comp[m++] = vp->v[j].m[i].compute_ns;
				}
			ok &= o && cJSON_AddItemToArray(ranks, o);
			ok &= ok && cJSON_AddNumberToObject(o, "rank", vp->v[j].rank) != NULL;
			ok &= ok && cJSON_AddNumberToObject(o, "pid", vp->v[j].pid) != NULL;
			ok &= ok && cJSON_AddNumberToObject(o, "own_median_ns",
							    (double)cs_median_i64(own, m)) != NULL;
			ok &= ok && cJSON_AddNumberToObject(o, "compute_median_ns",
							    (double)cs_median_i64(comp, m)) != NULL;
		}
		if (ok)
			rc = 0;
	}
out:
	rc = ru_finish(ctx, f, rc, err);
	free(steps);
	free(work);
	cs_report_processes_free(&own);
	return rc;
}
