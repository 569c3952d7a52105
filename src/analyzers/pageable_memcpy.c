/*
 * pageable_memcpy.c - the pageable-memcpy rule: inside steady-state steps, host-to-device or
 * device-to-host copies from or to pageable host memory (a tensor not made with pin_memory, a
 * NumPy array), whose call holds the host while the driver stages the data through its own pinned
 * buffer, so that the host launches nothing meanwhile and the GPU runs out of work. A copy asked
 * for with non_blocking=True (cudaMemcpyAsync) is just as synchronous when the memory is pageable:
 * the rule counts those apart, as the fix differs (the flag is there, the pinning is missing).
 *
 * A copy is pageable as the gate counts it (src/gate/metrics.c): a memcpy, not a memset, whose
 * source or destination memory kind is pageable. The cost is the GPU idle while such a call held
 * the host, as launch-starvation splits its gaps (cs_steps_idle_by_cause(), the pageable_copy
 * cause): idle after a device-to-host wait is d2h-sync's and not counted again here.
 * docs/rules/pageable-memcpy.md has the decision, its thresholds and the measured values.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/gpu_links.h"
#include "cuscope/grow.h"

#include "d2h_waits.h"
#include "cache.h"
#include "finding_kit.h"
#include "launch_ops.h"
#include "recurrence.h"
#include "sites.h"
#include "rules.h"
#include "cuscope/checked.h"

/* A recurring pattern: costly pageable copies in at least this share of the steady steps ... */
#define MIN_STEP_SHARE 0.5
/* ... and in at least this many of them ... */
#define MIN_STEPS 3
/* ... costing at least this share of the median step. */
#define MIN_LOSS_SHARE 0.02
/* Fewer steps than that: a pattern in a few steps only, found when it costs MIN_LOSS_SHARE over
 * the steady state; at least this many of them. */
#define MIN_RARE_STEPS 2

#define RULE_ID RULE_ID_PAGEABLE_MEMCPY
/* The call sites listed at most. */
#define MAX_SITES 5

struct step_sum {
	int64_t copies, h2d, d2h, nonblocking, bytes, host_ns, copy_ns, idle_ns;
	int64_t slow_ns; /* the transfers' time beyond the PCIe link's, with nothing else on the GPU
			  */
	int64_t waits;	 /* draining waits right after a blocking copy's call */
};

static int is_pageable(const cs_a_copy *c)
{
	return !c->is_memset && (c->src_kind == CS_MEM_PAGEABLE || c->dst_kind == CS_MEM_PAGEABLE);
}

/* Copies below this many bytes are not charged a slow transfer: their time is the DMA's latency
 * (microseconds, pinned or not), not the link's bandwidth; from 1 MiB (16 us at PCIe 5.0 x16) the
 * link time dominates. */
#define SLOW_MIN_BYTES (1 << 20)

/*
 * A device-to-host copy under SLOW_MIN_BYTES whose call overlaps a host wait that d2h-sync charges
 * (a `.item()`, a synchronous cudaMemcpy of a scalar): the copy is there to read a value, not to
 * move data, and its cost is d2h-sync's. A larger one moves data, whatever waits for it: pinned
 * memory is its fix, and it is this rule's.
 */
static int d2h_owned(const cs_analysis *a, const struct fact_waits *d, const cs_a_copy *c)
{
	if (c->copy_kind != CS_COPY_DTOH || c->launch_end == CS_TS_UNKNOWN ||
	    c->bytes >= SLOW_MIN_BYTES)
		return 0;
	for (int64_t i = 0; i < d->n; i++) {
		const struct fact_wait *w = &d->v[i];
		const cs_a_sync *y = &a->syncs[w->sync];
		int64_t end = w->window_end > y->end ? w->window_end : y->end;

		if (w->step >= 0 && fact_wait_cost(w) > 0 && c->launch_start <= end &&
		    y->start <= c->launch_end)
			return 1;
	}
	return 0;
}

/*
 * The steady step in which c is a copy this rule charges: a copy from or to pageable memory of the
 * steps' process, its call started in a steady step of s, that d2h-sync does not own (d2h_owned(),
 * with d2h-sync's waits d). -1 when c is none.
 */
static int32_t charged_step(const cs_analysis *a, const cs_steps *s, const struct fact_waits *d,
			    const cs_a_copy *c)
{
	int32_t st;

	if (c->pid != s->pid || !is_pageable(c) || c->launch_start == CS_TS_UNKNOWN)
		return -1;
	st = cs_steps_find_steady(s, c->launch_start);
	return st < 0 || d2h_owned(a, d, c) ? -1 : st;
}

/* The PCIe link of a process's device, from the trace's META gpu_links (0 when unknown). */
struct link_find {
	uint32_t pid;
	int32_t device_id;
	const char *links;
	double bps;
};

static int link_cb(const cs_device *d, void *arg)
{
	struct link_find *l = arg;

	if (d->pid == l->pid && d->device_id == l->device_id && l->bps <= 0)
		l->bps = cs_gpu_link_bytes_per_s(l->links, d->uuid);
	return 0;
}

static double link_bytes_per_s(const cs_analysis *a, uint32_t pid, int32_t device_id)
{
	struct link_find l = {pid, device_id, cs_trace_meta(a->trace, "gpu_links"), 0};
	cs_error err = {0};

	if (!l.links || cs_trace_each_device(a->trace, link_cb, &l, &err))
		return 0;
	return l.bps;
}

/*
 * The rate a pinned copy of process pid on device_id reaches, for the fix's edit: the link's
 * (link_bytes_per_s()) when the trace knows it; else the fastest pinned copy of at least
 * SLOW_MIN_BYTES the process made; else that of PCIe 4.0 x16 (16 GT/s x 16 lanes x 128/130 / 8,
 * 31.5 GB/s), the slowest link of the GPUs CUPTI 12 and later profile in a server (docs/replay.md).
 */
#define PCIE4_X16_BYTES_PER_S (16e9 * 16 * 128.0 / 130.0 / 8)
static double pinned_bytes_per_s(const cs_analysis *a, uint32_t pid, int32_t device_id,
				 double link_bps)
{
	double best = 0;

	if (link_bps > 0)
		return link_bps;
	for (int64_t i = 0; i < a->ncopies; i++) {
		const cs_a_copy *c = &a->copies[i];

		if (c->pid == pid && c->device_id == device_id && c->bytes >= (1 << 20) &&
		    c->start != CS_TS_UNKNOWN && c->end != CS_TS_UNKNOWN && c->end > c->start &&
		    !c->is_memset &&
		    (c->src_kind == CS_MEM_PINNED || c->dst_kind == CS_MEM_PINNED) &&
		    (double)c->bytes * 1e9 / (double)(c->end - c->start) > best)
			best = (double)c->bytes * 1e9 / (double)(c->end - c->start);
	}
	return best > 0 ? best : PCIE4_X16_BYTES_PER_S;
}

/* The longest kernel of process pid (how far before a copy a kernel beside it may start). */
static int64_t longest_kernel(const cs_analysis *a, uint32_t pid)
{
	int64_t longest = 0;

	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];

		if (k->pid == pid && k->start != CS_TS_UNKNOWN && k->end != CS_TS_UNKNOWN &&
		    k->end - k->start > longest)
			longest = k->end - k->start;
	}
	return longest;
}

/*
 * What a pageable copy costs beyond the idle around its call: its transfer runs at a fraction of
 * what the PCIe link moves (the driver stages pageable memory through a pinned buffer of its own),
 * and while no kernel of the process runs beside it the GPU does nothing else. The copy's time
 * without a kernel of the process beside it, times the share of the transfer beyond the link's
 * own time for its bytes: a lower bound of what pinned memory saves, the link's rate being the
 * most a pinned copy reaches. 0 when the link is unknown, the copy is small (SLOW_MIN_BYTES) or as
 * fast. longest: longest_kernel() of the copy's process.
 */
static int64_t slow_transfer(const cs_analysis *a, const cs_a_copy *c, double bps, int64_t longest)
{
	int64_t dur, alone, busy = 0, reach, lo;
	double floor_ns, beyond;

	if (bps <= 0 || c->start == CS_TS_UNKNOWN || c->end == CS_TS_UNKNOWN ||
	    c->end <= c->start || c->bytes < SLOW_MIN_BYTES)
		return 0;
	dur = c->end - c->start;
	floor_ns = (double)c->bytes / bps * 1e9;
	if (floor_ns >= (double)dur)
		return 0;
	/* the first kernel that may overlap the copy (kernels by start) */
	lo = cs_analysis_kernel_at(a, c->start - longest);
	/* the union of the process's kernels inside the copy */
	reach = c->start;
	for (int64_t i = lo; i < a->nkernels && a->kernels[i].start < c->end; i++) {
		const cs_a_kernel *k = &a->kernels[i];
		int64_t s0, s1;

		if (k->pid != c->pid || k->end == CS_TS_UNKNOWN || k->end <= reach)
			continue;
		s0 = k->start > reach ? k->start : reach;
		s1 = k->end < c->end ? k->end : c->end;
		if (s1 > s0) {
			busy += s1 - s0;
			reach = s1;
		}
	}
	alone = dur - busy;
	beyond = 1.0 - floor_ns / (double)dur;
	return alone > 0 ? cs_sat_from_double((double)alone * beyond) : 0;
}

/* The copy of the affected steps that held the host longest, or -1. */
static int64_t longest_copy(const cs_analysis *a, const cs_steps *s, const struct fact_waits *d,
			    const int32_t *steps, int32_t nsteps)
{
	int64_t best = -1, best_ns = -1;

	for (int64_t i = 0; i < a->ncopies; i++) {
		const cs_a_copy *c = &a->copies[i];
		int32_t st;
		int in = 0;

		if (c->launch_end == CS_TS_UNKNOWN)
			continue;
		st = charged_step(a, s, d, c);
		for (int32_t j = 0; j < nsteps && !in; j++)
			in = steps[j] == st;
		if (in && c->launch_end - c->launch_start > best_ns) {
			best_ns = c->launch_end - c->launch_start;
			best = i;
		}
	}
	return best;
}

static int add_evidence(const cs_analysis *a, const cs_steps *s, const struct fact_waits *d,
			const struct step_sum *sum, const int32_t *steps, int32_t nsteps,
			double link_bps, int64_t *tmp, cs_report_finding *f)
{
	cJSON *e = f->evidence, *ex;
	int64_t best = longest_copy(a, s, d, steps, nsteps);

	{
		static const struct ru_median_key medians[] = {
			{"idle_ns_per_step", offsetof(struct step_sum, idle_ns)},
			{"copies_per_step", offsetof(struct step_sum, copies)},
			{"h2d_per_step", offsetof(struct step_sum, h2d)},
			{"d2h_per_step", offsetof(struct step_sum, d2h)},
			{"non_blocking_per_step", offsetof(struct step_sum, nonblocking)},
			{"bytes_per_step", offsetof(struct step_sum, bytes)},
			{"host_ns_per_step", offsetof(struct step_sum, host_ns)},
			{"copy_ns_per_step", offsetof(struct step_sum, copy_ns)},
			{"slow_transfer_ns_per_step", offsetof(struct step_sum, slow_ns)},
		};

		ru_add_medians(e, medians, sizeof(medians) / sizeof(*medians), sum, sizeof(*sum),
			       steps, nsteps, tmp);
	}
	if (link_bps > 0)
		cJSON_AddNumberToObject(e, "link_bytes_per_s", link_bps);
	if (best >= 0) {
		const cs_a_copy *c = &a->copies[best];

		ex = cJSON_AddObjectToObject(e, "longest_copy");
		if (!ex)
			return CS_ERR_NOMEM;
		cJSON_AddNumberToObject(ex, "step", cs_steps_find_steady(s, c->launch_start));
		cJSON_AddStringToObject(ex, "kind", cs_copy_kind_name(c->copy_kind));
		cJSON_AddStringToObject(ex, "src", cs_mem_kind_name(c->src_kind));
		cJSON_AddStringToObject(ex, "dst", cs_mem_kind_name(c->dst_kind));
		cJSON_AddBoolToObject(ex, "async_call", c->is_async != 0);
		cJSON_AddNumberToObject(ex, "bytes", (double)c->bytes);
		cJSON_AddNumberToObject(ex, "call_start", (double)c->launch_start);
		cJSON_AddNumberToObject(ex, "call_end", (double)c->launch_end);
		cJSON_AddNumberToObject(ex, "copy_start", (double)c->start);
		cJSON_AddNumberToObject(ex, "copy_end", (double)c->end);
		cJSON_AddNumberToObject(ex, "stream", (double)c->stream_id);
		if (c->stack_id != CS_ID_NONE)
			f->stack_id = c->stack_id;
	}
	cJSON_AddNumberToObject(e, "steady_steps", cs_steps_steady(s));
	cJSON_AddNumberToObject(e, "affected_steps", nsteps);
	return 0;
}

/*
 * The call sites of the copies the finding charges (those sum counts, in steps): each with the GPU
 * idle while its call held the host and, for a blocking copy, the idle after the wait it made
 * right after its call (cw, copy_wait), and its transfer's time beyond the link's (link_bps: the
 * link of the process's device; longest: longest_kernel() of the process).
 */
static int add_sites(const cs_analysis *a, const cs_steps *s, const struct fact_waits *dd,
		     const struct fact_waits *cw, const int64_t *copy_wait, const int32_t *steps,
		     int32_t nsteps, double link_bps, int64_t longest, cs_report_finding *f)
{
	struct ru_sites u = {0};
	int64_t *wait_cost = calloc((size_t)a->nsyncs + 1, sizeof(*wait_cost));
	int rc = CS_ERR_NOMEM;

	if (!wait_cost)
		return CS_ERR_NOMEM;
	for (int64_t i = 0; i < cw->n; i++)
		if (cw->v[i].step >= 0)
			wait_cost[cw->v[i].sync] = fact_wait_cost(&cw->v[i]);
	for (int64_t i = 0; i < a->ncopies; i++) {
		const cs_a_copy *c = &a->copies[i];
		int64_t cost = 0;
		int32_t st;

		st = charged_step(a, s, dd, c);
		if (st < 0)
			continue;
		if (c->launch_end != CS_TS_UNKNOWN && c->launch_end > c->launch_start)
			cost = fact_gpu_idle(a, s->pid, c->launch_start, c->launch_end);
		if (copy_wait[i] >= 0)
			cost = cs_sat_add(cost, wait_cost[copy_wait[i]]);
		cost = cs_sat_add(cost, slow_transfer(a, c, link_bps, longest));
		if (ru_sites_add(&u, -1, c->launch_tid, c->stack_id, st, cost))
			goto out;
	}
	rc = ru_sites_evidence(f->evidence, &u, steps, nsteps, MAX_SITES, &f->stack_id);
out:
	ru_sites_free(&u);
	free(wait_cost);
	return rc;
}

int cs_rule_pageable_memcpy_check(cs_rule_ctx *ctx, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	struct cs_rule_cache own = {0};
	const struct fact_waits *dd = NULL;
	struct step_sum *sum = NULL;
	int64_t *idle = NULL, *tmp = NULL, any = 0;
	const int64_t *by_cause = NULL;
	int32_t *steps = NULL, nsteps = 0, steady = cs_steps_steady(s);
	cs_report_finding *f = NULL;
	struct ru_recur r;
	const struct fact_waits *cw = NULL;
	const int64_t *copy_wait = NULL;
	char title[512], b1[32], b2[32], b3[128] = "", b4[160] = "";
	int32_t link_dev = -1;
	double bps = 0, link_bps = 0, pinned_bps = 0;
	int64_t longest = 0; /* longest_kernel(), once a link is known */
	cs_edit *edit = NULL; /* the fix as an edit of the run (docs/replay.md) */
	int rc;

	if (steady <= 0)
		return 0;
	for (int64_t i = 0; i < a->ncopies && !any; i++)
		any = a->copies[i].pid == s->pid && is_pageable(&a->copies[i]);
	if (!any)
		return 0;
	rc = CS_ERR_NOMEM;
	sum = ru_recur_arrays(s, sizeof(*sum), &idle, &tmp);
	if (!sum)
		goto out;
	if (ru_cached_d2h(ctx, &own, &dd) || ru_cached_idle_by_cause(ctx, &own, &by_cause))
		goto out;
	if (ru_cached_host_waits(ctx, &own, NULL, &cw) ||
	    ru_cached_pageable_copy_waits(ctx, &own, &copy_wait))
		goto out;
	for (int64_t i = 0; i < a->ncopies; i++) {
		const cs_a_copy *c = &a->copies[i];
		struct step_sum *x;
		int32_t st;

		st = charged_step(a, s, dd, c);
		if (st < 0)
			continue;
		x = &sum[st];
		x->copies++;
		x->h2d += c->copy_kind == CS_COPY_HTOD;
		x->d2h += c->copy_kind == CS_COPY_DTOH;
		/* an Async call that the copy's code waited for at once was not non_blocking */
		x->nonblocking += c->is_async != 0 && copy_wait[i] < 0;
		cs_sat_accum(&x->bytes, c->bytes > 0 ? c->bytes : 0);
		if (c->launch_end != CS_TS_UNKNOWN && c->launch_end > c->launch_start)
			cs_sat_accum(&x->host_ns, c->launch_end - c->launch_start);
		if (c->end != CS_TS_UNKNOWN && c->start != CS_TS_UNKNOWN && c->end > c->start)
			cs_sat_accum(&x->copy_ns, c->end - c->start);
		if (c->device_id != link_dev) {
			link_dev = c->device_id;
			bps = link_bytes_per_s(a, s->pid, link_dev);
			if (bps > 0 && link_bps <= 0)
				longest = longest_kernel(a, s->pid);
			if (bps > 0)
				link_bps = bps;
			pinned_bps = pinned_bytes_per_s(a, s->pid, link_dev, bps);
		}
		cs_sat_accum(&x->slow_ns, slow_transfer(a, c, bps, longest));
		/* pinned and non_blocking: the call holds the host no longer than an asynchronous
		 * one, and the transfer runs at the link's speed (when known and faster) */
		if (cs_edit_add(&edit, CS_EDIT_ASYNC, CS_EDIT_COPY, i, 0))
			goto out;
		if (c->bytes > 0 && c->start != CS_TS_UNKNOWN && c->end != CS_TS_UNKNOWN &&
		    c->end > c->start &&
		    (double)c->bytes * 1e9 / pinned_bps < (double)(c->end - c->start) &&
		    cs_edit_add(&edit, CS_EDIT_GPU_TIME, CS_EDIT_COPY, i,
				(int64_t)((double)c->bytes * 1e9 / pinned_bps)))
			goto out;
	}
	/* the idle of a step charged to pageable copies, in the steps that made one */
	for (int32_t i = 0; i < s->n; i++)
		sum[i].idle_ns = sum[i].copies
					 ? by_cause[(size_t)i * CS_IDLE_NCAUSES + CS_IDLE_PAGEABLE]
					 : 0;
	/* and the idle after the wait a blocking copy made right after its call, which drained the
	 * queue (PyTorch's .to(device) of a pageable tensor): what sync-call would charge otherwise
	 */
	for (int64_t i = 0; i < cw->n; i++) {
		const struct fact_wait *w = &cw->v[i];

		if (w->step >= 0 && sum[w->step].copies && fact_wait_cost(w) > 0) {
			cs_sat_accum(&sum[w->step].idle_ns, fact_wait_cost(w));
			sum[w->step].waits++;
		}
		if (w->step >= 0 && sum[w->step].copies &&
		    cs_edit_add(&edit, CS_EDIT_NO_WAIT, CS_EDIT_SYNC, w->sync, 0))
			goto out;
	}
	/* the cost: the idle, and the transfers' time beyond the link's */
	for (int32_t i = 0; i < s->n; i++)
		idle[i] = cs_sat_add(sum[i].idle_ns, sum[i].slow_ns);
	rc = ru_recur_find(s, ctx->step_median, idle, 1, MIN_STEPS, MIN_STEP_SHARE, MIN_RARE_STEPS,
			   MIN_LOSS_SHARE, tmp, &steps, &nsteps, &r);
	if (rc <= 0)
		goto out;

	rc = CS_ERR_NOMEM;
	{
		int64_t per = ru_median_field(sum, sizeof(*sum), steps, nsteps,
					      offsetof(struct step_sum, copies), tmp),
			nb = ru_median_field(sum, sizeof(*sum), steps, nsteps,
					     offsetof(struct step_sum, nonblocking), tmp),
			bytes = ru_median_field(sum, sizeof(*sum), steps, nsteps,
						offsetof(struct step_sum, bytes), tmp);
		char near[200] = "";

		int64_t nw = ru_median_field(sum, sizeof(*sum), steps, nsteps,
					     offsetof(struct step_sum, waits), tmp);

		if (nb > 0)
			snprintf(b3, sizeof(b3), ", %lld of them non_blocking", (long long)nb);
		else if (nw > 0)
			snprintf(b3, sizeof(b3),
				 ", blocking: each waits for all the GPU work queued before it");
		{
			char steps_near[96];

			/* one of the two: the cost's margin first */
			ru_recur_near_text(&r, near, sizeof(near), steps_near, sizeof(steps_near));
			if (!near[0])
				snprintf(near, sizeof(near), "%s", steps_near);
		}
		int64_t slow = ru_median_field(sum, sizeof(*sum), steps, nsteps,
					       offsetof(struct step_sum, slow_ns), tmp);

		if (slow > 0) {
			char b5[32], b6[32];

			snprintf(
				b4, sizeof(b4),
				" and transfer slower than the PCIe link allows (%s a step, %s of "
				"it beyond the link's time)",
				ru_fmt_ns(b5, sizeof(b5),
					  ru_median_field(sum, sizeof(*sum), steps, nsteps,
							  offsetof(struct step_sum, copy_ns), tmp)),
				ru_fmt_ns(b6, sizeof(b6), slow));
		}
		if (r.recurring)
			snprintf(title, sizeof(title),
				 "%lld cop%s of pageable host memory per step (%s%s) hold the "
				 "host%s: "
				 "%s of GPU %s per step (%.1f%%)%s",
				 (long long)per, per == 1 ? "y" : "ies",
				 ru_fmt_bytes(b2, sizeof(b2), bytes), b3, b4,
				 ru_fmt_ns(b1, sizeof(b1), r.lost), slow > 0 ? "time lost" : "idle",
				 r.share * 100, near);
		else {
			char rare[200];

			ru_recur_rare_text(&r, nsteps,
					   ru_median_field(sum, sizeof(*sum), steps, nsteps,
							   offsetof(struct step_sum, idle_ns), tmp),
					   rare, sizeof(rare));
			snprintf(title, sizeof(title),
				 "copies of pageable host memory hold the host %s%s", rare, near);
		}
	}
	f = ru_recur_finding(
		RULE_ID, &r, title,
		"Copy from and to pinned host memory: DataLoader(pin_memory=True), "
		"tensor.pin_memory() or a pinned buffer made once (torch.empty(..., "
		"pin_memory=True)) and reused with copy_(); then non_blocking=True lets the host "
		"go on launching while the copy runs. non_blocking=True alone does nothing for "
		"pageable memory.",
		steps, nsteps);
	if (!f)
		goto out;
	/* the fix as an edit of the run: the finding's from now on */
	f->edit = edit;
	edit = NULL;
	for (int64_t i = 0; i < a->ncopies; i++) {
		const cs_a_copy *c = &a->copies[i];
		int32_t st;

		st = charged_step(a, s, dd, c);
		if (st < 0 || idle[st] == 0)
			continue;
		if (f->first == CS_TS_UNKNOWN)
			f->first = c->launch_start;
		f->last = c->launch_end != CS_TS_UNKNOWN ? c->launch_end : c->launch_start;
	}
	if (add_evidence(a, s, dd, sum, steps, nsteps, link_bps, tmp, f) ||
	    add_sites(a, s, dd, cw, copy_wait, steps, nsteps, link_bps, longest, f))
		goto out;
	ru_recur_evidence(f->evidence, &r, nsteps);
	rc = 0;
out:
	rc = ru_finish(ctx, f, rc, err);
	cs_edit_free(edit);
	ru_cache_free(&own);
	free(sum);
	free(steps);
	return rc;
}
