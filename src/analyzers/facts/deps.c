/*
 * deps.c - the dependencies of one process's run and their replay (deps.h, docs/replay.md).
 *
 * Building: the process's CUDA calls (the launch calls of its GPU work, its waits and its
 * allocator and other recorded calls) become, per host thread, a chain of call groups (calls that
 * overlap or nest, such as a runtime call and the driver call inside it, are one group); its GPU
 * work becomes, per stream, a chain in start order. For each piece of GPU work the edge that
 * decided its recorded start is found (its launch call, its stream's previous work, or the work of
 * another stream that ended right before it started); for each call that may block, the GPU work
 * that ended while it was held and right before it returned; for each call that began after its
 * thread was idle, the call of another thread that ended right before (the thread was woken).
 *
 * Replaying: the chains are walked in dependency order, each node's replayed time the latest of
 * its predecessors' replayed times plus the edge's latency; host time between calls and GPU
 * durations are the recorded ones unless an edit changes them.
 */
#include <stdlib.h>
#include <string.h>

#include "cuscope/checked.h"
#include "cuscope/launch_cost.h"
#include "cuscope/sort.h"
#include "deps.h"

enum { W_KERNEL = 0, W_COPY = 1, W_SYNC = 2, W_API = 3 };
enum { EDGE_NONE = 0, EDGE_LAUNCH, EDGE_STREAM, EDGE_DEP };
/* call classes, for the duration of a call that does not wait */
enum { CL_LAUNCH = 0, CL_SYNC, CL_COPY, CL_API, CL_N };

/* A latency beyond CAP_TIMES typical ones (and beyond CAP_FLOOR_NS) is not the edge's own. */
#define CAP_TIMES    4
#define CAP_FLOOR_NS 20000
/*
 * The steady steps a model holds at most: a long run's savings are those of a window of this many
 * steps in the middle of its steady state (a pattern of one step in ten shows about 20 times in
 * it), so that building and replaying stay proportionate to the window, not to the run.
 */
#define MAX_SPAN_STEPS 200
/* Pieces of queued work the GPU's own gap between two is the median of, at least. */
#define MIN_QUEUED 20
/*
 * The GPU's gap between two queued kernels of a stream where a trace cannot show it (no work was
 * ever queued): the median of the queued ones of the committed traces recorded on H100 and H200
 * (1.06 us d2h-sync-bad, 1.09 us launch-starvation-bad, 1.50 us clean; 0.42 us between the nodes of
 * a CUDA graph, launch-starvation-fixed), docs/replay.md.
 */
#define QUEUED_GAP_NS 1100
/* How far back among the work (calls) ended before a start to look for another stream's
 * (thread's). */
#define DEP_LOOKBACK 64

/* A recorded call: an interval of one host thread. */
struct iv {
	uint32_t tid;
	uint32_t what; /* W_* */
	int64_t start, end;
	int64_t index; /* in the array of what */
};

struct call {
	int64_t start, end; /* recorded */
	int64_t gap;	    /* host time since the thread's previous call ended (>= 0) */
	int64_t base;	    /* its duration when it does not wait */
	int64_t wait_lat;   /* end - wait_op's end */
	int64_t wake_lat;   /* start - the end of host_dep or start_op, whichever is set */
	int32_t thread;
	int32_t wait_op;  /* GPU work it waited for, -1 */
	int32_t host_dep; /* the call of another thread whose end woke this one, -1 */
	int32_t start_op; /* GPU work that woke it through another thread's host function, -1 */
	uint8_t cls;	  /* CL_* of its first call */
	uint8_t may_wait;
	uint8_t launches;  /* it holds a launch call */
	uint8_t tail;	   /* the kind (enum cs_tail_kind) of the call that ends it */
	uint8_t host_func; /* it enqueues a host function (cudaLaunchHostFunc, ...) */
};

struct op {
	int64_t start, end; /* recorded */
	int64_t lat;	    /* latency of its deciding edge */
	int32_t call;	    /* launch call group, -1 when unknown */
	int32_t dep;	    /* GPU work of another stream it waited for, -1 */
	int32_t stream;
	int32_t step; /* step of its launch, -1 */
	uint8_t edge; /* EDGE_*: the deciding edge */
};

struct fact_deps {
	const cs_analysis *a;
	const cs_steps *s;
	struct call *calls; /* by thread, then start */
	int64_t ncalls;
	struct op *ops; /* by stream, then start */
	int64_t nops;
	int32_t *thread_first, *stream_first; /* nthreads + 1, nstreams + 1 entries */
	int32_t nthreads, nstreams;
	/* edit targets: the call or op of each element of the analysis's arrays (-1: none) */
	int32_t *kernel_op, *copy_op, *kernel_call, *copy_call, *sync_call, *api_call;
	int64_t typ_launch, typ_stream; /* typical latencies, ns */
	int64_t launch_call;		/* the median duration of a launch call, ns */
	/* the steps the model holds: from the first launch of step from to the end of step last
	 * (every steady step, or MAX_SPAN_STEPS of them in the middle: fact_deps_build()) */
	int32_t from, last;
	int64_t t0, t1;
	struct fact_deps_stats stats;
};

static int64_t median_of(int64_t *v, int64_t n)
{
	if (n <= 0)
		return 0;
	cs_sort_i64(v, (size_t)n);
	return v[n / 2];
}

static int64_t cap_of(int64_t *v, int64_t n)
{
	int64_t cap = CAP_TIMES * median_of(v, n);

	return cap > CAP_FLOOR_NS ? cap : CAP_FLOOR_NS;
}

/* 1 when the call of a copy holds the host until the copy is done (or staged) */
static int copy_blocks(const cs_a_copy *c)
{
	if (!c->is_async)
		return 1;
	return !c->is_memset && (c->src_kind == CS_MEM_PAGEABLE || c->dst_kind == CS_MEM_PAGEABLE);
}

/* ---- building ---- */

static void iv_add(struct iv *v, int64_t *k, uint32_t tid, uint32_t what, int64_t start,
		   int64_t end, int64_t index)
{
	if (start == CS_TS_UNKNOWN)
		return;
	v[*k].tid = tid;
	v[*k].what = what;
	v[*k].start = start;
	v[*k].end = end != CS_TS_UNKNOWN && end > start ? end : start;
	v[*k].index = index;
	(*k)++;
}

/* In the model's time window? */
static int in_window(const struct fact_deps *d, int64_t t)
{
	return t != CS_TS_UNKNOWN && t >= d->t0 && t <= d->t1;
}

/* How many kernels and copies of a are pid's, with calls its syncs and API calls too. */
static int64_t count_pid(const cs_analysis *a, uint32_t pid, int calls)
{
	int64_t n = 0;

	for (int64_t i = 0; i < a->nkernels; i++)
		n += a->kernels[i].pid == pid;
	for (int64_t i = 0; i < a->ncopies; i++)
		n += a->copies[i].pid == pid;
	for (int64_t i = 0; calls && i < a->nsyncs; i++)
		n += a->syncs[i].pid == pid;
	for (int64_t i = 0; calls && i < a->napis; i++)
		n += a->apis[i].pid == pid;
	return n;
}

static int collect_calls(const struct fact_deps *d, uint32_t pid, struct iv **out, int64_t *n)
{
	const cs_analysis *a = d->a;
	int64_t cap, k = 0;
	struct iv *v;

	cap = count_pid(a, pid, 1);
	v = malloc((size_t)(cap > 0 ? cap : 1) * sizeof(*v));
	if (!v)
		return CS_ERR_NOMEM;
	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *x = &a->kernels[i];

		if (x->pid == pid && in_window(d, x->launch_start))
			iv_add(v, &k, x->launch_tid, W_KERNEL, x->launch_start, x->launch_end, i);
	}
	for (int64_t i = 0; i < a->ncopies; i++) {
		const cs_a_copy *x = &a->copies[i];

		if (x->pid == pid && in_window(d, x->launch_start))
			iv_add(v, &k, x->launch_tid, W_COPY, x->launch_start, x->launch_end, i);
	}
	for (int64_t i = 0; i < a->nsyncs; i++) {
		const cs_a_sync *x = &a->syncs[i];

		if (x->pid == pid && x->type != CS_SYNC_STREAM_WAIT_EVENT && in_window(d, x->start))
			iv_add(v, &k, x->tid, W_SYNC, x->start, x->end, i);
	}
	for (int64_t i = 0; i < a->napis; i++) {
		const cs_a_api *x = &a->apis[i];

		if (x->pid == pid && in_window(d, x->start))
			iv_add(v, &k, x->tid, W_API, x->start, x->end, i);
	}
	{
		static const cs_sort_key keys[] = {{offsetof(struct iv, tid), CS_KEY_U32},
						   {offsetof(struct iv, start), CS_KEY_I64}};

		cs_sort_records(v, (size_t)k, sizeof(*v), keys, 2);
	}
	*out = v;
	*n = k;
	return 0;
}

/* May the recorded call x hold the host until GPU work ends? */
static int iv_may_wait(const cs_analysis *a, const struct iv *x)
{
	switch (x->what) {
	case W_COPY:
		return copy_blocks(&a->copies[x->index]);
	case W_SYNC:
		return a->syncs[x->index].host_wait != 0;
	case W_API:
		return 1; /* allocator calls sync implicitly; the others are checked by their time
			   */
	default:
		return 0;
	}
}

static int iv_class(const struct iv *x)
{
	switch (x->what) {
	case W_KERNEL:
		return CL_LAUNCH;
	case W_COPY:
		return CL_COPY;
	case W_SYNC:
		return CL_SYNC;
	default:
		return CL_API;
	}
}

/* What the recorder does after the call's end (META call_tails' kinds, in the order of enum
 * cs_tail_kind): a launch; a wait or a copy, whose stack it captures; anything else. */
static int iv_tail(const cs_analysis *a, const struct iv *x)
{
	switch (x->what) {
	case W_KERNEL:
		return CS_CALL_TAIL_LAUNCH;
	case W_COPY:
		return a->copies[x->index].is_memset ? CS_CALL_TAIL_OTHER : CS_CALL_TAIL_STACK;
	case W_SYNC:
		return CS_CALL_TAIL_STACK;
	default:
		return CS_CALL_TAIL_OTHER;
	}
}

/* Which of two tail kinds of a call's records tells the call's: 0 first. */
static int tail_rank(int tail)
{
	return tail == 1 ? 0 : tail == 0 ? 1 : 2; /* a stack captured, a launch, the others */
}

static int32_t *new_map(int64_t n)
{
	size_t sz = (size_t)(n > 0 ? n : 1) * sizeof(int32_t);
	int32_t *m = malloc(sz);

	if (m)
		memset(m, 0xff, sz);
	return m;
}

/* Group the sorted calls into call groups, per thread. */
static int build_calls(struct fact_deps *d, const struct iv *v, int64_t n)
{
	int64_t g = -1;
	uint32_t cur_tid = 0;
	int32_t nthreads = 0;

	d->calls = malloc((size_t)(n > 0 ? n : 1) * sizeof(*d->calls));
	d->thread_first = malloc((size_t)(n + 2) * sizeof(*d->thread_first));
	if (!d->calls || !d->thread_first)
		return CS_ERR_NOMEM;
	for (int64_t i = 0; i < n; i++) {
		const struct iv *x = &v[i];
		struct call *c;

		if (g < 0 || x->tid != cur_tid || x->start >= d->calls[g].end) {
			int newthread = g < 0 || x->tid != cur_tid;

			g++;
			c = &d->calls[g];
			memset(c, 0, sizeof(*c));
			c->start = x->start;
			c->end = x->end;
			c->wait_op = -1;
			c->host_dep = -1;
			c->start_op = -1;
			c->cls = (uint8_t)iv_class(x);
			c->tail = (uint8_t)iv_tail(d->a, x);
			if (newthread) {
				d->thread_first[nthreads++] = (int32_t)g;
				cur_tid = x->tid;
			} else {
				c->gap = x->start - d->calls[g - 1].end;
			}
			c->thread = nthreads - 1;
		} else {
			int tail = iv_tail(d->a, x);

			c = &d->calls[g];
			if (x->end > c->end)
				c->end = x->end;
			/* the records of one call (its API record, the wait or copy it made) tell
			 * its kind: a wait or a copy before a launch before anything else */
			if (tail_rank(tail) < tail_rank(c->tail))
				c->tail = (uint8_t)tail;
		}
		c->may_wait |= (uint8_t)iv_may_wait(d->a, x);
		c->launches |= x->what == W_KERNEL || x->what == W_COPY;
		if (x->what == W_API)
			c->host_func |= (uint8_t)cs_api_is_host_func(
				cs_analysis_string(d->a, d->a->apis[x->index].name_id));
		switch (x->what) {
		case W_KERNEL:
			d->kernel_call[x->index] = (int32_t)g;
			break;
		case W_COPY:
			d->copy_call[x->index] = (int32_t)g;
			break;
		case W_SYNC:
			d->sync_call[x->index] = (int32_t)g;
			break;
		default:
			d->api_call[x->index] = (int32_t)g;
		}
	}
	d->ncalls = g + 1;
	d->nthreads = nthreads;
	d->thread_first[nthreads] = (int32_t)d->ncalls;
	return 0;
}

struct op_key {
	uint64_t stream; /* device << 32 | stream id */
	int64_t start;
	int64_t index; /* kernel index, or copy index | COPY_BIT */
};

#define COPY_BIT ((int64_t)1 << 62)

/* Add to k[*n] the GPU work [start, end) on the stream of device, of key index, when it has both
 * times and was launched in the model's time window. */
static void op_key_add(const struct fact_deps *d, struct op_key *k, int64_t *n, int32_t device,
		       uint32_t stream, int64_t launch_start, int64_t start, int64_t end,
		       int64_t index)
{
	if (start == CS_TS_UNKNOWN || end == CS_TS_UNKNOWN ||
	    !in_window(d, cs_launch_time(launch_start, start)))
		return;
	k[*n].stream = (uint64_t)(uint32_t)device << 32 | stream;
	k[*n].start = start;
	k[*n].index = index;
	(*n)++;
}

static int build_ops(struct fact_deps *d)
{
	const cs_analysis *a = d->a;
	const cs_steps *s = d->s;
	uint32_t pid = s->pid;
	struct op_key *k;
	int64_t n = 0, cap;
	int32_t nstreams = 0;

	cap = count_pid(a, pid, 0);
	k = malloc((size_t)(cap > 0 ? cap : 1) * sizeof(*k));
	if (!k)
		return CS_ERR_NOMEM;
	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *x = &a->kernels[i];

		if (x->pid == pid)
			op_key_add(d, k, &n, x->device_id, x->stream_id, x->launch_start, x->start,
				   x->end, i);
	}
	for (int64_t i = 0; i < a->ncopies; i++) {
		const cs_a_copy *x = &a->copies[i];

		if (x->pid == pid)
			op_key_add(d, k, &n, x->device_id, x->stream_id, x->launch_start, x->start,
				   x->end, i | COPY_BIT);
	}
	{
		static const cs_sort_key keys[] = {{offsetof(struct op_key, stream), CS_KEY_U64},
						   {offsetof(struct op_key, start), CS_KEY_I64}};

		cs_sort_records(k, (size_t)n, sizeof(*k), keys, 2);
	}
	d->ops = malloc((size_t)(n > 0 ? n : 1) * sizeof(*d->ops));
	d->stream_first = malloc((size_t)(n + 2) * sizeof(*d->stream_first));
	if (!d->ops || !d->stream_first) {
		free(k);
		return CS_ERR_NOMEM;
	}
	for (int64_t i = 0; i < n; i++) {
		struct op *o = &d->ops[i];
		int copy = (k[i].index & COPY_BIT) != 0;
		int64_t idx = k[i].index & ~COPY_BIT, ls, end;

		if (i == 0 || k[i].stream != k[i - 1].stream)
			d->stream_first[nstreams++] = (int32_t)i;
		memset(o, 0, sizeof(*o));
		o->stream = nstreams - 1;
		o->dep = -1;
		o->start = k[i].start;
		if (copy) {
			end = a->copies[idx].end;
			ls = a->copies[idx].launch_start;
			o->call = d->copy_call[idx];
			d->copy_op[idx] = (int32_t)i;
		} else {
			end = a->kernels[idx].end;
			ls = a->kernels[idx].launch_start;
			o->call = d->kernel_call[idx];
			d->kernel_op[idx] = (int32_t)i;
		}
		o->end = end > o->start ? end : o->start;
		o->step = cs_steps_find_launch(s, ls, o->start);
	}
	d->nops = n;
	d->nstreams = nstreams;
	d->stream_first[nstreams] = (int32_t)n;
	free(k);
	return 0;
}

static int64_t last_end_at(const struct fact_deps *d, const int32_t *by_end, int64_t t);

/* Whether work of another stream than o's ended in (t0, o's start]: what o may have waited for. */
static int other_stream_ended(const struct fact_deps *d, const int32_t *by_end, const struct op *o,
			      int64_t t0)
{
	for (int64_t p = last_end_at(d, by_end, o->start), back = 0;
	     p >= 0 && back < DEP_LOOKBACK && d->ops[by_end[p]].end > t0; p--, back++)
		if (d->ops[by_end[p]].stream != o->stream)
			return 1;
	return 0;
}

/* Typical latencies of the launch edge (the stream was idle when the call began) and of the
 * stream edge (the work was queued before its predecessor ended). A start longer than
 * CAP_FLOOR_NS after its call, with another stream's work ending in between, is not a launch's
 * latency: the work waited for that stream (an NCCL kernel launched early on its idle stream,
 * which waits for the compute before it), and is left out of the launch edge's. */
static int typical_latencies(struct fact_deps *d, const int32_t *by_end)
{
	int64_t *v = malloc((size_t)(d->nops > 0 ? d->nops : 1) * sizeof(*v)), nl = 0, ns = 0;

	if (!v)
		return CS_ERR_NOMEM;
	for (int pass = 0; pass < 2 && nl == 0; pass++) {
		for (int64_t i = 0; i < d->nops; i++) {
			const struct op *o = &d->ops[i];
			int first = i == d->stream_first[o->stream];
			int64_t call;

			if (o->call < 0)
				continue;
			call = d->calls[o->call].start;
			if ((!first && d->ops[i - 1].end > call) || o->start < call)
				continue;
			if (pass == 0 && o->start - call > CAP_FLOOR_NS &&
			    other_stream_ended(d, by_end, o, call))
				continue;
			v[nl++] = o->start - call;
		}
	}
	d->typ_launch = median_of(v, nl);
	/* queued: launched at least a typical launch latency before its predecessor ended, so that
	 * the gap is the GPU's own and not the end of a launch that came just in time */
	for (int64_t i = 0; i < d->nops; i++) {
		const struct op *o = &d->ops[i];

		if (i > d->stream_first[o->stream] && o->call >= 0 &&
		    d->calls[o->call].start + d->typ_launch <= d->ops[i - 1].end &&
		    o->start >= d->ops[i - 1].end)
			v[ns++] = o->start - d->ops[i - 1].end;
	}
	if (ns < MIN_QUEUED) {
		/* a run that never queued: the shortest gaps between two pieces of work of a
		 * stream (their 5th percentile), at most what the GPU takes between two queued
		 * kernels where it was seen (QUEUED_GAP_NS) */
		ns = 0;
		for (int64_t i = 0; i < d->nops; i++) {
			const struct op *o = &d->ops[i];

			if (i > d->stream_first[o->stream] && o->start >= d->ops[i - 1].end)
				v[ns++] = o->start - d->ops[i - 1].end;
		}
		cs_sort_i64(v, (size_t)ns);
		d->typ_stream = ns > 0 && v[ns / 20] < QUEUED_GAP_NS ? v[ns / 20] : QUEUED_GAP_NS;
	} else {
		d->typ_stream = median_of(v, ns);
	}
	free(v);
	return 0;
}

/* Indices 0..n-1 sorted by key[i] (a start or end time). NULL without memory. */
static int32_t *order_by(const int64_t *key, size_t stride, int64_t n)
{
	struct ek {
		int64_t t;
		int64_t i;
	} *e = malloc((size_t)(n > 0 ? n : 1) * sizeof(*e));
	int32_t *out = malloc((size_t)(n > 0 ? n : 1) * sizeof(*out));

	if (!e || !out) {
		free(e);
		free(out);
		return NULL;
	}
	for (int64_t i = 0; i < n; i++) {
		e[i].t = *(const int64_t *)(const void *)((const char *)key + (size_t)i * stride);
		e[i].i = i;
	}
	{
		static const cs_sort_key k = {offsetof(struct ek, t), CS_KEY_I64};

		cs_sort_records(e, (size_t)n, sizeof(*e), &k, 1);
	}
	for (int64_t i = 0; i < n; i++)
		out[i] = (int32_t)e[i].i;
	free(e);
	return out;
}

/*
 * The last position p of order (n indices sorted by the time at key + index * stride, as
 * order_by() makes them) whose time is at most t, or -1.
 */
static int64_t last_at_most(const int64_t *key, size_t stride, const int32_t *order, int64_t n,
			    int64_t t)
{
	int64_t lo = 0, hi = n;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (*(const int64_t *)(const void *)((const char *)key +
						     (size_t)order[mid] * stride) <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

/* The last position in by_end whose op ended at or before t, or -1. */
static int64_t last_end_at(const struct fact_deps *d, const int32_t *by_end, int64_t t)
{
	return last_at_most(&d->ops[0].end, sizeof(*d->ops), by_end, d->nops, t);
}

static void decide_edges(struct fact_deps *d, const int32_t *by_end)
{
	for (int64_t i = 0; i < d->nops; i++) {
		struct op *o = &d->ops[i];
		int first = i == d->stream_first[o->stream];
		int64_t cl = o->call >= 0 ? d->calls[o->call].start : CS_TS_UNKNOWN;
		int64_t cs = first ? CS_TS_UNKNOWN : d->ops[i - 1].end;
		int64_t c, cap, typ;

		if (cl == CS_TS_UNKNOWN && cs == CS_TS_UNKNOWN) {
			o->edge = EDGE_NONE;
			continue;
		}
		if (cs == CS_TS_UNKNOWN ||
		    (cl != CS_TS_UNKNOWN && cl + d->typ_launch >= cs + d->typ_stream)) {
			o->edge = EDGE_LAUNCH;
			c = cl;
			typ = d->typ_launch;
		} else {
			o->edge = EDGE_STREAM;
			c = cs;
			typ = d->typ_stream;
		}
		o->lat = o->start - c;
		cap = CAP_TIMES * typ > CAP_FLOOR_NS ? CAP_TIMES * typ : CAP_FLOOR_NS;
		if (o->lat <= cap)
			continue;
		/* a delay its own edges do not explain: the work of another stream that ended
		 * last before it started, and after the deciding edge's time */
		for (int64_t p = last_end_at(d, by_end, o->start), back = 0;
		     p >= 0 && back < DEP_LOOKBACK; p--, back++) {
			const struct op *q = &d->ops[by_end[p]];

			if (q->end < c)
				break;
			if (q->stream == o->stream)
				continue;
			o->dep = by_end[p];
			o->edge = EDGE_DEP;
			o->lat = o->start - q->end;
			d->stats.cross_edges++;
			break;
		}
		if (o->edge != EDGE_DEP)
			d->stats.unexplained_ns += o->lat - typ;
	}
}

/* The GPU work each call that may block waited for, and each class's duration without a wait. */
static int decide_waits(struct fact_deps *d, const int32_t *by_end)
{
	int64_t *v = malloc((size_t)(d->ncalls > 0 ? d->ncalls : 1) * sizeof(*v)), nv = 0;
	int64_t base[CL_N], long_call, wake_cap;

	if (!v)
		return CS_ERR_NOMEM;
	/* a launch call this much longer than the median one waited for a queue slot */
	for (int64_t g = 0; g < d->ncalls; g++)
		if (d->calls[g].cls == CL_LAUNCH)
			v[nv++] = d->calls[g].end - d->calls[g].start;
	d->launch_call = median_of(v, nv);
	long_call = 10 * d->launch_call;
	if (long_call < CAP_FLOOR_NS)
		long_call = CAP_FLOOR_NS;
	/* candidates: work that ended while the call was held */
	nv = 0;
	for (int64_t g = 0; g < d->ncalls; g++) {
		struct call *c = &d->calls[g];
		int64_t p;

		if (!c->may_wait && c->end - c->start < long_call)
			continue;
		p = last_end_at(d, by_end, c->end);
		/* a long launch call waits for a queue slot, which work it launched itself
		 * does not free (a graph's first nodes may end before its launch returns) */
		while (!c->may_wait && p >= 0 && d->ops[by_end[p]].call == (int32_t)g &&
		       d->ops[by_end[p]].end > c->start)
			p--;
		if (p < 0 || d->ops[by_end[p]].end <= c->start)
			continue;
		c->wait_op = by_end[p];
		c->wait_lat = c->end - d->ops[by_end[p]].end;
		v[nv++] = c->wait_lat;
	}
	wake_cap = cap_of(v, nv);
	for (int64_t g = 0; g < d->ncalls; g++)
		if (d->calls[g].wait_op >= 0 && d->calls[g].wait_lat > wake_cap)
			d->calls[g].wait_op = -1; /* held by something else than the GPU */
	for (int cl = 0; cl < CL_N; cl++) {
		nv = 0;
		for (int64_t g = 0; g < d->ncalls; g++)
			if (d->calls[g].cls == cl && d->calls[g].wait_op < 0)
				v[nv++] = d->calls[g].end - d->calls[g].start;
		base[cl] = median_of(v, nv);
	}
	for (int cl = 1; cl < CL_N; cl++)
		if (base[cl] == 0)
			base[cl] = base[CL_LAUNCH];
	for (int64_t g = 0; g < d->ncalls; g++) {
		struct call *c = &d->calls[g];
		int64_t own = c->end - c->start;

		if (c->wait_op >= 0) {
			c->base = base[c->cls] < own ? base[c->cls] : own;
			d->stats.waits++;
		} else {
			c->base = own;
		}
	}
	free(v);
	return 0;
}

/*
 * The GPU work a host function that call g enqueued runs after: the work of the last call of its
 * thread up to g that launched any (the one of it that ended last), or -1.
 */
static int32_t host_func_op(const struct fact_deps *d, const int32_t *last_op, int64_t g)
{
	int32_t first = d->thread_first[d->calls[g].thread];

	for (int64_t h = g, back = 0; h >= first && back < DEP_LOOKBACK; h--, back++)
		if (last_op[h] >= 0)
			return last_op[h];
	return -1;
}

/*
 * The calls that another thread's call woke: a call whose thread made no CUDA call since before a
 * call of another thread ended, and that began shortly after that end (PyTorch's autograd thread
 * begins the backward pass when the main thread calls backward(); the main thread goes on when
 * it ends). "Shortly": at most CAP_TIMES the median such distance, and at most CAP_FLOOR_NS.
 * When that call enqueued a host function, what woke the call is the host function, which ran
 * when its stream reached it: the edge goes from that GPU work (XLA's transfer thread begins a
 * device-to-host copy when the computation's host function says it is done).
 */
static int decide_host_deps(struct fact_deps *d)
{
	int32_t *by_end, *last_op;
	int64_t *v, nv = 0, cap;

	if (d->nthreads < 2)
		return 0;
	by_end = order_by(&d->calls[0].end, sizeof(*d->calls), d->ncalls);
	v = malloc((size_t)d->ncalls * sizeof(*v));
	last_op = new_map(d->ncalls);
	if (!by_end || !v || !last_op) {
		free(by_end);
		free(v);
		free(last_op);
		return CS_ERR_NOMEM;
	}
	for (int32_t i = 0; i < d->nops; i++) {
		int32_t g = d->ops[i].call;

		if (g >= 0 && (last_op[g] < 0 || d->ops[last_op[g]].end < d->ops[i].end))
			last_op[g] = i;
	}
	for (int64_t g = 0; g < d->ncalls; g++) {
		struct call *c = &d->calls[g];
		int64_t idle_from =
			g == d->thread_first[c->thread] ? CS_TS_UNKNOWN : d->calls[g - 1].end;
		int64_t last = last_at_most(&d->calls[0].end, sizeof(*d->calls), by_end, d->ncalls,
					    c->start);

		/* after a wait that GPU work ended, the GPU woke the thread */
		if (idle_from != CS_TS_UNKNOWN && d->calls[g - 1].wait_op >= 0)
			continue;
		for (int64_t p = last, back = 0; p >= 0 && back < DEP_LOOKBACK; p--, back++) {
			const struct call *o = &d->calls[by_end[p]];

			if (idle_from != CS_TS_UNKNOWN && o->end <= idle_from)
				break;
			if (o->thread == c->thread)
				continue;
			if (o->host_func) {
				int32_t op = host_func_op(d, last_op, by_end[p]);

				if (op >= 0 && d->ops[op].end <= c->start) {
					c->start_op = op;
					c->wake_lat = c->start - d->ops[op].end;
					break;
				}
			}
			c->host_dep = by_end[p];
			c->wake_lat = c->start - o->end;
			v[nv++] = c->wake_lat;
			break;
		}
	}
	cap = cap_of(v, nv);
	for (int64_t g = 0; g < d->ncalls; g++) {
		struct call *c = &d->calls[g];

		if (c->host_dep >= 0 && c->wake_lat > cap)
			c->host_dep = -1;
		d->stats.host_edges += c->host_dep >= 0 || c->start_op >= 0;
	}
	free(by_end);
	free(v);
	free(last_op);
	return 0;
}

/* Without the profiler: each call that launches takes rec ns less when it does not wait (at
 * least nothing). */
/*
 * Take out of the model what recording added to the host (docs/replay.md): rec, the calibrated
 * cost of a launch, from each launch call; and, where the trace has them (META call_tails), the
 * recorder's measured mean time after each kind of call from the host time that follows such a
 * call. The calibrated cost holds the library's own code (own_code), which call_tails counts too:
 * with call_tails, a launch loses rec less that. A blocking copy or synchronize that waited for
 * the GPU returns copy_wait or sync_wait sooner after its work ended (what CUPTI adds to such a
 * call, calibrated alike; 0 in traces of before 2026-12-07).
 */
static void unprofile(struct fact_deps *d, double rec, double own_code, const double *tail,
		      double copy_wait, double sync_wait)
{
	int have_tails = tail && (tail[0] > 0 || tail[1] > 0 || tail[2] > 0);

	if (have_tails)
		rec = rec > own_code ? rec - own_code : 0;
	for (int64_t g = 0; g < d->ncalls; g++) {
		struct call *c = &d->calls[g];
		int64_t w = (int64_t)(c->cls == CL_COPY	  ? copy_wait
				      : c->cls == CL_SYNC ? sync_wait
							  : 0);

		if (c->launches && rec > 0)
			c->base = c->base > (int64_t)rec ? c->base - (int64_t)rec : 0;
		/* what CUPTI adds to a blocking call is spent before it returns, after its wait;
		 * what the return does not hold delayed the call's own copy */
		if (c->wait_op >= 0 && w > 0) {
			struct op *o = &d->ops[c->wait_op];
			int64_t left = w - c->wait_lat;

			c->wait_lat = c->wait_lat > w ? c->wait_lat - w : 0;
			if (left > 0 && o->call == (int32_t)g && o->edge != EDGE_NONE)
				o->lat = o->lat > left ? o->lat - left : 0;
		}
		if (have_tails && g > 0 && g != d->thread_first[c->thread]) {
			int64_t cut = (int64_t)tail[d->calls[g - 1].tail];

			c->gap = c->gap > cut ? c->gap - cut : 0;
		}
	}
	if (rec > 0)
		d->launch_call = d->launch_call > (int64_t)rec ? d->launch_call - (int64_t)rec : 0;
}

int fact_deps_build(const cs_analysis *a, const cs_steps *s, unsigned flags, struct fact_deps **out)
{
	struct fact_deps *d;
	struct iv *v = NULL;
	int32_t *by_end = NULL;
	int64_t n = 0;

	*out = NULL;
	if (!a || !s || !s->pid)
		return 0;
	d = calloc(1, sizeof(*d));
	if (!d)
		return CS_ERR_NOMEM;
	d->a = a;
	d->s = s;
	d->kernel_op = new_map(a->nkernels);
	d->kernel_call = new_map(a->nkernels);
	d->copy_op = new_map(a->ncopies);
	d->copy_call = new_map(a->ncopies);
	d->sync_call = new_map(a->nsyncs);
	d->api_call = new_map(a->napis);
	if (!d->kernel_op || !d->kernel_call || !d->copy_op || !d->copy_call || !d->sync_call ||
	    !d->api_call)
		goto fail;
	/* the steps it holds */
	d->from = s->warmup;
	d->last = s->n - 1;
	d->t0 = INT64_MIN;
	d->t1 = INT64_MAX;
	if (d->last - d->from > MAX_SPAN_STEPS) {
		d->from = s->warmup + (d->last - d->from - MAX_SPAN_STEPS) / 2;
		d->last = d->from + MAX_SPAN_STEPS;
		d->t0 = s->v[d->from].start;
		d->t1 = s->v[d->last].end;
	}
	if (collect_calls(d, s->pid, &v, &n) || build_calls(d, v, n))
		goto fail;
	free(v);
	v = NULL;
	if (build_ops(d))
		goto fail;
	if (d->nops == 0) {
		fact_deps_free(d);
		return 0;
	}
	if (!(by_end = order_by(&d->ops[0].end, sizeof(*d->ops), d->nops)) ||
	    typical_latencies(d, by_end))
		goto fail;
	decide_edges(d, by_end);
	if (decide_waits(d, by_end) || decide_host_deps(d))
		goto fail;
	if ((flags & FACT_DEPS_UNPROFILED) && a->trace) {
		const char *cost = cs_trace_meta(a->trace, CS_META_LAUNCH_COST);
		double tail[CS_CALL_TAIL_KINDS], copy_wait, sync_wait;

		cs_call_tails_mean(cs_trace_meta(a->trace, CS_META_CALL_TAILS), s->pid, tail);
		cs_launch_cost_wait_ns(cost, &copy_wait, &sync_wait);
		unprofile(d, cs_launch_cost_ns(cost), cs_launch_cost_own_code_ns(cost), tail,
			  copy_wait, sync_wait);
	}
	d->stats.launch_lat = d->typ_launch;
	d->stats.stream_gap = d->typ_stream;
	d->stats.calls = d->ncalls;
	d->stats.ops = d->nops;
	d->stats.threads = d->nthreads;
	d->stats.streams = d->nstreams;
	free(by_end);
	*out = d;
	return 0;
fail:
	free(v);
	free(by_end);
	fact_deps_free(d);
	return CS_ERR_NOMEM;
}

void fact_deps_free(struct fact_deps *d)
{
	if (!d)
		return;
	free(d->calls);
	free(d->ops);
	free(d->thread_first);
	free(d->stream_first);
	free(d->kernel_op);
	free(d->copy_op);
	free(d->kernel_call);
	free(d->copy_call);
	free(d->sync_call);
	free(d->api_call);
	free(d);
}

void fact_deps_stats(const struct fact_deps *d, struct fact_deps_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (d)
		*out = d->stats;
}

/* ---- replaying ---- */

/* Per-node changes of one replay. */
struct overrides {
	int64_t *call_time; /* -1: keep; else the call's duration, without a wait */
	int64_t *gap_cut;   /* host time removed before the call */
	int64_t *op_time;   /* -1: keep; else the work's GPU duration */
	int64_t *op_gap;    /* -1: keep; else the GPU's gap after the work before it on a stream */
	uint8_t *no_wait;
};

static int32_t target_call(const struct fact_deps *d, const cs_edit_item *it)
{
	switch (it->target) {
	case CS_EDIT_KERNEL:
		return it->index >= 0 && it->index < d->a->nkernels ? d->kernel_call[it->index]
								    : -1;
	case CS_EDIT_COPY:
		return it->index >= 0 && it->index < d->a->ncopies ? d->copy_call[it->index] : -1;
	case CS_EDIT_SYNC:
		return it->index >= 0 && it->index < d->a->nsyncs ? d->sync_call[it->index] : -1;
	case CS_EDIT_API:
		return it->index >= 0 && it->index < d->a->napis ? d->api_call[it->index] : -1;
	}
	return -1;
}

static int32_t target_op(const struct fact_deps *d, const cs_edit_item *it)
{
	if (it->target == CS_EDIT_KERNEL && it->index >= 0 && it->index < d->a->nkernels)
		return d->kernel_op[it->index];
	if (it->target == CS_EDIT_COPY && it->index >= 0 && it->index < d->a->ncopies)
		return d->copy_op[it->index];
	return -1;
}

static void overrides_free(struct overrides *o)
{
	free(o->call_time);
	free(o->gap_cut);
	free(o->op_time);
	free(o->op_gap);
	free(o->no_wait);
}

static int overrides_make(const struct fact_deps *d, const cs_edit *e, struct overrides *o)
{
	memset(o, 0, sizeof(*o));
	if (!e || e->n == 0)
		return 0;
	o->call_time = malloc((size_t)d->ncalls * sizeof(*o->call_time));
	o->gap_cut = calloc((size_t)d->ncalls, sizeof(*o->gap_cut));
	o->op_time = malloc((size_t)d->nops * sizeof(*o->op_time));
	o->op_gap = malloc((size_t)d->nops * sizeof(*o->op_gap));
	o->no_wait = calloc((size_t)d->ncalls, 1);
	if (!o->call_time || !o->gap_cut || !o->op_time || !o->op_gap || !o->no_wait)
		return CS_ERR_NOMEM;
	memset(o->call_time, 0xff, (size_t)d->ncalls * sizeof(*o->call_time));
	memset(o->op_time, 0xff, (size_t)d->nops * sizeof(*o->op_time));
	memset(o->op_gap, 0xff, (size_t)d->nops * sizeof(*o->op_gap));
	for (int64_t i = 0; i < e->n; i++) {
		const cs_edit_item *it = &e->v[i];
		int32_t g = target_call(d, it), op = target_op(d, it);
		int64_t val = it->value > 0 ? it->value : 0;

		switch (it->kind) {
		case CS_EDIT_NO_WAIT:
			if (g >= 0)
				o->no_wait[g] = 1;
			break;
		case CS_EDIT_DROP_CALL:
			if (g >= 0)
				o->call_time[g] = 0;
			break;
		case CS_EDIT_CALL_TIME:
			if (g >= 0)
				o->call_time[g] = val;
			break;
		case CS_EDIT_ASYNC:
			if (g >= 0)
				o->call_time[g] = d->launch_call;
			break;
		case CS_EDIT_GPU_TIME:
			if (op >= 0)
				o->op_time[op] = val;
			break;
		case CS_EDIT_GPU_GAP:
			if (op >= 0)
				o->op_gap[op] = val;
			break;
		case CS_EDIT_HOST_CUT:
			if (g >= 0)
				o->gap_cut[g] = cs_sat_add(o->gap_cut[g], val);
			break;
		}
	}
	return 0;
}

struct sim {
	const struct fact_deps *d;
	const struct overrides *ov;
	int64_t *cs, *ce, *os, *oe;
	int32_t *tp, *sp; /* per chain: position of the next node not done */
	uint8_t *started; /* per thread: the start of its next call is known */
};

static int op_done(const struct sim *m, int32_t op)
{
	const struct op *o = &m->d->ops[op];

	return op < m->d->stream_first[o->stream] + m->sp[o->stream];
}

static int call_done(const struct sim *m, int32_t g)
{
	const struct call *c = &m->d->calls[g];

	return g < m->d->thread_first[c->thread] + m->tp[c->thread];
}

static int call_started(const struct sim *m, int32_t g)
{
	const struct call *c = &m->d->calls[g];
	int32_t next = m->d->thread_first[c->thread] + m->tp[c->thread];

	return g < next || (g == next && m->started[c->thread]);
}

static int64_t cut(int64_t x, int64_t by)
{
	return x > by ? x - by : 0;
}

/* The replayed start of call g, the next of its thread: after the thread's previous call and the
 * host time between them, and after the call of another thread that woke it. 0 when an input is
 * not known yet (with force, take it at its recorded time). */
static int start_call(struct sim *m, int32_t g, int force)
{
	const struct fact_deps *d = m->d;
	const struct call *c = &d->calls[g];
	int64_t by = m->ov->gap_cut ? m->ov->gap_cut[g] : 0, t = CS_TS_UNKNOWN, own;
	int first = g == d->thread_first[c->thread], woken = c->host_dep >= 0 || c->start_op >= 0;

	if (woken) {
		int done = c->host_dep >= 0 ? call_done(m, c->host_dep) : op_done(m, c->start_op);
		int64_t w;

		if (!done && !force)
			return 0;
		if (c->host_dep >= 0)
			w = done ? m->ce[c->host_dep] : d->calls[c->host_dep].end;
		else
			w = done ? m->oe[c->start_op] : d->ops[c->start_op].end;
		t = w + cut(c->wake_lat, by);
	}
	if (first) {
		if (t == CS_TS_UNKNOWN)
			t = c->start;
	} else {
		/* woken by another thread: the host work after the wake at most */
		own = m->ce[g - 1] + cut(woken && c->wake_lat < c->gap ? c->wake_lat : c->gap, by);
		if (t == CS_TS_UNKNOWN || own > t)
			t = own;
	}
	m->cs[g] = t;
	m->started[c->thread] = 1;
	return 1;
}

/* Advance thread t's chain as far as it goes; force: take one missing input at its recorded
 * time. */
static int advance_thread(struct sim *m, int32_t t, int force)
{
	const struct fact_deps *d = m->d;
	int32_t first = d->thread_first[t], n = d->thread_first[t + 1] - first;
	int moved = 0;

	while (m->tp[t] < n) {
		int32_t g = first + m->tp[t];
		const struct call *c = &d->calls[g];
		int64_t end, fixed;
		int waits;

		if (!m->started[t]) {
			if (!start_call(m, g, force && !moved))
				break;
			moved = 1;
		}
		fixed = m->ov->call_time ? m->ov->call_time[g] : -1;
		waits = c->wait_op >= 0 && fixed < 0 && !(m->ov->no_wait && m->ov->no_wait[g]);
		if (fixed >= 0) {
			end = m->cs[g] + fixed;
		} else if (waits) {
			int64_t w;

			if (op_done(m, c->wait_op))
				w = m->oe[c->wait_op];
			else if (force && !moved)
				w = d->ops[c->wait_op].end;
			else
				break;
			end = m->cs[g] + c->base;
			if (w + c->wait_lat > end)
				end = w + c->wait_lat;
		} else {
			end = m->cs[g] + c->base;
		}
		m->ce[g] = end;
		m->tp[t]++;
		m->started[t] = 0;
		moved = 1;
	}
	return moved;
}

/* The latency of an edge that did not decide the recorded start: the typical one, at most the
 * recorded distance (so that the unedited replay keeps the recorded time). */
static int64_t other_lat(int64_t typ, int64_t start, int64_t from)
{
	int64_t rec = start - from;

	return rec < typ ? (rec > 0 ? rec : 0) : typ;
}

static int advance_stream(struct sim *m, int32_t s, int force)
{
	const struct fact_deps *d = m->d;
	int32_t first = d->stream_first[s], n = d->stream_first[s + 1] - first;
	int moved = 0;

	while (m->sp[s] < n) {
		int32_t i = first + m->sp[s];
		const struct op *o = &d->ops[i];
		int64_t t = CS_TS_UNKNOWN, dur, c;

		if (o->call >= 0) {
			if (call_started(m, o->call))
				c = m->cs[o->call];
			else if (force && !moved)
				c = d->calls[o->call].start;
			else
				break;
			t = c + (o->edge == EDGE_LAUNCH ? o->lat
							: other_lat(d->typ_launch, o->start,
								    d->calls[o->call].start));
		}
		if (o->dep >= 0) {
			if (op_done(m, o->dep))
				c = m->oe[o->dep] + o->lat;
			else if (force && !moved)
				c = d->ops[o->dep].end + o->lat;
			else
				break;
			if (t == CS_TS_UNKNOWN || c > t)
				t = c;
		}
		if (i > first) {
			c = m->oe[i - 1] +
			    (m->ov->op_gap && m->ov->op_gap[i] >= 0 ? m->ov->op_gap[i]
			     : o->edge == EDGE_STREAM
				     ? o->lat
				     : other_lat(d->typ_stream, o->start, d->ops[i - 1].end));
			if (t == CS_TS_UNKNOWN || c > t)
				t = c;
		}
		if (t == CS_TS_UNKNOWN)
			t = o->start;
		dur = m->ov->op_time && m->ov->op_time[i] >= 0 ? m->ov->op_time[i]
							       : o->end - o->start;
		m->os[i] = t;
		m->oe[i] = t + dur;
		m->sp[s]++;
		moved = 1;
	}
	return moved;
}

/*
 * Each step's time from the replayed times, as cs_step_time() measures the recorded ones: a step
 * starts with its first launch, so its replayed start moves as that launch moved (a step whose
 * start is an NVTX range's moves with its first launch too).
 */
static void step_times(const struct sim *m, int64_t *step_ns)
{
	const struct fact_deps *d = m->d;
	const cs_steps *s = d->s;
	int64_t *gs, *ge, *lr, *lp;

	if (!step_ns)
		return;
	gs = malloc((size_t)s->n * 4 * sizeof(*gs));
	if (!gs) {
		for (int32_t i = 0; i < s->n; i++)
			step_ns[i] = cs_step_time(s, i);
		return;
	}
	ge = gs + s->n;
	lr = ge + s->n; /* first launch of the step, recorded */
	lp = lr + s->n; /* and replayed */
	for (int32_t i = 0; i < s->n; i++)
		gs[i] = ge[i] = lr[i] = lp[i] = CS_TS_UNKNOWN;
	for (int64_t i = 0; i < d->nops; i++) {
		const struct op *o = &d->ops[i];
		int32_t st = o->step;

		if (st < 0)
			continue;
		if (gs[st] == CS_TS_UNKNOWN || m->os[i] < gs[st])
			gs[st] = m->os[i];
		if (ge[st] == CS_TS_UNKNOWN || m->oe[i] > ge[st])
			ge[st] = m->oe[i];
		if (o->call >= 0 && (lr[st] == CS_TS_UNKNOWN || d->calls[o->call].start < lr[st])) {
			lr[st] = d->calls[o->call].start;
			lp[st] = m->cs[o->call];
		}
	}
	for (int32_t i = 0; i < s->n; i++) {
		const cs_step *st = &s->v[i];
		int64_t t = CS_TS_UNKNOWN, shift = lr[i] != CS_TS_UNKNOWN ? lp[i] - lr[i] : 0;

		if (d->t0 != INT64_MIN && (i < d->from || i > d->last)) {
			step_ns[i] = cs_step_time(s, i); /* outside the window: as recorded */
			continue;
		}
		if (s->timing == CS_STEP_TIME_GPU && gs[i] != CS_TS_UNKNOWN) {
			for (int32_t j = i + 1; j < s->n && t == CS_TS_UNKNOWN; j++)
				if (gs[j] != CS_TS_UNKNOWN)
					t = gs[j] - gs[i];
			if (t == CS_TS_UNKNOWN && ge[i] != CS_TS_UNKNOWN)
				t = ge[i] - gs[i];
		}
		if (t == CS_TS_UNKNOWN) {
			int64_t e;

			if (i + 1 < s->n && st->end == s->v[i + 1].start)
				e = st->end +
				    (lr[i + 1] != CS_TS_UNKNOWN ? lp[i + 1] - lr[i + 1] : 0);
			else if (st->end == st->gpu_end && ge[i] != CS_TS_UNKNOWN)
				e = ge[i];
			else
				e = st->end + shift;
			t = e - (st->start + shift);
		}
		step_ns[i] = t > 0 ? t : 0;
	}
	free(gs);
}

int32_t fact_deps_span_steps(const struct fact_deps *d)
{
	int32_t n = d->last - d->from;

	return n > 0 ? n : 0;
}

/* The span of fact_deps_replay(): steps from .. last-1. */
static int64_t steady_span(const struct sim *m)
{
	const struct fact_deps *d = m->d;
	int32_t from = d->from, last = d->last;
	int64_t first_launch = CS_TS_UNKNOWN, last_launch = CS_TS_UNKNOWN, gpu_end = CS_TS_UNKNOWN;
	int64_t rec_first = CS_TS_UNKNOWN, rec_last = CS_TS_UNKNOWN;

	if (fact_deps_span_steps(d) <= 0)
		return 0;
	for (int64_t i = 0; i < d->nops; i++) {
		const struct op *o = &d->ops[i];

		if (o->step < from || o->step > last)
			continue;
		if (o->call >= 0 && o->step == from &&
		    (rec_first == CS_TS_UNKNOWN || d->calls[o->call].start < rec_first)) {
			rec_first = d->calls[o->call].start;
			first_launch = m->cs[o->call];
		}
		if (o->call >= 0 && o->step == last &&
		    (rec_last == CS_TS_UNKNOWN || d->calls[o->call].start < rec_last)) {
			rec_last = d->calls[o->call].start;
			last_launch = m->cs[o->call];
		}
		if (o->step < last && (gpu_end == CS_TS_UNKNOWN || m->oe[i] > gpu_end))
			gpu_end = m->oe[i];
	}
	if (first_launch == CS_TS_UNKNOWN)
		return 0;
	if (last_launch == CS_TS_UNKNOWN || (gpu_end != CS_TS_UNKNOWN && gpu_end > last_launch))
		last_launch = gpu_end;
	return last_launch != CS_TS_UNKNOWN && last_launch > first_launch
		       ? last_launch - first_launch
		       : 0;
}

/* When no chain can move (a cycle of inferred edges), the chain whose next node was recorded
 * first goes on with its missing input at the recorded time. */
static void unblock(struct sim *m)
{
	const struct fact_deps *d = m->d;
	int64_t best = INT64_MAX;
	int32_t bt = -1, bs = -1;

	for (int32_t t = 0; t < d->nthreads; t++)
		if (m->tp[t] < d->thread_first[t + 1] - d->thread_first[t]) {
			int64_t x = d->calls[d->thread_first[t] + m->tp[t]].start;

			if (x < best) {
				best = x;
				bt = t;
			}
		}
	for (int32_t s = 0; s < d->nstreams; s++)
		if (m->sp[s] < d->stream_first[s + 1] - d->stream_first[s]) {
			int64_t x = d->ops[d->stream_first[s] + m->sp[s]].start;

			if (x < best) {
				best = x;
				bs = s;
				bt = -1;
			}
		}
	if (bs >= 0)
		advance_stream(m, bs, 1);
	else if (bt >= 0)
		advance_thread(m, bt, 1);
}

int fact_deps_replay(const struct fact_deps *d, const cs_edit *e, int64_t *step_ns, int64_t *span)
{
	struct overrides ov;
	struct sim m;
	int32_t total = d->nthreads + d->nstreams;
	int rc = CS_ERR_NOMEM;

	memset(&m, 0, sizeof(m));
	if (overrides_make(d, e, &ov))
		goto out;
	m.d = d;
	m.ov = &ov;
	m.cs = malloc((size_t)(d->ncalls > 0 ? d->ncalls : 1) * sizeof(*m.cs));
	m.ce = malloc((size_t)(d->ncalls > 0 ? d->ncalls : 1) * sizeof(*m.ce));
	m.os = malloc((size_t)d->nops * sizeof(*m.os));
	m.oe = malloc((size_t)d->nops * sizeof(*m.oe));
	m.tp = calloc((size_t)d->nthreads + 1, sizeof(*m.tp));
	m.sp = calloc((size_t)d->nstreams + 1, sizeof(*m.sp));
	m.started = calloc((size_t)d->nthreads + 1, 1);
	if (!m.cs || !m.ce || !m.os || !m.oe || !m.tp || !m.sp || !m.started)
		goto out;
	for (;;) {
		int moved = 0;
		int32_t done = 0;

		for (int32_t t = 0; t < d->nthreads; t++) {
			moved |= advance_thread(&m, t, 0);
			done += m.tp[t] == d->thread_first[t + 1] - d->thread_first[t];
		}
		for (int32_t s = 0; s < d->nstreams; s++) {
			moved |= advance_stream(&m, s, 0);
			done += m.sp[s] == d->stream_first[s + 1] - d->stream_first[s];
		}
		if (done == total)
			break;
		if (!moved)
			unblock(&m);
	}
	step_times(&m, step_ns);
	if (span)
		*span = steady_span(&m);
	rc = 0;
out:
	overrides_free(&ov);
	free(m.cs);
	free(m.ce);
	free(m.os);
	free(m.oe);
	free(m.tp);
	free(m.sp);
	free(m.started);
	return rc;
}
