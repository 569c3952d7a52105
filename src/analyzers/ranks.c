/*
 * ranks.c - the ranks of a job side by side (include/cuscope/ranks.h): per-step measures of one
 * process (compute, NCCL kernels and the part of them that compute on other streams hides, host
 * waits, the GPU idle before the step), and the cross-rank view that aligns the ranks' steps by
 * index, names the slowest rank of each step, and finds a consistent straggler.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/demangle.h"
#include "cuscope/grow.h"
#include "cuscope/ranks.h"
#include "kernel_names.h"
#include "estimates.h"
#include "cuscope/checked.h"
#include "cuscope/sort.h"

int cs_is_nccl_kernel(const char *name)
{
	const char *s;

	if (!name)
		return 0;
	s = cs_demangle_short(name);
	if (!s)
		return 0;
	if (!strncmp(s, "void ", 5))
		s += 5;
	return !strncmp(s, "ncclKernel", 10) || !strncmp(s, "ncclDevKernel", 13);
}

const char *cs_rank_cause_name(int cause)
{
	switch (cause) {
	case CS_RANK_CAUSE_COMPUTE:
		return "compute";
	case CS_RANK_CAUSE_HOST_WAIT:
		return "host_wait";
	case CS_RANK_CAUSE_IDLE_BEFORE:
		return "idle_before_step";
	case CS_RANK_CAUSE_SHARED_GPU:
		return "shared_gpu";
	default:
		return "none";
	}
}

/* ---- one process ---- */

struct span {
	int64_t start, end;
};

/* Length of [t0, t1) covered by the merged, sorted spans u[0..n). */
static int64_t covered(const struct span *u, int64_t n, int64_t t0, int64_t t1)
{
	int64_t lo = 0, hi = n, c = 0;

	/* first span that ends after t0 */
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (u[mid].end <= t0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (int64_t i = lo; i < n && u[i].start < t1; i++) {
		int64_t s = u[i].start > t0 ? u[i].start : t0;
		int64_t e = u[i].end < t1 ? u[i].end : t1;

		if (e > s)
			c = cs_sat_add(c, cs_sat_sub(e, s));
	}
	return c;
}

int cs_rank_steps_measure(const cs_analysis *a, const cs_steps *s, cs_rank_step *out, cs_error *err)
{
	struct fact_name_memo *cache = NULL;
	struct span *u = NULL;
	size_t cap = 0;
	int64_t nu = 0;
	char *nccl = NULL; /* per kernel of the process: 1 for NCCL */
	int rc = 0, hint = -1, sorted = 1;

	if (!a || !s || (s->n > 0 && !out))
		return cs_error_set(err, CS_ERR_INVALID, "cs_rank_steps_measure: bad argument");
	if (s->n == 0)
		return 0;
	memset(out, 0, (size_t)s->n * sizeof(*out));
	if (a->nkernels > 0) {
		nccl = calloc((size_t)a->nkernels, 1);
		/* a trace has few kernel names and millions of kernels, and demangling looks a long
		 * name up each time */
		cache = fact_name_memo_new(cs_is_nccl_kernel);
		if (!nccl || !cache)
			goto nomem;
	}
	/*
	 * Compute kernels of the process, merged into disjoint spans as they come: the kernels are
	 * by start, so that only the merged spans are kept (not one per kernel, sorted). Spans
	 * merged in any order make the same union, so a file whose kernels are out of order gets
	 * its partial spans sorted and merged again.
	 */
	for (int64_t i = 0, last = INT64_MIN; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];

		if (k->pid != s->pid || k->start == CS_TS_UNKNOWN || k->end <= k->start)
			continue;
		if (fact_name_memo_get(cache, a, k->name_id)) {
			nccl[i] = 1;
			continue;
		}
		sorted &= k->start >= last;
		last = k->start;
		if (nu > 0 && k->start >= u[nu - 1].start && k->start <= u[nu - 1].end) {
			if (k->end > u[nu - 1].end)
				u[nu - 1].end = k->end;
			continue;
		}
		if (cs_grow((void **)&u, &cap, (size_t)nu + 1, sizeof(*u)))
			goto nomem;
		u[nu].start = k->start;
		u[nu].end = k->end;
		nu++;
	}
	if (!sorted) {
		static const cs_sort_key by_start = {offsetof(struct span, start), CS_KEY_I64};
		int64_t m = 0;

		cs_sort_records(u, (size_t)nu, sizeof(*u), &by_start, 1);
		for (int64_t i = 0; i < nu; i++) {
			if (m > 0 && u[i].start <= u[m - 1].end) {
				if (u[i].end > u[m - 1].end)
					u[m - 1].end = u[i].end;
			} else {
				u[m++] = u[i];
			}
		}
		nu = m;
	}
	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];
		int st;
		int64_t d;

		if (k->pid != s->pid || k->start == CS_TS_UNKNOWN || k->end <= k->start)
			continue;
		st = cs_steps_find_near(s, cs_launch_time(k->launch_start, k->start), &hint);
		if (st < 0)
			continue;
		d = cs_sat_sub(k->end, k->start);
		if (!nccl[i]) {
			out[st].compute_ns = cs_sat_add(out[st].compute_ns, d);
			continue;
		}
		/* compute spans never include NCCL kernels, so what covers this one runs on
		 * another stream */
		out[st].comm_ns = cs_sat_add(out[st].comm_ns, d);
		out[st].comm_kernels++;
		out[st].comm_overlap_ns =
			cs_sat_add(out[st].comm_overlap_ns, covered(u, nu, k->start, k->end));
	}
	for (int64_t i = 0; i < a->nsyncs; i++) {
		const cs_a_sync *y = &a->syncs[i];

		if (y->pid != s->pid || !y->host_wait || y->end <= y->start)
			continue;
		for (int st = cs_steps_find(s, y->start); st >= 0 && st < s->n; st++) {
			int64_t t0 = y->start > s->v[st].start ? y->start : s->v[st].start;
			int64_t t1 = y->end < s->v[st].end ? y->end : s->v[st].end;

			if (s->v[st].start >= y->end)
				break;
			if (t1 > t0)
				out[st].host_wait_ns =
					cs_sat_add(out[st].host_wait_ns, cs_sat_sub(t1, t0));
		}
	}
	for (int32_t i = 0; i < s->n; i++) {
		cs_rank_step *r = &out[i];

		r->time = cs_step_time(s, i);
		if (r->time < 0)
			r->time = 0;
		r->comm_exposed_ns = cs_sat_sub(r->comm_ns, r->comm_overlap_ns);
		r->own_ns = cs_sat_sub(r->time, r->comm_exposed_ns);
		if (r->own_ns < 0)
			r->own_ns = 0;
		if (i > 0 && s->v[i].gpu_start != CS_TS_UNKNOWN &&
		    s->v[i - 1].gpu_end != CS_TS_UNKNOWN && s->v[i].gpu_start > s->v[i - 1].gpu_end)
			r->idle_before_ns = cs_sat_sub(s->v[i].gpu_start, s->v[i - 1].gpu_end);
	}
	goto out;
nomem:
	rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory");
out:
	free(u);
	free(nccl);
	free(cache);
	return rc;
}

/* ---- the view ---- */

struct uuid_of {
	uint32_t pid;
	char uuid[64];
};

struct uuids {
	struct uuid_of *v;
	int32_t n;
	size_t cap;
};

static int uuid_cb(const cs_device *d, void *arg)
{
	struct uuids *l = arg;

	if (!d->uuid || !d->uuid[0])
		return 0;
	for (int32_t i = 0; i < l->n; i++)
		if (l->v[i].pid == d->pid)
			return 0; /* the first device of a process is the one it computes on */
	if (cs_grow((void **)&l->v, &l->cap, (size_t)l->n + 1, sizeof(*l->v)))
		return CS_ERR_NOMEM;
	l->v[l->n].pid = d->pid;
	strncpy(l->v[l->n].uuid, d->uuid, sizeof(l->v[l->n].uuid) - 1);
	l->v[l->n].uuid[sizeof(l->v[l->n].uuid) - 1] = 0;
	l->n++;
	return 0;
}

static const char *uuid_find(const struct uuids *l, uint32_t pid)
{
	for (int32_t i = 0; i < l->n; i++)
		if (l->v[i].pid == pid)
			return l->v[i].uuid;
	return NULL;
}

static int64_t median_of(int64_t *v, int64_t n)
{
	return n > 0 ? cs_median_i64(v, n) : 0;
}

/* The excess of rank e's field (at offset off of cs_rank_step) in row i over the others' median. */
static int64_t excess(const cs_rank_view *v, int32_t e, int32_t i, size_t off, int64_t *tmp)
{
	int64_t n = 0, mine = *(const int64_t *)((const char *)&v->v[e].m[i] + off);

	for (int32_t j = 0; j < v->n; j++)
		if (j != e)
			tmp[n++] = *(const int64_t *)((const char *)&v->v[j].m[i] + off);
	return mine - median_of(tmp, n);
}

int cs_rank_view_build(const cs_analysis *a, const cs_report_processes *procs, cs_rank_view *v,
		       cs_error *err)
{
	struct uuids ul = {NULL, 0, 0};
	int64_t *tmp = NULL;
	int rc = 0;

	if (!v)
		return cs_error_set(err, CS_ERR_INVALID, "cs_rank_view_build: bad argument");
	memset(v, 0, sizeof(*v));
	if (!a || !procs)
		return cs_error_set(err, CS_ERR_INVALID, "cs_rank_view_build: bad argument");
	v->v = calloc((size_t)(procs->n > 0 ? procs->n : 1), sizeof(*v->v));
	if (!v->v)
		goto nomem;
	for (int32_t i = 0; i < procs->n; i++) {
		const cs_report_process *p = &procs->v[i];
		cs_rank_entry *e = &v->v[v->n];

		if (p->steps.n <= 0 || p->steps.method == CS_STEPS_NONE)
			continue;
		e->pid = p->pid;
		e->rank = p->rank;
		e->local_rank = p->local_rank;
		e->steps = &p->steps;
		e->m = calloc((size_t)p->steps.n, sizeof(*e->m));
		if (!e->m)
			goto nomem;
		rc = cs_rank_steps_measure(a, &p->steps, e->m, err);
		if (rc < 0)
			goto out;
		/* a rank of the job communicates: a process without NCCL kernels waits for no one
		 */
		{
			int comm = 0;

			for (int32_t j = 0; j < p->steps.n; j++)
				comm |= e->m[j].comm_kernels > 0;
			if (comm) {
				v->n++;
			} else {
				free(e->m);
				memset(e, 0, sizeof(*e));
			}
		}
	}
	if (v->n < 2)
		goto out;
	if (a->trace && cs_trace_each_device(a->trace, uuid_cb, &ul, NULL) == CS_ERR_NOMEM)
		goto nomem;
	for (int32_t i = 0; i < v->n; i++) {
		const char *ui = uuid_find(&ul, v->v[i].pid);

		for (int32_t j = 0; ui && j < v->n; j++)
			if (j != i) {
				const char *uj = uuid_find(&ul, v->v[j].pid);

				if (uj && !strcmp(ui, uj))
					v->v[i].shares_gpu = 1;
			}
	}
	v->nrows = INT32_MAX;
	for (int32_t i = 0; i < v->n; i++)
		if (v->v[i].steps->n < v->nrows)
			v->nrows = v->v[i].steps->n;
	v->rows = calloc((size_t)v->nrows, sizeof(*v->rows));
	tmp = malloc((size_t)v->n * sizeof(*tmp));
	if (!v->rows || !tmp) {
		v->nrows = 0;
		goto nomem;
	}
	for (int32_t i = 0; i < v->nrows; i++) {
		cs_rank_row *r = &v->rows[i];
		int32_t slow = 0;
		int64_t k, w, g, best, half;

		r->index = i;
		r->steady = 1;
		for (int32_t j = 0; j < v->n; j++) {
			if (v->v[j].steps->v[i].warmup)
				r->steady = 0;
			if (v->v[j].m[i].own_ns > v->v[slow].m[i].own_ns)
				slow = j;
		}
		r->slowest = slow;
		r->behind_ns = excess(v, slow, i, offsetof(cs_rank_step, own_ns), tmp);
		if (r->behind_ns <= 0) {
			r->behind_ns = 0;
			continue;
		}
		if (v->v[slow].shares_gpu) {
			r->cause = CS_RANK_CAUSE_SHARED_GPU;
			continue;
		}
		half = r->behind_ns - r->behind_ns / 2; /* at least half of the lag */
		k = excess(v, slow, i, offsetof(cs_rank_step, compute_ns), tmp);
		w = excess(v, slow, i, offsetof(cs_rank_step, host_wait_ns), tmp);
		g = excess(v, slow, i, offsetof(cs_rank_step, idle_before_ns), tmp);
		best = k;
		r->cause = CS_RANK_CAUSE_COMPUTE;
		if (w > best) {
			best = w;
			r->cause = CS_RANK_CAUSE_HOST_WAIT;
		}
		if (g > best) {
			best = g;
			r->cause = CS_RANK_CAUSE_IDLE_BEFORE;
		}
		/* a GPU idle that the host spent waiting is the wait's */
		if (r->cause == CS_RANK_CAUSE_IDLE_BEFORE && w >= half) {
			best = w;
			r->cause = CS_RANK_CAUSE_HOST_WAIT;
		}
		/* a cause explains the lag when it accounts for at least half of it */
		if (best < half) {
			r->cause = CS_RANK_CAUSE_NONE;
			best = 0;
		}
		r->cause_ns = best;
	}
	goto out;
nomem:
	rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory");
out:
	free(ul.v);
	free(tmp);
	return rc;
}

void cs_rank_view_free(cs_rank_view *v)
{
	if (!v)
		return;
	for (int32_t i = 0; i < v->n; i++)
		free(v->v[i].m);
	free(v->v);
	free(v->rows);
	memset(v, 0, sizeof(*v));
}

int cs_rank_view_straggler(const cs_rank_view *v, cs_rank_straggler *out)
{
	int32_t *count = NULL, best = -1, ncause[8] = {0};
	int64_t *lag = NULL, *others = NULL, *tmp = NULL, nl = 0, no = 0;
	double lo, hi;
	int found = 0;

	memset(out, 0, sizeof(*out));
	out->entry = -1;
	if (!v || v->n < 2 || v->nrows == 0)
		return 0;
	count = calloc((size_t)v->n, sizeof(*count));
	lag = malloc((size_t)v->nrows * sizeof(*lag));
	others = malloc((size_t)v->nrows * (size_t)v->n * sizeof(*others));
	tmp = malloc((size_t)v->n * sizeof(*tmp));
	if (!count || !lag || !others || !tmp)
		goto out;
	for (int32_t i = 0; i < v->nrows; i++)
		if (v->rows[i].steady) {
			out->steady++;
			if (v->rows[i].behind_ns > 0)
				count[v->rows[i].slowest]++;
		}
	for (int32_t j = 0; j < v->n; j++)
		if (best < 0 || count[j] > count[best])
			best = j;
	/* a rank slowed by another process on its GPU is contention, not a straggler */
	if (out->steady == 0 || count[best] == 0 || v->v[best].shares_gpu)
		goto out;
	/* ranks of equal speed are each the slowest in 1/n of the steps */
	ru_share_interval(count[best], out->steady, &lo, &hi);
	if (lo <= 1.0 / v->n)
		goto out;
	for (int32_t i = 0; i < v->nrows; i++) {
		const cs_rank_row *r = &v->rows[i];

		if (!r->steady)
			continue;
		lag[nl++] = excess(v, best, i, offsetof(cs_rank_step, own_ns), tmp);
		for (int32_t j = 0; j < v->n; j++)
			if (j != best)
				others[no++] = v->v[j].m[i].own_ns;
		if (r->slowest == best && r->behind_ns > 0)
			ncause[r->cause]++;
	}
	ru_median_interval(lag, nl, &out->behind_lo, &out->behind_hi);
	out->behind_ns = cs_median_i64(lag, nl);
	if (out->behind_lo <= 0)
		goto out;
	out->own_median = median_of(others, no);
	out->entry = best;
	out->slowest = count[best];
	for (int c = 1; c < 8; c++)
		if (ncause[c] > out->cause_steps) {
			out->cause = c;
			out->cause_steps = ncause[c];
		}
	found = 1;
out:
	free(count);
	free(lag);
	free(others);
	free(tmp);
	return found;
}
