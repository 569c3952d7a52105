/* launch_calls.c - the launch calls of a process, by start (facts/launch_calls.h). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/error.h"
#include "cuscope/grow.h"
#include "cuscope/sort.h"
#include "launch_calls.h"

/* Buckets of start times: about this many calls each on an even spread. */
#define BUCKET_CALLS 1024

/* A call as the scans take it: its start, end and thread. */
struct call {
	int64_t start, end;
	uint32_t tid;
};

/* Call i of pid, of its kernels then its copies, into *c: 1, or 0 when its start is not known
 * or it is another process's. */
static int call_at(const cs_analysis *a, uint32_t pid, int64_t i, struct call *c)
{
	if (i < a->nkernels) {
		const cs_a_kernel *k = &a->kernels[i];

		*c = (struct call){k->launch_start, k->launch_end, k->launch_tid};
		return k->pid == pid && k->launch_start != CS_TS_UNKNOWN;
	} else {
		const cs_a_copy *y = &a->copies[i - a->nkernels];

		*c = (struct call){y->launch_start, y->launch_end, y->launch_tid};
		return y->pid == pid && y->launch_start != CS_TS_UNKNOWN;
	}
}

/* Call c as the fact keeps it, at *v (its end in out->far when too far); 0, or CS_ERR_NOMEM. */
static int keep(struct fact_launch_calls *out, const struct call *c, struct fact_launch_call *v)
{
	int64_t rel;

	v->start = c->start;
	v->tid = c->tid;
	if (c->end == CS_TS_UNKNOWN) {
		v->end_rel = FACT_CALL_END_UNKNOWN;
	} else if (!__builtin_sub_overflow(c->end, c->start, &rel) && rel > FACT_CALL_END_FAR &&
		   rel <= INT32_MAX) {
		v->end_rel = (int32_t)rel;
	} else {
		if (out->nfar >= UINT32_MAX ||
		    cs_grow((void **)&out->far, &out->far_cap, out->nfar + 1, sizeof(*out->far)))
			return CS_ERR_NOMEM;
		out->far[out->nfar].end = c->end;
		out->far[out->nfar].tid = c->tid;
		v->end_rel = FACT_CALL_END_FAR;
		v->tid = (uint32_t)out->nfar++;
	}
	return 0;
}

/*
 * The calls of pid, kernels then copies, each to the bucket of its start ((start - t0) >> shift,
 * the starts before t0 in the first and after t1 in the last): with place 0 counted in at[], else
 * written at out->v[at[bucket]++]. 0, or CS_ERR_NOMEM.
 */
static int place(const cs_analysis *a, uint32_t pid, int64_t t0, int64_t t1, int shift,
		 int64_t *at, struct fact_launch_calls *out, int put)
{
	struct call c;

	for (int64_t i = 0; i < a->nkernels + a->ncopies; i++) {
		int64_t b, t;

		if (!call_at(a, pid, i, &c))
			continue;
		t = c.start < t0 ? t0 : c.start > t1 ? t1 : c.start;
		b = (int64_t)((uint64_t)(t - t0) >> shift);
		if (!put)
			at[b]++;
		else if (keep(out, &c, &out->v[at[b]++]))
			return CS_ERR_NOMEM;
	}
	return 0;
}

/* The earliest and latest known launch start of pid's work; how many calls there are. */
static int64_t span(const cs_analysis *a, uint32_t pid, int64_t *t0, int64_t *t1)
{
	struct call c;
	int64_t n = 0;

	*t0 = INT64_MAX;
	*t1 = INT64_MIN;
	for (int64_t i = 0; i < a->nkernels + a->ncopies; i++) {
		if (!call_at(a, pid, i, &c))
			continue;
		*t0 = c.start < *t0 ? c.start : *t0;
		*t1 = c.start > *t1 ? c.start : *t1;
		n++;
	}
	return n;
}

int fact_launch_calls(const cs_analysis *a, uint32_t pid, struct fact_launch_calls *out)
{
	static const cs_sort_key by_start = {offsetof(struct fact_launch_call, start), CS_KEY_I64};
	int64_t t0 = a->trace_start, t1 = a->trace_end, n = a->nkernels + a->ncopies, nb, *at;
	int shift = 0;

	memset(out, 0, sizeof(*out));
	/* buckets over the trace's span, sized for every kernel and copy: no pass to find the span
	 * of the calls and their number (any buckets in the order of the starts give the same
	 * order); the calls' own span where the trace's is not known */
	if (t0 == CS_TS_UNKNOWN || t1 == CS_TS_UNKNOWN || t1 < t0)
		n = span(a, pid, &t0, &t1);
	if (n == 0 || t1 < t0) {
		out->v = cs_big_alloc(sizeof(*out->v));
		return out->v ? 0 : CS_ERR_NOMEM;
	}
	/*
	 * Sorted as a bucket sort makes it, straight into place: the calls go to buckets of start
	 * times in their order (kernels, then copies), and each bucket is sorted alone, stably.
	 * That is the order of a stable sort of the whole, without a second array as large (a
	 * radix sort's: 200 MiB for the 8 million calls of the 10-million-event trace).
	 */
	while (((uint64_t)(t1 - t0) >> shift) >= (uint64_t)(n / BUCKET_CALLS + 1))
		shift++;
	nb = (int64_t)((uint64_t)(t1 - t0) >> shift) + 1;
	at = calloc((size_t)nb + 1, sizeof(*at));
	if (!at)
		return CS_ERR_NOMEM;
	place(a, pid, t0, t1, shift, at, out, 0);
	/* at[b]: where bucket b begins, then (after the second pass) where the next begins */
	for (int64_t b = 0; b < nb; b++) {
		int64_t c = at[b];

		at[b] = out->n;
		out->n += c;
	}
	out->v = cs_big_alloc((size_t)(out->n + 1) * sizeof(*out->v));
	if (!out->v) {
		free(at);
		out->n = 0;
		return CS_ERR_NOMEM;
	}
	if (place(a, pid, t0, t1, shift, at, out, 1)) {
		free(at);
		fact_launch_calls_free(out);
		return CS_ERR_NOMEM;
	}
	for (int64_t b = 0; b < nb; b++) {
		int64_t from = b > 0 ? at[b - 1] : 0;

		cs_sort_records(out->v + from, (size_t)(at[b] - from), sizeof(*out->v), &by_start,
				1);
	}
	free(at);
	return 0;
}

void fact_launch_calls_free(struct fact_launch_calls *f)
{
	free(f->v);
	free(f->far);
	memset(f, 0, sizeof(*f));
}
