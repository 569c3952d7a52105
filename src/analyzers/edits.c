/* edits.c - fixes of findings as edits of the run that several rules make alike (edits.h). */
#include <stdlib.h>
#include <string.h>

#include "edits.h"

uint8_t *ru_steps_mask(const cs_steps *s, const int32_t *steps, int32_t n)
{
	uint8_t *in = calloc((size_t)s->n + 1, 1);

	for (int32_t i = 0; in && i < n; i++)
		if (steps[i] >= 0 && steps[i] < s->n)
			in[steps[i]] = 1;
	return in;
}

/* Index of the first of the n ops (fact_launch_ops(): by step, thread, launch time) of thread tid
 * in step launched at or after t; n when none. */
static int64_t op_at(const struct fact_launch_op *ops, int64_t n, int32_t step, uint32_t tid,
		     int64_t t)
{
	int64_t lo = 0, hi = n;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;
		const struct fact_launch_op *o = &ops[mid];

		if (o->step < step ||
		    (o->step == step && (o->tid < tid || (o->tid == tid && o->launch < t))))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Is ops[i] a kernel of thread tid in step whose name holds part? */
static int op_named(const cs_analysis *a, const struct fact_launch_op *ops, int64_t n, int64_t i,
		    int32_t step, uint32_t tid, const char *part)
{
	const char *name;

	if (i < 0 || i >= n || ops[i].step != step || ops[i].tid != tid || !ops[i].is_kernel)
		return 0;
	name = cs_analysis_string(a, a->kernels[ops[i].index].name_id);
	return name && strstr(name, part) != NULL;
}

/*
 * Is the wait w (with a copy) a read that follows the previous wait p of its step and thread with
 * nothing launched between by that thread: the host reading the elements of a result one by one
 * (`[int(x) for x in t]`)?
 */
static int element_read(const cs_analysis *a, const struct fact_wait *w, const struct fact_wait *p,
			const struct fact_launch_op *ops, int64_t n)
{
	const cs_a_sync *y = &a->syncs[w->sync], *q = &a->syncs[p->sync];
	const cs_a_copy *c;
	int64_t next;

	if (w->first_copy < 0 || p->step != w->step || q->tid != y->tid || q->end == CS_TS_UNKNOWN)
		return 0;
	c = &a->copies[w->first_copy];
	if (c->launch_start == CS_TS_UNKNOWN || c->launch_start < q->end)
		return 0;
	next = op_at(ops, n, w->step, c->launch_tid, q->end);
	return next >= n || ops[next].step != w->step || ops[next].tid != c->launch_tid ||
	       ops[next].launch >= c->launch_start;
}

/* Kernels between a mask's selection and the accumulation of the sorted indices that index_put_
 * launches (its index arithmetic, an arange, the sort): at most this many. */
#define SORT_PATH_MAX 8

int ru_edit_not_launched(cs_edit **e, int target, int64_t index, int host)
{
	if (cs_edit_add(e, CS_EDIT_DROP_CALL, target, index, 0) ||
	    cs_edit_add(e, CS_EDIT_GPU_TIME, target, index, 0) ||
	    (host && cs_edit_add(e, CS_EDIT_HOST_CUT, target, index, INT64_MAX)))
		return CS_ERR_NOMEM;
	return 0;
}

/* Is ops[i] a kernel of index_put_'s way to its sorted indices: element-wise index arithmetic,
 * an arange, a radix sort? */
static int sort_path_op(const cs_analysis *a, const struct fact_launch_op *ops, int64_t n,
			int64_t i, int32_t step, uint32_t tid)
{
	return op_named(a, ops, n, i, step, tid, "elementwise_kernel") ||
	       op_named(a, ops, n, i, step, tid, "RangeFactories") ||
	       op_named(a, ops, n, i, step, tid, "RadixSort");
}

/*
 * A read that sizes a data-dependent result: PyTorch's nonzero() (behind indexing by a boolean
 * mask) counts the true entries with CUB's DeviceReduce, reads the count back, and selects with
 * CUB's DeviceCompactInit and DeviceSelectSweep kernels. Its fix (a mask, torch.where,
 * ignore_index) launches none of that: the count's kernels before the read and the selection's
 * two after its wait are not launched, nor is the host's time before each. Where the selection
 * feeds the backward of the indexing (index_put_ with accumulate=True: index arithmetic, an arange
 * and a radix sort of the indices, then indexing_backward_kernel, on the same thread within
 * SORT_PATH_MAX kernels and nothing else between), the sort's kernels go too: a where's backward is
 * one element-wise kernel, for which indexing_backward_kernel stays. 0 when w is not such a read, 1
 * when the edit was added, CS_ERR_NOMEM.
 */
static int nonzero_edit(cs_report_finding *f, const cs_analysis *a, const struct fact_wait *w,
			const struct fact_launch_op *ops, int64_t n)
{
	const cs_a_copy *c = w->first_copy >= 0 ? &a->copies[w->first_copy] : NULL;
	const cs_a_sync *y = &a->syncs[w->sync];
	int64_t before, after, first;
	uint32_t tid;

	if (!c || c->launch_start == CS_TS_UNKNOWN || y->end == CS_TS_UNKNOWN ||
	    y->end < c->launch_start)
		return 0;
	tid = c->launch_tid;
	before = op_at(ops, n, w->step, tid, c->launch_start) - 1;
	after = op_at(ops, n, w->step, tid, y->end);
	if (!op_named(a, ops, n, before, w->step, tid, "DeviceReduce") ||
	    !op_named(a, ops, n, after, w->step, tid, "DeviceCompactInitKernel") ||
	    !op_named(a, ops, n, after + 1, w->step, tid, "DeviceSelectSweepKernel"))
		return 0;
	for (first = before; op_named(a, ops, n, first - 1, w->step, tid, "DeviceReduce");)
		first--;
	for (int64_t i = first; i <= after + 1; i++)
		if ((i <= before || i >= after) &&
		    ru_edit_not_launched(&f->edit, CS_EDIT_KERNEL, ops[i].index, 1))
			return CS_ERR_NOMEM;
	for (int64_t j = after + 2; j <= after + 2 + SORT_PATH_MAX; j++) {
		if (sort_path_op(a, ops, n, j, w->step, tid))
			continue;
		if (!op_named(a, ops, n, j, w->step, tid, "indexing_backward_kernel"))
			break; /* other work: this selection is not the backward's */
		for (int64_t i = after + 2; i < j; i++)
			if (ru_edit_not_launched(&f->edit, CS_EDIT_KERNEL, ops[i].index, 1))
				return CS_ERR_NOMEM;
		break;
	}
	return 1;
}

/* The read w is not made: its wait, its copy, and the host's time before their calls. */
static int edit_no_read(cs_report_finding *f, const struct fact_wait *w)
{
	if (cs_edit_add(&f->edit, CS_EDIT_DROP_CALL, CS_EDIT_SYNC, w->sync, 0) ||
	    cs_edit_add(&f->edit, CS_EDIT_HOST_CUT, CS_EDIT_SYNC, w->sync, INT64_MAX))
		return CS_ERR_NOMEM;
	return ru_edit_not_launched(&f->edit, CS_EDIT_COPY, w->first_copy, 1);
}

int ru_edit_no_waits(cs_report_finding *f, const cs_analysis *a, const struct fact_waits *d,
		     int copies, const struct fact_launch_op *ops, int64_t nops)
{
	int rc = CS_ERR_NOMEM, nz;

	if (!ops)
		nops = 0;
	for (int64_t i = 0; i < d->n; i++) {
		const struct fact_wait *w = &d->v[i];

		if (w->step < 0)
			continue;
		if (copies && w->first_copy >= 0) {
			nz = nonzero_edit(f, a, w, ops, nops);
			if (nz < 0 || (nz > 0 && edit_no_read(f, w)))
				goto out;
			if (nz > 0)
				continue;
		}
		/* the reads of a result's elements one by one become one read of it: the later ones
		 * are not made, nor the host's work between them */
		if (copies && i > 0 && element_read(a, w, &d->v[i - 1], ops, nops)) {
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
	return rc;
}

int ru_edit_kernel_times(cs_report_finding *f, const cs_analysis *a, const cs_steps *s,
			 const int32_t *steps, int32_t n,
			 int64_t (*time_of)(const cs_a_kernel *k, int64_t i, void *arg), void *arg)
{
	uint8_t *in = ru_steps_mask(s, steps, n);
	int rc = 0;

	if (!in)
		return CS_ERR_NOMEM;
	for (int64_t i = 0; i < a->nkernels && rc == 0; i++) {
		const cs_a_kernel *k = &a->kernels[i];
		int64_t t;
		int st;

		if (k->pid != s->pid || k->start == CS_TS_UNKNOWN || k->end == CS_TS_UNKNOWN ||
		    k->end <= k->start)
			continue;
		st = cs_steps_find_launch(s, k->launch_start, k->start);
		if (st < 0 || !in[st] || (t = time_of(k, i, arg)) < 0)
			continue;
		rc = cs_edit_add(&f->edit, CS_EDIT_GPU_TIME, CS_EDIT_KERNEL, i, t);
	}
	free(in);
	return rc ? CS_ERR_NOMEM : 0;
}

struct scaled {
	int (*match)(const cs_a_kernel *k, void *arg);
	void *arg;
	double factor;
};

static int64_t scaled_time(const cs_a_kernel *k, int64_t i, void *arg)
{
	const struct scaled *c = arg;

	(void)i;
	return c->match(k, c->arg) ? (int64_t)((double)(k->end - k->start) * c->factor) : -1;
}

int ru_edit_kernel_time(cs_report_finding *f, const cs_analysis *a, const cs_steps *s,
			const int32_t *steps, int32_t n,
			int (*match)(const cs_a_kernel *k, void *arg), void *arg, double factor)
{
	struct scaled c = {match, arg, factor};

	return ru_edit_kernel_times(f, a, s, steps, n, scaled_time, &c);
}
