/*
 * dataloader_stall.c - the dataloader-stall rule: at the boundary of the steady steps the GPU
 * idles while the training thread prepares the next batch: it makes no CUDA call for far longer
 * than its launch pace, then copies the batch to the device and launches the step.
 *
 * One pass over the process's GPU work in start order finds each host-to-device copy launched at a
 * step boundary (before the step's first kernel launch or after its last) after the GPU had run
 * out of work; the GPU idle while the thread that launched the copy made no CUDA call before it
 * is the stall. launch-starvation splits the same gaps as its "input pipeline" cause and leaves
 * their cost to this rule. docs/rules/dataloader-stall.md has the decision and the measured values.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/grow.h"

#include "h2d_rules.h"
#include "finding_kit.h"
#include "h2d_stalls.h"
#include "recurrence.h"
#include "rules.h"
#include "cuscope/checked.h"

#define RULE_ID RULE_ID_DATALOADER_STALL

/* A recurring pattern: a stall in at least this share of the steady steps ... */
#define MIN_STEP_SHARE 0.5
/* ... and in at least this many of them. */
#define MIN_STEPS 3
/* The call sites listed at most. */
#define MAX_SITES 5

/* A stall this rule owns (not in_step: those are host-created-tensor's). */
static int owns(const cs_analysis *a, const struct fact_h2d_stall *y)
{
	(void)a;
	return !y->in_step;
}

static int emit_finding(cs_rule_ctx *ctx, const struct fact_h2d_stalls *h,
			const struct ru_h2d_sum *sum, const struct ru_h2d_median *m,
			const int32_t *steps, int32_t nsteps, const struct ru_recur *r,
			cs_error *err)
{
	const cs_analysis *a = ctx->a;
	cs_report_finding *f = NULL;
	cJSON *e;
	char title[480], b1[32], b2[32], b3[32], near1[96], near2[96], rare[200];

	ru_recur_near_text(r, near1, sizeof(near1), near2, sizeof(near2));
	if (r->recurring)
		snprintf(
			title, sizeof(title),
			"GPU idle at the start of the step while the host prepares the next batch: "
			"%s per step (%.1f%%), the training thread making no CUDA call for %s "
			"before the batch's copy to the device%s%s",
			ru_fmt_ns(b1, sizeof(b1), r->lost), r->share * 100,
			ru_fmt_ns(b2, sizeof(b2), m->stretch_ns), near1, near2);
	else {
		ru_recur_rare_text(r, nsteps, m->idle_ns, rare, sizeof(rare));
		snprintf(title, sizeof(title),
			 "GPU idle at a step start while the host prepares the next batch (no CUDA "
			 "call for %s) %s%s",
			 ru_fmt_ns(b3, sizeof(b3), m->stretch_ns), rare, near1);
	}
	f = ru_recur_finding(
		RULE_ID, r, title,
		r->recurring
			? "Have the next batch ready before the step asks for it: load it in "
			  "DataLoader worker processes (num_workers of a few per GPU, "
			  "prefetch_factor "
			  "for uneven batches), pin_memory=True with .to(device, "
			  "non_blocking=True), "
			  "persistent_workers=True; move per-item CPU work (decoding, "
			  "augmentation) "
			  "out of the training process or onto the GPU."
			: "A stall in a few steps only: with a DataLoader, persistent_workers=True "
			  "keeps the workers (and their prefetched batches) across epochs; "
			  "otherwise "
			  "prepare the batches of those steps ahead (num_workers, "
			  "prefetch_factor).",
		steps, nsteps);
	if (!f)
		return ru_finish(ctx, f, CS_ERR_NOMEM, err);
	ru_finding_span(f, a, ctx->steps, steps, nsteps);
	if (m->best >= 0)
		f->stack_id = a->copies[sum[m->best].copy].stack_id;
	e = f->evidence;
	cJSON_AddNumberToObject(e, "stall_ns_per_step", (double)m->idle_ns);
	cJSON_AddNumberToObject(e, "no_call_stretch_ns", (double)m->stretch_ns);
	cJSON_AddNumberToObject(e, "launch_pace_far_ns", (double)h->far);
	cJSON_AddNumberToObject(e, "h2d_copies_per_step", (double)m->copies);
	cJSON_AddNumberToObject(e, "h2d_bytes_per_step", (double)m->bytes);
	cJSON_AddNumberToObject(e, "pageable_copy_share",
				m->all > 0 ? (double)m->pageable / m->all : 0);
	return ru_h2d_finish(ctx, f, h, owns, steps, nsteps, r, MAX_SITES, 0, err);
}

int cs_rule_dataloader_stall_check(cs_rule_ctx *ctx, cs_error *err)
{
	static const struct ru_h2d_rule rule = {owns, emit_finding, MIN_STEPS, MIN_STEP_SHARE};

	return ru_run_h2d_rule(ctx, &rule, err);
}
