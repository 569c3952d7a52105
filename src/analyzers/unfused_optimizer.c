/*
 * unfused_optimizer.c - the unfused-optimizer rule: inside steady-state steps, the optimizer step
 * run one parameter tensor at a time (PyTorch's `foreach=False` implementations of Adam, AdamW,
 * SGD, ...): a run of small elementwise kernels whose name sequence repeats once per tensor, the
 * same number of times every step, where a multi-tensor kernel per operation (`foreach=True`) or
 * one fused kernel (`fused=True`) would do the same work in a handful of launches.
 *
 * What is measured, from the kernels in the order each host thread launched them in each step
 * (fact_launch_ops): a unit of at most MAX_PERIOD kernel names repeated at least MIN_REPEATS times
 * back to back, where
 *   - every kernel is one of PyTorch's elementwise kernels (the per-tensor update is elementwise:
 *     `elementwise_kernel` in the name; a multi-tensor kernel, `multi_tensor_apply_kernel`, is
 *     the fix, never the pattern),
 *   - each repeat works on one tensor size: its kernels' grids are within a factor of
 *     MAX_GRID_RATIO of each other (vectorized and unrolled variants of one size differ by that),
 *   - the repeats are of different tensor sizes (at least two grids among them): the parameters
 *     of a model, weights and biases, not the same operation on the same shape (the layers of a
 *     stack or the time steps of a recurrent cell, whose activations have one shape),
 *   - the unit is not fills only (zero-grad-memset's).
 * Its cost is what the launches one by one cost the GPU: the GPU idle inside the runs (from the
 * first kernel's start to the last one's end), which multi-tensor kernels queued at once would
 * not have, and for Adam's unit the kernel time beyond the fused update's (ADAM_PASSES passes
 * over each tensor at the pass its repeat's kernels show). The fix as an edit: each run one
 * kernel of the fused update's time, launched once. The pattern is reported when that cost recurs
 * in the steady steps like sync-call's (ru_recur_decide), in the steps whose repeat count is the
 * most common one. docs/rules/unfused-optimizer.md has the decision, its thresholds and the
 * measured values.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/grow.h"

#include "cache.h"
#include "edits.h"
#include "kernel_names.h"
#include "finding_kit.h"
#include "launch_ops.h"
#include "recurrence.h"
#include "sites.h"
#include "rules.h"
#include "cuscope/checked.h"
#include "cuscope/sort.h"

/* Longest unit: the AdamW per-tensor update is 8 kernels, AMSGrad and NAdam a few more. */
#define MAX_PERIOD 16
/* A loop over tensors: repeated at least this many times. */
#define MIN_REPEATS 4
/* The kernels of one repeat work on one size: grids within this factor. */
#define MAX_GRID_RATIO 2
/* A recurring pattern: in at least this share of the steady steps ... */
#define MIN_STEP_SHARE 0.5
/* ... and in at least this many of them ... */
#define MIN_STEPS 3
/* ... costing at least this share of the median step. */
#define MIN_LOSS_SHARE 0.02
#define MIN_RARE_STEPS 2

/* Call sites listed in the evidence. */
#define MAX_SITES 5
/*
 * The fused Adam/AdamW update (fused=True) reads the parameter, its gradient and the two moments
 * once and writes the parameter and the moments once: 7 passes over a tensor's elements, where
 * the per-tensor unit makes about 21 (AdamW: 2 + 3 + 2 + 4 + 2 + 2 + 2 + 4 operands). AMSGrad
 * reads and writes the running maximum too.
 */
#define ADAM_PASSES	    7
#define AMSGRAD_MORE_PASSES 2

#define RULE_ID RULE_ID_UNFUSED_OPTIMIZER

struct step_sum {
	int64_t repeats, kernels, runs, period, longest;
	int64_t idle_ns, gpu_ns, launch_ns;
	int64_t fused_ns; /* the fix's kernel time for the runs (fused_time()) */
	int64_t cost;	  /* idle_ns and the kernel time beyond fused_ns */
	int64_t first_op; /* ops index of the longest run's first kernel, or -1 */
	int64_t t_first, t_last;
};

static int is_elementwise(const char *name)
{
	return strstr(name, "elementwise_kernel") && !strstr(name, "multi_tensor_apply");
}

static int is_fill(const char *name)
{
	return strstr(name, "FillFunctor") || strstr(name, "fill_kernel");
}

/* Whether ops[i..i + p * r) is a per-tensor loop as the file's comment says. */
static int per_tensor(const cs_analysis *a, const struct fact_launch_op *ops, int64_t i, int32_t p,
		      int32_t r)
{
	int fills = 1, sizes = 0;
	int64_t size0 = -1;

	for (int32_t j = 0; j < p; j++) {
		const char *n;

		if (!ops[i + j].is_kernel)
			return 0;
		n = cs_analysis_string(a, ops[i + j].name);
		if (!is_elementwise(n))
			return 0;
		if (!is_fill(n))
			fills = 0;
	}
	if (fills)
		return 0;
	for (int32_t k = 0; k < r; k++) {
		int64_t lo = INT64_MAX, hi = 0;

		for (int32_t j = 0; j < p; j++) {
			int64_t g = fact_launch_op_size(a, &ops[i + (int64_t)k * p + j]);

			lo = g < lo ? g : lo;
			hi = g > hi ? g : hi;
		}
		if (lo <= 0 || hi > MAX_GRID_RATIO * lo)
			return 0;
		if (size0 < 0)
			size0 = lo;
		else if (lo != size0 && hi != size0)
			sizes = 1;
	}
	return sizes;
}

/*
 * The passes over a tensor the fused update makes, from the unit's names (ops[i..i + p)): 0 when
 * the unit is not Adam's, whose fix (foreach) keeps the unit's own passes. Adam's unit has a lerp
 * (exp_avg.lerp_, PyTorch 2) or, in older versions, a multiply (exp_avg.mul_(beta1), and
 * exp_avg_sq.mul_(beta2)) beside its addcdiv; Adagrad's (addcmul, sqrt, add, addcdiv) has neither,
 * and its fused=True is for the CPU only.
 */
static int fused_passes(const cs_analysis *a, const struct fact_launch_op *ops, int64_t i,
			int32_t p)
{
	int lerp = 0, addcdiv = 0, mul = 0, ams = 0;

	for (int32_t j = 0; j < p; j++) {
		const char *n = cs_analysis_string(a, ops[i + j].name);

		lerp |= strstr(n, "lerp") != NULL;
		addcdiv |= strstr(n, "addcdiv") != NULL;
		mul |= strstr(n, "MulFunctor") != NULL;
		ams |= strstr(n, "maximum") || strstr(n, "MaxFunctor");
	}
	if (!lerp && !(addcdiv && mul))
		return 0;
	return ADAM_PASSES + (ams ? AMSGRAD_MORE_PASSES : 0);
}

/*
 * What one pass over the elements of repeat ops[i..i + p) takes: the median over its kernels of
 * their time over their operands (fact_kernel_operands); 0 when none tells.
 */
static int64_t repeat_pass(const cs_analysis *a, const struct fact_launch_op *ops, int64_t i,
			   int32_t p)
{
	int64_t v[MAX_PERIOD];
	int64_t n = 0;

	for (int32_t j = 0; j < p; j++) {
		const cs_a_kernel *k = &a->kernels[ops[i + j].index];
		int o = fact_kernel_operands(cs_analysis_string(a, ops[i + j].name));

		if (o > 0 && k->start != CS_TS_UNKNOWN && k->end != CS_TS_UNKNOWN &&
		    k->end > k->start)
			v[n++] = (k->end - k->start) / o;
	}
	return n ? cs_median_i64(v, n) : 0;
}

/*
 * The fix of one run as an edit (docs/replay.md): one kernel, the run's first, launched once and
 * taking fused ns; the others are not launched, take no time, nor does the host's work before
 * them (the loop over the tensors).
 */
static int edit_run(cs_edit **edit, const struct fact_launch_op *ops, int64_t i, int64_t n,
		    int64_t fused)
{
	if (cs_edit_add(edit, CS_EDIT_GPU_TIME, CS_EDIT_KERNEL, ops[i].index, fused))
		return CS_ERR_NOMEM;
	for (int64_t j = i + 1; j < i + n; j++)
		if (ru_edit_not_launched(edit, CS_EDIT_KERNEL, ops[j].index, 1))
			return CS_ERR_NOMEM;
	return 0;
}

/* Add one run to its step's sums, and its kernels to sites, each with the GPU idle of the run
 * before it (after the end of the run's kernels that ended last). */
static int add_run(const cs_analysis *a, uint32_t pid, const struct fact_launch_op *ops, int64_t i,
		   int32_t p, int32_t r, struct step_sum *x, struct ru_sites *sites, cs_edit **edit)
{
	int64_t n = (int64_t)p * r, t0 = INT64_MAX, t1 = 0, l0 = INT64_MAX, l1 = 0, gpu = 0,
		fused = 0, idle;
	int passes = fused_passes(a, ops, i, p);

	for (int64_t j = i; j < i + n; j++) {
		const cs_a_kernel *k = &a->kernels[ops[j].index];
		int64_t le = k->launch_end != CS_TS_UNKNOWN ? k->launch_end : ops[j].launch;

		l0 = ops[j].launch < l0 ? ops[j].launch : l0;
		l1 = le > l1 ? le : l1;
		if (k->start == CS_TS_UNKNOWN || k->end == CS_TS_UNKNOWN) {
			/* a row without its GPU times: no time of its own */
			if (ru_sites_add(sites, k->name_id, k->launch_tid, k->stack_id, ops[j].step,
					 0))
				return CS_ERR_NOMEM;
			continue;
		}
		if (ru_sites_add(sites, k->name_id, k->launch_tid, k->stack_id, ops[j].step,
				 t1 > 0 && k->start > t1 ? fact_gpu_idle(a, pid, t1, k->start) : 0))
			return CS_ERR_NOMEM;
		t0 = k->start < t0 ? k->start : t0;
		t1 = k->end > t1 ? k->end : t1;
		if (k->end > k->start)
			cs_sat_accum(&gpu, cs_sat_sub(k->end, k->start));
	}
	/* the fused kernel's time: its passes over each tensor, at that repeat's pass */
	for (int32_t k = 0; k < r; k++)
		cs_sat_accum(&fused, passes * repeat_pass(a, ops, i + (int64_t)k * p, p));
	if (!passes || fused <= 0 || fused > gpu)
		fused = gpu;
	idle = t1 > t0 ? fact_gpu_idle(a, pid, t0, t1) : 0;
	x->runs++;
	x->repeats += r;
	x->kernels += n;
	cs_sat_accum(&x->idle_ns, idle);
	cs_sat_accum(&x->gpu_ns, gpu);
	cs_sat_accum(&x->fused_ns, fused);
	cs_sat_accum(&x->cost, cs_sat_add(idle, gpu - fused));
	if (edit_run(edit, ops, i, n, fused))
		return CS_ERR_NOMEM;
	cs_sat_accum(&x->launch_ns, l1 > l0 ? cs_sat_sub(l1, l0) : 0);
	if (x->first_op < 0 || r > x->longest) {
		x->first_op = i;
		x->period = p;
		x->longest = r;
	}
	ru_widen(&x->t_first, &x->t_last, t0, t1);
	return 0;
}

/* The most common non-zero repeat count of the steps. */
static int64_t modal_repeats(const struct step_sum *sum, int32_t n, int64_t *tmp)
{
	for (int32_t i = 0; i < n; i++)
		tmp[i] = sum[i].repeats;
	return ru_mode_nonzero(tmp, n);
}

static int add_evidence(const cs_analysis *a, const struct fact_launch_op *ops,
			const struct step_sum *sum, const int32_t *steps, int32_t n, int64_t *tmp,
			const cs_steps *s, int64_t modal, cs_report_finding *f)
{
	cJSON *e = f->evidence, *unit;
	const struct step_sum *x = &sum[steps[0]];

	cJSON_AddNumberToObject(e, "repeats_per_step", (double)modal);
	{
		static const struct ru_median_key medians[] = {
			{"tensors", offsetof(struct step_sum, longest)},
			{"kernels_per_step", offsetof(struct step_sum, kernels)},
			{"runs_per_step", offsetof(struct step_sum, runs)},
			{"idle_ns_per_step", offsetof(struct step_sum, idle_ns)},
			{"gpu_ns_per_step", offsetof(struct step_sum, gpu_ns)},
			{"fused_gpu_ns_per_step", offsetof(struct step_sum, fused_ns)},
			{"launch_ns_per_step", offsetof(struct step_sum, launch_ns)},
		};

		ru_add_medians(e, medians, sizeof(medians) / sizeof(*medians), sum, sizeof(*sum),
			       steps, n, tmp);
	}
	cJSON_AddNumberToObject(e, "kernels_per_tensor", (double)x->period);
	/* the unit's kernel names, from the first affected step's longest run */
	unit = cJSON_AddArrayToObject(e, "unit");
	if (!unit)
		return CS_ERR_NOMEM;
	if (x->first_op >= 0) {
		const cs_a_kernel *k0 = &a->kernels[ops[x->first_op].index];

		for (int64_t j = 0; j < x->period; j++) {
			cJSON *name = cJSON_CreateString(
				cs_analysis_string(a, ops[x->first_op + j].name));

			if (!name || !cJSON_AddItemToArray(unit, name)) {
				cJSON_Delete(name);
				return CS_ERR_NOMEM;
			}
		}
		if (k0->stack_id != CS_ID_NONE)
			f->stack_id = k0->stack_id;
	}
	cJSON_AddNumberToObject(e, "steady_steps", cs_steps_steady(s));
	cJSON_AddNumberToObject(e, "affected_steps", n);
	cJSON_AddNumberToObject(e, "min_repeats", MIN_REPEATS);
	return 0;
}

int cs_rule_unfused_optimizer_check(cs_rule_ctx *ctx, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	const struct fact_launch_op *ops = NULL;
	struct cs_rule_cache own = {0};
	int64_t nops = 0, *idle = NULL, *tmp = NULL, modal;
	struct step_sum *sum = NULL;
	int32_t *steps = NULL, nsteps = 0;
	cs_report_finding *f = NULL;
	struct ru_recur r;
	struct ru_sites sites = {0};
	cs_edit *edit = NULL;
	char title[400], b1[32], b2[32], near1[96], near2[96];
	int rc = CS_ERR_NOMEM;

	if (cs_steps_steady(s) <= 0)
		return 0;
	if (ru_cached_launch_ops(ctx, &own, &ops, &nops))
		goto out;
	sum = ru_recur_arrays(s, sizeof(*sum), &idle, &tmp);
	if (!sum)
		goto out;
	for (int32_t i = 0; i < s->n; i++)
		sum[i].first_op = -1;
	/* each (step, thread) sequence: the per-tensor runs in it */
	for (int64_t b = 0, e; b < nops; b = e) {
		for (e = b; e < nops && ops[e].step == ops[b].step && ops[e].tid == ops[b].tid; e++)
			;
		for (int64_t i = b; i < e;) {
			int32_t p, rep = fact_repeats_at(ops, i, e, MAX_PERIOD, &p);

			if (rep >= MIN_REPEATS && per_tensor(a, ops, i, p, rep)) {
				if (add_run(a, s->pid, ops, i, p, rep, &sum[ops[i].step], &sites,
					    &edit))
					goto out;
				i += (int64_t)p * rep;
			} else if (rep >= MIN_REPEATS)
				i += (int64_t)p * rep; /* a repetition of something else */
			else
				i++;
		}
	}
	/* the same number of tensors every step: the steps of the most common count */
	modal = modal_repeats(sum, s->n, tmp);
	for (int32_t i = 0; i < s->n; i++)
		idle[i] = sum[i].repeats == modal && modal > 0 ? sum[i].cost : 0;
	rc = ru_recur_find(s, ctx->step_median, idle, 0, MIN_STEPS, MIN_STEP_SHARE, MIN_RARE_STEPS,
			   MIN_LOSS_SHARE, tmp, &steps, &nsteps, &r);
	if (rc <= 0)
		goto out;
	rc = CS_ERR_NOMEM;
	{
		int64_t kern = ru_median_field(sum, sizeof(*sum), steps, nsteps,
					       offsetof(struct step_sum, kernels), tmp);
		int64_t launch = ru_median_field(sum, sizeof(*sum), steps, nsteps,
						 offsetof(struct step_sum, launch_ns), tmp);
		char rare[200];

		ru_recur_near_text(&r, near1, sizeof(near1), near2, sizeof(near2));
		int64_t tensors = ru_median_field(sum, sizeof(*sum), steps, nsteps,
						  offsetof(struct step_sum, longest), tmp);

		if (r.recurring)
			snprintf(
				title, sizeof(title),
				"optimizer step one tensor at a time: %lld small kernels per step, "
				"repeated for %lld tensors, launched in %s; GPU idle and kernel "
				"time beyond a fused update %s per step (%.1f%%)%s%s",
				(long long)kern, (long long)tensors,
				ru_fmt_ns(b2, sizeof(b2), launch),
				ru_fmt_ns(b1, sizeof(b1), r.lost), r.share * 100, near1, near2);
		else {
			ru_recur_rare_text(&r, nsteps,
					   ru_median_field(sum, sizeof(*sum), steps, nsteps,
							   offsetof(struct step_sum, idle_ns), tmp),
					   rare, sizeof(rare));
			snprintf(title, sizeof(title),
				 "optimizer step one tensor at a time (%lld small kernels, "
				 "repeated for %lld tensors) %s%s",
				 (long long)kern, (long long)tensors, rare, near1);
		}
	}
	f = ru_recur_finding(
		RULE_ID, &r, title,
		"Use the multi-tensor optimizer: torch.optim.AdamW(..., fused=True) (one kernel "
		"for all tensors; Adam, AdamW, SGD; Adagrad's only on the CPU) or foreach=True "
		"(one kernel per operation; the default on CUDA when neither foreach nor fused is "
		"given: remove foreach=False); in a hand-written update loop, use "
		"torch._foreach_* on the lists of tensors.",
		steps, nsteps);
	if (!f)
		goto out;
	f->first = sum[steps[0]].t_first;
	f->last = sum[steps[nsteps - 1]].t_last;
	if (add_evidence(a, ops, sum, steps, nsteps, tmp, s, modal, f) ||
	    ru_sites_evidence(f->evidence, &sites, steps, nsteps, MAX_SITES, &f->stack_id))
		goto out;
	ru_recur_evidence(f->evidence, &r, nsteps);
	/* the fix as an edit of the run: the finding's from now on */
	f->edit = edit;
	edit = NULL;
	rc = 0;
out:
	rc = ru_finish(ctx, f, rc, err);
	cs_edit_free(edit);
	ru_sites_free(&sites);
	ru_cache_free(&own);
	free(sum);
	free(steps);
	return rc;
}
