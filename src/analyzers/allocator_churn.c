/*
 * allocator_churn.c - the allocator-churn rule: device memory allocated and freed (cudaMalloc,
 * cudaFree, or with expandable segments cuMemCreate/cuMemMap/cuMemUnmap/cuMemRelease) through the
 * steady steps, outside any release burst: the caching allocator meets new block sizes every step
 * (shapes that change from step to step) and goes to the driver for them, and the host, inside
 * those calls, launches nothing while the GPU runs out of work.
 *
 * The release bursts of empty-cache-in-loop and memory-ceiling-thrash (fact_release_bursts()), with
 * the allocations that fill the cache again after each, are theirs when they claim them: an
 * allocator call from a burst's first release to its last refilling allocation is left out when the
 * burst is a retry or at a phase switch (those rules' own evidence), or when one of the two rules
 * found its pattern in this process. Bursts no rule claims (a program without the caching allocator
 * frees tensors in runs too, many per step) are allocator calls like any other. The cost is the GPU
 * idle while the host was in the remaining allocator calls, measured from the trace's API rows.
 * docs/rules/allocator-churn.md has the decision, its thresholds and the measured values.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/grow.h"

#include "release_bursts.h"
#include "finding_kit.h"
#include "estimates.h"
#include "recurrence.h"
#include "sites.h"
#include "rules.h"
#include "cuscope/checked.h"

/* A recurring pattern: costly allocator calls in at least this share of the steady steps ... */
#define MIN_STEP_SHARE 0.5
/* ... and in at least this many of them ... */
#define MIN_STEPS 3
/* ... costing at least this share of the median step. */
#define MIN_LOSS_SHARE 0.02
/* Fewer steps than that: found when it costs MIN_LOSS_SHARE over the steady state, in at least
 * this many steps. */
#define MIN_RARE_STEPS 2
/* The call sites listed at most. */
#define MAX_SITES 5

#define RULE_ID RULE_ID_ALLOCATOR_CHURN

struct step_sum {
	int64_t calls, allocs, frees, bytes, host_ns, idle_ns;
};

/* 1 when empty-cache-in-loop or memory-ceiling-thrash found its pattern in the steps' process
 * (they run first), or when the other rules' findings are not known (this rule run alone). */
static int bursts_claimed(const cs_rule_ctx *ctx)
{
	if (!ctx->found)
		return 1;
	for (int32_t i = 0; i < ctx->found->n; i++) {
		const cs_report_finding *f = ctx->found->v[i];

		if (f->pid == ctx->steps->pid && (!strcmp(f->rule, "empty-cache-in-loop") ||
						  !strcmp(f->rule, "memory-ceiling-thrash")))
			return 1;
	}
	return 0;
}

/* A burst the memory rules claim: all of them when claimed, else the retries and the phase
 * switches. */
static int burst_claimed(const struct fact_burst *b, int claimed)
{
	return claimed || b->retry || b->phase_switch;
}

/* 1 when t lies in a claimed release burst or the refill after it, or in a steady step that
 * holds one (burst_step: the cache was emptied in that step, and every allocation of the step
 * refills it: with expandable segments the mapping calls that follow the last allocation). */
static int in_burst(const struct fact_bursts *m, int claimed, const uint8_t *burst_step, int32_t st,
		    int64_t t)
{
	if (st >= 0 && burst_step[st])
		return 1;
	for (int32_t i = 0; i < m->n; i++) {
		const struct fact_burst *b = &m->v[i];
		int64_t end = b->t_realloc_end > b->t_last ? b->t_realloc_end : b->t_last;

		if (t >= b->t_first && t <= end && burst_claimed(b, claimed))
			return 1;
	}
	return 0;
}

static int is_step(const int32_t *steps, int32_t n, int32_t st)
{
	for (int32_t j = 0; j < n; j++)
		if (steps[j] == st)
			return 1;
	return 0;
}

int cs_rule_allocator_churn_check(cs_rule_ctx *ctx, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	struct fact_bursts m = {0};
	struct step_sum *sum = NULL;
	int64_t *idle = NULL, *tmp = NULL, *call_idle = NULL, sizes = 0, best_ns = -1, best = -1;
	int32_t *steps = NULL, nsteps = 0, steady = cs_steps_steady(s);
	struct cs_i64s seen = {0};
	struct fact_alloc_calls calls = {0}; /* the allocator calls */
	struct ru_sites sites = {0};
	cs_report_finding *f = NULL;
	struct ru_recur r;
	char title[400], b1[32], b2[32], near[200] = "";
	int rc, claimed;
	uint8_t *burst_step = NULL; /* steady steps that hold a claimed burst */
	cs_edit *edit = NULL;	    /* the fix: the calls counted are not made (docs/replay.md) */

	if (steady <= 0 || a->napis == 0)
		return 0;
	claimed = bursts_claimed(ctx);
	rc = CS_ERR_NOMEM;
	if (fact_release_bursts(a, s, &m))
		goto out;
	burst_step = calloc((size_t)s->n + 1, 1);
	if (!burst_step)
		goto out;
	for (int32_t i = 0; i < m.n; i++)
		if (m.v[i].step >= 0 && m.v[i].step < s->n && burst_claimed(&m.v[i], claimed))
			burst_step[m.v[i].step] = 1;
	sum = calloc((size_t)s->n, sizeof(*sum));
	idle = calloc((size_t)s->n, sizeof(*idle));
	tmp = calloc((size_t)s->n + (size_t)a->nmemory + 1, sizeof(*tmp));
	/* the process's allocator calls, by start */
	if (!sum || !idle || !tmp || fact_alloc_calls(a, s->pid, 1, &calls))
		goto out;
	call_idle = calloc((size_t)calls.n + 1, sizeof(*call_idle));
	if (!call_idle)
		goto out;
	/* those of the steady steps, outside the bursts (call_idle: each one's, 0 for the others)
	 */
	for (int64_t k = 0; k < calls.n; k++) {
		const cs_a_api *x = &a->apis[calls.v[k]];
		int32_t st;

		st = cs_steps_find_steady(s, x->start);
		if (st < 0 || in_burst(&m, claimed, burst_step, st, x->start))
			continue;
		sum[st].calls++;
		cs_sat_accum(&sum[st].host_ns, x->end - x->start);
		call_idle[k] = fact_alloc_call_idle(a, &calls, k);
		sum[st].idle_ns += call_idle[k];
		if (cs_edit_add(&edit, CS_EDIT_DROP_CALL, CS_EDIT_API, calls.v[k], 0))
			goto out;
	}
	/* the device memory rows of those steps, outside the bursts */
	for (int64_t i = 0; i < a->nmemory; i++) {
		const cs_a_memory *x = &a->memory[i];
		int32_t st;

		if (x->pid != s->pid || x->result != 0 || !cs_a_memory_is_device(x))
			continue;
		st = cs_steps_find_steady(s, x->start);
		if (st < 0 || in_burst(&m, claimed, burst_step, st, x->start))
			continue;
		if (x->op == CS_MEMOP_ALLOC || x->op == CS_MEMOP_VMM_CREATE) {
			sum[st].allocs++;
			cs_sat_accum(&sum[st].bytes, x->bytes > 0 ? x->bytes : 0);
			if (cs_i64s_push(&seen, x->bytes))
				goto out;
		} else if (x->op == CS_MEMOP_FREE || x->op == CS_MEMOP_VMM_RELEASE) {
			sum[st].frees++;
		}
	}
	for (int32_t i = 0; i < s->n; i++)
		idle[i] = sum[i].allocs + sum[i].frees > 0 ? sum[i].idle_ns : 0;
	rc = ru_recur_find(s, ctx->step_median, idle, 1, MIN_STEPS, MIN_STEP_SHARE, MIN_RARE_STEPS,
			   MIN_LOSS_SHARE, tmp, &steps, &nsteps, &r);
	if (rc <= 0)
		goto out;

	rc = CS_ERR_NOMEM;
	ru_sort_i64(seen.v, seen.n);
	for (int64_t i = 0; i < seen.n; i++)
		sizes += i == 0 || seen.v[i] != seen.v[i - 1];
	if (r.near_loss)
		snprintf(near, sizeof(near),
			 "; near the %.0f%% threshold (95%% interval %.1f-%.1f%%)",
			 MIN_LOSS_SHARE * 100, r.share_lo * 100, r.share_hi * 100);
	else if (r.near_steps)
		snprintf(near, sizeof(near),
			 "; near the %.0f%% threshold of steps (95%% interval %.0f-%.0f%%)",
			 MIN_STEP_SHARE * 100, r.steps_lo * 100, r.steps_hi * 100);
	{
		int64_t al = ru_median_field(sum, sizeof(*sum), steps, nsteps,
					     offsetof(struct step_sum, allocs), tmp),
			fr = ru_median_field(sum, sizeof(*sum), steps, nsteps,
					     offsetof(struct step_sum, frees), tmp);

		if (r.recurring)
			snprintf(
				title, sizeof(title),
				"device memory allocated and freed in every step (%lld "
				"allocation%s, "
				"%lld free%s per step, %lld sizes): %s of GPU idle per step in the "
				"allocator calls (%.1f%%)%s",
				(long long)al, al == 1 ? "" : "s", (long long)fr,
				fr == 1 ? "" : "s", (long long)sizes,
				ru_fmt_ns(b1, sizeof(b1), r.lost), r.share * 100, near);
		else
			snprintf(title, sizeof(title),
				 "device memory allocated and freed in %d of %d steady steps: %s "
				 "of GPU "
				 "idle per step over the steady state in the allocator calls "
				 "(%.1f%%)%s",
				 (int)nsteps, (int)steady, ru_fmt_ns(b1, sizeof(b1), r.lost),
				 r.share * 100, near);
	}
	if (m.uncached) {
		/* blocks under any caching allocator's segment, every step: no cache at all */
		size_t len = strlen(title);

		snprintf(title + len, sizeof(title) - len,
			 "; blocks under %s asked from the driver in most steps: no caching "
			 "allocator",
			 ru_fmt_bytes(b2, sizeof(b2), FACT_SEGMENT_MIN_BYTES));
	}
	f = ru_recur_finding(
		RULE_ID, &r, title,
		m.uncached
			? "Allocate once and reuse: in PyTorch, unset "
			  "PYTORCH_NO_CUDA_MEMORY_CACHING (it turns the caching allocator off: "
			  "every tensor is a cudaMalloc and a cudaFree, which waits for the "
			  "device); in CUDA C/C++, allocate buffers before the loop or from a pool "
			  "(cudaMallocAsync with a memory pool)."
		: sizes == 1
			? "The same size is allocated and freed in every step: allocate the "
			  "buffer once before the loop and reuse it (cudaFree waits for the "
			  "device), or take it from a pool (cudaMallocAsync, a framework's "
			  "caching allocator)."
			: "Keep shapes fixed from step to step (pad or bucket variable lengths, "
			  "drop_last=True) "
			  "or allocate the largest shape once and use slices of it; with "
			  "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True the allocator grows "
			  "one "
			  "segment instead of allocating a block per new size.",
		steps, nsteps);
	if (!f)
		goto out;
	/* the fix as an edit of the run: the finding's from now on */
	f->edit = edit;
	edit = NULL;
	for (int64_t k = 0; k < calls.n; k++) {
		int64_t i = calls.v[k];
		const cs_a_api *x = &a->apis[i];
		int32_t st;

		st = cs_steps_find_steady(s, x->start);
		if (st < 0 || in_burst(&m, claimed, burst_step, st, x->start) ||
		    !is_step(steps, nsteps, st))
			continue;
		if (f->first == CS_TS_UNKNOWN)
			f->first = x->start;
		f->last = x->end;
		if (x->end - x->start > best_ns) {
			best_ns = x->end - x->start;
			best = i;
		}
		/* each call with the idle it is charged in the finding's cost, so that the sites'
		 * shares add up to the cost */
		if (ru_sites_add(&sites, -1, x->tid, x->stack_id, st, call_idle[k]))
			goto out;
	}
	{
		cJSON *e = f->evidence, *ex;

		{
			static const struct ru_median_key medians[] = {
				{"idle_ns_per_step", offsetof(struct step_sum, idle_ns)},
				{"calls_per_step", offsetof(struct step_sum, calls)},
				{"allocations_per_step", offsetof(struct step_sum, allocs)},
				{"frees_per_step", offsetof(struct step_sum, frees)},
				{"bytes_allocated_per_step", offsetof(struct step_sum, bytes)},
				{"host_ns_per_step", offsetof(struct step_sum, host_ns)},
			};

			ru_add_medians(e, medians, sizeof(medians) / sizeof(*medians), sum,
				       sizeof(*sum), steps, nsteps, tmp);
		}
		cJSON_AddNumberToObject(e, "allocation_sizes", (double)sizes);
		cJSON_AddNumberToObject(e, "release_bursts", m.n);
		cJSON_AddBoolToObject(e, "uncached", m.uncached);
		if (best >= 0) {
			const cs_a_api *x = &a->apis[best];

			ex = cJSON_AddObjectToObject(e, "longest_call");
			if (!ex)
				goto out;
			cJSON_AddStringToObject(ex, "name", cs_analysis_string(a, x->name_id));
			cJSON_AddNumberToObject(ex, "step", cs_steps_find_steady(s, x->start));
			cJSON_AddNumberToObject(ex, "start", (double)x->start);
			cJSON_AddNumberToObject(ex, "end", (double)x->end);
			if (x->stack_id != CS_ID_NONE)
				f->stack_id = x->stack_id;
		}
		cJSON_AddStringToObject(
			e, "largest_step_allocation",
			ru_fmt_bytes(b2, sizeof(b2), seen.n ? seen.v[seen.n - 1] : 0));
		cJSON_AddNumberToObject(e, "steady_steps", steady);
		cJSON_AddNumberToObject(e, "affected_steps", nsteps);
		ru_recur_evidence(e, &r, nsteps);
		if (ru_sites_evidence(e, &sites, NULL, 0, MAX_SITES, &f->stack_id))
			goto out;
	}
	rc = 0;
out:
	rc = ru_finish(ctx, f, rc, err);
	cs_edit_free(edit);
	fact_bursts_free(&m);
	cs_i64s_free(&seen);
	fact_alloc_calls_free(&calls);
	free(call_idle);
	free(burst_step);
	ru_sites_free(&sites);
	free(sum);
	free(idle);
	free(tmp);
	free(steps);
	return rc;
}
