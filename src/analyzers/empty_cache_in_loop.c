/*
 * empty_cache_in_loop.c - the empty-cache-in-loop rule: torch.cuda.empty_cache() (or any release
 * of the allocator's whole cache) inside the training steps. Every step then returns tens of
 * cached blocks to the driver at once (cudaFree, or cuMemUnmap/cuMemRelease with expandable
 * segments, each waiting for the GPU) and allocates as much again with slow cudaMalloc calls.
 *
 * A burst of releases is this rule's when nothing forced it: no allocation failed before it and no
 * allocation that would not have fit followed it at once (those are memory-ceiling-thrash's,
 * fact_release_bursts()). docs/rules/empty-cache-in-loop.md has the decision, its thresholds and
 * the measured values.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "release_bursts.h"
#include "mem_rules.h"
#include "finding_kit.h"
#include "estimates.h"
#include "rules.h"

#define RULE_ID RULE_ID_EMPTY_CACHE_IN_LOOP

/* A burst counts when at least this share of its bytes is allocated again before the next one. */
#define MIN_REALLOC_SHARE 0.5
/* Bursts in at least this share of the steady steps (not a train/eval switch every N steps) ... */
#define MIN_STEP_SHARE 0.25
/* ... and in at least this many. */
#define MIN_STEPS 3
/* The call sites listed at most. */
#define MAX_SITES 5

static int is_empty_cache(const struct fact_burst *b)
{
	return b->step >= 0 && !b->retry && !b->phase_switch &&
	       b->realloc_bytes >= MIN_REALLOC_SHARE * (double)b->bytes;
}

static int emit_finding(cs_rule_ctx *ctx, const struct fact_bursts *m,
			const struct fact_bursts_summary *sum, const int32_t *steps, int32_t n,
			cs_error *err)
{
	const cs_analysis *a = ctx->a;
	cs_report_finding *f;
	int64_t realloc_bytes;
	char title[400], b1[32], b2[32], b3[48], b4[32], near[96] = "";
	cJSON *e;

	realloc_bytes = fact_bursts_median(m, is_empty_cache,
					   offsetof(struct fact_burst, realloc_bytes), sum->tmp);
	if (sum->near)
		snprintf(near, sizeof(near),
			 "; near the %.0f%% threshold of steps (95%% interval %.0f-%.0f%%)",
			 sum->min_step_share * 100, sum->step_share_lo * 100,
			 sum->step_share_hi * 100);
	if (sum->rare)
		snprintf(title, sizeof(title),
			 "the allocator's cache is emptied inside the steps: %lld cached blocks "
			 "(%s) "
			 "released and allocated again %s, %s of GPU idle each time, %s per step "
			 "over the steady state (%.1f%%)",
			 (long long)sum->releases, ru_fmt_bytes(b1, sizeof(b1), sum->bytes),
			 ru_fmt_steps(b3, sizeof(b3), n, cs_steps_steady(ctx->steps)),
			 ru_fmt_ns(b4, sizeof(b4), sum->lost_each),
			 ru_fmt_ns(b2, sizeof(b2), sum->lost), sum->share * 100);
	else
		snprintf(title, sizeof(title),
			 "the allocator's cache is emptied inside the steps: %lld cached blocks "
			 "(%s) "
			 "released and allocated again %s, %s of GPU idle per step (%.1f%%)%s",
			 (long long)sum->releases, ru_fmt_bytes(b1, sizeof(b1), sum->bytes),
			 ru_fmt_steps(b3, sizeof(b3), n, cs_steps_steady(ctx->steps)),
			 ru_fmt_ns(b2, sizeof(b2), sum->lost), sum->share * 100, near);
	f = ru_finding_new(RULE_ID, sum->near ? CS_SEV_INFO : ru_severity(sum->share), title,
			   "Take torch.cuda.empty_cache() out of the training step: call it once "
			   "after setup, or at train/eval switches; to limit fragmentation set "
			   "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True instead.",
			   steps, n, sum->lost);
	if (!f)
		return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
	f->step_share = sum->share;
	/* the release that opened the burst in the middle affected step */
	for (int32_t i = 0; i < m->n; i++) {
		const struct fact_burst *b = &m->v[i];

		if (is_empty_cache(b) && b->step <= steps[n / 2] &&
		    a->memory[b->first].stack_id != CS_ID_NONE)
			f->stack_id = a->memory[b->first].stack_id;
	}
	e = f->evidence;
	cJSON_AddNumberToObject(e, "releases_per_burst", (double)sum->releases);
	cJSON_AddNumberToObject(e, "bytes_per_burst", (double)sum->bytes);
	cJSON_AddNumberToObject(e, "reallocated_bytes_per_burst", (double)realloc_bytes);
	cJSON_AddNumberToObject(e, "bursts", (double)sum->bursts);
	ru_mem_evidence(e, ctx, m, sum, n);
	return ru_mem_finish(ctx, f, m, sum->keep, steps, n, MAX_SITES, err);
}

int cs_rule_empty_cache_in_loop_check(cs_rule_ctx *ctx, cs_error *err)
{
	return ru_mem_rule_run(ctx, is_empty_cache, NULL, MIN_STEPS, MIN_STEP_SHARE, 1, 0.0,
			       emit_finding, err);
}
