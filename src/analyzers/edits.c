/* edits.c - fixes of findings as edits of the run that several rules make alike (edits.h). */
#include <stdlib.h>

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
	int64_t lo = 0, hi = n;

	while (lo < hi) { /* the first after t0 */
		int64_t mid = lo + (hi - lo) / 2;

		if (v[mid] <= t0)
			lo = mid + 1;
		else
			hi = mid;
	}
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

int ru_edit_no_waits(cs_report_finding *f, const cs_analysis *a, const struct fact_waits *d,
		     int copies)
{
	int64_t *launches = NULL, nl = 0;
	int rc = CS_ERR_NOMEM;

	if (copies && d->n > 1 && !(launches = launch_times(a, a->syncs[d->v[0].sync].pid, &nl)))
		return CS_ERR_NOMEM;
	for (int64_t i = 0; i < d->n; i++) {
		const struct fact_wait *w = &d->v[i];

		if (w->step < 0)
			continue;
		/* the reads of a result's elements one by one become one read of it: the later ones
		 * are not made, nor the host's work between them */
		if (copies && i > 0 && element_read(a, w, &d->v[i - 1], launches, nl)) {
			if (cs_edit_add(&f->edit, CS_EDIT_DROP_CALL, CS_EDIT_SYNC, w->sync, 0) ||
			    cs_edit_add(&f->edit, CS_EDIT_HOST_CUT, CS_EDIT_SYNC, w->sync,
					INT64_MAX) ||
			    cs_edit_add(&f->edit, CS_EDIT_DROP_CALL, CS_EDIT_COPY, w->first_copy, 0) ||
			    cs_edit_add(&f->edit, CS_EDIT_GPU_TIME, CS_EDIT_COPY, w->first_copy, 0) ||
			    cs_edit_add(&f->edit, CS_EDIT_HOST_CUT, CS_EDIT_COPY, w->first_copy,
					INT64_MAX))
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
