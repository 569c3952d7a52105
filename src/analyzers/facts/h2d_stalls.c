/*
 * h2d_stalls.c - the host-to-device copies asked for after the launching thread made no CUDA call
 * for far longer than its launch pace while the GPU ran out of work: a batch the training thread
 * prepared (dataloader-stall) or a tensor it made on the host in the middle of the step
 * (host-created-tensor). One pass finds them; each rule keeps the copies it owns
 * (facts/h2d_stalls.h says who owns which).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/sort.h"
#include "cuscope/grow.h"

#include "cuscope/checked.h"
#include "gpu_order.h"
#include "h2d_stalls.h"
#include "launch_calls.h"

/*
 * A stretch without CUDA calls is host work, not the host's launch pace, beyond this many robust
 * standard deviations (1.4826 median absolute deviations) over the median time between two launch
 * calls, as launch-starvation separates host work from launch overhead.
 */
#define FAR_K 5.0
/*
 * With steps from the kernel period, a copy is at the step boundary when at most this share of the
 * step's kernels (and at least BOUNDARY_MIN_KERNELS) were launched before it, or after it: the
 * period's phase is the loop's first kernel, which need not be the one right after the batch's
 * copy (in dataloader-stall-bad it was one kernel later).
 */
#define BOUNDARY_SHARE	     0.1
#define BOUNDARY_MIN_KERNELS 2

struct call {
	int64_t s, e;
	uint32_t tid;
};
/* by start (stable) */
static const cs_sort_key call_key = {offsetof(struct call, s), CS_KEY_I64};

static int push_call(struct call **v, int64_t *n, size_t *cap, int64_t s, int64_t e, uint32_t tid)
{
	if (s == CS_TS_UNKNOWN)
		return 0;
	if (e == CS_TS_UNKNOWN || e < s)
		e = s;
	if ((size_t)*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		struct call *nv = realloc(*v, nc * sizeof(*nv));

		if (!nv)
			return CS_ERR_NOMEM;
		*v = nv;
		*cap = nc;
	}
	(*v)[*n].s = s;
	(*v)[*n].e = e;
	(*v)[(*n)++].tid = tid;
	return 0;
}

/* An event or stream query that is not the end of a polling loop (load.c sets host_wait there). */
static int is_idle_query(const cs_a_sync *y)
{
	return (y->type == CS_SYNC_EVENT_QUERY || y->type == CS_SYNC_STREAM_QUERY) && !y->host_wait;
}

/* The API row of an event or stream query (its polling loops are kept as their sync rows). */
static int is_query_api(const cs_analysis *a, const cs_a_api *x)
{
	const char *name = cs_analysis_string(a, x->name_id);

	return name && (strstr(name, "EventQuery") || strstr(name, "StreamQuery"));
}

/* A launch call's end as the stalls take it: its start when unknown or earlier. */
static int64_t launch_end(const struct fact_launch_calls *lc, const struct fact_launch_call *c)
{
	int64_t end = fact_launch_call_end(lc, c);

	return end == CS_TS_UNKNOWN || end < c->start ? c->start : end;
}

/*
 * The recorded CUDA calls of process pid other than its launch calls (host waits, API rows), by
 * start, into *out (*nout of them, the longest *longest ns), and the host's launch pace from its
 * launch calls lc (by start): far is the median time from the end of one launch call to the start
 * of the next (0 where calls overlap) plus FAR_K robust standard deviations, measured over the
 * launch calls of the trace.
 */
static int collect_calls(const cs_analysis *a, uint32_t pid, const struct fact_launch_calls *lc,
			 struct call **out, int64_t *nout, int64_t *longest, int64_t *far)
{
	struct call *w = NULL;
	int64_t nw = 0, reach = CS_TS_UNKNOWN, usual;
	size_t wcap = 0;
	/* the gaps, at their final size: grown by doubling, millions were copied again and again */
	int64_t *d = malloc(((size_t)lc->n + 1) * sizeof(*d)), nd = 0;

	if (!d)
		return CS_ERR_NOMEM;
	/* the launch pace, from the launch calls alone (the kernels of one graph launch: once) */
	for (int64_t i = 0; i < lc->n; i++) {
		int64_t s = lc->v[i].start, e = launch_end(lc, &lc->v[i]);

		if (i > 0 && s == lc->v[i - 1].start)
			continue;
		if (reach != CS_TS_UNKNOWN)
			d[nd++] = s > reach ? s - reach : 0;
		if (reach == CS_TS_UNKNOWN || e > reach)
			reach = e;
	}
	/* millions of gaps, read in no order after: selected, not sorted */
	usual = cs_median_select_i64(d, nd);
	for (int64_t i = 0; i < nd; i++)
		d[i] = d[i] > usual ? d[i] - usual : usual - d[i];
	*far = usual + cs_sat_from_double(FAR_K * 1.4826 * (double)cs_median_select_i64(d, nd));
	free(d);

	/* Not the queries that found the work still running or returned at once outside a polling
	 * loop: they neither feed the GPU nor wait for it. PyTorch's pinned-memory allocator polls
	 * its blocks' events this way while the training thread pins a batch (DataLoader with
	 * pin_memory and no workers), in the middle of making the input. */
	for (int64_t i = 0; i < a->nsyncs; i++)
		if (a->syncs[i].pid == pid && !is_idle_query(&a->syncs[i]) &&
		    push_call(&w, &nw, &wcap, a->syncs[i].start, a->syncs[i].end, a->syncs[i].tid))
			goto nomem;
	for (int64_t i = 0; i < a->napis; i++)
		if (a->apis[i].pid == pid && !is_query_api(a, &a->apis[i]) &&
		    push_call(&w, &nw, &wcap, a->apis[i].start, a->apis[i].end, a->apis[i].tid))
			goto nomem;
	cs_sort_records(w, (size_t)nw, sizeof(*w), &call_key, 1);
	*longest = 0;
	for (int64_t i = 0; i < nw; i++)
		if (w[i].e - w[i].s > *longest)
			*longest = w[i].e - w[i].s;
	*out = w;
	*nout = nw;
	return 0;
nomem:
	free(w);
	return CS_ERR_NOMEM;
}

/* End of the last launch call of thread tid that started before t (lc by start, none longer than
 * longest), or CS_TS_UNKNOWN. */
static int64_t last_launch_end(const struct fact_launch_calls *lc, int64_t longest, uint32_t tid,
			       int64_t t)
{
	int64_t best = CS_TS_UNKNOWN, lo = cs_lower_bound_i64(lc->v, sizeof(*lc->v), lc->n, t);

	/* back from the last call that started before t, while a call could still end later */
	for (int64_t i = lo - 1; i >= 0; i--) {
		int64_t e = launch_end(lc, &lc->v[i]);

		if (best != CS_TS_UNKNOWN && lc->v[i].start + longest < best)
			break;
		if (fact_launch_call_tid(lc, &lc->v[i]) == tid &&
		    (best == CS_TS_UNKNOWN || e > best))
			best = e;
	}
	return best;
}

/* End of the last CUDA call of thread tid that started before t, or CS_TS_UNKNOWN. */
static int64_t last_call_end(const struct call *v, int64_t n, int64_t longest, uint32_t tid,
			     int64_t t)
{
	int64_t lo = cs_lower_bound_i64(v, sizeof(*v), n, t), best = CS_TS_UNKNOWN;

	/* back from the last call that started before t, while a call could still end later */
	for (int64_t i = lo - 1; i >= 0; i--) {
		if (best != CS_TS_UNKNOWN && v[i].s + longest < best)
			break;
		if (v[i].tid == tid && (best == CS_TS_UNKNOWN || v[i].e > best))
			best = v[i].e;
	}
	return best;
}

/*
 * Launch times of the first and last kernel of each step, into first[] and last[] (s->n each),
 * and with times set the launch times of the process's steady kernels, sorted, into *times
 * (*ntimes of them).
 */
static int step_kernels(const cs_analysis *a, const cs_steps *s, int64_t *first, int64_t *last,
			int64_t **times, int64_t *ntimes)
{
	int64_t *v = times ? malloc(((size_t)a->nkernels + 1) * sizeof(*v)) : NULL, n = 0, t;
	struct fact_steady_kernels it;
	const cs_a_kernel *k;
	int st;

	if (times && !v)
		return CS_ERR_NOMEM;
	for (int32_t i = 0; i < s->n; i++)
		first[i] = last[i] = CS_TS_UNKNOWN;
	fact_steady_kernels_init(&it, a, s);
	while ((st = fact_steady_kernel_next(&it, &k, &t)) >= 0) {
		if (v)
			v[n++] = t;
		fact_span_widen(&first[st], &last[st], t);
	}
	if (!times)
		return 0;
	if (n > 1)
		cs_sort_i64(v, (size_t)n);
	*times = v;
	*ntimes = n;
	return 0;
}

/* How many of v[0..n) (sorted) are below t. */
static int64_t count_below(const int64_t *v, int64_t n, int64_t t)
{
	return cs_lower_bound_i64(v, sizeof(*v), n, t);
}

/*
 * Whether a copy launched at t in step st is inside the step (host-created-tensor's: 1) rather than
 * at its boundary (the next batch's, dataloader-stall's: 0); CS_ERR_NOMEM.
 */
static int inside_step(const cs_analysis *a, const cs_steps *s, int64_t *first, int64_t *last,
		       int64_t **times, int64_t *ntimes, int32_t st, int64_t t)
{
	int64_t lo, hi, before, after, slack;

	if (first[st] == CS_TS_UNKNOWN || t < first[st] || t > last[st])
		return 0;
	if (s->method != CS_STEPS_PERIOD)
		return 1;
	/* the sorted launch times of millions of kernels, made for the first copy that needs
	 * them: most traces have none */
	if (!*times && step_kernels(a, s, first, last, times, ntimes))
		return CS_ERR_NOMEM;
	lo = count_below(*times, *ntimes, first[st]);
	hi = count_below(*times, *ntimes, last[st] + 1);
	before = count_below(*times, *ntimes, t) - lo;
	after = hi - lo - before;
	slack = (int64_t)(BOUNDARY_SHARE * (double)(hi - lo));
	if (slack < BOUNDARY_MIN_KERNELS)
		slack = BOUNDARY_MIN_KERNELS;
	return before > slack && after > slack;
}

/* (stall index, stack id) pairs by stack id */
static int cmp_by_stack(const void *pa, const void *pb)
{
	int64_t x = ((const int64_t *)pa)[1], y = ((const int64_t *)pb)[1];

	return x < y ? -1 : x > y;
}

/*
 * With steps from the kernel period, whose phase is arbitrary, a step's boundary can fall next to
 * one of the copies a call site makes several times inside every step (a tensor made on the host
 * in each layer): the same code in the same loop. A call site whose stalls are mostly inside the
 * steps is inside at the boundary too; a batch is copied from a site of its own, at the boundary.
 * Copies without a stack keep what their position says.
 */
static int sites_decide(const cs_analysis *a, struct fact_h2d_stalls *out)
{
	int64_t(*k)[2] = malloc((size_t)out->n * sizeof(*k));

	if (!k)
		return CS_ERR_NOMEM;
	for (int64_t i = 0; i < out->n; i++) {
		k[i][0] = i;
		k[i][1] = a->copies[out->v[i].copy].stack_id;
	}
	qsort(k, (size_t)out->n, sizeof(*k), cmp_by_stack);
	for (int64_t i = 0, j; i < out->n; i = j) {
		int64_t in = 0;

		for (j = i; j < out->n && k[j][1] == k[i][1]; j++)
			in += out->v[k[j][0]].in_step != 0;
		if (k[i][1] != CS_ID_NONE && 2 * in > j - i)
			for (int64_t m = i; m < j; m++)
				out->v[k[m][0]].in_step = 1;
	}
	free(k);
	return 0;
}

static int push_stall(struct fact_h2d_stalls *out, size_t *cap, const struct fact_h2d_stall *x)
{
	if ((size_t)out->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct fact_h2d_stall *nv = realloc(out->v, nc * sizeof(*nv));

		if (!nv)
			return CS_ERR_NOMEM;
		out->v = nv;
		*cap = nc;
	}
	out->v[out->n++] = *x;
	return 0;
}

int fact_h2d_stalls(const cs_analysis *a, const cs_steps *s, const struct fact_launch_calls *lc,
		    struct fact_h2d_stalls *out)
{
	struct call *calls = NULL;
	int64_t ncalls = 0, longest = 0, reach = CS_TS_UNKNOWN, *first = NULL, *last = NULL;
	int64_t longest_launch = 0;
	int64_t *times = NULL, ntimes = 0;
	size_t cap = 0;
	struct fact_gpu_iter it;
	struct fact_gpu_work w;

	memset(out, 0, sizeof(*out));
	first = calloc((size_t)s->n + 1, sizeof(*first));
	last = calloc((size_t)s->n + 1, sizeof(*last));
	if (!first || !last || collect_calls(a, s->pid, lc, &calls, &ncalls, &longest, &out->far))
		goto nomem;
	if (step_kernels(a, s, first, last, NULL, NULL))
		goto nomem;
	for (int64_t i = 0; i < lc->n; i++)
		if (launch_end(lc, &lc->v[i]) - lc->v[i].start > longest_launch)
			longest_launch = launch_end(lc, &lc->v[i]) - lc->v[i].start;
	fact_gpu_iter_init(&it, a, s->pid);
	while (fact_gpu_next(&it, &w)) {
		int64_t prev = reach, t, c_end, from, to;
		const cs_a_copy *c;
		struct fact_h2d_stall x;
		int st;

		if (reach == CS_TS_UNKNOWN || w.end > reach)
			reach = w.end;
		if (w.is_kernel || prev == CS_TS_UNKNOWN || w.start <= prev ||
		    w.launch_start == CS_TS_UNKNOWN)
			continue;
		c = &a->copies[w.index];
		t = w.launch_start;
		if (c->is_memset || c->copy_kind != CS_COPY_HTOD ||
		    (st = cs_steps_find_steady(s, t)) < 0 || fact_gpu_launched(&w) <= prev)
			continue;
		/* the thread's last CUDA call: a launch call, or another */
		c_end = last_call_end(calls, ncalls, longest, c->launch_tid, t);
		{
			int64_t l_end = last_launch_end(lc, longest_launch, c->launch_tid, t);

			if (c_end == CS_TS_UNKNOWN || (l_end != CS_TS_UNKNOWN && l_end > c_end))
				c_end = l_end;
		}
		if (c_end == CS_TS_UNKNOWN || t - c_end <= out->far)
			continue;
		from = c_end > prev ? c_end : prev;
		to = t < w.start ? t : w.start;
		if (to <= from)
			continue;
		memset(&x, 0, sizeof(x));
		x.copy = w.index;
		x.step = st;
		x.stall_ns = to - from;
		x.stretch_ns = t - c_end;
		/* who owns it: a copy at the step boundary is the next batch's, one inside the
		 * step a tensor the step made */
		x.in_step = inside_step(a, s, first, last, &times, &ntimes, st, t);
		if (x.in_step < 0 || push_stall(out, &cap, &x))
			goto nomem;
	}
	if (s->method == CS_STEPS_PERIOD && out->n && sites_decide(a, out))
		goto nomem;
	free(calls);
	free(first);
	free(last);
	free(times);
	return 0;
nomem:
	free(calls);
	free(first);
	free(last);
	free(times);
	fact_h2d_stalls_free(out);
	return CS_ERR_NOMEM;
}

void fact_h2d_stalls_free(struct fact_h2d_stalls *x)
{
	free(x->v);
	memset(x, 0, sizeof(*x));
}
