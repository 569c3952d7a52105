/* edits.c - fixes of findings as edits of the run that several rules make alike (edits.h). */
#include <stdlib.h>

#include "edits.h"

uint8_t *ru_steps_mask(const cs_steps *s, const int32_t *steps, int32_t n)
{
	uint8_t *in = calloc((size_t)s->n + 1, 1);

	for (int32_t i = 0; in && i < n; i++)
		if (steps[i] >= 0 && steps[i] < s->n)
			in[steps[i]] = 1;
	return in;
}

int ru_edit_no_waits(cs_report_finding *f, const struct fact_waits *d, int copies)
{
	for (int64_t i = 0; i < d->n; i++) {
		const struct fact_wait *w = &d->v[i];

		if (w->step < 0)
			continue;
		if (cs_edit_add(&f->edit, CS_EDIT_NO_WAIT, CS_EDIT_SYNC, w->sync, 0))
			return CS_ERR_NOMEM;
		if (copies && w->first_copy >= 0 &&
		    cs_edit_add(&f->edit, CS_EDIT_NO_WAIT, CS_EDIT_COPY, w->first_copy, 0))
			return CS_ERR_NOMEM;
	}
	return 0;
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
