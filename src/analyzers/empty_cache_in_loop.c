/*
 * empty_cache_in_loop.c - the empty-cache-in-loop rule: torch.cuda.empty_cache() (or any release
 * of the allocator's whole cache) inside the training steps. Every step then returns tens of
 * cached blocks to the driver at once (cudaFree, or cuMemUnmap/cuMemRelease with expandable
 * segments, each waiting for the GPU) and allocates as much again with slow cudaMalloc calls.
 *
 * A burst of releases is this rule's when nothing forced it: no allocation failed before it and no
 * allocation that would not have fit followed it at once (those are memory-ceiling-thrash's,
 * ru_mem_bursts()). docs/rules/empty-cache-in-loop.md has the decision, its thresholds and the
 * measured values.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzers/rule_util.h"

#define RULE_ID "empty-cache-in-loop"

/* A burst counts when at least this share of its bytes is allocated again before the next one. */
#define MIN_REALLOC_SHARE 0.5
/* Bursts in at least this share of the steady steps (not a train/eval switch every N steps) ... */
#define MIN_STEP_SHARE 0.25
/* ... and in at least this many. */
#define MIN_STEPS 3

static int is_empty_cache(const struct ru_burst *b)
{
	return b->step >= 0 && !b->retry &&
	       b->realloc_bytes >= MIN_REALLOC_SHARE * (double)b->bytes;
}

/* Median over the bursts of the rule of one int64 member. */
static int emit_finding(cs_rule_ctx *ctx, const struct ru_mem *m, const int64_t *cost,
			const int32_t *steps, int32_t n, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	cs_report_finding *f = NULL;
	int64_t *tmp, lost, releases = 0, bursts = 0, bytes, realloc_bytes, before, after;
	int64_t calls, host;
	double share;
	char title[320], b1[32], b2[32], b3[48];
	cJSON *e;
	int rc = CS_ERR_NOMEM;

	tmp = malloc(((size_t)(m->n > s->n ? m->n : s->n) + 1) * sizeof(*tmp));
	if (!tmp)
		goto out;
	for (int32_t i = 0; i < n; i++)
		tmp[i] = cost[steps[i]];
	lost = ru_median(tmp, n);
	share = ctx->step_median > 0 ? (double)lost / (double)ctx->step_median : 0;
	for (int32_t i = 0; i < m->n; i++)
		if (is_empty_cache(&m->v[i]))
			tmp[bursts++] = m->v[i].releases;
	releases = ru_median(tmp, bursts);
	bytes = ru_burst_median(m, is_empty_cache, offsetof(struct ru_burst, bytes), tmp);
	realloc_bytes =
		ru_burst_median(m, is_empty_cache, offsetof(struct ru_burst, realloc_bytes), tmp);
	before =
		ru_burst_median(m, is_empty_cache, offsetof(struct ru_burst, reserved_before), tmp);
	after = ru_burst_median(m, is_empty_cache, offsetof(struct ru_burst, reserved_after), tmp);
	for (int32_t i = 0; i < n; i++)
		tmp[i] = m->api_calls ? m->api_calls[steps[i]] : 0;
	calls = ru_median(tmp, n);
	for (int32_t i = 0; i < n; i++)
		tmp[i] = m->api_host ? m->api_host[steps[i]] : 0;
	host = ru_median(tmp, n);

	snprintf(title, sizeof(title),
		 "the allocator's cache is emptied inside the steps: %lld cached blocks (%s) "
		 "released and allocated again %s, %s of GPU idle per step (%.1f%%)",
		 (long long)releases, ru_fmt_bytes(b1, sizeof(b1), bytes),
		 ru_fmt_steps(b3, sizeof(b3), n, cs_steps_steady(s)),
		 ru_fmt_ns(b2, sizeof(b2), lost), share * 100);
	f = cs_finding_new(RULE_ID, ru_severity(share), title,
			   "Take torch.cuda.empty_cache() out of the training step: call it once "
			   "after setup, or at train/eval switches; to limit fragmentation set "
			   "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True instead.");
	if (!f || cs_finding_set_steps(f, steps, n))
		goto out;
	f->lost_ns_per_step = lost;
	f->step_share = share;
	for (int32_t i = 0; i < m->n; i++) {
		const struct ru_burst *b = &m->v[i];

		if (!is_empty_cache(b))
			continue;
		if (f->first == CS_TS_UNKNOWN)
			f->first = b->t_first;
		f->last = b->t_last;
		/* the release that opened the burst in the middle affected step */
		if (b->step <= steps[n / 2] && a->memory[b->first].stack_id != CS_ID_NONE)
			f->stack_id = a->memory[b->first].stack_id;
	}
	e = f->evidence;
	cJSON_AddNumberToObject(e, "releases_per_burst", (double)releases);
	cJSON_AddNumberToObject(e, "bytes_per_burst", (double)bytes);
	cJSON_AddNumberToObject(e, "reallocated_bytes_per_burst", (double)realloc_bytes);
	cJSON_AddNumberToObject(e, "gpu_idle_ns_per_step", (double)lost);
	cJSON_AddNumberToObject(e, "allocator_calls_per_step", (double)calls);
	cJSON_AddNumberToObject(e, "allocator_host_ns_per_step", (double)host);
	cJSON_AddNumberToObject(e, "reserved_before", (double)before);
	cJSON_AddNumberToObject(e, "reserved_after", (double)after);
	cJSON_AddNumberToObject(e, "reserved_peak", (double)m->reserved_peak);
	cJSON_AddNumberToObject(e, "failed_allocations", (double)m->steady_failed);
	cJSON_AddNumberToObject(e, "device_memory", (double)m->device_total);
	cJSON_AddNumberToObject(e, "bursts", (double)bursts);
	cJSON_AddBoolToObject(e, "cost_from_api_calls", m->have_api);
	cJSON_AddNumberToObject(e, "steady_steps", cs_steps_steady(s));
	cJSON_AddNumberToObject(e, "affected_steps", n);
	rc = ctx->emit(ctx, f);
	if (rc < 0) {
		cs_finding_free(f);
		free(tmp);
		return cs_error_set(err, rc, "cannot add a finding");
	}
	rc = 0;
out:
	cs_finding_free(f);
	free(tmp);
	if (rc)
		return cs_error_set(err, rc, "out of memory");
	return 0;
}

static int run(cs_rule_ctx *ctx, cs_error *err)
{
	return ru_mem_rule_run(ctx, is_empty_cache, MIN_STEPS, MIN_STEP_SHARE, emit_finding, err);
}

const cs_analyzer cs_rule_empty_cache_in_loop = {
	RULE_ID,
	"the allocator's cache is emptied inside the steps (torch.cuda.empty_cache()) and "
	"allocated again with slow cudaMalloc calls",
	"000 #6",
	run,
};
