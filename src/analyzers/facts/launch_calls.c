/* launch_calls.c - the launch calls of a process, by start (facts/launch_calls.h). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/error.h"
#include "cuscope/grow.h"
#include "cuscope/sort.h"
#include "launch_calls.h"

int fact_launch_calls(const cs_analysis *a, uint32_t pid, struct fact_launch_calls *out)
{
	static const cs_sort_key by_start = {offsetof(struct fact_launch_call, start), CS_KEY_I64};
	int64_t n = 0;

	memset(out, 0, sizeof(*out));
	for (int64_t i = 0; i < a->nkernels; i++)
		n += a->kernels[i].pid == pid && a->kernels[i].launch_start != CS_TS_UNKNOWN;
	for (int64_t i = 0; i < a->ncopies; i++)
		n += a->copies[i].pid == pid && a->copies[i].launch_start != CS_TS_UNKNOWN;
	out->v = cs_big_alloc((size_t)(n + 1) * sizeof(*out->v));
	if (!out->v)
		return CS_ERR_NOMEM;
	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];

		if (k->pid == pid && k->launch_start != CS_TS_UNKNOWN)
			out->v[out->n++] = (struct fact_launch_call){k->launch_start, k->launch_end,
								     k->launch_tid, 0};
	}
	for (int64_t i = 0; i < a->ncopies; i++) {
		const cs_a_copy *c = &a->copies[i];

		if (c->pid == pid && c->launch_start != CS_TS_UNKNOWN)
			out->v[out->n++] = (struct fact_launch_call){c->launch_start, c->launch_end,
								     c->launch_tid, 1};
	}
	/* stable: among equal starts the kernels' calls first, each array in its order */
	cs_sort_records(out->v, (size_t)out->n, sizeof(*out->v), &by_start, 1);
	return 0;
}

void fact_launch_calls_free(struct fact_launch_calls *f)
{
	free(f->v);
	memset(f, 0, sizeof(*f));
}
