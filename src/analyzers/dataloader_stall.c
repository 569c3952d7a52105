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
#include "source_made.h"
#include "finding_kit.h"
#include "h2d_stalls.h"
#include "recurrence.h"
#include "rules.h"
#include "cuscope/checked.h"

#define RULE_ID RULE_ID_DATALOADER_STALL

/* A stall this rule owns (not in_step: those are host-created-tensor's). */
static int owns(const cs_analysis *a, const struct fact_h2d_stall *y)
{
	(void)a;
	return !y->in_step;
}

/* The fix when the stalls recur, and when they do not. */
static const char fix[] =
	"Have the next batch ready before the step asks for it: load it in DataLoader "
	"worker processes (num_workers of a few per GPU, prefetch_factor for uneven "
	"batches), pin_memory=True with .to(device, non_blocking=True), "
	"persistent_workers=True; move per-item CPU work (decoding, augmentation) out of "
	"the training process or onto the GPU.";
static const char rare_fix[] =
	"A stall in a few steps only: with a DataLoader, persistent_workers=True keeps the "
	"workers (and their prefetched batches) across epochs; otherwise prepare the "
	"batches of those steps ahead (num_workers, prefetch_factor).";

static void title(char *buf, size_t size, const struct ru_h2d_median *m, const struct ru_recur *r,
		  const char *near1, const char *near2, const char *rare)
{
	char b1[32], b2[32];

	if (r->recurring)
		snprintf(
			buf, size,
			"GPU idle at the start of the step while the host prepares the next batch: "
			"%s per step (%.1f%%), the training thread making no CUDA call for %s "
			"before the batch's copy to the device%s%s",
			ru_fmt_ns(b1, sizeof(b1), r->lost), r->share * 100,
			ru_fmt_ns(b2, sizeof(b2), m->stretch_ns), near1, near2);
	else
		snprintf(buf, size,
			 "GPU idle at a step start while the host prepares the next batch (no CUDA "
			 "call for %s) %s%s",
			 ru_fmt_ns(b2, sizeof(b2), m->stretch_ns), rare, near1);
}

static int evidence(const cs_analysis *a, cs_report_finding *f, const struct fact_h2d_stalls *h,
		    const struct ru_h2d_sum *sum, const struct ru_h2d_median *m)
{
	cJSON *e = f->evidence;

	if (m->best >= 0)
		f->stack_id = a->copies[sum[m->best].copy].stack_id;
	cJSON_AddNumberToObject(e, "stall_ns_per_step", (double)m->idle_ns);
	cJSON_AddNumberToObject(e, "no_call_stretch_ns", (double)m->stretch_ns);
	cJSON_AddNumberToObject(e, "launch_pace_far_ns", (double)h->far);
	cJSON_AddNumberToObject(e, "h2d_copies_per_step", (double)m->copies);
	cJSON_AddNumberToObject(e, "h2d_bytes_per_step", (double)m->bytes);
	cJSON_AddNumberToObject(e, "pageable_copy_share",
				m->all > 0 ? (double)m->pageable / m->all : 0);
	return m->best >= 0 ? ru_made_evidence(a, e, a->copies[sum[m->best].copy].stack_id, NULL)
			    : 0;
}

int cs_rule_dataloader_stall_check(cs_rule_ctx *ctx, cs_error *err)
{
	static const struct ru_h2d_rule rule = {RULE_ID, owns, title, fix, rare_fix, evidence, 0};

	return ru_run_h2d_rule(ctx, &rule, err);
}
