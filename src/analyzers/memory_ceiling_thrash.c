/*
 * memory_ceiling_thrash.c - the memory-ceiling-thrash rule: the working set sits at the memory
 * limit, so in step after step the caching allocator cannot serve a request, waits for the GPU,
 * frees its cached blocks and retries; reserved memory climbs to the ceiling and drops every step
 * ("memory use jumping up and down").
 *
 * The retries come from fact_release_bursts(): a burst of releases right after a failed allocation,
 * or followed at once (no GPU work launched in between) by an allocation that would not have fit
 * under the highest reserved level. PyTorch's own cap (set_per_process_memory_fraction) refuses
 * before calling CUDA, so a failed call is evidence but not required. A failed allocation followed
 * by releases and a retry is direct evidence and is reported however rarely it happens; retries
 * inferred without one must recur. Severity comes from the cost over the steady state.
 * docs/rules/memory-ceiling-thrash.md has the decision, its thresholds and the measured values.
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

#define RULE_ID RULE_ID_MEMORY_CEILING_THRASH

/* Retries inferred without a failed call: in at least this share of the steady steps, and this
 * many. */
#define MIN_STEP_SHARE 0.25
#define MIN_STEPS      3
/* The call sites listed at most. */
#define MAX_SITES 5
/* A peak at or above this share of the device's memory is the device's limit. */
#define DEVICE_LIMIT_SHARE 0.9

static int is_retry(const struct fact_burst *b)
{
	return b->step >= 0 && b->retry;
}

/* A failed allocation, releases and the retried allocation: thrash whenever it happens. */
static int is_direct(const struct fact_burst *b)
{
	return b->step >= 0 && b->direct;
}

static int emit_finding(cs_rule_ctx *ctx, const struct fact_bursts *m,
			const struct fact_bursts_summary *sum, const int32_t *steps, int32_t n,
			cs_error *err)
{
	const cs_analysis *a = ctx->a;
	cs_report_finding *f;
	int64_t failed_bursts = 0, failed_row = -1, stack = CS_ID_NONE;
	int at_device;
	int64_t lost = n > 0 ? sum->total / n : 0;
	char title[480], limit[160], b1[32], b2[32], b3[32], b4[32], b5[48], near[96] = "";
	cJSON *e;

	for (int32_t i = 0; i < m->n; i++) {
		const struct fact_burst *b = &m->v[i];

		if (!sum->keep(b))
			continue;
		if (b->failed_before) {
			failed_bursts++;
			failed_row = b->failed_row;
		}
		if (stack == CS_ID_NONE)
			stack = a->memory[b->first].stack_id;
	}
	at_device = m->device_total > 0 &&
		    m->reserved_peak >= DEVICE_LIMIT_SHARE * (double)m->device_total;
	if (at_device)
		snprintf(limit, sizeof(limit), "at the device's memory (%s of %s)",
			 ru_fmt_bytes(b1, sizeof(b1), m->reserved_peak),
			 ru_fmt_bytes(b2, sizeof(b2), m->device_total));
	else
		snprintf(limit, sizeof(limit), "at a cap of %s%s%s",
			 ru_fmt_bytes(b1, sizeof(b1), m->reserved_peak),
			 m->device_total > 0 ? " below the device's " : "",
			 m->device_total > 0 ? ru_fmt_bytes(b2, sizeof(b2), m->device_total) : "");
	if (sum->near)
		snprintf(near, sizeof(near),
			 "; near the %.0f%% threshold of steps (95%% interval %.0f-%.0f%%)",
			 sum->min_step_share * 100, sum->step_share_lo * 100,
			 sum->step_share_hi * 100);
	snprintf(title, sizeof(title),
		 "memory at its ceiling: %s the allocator frees %lld cached blocks (%s) and "
		 "retries, reserved memory %s%s; %s of GPU idle per affected step (%.1f%% of the "
		 "steady state)%s",
		 ru_fmt_steps(b5, sizeof(b5), n, cs_steps_steady(ctx->steps)),
		 (long long)sum->releases, ru_fmt_bytes(b3, sizeof(b3), sum->bytes), limit,
		 failed_bursts ? ", after a failed allocation"
			       : ", refused by the framework's own cap (no failed CUDA call)",
		 ru_fmt_ns(b4, sizeof(b4), lost), sum->steady_share * 100, near);
	f = ru_finding_new(
		RULE_ID, sum->near ? CS_SEV_INFO : ru_severity(sum->steady_share), title,
		"Bring the peak below the limit: smaller micro-batches with gradient "
		"accumulation, activation checkpointing, bf16/AMP, or a higher memory cap; "
		"allocate on one stream (or record_stream the tensors used across "
		"streams), and try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against "
		"fragmentation.",
		steps, n, lost);
	if (!f)
		return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
	f->step_share = sum->steady_share;
	if (failed_row >= 0 && a->memory[failed_row].stack_id != CS_ID_NONE)
		f->stack_id = a->memory[failed_row].stack_id;
	else
		f->stack_id = stack;
	e = f->evidence;
	cJSON_AddNumberToObject(e, "releases_per_retry", (double)sum->releases);
	cJSON_AddNumberToObject(e, "bytes_per_retry", (double)sum->bytes);
	cJSON_AddBoolToObject(e, "peak_at_device_memory", at_device);
	cJSON_AddNumberToObject(e, "retries_after_failed_call", (double)failed_bursts);
	cJSON_AddNumberToObject(e, "retries", (double)sum->bursts);
	ru_mem_evidence(e, ctx, m, sum, n);
	/* the cost over the steady state, the severity's measure */
	cJSON_ReplaceItemInObject(e, "gpu_idle_ns_per_step", cJSON_CreateNumber((double)lost));
	cJSON_AddNumberToObject(e, "gpu_idle_ns_total", (double)sum->total);
	cJSON_AddNumberToObject(e, "steady_ns", (double)sum->steady_ns);
	cJSON_AddNumberToObject(e, "steady_state_share", sum->steady_share);
	cJSON_AddBoolToObject(e, "direct_evidence_only", sum->keep == is_direct);
	return ru_mem_finish(ctx, f, m, sum->keep, steps, n, MAX_SITES, err);
}

int cs_rule_memory_ceiling_thrash_check(cs_rule_ctx *ctx, cs_error *err)
{
	return ru_mem_rule_run(ctx, is_retry, is_direct, MIN_STEPS, MIN_STEP_SHARE, 0, 0.0,
			       emit_finding, err);
}
