/* edits.c - fixes of findings as edits of the run that several rules make alike (edits.h). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/sort.h"
#include "edits.h"

uint8_t *ru_steps_mask(const cs_steps *s, const int32_t *steps, int32_t n)
{
	uint8_t *in = calloc((size_t)s->n + 1, 1);

	for (int32_t i = 0; in && i < n; i++)
		if (steps[i] >= 0 && steps[i] < s->n)
			in[steps[i]] = 1;
	return in;
}

/* The launch times of the kernels of process pid, sorted; *n of them. NULL without memory (or
 * with none: *n 0). */
static int64_t *launch_times(const cs_analysis *a, uint32_t pid, int64_t *n)
{
	int64_t *v = malloc((size_t)(a->nkernels > 0 ? a->nkernels : 1) * sizeof(*v)), k = 0;

	for (int64_t i = 0; v && i < a->nkernels; i++)
		if (a->kernels[i].pid == pid)
			v[k++] = cs_launch_time(a->kernels[i].launch_start, a->kernels[i].start);
	if (v)
		cs_sort_i64(v, (size_t)k);
	*n = k;
	return v;
}

/* Is a time of the n sorted times v in (t0, t1)? */
static int any_between(const int64_t *v, int64_t n, int64_t t0, int64_t t1)
{
	int64_t lo = t0 < INT64_MAX ? cs_lower_bound_i64(v, sizeof(*v), n, t0 + 1) : n;

	return lo < n && v[lo] < t1;
}

/*
 * Is the wait w (with a copy) a read that follows the previous wait p of its step and thread with
 * no kernel launched between: the host reading the elements of a result one by one (`[int(x) for x
 * in t]`)?
 */
static int element_read(const cs_analysis *a, const struct fact_wait *w, const struct fact_wait *p,
			const int64_t *launches, int64_t nl)
{
	const cs_a_sync *y = &a->syncs[w->sync], *q = &a->syncs[p->sync];
	const cs_a_copy *c;

	if (w->first_copy < 0 || p->step != w->step || q->tid != y->tid ||
	    q->end == CS_TS_UNKNOWN)
		return 0;
	c = &a->copies[w->first_copy];
	return c->launch_start != CS_TS_UNKNOWN && c->launch_start >= q->end &&
	       !any_between(launches, nl, q->end, c->launch_start);
}

/* A kernel of a thread by its launch, for nonzero_edit(). */
struct thread_kernel {
	uint64_t tid; /* first: cs_lower_bound_key_i64() */
	int64_t launch;
	int64_t kernel;
};

/* The kernels of process pid by thread and launch time; *n of them. NULL without memory. */
static struct thread_kernel *thread_kernels(const cs_analysis *a, uint32_t pid, int64_t *n)
{
	static const cs_sort_key keys[] = {{offsetof(struct thread_kernel, tid), CS_KEY_U64},
					   {offsetof(struct thread_kernel, launch), CS_KEY_I64}};
	struct thread_kernel *v = malloc((size_t)(a->nkernels > 0 ? a->nkernels : 1) * sizeof(*v));
	int64_t k = 0;

	for (int64_t i = 0; v && i < a->nkernels; i++) {
		const cs_a_kernel *x = &a->kernels[i];

		if (x->pid == pid && x->launch_start != CS_TS_UNKNOWN)
			v[k++] = (struct thread_kernel){x->launch_tid, x->launch_start, i};
	}
	if (v)
		cs_sort_records(v, (size_t)k, sizeof(*v), keys, 2);
	*n = k;
	return v;
}

/* Index of the first of the n kernels v of thread tid launched at or after t (n when none). */
static int64_t kernel_at(const struct thread_kernel *v, int64_t n, uint32_t tid, int64_t t)
{
	return cs_lower_bound_key_i64(v, sizeof(*v), n, tid, t);
}

static int kernel_named(const cs_analysis *a, const struct thread_kernel *v, int64_t n, int64_t i,
			uint32_t tid, const char *part)
{
	const char *name;

	if (i < 0 || i >= n || v[i].tid != tid)
		return 0;
	name = cs_analysis_string(a, a->kernels[v[i].kernel].name_id);
	return name && strstr(name, part) != NULL;
}

/*
 * A read that sizes a data-dependent result: PyTorch's nonzero() (behind indexing by a boolean
 * mask) counts the true entries with CUB's DeviceReduce, reads the count back, and selects with
 * CUB's DeviceCompactInit and DeviceSelectSweep kernels. Its fix (a mask, torch.where,
 * ignore_index) launches none of that: the count's kernels before the read and the selection's
 * two after its wait are not launched, nor is the host's time before each. 0 when w is not such a
 * read, 1 when the edit was added, CS_ERR_NOMEM.
 */
static int nonzero_edit(cs_report_finding *f, const cs_analysis *a, const struct fact_wait *w,
			const struct thread_kernel *v, int64_t n)
{
	const cs_a_copy *c = w->first_copy >= 0 ? &a->copies[w->first_copy] : NULL;
	const cs_a_sync *y = &a->syncs[w->sync];
	int64_t before, after, first;

	if (!c || c->launch_start == CS_TS_UNKNOWN || y->end == CS_TS_UNKNOWN ||
	    y->end < c->launch_start)
		return 0;
	before = kernel_at(v, n, c->launch_tid, c->launch_start) - 1;
	after = kernel_at(v, n, c->launch_tid, y->end);
	if (!kernel_named(a, v, n, before, c->launch_tid, "DeviceReduce") ||
	    !kernel_named(a, v, n, after, c->launch_tid, "DeviceCompactInitKernel") ||
	    !kernel_named(a, v, n, after + 1, c->launch_tid, "DeviceSelectSweepKernel"))
		return 0;
	for (first = before; kernel_named(a, v, n, first - 1, c->launch_tid, "DeviceReduce");)
		first--;
	for (int64_t i = first; i <= after + 1; i++) {
		if (i > before && i < after)
			continue;
		if (cs_edit_add(&f->edit, CS_EDIT_DROP_CALL, CS_EDIT_KERNEL, v[i].kernel, 0) ||
		    cs_edit_add(&f->edit, CS_EDIT_GPU_TIME, CS_EDIT_KERNEL, v[i].kernel, 0) ||
		    cs_edit_add(&f->edit, CS_EDIT_HOST_CUT, CS_EDIT_KERNEL, v[i].kernel, INT64_MAX))
			return CS_ERR_NOMEM;
	}
	return 1;
}

/* The read w is not made: its wait, its copy, and the host's time before their calls. */
static int edit_no_read(cs_report_finding *f, const struct fact_wait *w)
{
	return cs_edit_add(&f->edit, CS_EDIT_DROP_CALL, CS_EDIT_SYNC, w->sync, 0) ||
			       cs_edit_add(&f->edit, CS_EDIT_HOST_CUT, CS_EDIT_SYNC, w->sync,
					   INT64_MAX) ||
			       cs_edit_add(&f->edit, CS_EDIT_DROP_CALL, CS_EDIT_COPY, w->first_copy,
					   0) ||
			       cs_edit_add(&f->edit, CS_EDIT_GPU_TIME, CS_EDIT_COPY, w->first_copy,
					   0) ||
			       cs_edit_add(&f->edit, CS_EDIT_HOST_CUT, CS_EDIT_COPY, w->first_copy,
					   INT64_MAX)
		       ? CS_ERR_NOMEM
		       : 0;
}

int ru_edit_no_waits(cs_report_finding *f, const cs_analysis *a, const struct fact_waits *d,
		     int copies)
{
	int64_t *launches = NULL, nl = 0, nk = 0;
	struct thread_kernel *kernels = NULL;
	int rc = CS_ERR_NOMEM, nz;

	if (copies && d->n > 0) {
		uint32_t pid = a->syncs[d->v[0].sync].pid;

		launches = launch_times(a, pid, &nl);
		kernels = thread_kernels(a, pid, &nk);
		if (!launches || !kernels)
			goto out;
	}
	for (int64_t i = 0; i < d->n; i++) {
		const struct fact_wait *w = &d->v[i];

		if (w->step < 0)
			continue;
		if (copies && w->first_copy >= 0) {
			nz = nonzero_edit(f, a, w, kernels, nk);
			if (nz < 0 || (nz > 0 && edit_no_read(f, w)))
				goto out;
			if (nz > 0)
				continue;
		}
		/* the reads of a result's elements one by one become one read of it: the later ones
		 * are not made, nor the host's work between them */
		if (copies && i > 0 && element_read(a, w, &d->v[i - 1], launches, nl)) {
			if (edit_no_read(f, w))
				goto out;
			continue;
		}
		if (cs_edit_add(&f->edit, CS_EDIT_NO_WAIT, CS_EDIT_SYNC, w->sync, 0))
			goto out;
		if (copies && w->first_copy >= 0 &&
		    cs_edit_add(&f->edit, CS_EDIT_NO_WAIT, CS_EDIT_COPY, w->first_copy, 0))
			goto out;
	}
	rc = 0;
out:
	free(launches);
	free(kernels);
	return rc;
}

int ru_edit_kernel_time(cs_report_finding *f, const cs_analysis *a, const cs_steps *s,
			const int32_t *steps, int32_t n,
			int (*match)(const cs_a_kernel *k, void *arg), void *arg, double factor)
{
	uint8_t *in = ru_steps_mask(s, steps, n);
	int rc = 0;

	if (!in)
		return CS_ERR_NOMEM;
	for (int64_t i = 0; i < a->nkernels && rc == 0; i++) {
		const cs_a_kernel *k = &a->kernels[i];
		int st;

		if (k->pid != s->pid || k->start == CS_TS_UNKNOWN || k->end == CS_TS_UNKNOWN ||
		    k->end <= k->start)
			continue;
		st = cs_steps_find_launch(s, k->launch_start, k->start);
		if (st < 0 || !in[st] || !match(k, arg))
			continue;
		rc = cs_edit_add(&f->edit, CS_EDIT_GPU_TIME, CS_EDIT_KERNEL, i,
				 (int64_t)((double)(k->end - k->start) * factor));
	}
	free(in);
	return rc ? CS_ERR_NOMEM : 0;
}
