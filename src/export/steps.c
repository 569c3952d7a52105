/*
 * steps.c - training steps as Kineto's ProfilerStep#N slices, so that Holistic Trace Analysis and
 * TensorBoard's profiler plugin find them: the steps `cuscope report` finds in each process
 * (cs_steps_detect), each on the host thread that launched most of its work, spanning the step's
 * host side (from its first launch to the first launch of the next step).
 *
 * Slices of one thread must nest (chrome://tracing, Perfetto and the plugin's operator tree
 * assume it), while a step boundary found from the kernel sequence may fall inside an NVTX range,
 * an API call or a wait of that thread. A boundary inside such a slice moves to the slice's start
 * (so the slice goes to the later step) unless the slice holds both steps around the boundary; the
 * first start and the last end move out the same way. When a process's steps still would cut a
 * slice of their thread, they go on a lane of their own next to it (ex_step.own_lane).
 */
#include <stdlib.h>
#include <string.h>

#include "cuscope/analyze.h"
#include "cuscope/grow.h"
#include "export.h"

/* A slice of the steps' thread: NVTX push/pop range, API call, host wait or launch. */
struct ival {
	int64_t start, end;
	int64_t parent; /* index of the innermost slice containing it, -1 for none */
};

static int ival_cmp(const void *a, const void *b)
{
	const struct ival *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end; /* the longer (the parent) first */
}

struct ivals {
	struct ival *v;
	size_t n, cap;
};

static int ival_add(struct ivals *s, int64_t start, int64_t end)
{
	if (start == CS_TS_UNKNOWN || end == CS_TS_UNKNOWN || end <= start)
		return 0;
	if (cs_grow((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v)))
		return CS_ERR_NOMEM;
	s->v[s->n].start = start;
	s->v[s->n].end = end;
	s->v[s->n].parent = -1;
	s->n++;
	return 0;
}

/* The slices of (pid, tid) that the exporter writes on the thread, sorted, with their parents. */
static int thread_slices(const cs_analysis *a, uint32_t pid, uint32_t tid, struct ivals *s)
{
	int64_t *stack = NULL;
	size_t depth = 0;
	int rc = 0;

	for (int64_t i = 0; !rc && i < a->nnvtx; i++)
		if (a->nvtx[i].pid == pid && a->nvtx[i].tid == tid &&
		    a->nvtx[i].type == CS_NVTX_PUSHPOP)
			rc = ival_add(s, a->nvtx[i].start, a->nvtx[i].end);
	for (int64_t i = 0; !rc && i < a->napis; i++)
		if (a->apis[i].pid == pid && a->apis[i].tid == tid)
			rc = ival_add(s, a->apis[i].start, a->apis[i].end);
	for (int64_t i = 0; !rc && i < a->nsyncs; i++)
		if (a->syncs[i].pid == pid && a->syncs[i].tid == tid && a->syncs[i].host_wait)
			rc = ival_add(s, a->syncs[i].start, a->syncs[i].end);
	for (int64_t i = 0; !rc && i < a->nkernels; i++)
		if (a->kernels[i].pid == pid && a->kernels[i].launch_tid == tid)
			rc = ival_add(s, a->kernels[i].launch_start, a->kernels[i].launch_end);
	for (int64_t i = 0; !rc && i < a->ncopies; i++)
		if (a->copies[i].pid == pid && a->copies[i].launch_tid == tid)
			rc = ival_add(s, a->copies[i].launch_start, a->copies[i].launch_end);
	if (rc)
		return rc;
	cs_sort(s->v, s->n, sizeof(*s->v), ival_cmp);
	stack = malloc((s->n ? s->n : 1) * sizeof(*stack));
	if (!stack)
		return CS_ERR_NOMEM;
	for (size_t i = 0; i < s->n; i++) {
		while (depth && s->v[stack[depth - 1]].end <= s->v[i].start)
			depth--;
		s->v[i].parent = depth ? stack[depth - 1] : -1;
		stack[depth++] = (int64_t)i;
	}
	free(stack);
	return 0;
}

/* The innermost slice with start < t < end, or -1. */
static int64_t innermost_at(const struct ivals *s, int64_t t)
{
	size_t lo = 0, hi = s->n;
	int64_t i;

	while (lo < hi) { /* the first slice starting at t or later */
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid].start < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = (int64_t)lo - 1; i >= 0 && s->v[i].end <= t; i = s->v[i].parent)
		;
	return i;
}

/* The outermost slice strictly containing t that does not hold all of [lo, hi), or -1. */
static int64_t outermost_cut(const struct ivals *s, int64_t t, int64_t lo, int64_t hi)
{
	int64_t found = -1;

	for (int64_t i = innermost_at(s, t); i >= 0; i = s->v[i].parent)
		if (!(s->v[i].start <= lo && s->v[i].end >= hi))
			found = i;
	return found;
}

/* Move the bounds of steps v[0..n) (one process, one thread, by start) out of the slices they
 * would cut; 1 when they then nest with every slice, else 0. */
static int place(const struct ivals *s, struct ex_step *v, int n)
{
	int64_t c;

	for (int i = 0; i < n; i++) {
		int64_t prev_start = i ? v[i - 1].start : v[i].start;

		if (i && v[i - 1].end == v[i].start) {
			/* a shared boundary: into the later step, unless the slice holds both */
			c = outermost_cut(s, v[i].start, prev_start, v[i].end);
			if (c >= 0)
				v[i - 1].end = v[i].start = s->v[c].start;
		} else {
			c = outermost_cut(s, v[i].start, v[i].start, v[i].end);
			if (c >= 0)
				v[i].start = s->v[c].start;
		}
		if (i + 1 == n || v[i].end != v[i + 1].start) {
			c = outermost_cut(s, v[i].end, v[i].start, v[i].end);
			if (c >= 0)
				v[i].end = s->v[c].end;
		}
	}
	for (int i = 0; i < n; i++) {
		if (v[i].end <= v[i].start || (i && v[i].start < v[i - 1].end))
			return 0;
		if (outermost_cut(s, v[i].start, v[i].start, v[i].end) >= 0 ||
		    outermost_cut(s, v[i].end, v[i].start, v[i].end) >= 0)
			return 0;
	}
	return 1;
}

struct tid_count {
	uint32_t tid;
	int64_t n;
};

/* Count a launch of tid in the step's tally (the first 8 threads seen; more are rare). */
static void tally(struct tid_count *c, uint32_t tid)
{
	for (int j = 0; j < 8; j++) {
		if (c[j].n && c[j].tid != tid)
			continue;
		c[j].tid = tid;
		c[j].n++;
		return;
	}
}

/* The steps of process pid appended to out. */
static int process_steps(const cs_analysis *a, uint32_t pid, const char *step_range,
			 struct ex_step **out, int *n, size_t *cap)
{
	cs_step_opts so = {step_range, -1, pid, 0};
	cs_steps steps;
	cs_error err = {0, ""};
	struct tid_count *counts = NULL;
	struct ivals slices = {NULL, 0, 0};
	struct ex_step *v;
	int rc, first = *n;

	memset(&steps, 0, sizeof(steps));
	rc = cs_steps_detect(a, &so, &steps, &err);
	if (rc && step_range) { /* the pattern matches nothing here: as report does */
		cs_steps_free(&steps);
		memset(&steps, 0, sizeof(steps));
		so.step_range = NULL;
		rc = cs_steps_detect(a, &so, &steps, &err);
	}
	if (rc || steps.n <= 0 || steps.pid != pid) {
		cs_steps_free(&steps);
		return rc == CS_ERR_NOMEM ? rc : 0; /* no steps in this process */
	}
	counts = calloc((size_t)steps.n * 8, sizeof(*counts));
	rc = counts ? 0 : CS_ERR_NOMEM;
	for (int64_t i = 0; !rc && i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];
		int s;

		if (k->pid != pid || !k->launch_tid)
			continue;
		s = cs_steps_find_launch(&steps, k->launch_start, k->start);
		if (s >= 0)
			tally(&counts[(size_t)s * 8], k->launch_tid);
	}
	if (!rc && cs_grow((void **)out, cap, (size_t)*n + (size_t)steps.n, sizeof(**out)))
		rc = CS_ERR_NOMEM;
	for (int i = 0; !rc && i < steps.n; i++) {
		const cs_step *st = &steps.v[i];
		const struct tid_count *c = &counts[(size_t)i * 8];
		uint32_t tid = pid;
		int64_t best = 0;

		if (st->start == CS_TS_UNKNOWN || st->end == CS_TS_UNKNOWN || st->end <= st->start)
			continue;
		for (int j = 0; j < 8; j++)
			if (c[j].n > best) {
				best = c[j].n;
				tid = c[j].tid;
			}
		v = &(*out)[(*n)++];
		v->pid = pid;
		v->tid = tid;
		v->start = st->start;
		v->end = st->end;
		v->index = st->index;
		v->own_lane = 0;
	}
	/* place the steps of each thread; a thread whose steps would cut a slice gets its own lane
	 */
	for (int i = first; !rc && i < *n;) {
		uint32_t tid = (*out)[i].tid;
		int j = i;

		while (j < *n && (*out)[j].tid == tid)
			j++;
		/* steps of one thread in a row: runs split by other threads are placed apart */
		slices.n = 0;
		rc = thread_slices(a, pid, tid, &slices);
		if (!rc) {
			struct ex_step *copy = malloc(sizeof(*copy) * (size_t)(j - i));

			if (!copy) {
				rc = CS_ERR_NOMEM;
				break;
			}
			memcpy(copy, &(*out)[i], sizeof(*copy) * (size_t)(j - i));
			if (place(&slices, copy, j - i))
				memcpy(&(*out)[i], copy, sizeof(*copy) * (size_t)(j - i));
			else
				for (int k = i; k < j; k++)
					(*out)[k].own_lane = 1;
			free(copy);
		}
		i = j;
	}
	free(slices.v);
	free(counts);
	cs_steps_free(&steps);
	return rc;
}

struct proc_list {
	uint32_t *pids;
	size_t n, cap;
	int64_t only;
};

static int add_pid(const cs_process *p, void *arg)
{
	struct proc_list *l = arg;

	if (!p->used_cuda || (l->only >= 0 && p->pid != l->only))
		return 0;
	if (cs_grow((void **)&l->pids, &l->cap, l->n + 1, sizeof(*l->pids)))
		return CS_ERR_NOMEM;
	l->pids[l->n++] = p->pid;
	return 0;
}

int ex_steps_find(cs_trace *t, const char *step_range, int64_t pid, int64_t t0, int64_t t1,
		  int64_t max_bytes, struct ex_step **out, int *n, char *window, size_t wsize,
		  cs_error *err)
{
	cs_analysis an;
	struct proc_list procs = {NULL, 0, 0, pid};
	cs_load_opts lo = {max_bytes, CS_TS_UNKNOWN, CS_TS_UNKNOWN};
	size_t cap = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (wsize)
		window[0] = '\0';
	memset(&an, 0, sizeof(an));
	rc = cs_trace_each_process(t, add_pid, &procs, err);
	if (rc == CS_ERR_NOMEM)
		return cs_error_set(err, rc, "out of memory");
	if (rc || !procs.n) {
		free(procs.pids);
		return rc;
	}
	/* the whole trace, numbered from its first step, within the limit; over it, the export's
	 * time range (or the middle of the trace) */
	if (max_bytes > 0 && (t0 != CS_TS_UNKNOWN || t1 != CS_TS_UNKNOWN)) {
		cs_trace_summary sum;

		rc = cs_trace_get_summary(t, &sum, err);
		if (rc) {
			free(procs.pids);
			return rc;
		}
		if (cs_analysis_estimate(sum.counts) > max_bytes) {
			lo.from = t0;
			lo.to = t1;
		}
	}
	rc = cs_analysis_load_opts(t, &an, &lo, err);
	if (!rc && an.window.on && wsize) /* the range asked is export's --time-range */
		cs_load_window_text_as(window, wsize, &an.window, "--time-range");
	for (size_t i = 0; !rc && i < procs.n; i++)
		rc = process_steps(&an, procs.pids[i], step_range, out, n, &cap);
	if (rc == CS_ERR_NOMEM)
		cs_error_set(err, rc, "out of memory");
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	cs_analysis_free(&an);
	free(procs.pids);
	return rc;
}

int cs_export_steps_find(cs_trace *t, const char *step_range, int64_t max_bytes,
			 cs_export_steps **out, cs_error *err)
{
	cs_export_steps *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	if (!s)
		return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
	rc = ex_steps_find(t, step_range, -1, CS_TS_UNKNOWN, CS_TS_UNKNOWN, max_bytes, &s->v, &s->n,
			   s->window, sizeof(s->window), err);
	if (rc) {
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void cs_export_steps_free(cs_export_steps *s)
{
	if (!s)
		return;
	free(s->v);
	free(s);
}

/* ---- what a compute capability determines (cudaDeviceProp) ---- */

static const struct ex_arch arch_table[] = {
	/* major, minor: threads/block, threads/SM, regs/block, regs/SM, warp, shared/block,
	 * shared/SM, shared/block opt-in (CUDA C++ Programming Guide, compute capabilities) */
	{6, 0, 1024, 2048, 65536, 65536, 32, 49152, 65536, 49152},
	{6, 1, 1024, 2048, 65536, 65536, 32, 49152, 98304, 49152},
	{7, 0, 1024, 2048, 65536, 65536, 32, 49152, 98304, 98304},
	{7, 5, 1024, 1024, 65536, 65536, 32, 49152, 65536, 65536},
	{8, 0, 1024, 2048, 65536, 65536, 32, 49152, 167936, 166912},
	{8, 6, 1024, 1536, 65536, 65536, 32, 49152, 102400, 101376},
	{8, 9, 1024, 1536, 65536, 65536, 32, 49152, 102400, 101376},
	{9, 0, 1024, 2048, 65536, 65536, 32, 49152, 233472, 232448},
	{10, 0, 1024, 2048, 65536, 65536, 32, 49152, 233472, 232448},
	{12, 0, 1024, 1536, 65536, 65536, 32, 49152, 102400, 101376},
};

const struct ex_arch *ex_arch_of(int major, int minor)
{
	for (size_t i = 0; i < sizeof(arch_table) / sizeof(arch_table[0]); i++)
		if (arch_table[i].major == major && arch_table[i].minor == minor)
			return &arch_table[i];
	return NULL;
}
