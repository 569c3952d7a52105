/* gpu_order.c - the GPU work of a process in start order (facts/gpu_order.h). */
#include "gpu_order.h"

void fact_gpu_iter_init(struct fact_gpu_iter *it, const cs_analysis *a, uint32_t pid)
{
	it->a = a;
	it->pid = pid;
	it->k = 0;
	it->c = 0;
}

static int kernel_ok(const cs_a_kernel *k, uint32_t pid)
{
	return (!pid || k->pid == pid) && k->start != CS_TS_UNKNOWN && k->end != CS_TS_UNKNOWN &&
	       k->end >= k->start;
}

static int copy_ok(const cs_a_copy *c, uint32_t pid)
{
	return (!pid || c->pid == pid) && c->start != CS_TS_UNKNOWN && c->end != CS_TS_UNKNOWN &&
	       c->end >= c->start;
}

int fact_gpu_next(struct fact_gpu_iter *it, struct fact_gpu_work *w)
{
	const cs_analysis *a = it->a;
	int have_k, have_c;

	while (it->k < a->nkernels && !kernel_ok(&a->kernels[it->k], it->pid))
		it->k++;
	while (it->c < a->ncopies && !copy_ok(&a->copies[it->c], it->pid))
		it->c++;
	have_k = it->k < a->nkernels;
	have_c = it->c < a->ncopies;
	if (!have_k && !have_c)
		return 0;
	if (have_k && (!have_c || a->kernels[it->k].start <= a->copies[it->c].start)) {
		const cs_a_kernel *k = &a->kernels[it->k];

		w->start = k->start;
		w->end = k->end;
		w->launch_start = k->launch_start;
		w->launch_end = k->launch_end;
		w->index = it->k++;
		w->is_kernel = 1;
		w->graph = k->graph;
	} else {
		const cs_a_copy *c = &a->copies[it->c];

		w->start = c->start;
		w->end = c->end;
		w->launch_start = c->launch_start;
		w->launch_end = c->launch_end;
		w->index = it->c++;
		w->is_kernel = 0;
		w->graph = 0;
	}
	return 1;
}

int64_t fact_gpu_launched(const struct fact_gpu_work *w)
{
	if (w->launch_end != CS_TS_UNKNOWN)
		return w->launch_end;
	return w->launch_start;
}
