/* pageable_copies.c - the wait after each pageable copy (facts/pageable_copies.h). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "cuscope/error.h"
#include "cuscope/sort.h"
#include "pageable_copies.h"

struct tid_call {
	uint32_t tid;
	int64_t t;
};

/* by thread, then time */
static const cs_sort_key tid_call_keys[] = {
	{offsetof(struct tid_call, tid), CS_KEY_U32},
	{offsetof(struct tid_call, t), CS_KEY_I64},
};

/* The first launch call of thread tid at or after t in the sorted calls, or INT64_MAX. */
static int64_t next_call(const struct tid_call *v, int64_t n, uint32_t tid, int64_t t)
{
	int64_t lo = 0, hi = n;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (v[mid].tid < tid || (v[mid].tid == tid && v[mid].t < t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].tid == tid ? v[lo].t : INT64_MAX;
}

static int is_pageable_h2d(const cs_a_copy *c)
{
	return !c->is_memset && (c->copy_kind == CS_COPY_HTOD || c->copy_kind == CS_COPY_HTOA) &&
	       c->src_kind == CS_MEM_PAGEABLE && c->launch_start != CS_TS_UNKNOWN &&
	       c->launch_end != CS_TS_UNKNOWN;
}

/* The launch calls of pid by thread, then start: *n of them into *out, freed with free(). */
static int tid_calls(const cs_analysis *a, uint32_t pid, struct tid_call **out, int64_t *n)
{
	struct tid_call *calls = malloc(((size_t)(a->nkernels + a->ncopies) + 1) * sizeof(*calls));

	*out = calls;
	*n = 0;
	if (!calls)
		return CS_ERR_NOMEM;
	for (int64_t i = 0; i < a->nkernels + a->ncopies; i++) {
		const cs_a_kernel *k = i < a->nkernels ? &a->kernels[i] : NULL;
		const cs_a_copy *c = k ? NULL : &a->copies[i - a->nkernels];
		int64_t t = k ? k->launch_start : c->launch_start;

		if ((k ? k->pid : c->pid) != pid || t == CS_TS_UNKNOWN)
			continue;
		calls[*n].tid = k ? k->launch_tid : c->launch_tid;
		calls[(*n)++].t = t;
	}
	cs_sort_records(calls, (size_t)*n, sizeof(*calls), tid_call_keys, 2);
	return 0;
}

int fact_pageable_copy_waits(const cs_analysis *a, uint32_t pid, int64_t **wait_of)
{
	struct tid_call *calls = NULL;
	int64_t n = 0, *w;

	w = malloc((size_t)(a->ncopies > 0 ? a->ncopies : 1) * sizeof(*w));
	if (!w)
		return CS_ERR_NOMEM;
	for (int64_t i = 0; i < a->ncopies; i++)
		w[i] = -1;
	for (int64_t i = 0; i < a->ncopies; i++) {
		const cs_a_copy *c = &a->copies[i];
		int64_t stop;

		if (c->pid != pid || !is_pageable_h2d(c))
			continue;
		/* every launch call of the process, sorted: made for the first pageable copy (many
		 * traces have none) */
		if (!calls && tid_calls(a, pid, &calls, &n)) {
			free(w);
			return CS_ERR_NOMEM;
		}
		/* the thread's next launch call after this copy's own */
		stop = next_call(calls, n, c->launch_tid, c->launch_start + 1);
		for (int64_t j = cs_analysis_sync_at(a, c->launch_end);
		     j < a->nsyncs && a->syncs[j].start < stop; j++) {
			const cs_a_sync *y = &a->syncs[j];

			if (y->pid != pid || y->tid != c->launch_tid)
				continue;
			if (y->host_wait)
				w[i] = j;
			break;
		}
	}
	free(calls);
	*wait_of = w;
	return 0;
}
