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
#include "cuscope/checked.h"

#define RULE_ID "dataloader-stall"

/* A recurring pattern: a stall in at least this share of the steady steps ... */
#define MIN_STEP_SHARE 0.5
/* ... and in at least this many of them. */
#define MIN_STEPS 3
/* The call sites listed at most. */
#define MAX_SITES 5

struct step_sum {
	int64_t stall_ns;   /* GPU idle while the training thread made no CUDA call */
	int64_t stretch_ns; /* the longest of its stretches without CUDA calls */
	int64_t copies;	    /* host-to-device copies at the boundary that ended a stall */
	int64_t bytes;	    /* their bytes */
	int64_t pageable;   /* of them from pageable memory */
	int64_t copy;	    /* index in a->copies of the copy after the longest stall, or -1 */
};

/* A stall this rule owns (not in_step: those are host-created-tensor's). */
static int owns(const cs_analysis *a, const struct fact_h2d_stall *y)
{
	(void)a;
	return !y->in_step;
}

/* The stalls this rule owns into sum. */
static void sum_stalls(const cs_analysis *a, const cs_steps *s, const struct fact_h2d_stalls *h,
		       void *sums)
{
	struct step_sum *sum = sums;

	for (int32_t i = 0; i < s->n; i++)
		sum[i].copy = -1;
	for (int64_t i = 0; i < h->n; i++) {
		const struct fact_h2d_stall *y = &h->v[i];
		const cs_a_copy *c = &a->copies[y->copy];
		struct step_sum *x = &sum[y->step];

		if (!owns(a, y))
			continue;
		cs_sat_accum(&x->stall_ns, y->stall_ns);
		x->copies++;
		cs_sat_accum(&x->bytes, c->bytes);
		if (c->src_kind == CS_MEM_PAGEABLE)
			x->pageable++;
		if (y->stretch_ns > x->stretch_ns) {
			x->stretch_ns = y->stretch_ns;
			x->copy = y->copy;
		}
	}
}

static int64_t median_field(const struct step_sum *sum, const int32_t *steps, int32_t n,
			    size_t offset, int64_t *tmp)
{
	return ru_median_field(sum, sizeof(*sum), steps, n, offset, tmp);
}

static int emit_finding(cs_rule_ctx *ctx, const struct fact_h2d_stalls *h, const void *sums,
			int32_t *steps, int32_t nsteps, const struct ru_recur *r, int64_t *tmp,
			cs_error *err)
{
	int64_t far = h->far;
	const struct step_sum *sum = sums;
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	cs_report_finding *f = NULL;
	cJSON *e;
	int64_t stretch, stall, copies, bytes, pageable = 0, all = 0, best = -1;
	char title[480], b1[32], b2[32], b3[32], near1[96], near2[96], rare[200];

	stretch = median_field(sum, steps, nsteps, offsetof(struct step_sum, stretch_ns), tmp);
	stall = median_field(sum, steps, nsteps, offsetof(struct step_sum, stall_ns), tmp);
	copies = median_field(sum, steps, nsteps, offsetof(struct step_sum, copies), tmp);
	bytes = median_field(sum, steps, nsteps, offsetof(struct step_sum, bytes), tmp);
	for (int32_t i = 0; i < nsteps; i++) {
		const struct step_sum *x = &sum[steps[i]];

		pageable += x->pageable;
		all += x->copies;
		if (x->copy >= 0 && (best < 0 || x->stretch_ns > sum[best].stretch_ns))
			best = steps[i];
	}
	ru_recur_near_text(r, near1, sizeof(near1), near2, sizeof(near2));
	if (r->recurring)
		snprintf(
			title, sizeof(title),
			"GPU idle at the start of the step while the host prepares the next batch: "
			"%s per step (%.1f%%), the training thread making no CUDA call for %s "
			"before the batch's copy to the device%s%s",
			ru_fmt_ns(b1, sizeof(b1), r->lost), r->share * 100,
			ru_fmt_ns(b2, sizeof(b2), stretch), near1, near2);
	else {
		ru_recur_rare_text(r, nsteps, stall, rare, sizeof(rare));
		snprintf(title, sizeof(title),
			 "GPU idle at a step start while the host prepares the next batch (no CUDA "
			 "call for %s) %s%s",
			 ru_fmt_ns(b3, sizeof(b3), stretch), rare, near1);
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
		goto nomem;
	ru_finding_span(f, ctx->a, s, steps, nsteps);
	if (best >= 0)
		f->stack_id = a->copies[sum[best].copy].stack_id;
	e = f->evidence;
	cJSON_AddNumberToObject(e, "stall_ns_per_step", (double)stall);
	cJSON_AddNumberToObject(e, "no_call_stretch_ns", (double)stretch);
	cJSON_AddNumberToObject(e, "launch_pace_far_ns", (double)far);
	cJSON_AddNumberToObject(e, "h2d_copies_per_step", (double)copies);
	cJSON_AddNumberToObject(e, "h2d_bytes_per_step", (double)bytes);
	cJSON_AddNumberToObject(e, "pageable_copy_share", all > 0 ? (double)pageable / all : 0);
	cJSON_AddNumberToObject(e, "steady_steps", cs_steps_steady(s));
	cJSON_AddNumberToObject(e, "affected_steps", nsteps);
	ru_recur_evidence(e, r, nsteps);
	/* the copies that ended the stalls, each with its stall's idle */
	if (ru_h2d_sites(e, a, h, owns, steps, nsteps, MAX_SITES, &f->stack_id) ||
	    ru_edit_h2d(f, a, s, h, owns, steps, nsteps, 0))
		goto nomem;
	return ru_emit(ctx, f, err);
nomem:
	cs_finding_free(f);
	return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
}

static int64_t cost_of(const void *sum)
{
	return ((const struct step_sum *)sum)->stall_ns;
}

static int check(cs_rule_ctx *ctx, cs_error *err)
{
	static const struct ru_h2d_rule rule = {
		sizeof(struct step_sum), sum_stalls, cost_of, emit_finding, MIN_STEPS,
		MIN_STEP_SHARE};

	return ru_run_h2d_rule(ctx, &rule, err);
}

const cs_analyzer cs_rule_dataloader_stall = {
	RULE_ID,
	"the GPU idles at the start of the steps while the training thread, making no CUDA "
	"call, prepares the next batch",
	"001 5.4, 6.1",
	check,
	0,
};
