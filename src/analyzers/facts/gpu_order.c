/* gpu_order.c - the GPU work of a process in start order (facts/gpu_order.h). */
#include "gpu_order.h"

void fact_gpu_iter_init(struct fact_gpu_iter *it, const cs_analysis *a, uint32_t pid)
{
	it->a = a;
	it->pid = pid;
	it->k = 0;
	it->c = 0;
}
