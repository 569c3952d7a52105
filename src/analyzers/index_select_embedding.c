/*
 * index_select_embedding.c - the index-select-embedding rule: an embedding lookup written as
 * weight.index_select(0, ids) where nn.Embedding is meant. The forward is the same
 * gather kernel either way (PyTorch's embedding calls index_select); the backward differs:
 * nn.Embedding's embedding_dense_backward sorts the indices and sums each row's gradients once
 * (EmbeddingBackwardKernel.cu), index_select's backward zeroes a gradient the size of the table
 * and adds every looked-up row into it with atomics (index_add_: indexFuncLargeIndex /
 * indexFuncSmallIndex<..., ReduceAdd>), which contend on the rows that repeat.
 *
 * In each steady step: a gather among the step's first kernels by launch time (the lookup of the
 * input ids is the model's first layer), later an atomic index accumulation right after a zero
 * fill of its destination on the same thread (the backward's zeros; PyTorch launches the
 * backward from its autograd thread, not the thread of the forward), and no embedding backward
 * kernel in the step (a model that uses nn.Embedding for its lookups uses it for this one too).
 * The finding is information, with no cost: the atomic kernels' GPU time is what the backward
 * takes, and the sorted backward of nn.Embedding, measured on an H200, is not faster (its sort
 * of the ids costs more than the contended atomics); the trace shows neither the ids' repeats
 * nor the sort's time. docs/rules/index-select-embedding.md has the decision and the
 * measurements.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_names.h"
#include "cache.h"
#include "finding_kit.h"
#include "launch_ops.h"
#include "recurrence.h"
#include "sites.h"
#include "rules.h"
#include "cuscope/sort.h"
#include "cuscope/checked.h"

#define RULE_ID RULE_ID_INDEX_SELECT_EMBEDDING

/* A recurring pattern: in at least this share of the steady steps ... */
#define MIN_STEP_SHARE 0.5
/* ... and in at least this many of them. */
#define MIN_STEPS 3
/* The lookup is among the step's first kernels: this share of them, and at least LEAD_MIN. */
#define LEAD_SHARE 0.1
#define LEAD_MIN   3
/* Call sites listed in the evidence. */
#define MAX_SITES 5
/* Lookups and atomic accumulations of a step paired for the call sites, at most. */
#define MAX_PAIR 16

/* A kernel of the step and its launch time (the call sites' pairing). */
struct launched {
	int64_t index, at;
};

struct step_sum {
	int64_t atomic_ns;  /* GPU time of the atomic accumulations after a zero fill */
	int64_t atomics;    /* how many */
	int64_t kernel_ns;  /* GPU time of all the step's kernels */
	int64_t gather;	    /* kernel index of the lookup, or -1 */
	int64_t gather_at;  /* its launch time */
	int64_t atomic;	    /* kernel index of the longest accumulation, or -1 */
	int64_t atomic_max; /* its time */
	int embedding_bwd;  /* the step runs nn.Embedding's backward */
	struct launched lookups[MAX_PAIR], adds[MAX_PAIR]; /* the lead's gathers, the atomics */
	int nlookups, nadds;				   /* how many (at most MAX_PAIR kept) */
};

/* A kernel's GPU time; 0 when a bound is unknown (a damaged or cut trace). */
static int64_t kernel_ns(const cs_a_kernel *k)
{
	if (k->start == CS_TS_UNKNOWN || k->end == CS_TS_UNKNOWN || k->end < k->start)
		return 0;
	return cs_sat_sub(k->end, k->start);
}

static int is_gather(const char *own)
{
	return !strcmp(own, "vectorized_gather_kernel") || !strcmp(own, "indexSelectLargeIndex") ||
	       !strcmp(own, "indexSelectSmallIndex");
}

static int is_atomic_add(const char *name, const char *own)
{
	return (!strcmp(own, "indexFuncLargeIndex") || !strcmp(own, "indexFuncSmallIndex")) &&
	       strstr(name, "ReduceAdd") != NULL;
}

static int is_zero_fill(const cs_analysis *a, const struct fact_launch_op *o)
{
	const char *name;

	if (!o->is_kernel)
		return a->copies[o->index].is_memset;
	name = cs_analysis_string(a, o->name);
	return name && (strstr(name, "FillFunctor") || strstr(name, "fill_kernel")) &&
	       !strstr(name, "multi_tensor_apply");
}

/* Launch times, for qsort. */
/*
 * One step's ops[i..end) (all its threads): the lookup, the first gather launched among the
 * step's first kernels in launch order (LEAD_SHARE of them, at least LEAD_MIN). times: room for
 * end - i launch times.
 */
static void find_lookup(const cs_analysis *a, const struct fact_launch_op *ops, int64_t i,
			int64_t end, int64_t *times, struct step_sum *x)
{
	int64_t nk = 0, lead, last;
	char own[256];

	for (int64_t j = i; j < end; j++)
		if (ops[j].is_kernel)
			times[nk++] = ops[j].launch;
	if (nk == 0)
		return;
	cs_sort_i64(times, (size_t)nk);
	lead = (int64_t)(LEAD_SHARE * (double)nk);
	if (lead < LEAD_MIN)
		lead = LEAD_MIN;
	last = times[(lead < nk ? lead : nk) - 1];
	for (int64_t j = i; j < end; j++) {
		const char *name;

		if (!ops[j].is_kernel || ops[j].launch > last)
			continue;
		name = cs_analysis_string(a, ops[j].name);
		if (!name)
			continue;
		fact_kernel_own_name(name, own, sizeof(own));
		if (!is_gather(own))
			continue;
		if (x->nlookups < MAX_PAIR)
			x->lookups[x->nlookups++] = (struct launched){ops[j].index, ops[j].launch};
		if (x->gather < 0 || ops[j].launch < x->gather_at) {
			x->gather = ops[j].index;
			x->gather_at = ops[j].launch;
		}
	}
}

/* One step's run of one thread: ops[i..end); its atomic accumulations after the step's lookup. */
static int scan_run(const cs_analysis *a, const struct fact_launch_op *ops, int64_t i, int64_t end,
		    struct step_sum *x)
{
	char own[256];

	for (int64_t j = i; j < end; j++) {
		const struct fact_launch_op *o = &ops[j];
		const cs_a_kernel *k;
		const char *name;

		if (!o->is_kernel)
			continue;
		k = &a->kernels[o->index];
		name = cs_analysis_string(a, o->name);
		cs_sat_accum(&x->kernel_ns, kernel_ns(k));
		if (!name)
			continue;
		if (strstr(name, "EmbeddingBackward") || strstr(name, "embedding_backward"))
			x->embedding_bwd = 1;
		fact_kernel_own_name(name, own, sizeof(own));
		if (x->gather >= 0 && o->launch > x->gather_at && j > i &&
		    is_atomic_add(name, own) && is_zero_fill(a, &ops[j - 1])) {
			cs_sat_accum(&x->atomic_ns, kernel_ns(k));
			x->atomics++;
			if (x->nadds < MAX_PAIR)
				x->adds[x->nadds++] = (struct launched){o->index, o->launch};
			if (kernel_ns(k) > x->atomic_max) {
				x->atomic_max = kernel_ns(k);
				x->atomic = o->index;
			}
		}
	}
	return 0;
}

static int cmp_launched(const void *x, const void *y)
{
	const struct launched *a = x, *b = y;

	return (a->at > b->at) - (a->at < b->at);
}

/*
 * The call sites of step st: the lookups, where the fix goes (the backward's own line is
 * autograd's), each charged the time of its atomic accumulation. The backward runs the forward's
 * operations in reverse, so with as many accumulations as lookups the last lookup goes with the
 * first accumulation; otherwise every accumulation goes to the first lookup.
 */
static int add_sites(const cs_analysis *a, struct step_sum *x, int32_t st, struct ru_sites *sites)
{
	int n = x->nlookups, paired = n > 0 && n == x->nadds;

	qsort(x->lookups, (size_t)n, sizeof(x->lookups[0]), cmp_launched);
	qsort(x->adds, (size_t)x->nadds, sizeof(x->adds[0]), cmp_launched);
	for (int j = 0; j < x->nadds && n > 0; j++) {
		const cs_a_kernel *g = &a->kernels[x->lookups[paired ? n - 1 - j : 0].index];

		if (ru_sites_add(sites, g->name_id, g->launch_tid, g->stack_id, st,
				 kernel_ns(&a->kernels[x->adds[j].index])))
			return CS_ERR_NOMEM;
	}
	return 0;
}

static int atomic_add_name(const char *name)
{
	return name && strstr(name, "indexFunc") && strstr(name, "ReduceAdd");
}

/* Whether process pid ran an atomic index accumulation at all (the rule's cheap way out). Each
 * name is looked at once (a memo by name id): the kernels' names change at almost every kernel. */
static int any_atomic_add(const cs_analysis *a, uint32_t pid)
{
	struct fact_name_memo *memo = fact_name_memo_new(atomic_add_name);
	int64_t last = -1;
	int any = 0;

	for (int64_t i = 0; i < a->nkernels && !any; i++) {
		if (a->kernels[i].pid != pid || a->kernels[i].name_id == last)
			continue;
		last = a->kernels[i].name_id;
		any = memo && last >= 0 ? fact_name_memo_get(memo, a, last)
					: atomic_add_name(cs_analysis_string(a, last));
	}
	free(memo);
	return any;
}

static int64_t median_field(const struct step_sum *sum, const int32_t *steps, int32_t n,
			    size_t offset, int64_t *tmp)
{
	return ru_median_field(sum, sizeof(*sum), steps, n, offset, tmp);
}

static int emit_finding(cs_rule_ctx *ctx, const struct step_sum *sum, const int32_t *steps,
			int32_t nsteps, const struct ru_recur *r, int64_t *tmp,
			struct ru_sites *sites, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	cs_report_finding *f = NULL;
	cJSON *e;
	int64_t atomic, atomics, kernel, best = -1;
	char title[480], b1[32], near1[96], near2[96], rare[200];

	atomic = median_field(sum, steps, nsteps, offsetof(struct step_sum, atomic_ns), tmp);
	atomics = median_field(sum, steps, nsteps, offsetof(struct step_sum, atomics), tmp);
	kernel = median_field(sum, steps, nsteps, offsetof(struct step_sum, kernel_ns), tmp);
	for (int32_t i = 0; i < nsteps; i++)
		if (sum[steps[i]].atomic >= 0 &&
		    (best < 0 || sum[steps[i]].atomic_max > sum[best].atomic_max))
			best = steps[i];
	ru_recur_near_text(r, near1, sizeof(near1), near2, sizeof(near2));
	if (r->recurring)
		snprintf(title, sizeof(title),
			 "embedding lookup written with index_select: its backward adds the "
			 "gradient "
			 "rows with atomics (index_add_), %s of GPU time per step (%.1f%%)%s%s; "
			 "nn.Embedding's sorted backward avoids the atomics but is not faster on "
			 "every GPU: time both",
			 ru_fmt_ns(b1, sizeof(b1), atomic), r->share * 100, near1, near2);
	else {
		ru_recur_rare_text(r, nsteps, atomic, rare, sizeof(rare));
		snprintf(title, sizeof(title),
			 "embedding lookup written with index_select, its atomic backward "
			 "(index_add_) %s%s; nn.Embedding's sorted backward is not faster on every "
			 "GPU: time both",
			 rare, near1);
	}
	/* Information: what the sorted backward would save is not known (see the top). */
	f = ru_step_finding(
		ctx, RULE_ID, CS_SEV_INFO, title,
		"Try nn.Embedding (or F.embedding(ids, weight)) instead of "
		"weight.index_select(0, ids), and keep it if the step gets faster: its backward "
		"sorts the ids and sums each row's gradients once, without atomics, which pays "
		"when "
		"many ids repeat on a GPU whose atomics are slow; on an H200 the sort cost more "
		"than "
		"the atomics in every size measured. sparse=True where the optimizer takes sparse "
		"gradients (SGD, SparseAdam).",
		steps, nsteps, 0);
	if (!f)
		goto nomem;
	f->step_share = 0;
	e = f->evidence;
	cJSON_AddNumberToObject(e, "atomic_ns_per_step", (double)atomic);
	cJSON_AddNumberToObject(e, "atomic_kernels_per_step", (double)atomics);
	cJSON_AddNumberToObject(e, "kernel_ns_per_step", (double)kernel);
	cJSON_AddNumberToObject(e, "atomic_kernel_share",
				kernel > 0 ? (double)atomic / (double)kernel : 0);
	cJSON_AddNumberToObject(e, "atomic_step_share", r->share);
	cJSON_AddBoolToObject(e, "gain_known", 0);
	if (best >= 0) {
		const cs_a_kernel *g = &a->kernels[sum[best].gather];
		const cs_a_kernel *k = &a->kernels[sum[best].atomic];

		cJSON_AddStringToObject(e, "lookup_kernel", cs_analysis_string(a, g->name_id));
		cJSON_AddStringToObject(e, "atomic_kernel", cs_analysis_string(a, k->name_id));
		cJSON_AddNumberToObject(e, "longest_atomic_ns", (double)kernel_ns(k));
		if (g->stack_id != CS_ID_NONE)
			f->stack_id = g->stack_id;
		else if (k->stack_id != CS_ID_NONE)
			f->stack_id = k->stack_id;
	}
	if (ru_sites_evidence(e, sites, steps, nsteps, MAX_SITES, &f->stack_id))
		goto nomem;
	cJSON_AddNumberToObject(e, "steady_steps", cs_steps_steady(s));
	cJSON_AddNumberToObject(e, "affected_steps", nsteps);
	ru_recur_evidence(e, r, nsteps);
	return ru_emit(ctx, f, err);
nomem:
	cs_finding_free(f);
	return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
}

int cs_rule_index_select_embedding_check(cs_rule_ctx *ctx, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	struct step_sum *sum = NULL;
	const struct fact_launch_op *ops = NULL;
	struct cs_rule_cache own = {0};
	int64_t nops = 0, *cost = NULL, *tmp = NULL, *times = NULL;
	int32_t *steps = NULL, nsteps = 0;
	struct ru_recur r;
	struct ru_sites sites = {0};
	int rc = 0;

	if (cs_steps_steady(s) <= 0 || !any_atomic_add(a, s->pid))
		return 0;
	sum = ru_recur_arrays(s, sizeof(*sum), &cost, &tmp);
	if (!sum || ru_cached_launch_ops(ctx, &own, &ops, &nops))
		goto nomem;
	for (int32_t i = 0; i < s->n; i++)
		sum[i].gather = sum[i].atomic = -1;
	times = malloc((size_t)(nops + 1) * sizeof(*times));
	if (!times)
		goto nomem;
	for (int64_t i = 0, end; i < nops; i = end) {
		for (end = i + 1; end < nops && ops[end].step == ops[i].step; end++)
			;
		find_lookup(a, ops, i, end, times, &sum[ops[i].step]);
	}
	for (int64_t i = 0, end; i < nops; i = end) {
		for (end = i + 1;
		     end < nops && ops[end].step == ops[i].step && ops[end].tid == ops[i].tid;
		     end++)
			;
		if (scan_run(a, ops, i, end, &sum[ops[i].step]))
			goto nomem;
	}
	for (int32_t i = 0; i < s->n; i++)
		if (!sum[i].embedding_bwd && sum[i].nadds > 0 && add_sites(a, &sum[i], i, &sites))
			goto nomem;
	for (int32_t i = 0; i < s->n; i++)
		cost[i] = sum[i].embedding_bwd ? 0 : sum[i].atomic_ns;
	rc = ru_recur_find(s, ctx->step_median, cost, 1, MIN_STEPS, MIN_STEP_SHARE,
			   RU_RARE_MIN_STEPS, RU_MIN_LOSS_SHARE, tmp, &steps, &nsteps, &r);
	if (rc < 0)
		goto nomem;
	if (rc)
		rc = emit_finding(ctx, sum, steps, nsteps, &r, tmp, &sites, err);
	goto out;
nomem:
	rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory");
out:
	ru_sites_free(&sites);
	free(sum);
	free(times);
	free(steps);
	ru_cache_free(&own);
	return rc;
}
