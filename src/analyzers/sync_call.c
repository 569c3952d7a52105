/*
 * sync_call.c - the sync-call rule: inside steady-state steps, an explicit host wait
 * (`torch.cuda.synchronize()`, `stream.synchronize()`, `event.synchronize()`,
 * cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize) with no device-to-host copy
 * to wait for, that drains the GPU's queue, so that the GPU idles until the host launches again.
 * It is d2h-sync's complement: a wait that waited for a device-to-host copy is d2h-sync's, never
 * this rule's, and the allocator's own waits (a release of device memory follows them) are the
 * memory rules'.
 *
 * The waits and the idle after each come from ru_cached_host_waits(); this file keeps the waits
 * that cost GPU time, decides whether they recur in the steady steps and writes the finding.
 * docs/rules/sync-call.md has the decision, its thresholds and the measured values.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/grow.h"
#include "cuscope/sort.h"

#include "d2h_waits.h"
#include "cache.h"
#include "edits.h"
#include "finding_kit.h"
#include "recurrence.h"
#include "wait_evidence.h"
#include "rules.h"
#include "cuscope/checked.h"

#define RULE_ID RULE_ID_SYNC_CALL

/* A window that d2h-sync charges: [s, e) of a costly wait of a steady step. */
struct window {
	int64_t s, e;
};

/*
 * Leave out a wait whose charged window overlaps one that d2h-sync charges (waits of several
 * threads ending out of order): the same idle is never reported twice. Each wait of w is held
 * against the windows by start with the latest end among those that start before its window
 * ends, not against every window (both lists have a wait a step or more). 0 or CS_ERR_NOMEM.
 */
static int drop_d2h_windows(const struct fact_waits *dd, struct fact_waits *w)
{
	static const cs_sort_key by_start = {offsetof(struct window, s), CS_KEY_I64};
	struct window *y = malloc(((size_t)dd->n + 1) * sizeof(*y));
	int64_t m = 0, ny = 0;

	if (!y)
		return CS_ERR_NOMEM;
	for (int64_t j = 0; j < dd->n; j++)
		if (fact_wait_cost(&dd->v[j]) > 0 && dd->v[j].step >= 0)
			y[ny++] = (struct window){dd->v[j].idle_start, dd->v[j].window_end};
	cs_sort_records(y, (size_t)ny, sizeof(*y), &by_start, 1);
	/* y[j].e: the latest end of y[0..j] */
	for (int64_t j = 1; j < ny; j++)
		if (y[j - 1].e > y[j].e)
			y[j].e = y[j - 1].e;
	for (int64_t i = 0; i < w->n; i++) {
		const struct fact_wait *x = &w->v[i];
		/* lo: how many windows start before x's window ends */
		int64_t lo = x->cost > 0 ? cs_lower_bound_i64(y, sizeof(*y), ny, x->window_end) : 0;

		if (x->cost > 0 && lo > 0 && x->idle_start < y[lo - 1].e)
			continue;
		w->v[m++] = *x;
	}
	w->n = m;
	free(y);
	return 0;
}

int cs_rule_sync_call_check(cs_rule_ctx *ctx, cs_error *err)
{
	struct cs_rule_cache own = {0};
	const struct fact_waits *dd, *all;
	struct fact_waits waits = {0};
	int rc;

	if (cs_steps_steady(ctx->steps) <= 0)
		return 0;
	rc = ru_cached_d2h(ctx, &own, &dd);
	if (!rc)
		rc = ru_cached_host_waits(ctx, &own, &all, NULL);
	if (!rc && all->n > 0) {
		/* a copy: drop_d2h_windows() leaves out some, and the cache's are the other rules'
		 * too */
		waits = *all;
		waits.v = malloc((size_t)all->n * sizeof(*waits.v));
		if (waits.v)
			memcpy(waits.v, all->v, (size_t)all->n * sizeof(*waits.v));
		else
			rc = CS_ERR_NOMEM;
	}
	if (!rc && waits.n > 0 && drop_d2h_windows(dd, &waits))
		rc = CS_ERR_NOMEM;
	if (rc)
		rc = cs_error_set(err, rc, "out of memory");
	else
		rc = ru_wait_report(
			ctx, RULE_ID, "explicit synchronize drains",
			"Remove the synchronize from the step: CUDA orders the work of a stream by "
			"itself; order streams with events (wait_stream, record_stream, "
			"Event.wait) instead of a host wait; to time steps, record CUDA events and "
			"read their elapsed time a step later or after the loop; synchronize only "
			"where the host must see the result.",
			&waits, NULL, 0, 1, err);
	ru_cache_free(&own);
	fact_waits_free(&waits);
	return rc;
}
