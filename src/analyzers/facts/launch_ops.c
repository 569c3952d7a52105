/* launch_ops.c - the GPU work of the steady steps in the order the host launched it
 * (facts/launch_ops.h). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "cuscope/checked.h"
#include "cuscope/error.h"
#include "cuscope/grow.h"
#include "cuscope/sort.h"
#include "launch_ops.h"

/*
 * Within a step: by launching thread, then launch time. Equal keys keep the order of the list,
 * which fact_launch_ops() makes by index, a kernel before the memset of the same index: the order
 * of a comparison of the index too, without sorting by it.
 */
static const cs_sort_key op_keys[] = {
	{offsetof(struct fact_launch_op, tid), CS_KEY_U32},
	{offsetof(struct fact_launch_op, launch), CS_KEY_I64},
};

/* The steady step of work launched at launch_start (start when unknown), or -1; *hint as
 * cs_steps_find_near() keeps it. */
static int32_t op_step(const cs_steps *s, int64_t launch_start, int64_t start, int *hint)
{
	int i = cs_steps_find_near(s, cs_launch_time(launch_start, start), hint);

	return i >= 0 && !s->v[i].warmup ? i : -1;
}

/* The steady step of kernel i when it is a launch of s's process, else -1. */
static int32_t kernel_step(const cs_analysis *a, const cs_steps *s, int64_t i, int *hint)
{
	const cs_a_kernel *k = &a->kernels[i];

	if (k->pid != s->pid || k->graph)
		return -1;
	return op_step(s, k->launch_start, k->start, hint);
}

/* The steady step of copy i when it is a memset of s's process, else -1. */
static int32_t memset_step(const cs_analysis *a, const cs_steps *s, int64_t i, int *hint)
{
	const cs_a_copy *c = &a->copies[i];

	if (c->pid != s->pid || !c->is_memset)
		return -1;
	return op_step(s, c->launch_start, c->start, hint);
}

/*
 * Each kernel and memset of a steady step, by index, a kernel before the memset of the same
 * index, to its step: with fill unset counted in at[step], else written at v[at[step]++].
 */
static void op_pass(const cs_analysis *a, const cs_steps *s, int64_t *at, struct fact_launch_op *v,
		    int fill)
{
	int hk = -1, hc = -1;

	for (int64_t i = 0; i < a->nkernels || i < a->ncopies; i++) {
		int32_t st = i < a->nkernels ? kernel_step(a, s, i, &hk) : -1;

		if (st >= 0 && fill) {
			const cs_a_kernel *k = &a->kernels[i];
			struct fact_launch_op *o = &v[at[st]++];

			o->step = st;
			o->index = (uint32_t)i;
			/* load.c bounds name ids by the strings' count: only a file of billions of
			 * them would reach this */
			o->name = k->name_id <= INT32_MAX ? (int32_t)k->name_id : CS_ID_NONE;
			o->launch = cs_launch_time(k->launch_start, k->start);
			o->tid = k->launch_tid;
			o->is_kernel = 1;
		} else if (st >= 0) {
			at[st]++;
		}
		st = i < a->ncopies ? memset_step(a, s, i, &hc) : -1;
		if (st >= 0 && fill) {
			const cs_a_copy *c = &a->copies[i];
			struct fact_launch_op *o = &v[at[st]++];

			o->step = st;
			o->index = (uint32_t)i;
			o->name = -1;
			o->launch = cs_launch_time(c->launch_start, c->start);
			o->tid = c->launch_tid;
			o->is_kernel = 0;
		} else if (st >= 0) {
			at[st]++;
		}
	}
}

int fact_launch_ops(const cs_analysis *a, const cs_steps *s, struct fact_launch_op **out,
		    int64_t *n)
{
	struct fact_launch_op *v = NULL;
	int64_t *at;

	*out = NULL;
	*n = 0;
	/* an index has 31 bits in a fact_launch_op (load.c refuses more kernels) */
	if (a->nkernels > INT32_MAX || a->ncopies > INT32_MAX)
		return CS_ERR_NOMEM;
	at = calloc((size_t)s->n + 1, sizeof(*at));
	if (!at)
		return CS_ERR_NOMEM;
	/*
	 * Sorted by step as a counting sort makes it, straight into place: a pass counts each
	 * step's work, a second writes it, and then each step's few thousand are sorted alone.
	 * A sort of the whole array would need a second array as large (the radix sort's), or
	 * pointers to every record and a comparison each (a merge sort's).
	 */
	op_pass(a, s, at, NULL, 0);
	/* at[st]: where step st begins, then (after the second pass) where the next begins */
	for (int32_t i = 0; i < s->n; i++) {
		int64_t c = at[i];

		at[i] = *n;
		*n += c;
	}
	v = cs_big_alloc((size_t)(*n + 1) * sizeof(*v));
	if (!v) {
		free(at);
		*n = 0;
		return CS_ERR_NOMEM;
	}
	op_pass(a, s, at, v, 1);
	for (int32_t i = 0; i < s->n; i++) {
		int64_t b = i > 0 ? at[i - 1] : 0;

		cs_sort_records(v + b, (size_t)(at[i] - b), sizeof(*v), op_keys, 2);
	}
	free(at);
	*out = v;
	return 0;
}

int32_t fact_repeats_at(const struct fact_launch_op *ops, int64_t i, int64_t end, int32_t pmax,
			int32_t *period)
{
	int32_t best_r = 1, best_p = 1, name = ops[i].name;
	int64_t room = (end - i) / 2; /* periods with i + 2 p <= end */

	if (room < pmax)
		pmax = (int32_t)room;
	/* a period repeats only where the name p ahead is the same: those periods are found 64 at a
	 * time without a branch per period, and measured in ascending order */
	for (int32_t p0 = 1; p0 <= pmax; p0 += 64) {
		uint64_t same = 0;

		for (int32_t d = 0; d < 64 && p0 + d <= pmax; d++)
			same |= (uint64_t)(ops[i + p0 + d].name == name) << d;
		while (same) {
			int32_t p = p0 + __builtin_ctzll(same), r;
			int64_t k = 1;

			same &= same - 1;
			while (i + k + p < end && ops[i + k].name == ops[i + k + p].name)
				k++;
			r = (int32_t)((k + p) / p);
			/* the smallest period that covers the most */
			if (r >= 2 && (int64_t)r * p > (int64_t)best_r * best_p) {
				best_r = r;
				best_p = p;
			}
		}
	}
	*period = best_p;
	return best_r;
}

int64_t fact_gpu_idle(const cs_analysis *a, uint32_t pid, int64_t t0, int64_t t1)
{
	int64_t busy;

	if (t1 <= t0 || t0 == CS_TS_UNKNOWN)
		return 0;
	busy = cs_analysis_gpu_busy(a, pid, t0, t1);
	return busy < cs_sat_sub(t1, t0) ? cs_sat_sub(cs_sat_sub(t1, t0), busy) : 0;
}
