/*
 * steps.c - training steps: where each step starts and ends, found from NVTX ranges the user names
 * (--step-range), from cudaProfilerStart/Stop pairs, or from the repeating period of the GPU work
 * (kernels, memcpys, memsets); then each step's kernels, GPU span and GPU busy time, which steps
 * are warm-up, and whether step times come from the host or from the GPU.
 *
 * docs/steps.md explains the period detector and why it decides as it does.
 */
#include <fnmatch.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/sort.h"
#include "cuscope/grow.h"
#include "cuscope/steps.h"
#include "cuscope/json.h"
#include "cuscope/checked.h"
#include "cuscope/u64map.h"
#include "cuscope/units.h"

/* Period detection (docs/steps.md). */
#define MIN_OCCURRENCES	   3   /* an anchor kernel repeats at least this often */
#define MIN_PERIOD	   2   /* kernels per step */
#define REGULAR_SHARE	   0.8 /* share of an anchor's gaps that are near the median gap */
#define MIN_COVERAGE	   0.3 /* share of the kernel sequence an anchor's repetitions span */
#define MAX_SPAN_RATIO	   2.0 /* an anchor's span: at most this many (occurrences - 1) gaps */
#define WARMUP_GAPS	   2   /* gaps of warm-up steps left out of that span (autotuning) */
#define PRESENT_SHARE	   0.5 /* a step kernel: in at least this share of the periods */
#define ONCE_SHARE	   0.8 /* a once-per-step kernel: exactly once in this share of the periods */
#define LONG_CONTENT_SHARE 0.05 /* work of a long period missing from most short ones */
#define MIN_STEPS	   3

/* A step span in host time, before its statistics. */
struct span {
	int64_t start, end;
};

struct span_list {
	struct span *v;
	int32_t n;
	size_t cap;
};

static int span_add(struct span_list *l, int64_t start, int64_t end)
{
	if (cs_grow((void **)&l->v, &l->cap, (size_t)l->n + 1, sizeof(*l->v)))
		return CS_ERR_NOMEM;
	l->v[l->n].start = start;
	l->v[l->n].end = end;
	l->n++;
	return 0;
}

const char *cs_step_method_name(int method)
{
	switch (method) {
	case CS_STEPS_NVTX:
		return "nvtx";
	case CS_STEPS_PROFILER:
		return "profiler";
	case CS_STEPS_PERIOD:
		return "period";
	case CS_STEPS_WINDOWS:
		return "windows";
	default:
		return "none";
	}
}

/* ---- the process to take steps from ---- */

struct pid_count {
	uint32_t pid;
	int64_t n;
};

/* The process with the most kernels (the lowest pid on a tie); 0 without kernels. */
static uint32_t busiest_pid(const cs_analysis *a)
{
	struct pid_count pc[64];
	int npc = 0;
	uint32_t best = 0;
	int64_t best_n = -1;

	/* Traces hold a few processes: a short list, with a slow path past 64 of them. */
	for (int64_t i = 0; i < a->nkernels; i++) {
		uint32_t pid = a->kernels[i].pid;
		int j;

		for (j = 0; j < npc && pc[j].pid != pid; j++)
			;
		if (j == npc) {
			if (npc == 64) {
				int64_t n = 0;

				for (int64_t x = 0; x < a->nkernels; x++)
					n += a->kernels[x].pid == pid;
				if (n > best_n || (n == best_n && pid < best)) {
					best = pid;
					best_n = n;
				}
				continue;
			}
			pc[npc].pid = pid;
			pc[npc].n = 0;
			npc++;
		}
		pc[j].n++;
	}
	for (int j = 0; j < npc; j++)
		if (pc[j].n > best_n || (pc[j].n == best_n && pc[j].pid < best)) {
			best = pc[j].pid;
			best_n = pc[j].n;
		}
	return best;
}

static int64_t kernels_of_pid(const cs_analysis *a, uint32_t pid)
{
	int64_t n = 0;

	for (int64_t i = 0; i < a->nkernels; i++)
		n += a->kernels[i].pid == pid;
	return n;
}

/* ---- NVTX ranges ---- */

struct nvtx_ref {
	uint32_t pid, tid;
	int64_t start, end;
};

static int cmp_nvtx_ref(const void *pa, const void *pb)
{
	const struct nvtx_ref *x = pa, *y = pb;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->end < y->end) - (x->end > y->end); /* the longer range first */
}

/* The outermost ranges of v[0..n) (one thread, sorted), made disjoint; returns how many. */
static int32_t outermost(struct nvtx_ref *v, int32_t n)
{
	int32_t m = 0;

	for (int32_t i = 0; i < n; i++) {
		if (m > 0 && v[i].start >= v[m - 1].start && v[i].end <= v[m - 1].end)
			continue; /* nested in the one kept before */
		if (m > 0 && v[i].start < v[m - 1].end)
			v[m - 1].end = v[i].start; /* crossing start/end ranges: cut the earlier */
		v[m++] = v[i];
	}
	return m;
}

static int steps_nvtx(const cs_analysis *a, const char *pattern, uint32_t want_pid,
		      struct span_list *out, uint32_t *pid, char *detail, size_t dsize,
		      cs_error *err)
{
	struct nvtx_ref *v = NULL;
	int32_t n = 0, best_first = -1, best_n = 0, best_kernels = 0;
	int64_t ranges = 0;
	int rc = 0;

	v = malloc(((size_t)a->nnvtx + 1) * sizeof(*v));
	if (!v)
		return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
	for (int64_t i = 0; i < a->nnvtx; i++) {
		const cs_a_nvtx *r = &a->nvtx[i];

		if (r->type != CS_NVTX_PUSHPOP && r->type != CS_NVTX_STARTEND)
			continue;
		ranges++;
		if (r->start == CS_TS_UNKNOWN || r->end == CS_TS_UNKNOWN || r->end <= r->start)
			continue;
		if (want_pid && r->pid != want_pid)
			continue;
		if (fnmatch(pattern, cs_analysis_string(a, r->text_id), 0) != 0)
			continue;
		v[n].pid = r->pid;
		v[n].tid = r->tid;
		v[n].start = r->start;
		v[n].end = r->end;
		n++;
	}
	if (n == 0) {
		free(v);
		return cs_error_set(err, CS_ERR_INVALID,
				    "no NVTX range matches --step-range '%s'%s (the trace has %lld "
				    "NVTX %s)",
				    pattern, want_pid ? " in that process" : "", (long long)ranges,
				    ranges == 1 ? "range" : "ranges");
	}
	cs_sort(v, (size_t)n, sizeof(*v), cmp_nvtx_ref);
	/* The thread with the most outermost matching ranges; ties: the process with more kernels.
	 */
	for (int32_t i = 0; i < n;) {
		int32_t j = i, m;
		int64_t k;

		while (j < n && v[j].pid == v[i].pid && v[j].tid == v[i].tid)
			j++;
		m = outermost(v + i, j - i);
		k = kernels_of_pid(a, v[i].pid);
		if (m > best_n || (m == best_n && k > best_kernels)) {
			best_first = i;
			best_n = m;
			best_kernels = (int32_t)(k > INT32_MAX ? INT32_MAX : k);
		}
		i = j;
	}
	for (int32_t i = 0; i < best_n && !rc; i++)
		rc = span_add(out, v[best_first + i].start, v[best_first + i].end);
	*pid = v[best_first].pid;
	snprintf(detail, dsize, "NVTX ranges '%s' of thread %u in pid %u", pattern,
		 v[best_first].tid, v[best_first].pid);
	free(v);
	if (rc)
		return cs_error_set(err, rc, "out of memory");
	return 0;
}

/* ---- cudaProfilerStart/Stop ---- */

static int api_is(const char *name, const char *what)
{
	size_t n = strlen(what);

	return (!strncmp(name, "cuda", 4) && !strncmp(name + 4, what, n)) ||
	       (!strncmp(name, "cu", 2) && !strncmp(name + 2, what, n));
}

static int steps_profiler(const cs_analysis *a, uint32_t pid, struct span_list *out, char *detail,
			  size_t dsize)
{
	int64_t open = CS_TS_UNKNOWN;
	int rc = 0;

	for (int64_t i = 0; i < a->napis && !rc; i++) {
		const cs_a_api *x = &a->apis[i];
		const char *name;

		if (x->pid != pid || x->start == CS_TS_UNKNOWN)
			continue;
		name = cs_analysis_string(a, x->name_id);
		if (api_is(name, "ProfilerStart")) {
			if (open == CS_TS_UNKNOWN)
				open = x->start;
		} else if (api_is(name, "ProfilerStop") && open != CS_TS_UNKNOWN) {
			int64_t end = x->end != CS_TS_UNKNOWN ? x->end : x->start;

			rc = span_add(out, open, end > open ? end : open + 1);
			open = CS_TS_UNKNOWN;
		}
	}
	if (rc)
		return rc;
	if (out->n < 2) {
		/* One capture range is a region of interest, not a loop of steps. */
		out->n = 0;
		return 0;
	}
	snprintf(detail, dsize, "cudaProfilerStart/Stop pairs of pid %u", pid);
	return 0;
}

/* ---- the period of the GPU work ---- */

/*
 * The GPU work of one process in launch order: kernels, memcpys and memsets, each as a dense
 * symbol (a kernel by its name, a memcpy by its direction, a memset).
 */
struct seq {
	int32_t *sym;	  /* symbol of each operation */
	int64_t n;	  /* operations */
	int32_t nsym;	  /* distinct symbols */
	int64_t *name_id; /* StringIds id of each kernel symbol; CS_ID_NONE for copies */
	uint8_t *is_copy; /* per symbol: a memcpy or memset */
};

struct run {
	int64_t pos, end;     /* in kernel_stream_order */
	int64_t launch, start; /* launch time and start of the kernel at pos */
	int32_t idx;	       /* its index */
};

/* Launch-order key of a run's next kernel: (launch time, start, index). */
static int launch_before(const struct run *x, const struct run *y)
{
	if (x->launch != y->launch)
		return x->launch < y->launch;
	if (x->start != y->start)
		return x->start < y->start;
	return x->idx < y->idx;
}

/* The run's key from the kernel at its pos. */
static void run_head(struct run *r, const cs_a_kernel *k, const int32_t *order)
{
	r->idx = order[r->pos];
	r->launch = cs_launch_time(k[r->idx].launch_start, k[r->idx].start);
	r->start = k[r->idx].start;
}

/*
 * The kernels of one process in launch order. Each stream runs its kernels in the order they were
 * launched, so the streams' runs of kernel_stream_order are each in launch order already: a k-way
 * merge of them (a heap of runs) is the whole order, in O(n log streams), with no array of n.
 */
struct merge {
	const cs_a_kernel *k;
	const int32_t *order;
	struct run *runs;
	int nruns;
	int64_t n;
};

static void heap_down(struct merge *m, int i)
{
	for (;;) {
		int l = 2 * i + 1, r = l + 1, x = i;

		if (l < m->nruns && launch_before(&m->runs[l], &m->runs[x]))
			x = l;
		if (r < m->nruns && launch_before(&m->runs[r], &m->runs[x]))
			x = r;
		if (x == i)
			return;
		struct run t = m->runs[i];

		m->runs[i] = m->runs[x];
		m->runs[x] = t;
		i = x;
	}
}

static int merge_open(const cs_analysis *a, uint32_t pid, struct merge *m)
{
	const int32_t *order = a->kernel_stream_order;
	size_t cap = 0;

	memset(m, 0, sizeof(*m));
	m->k = a->kernels;
	m->order = order;
	for (int64_t i = 0; i < a->nkernels;) {
		const cs_a_kernel *k = &a->kernels[order[i]];
		int64_t j = i + 1;

		while (j < a->nkernels && a->kernels[order[j]].pid == k->pid &&
		       a->kernels[order[j]].device_id == k->device_id &&
		       a->kernels[order[j]].stream_id == k->stream_id)
			j++;
		if (k->pid == pid) {
			if (cs_grow((void **)&m->runs, &cap, (size_t)m->nruns + 1,
				    sizeof(*m->runs))) {
				free(m->runs);
				m->runs = NULL;
				return CS_ERR_NOMEM;
			}
			m->runs[m->nruns].pos = i;
			m->runs[m->nruns].end = j;
			run_head(&m->runs[m->nruns], m->k, order);
			m->nruns++;
			m->n += j - i;
		}
		i = j;
	}
	for (int i = m->nruns / 2 - 1; i >= 0; i--)
		heap_down(m, i);
	return 0;
}

/* Index of the next kernel in launch order, or -1 at the end. */
static int32_t merge_next(struct merge *m)
{
	int32_t idx;

	if (m->nruns == 0)
		return -1;
	idx = m->runs[0].idx;
	if (++m->runs[0].pos == m->runs[0].end)
		m->runs[0] = m->runs[--m->nruns];
	else
		run_head(&m->runs[0], m->k, m->order);
	heap_down(m, 0);
	return idx;
}

static void merge_close(struct merge *m)
{
	free(m->runs);
	m->runs = NULL;
}

/*
 * Kernels and copies (memcpys, memsets) of one process in launch order: the merged kernels, and
 * the process's copies sorted by launch, merged again. Copies are few next to kernels.
 */
struct copy_ref {
	int64_t launch, start;
	int32_t idx;
};

struct op_merge {
	const cs_analysis *a;
	struct merge km;
	int32_t next_kernel;	 /* -1 at the end */
	struct copy_ref *copies; /* by (launch time, start, index) */
	int64_t ncopies, ci;
};

/* (launch time, start, index): a total order, the same by any sort */
static const cs_sort_key copy_ref_keys[] = {
	{offsetof(struct copy_ref, launch), CS_KEY_I64},
	{offsetof(struct copy_ref, start), CS_KEY_I64},
	{offsetof(struct copy_ref, idx), CS_KEY_I32},
};

static int op_open(const cs_analysis *a, uint32_t pid, int with_copies, struct op_merge *m)
{
	int rc;

	memset(m, 0, sizeof(*m));
	m->a = a;
	rc = merge_open(a, pid, &m->km);
	if (rc)
		return rc;
	m->copies = malloc(((size_t)a->ncopies + 1) * sizeof(*m->copies));
	if (!m->copies) {
		merge_close(&m->km);
		return CS_ERR_NOMEM;
	}
	for (int64_t i = 0; i < a->ncopies; i++) {
		const cs_a_copy *c = &a->copies[i];

		if (!with_copies || c->pid != pid ||
		    cs_launch_time(c->launch_start, c->start) == CS_TS_UNKNOWN)
			continue; /* a copy of unknown time has no place in the order */
		m->copies[m->ncopies].launch = cs_launch_time(c->launch_start, c->start);
		m->copies[m->ncopies].start = c->start;
		m->copies[m->ncopies].idx = (int32_t)i;
		m->ncopies++;
	}
	cs_sort_records(m->copies, (size_t)m->ncopies, sizeof(*m->copies), copy_ref_keys, 3);
	m->next_kernel = merge_next(&m->km);
	return 0;
}

/* Operations of the process in all. */
static int64_t op_count(const struct op_merge *m)
{
	return m->km.n + m->ncopies;
}

/*
 * The next operation in launch order: its index into a->kernels (*is_copy 0) or a->copies
 * (*is_copy 1), or -1 at the end. A kernel goes before a copy launched at the same time.
 */
static int32_t op_next(struct op_merge *m, int *is_copy)
{
	int32_t k = m->next_kernel;
	const struct copy_ref *c = m->ci < m->ncopies ? &m->copies[m->ci] : NULL;
	int take_copy;

	if (k < 0 && !c)
		return -1;
	if (k < 0) {
		take_copy = 1;
	} else if (!c) {
		take_copy = 0;
	} else {
		const cs_a_kernel *kk = &m->a->kernels[k];
		int64_t lk = cs_launch_time(kk->launch_start, kk->start);

		take_copy = c->launch < lk || (c->launch == lk && c->start < kk->start);
	}
	*is_copy = take_copy;
	if (take_copy) {
		m->ci++;
		return c->idx;
	}
	m->next_kernel = merge_next(&m->km);
	return k;
}

static void op_close(struct op_merge *m)
{
	merge_close(&m->km);
	free(m->copies);
	m->copies = NULL;
}

/*
 * The process's GPU operations as dense symbols 0..nsym-1: kernel name ids, and the kinds of copy
 * (memcpy directions, memset), mapped through a hash map.
 */
#define COPY_KEY   0x4000000000000000ull /* symbol keys of copies: COPY_KEY | kind */
#define MEMSET_KEY (COPY_KEY | 0xffffull)

/*
 * The operations of one process in launch order, merged once for every pass of the step search
 * (the sequences with copies and without, the spans of the steps): op[i] is a kernel's index, or
 * -1 - index of a copy. ncopies: how many are copies.
 */
struct launch_order {
	int32_t *op;
	int64_t n, ncopies;
};

static int launch_order_build(const cs_analysis *a, uint32_t pid, int with_copies,
			      struct launch_order *o)
{
	struct op_merge m;
	int32_t idx;
	int is_copy, rc;

	memset(o, 0, sizeof(*o));
	rc = op_open(a, pid, with_copies, &m);
	if (rc)
		return rc;
	o->op = malloc(((size_t)op_count(&m) + 1) * sizeof(*o->op));
	if (!o->op) {
		op_close(&m);
		return CS_ERR_NOMEM;
	}
	while ((idx = op_next(&m, &is_copy)) >= 0) {
		o->op[o->n++] = is_copy ? -1 - idx : idx;
		o->ncopies += is_copy;
	}
	op_close(&m);
	return 0;
}

/* Symbols of the kernel name ids below this are kept in an array by id, the others in a map. */
#define DENSE_NAME_IDS (1 << 22)

static int seq_build(const cs_analysis *a, const struct launch_order *o, int with_copies,
		     struct seq *s)
{
	struct u64map ids; /* name id or copy key -> int32_t symbol */
	int32_t *dense = NULL; /* symbol of name id i, -1 when none yet */
	size_t cap = 0, cap2 = 0, dcap = 0;
	int rc;

	memset(s, 0, sizeof(*s));
	u64map_init(&ids, sizeof(int32_t));
	rc = CS_ERR_NOMEM;
	s->sym = malloc(((size_t)(with_copies ? o->n : o->n - o->ncopies) + 1) * sizeof(*s->sym));
	if (!s->sym)
		goto out;
	for (int64_t i = 0; i < o->n; i++) {
		int32_t op = o->op[i], idx = op >= 0 ? op : -1 - op;
		int is_copy = op < 0;
		uint64_t key;
		int created;
		int32_t *sym;

		if (is_copy && !with_copies)
			continue;
		if (is_copy)
			key = a->copies[idx].is_memset
				      ? MEMSET_KEY
				      : COPY_KEY | (uint64_t)(uint32_t)a->copies[idx].copy_kind;
		else
			key = (uint64_t)a->kernels[idx].name_id;
		if (key < DENSE_NAME_IDS) {
			if (key >= dcap) {
				size_t old = dcap;

				if (cs_grow((void **)&dense, &dcap, (size_t)key + 1, sizeof(*dense)))
					goto out;
				memset(dense + old, 0xff, (dcap - old) * sizeof(*dense));
			}
			sym = &dense[key];
			created = *sym < 0;
		} else {
			sym = u64map_put(&ids, key, &created);
			if (!sym)
				goto out;
		}
		if (created) {
			if (cs_grow((void **)&s->name_id, &cap, (size_t)s->nsym + 1,
				    sizeof(*s->name_id)) ||
			    cs_grow((void **)&s->is_copy, &cap2, (size_t)s->nsym + 1,
				    sizeof(*s->is_copy)))
				goto out;
			s->name_id[s->nsym] = is_copy ? CS_ID_NONE : a->kernels[idx].name_id;
			s->is_copy[s->nsym] = (uint8_t)is_copy;
			*sym = s->nsym++;
		}
		s->sym[s->n++] = *sym;
	}
	rc = 0;
out:
	free(dense);
	u64map_free(&ids);
	return rc;
}

struct anchor {
	int32_t sym;
	int32_t count;
	int32_t gap;	  /* median distance between occurrences, kernels */
	double regular;	  /* share of the gaps near gap */
	int64_t first;	  /* first position */
	int64_t coverage; /* last - first position */
};

/* Is a symbol's occurrence sequence pos[0..c) regular? Fills *an when it is. */
static int regular_symbol(const int32_t *pos, int32_t c, int64_t n, int32_t *gaps,
			  struct anchor *an)
{
	int32_t g, tol, near = 0, trim = 0;

	if (c < MIN_OCCURRENCES)
		return 0;
	for (int32_t i = 1; i < c; i++)
		gaps[i - 1] = pos[i] - pos[i - 1];
	g = cs_select_i32(gaps, c - 1, (c - 2) / 2);
	if (g < MIN_PERIOD)
		return 0;
	tol = g / 4;
	for (int32_t i = 1; i < c; i++) {
		int32_t d = pos[i] - pos[i - 1];

		near += d >= g - tol && d <= g + tol;
	}
	an->regular = (double)near / (double)(c - 1);
	an->coverage = pos[c - 1] - pos[0];
	if (an->regular < REGULAR_SHARE || (double)an->coverage < MIN_COVERAGE * (double)n)
		return 0;
	/*
	 * Evenly over its span: not bursts far apart (a kernel of two evaluation phases). The span
	 * is taken after the warm-up: from the end of the last gap out of tolerance among the
	 * first WARMUP_GAPS. A first step that autotunes (torch.compile benchmarking its kernels,
	 * hundreds of them between a kernel's first and second run) is one such gap; a burst in
	 * the middle is not.
	 */
	for (int32_t i = 1; i < c && i <= WARMUP_GAPS; i++) {
		int32_t d = pos[i] - pos[i - 1];

		if (d < g - tol || d > g + tol)
			trim = i;
	}
	if ((double)(pos[c - 1] - pos[trim]) > MAX_SPAN_RATIO * (double)(c - 1 - trim) * (double)g)
		return 0;
	an->count = c;
	an->gap = g;
	an->first = pos[0];
	return 1;
}

/* Is anchor x a better choice than y: rarer, then more regular, then wider, then earlier. */
static int anchor_better(const struct anchor *x, const struct anchor *y)
{
	if (x->count != y->count)
		return x->count < y->count;
	if (x->regular != y->regular)
		return x->regular > y->regular;
	if (x->coverage != y->coverage)
		return x->coverage > y->coverage;
	return x->first < y->first;
}

struct period {
	struct anchor anchor;
	int32_t *all_pos;   /* positions of every symbol, grouped by symbol (symbol_positions) */
	int64_t *first;	    /* all_pos[first[x] .. first[x + 1]) are the positions of symbol x */
	const int32_t *pos; /* positions of the anchor, in all_pos */
	uint8_t *in_step;   /* per symbol: present in most periods */
	uint8_t *once;	    /* per symbol: exactly once in most periods */
};

/* Positions of every symbol, grouped by symbol (a counting sort): pos[first[s] .. first[s+1]). */
static int symbol_positions(const struct seq *s, int32_t **pos, int64_t **first)
{
	int64_t *f = calloc((size_t)s->nsym + 2, sizeof(*f));
	int32_t *p = malloc(((size_t)s->n + 1) * sizeof(*p));

	if (!f || !p) {
		free(f);
		free(p);
		return CS_ERR_NOMEM;
	}
	for (int64_t i = 0; i < s->n; i++)
		f[s->sym[i] + 2]++;
	for (int32_t x = 0; x < s->nsym; x++)
		f[x + 2] += f[x + 1];
	for (int64_t i = 0; i < s->n; i++)
		p[f[s->sym[i] + 1]++] = (int32_t)i;
	*pos = p;
	*first = f;
	return 0;
}

/* Kernel names of optimizers (PyTorch's foreach and fused optimizers, apex, DeepSpeed). */
static int optimizer_kernel(const char *name)
{
	static const char *const words[] = {"adam",	   "sgd",     "lamb",  "lion",
					    "adagrad",	   "rmsprop", "optim", "multi_tensor",
					    "multitensor", "foreach"};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcasestr(name, words[i]))
			return 1;
	return 0;
}

/* Occurrences of symbol x at positions [from, to). */
static int64_t occurrences_in(const struct period *p, int32_t x, int64_t from, int64_t to)
{
	const int32_t *pos = p->all_pos + p->first[x];
	int64_t n = p->first[x + 1] - p->first[x], lo = 0, hi = n, a;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (pos[mid] < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	a = lo;
	hi = n;
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (pos[mid] < to)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - a;
}

/*
 * Is the long period the step, or an occasional extra on top of steps of the short period? The
 * short anchor cuts the sequence into short periods; the kernels of the long level are those that
 * recur (at least every other long period) but are missing from most short periods. The long
 * period is the step when they are an optimizer (gradient accumulation: micro-batches, then the
 * optimizer once per step) or a good part of the work (5%: the backward pass and the loss after
 * the layers of a forward pass); a kernel or two every few steps (a branch taken every fourth
 * batch, logging every ten steps) is not a step of its own.
 */
static int long_period_holds(const cs_analysis *a, const struct seq *s, const struct period *p,
			     const struct anchor *lng, const struct anchor *shrt, int *holds)
{
	const int32_t *pos = p->all_pos + p->first[shrt->sym];
	int32_t nseg = shrt->count - 1, *seen, *present;
	int64_t from = pos[0], to = pos[shrt->count - 1], content = 0;
	int32_t min_count = lng->count / 2 > MIN_OCCURRENCES ? lng->count / 2 : MIN_OCCURRENCES;

	*holds = 1;
	/*
	 * A short period that is no level of the long one: its repetitions lie within fewer than
	 * half of the long periods, a loop run in a step or two, as torch.compile benchmarking a
	 * kernel hundreds of times at its first run. A level of the step (layers, micro-batches)
	 * or a step with an occasional extra spans (nearly) all the long anchor's repetitions.
	 */
	if (2 * occurrences_in(p, lng->sym, from, to) < lng->count)
		return 0;
	seen = malloc((size_t)s->nsym * sizeof(*seen));
	present = calloc((size_t)s->nsym, sizeof(*present));
	if (!seen || !present) {
		free(seen);
		free(present);
		return CS_ERR_NOMEM;
	}
	for (int32_t x = 0; x < s->nsym; x++)
		seen[x] = -1;
	for (int32_t k = 0; k < nseg; k++)
		for (int64_t i = pos[k]; i < pos[k + 1]; i++)
			if (seen[s->sym[i]] != k) {
				seen[s->sym[i]] = k;
				present[s->sym[i]]++;
			}
	*holds = 0;
	for (int32_t x = 0; x < s->nsym && !*holds; x++) {
		if (present[x] >= PRESENT_SHARE * nseg || p->first[x + 1] - p->first[x] < min_count)
			continue;
		content += occurrences_in(p, x, from, to);
		if (present[x] > 0 && optimizer_kernel(cs_analysis_string(a, s->name_id[x])))
			*holds = 1;
	}
	if (to > from && (double)content >= LONG_CONTENT_SHARE * (double)(to - from))
		*holds = 1;
	free(seen);
	free(present);
	return 0;
}

/*
 * Find the anchor. Candidates are the kernels that repeat regularly over much of the sequence;
 * the rarest wins (the step is the longest of the nested periods: layers, micro-batches), unless
 * its period is only an occasional extra on top of a shorter one (long_period_holds).
 */
static int find_anchor(const cs_analysis *a, const struct seq *s, struct period *p)
{
	struct anchor *regs = NULL, cur;
	int32_t *gaps = NULL, nregs = 0;
	int64_t maxc = 0;
	int rc;

	rc = symbol_positions(s, &p->all_pos, &p->first);
	if (rc)
		return rc;
	for (int32_t x = 0; x < s->nsym; x++)
		if (p->first[x + 1] - p->first[x] > maxc)
			maxc = p->first[x + 1] - p->first[x];
	gaps = malloc(((size_t)maxc + 1) * sizeof(*gaps));
	regs = malloc(((size_t)s->nsym + 1) * sizeof(*regs));
	if (!gaps || !regs) {
		rc = CS_ERR_NOMEM;
		goto out;
	}
	for (int32_t x = 0; x < s->nsym; x++) {
		struct anchor an;
		int32_t c = (int32_t)(p->first[x + 1] - p->first[x]);

		memset(&an, 0, sizeof(an));
		if (!regular_symbol(p->all_pos + p->first[x], c, s->n, gaps, &an))
			continue;
		an.sym = x;
		regs[nregs++] = an;
	}
	rc = 1;
	if (nregs == 0)
		goto out;
	cur = regs[0];
	for (int32_t i = 1; i < nregs; i++)
		if (anchor_better(&regs[i], &cur))
			cur = regs[i];
	for (;;) {
		struct anchor shrt;
		int found = 0, holds;

		memset(&shrt, 0, sizeof(shrt));
		/* the best candidate of a clearly shorter period */
		for (int32_t i = 0; i < nregs; i++)
			if ((int64_t)regs[i].gap * 3 <= (int64_t)cur.gap * 2 &&
			    (!found || anchor_better(&regs[i], &shrt))) {
				shrt = regs[i];
				found = 1;
			}
		if (!found)
			break;
		rc = long_period_holds(a, s, p, &cur, &shrt, &holds);
		if (rc < 0)
			goto out;
		if (holds)
			break;
		cur = shrt;
	}
	p->anchor = cur;
	p->pos = p->all_pos + p->first[cur.sym];
	rc = 0;
out:
	free(gaps);
	free(regs);
	return rc;
}

/*
 * Classify the symbols by the periods the anchor cuts: in_step (present in most periods) and once
 * (exactly once in most periods).
 */
static int classify_symbols(const struct seq *s, struct period *p)
{
	int32_t c = p->anchor.count, nper = c - 1;
	int32_t *seen = NULL, *cnt = NULL, *present = NULL, *once = NULL;
	int rc = CS_ERR_NOMEM;

	seen = malloc((size_t)s->nsym * sizeof(*seen));
	cnt = calloc((size_t)s->nsym, sizeof(*cnt));
	present = calloc((size_t)s->nsym, sizeof(*present));
	once = calloc((size_t)s->nsym, sizeof(*once));
	p->in_step = calloc((size_t)s->nsym, 1);
	p->once = calloc((size_t)s->nsym, 1);
	if (!seen || !cnt || !present || !once || !p->in_step || !p->once)
		goto out;
	for (int32_t x = 0; x < s->nsym; x++)
		seen[x] = -1;
	for (int32_t k = 0; k < nper; k++) {
		for (int64_t i = p->pos[k]; i < p->pos[k + 1]; i++) {
			int32_t x = s->sym[i];

			if (seen[x] != k) {
				seen[x] = k;
				cnt[x] = 0;
				present[x]++;
			}
			cnt[x]++;
		}
		for (int64_t i = p->pos[k]; i < p->pos[k + 1]; i++) {
			int32_t x = s->sym[i];

			if (cnt[x] == 1)
				once[x]++;
			cnt[x] = -1; /* counted */
		}
	}
	for (int32_t x = 0; x < s->nsym; x++) {
		p->in_step[x] = present[x] >= PRESENT_SHARE * nper;
		p->once[x] = once[x] >= ONCE_SHARE * nper;
	}
	rc = 0;
out:
	free(seen);
	free(cnt);
	free(present);
	free(once);
	return rc;
}

/*
 * Where the chain of regular repetitions of positions pos[0..c) begins: from the first occurrence
 * whose next one is about a period away, back over earlier ones that are 0.5 to 2.5 periods apart
 * (warm-up steps run longer or shorter).
 */
static int64_t chain_start(const int32_t *pos, int64_t c, int32_t g)
{
	int32_t tol = g / 4;
	int64_t j = 0;

	while (j + 1 < c) {
		int32_t d = pos[j + 1] - pos[j];

		if (d >= g - tol && d <= g + tol)
			break;
		j++;
	}
	if (j + 1 >= c)
		return -1;
	while (j > 0) {
		int32_t d = pos[j] - pos[j - 1];

		if (d < g / 2 || d > g * 5 / 2)
			break;
		j--;
	}
	return pos[j];
}

/*
 * Where the loop starts: the earliest occurrence of a once-per-step kernel that chains into its
 * regular repetitions (one such kernel may be missing from a warm-up step, another is not), then
 * back over the kernels before it that belong to the loop: step kernels, and kernels that are not
 * step kernels but occur again later (autotuning tries in a warm-up step, a kernel that only some
 * steps run). It stops at a kernel seen only before (setup), and at most 2.5 periods back; the
 * loop starts on a step kernel.
 */
static int64_t find_loop_start(const struct seq *s, const struct period *p)
{
	int32_t g = p->anchor.gap;
	int64_t i = -1, limit, best;

	/* kernels first: a copy symbol stands for every copy of a direction, setup's included */
	for (int copies = 0; copies < 2 && i < 0; copies++)
		for (int32_t x = 0; x < s->nsym; x++) {
			int64_t c;

			if (!p->once[x] || s->is_copy[x] != copies)
				continue;
			c = chain_start(p->all_pos + p->first[x], p->first[x + 1] - p->first[x], g);
			if (c >= 0 && (i < 0 || c < i))
				i = c;
		}
	if (i < 0)
		i = chain_start(p->pos, p->anchor.count, g);
	if (i < 0)
		i = p->pos[0];
	limit = i - (int64_t)g * 5 / 2;
	if (limit < 0)
		limit = 0;
	best = i;
	for (int64_t from = i; i > limit; i--) {
		int32_t x = s->sym[i - 1];

		if (s->is_copy[x])
			continue; /* copies of setup and of the loop look alike */
		if (p->in_step[x])
			best = i - 1;
		else if (p->all_pos[p->first[x + 1] - 1] <= from)
			break; /* seen only up to here: setup */
	}
	return best;
}

/*
 * Host-time spans of the steps that start at sequence positions bounds[0..nb) (ascending; the last
 * step ends before position bounds[nb]): from the launch of a step's first operation to the launch
 * of the next step's first, the last one to its last GPU end.
 */
static int spans_of_bounds(const cs_analysis *a, const struct launch_order *o, int with_copies,
			   const int64_t *bounds, int64_t nb, struct span_list *out)
{
	int64_t pos = 0, k = 0, last_end = CS_TS_UNKNOWN, *starts;
	int rc = 0;

	starts = malloc((size_t)(nb + 1) * sizeof(*starts));
	if (!starts)
		return CS_ERR_NOMEM;
	for (int64_t i = 0; i < o->n && pos < bounds[nb]; i++) {
		int32_t op = o->op[i], idx = op >= 0 ? op : -1 - op;
		int is_copy = op < 0;
		int64_t launch, start, end;

		if (is_copy && !with_copies)
			continue;
		if (is_copy) {
			launch = a->copies[idx].launch_start;
			start = a->copies[idx].start;
			end = a->copies[idx].end;
		} else {
			launch = a->kernels[idx].launch_start;
			start = a->kernels[idx].start;
			end = a->kernels[idx].end;
		}
		if (k < nb && pos == bounds[k])
			starts[k++] = cs_launch_time(launch, start);
		if (pos >= bounds[nb - 1]) {
			int64_t ke = end != CS_TS_UNKNOWN ? end : start;

			if (ke > last_end)
				last_end = ke;
		}
		pos++;
	}
	for (int64_t i = 0; i < k && !rc; i++) {
		int64_t end = i + 1 < k ? starts[i + 1] : last_end;

		if (end <= starts[i])
			end = starts[i] + 1;
		rc = span_add(out, starts[i], end);
	}
	free(starts);
	return rc;
}

/*
 * The period in kernels (the period in operations less the median number of copies and memsets
 * in a step: the same as the period when steps have none) and the words of the header.
 */
static int describe_period(const struct seq *s, const int64_t *bounds, int64_t nb, int32_t g,
			   uint32_t pid, int32_t *period, int32_t *period_ops, char *detail,
			   size_t dsize)
{
	int32_t *copies = malloc((size_t)nb * sizeof(*copies)), c;
	int64_t before = 0;

	if (!copies)
		return CS_ERR_NOMEM;
	for (int64_t k = 0; k < nb; k++) {
		copies[k] = 0;
		for (int64_t i = bounds[k]; i < bounds[k + 1]; i++)
			copies[k] += s->is_copy[s->sym[i]];
	}
	c = cs_select_i32(copies, nb, (nb - 1) / 2);
	free(copies);
	if (c >= g)
		c = g - 1;
	for (int64_t i = 0; i < bounds[0]; i++)
		before += !s->is_copy[s->sym[i]];
	*period = g - c;
	*period_ops = g;
	if (c == 0)
		snprintf(detail, dsize,
			 "kernel sequence of pid %u repeats every %d kernels; %lld kernels before "
			 "the "
			 "first step",
			 pid, g, (long long)before);
	else
		snprintf(detail, dsize,
			 "kernel sequence of pid %u repeats every %d kernels (%d operations with "
			 "its "
			 "memcpys and memsets); %lld operations before the first step",
			 pid, g - c, g, (long long)bounds[0]);
	return 0;
}

/*
 * Is the sequence one kernel repeated: every operation from the first occurrence of the most
 * frequent symbol to its last is that kernel (copies and other kernels only before and after)?
 * Then steps cannot be told apart by the sequence.
 */
static int one_repeated_kernel(const struct seq *s)
{
	int64_t *count = calloc((size_t)s->nsym + 1, sizeof(*count)), first = -1, last = -1;
	int32_t x = -1;

	if (!count)
		return 0;
	for (int64_t i = 0; i < s->n; i++)
		count[s->sym[i]]++;
	for (int32_t y = 0; y < s->nsym; y++)
		if (x < 0 || count[y] > count[x])
			x = y;
	if (x < 0 || s->is_copy[x] || count[x] < (int64_t)MIN_PERIOD * MIN_STEPS) {
		free(count);
		return 0;
	}
	for (int64_t i = 0; i < s->n; i++)
		if (s->sym[i] == x) {
			if (first < 0)
				first = i;
			last = i;
		}
	first = last - first + 1 == count[x];
	free(count);
	return (int)first;
}

static int steps_period(const cs_analysis *a, const struct launch_order *o, uint32_t pid,
			int with_copies, struct span_list *out, int32_t *period, int32_t *period_ops,
			int *one_kernel, char *detail, size_t dsize)
{
	struct seq s;
	struct period p;
	int64_t *bounds = NULL, nb = 0, i0, fb = -1, d, e, cap, lmed;
	int32_t g, b_sym = -1;
	int rc;

	memset(&s, 0, sizeof(s));
	memset(&p, 0, sizeof(p));
	rc = seq_build(a, o, with_copies, &s);
	if (rc)
		goto out;
	if (s.n < (int64_t)MIN_PERIOD * MIN_STEPS)
		goto out;
	rc = find_anchor(a, &s, &p);
	if (rc) {
		rc = rc > 0 ? 0 : rc;
		goto out;
	}
	rc = classify_symbols(&s, &p);
	if (rc)
		goto out;
	g = p.anchor.gap;
	i0 = find_loop_start(&s, &p);

	/*
	 * The boundary kernel: of the once-per-step kernels of the first step, the one missing from
	 * the fewest steps (a kernel a warm-up step lacks would merge two steps), the earliest on a
	 * tie. Steps start d step kernels before it.
	 */
	{
		int64_t lim = i0 + g, best_n = -1;

		for (int copies = 0; copies < 2 && fb < 0; copies++)
			for (int64_t i = i0; i < s.n && i < lim; i++) {
				int32_t x = s.sym[i];
				int64_t nx;

				if (!p.once[x] || s.is_copy[x] != copies)
					continue;
				nx = occurrences_in(&p, x, i0, s.n);
				if (nx > best_n) {
					fb = i;
					b_sym = x;
					best_n = nx;
				}
			}
	}
	if (fb < 0) {
		fb = p.pos[0] >= i0 ? p.pos[0] : i0;
		b_sym = s.sym[fb];
	}
	/* Step kernels of a step before its boundary kernel (kernels of the first step that are not
	 * step kernels, such as autotuning tries, do not recur in later steps). */
	d = 0;
	for (int64_t i = i0; i < fb; i++)
		d += p.in_step[s.sym[i]];

	/* consecutive boundaries are at least g / 2 kernels apart */
	bounds = malloc(((size_t)(s.n / (g / 2 > 0 ? g / 2 : 1)) + 4) * sizeof(*bounds));
	if (!bounds) {
		rc = CS_ERR_NOMEM;
		goto out;
	}
	bounds[nb++] = i0;
	for (int64_t q = fb + 1; q < s.n; q++) {
		int64_t c, best = -1, r, prev = bounds[nb - 1];

		if (s.sym[q] != b_sym)
			continue;
		c = q - d;
		if (c <= prev)
			c = prev + 1;
		/* Let the step start on the same kernel as the first step, nearby. */
		r = d / 4 > 2 ? d / 4 : 2;
		for (int64_t x = c - r; x <= c + r; x++) {
			if (x <= prev || x > q || x >= s.n)
				continue;
			if (s.sym[x] != s.sym[i0])
				continue;
			if (i0 + 1 < s.n && x + 1 < s.n && s.sym[x + 1] != s.sym[i0 + 1])
				continue;
			if (best < 0 || llabs(x - c) < llabs(best - c))
				best = x;
		}
		if (best >= 0)
			c = best;
		if (c - prev < g / 2)
			continue; /* an extra occurrence inside a step */
		bounds[nb++] = c;
	}

	/* The end of the last step: no longer than the longest step (1.5 periods at most), without
	 * the kernels after it that are not step kernels (teardown). */
	lmed = g;
	cap = (int64_t)g * 3 / 2;
	for (int64_t k = 1; k < nb; k++)
		if (bounds[k] - bounds[k - 1] > lmed && bounds[k] - bounds[k - 1] <= cap)
			lmed = bounds[k] - bounds[k - 1];
	e = bounds[nb - 1] + lmed;
	if (e > s.n)
		e = s.n;
	while (e > bounds[nb - 1] + 1 && !p.in_step[s.sym[e - 1]])
		e--;
	if (e - bounds[nb - 1] < g / 2)
		nb--; /* a partial step at the end of the recording */
	else
		bounds[nb] = e;
	if (nb < MIN_STEPS)
		goto out;

	rc = spans_of_bounds(a, o, with_copies, bounds, nb, out);
	if (rc)
		goto out;
	rc = describe_period(&s, bounds, nb, g, pid, period, period_ops, detail, dsize);
out:
	if (rc == 0 && out->n == 0 && s.sym)
		*one_kernel = one_repeated_kernel(&s);
	free(bounds);
	free(s.sym);
	free(s.name_id);
	free(s.is_copy);
	free(p.all_pos);
	free(p.first);
	free(p.in_step);
	free(p.once);
	return rc;
}

/*
 * Steps from the period of the GPU work (docs/steps.md): of the sequence of kernels, memcpys and
 * memsets, and of the kernels alone. Kernel names are finer symbols than copy directions (one copy
 * symbol stands for every copy of a direction, setup's and evaluation's included), so the kernels
 * place the steps, unless the sequence with copies shows a longer step (more kernels per step: a
 * loop of one kernel, or of a few, between a copy in and a copy out) or the kernels alone show
 * none.
 */
static int steps_sequence(const cs_analysis *a, cs_steps *st, struct span_list *out,
			  int *one_kernel)
{
	struct span_list k = {NULL, 0, 0};
	int32_t kperiod = 0, kops = 0;
	int unused = 0, rc;
	char detail[sizeof(st->detail)];
	int64_t copies = 0;
	struct launch_order o;

	/* a process without copies: its whole sequence is its kernels, one search does */
	for (int64_t i = 0; i < a->ncopies && !copies; i++)
		copies += a->copies[i].pid == st->pid &&
			  cs_launch_time(a->copies[i].launch_start, a->copies[i].start) !=
				  CS_TS_UNKNOWN;
	/* the launch order, merged once for both searches */
	rc = launch_order_build(a, st->pid, copies > 0, &o);
	if (rc)
		return rc;
	if (copies) {
		rc = steps_period(a, &o, st->pid, 1, out, &st->period, &st->period_ops, one_kernel,
				  st->detail, sizeof(st->detail));
		if (rc < 0) {
			free(o.op);
			return rc;
		}
	}
	detail[0] = '\0';
	rc = steps_period(a, &o, st->pid, 0, &k, &kperiod, &kops, copies ? &unused : one_kernel,
			  detail, sizeof(detail));
	free(o.op);
	if (rc < 0 || k.n == 0 || (out->n > 0 && st->period > kperiod)) {
		free(k.v);
		return rc;
	}
	/* operations per step: the period with copies when it is the same step */
	if (out->n == 0 || st->period != kperiod)
		st->period_ops = kperiod;
	free(out->v);
	*out = k;
	st->period = kperiod;
	memcpy(st->detail, detail, sizeof(detail));
	return 0;
}

/* ---- per-step statistics ---- */

/* Step of host time t, starting the search at *hint (a step index) for nearly sorted queries. */
static int find_from(const cs_steps *s, int64_t t, int *hint)
{
	int h = *hint;

	if (h >= 0 && h < s->n) {
		if (t >= s->v[h].start && t < s->v[h].end)
			return h;
		if (h + 1 < s->n && t >= s->v[h + 1].start && t < s->v[h + 1].end) {
			*hint = h + 1;
			return h + 1;
		}
	}
	h = cs_steps_find(s, t);
	if (h >= 0)
		*hint = h;
	return h;
}

static void step_stats(const cs_analysis *a, cs_steps *s)
{
	int hint = 0;

	for (int32_t i = 0; i < s->n; i++) {
		s->v[i].gpu_start = s->v[i].gpu_end = CS_TS_UNKNOWN;
		s->v[i].kernels = 0;
	}
	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];
		int st;

		if (k->pid != s->pid)
			continue;
		st = find_from(s, cs_launch_time(k->launch_start, k->start), &hint);
		if (st < 0)
			continue;
		s->v[st].kernels++;
		if (k->start != CS_TS_UNKNOWN &&
		    (s->v[st].gpu_start == CS_TS_UNKNOWN || k->start < s->v[st].gpu_start))
			s->v[st].gpu_start = k->start;
		if (k->end != CS_TS_UNKNOWN && k->end > s->v[st].gpu_end)
			s->v[st].gpu_end = k->end;
	}
	hint = 0;
	for (int64_t i = 0; i < a->ncopies; i++) {
		const cs_a_copy *c = &a->copies[i];
		int st;

		if (c->pid != s->pid)
			continue;
		st = find_from(s, cs_launch_time(c->launch_start, c->start), &hint);
		if (st < 0)
			continue;
		if (c->start != CS_TS_UNKNOWN &&
		    (s->v[st].gpu_start == CS_TS_UNKNOWN || c->start < s->v[st].gpu_start))
			s->v[st].gpu_start = c->start;
		if (c->end != CS_TS_UNKNOWN && c->end > s->v[st].gpu_end)
			s->v[st].gpu_end = c->end;
	}
	for (int32_t i = 0; i < s->n; i++)
		s->v[i].gpu_busy = cs_analysis_gpu_busy(a, s->pid, s->v[i].start, s->v[i].end);
}

const char *cs_step_timing_name(int timing)
{
	return timing == CS_STEP_TIME_GPU ? "gpu" : "host";
}

static int64_t gpu_period(const cs_steps *s, int32_t i)
{
	const cs_step *st = &s->v[i];

	if (st->gpu_start == CS_TS_UNKNOWN)
		return CS_TS_UNKNOWN;
	for (int32_t j = i + 1; j < s->n; j++)
		if (s->v[j].gpu_start != CS_TS_UNKNOWN)
			return s->v[j].gpu_start > st->gpu_start ? s->v[j].gpu_start - st->gpu_start
								 : CS_TS_UNKNOWN;
	return st->gpu_end != CS_TS_UNKNOWN && st->gpu_end > st->gpu_start
		       ? st->gpu_end - st->gpu_start
		       : CS_TS_UNKNOWN;
}

int64_t cs_step_time(const cs_steps *s, int32_t i)
{
	int64_t g;

	if (!s || i < 0 || i >= s->n)
		return 0;
	if (s->timing == CS_STEP_TIME_GPU && (g = gpu_period(s, i)) != CS_TS_UNKNOWN)
		return g;
	return s->v[i].end - s->v[i].start;
}

/*
 * Does the host run ahead of the GPU? When more than half of the steady steps that have a next
 * step (all such steps when none is steady) saw their first GPU work start only after their host
 * span ended (docs/steps.md, "Step time"), step times come from the GPU, and each step's GPU busy
 * time is measured over its GPU window.
 */
static void choose_timing(const cs_analysis *a, cs_steps *s)
{
	int all = cs_steps_steady(s) == 0;
	int32_t n = 0, behind = 0;

	s->timing = CS_STEP_TIME_HOST;
	if (s->method == CS_STEPS_NONE)
		return;
	for (int32_t i = 0; i + 1 < s->n; i++) {
		const cs_step *st = &s->v[i];

		if (st->warmup && !all)
			continue;
		n++;
		behind += st->gpu_start != CS_TS_UNKNOWN && st->gpu_start >= st->end;
	}
	if (n == 0 || 2 * behind <= n)
		return;
	s->timing = CS_STEP_TIME_GPU;
	for (int32_t i = 0; i < s->n; i++) {
		int64_t g = gpu_period(s, i);

		if (g != CS_TS_UNKNOWN)
			s->v[i].gpu_busy = cs_analysis_gpu_busy(a, s->pid, s->v[i].gpu_start,
								s->v[i].gpu_start + g);
	}
}

/*
 * Warm-up steps run far longer than the steady ones (compilation, autotuning, the allocator
 * growing), or run a part of the step: a step is an outlier when its host span is more than
 * WARMUP_K robust standard deviations (1.4826 median absolute deviations) over the median span
 * of all the steps, or (below) when it launches fewer kernels than most steps. For
 * normally spread step times 5 are passed once in 3.5 million steps, so only such work passes;
 * the median and the deviation ignore up to half of the steps being outliers. The steps' own
 * count of warm-up iterations is not known, and no fixed share of them is taken.
 */
#define WARMUP_K 5.0

/* The kernel count most steps launch, or -1 when fewer than half of the steps launch one count
 * (a model whose steps launch varying work: then the count says nothing about warm-up). */
static int64_t common_kernel_count(const cs_steps *s)
{
	int64_t *k, best = -1;
	int32_t n = s->n, run = 0, most = 0;

	k = malloc((size_t)n * sizeof(*k));
	if (!k)
		return -1;
	for (int32_t i = 0; i < n; i++)
		k[i] = s->v[i].kernels;
	cs_sort_i64(k, (size_t)n);
	for (int32_t i = 0; i < n; i++) {
		run = i > 0 && k[i] == k[i - 1] ? run + 1 : 1;
		if (run > most) {
			most = run;
			best = k[i];
		}
	}
	free(k);
	return 2 * most >= n ? best : -1;
}

int32_t cs_steps_default_warmup(const cs_steps *s)
{
	int64_t *d, med, mad, far, common;
	int32_t n = s ? s->n : 0, warmup = 0;

	if (n < 3)
		return 0;
	d = malloc((size_t)n * sizeof(*d));
	if (!d)
		return 0;
	for (int32_t i = 0; i < n; i++)
		d[i] = cs_sat_sub(s->v[i].end, s->v[i].start); /* times from the trace */
	cs_sort_i64(d, (size_t)n);
	med = n % 2 ? d[n / 2] : cs_midpoint(d[n / 2 - 1], d[n / 2]);
	for (int32_t i = 0; i < n; i++)
		d[i] = d[i] > med ? cs_sat_sub(d[i], med) : cs_sat_sub(med, d[i]);
	cs_sort_i64(d, (size_t)n);
	mad = n % 2 ? d[n / 2] : cs_midpoint(d[n / 2 - 1], d[n / 2]);
	free(d);
	far = cs_sat_add(med, cs_sat_from_double(WARMUP_K * 1.4826 * (double)mad));
	/* warm-up ends after the last outlier that keeps the outliers at least half of the steps
	 * so far (within the first half of the steps): compilation and autotuning come at the
	 * start, one after another or with a few normal steps among them, while the rare outliers
	 * of the steady state (evaluation, a checkpoint) never make up half of a prefix */
	/* a step at the start that launches fewer kernels than most steps do is a part of a step,
	 * however long (a compiled model run in pieces before its whole graph is compiled), when
	 * most steps launch one count (one that launches more does extra work: logging, a check) */
	common = common_kernel_count(s);
	for (int32_t i = 0, k = 0; i < n / 2; i++) {
		int outlier = cs_sat_sub(s->v[i].end, s->v[i].start) > far ||
			      (common >= 0 && s->v[i].kernels < common);

		if (outlier && 2 * ++k >= i + 1)
			warmup = i + 1;
	}
	return warmup;
}

/*
 * Windows for a run without steps: the span of the process's launches (kernels, copies and
 * memsets) cut into WINDOWS windows of equal length, fewer when the process launched fewer than
 * WINDOW_OPS pieces of work per window; none for a process of fewer than MIN_WINDOW_OPS (a run too
 * short to have a rate). Each window ends where the
 * next begins; the last at the end of the last work. The rules then run on them as on steps
 * (docs/steps.md, "Runs without steps").
 */
#define WINDOWS	   20
#define WINDOW_OPS 10
#define MIN_WINDOW_OPS 100
static int steps_windows(const cs_analysis *a, cs_steps *st, struct span_list *out)
{
	int64_t first = INT64_MAX, last = INT64_MIN, end = INT64_MIN, n = 0, w;
	int32_t nw;
	char b1[32];

	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];

		if (k->pid != st->pid || k->launch_start == CS_TS_UNKNOWN)
			continue;
		n++;
		first = k->launch_start < first ? k->launch_start : first;
		last = k->launch_start > last ? k->launch_start : last;
		if (k->end != CS_TS_UNKNOWN && k->end > end)
			end = k->end;
	}
	for (int64_t i = 0; i < a->ncopies; i++) {
		const cs_a_copy *c = &a->copies[i];

		if (c->pid != st->pid || c->launch_start == CS_TS_UNKNOWN)
			continue;
		n++;
		first = c->launch_start < first ? c->launch_start : first;
		last = c->launch_start > last ? c->launch_start : last;
		if (c->end != CS_TS_UNKNOWN && c->end > end)
			end = c->end;
	}
	nw = n / WINDOW_OPS < WINDOWS ? (int32_t)(n / WINDOW_OPS) : WINDOWS;
	if (n < MIN_WINDOW_OPS || nw < MIN_STEPS || last <= first)
		return 0;
	w = (last - first) / nw;
	if (w <= 0)
		return 0;
	for (int32_t i = 0; i < nw; i++) {
		int64_t b = first + (int64_t)i * w,
			e = i + 1 < nw ? b + w : (end > last ? end : last + 1);

		if (span_add(out, b, e))
			return CS_ERR_NOMEM;
	}
	snprintf(st->detail, sizeof(st->detail),
		 "no repeating step: the launches of pid %u cut into %d windows of %s", st->pid,
		 nw, cs_fmt_duration(b1, sizeof(b1), w));
	return 0;
}

/* 1 when the trace is of record --ring and the ring of process pid deleted segments (META ring). */
static int ring_cut(const cs_analysis *a, uint32_t pid)
{
	const char *text = a->trace ? cs_trace_meta(a->trace, CS_META_RING) : NULL;
	cJSON *ring = text ? cJSON_Parse(text) : NULL;
	char key[16];
	int cut;

	snprintf(key, sizeof(key), "%u", pid);
	cut = cs_json_get_int(cJSON_GetObjectItemCaseSensitive(
				      cJSON_GetObjectItemCaseSensitive(ring, "processes"), key),
			      "segments_dropped", 0) > 0;
	cJSON_Delete(ring);
	return cut;
}

/*
 * A ring that deleted segments starts its trace in the middle of a step: the events before its
 * window's start are gone, so the first step of the period may hold only its end. It is left out,
 * and the detail says so. NVTX and profiler steps need nothing: a range whose start was cut is
 * not a step.
 */
static void ring_drop_first(const cs_analysis *a, cs_steps *st, struct span_list *spans)
{
	size_t len = strlen(st->detail);

	if (spans->n < 2 || !ring_cut(a, st->pid))
		return;
	memmove(spans->v, spans->v + 1, (size_t)(spans->n - 1) * sizeof(*spans->v));
	spans->n--;
	snprintf(st->detail + len, sizeof(st->detail) - len, "%s",
		 "; the first step, cut by --ring, left out");
}

int cs_steps_detect(const cs_analysis *a, const cs_step_opts *o, cs_steps *out, cs_error *err)
{
	cs_step_opts def = {NULL, -1, 0, 0};
	struct span_list spans = {NULL, 0, 0};
	int32_t warmup;
	int rc = 0, one_kernel = 0;

	if (!a || !out)
		return cs_error_set(err, CS_ERR_INVALID, "cs_steps_detect: bad argument");
	if (!o)
		o = &def;
	memset(out, 0, sizeof(*out));
	out->pid = o->pid ? o->pid : busiest_pid(a);

	if (o->step_range) {
		rc = steps_nvtx(a, o->step_range, o->pid, &spans, &out->pid, out->detail,
				sizeof(out->detail), err);
		if (rc < 0)
			goto fail;
		out->method = CS_STEPS_NVTX;
	} else {
		rc = steps_profiler(a, out->pid, &spans, out->detail, sizeof(out->detail));
		if (rc < 0)
			goto nomem;
		if (spans.n > 0) {
			out->method = CS_STEPS_PROFILER;
		} else {
			rc = steps_sequence(a, out, &spans, &one_kernel);
			if (rc < 0)
				goto nomem;
			if (spans.n > 0) {
				out->method = CS_STEPS_PERIOD;
				ring_drop_first(a, out, &spans);
			}
		}
	}
	if (spans.n == 0 && o->windows) {
		rc = steps_windows(a, out, &spans);
		if (rc < 0)
			goto nomem;
		if (spans.n > 0) {
			out->method = CS_STEPS_WINDOWS;
			out->period = out->period_ops = 0;
		}
	}
	if (spans.n == 0) {
		/* the whole trace, launches before the first GPU work included */
		int64_t start = a->trace_start, end;

		for (int64_t i = 0; i < a->nkernels; i++)
			if (a->kernels[i].launch_start != CS_TS_UNKNOWN &&
			    a->kernels[i].launch_start < start)
				start = a->kernels[i].launch_start;
		for (int64_t i = 0; i < a->ncopies; i++)
			if (a->copies[i].launch_start != CS_TS_UNKNOWN &&
			    a->copies[i].launch_start < start)
				start = a->copies[i].launch_start;
		end = a->trace_end > start ? a->trace_end + 1 : start + 1;

		out->method = CS_STEPS_NONE;
		out->period = out->period_ops = 0;
		if (span_add(&spans, start, end))
			goto nomem;
		snprintf(out->detail, sizeof(out->detail), "%s",
			 one_kernel
				 ? "the loop is one kernel repeated, which cannot tell steps apart "
				   "(name them with NVTX ranges and --step-range): one step spans "
				   "the trace"
			 : a->nkernels ? "no repeating kernel sequence: one step spans the trace"
				       : "no kernels: one step spans the trace");
	}

	out->v = calloc((size_t)spans.n, sizeof(*out->v));
	if (!out->v)
		goto nomem;
	out->n = spans.n;
	for (int32_t i = 0; i < spans.n; i++) {
		out->v[i].start = spans.v[i].start;
		out->v[i].end = spans.v[i].end;
		out->v[i].index = i;
	}
	free(spans.v);
	spans.v = NULL;
	step_stats(a, out);

	if (out->method == CS_STEPS_NONE)
		warmup = 0;
	else if (o->warmup >= 0)
		warmup = o->warmup < out->n ? o->warmup : out->n - 1;
	else
		warmup = cs_steps_default_warmup(out);
	if (warmup < 0)
		warmup = 0;
	out->warmup = warmup;
	for (int32_t i = 0; i < out->n; i++)
		out->v[i].warmup = i < warmup;
	choose_timing(a, out);
	return 0;
nomem:
	rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory finding the steps");
fail:
	free(spans.v);
	cs_steps_free(out);
	return rc;
}

void cs_steps_free(cs_steps *s)
{
	if (!s)
		return;
	free(s->v);
	memset(s, 0, sizeof(*s));
}

int cs_steps_find(const cs_steps *s, int64_t t)
{
	int hint = -1;

	return cs_steps_find_near(s, t, &hint);
}

int cs_steps_find_search(const cs_steps *s, int64_t t, int *hint)
{
	int j = *hint;

	if (!s || s->n <= 0 || t == CS_TS_UNKNOWN)
		return -1;
	/* the step of the last search when it is the last step whose start is <= t, else a
	 * binary search for that step */
	if (j < 0 || j >= s->n || s->v[j].start > t || (j + 1 < s->n && s->v[j + 1].start <= t)) {
		int lo = 0, hi = s->n;

		while (lo < hi) {
			int mid = lo + (hi - lo) / 2;

			if (s->v[mid].start <= t)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == 0)
			return -1;
		*hint = j = lo - 1;
	}
	return t < s->v[j].end ? j : -1;
}

int cs_steps_find_steady(const cs_steps *s, int64_t t)
{
	int st = cs_steps_find(s, t);

	if (st < 0 || s->v[st].warmup)
		return -1;
	return st;
}

int cs_steps_find_launch(const cs_steps *s, int64_t launch_start, int64_t start)
{
	return cs_steps_find(s, cs_launch_time(launch_start, start));
}

int32_t cs_steps_steady(const cs_steps *s)
{
	return s && s->n > s->warmup ? s->n - s->warmup : 0;
}

/* Value at quantile q of sorted v[0..n), interpolated between neighbours. */
static int64_t quantile(const int64_t *v, int32_t n, double q)
{
	double pos = q * (double)(n - 1), frac;
	int32_t i = (int32_t)pos;

	if (n <= 0)
		return 0;
	if (i >= n - 1)
		return v[n - 1];
	frac = pos - (double)i;
	return v[i] + (int64_t)((double)(v[i + 1] - v[i]) * frac + 0.5);
}

/* The values of the steady steps (all steps when none is steady), sorted; *m their count. */
static int64_t *steady_values(const cs_steps *s, const int64_t *per_step, int nonzero_only,
			      int32_t *m)
{
	int64_t *v;
	int all = cs_steps_steady(s) == 0;

	*m = 0;
	if (!s || s->n <= 0)
		return NULL;
	v = malloc((size_t)s->n * sizeof(*v));
	if (!v)
		return NULL;
	for (int32_t i = 0; i < s->n; i++) {
		int64_t x = per_step ? per_step[i] : cs_step_time(s, i);

		if (!all && s->v[i].warmup)
			continue;
		if (nonzero_only && x == 0)
			continue;
		v[(*m)++] = x;
	}
	cs_sort_i64(v, (size_t)*m);
	return v;
}

void cs_steps_duration_stats(const cs_steps *s, int64_t *median, int64_t *p10, int64_t *p90)
{
	int32_t m;
	int64_t *v = steady_values(s, NULL, 0, &m);

	*median = *p10 = *p90 = 0;
	if (v && m > 0) {
		*median = quantile(v, m, 0.5);
		*p10 = quantile(v, m, 0.1);
		*p90 = quantile(v, m, 0.9);
	}
	free(v);
}

double cs_steps_busy_share(const cs_steps *s)
{
	int64_t busy = 0, total = 0;
	int all = cs_steps_steady(s) == 0;

	for (int32_t i = 0; i < s->n; i++) {
		if (s->v[i].warmup && !all)
			continue;
		cs_sat_accum(&busy, s->v[i].gpu_busy);
		cs_sat_accum(&total, cs_step_time(s, i));
	}
	return total > 0 ? (double)busy / (double)total : 0;
}

int64_t cs_steps_median(const cs_steps *s, const int64_t *per_step, int nonzero_only)
{
	int32_t m;
	int64_t *v = steady_values(s, per_step, nonzero_only, &m), r = 0;

	if (v && m > 0)
		r = quantile(v, m, 0.5);
	free(v);
	return r;
}

void cs_steps_kernel_time(const cs_analysis *a, const cs_steps *s,
			  int (*match)(const cs_a_kernel *k, void *arg), void *arg, int64_t *out)
{
	int hint = 0;

	for (int32_t i = 0; i < s->n; i++)
		out[i] = 0;
	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];
		int st;

		if (k->start == CS_TS_UNKNOWN || k->end == CS_TS_UNKNOWN || k->end < k->start)
			continue;
		if (match && !match(k, arg))
			continue;
		st = find_from(s, cs_launch_time(k->launch_start, k->start), &hint);
		if (st >= 0)
			cs_sat_accum(&out[st], k->end - k->start);
	}
}
