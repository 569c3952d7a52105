/*
 * zero_grad_memset.c - the zero-grad-memset rule: inside steady-state steps, every gradient
 * written with zeros (`zero_grad(set_to_none=False)`, `model.zero_grad(False)`, a loop of
 * `p.grad.zero_()`) where releasing the gradients (`set_to_none=True`) would write nothing, and
 * the backward pass would store the new gradients instead of adding them into zeros.
 *
 * What PyTorch issues for it (aten's zero_() on a CUDA tensor is fill_(0)): one fill kernel per
 * gradient (`vectorized_elementwise_kernel<..., FillFunctor<T>>`), launched back to back by the
 * per-tensor loop of nn.Module.zero_grad or Optimizer.zero_grad; or, when the optimizer runs with
 * foreach, `torch._foreach_zero_` per device and dtype: one or a few
 * `multi_tensor_apply_kernel<..., ZeroFunctor<...>>` launches over all the gradients. A C program
 * would use cudaMemsetAsync per buffer. The rule finds, in the order each host thread launched its
 * work in each step (fact_launch_ops):
 *   - a run of at least MIN_FILLS fill operations back to back (fill kernels or memsets), of at
 *     least two different sizes (grid blocks, bytes): a reset of many tensors of different shapes
 *     at once, as a model's gradients are, unlike the fills a step makes anyway (a loss scaler's
 *     flag, a buffer reset, the zeros of an output: one or two at a time, or among other kernels);
 *   - or multi-tensor zero kernels (ZeroFunctor), which PyTorch launches for nothing but
 *     `_foreach_zero_`;
 * the same count in most steps. Its cost: the GPU time of those writes plus the GPU idle inside the
 * run of fills (launched one by one). Unlike the cost rules, a pattern found in most steady steps
 * is always reported (its severity by cost): it is certain and its fix is free.
 * docs/rules/zero-grad-memset.md has the decision and the measured values.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_names.h"
#include "cache.h"
#include "edits.h"
#include "finding_kit.h"
#include "estimates.h"
#include "launch_ops.h"
#include "sites.h"
#include "rules.h"
#include "cuscope/checked.h"
#include "cuscope/grow.h"
#include "cuscope/launch_cost.h"
#include "cuscope/sort.h"

/* A reset of many tensors: at least this many fills back to back. */
#define MIN_FILLS 4
/* In at least this share of the steady steps, and at least this many of them. */
#define MIN_STEP_SHARE 0.5
#define MIN_STEPS      3

/* Call sites listed in the evidence. */
#define MAX_SITES 5

#define RULE_ID RULE_ID_ZERO_GRAD_MEMSET

struct step_sum {
	int64_t fills, runs, foreach_zero, memsets;
	int64_t gpu_ns, idle_ns, launch_ns, cost;
	int64_t memset_bytes;
	int64_t t_first, t_last;
	int64_t first_op; /* ops index of the first write, or -1 */
};

static int is_fill_kernel(const char *name)
{
	return (strstr(name, "FillFunctor") || strstr(name, "fill_kernel")) &&
	       !strstr(name, "multi_tensor_apply");
}

static int is_foreach_zero(const char *name)
{
	return strstr(name, "multi_tensor_apply") && strstr(name, "ZeroFunctor");
}

/* What the scan of the launch order asks of a kernel name, as bits (a fact_name_memo's test). */
enum { NAME_FILL = 1, NAME_FOREACH_ZERO = 2 };

static int name_kind(const char *name)
{
	return (is_fill_kernel(name) ? NAME_FILL : 0) |
	       (is_foreach_zero(name) ? NAME_FOREACH_ZERO : 0);
}

/* PyTorch's element-wise add: what AccumulateGrad launches to add a new gradient into one
 * already there (zeroed, when the step zeroed it). */
static int is_add_kernel(const char *name)
{
	return strstr(name, "vectorized_elementwise_kernel") && strstr(name, "CUDAFunctor_add");
}

/* The first position of v (n values, ascending) whose value is at least key; n when none. */
static int64_t first_at_least(const int64_t *v, int64_t n, int64_t key)
{
	return cs_lower_bound_i64(v, sizeof(*v), n, key);
}

/*
 * With the gradients set to None the backward pass stores each new gradient instead of adding it
 * into the zeros: for each zeroing fill kernel of an affected step, the first element-wise add of
 * the same grid launched after that step's writes (and before the next zeroing) is not launched
 * either, nor is its dispatch: dispatch ns of the host's time before it (the autograd engine's
 * walk to the gradient's AccumulateGrad node stays: it still stores the new gradient).
 * writes: indices in ops of the writes; cost: per step, non-zero for the affected ones.
 * 0 or CS_ERR_NOMEM.
 */
static int edit_accumulates(cs_report_finding *f, const cs_analysis *a, const cs_steps *s,
			    const struct fact_launch_op *ops, const struct cs_i64s *writes,
			    const int64_t *cost, int64_t dispatch)
{
	struct cs_i64s when = {0};  /* launch << 20 | step of each write, sorted: the rounds */
	struct cs_i64s grids = {0}; /* step << 32 | grid of each fill kernel of an affected step */
	uint8_t *used = NULL;	    /* per entry of grids: an add was matched to it */
	int rc = CS_ERR_NOMEM;

	for (int64_t k = 0; k < writes->n; k++) {
		const struct fact_launch_op *o = &ops[writes->v[k]];

		if (o->launch < 0 || o->launch >= (INT64_MAX >> 21) || o->step >= (1 << 20))
			continue;
		if (cs_i64s_push(&when, o->launch << 20 | o->step))
			goto out;
		int64_t size = fact_launch_op_size(a, o);

		if (cost[o->step] > 0 && o->is_kernel && size > 0 && size < INT32_MAX &&
		    cs_i64s_push(&grids, (int64_t)o->step << 32 | size))
			goto out;
	}
	ru_sort_i64(when.v, when.n);
	ru_sort_i64(grids.v, grids.n);
	used = calloc((size_t)grids.n + 1, 1);
	if (!used)
		goto out;
	for (int64_t i = 0; i < a->nkernels && grids.n > 0; i++) {
		const cs_a_kernel *k = &a->kernels[i];
		int64_t key, lo, round;

		if (k->pid != s->pid || k->launch_start == CS_TS_UNKNOWN || k->launch_start < 0 ||
		    k->launch_start >= (INT64_MAX >> 21) || k->grid_blocks <= 0 ||
		    k->grid_blocks >= INT32_MAX ||
		    !is_add_kernel(cs_analysis_string(a, k->name_id)))
			continue;
		/* the last write launched before the add: its round */
		lo = first_at_least(when.v, when.n, k->launch_start << 20);
		if (lo == 0)
			continue;
		round = when.v[lo - 1] & ((1 << 20) - 1);
		key = round << 32 | k->grid_blocks;
		lo = first_at_least(grids.v, grids.n, key);
		while (lo < grids.n && grids.v[lo] == key && used[lo])
			lo++; /* the first unused entry of the key */
		if (lo >= grids.n || grids.v[lo] != key)
			continue;
		used[lo] = 1;
		if (ru_edit_not_launched(&f->edit, CS_EDIT_KERNEL, i, 0) ||
		    cs_edit_add(&f->edit, CS_EDIT_HOST_CUT, CS_EDIT_KERNEL, i, dispatch))
			goto out;
	}
	rc = 0;
out:
	free(when.v);
	free(grids.v);
	free(used);
	return rc;
}

/*
 * What the framework's dispatch of one element-wise operation costs the host, besides its launch
 * call: the median of gaps (n of them, ns), the host time between two writes of a run launched back
 * to back by the zeroing loop, each less what the recorder spent after the write before it (META
 * call_tails), as the replay takes that out of every gap. With no gap measured: INT64_MAX (all
 * the time before it).
 */
static int64_t dispatch_ns(int64_t *gaps, int64_t n)
{
	return n > 0 ? cs_median_i64(gaps, n) : INT64_MAX;
}

static int is_fill(const cs_analysis *a, struct fact_name_memo *names,
		   const struct fact_launch_op *o)
{
	return !o->is_kernel || (fact_name_memo_get(names, a, o->name) & NAME_FILL);
}

static void op_times(const cs_analysis *a, const struct fact_launch_op *o, int64_t *start,
		     int64_t *end, int64_t *launch_end)
{
	int64_t le;

	if (o->is_kernel) {
		*start = a->kernels[o->index].start;
		*end = a->kernels[o->index].end;
		le = a->kernels[o->index].launch_end;
	} else {
		*start = a->copies[o->index].start;
		*end = a->copies[o->index].end;
		le = a->copies[o->index].launch_end;
	}
	*launch_end = le != CS_TS_UNKNOWN ? le : o->launch;
	if (*start == CS_TS_UNKNOWN || *end == CS_TS_UNKNOWN)
		*start = *end = o->launch; /* a row without its GPU times: no time of its own */
}

/* A write: its GPU time into x, and with idle_ns (the idle of its run before it) into sites. */
static int add_write(const cs_analysis *a, const struct fact_launch_op *o, int64_t i,
		     struct step_sum *x, struct ru_sites *sites, int64_t idle_ns)
{
	int64_t t0, t1, le;
	const cs_a_kernel *k = o->is_kernel ? &a->kernels[o->index] : NULL;
	const cs_a_copy *c = o->is_kernel ? NULL : &a->copies[o->index];

	op_times(a, o, &t0, &t1, &le);
	if (ru_sites_add(sites, k ? k->name_id : -1, o->tid, k ? k->stack_id : c->stack_id, o->step,
			 cs_sat_add(t1 > t0 ? cs_sat_sub(t1, t0) : 0, idle_ns)))
		return CS_ERR_NOMEM;
	if (t1 > t0)
		cs_sat_accum(&x->gpu_ns, cs_sat_sub(t1, t0));
	if (!o->is_kernel) {
		x->memsets++;
		cs_sat_accum(&x->memset_bytes, c->bytes);
	}
	if (x->first_op < 0)
		x->first_op = i;
	ru_widen(&x->t_first, &x->t_last, t0, t1);
	return 0;
}

/* A run of fills ops[i..j): its writes, the GPU idle inside it and its launch time; each write
 * charged in sites with the idle of the run before it (after the writes that ended last). */
static int add_run(const cs_analysis *a, uint32_t pid, const struct fact_launch_op *ops, int64_t i,
		   int64_t j, struct step_sum *x, struct ru_sites *sites)
{
	int64_t t0 = INT64_MAX, t1 = 0, l1 = 0;

	for (int64_t k = i; k < j; k++) {
		int64_t s0, s1, le;

		op_times(a, &ops[k], &s0, &s1, &le);
		if (add_write(a, &ops[k], k, x, sites,
			      t1 > 0 && s0 > t1 ? fact_gpu_idle(a, pid, t1, s0) : 0))
			return CS_ERR_NOMEM;
		t0 = s0 < t0 ? s0 : t0;
		t1 = s1 > t1 ? s1 : t1;
		l1 = le > l1 ? le : l1;
	}
	x->runs++;
	x->fills += j - i;
	cs_sat_accum(&x->idle_ns, fact_gpu_idle(a, pid, t0, t1));
	cs_sat_accum(&x->launch_ns, l1 > ops[i].launch ? cs_sat_sub(l1, ops[i].launch) : 0);
	return 0;
}

/* Whether ops[i..j) has at least two sizes. */
static int sizes_differ(const cs_analysis *a, const struct fact_launch_op *ops, int64_t i,
			int64_t j)
{
	int64_t size = fact_launch_op_size(a, &ops[i]);

	for (int64_t k = i + 1; k < j; k++)
		if (fact_launch_op_size(a, &ops[k]) != size)
			return 1;
	return 0;
}

/* The most common non-zero write count (fills + multi-tensor zero kernels) of the steps. */
static int64_t modal_count(const struct step_sum *sum, int32_t n, int64_t *tmp)
{
	for (int32_t i = 0; i < n; i++)
		tmp[i] = sum[i].fills + sum[i].foreach_zero;
	return ru_mode_nonzero(tmp, n);
}

int cs_rule_zero_grad_memset_check(cs_rule_ctx *ctx, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	const struct fact_launch_op *ops = NULL;
	struct cs_rule_cache own = {0};
	int64_t nops = 0, *cost = NULL, *tmp = NULL, *gaps = NULL, ngaps, modal, lost;
	double tail[CS_CALL_TAIL_KINDS];
	struct step_sum *sum = NULL;
	int32_t *steps = NULL, nsteps = 0, steady = cs_steps_steady(s);
	cs_report_finding *f = NULL;
	struct ru_sites sites = {0};
	struct cs_i64s writes = {0}; /* the zeroing writes, indices in ops */
	/* name_kind() of each name: millions of ops, tens of thousands of names */
	struct fact_name_memo *names = NULL;
	double share, lo, hi;
	char title[400], b1[32], b2[32];
	int rc = CS_ERR_NOMEM;

	if (steady <= 0)
		return 0;
	if (ru_cached_launch_ops(ctx, &own, &ops, &nops))
		goto out;
	sum = calloc((size_t)s->n, sizeof(*sum));
	cost = calloc((size_t)s->n, sizeof(*cost));
	tmp = calloc((size_t)s->n + 1, sizeof(*tmp));
	names = fact_name_memo_new(name_kind);
	if (!sum || !cost || !tmp || !names)
		goto out;
	for (int32_t i = 0; i < s->n; i++)
		sum[i].first_op = -1;
	for (int64_t b = 0, e; b < nops; b = e) {
		for (e = b; e < nops && ops[e].step == ops[b].step && ops[e].tid == ops[b].tid; e++)
			;
		for (int64_t i = b, j; i<e; i = j> i ? j : i + 1) {
			struct step_sum *x = &sum[ops[i].step];

			j = i;
			if (ops[i].is_kernel &&
			    (fact_name_memo_get(names, a, ops[i].name) & NAME_FOREACH_ZERO)) {
				x->foreach_zero++;
				if (add_write(a, &ops[i], i, x, &sites, 0) ||
				    cs_i64s_push(&writes, i))
					goto out;
				continue;
			}
			for (j = i; j < e && is_fill(a, names, &ops[j]); j++)
				;
			if (j - i >= MIN_FILLS && sizes_differ(a, ops, i, j)) {
				if (add_run(a, s->pid, ops, i, j, x, &sites))
					goto out;
				for (int64_t k = i; k < j; k++)
					if (cs_i64s_push(&writes, k))
						goto out;
			}
		}
	}
	/* the same count every step: the steps of the most common count */
	modal = modal_count(sum, s->n, tmp);
	for (int32_t i = 0; i < s->n; i++) {
		const struct step_sum *x = &sum[i];

		if (modal > 0 && x->fills + x->foreach_zero == modal) {
			cost[i] = x->gpu_ns;
			cs_sat_accum(&cost[i], x->idle_ns);
			/* a pattern with no measurable cost still counts its step */
			if (cost[i] == 0)
				cost[i] = 1;
		}
		sum[i].cost = cost[i];
	}
	if (ru_steps_nonzero(s, cost, &steps, &nsteps))
		goto out;
	rc = 0;
	ru_share_interval(nsteps, steady, &lo, &hi);
	if (nsteps < MIN_STEPS || hi < MIN_STEP_SHARE)
		goto out;
	rc = CS_ERR_NOMEM;
	for (int32_t i = 0; i < nsteps; i++)
		tmp[i] = cost[steps[i]];
	lost = cs_median_i64(tmp, nsteps);
	share = ctx->step_median > 0 ? (double)lost / (double)ctx->step_median : 0;
	{
		const struct step_sum *x = &sum[steps[0]];

		if (x->foreach_zero > 0 && x->fills == 0)
			snprintf(title, sizeof(title),
				 "gradients zeroed every step (%lld multi-tensor zero kernel%s, "
				 "_foreach_zero_) instead of set to None: %s of GPU time per step "
				 "(%.1f%%)",
				 (long long)x->foreach_zero, x->foreach_zero == 1 ? "" : "s",
				 ru_fmt_ns(b1, sizeof(b1), lost), share * 100);
		else
			snprintf(title, sizeof(title),
				 "gradients zeroed every step: %lld %s of different sizes back to "
				 "back, launched in %s, instead of set to None: %s of GPU time per "
				 "step (%.1f%%)",
				 (long long)modal, x->memsets == x->fills ? "memsets" : "fills",
				 ru_fmt_ns(b2, sizeof(b2), x->launch_ns),
				 ru_fmt_ns(b1, sizeof(b1), lost), share * 100);
	}
	/* the pattern is sure; how much it matters is its cost (info below 3% of the step) */
	f = ru_finding_new(
		RULE_ID, ru_severity(share), title,
		"Release the gradients instead of zeroing them: optimizer.zero_grad() or "
		"model.zero_grad() with set_to_none=True (the default since PyTorch 2.0; remove "
		"set_to_none=False), or `p.grad = None` in a hand-written loop; the backward pass "
		"then stores each new gradient instead of adding it into zeros. Code that reads "
		".grad before the backward pass must then accept None.",
		steps, nsteps, lost);
	if (!f)
		goto out;
	f->step_share = share;
	f->first = sum[steps[0]].t_first;
	f->last = sum[steps[nsteps - 1]].t_last;
	{
		cJSON *e = f->evidence;
		const struct step_sum *x = &sum[steps[0]];
		const struct fact_launch_op *o = x->first_op >= 0 ? &ops[x->first_op] : NULL;

		cJSON_AddNumberToObject(e, "writes_per_step", (double)modal);
		{
			static const struct ru_median_key medians[] = {
				{"fills_per_step", offsetof(struct step_sum, fills)},
				{"memsets_per_step", offsetof(struct step_sum, memsets)},
				{"foreach_zero_kernels_per_step",
				 offsetof(struct step_sum, foreach_zero)},
				{"runs_per_step", offsetof(struct step_sum, runs)},
				{"gpu_ns_per_step", offsetof(struct step_sum, gpu_ns)},
				{"idle_ns_per_step", offsetof(struct step_sum, idle_ns)},
				{"launch_ns_per_step", offsetof(struct step_sum, launch_ns)},
				{"memset_bytes_per_step", offsetof(struct step_sum, memset_bytes)},
			};

			ru_add_medians(e, medians, sizeof(medians) / sizeof(*medians), sum,
				       sizeof(*sum), steps, nsteps, tmp);
		}
		if (o) {
			int64_t sid = o->is_kernel ? a->kernels[o->index].stack_id
						   : a->copies[o->index].stack_id;

			cJSON_AddStringToObject(e, "first_write",
						o->is_kernel ? cs_analysis_string(a, o->name)
							     : "memset");
			if (sid != CS_ID_NONE)
				f->stack_id = sid;
		}
		if (ru_sites_evidence(e, &sites, steps, nsteps, MAX_SITES, &f->stack_id))
			goto out;
		cJSON_AddNumberToObject(e, "min_fills", MIN_FILLS);
		cJSON_AddNumberToObject(e, "affected_share", (double)nsteps / steady);
		cJSON_AddNumberToObject(e, "affected_share_lo", lo);
		cJSON_AddNumberToObject(e, "affected_share_hi", hi);
		cJSON_AddNumberToObject(e, "min_affected_share", MIN_STEP_SHARE);
		cJSON_AddNumberToObject(e, "steady_steps", steady);
		cJSON_AddNumberToObject(e, "affected_steps", nsteps);
		if (!cJSON_GetObjectItem(e, "min_affected_share"))
			goto out;
	}
	/* the fix as an edit of the run: with the gradients set to None no write is launched
	 * (docs/replay.md) */
	ngaps = 0;
	cs_call_tails_mean(cs_trace_meta(a->trace, CS_META_CALL_TAILS), s->pid, tail);
	gaps = malloc(((size_t)writes.n + 1) * sizeof(*gaps));
	if (!gaps)
		goto out;
	for (int64_t k = 0; k < writes.n; k++) {
		const struct fact_launch_op *o = &ops[writes.v[k]];
		int target = o->is_kernel ? CS_EDIT_KERNEL : CS_EDIT_COPY;
		int64_t t0, t1, le;

		if (cost[o->step] <= 0)
			continue;
		if (ru_edit_not_launched(&f->edit, target, o->index, 0))
			goto out;
		/* nor the host's dispatch of each write after the first of a run: the time since
		 * the previous write's launch on the thread */
		if (k == 0 || writes.v[k - 1] != writes.v[k] - 1 || ops[writes.v[k - 1]].tid != o->tid ||
		    ops[writes.v[k - 1]].step != o->step)
			continue;
		if (cs_edit_add(&f->edit, CS_EDIT_HOST_CUT, target, o->index, INT64_MAX))
			goto out;
		op_times(a, &ops[writes.v[k - 1]], &t0, &t1, &le);
		/* the recorder's time after a launch, or after a memset (an "other" call) */
		le += (int64_t)tail[ops[writes.v[k - 1]].is_kernel ? CS_CALL_TAIL_LAUNCH : CS_CALL_TAIL_OTHER];
		gaps[ngaps++] = o->launch > le ? o->launch - le : 0;
	}
	if (edit_accumulates(f, a, s, ops, &writes, cost, dispatch_ns(gaps, ngaps)))
		goto out;
	rc = 0;
out:
	rc = ru_finish(ctx, f, rc, err);
	ru_sites_free(&sites);
	free(writes.v);
	ru_cache_free(&own);
	free(sum);
	free(cost);
	free(tmp);
	free(gaps);
	free(steps);
	free(names);
	return rc;
}
