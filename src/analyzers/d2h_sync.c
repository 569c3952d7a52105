/*
 * d2h_sync.c - the d2h-sync rule: inside steady-state steps, a device-to-host copy followed by a
 * host wait (`.item()`, `.cpu()`, `.tolist()`, `nonzero()`, `if (t != 0).all():`) that drains
 * the GPU's queue, so that the GPU idles until the host launches again.
 *
 * The waits and the idle after each come from fact_d2h_waits(); this file keeps the waits that cost
 * GPU time, decides whether they recur in the steady steps and writes the finding.
 * docs/rules/d2h-sync.md has the decision, its thresholds and the measured values.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/sort.h"
#include "cuscope/grow.h"

#include "d2h_waits.h"
#include "cache.h"
#include "edits.h"
#include "finding_kit.h"
#include "h2d_stalls.h"
#include "recurrence.h"
#include "wait_evidence.h"
#include "rules.h"
#include "cuscope/checked.h"

#define RULE_ID RULE_ID_D2H_SYNC

/*
 * The windows in which the host was preparing a copy to the device without making any CUDA call
 * (fact_h2d_stalls(): the next batch, dataloader-stall's, or a tensor made on the host,
 * host-created-tensor's), sorted: [from, to) each. They are GPU idle before distinct copies, so
 * they do not overlap, and sorted by end they are sorted by start too. NULL (and 0) when there are
 * none.
 */
static int64_t *stall_windows(const cs_analysis *a, const struct fact_h2d_stalls *h, int64_t *n)
{
	int64_t *v;

	*n = 0;
	if (h->n == 0)
		return NULL;
	v = malloc((size_t)h->n * 2 * sizeof(*v));
	if (!v)
		return NULL;
	for (int64_t i = 0; i < h->n; i++) {
		int64_t e = a->copies[h->v[i].copy].launch_start;

		v[2 * i] = e;
		v[2 * i + 1] = cs_sat_sub(e, h->v[i].stall_ns);
	}
	{
		static const cs_sort_key from = {0, CS_KEY_I64};

		cs_sort_records(v, (size_t)h->n, 2 * sizeof(*v), &from, 1);
	}
	*n = h->n;
	return v;
}

/*
 * The part of [t0, t1) (the idle after a wait) inside those windows. Without the wait the host
 * would have begun that preparation earlier, by at most the time it was held in the wait, and the
 * GPU would have idled for the rest of it anyway: that rest is the input's idle, not the wait's.
 */
static int64_t stall_overlap(const int64_t *v, int64_t n, int64_t t0, int64_t t1)
{
	int64_t lo = 0, hi = n, sum = 0;

	if (t1 <= t0 || t0 == CS_TS_UNKNOWN)
		return 0;
	while (lo < hi) { /* the first window that ends after t0 */
		int64_t mid = lo + (hi - lo) / 2;

		if (v[2 * mid] <= t0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (int64_t i = lo; i < n && v[2 * i + 1] < t1; i++) {
		int64_t b = v[2 * i + 1] > t0 ? v[2 * i + 1] : t0,
			e = v[2 * i] < t1 ? v[2 * i] : t1;

		if (e > b)
			cs_sat_accum(&sum, e - b);
	}
	return sum;
}

int cs_rule_d2h_sync_check(cs_rule_ctx *ctx, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	struct cs_rule_cache own = {0};
	const struct fact_waits *d;
	const struct fact_h2d_stalls *h = NULL;
	int64_t *taken = NULL, *win = NULL, nwin = 0;
	int rc;

	if (cs_steps_steady(ctx->steps) <= 0)
		return 0;
	rc = ru_cached_d2h(ctx, &own, &d);
	if (!rc)
		rc = ru_cached_h2d_stalls(ctx, &own, &h);
	if (rc) {
		ru_cache_free(&own);
		return cs_error_set(err, rc, "out of memory");
	}
	if (d->n == 0)
		goto out;
	win = stall_windows(a, h, &nwin);
	taken = calloc((size_t)d->n, sizeof(*taken));
	if ((h->n > 0 && !win) || !taken) {
		rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (int64_t i = 0; i < d->n; i++) {
		const struct fact_wait *w = &d->v[i];
		const cs_a_sync *y = &a->syncs[w->sync];

		if (w->step >= 0 && fact_wait_cost(w) > 0) {
			/* the host could have begun preparing the input while it was held in the
			 * wait: only the preparation beyond that time was not the wait's doing */
			int64_t held = y->end != CS_TS_UNKNOWN && y->end > y->start
					       ? cs_sat_sub(y->end, y->start)
					       : 0;

			taken[i] = stall_overlap(win, nwin, w->idle_start, w->idle_end);
			taken[i] = taken[i] > held ? taken[i] - held : 0;
		}
	}
	rc = ru_wait_report(
		ctx, RULE_ID, "device-to-host copy and host wait drain",
		"Keep the value on the GPU (accumulate losses and metrics in device "
		"tensors, use torch.where or masks instead of nonzero/indexing by mask, "
		"ignore_index instead of a host check) and read it every N steps or after "
		"the loop; when a value is needed on the host, copy it with "
		"non_blocking=True into pinned memory and read it a step later.",
		d, taken, 1, 0, err);
out:
	ru_cache_free(&own);
	free(taken);
	free(win);
	return rc;
}
