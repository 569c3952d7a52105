/*
 * d2h_waits.c - the host waits of a process with the GPU idle after each: those that waited for a
 * device-to-host copy, and the others (facts/d2h_waits.h).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/checked.h"
#include "cuscope/grow.h"
#include "cuscope/sort.h"
#include "d2h_waits.h"
#include "gpu_order.h"

struct launch_ref {
	int64_t t; /* launch time */
	int64_t i; /* copy index */
};

/* by launch time, then index */
static const cs_sort_key launch_ref_keys[] = {
	{offsetof(struct launch_ref, t), CS_KEY_I64},
	{offsetof(struct launch_ref, i), CS_KEY_I64},
};

/* First element of v[0..n) with t >= key. */
static int64_t launch_lower(const struct launch_ref *v, int64_t n, int64_t key)
{
	return cs_lower_bound_i64(v, sizeof(*v), n, key);
}

static int is_d2h_copy(const cs_a_copy *c)
{
	if (c->is_memset)
		return 0;
	return c->copy_kind == CS_COPY_DTOH || c->copy_kind == CS_COPY_ATOH;
}

static int64_t wait_end(const cs_a_sync *y)
{
	return y->end != CS_TS_UNKNOWN && y->end >= y->start ? y->end : y->start;
}

/*
 * d as the wait of the sync y, a->syncs[i], in the steps s: its steady step (or -1), no copy
 * (first_copy -1, no copies or bytes), and its idle window empty at the wait's end until
 * idle_pass() measures it.
 */
static void wait_init(struct fact_wait *d, const cs_steps *s, const cs_a_sync *y, int64_t i)
{
	memset(d, 0, sizeof(*d));
	d->sync = i;
	d->first_copy = -1;
	d->step = cs_steps_find_steady(s, y->start);
	d->idle_start = d->idle_end = d->window_end = wait_end(y);
}

/* Order of waits by the time they ended (ties by index). */
struct wait_ref {
	int64_t end;
	int64_t i; /* in out->v */
};

/* by end, then index */
static const cs_sort_key wait_ref_keys[] = {
	{offsetof(struct wait_ref, end), CS_KEY_I64},
	{offsetof(struct wait_ref, i), CS_KEY_I64},
};

/* Start of the first host wait of pid that starts at or after t; INT64_MAX when none. */
static int64_t next_host_wait(const cs_analysis *a, uint32_t pid, int64_t t, int64_t *hint)
{
	for (int64_t i = cs_lower_bound_near_i64(a->syncs, sizeof(*a->syncs), a->nsyncs, t, hint);
	     i < a->nsyncs; i++)
		if (a->syncs[i].pid == pid && a->syncs[i].host_wait)
			return a->syncs[i].start;
	return INT64_MAX;
}

/* Work scanned at most while the queue refills after one wait. */
#define REFILL_MAX_WORK 4096

/*
 * The starved gaps after the work that ended a wait's idle (the iterator stands after it, reach
 * is the end of the GPU work so far): each next piece of work launched after the GPU ran out of
 * work, until one is launched while the GPU is still busy (the host is ahead again) or at or
 * after stop. lead: the time the host waited, the most the refill can be charged; the wait's
 * window (window_end) ends where that much is counted, so that the gaps after it stay
 * launch-starvation's (a host-bound program starves the GPU without the read too).
 */
static void refill(struct fact_gpu_iter it, int64_t reach, int64_t stop, int64_t lead, int64_t lag,
		   struct fact_wait *d)
{
	struct fact_gpu_work w;
	int64_t sum = 0;
	int32_t gaps = 0;

	d->window_end = d->idle_end;
	for (int n = 0; n < REFILL_MAX_WORK && fact_gpu_next(&it, &w); n++) {
		if (cs_launch_time(w.launch_start, w.start) >= stop)
			break;
		/* queued while the GPU was busy (or not known to be launched): the host is ahead
		 * again */
		if (fact_gpu_queued(&w, lag, reach))
			break;
		if (w.start > reach) {
			gaps++;
			if (sum + (w.start - reach) >= lead) {
				/* the wait's lead is used up: the rest of the refill is the host's
				 * own pace, launch-starvation's to judge */
				d->window_end = reach + (lead - sum);
				sum = lead;
				break;
			}
			sum += w.start - reach;
			d->window_end = w.start;
		}
		if (w.end > reach)
			reach = w.end;
	}
	d->refill_ns = sum < lead ? sum : lead;
	d->refill_gaps = gaps;
}

int fact_gpu_floor(const cs_analysis *a, uint32_t pid, struct fact_floor *out)
{
	struct fact_gpu_iter it;
	struct fact_gpu_work w;
	int64_t *gaps = NULL, n = 0;
	size_t cap = 0;
	int64_t reach = CS_TS_UNKNOWN;

	out->ns = out->pairs = 0;
	out->lag = fact_gpu_launch_lag(a, pid);
	fact_gpu_iter_init(&it, a, pid);
	while (fact_gpu_next(&it, &w)) {
		int64_t launched = fact_gpu_launched(&w);

		if (reach != CS_TS_UNKNOWN && launched != CS_TS_UNKNOWN && launched < reach &&
		    fact_gpu_queued(&w, out->lag, reach) && w.start >= reach) {
			if (cs_grow((void **)&gaps, &cap, (size_t)n + 1, sizeof(*gaps))) {
				free(gaps);
				return CS_ERR_NOMEM;
			}
			gaps[n++] = w.start - reach;
		}
		if (reach == CS_TS_UNKNOWN || w.end > reach)
			reach = w.end;
	}
	out->pairs = n;
	out->ns = cs_median_select_i64(gaps, n);
	free(gaps);
	return 0;
}

/* The device-to-host copies of pid, by launch time: *n of them into *out, freed with free(). 0,
 * or CS_ERR_NOMEM. */
static int d2h_copies(const cs_analysis *a, uint32_t pid, struct launch_ref **out, int64_t *n)
{
	struct launch_ref *cp = NULL;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	for (int64_t i = 0; i < a->ncopies; i++) {
		const cs_a_copy *c = &a->copies[i];

		if (c->pid != pid || !is_d2h_copy(c) || c->start == CS_TS_UNKNOWN)
			continue;
		if (cs_grow((void **)&cp, &cap, (size_t)*n + 1, sizeof(*cp))) {
			free(cp);
			*n = 0;
			return CS_ERR_NOMEM;
		}
		cp[*n].t = cs_launch_time(c->launch_start, c->start);
		cp[*n].i = i;
		(*n)++;
	}
	cs_sort_records(cp, (size_t)*n, sizeof(*cp), launch_ref_keys, 2);
	*out = cp;
	return 0;
}

/* What fact_host_waits() keeps a wait for. */
enum { HW_NONE, HW_SYNC, HW_COPY };

/*
 * The idle after each wait of out (out->n > 0), and out's floor, in one pass over the GPU work of
 * the steps' process: the first work launched after a wait ended is the work that ends its idle;
 * everything that started before it (the running reach) was queued before. keep (per wait of out,
 * fact_host_waits()'s; NULL: every wait is kept) leaves a wait kept for nothing without refill
 * and cost, and caps an explicit synchronize's cost. 0, or CS_ERR_NOMEM.
 */
static int idle_pass(const cs_analysis *a, const cs_steps *s, const struct fact_floor *floor,
		     struct fact_waits *out, const char *keep)
{
	struct wait_ref *order;
	struct fact_gpu_iter it;
	struct fact_gpu_work w;
	int64_t q = 0, reach = CS_TS_UNKNOWN;
	int64_t last_next = -1, sync_hint = 0;
	int last_next_kernel = 0;
	uint32_t pid = s->pid;

	out->floor_ns = floor->ns;
	out->floor_pairs = floor->pairs;
	order = malloc((size_t)out->n * sizeof(*order));
	if (!order)
		return CS_ERR_NOMEM;
	for (int64_t i = 0; i < out->n; i++) {
		order[i].end = wait_end(&a->syncs[out->v[i].sync]);
		order[i].i = i;
	}
	cs_sort_records(order, (size_t)out->n, sizeof(*order), wait_ref_keys, 2);
	fact_gpu_iter_init(&it, a, pid);
	while (q < out->n && fact_gpu_next(&it, &w)) {
		int64_t launched = cs_launch_time(w.launch_start, w.start);

		while (q < out->n && launched >= order[q].end) {
			struct fact_wait *d = &out->v[order[q].i];
			const cs_a_sync *y = &a->syncs[d->sync];
			int64_t from = y->start, stop;

			if (reach != CS_TS_UNKNOWN && reach > from)
				from = reach;
			q++;
			if (last_next == w.index && last_next_kernel == w.is_kernel) {
				/* an earlier wait before this work has the idle already */
				d->idle_start = d->idle_end = d->window_end = w.start;
				continue;
			}
			last_next = w.index;
			last_next_kernel = w.is_kernel;
			d->idle_start = from;
			d->idle_end = w.start > from ? w.start : from;
			/* drained: all work queued before the wait had ended when it returned */
			d->drained = reach == CS_TS_UNKNOWN || reach <= wait_end(y);
			if (d->step < 0 || !d->drained || fact_wait_idle(d) <= out->floor_ns ||
			    (keep && keep[order[q - 1].i] == HW_NONE)) {
				d->window_end = d->idle_end;
				continue;
			}
			/* the GPU drained: charge the refill too, up to the time the host waited */
			stop = next_host_wait(a, pid, wait_end(y), &sync_hint);
			if (s->v[d->step].end < stop)
				stop = s->v[d->step].end;
			refill(it, w.end > from ? w.end : from, stop, wait_end(y) - y->start,
			       floor->lag, d);
			d->cost = cs_sat_add(fact_wait_idle(d), d->refill_ns);
			/* an explicit synchronize gives the host nothing it needs: without it the
			 * host would have gone on at once, its next launch that much earlier and no
			 * more, so the wait costs at most the time it held the host (a 5 us
			 * synchronize in the middle of host work costs 5 us, not the host work
			 * after it) */
			if (keep && keep[order[q - 1].i] == HW_SYNC &&
			    d->cost > wait_end(y) - y->start)
				d->cost = wait_end(y) - y->start;
		}
		if (reach == CS_TS_UNKNOWN || w.end > reach)
			reach = w.end;
	}
	free(order);
	return 0;
}

int fact_d2h_waits(const cs_analysis *a, const cs_steps *s, const struct fact_floor *floor,
		   struct fact_waits *out)
{
	struct launch_ref *cp = NULL;
	int64_t ncp = 0, prev_end = CS_TS_UNKNOWN;
	uint32_t pid = s->pid;
	int rc = CS_ERR_NOMEM;

	memset(out, 0, sizeof(*out));
	if (d2h_copies(a, pid, &cp, &ncp))
		goto out;
	if (ncp == 0) {
		rc = 0;
		goto out;
	}

	/* the host waits that waited for one of them */
	for (int64_t i = 0; i < a->nsyncs; i++) {
		const cs_a_sync *y = &a->syncs[i];
		struct fact_wait *d;
		int64_t lo, hi, from, to;

		if (y->pid != pid || !y->host_wait || y->start == CS_TS_UNKNOWN)
			continue;
		if (y->type == CS_SYNC_MEMCPY) {
			/* a synchronous memcpy: the copy launched during the wait itself */
			from = y->start;
			to = wait_end(y) + 1;
		} else {
			/* a synchronize: the copies launched since the previous host wait */
			from = prev_end != CS_TS_UNKNOWN ? prev_end : INT64_MIN;
			to = wait_end(y);
		}
		if (prev_end == CS_TS_UNKNOWN || wait_end(y) > prev_end)
			prev_end = wait_end(y);
		lo = launch_lower(cp, ncp, from);
		hi = launch_lower(cp, ncp, to);
		if (hi <= lo)
			continue;
		if (out->n % 256 == 0) {
			struct fact_wait *nv =
				realloc(out->v, (size_t)(out->n + 256) * sizeof(*nv));

			if (!nv)
				goto out;
			out->v = nv;
		}
		d = &out->v[out->n++];
		wait_init(d, s, y, i);
		d->first_copy = cp[lo].i;
		d->copies = (int32_t)(hi - lo);
		for (int64_t j = lo; j < hi; j++)
			cs_sat_accum(&d->bytes, a->copies[cp[j].i].bytes);
	}
	if (out->n == 0) {
		rc = 0;
		goto out;
	}
	if (idle_pass(a, s, floor, out, NULL))
		goto out;
	rc = 0;
out:
	free(cp);
	if (rc)
		fact_waits_free(out);
	return rc;
}

void fact_waits_free(struct fact_waits *d)
{
	free(d->v);
	memset(d, 0, sizeof(*d));
}

/* ---- host waits with no device-to-host copy (sync-call) ---- */

/* Where the last searches of release_before_launch() ended: the waits come nearly in time order. */
struct at_hints {
	int64_t kernel, copy, memory;
};

/* 1 when a device memory release of pid comes after t and before the first GPU work of pid
 * launched at or after t (the host released memory right after a wait: the allocator's). */
static int release_before_launch(const cs_analysis *a, uint32_t pid, int64_t t, struct at_hints *h)
{
	int64_t next = INT64_MAX;

	for (int64_t i = cs_lower_bound_near_i64(a->kernels, sizeof(*a->kernels), a->nkernels, t,
						 &h->kernel);
	     i < a->nkernels; i++)
		if (a->kernels[i].pid == pid) {
			next = cs_launch_time(a->kernels[i].launch_start, a->kernels[i].start);
			break;
		}
	for (int64_t i = cs_lower_bound_near_i64(a->copies, sizeof(*a->copies), a->ncopies, t,
						 &h->copy);
	     i < a->ncopies; i++)
		if (a->copies[i].pid == pid) {
			int64_t l = cs_launch_time(a->copies[i].launch_start, a->copies[i].start);

			if (l < next)
				next = l;
			break;
		}
	for (int64_t i = cs_lower_bound_near_i64(a->memory, sizeof(*a->memory), a->nmemory, t,
						 &h->memory);
	     i < a->nmemory; i++) {
		const cs_a_memory *r = &a->memory[i];

		if (r->start >= next)
			break;
		if (r->pid == pid && cs_a_memory_is_device(r) &&
		    (r->op == CS_MEMOP_FREE || r->op == CS_MEMOP_VMM_RELEASE ||
		     r->op == CS_MEMOP_VMM_UNMAP))
			return 1;
	}
	return 0;
}

/*
 * The explicit host waits (sync) and the waits of blocking copies from pageable memory (copy) of
 * the steps' process, in one pass over all its host waits; copy_wait is
 * fact_pageable_copy_waits() of that process.
 */
int fact_host_waits(const cs_analysis *a, const cs_steps *s, const int64_t *copy_wait,
		    const struct fact_floor *floor, struct fact_waits *sync,
		    struct fact_waits *copy)
{
	struct fact_waits all = {0}, *out = &all;
	struct launch_ref *cp = NULL;
	char *keep = NULL;
	int64_t ncp = 0, prev_end = CS_TS_UNKNOWN, m = 0, ncopy = 0;
	size_t vcap = 0, kcap = 0;
	uint32_t pid = s->pid;
	char *of_copy = NULL; /* per sync: the wait of a blocking copy from pageable memory */
	struct at_hints hints = {0, 0, 0};
	int64_t lo_hint = 0, hi_hint = 0;
	int rc = CS_ERR_NOMEM;

	memset(sync, 0, sizeof(*sync));
	memset(copy, 0, sizeof(*copy));
	of_copy = calloc((size_t)(a->nsyncs > 0 ? a->nsyncs : 1), 1);
	if (!of_copy)
		goto out;
	for (int64_t i = 0; i < a->ncopies; i++)
		if (copy_wait[i] >= 0)
			of_copy[copy_wait[i]] = 1;
	if (d2h_copies(a, pid, &cp, &ncp))
		goto out;

	/* every host wait of the process competes for the idle that follows it; only the
	 * explicit ones (no copy to wait for, no allocator release after it) are kept, as a
	 * pageable copy's wait or as a wait of its own */
	for (int64_t i = 0; i < a->nsyncs; i++) {
		const cs_a_sync *y = &a->syncs[i];
		struct fact_wait *d;
		int64_t from, lo, hi;
		char mine = HW_NONE;

		if (y->pid != pid || !y->host_wait || y->start == CS_TS_UNKNOWN)
			continue;
		from = prev_end != CS_TS_UNKNOWN ? prev_end : INT64_MIN;
		lo = cs_lower_bound_near_i64(cp, sizeof(*cp), ncp, from, &lo_hint);
		hi = cs_lower_bound_near_i64(cp, sizeof(*cp), ncp, wait_end(y), &hi_hint);
		if (y->type != CS_SYNC_MEMCPY && hi <= lo &&
		    !release_before_launch(a, pid, wait_end(y), &hints))
			mine = of_copy[i] ? HW_COPY : HW_SYNC;
		if (prev_end == CS_TS_UNKNOWN || wait_end(y) > prev_end)
			prev_end = wait_end(y);
		if (cs_grow((void **)&out->v, &vcap, (size_t)out->n + 1, sizeof(*out->v)) ||
		    cs_grow((void **)&keep, &kcap, (size_t)out->n + 1, 1))
			goto out;
		keep[out->n] = mine;
		d = &out->v[out->n++];
		wait_init(d, s, y, i);
	}
	if (out->n == 0) {
		rc = 0;
		goto out;
	}
	/* the same pass as fact_d2h_waits(), over all the waits: the first wait to end before a
	 * piece of work has the idle before it, whichever rule that wait belongs to */
	if (idle_pass(a, s, floor, out, keep))
		goto out;
	for (int64_t i = 0; i < out->n; i++)
		ncopy += keep[i] == HW_COPY;
	if (ncopy > 0) {
		copy->v = malloc((size_t)ncopy * sizeof(*copy->v));
		if (!copy->v)
			goto out;
	}
	copy->floor_ns = out->floor_ns;
	copy->floor_pairs = out->floor_pairs;
	for (int64_t i = 0; i < out->n; i++) {
		if (keep[i] == HW_COPY)
			copy->v[copy->n++] = out->v[i];
		else if (keep[i] == HW_SYNC)
			out->v[m++] = out->v[i];
	}
	out->n = m;
	rc = 0;
out:
	free(cp);
	free(keep);
	free(of_copy);
	if (rc) {
		fact_waits_free(out);
		fact_waits_free(copy);
	} else {
		*sync = all;
	}
	return rc;
}
