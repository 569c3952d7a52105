/*
 * launch_ops.h - a fact of the analysis: the kernels and memsets of the steady steps in the order
 * each thread of the program launched them (unfused-optimizer and zero-grad-memset look for
 * repeated runs in it), the repetition at a place of that sequence, and the GPU idle of a process
 * in a window.
 *
 * A fact takes what it is made of as parameters and knows nothing of the rules' cache; the cache
 * (cache.h, ru_cached_launch_ops) computes the sequence once per process and run.
 */
#ifndef CUSCOPE_FACT_LAUNCH_OPS_H
#define CUSCOPE_FACT_LAUNCH_OPS_H

#include <stdint.h>

#include "cuscope/analyze.h"

/* A kernel or memset of a steady step, as fact_launch_ops() lists it. */
struct fact_launch_op {
	int64_t launch; /* host time of the launch (the GPU start when unknown) */
	int32_t name;	/* the kernel's name id; -1 for a memset */
	int32_t step;	/* steady step of the launch */
	uint32_t tid;	/* launching thread */
	/* 24 bytes in all: the millions of them sort by radix (sort.h), and their size is read
	 * from the kernel or the memset (fact_launch_op_size) */
	uint32_t index : 31; /* in a->kernels (is_kernel) or a->copies */
	uint32_t is_kernel : 1;
};

/* The kernel's grid blocks, or the memset's bytes, of op. */
static inline int64_t fact_launch_op_size(const cs_analysis *a, const struct fact_launch_op *op)
{
	return op->is_kernel ? a->kernels[op->index].grid_blocks : a->copies[op->index].bytes;
}

/*
 * The kernels and memsets of the steps' process launched in steady steps, not replayed from a
 * CUDA graph (a graph launch is one call however many kernels it holds), sorted by step, then
 * launching thread, then launch time: the sequence each thread of the program launched in each
 * step. *out is freed with free(). 0, or CS_ERR_NOMEM.
 */
int fact_launch_ops(const cs_analysis *a, const cs_steps *s, struct fact_launch_op **out,
		    int64_t *n);

/*
 * The repetition at ops[i..end): the smallest period p (1..pmax) whose name sequence ops[i..i+p)
 * repeats back to back the most times (r >= 1) from i; *period gets p. Name ids are compared
 * (memsets all have the name -1).
 */
int32_t fact_repeats_at(const struct fact_launch_op *ops, int64_t i, int64_t end, int32_t pmax,
			int32_t *period);

/* GPU idle of process pid in [t0, t1): the time no kernel, copy or memset of it ran. */
int64_t fact_gpu_idle(const cs_analysis *a, uint32_t pid, int64_t t0, int64_t t1);

#endif
