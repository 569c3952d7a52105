/*
 * gather_list_cat.c - the gather-list-cat rule: an NCCL all-gather into a list of tensors,
 * followed by their concatenation. torch.distributed.all_gather(list, x) gathers into one flat
 * buffer and copies each rank's part out into the list's tensors (device-to-device copies on the
 * NCCL stream, after the all-gather kernel); torch.cat(list) then copies it all once more into a
 * new tensor (a CatArrayBatchedCopy kernel). all_gather_into_tensor writes the gathered tensor in
 * place and needs neither. The rule matches, in steady steps, an all-gather kernel with a cat
 * kernel among the next few kernels the process launched, that started after the all-gather
 * ended (it reads what the all-gather wrote); the device-to-device copies launched between them on
 * the all-gather's stream are the copy-out. docs/rules/gather-list-cat.md has the criterion. The
 * fix as an edit of the run: neither the copy-out nor the cat is launched.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_names.h"
#include "edits.h"
#include "finding_kit.h"
#include "estimates.h"
#include "rules.h"
#include "cuscope/checked.h"
#include "cuscope/grow.h"
#include "cuscope/ranks.h"
#include "cuscope/sort.h"

#define RULE_ID RULE_ID_GATHER_LIST_CAT

/* The cat must be among this many kernels (not NCCL's) launched after the all-gather. */
#define MAX_NEXT 3
/* All-gathers followed by a cat in at least this share of the steady steps. */
#define MIN_STEP_SHARE 0.5
/* A cost under this share of the median step is not reported. */
#define MIN_SHARE 0.005

enum { K_OTHER = 0, K_GATHER, K_CAT, K_NCCL };

static int kind_of(const char *name)
{
	char own[128];

	if (cs_is_nccl_kernel(name))
		return strstr(name, "AllGather") ? K_GATHER : K_NCCL;
	/* at::native::(anonymous namespace)::CatArrayBatchedCopy*, mangled or demangled */
	fact_kernel_own_name(name, own, sizeof(own));
	if (strncmp(own, "CatArrayBatchedCopy", 19) == 0 || strstr(name, "::CatArrayBatchedCopy"))
		return K_CAT;
	return K_OTHER;
}

static int64_t launched(const cs_a_kernel *k)
{
	return k->launch_start != CS_TS_UNKNOWN ? k->launch_start : k->start;
}

/* a kernel of the process: its launch time and index in a->kernels */
struct launch {
	int64_t t, i;
};
static int by_launch(const void *x, const void *y)
{
	const struct launch *p = x, *q = y;

	if (p->t != q->t)
		return p->t < q->t ? -1 : 1;
	return p->i < q->i ? -1 : p->i > q->i;
}

/* The device-to-device copies of the process on stream, launched in [t0, t1], that started
 * in [g_end, c_start] (after the all-gather, before the cat): their count into *n, GPU time
 * into *ns and indices in a->copies onto idx. a->copies is sorted by start. 0 or CS_ERR_NOMEM. */
static int copy_out(const cs_analysis *a, uint32_t pid, uint32_t stream, int64_t t0, int64_t t1,
		    int64_t g_end, int64_t c_start, int64_t *n, int64_t *ns, struct cs_i64s *idx)
{
	*n = *ns = 0;
	for (int64_t i = cs_analysis_copy_at(a, g_end);
	     i < a->ncopies && a->copies[i].start <= c_start; i++) {
		const cs_a_copy *c = &a->copies[i];
		int64_t l = c->launch_start != CS_TS_UNKNOWN ? c->launch_start : c->start;

		if (c->pid != pid || c->is_memset || c->copy_kind != CS_COPY_DTOD ||
		    c->stream_id != stream || c->start == CS_TS_UNKNOWN || c->end <= c->start)
			continue;
		if (l < t0 || l > t1)
			continue;
		if (cs_i64s_push(idx, i))
			return CS_ERR_NOMEM;
		(*n)++;
		*ns = cs_sat_add(*ns, cs_sat_sub(c->end, c->start));
	}
	return 0;
}

/*
 * The fix as an edit of the run (docs/replay.md): all_gather_into_tensor writes the gathered tensor
 * in place, so no copy-out copy and no cat kernel is launched or runs, nor does the host's dispatch
 * of each copy (ProcessGroupNCCL's loop over the list, right after the collective). The host time
 * before the cat stays: the Python around torch.cat runs with the fix too. 0 or CS_ERR_NOMEM.
 */
static int edit_fix(cs_report_finding *f, const struct cs_i64s *copies, const struct cs_i64s *cats)
{
	for (int64_t k = 0; k < copies->n; k++)
		if (ru_edit_not_launched(&f->edit, CS_EDIT_COPY, copies->v[k], 1))
			return CS_ERR_NOMEM;
	for (int64_t k = 0; k < cats->n; k++)
		if (ru_edit_not_launched(&f->edit, CS_EDIT_KERNEL, cats->v[k], 0))
			return CS_ERR_NOMEM;
	return 0;
}

int cs_rule_gather_list_cat_check(cs_rule_ctx *ctx, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	struct fact_name_memo *cache = NULL;
	struct launch *order = NULL;
	struct cs_i64s copy_idx = {0}, cat_idx = {0}; /* the matches' copy-outs and cats */
	int64_t n = 0, *cost = NULL, *per = NULL, matches = 0, gathers = 0;
	int64_t copies = 0, copy_ns = 0, cat_ns = 0, gather_ns = 0;
	int32_t *steps = NULL, nsteps = 0, steady = cs_steps_steady(s);
	char *kind = NULL;
	int64_t gather_name = -1, cat_name = -1;
	cs_report_finding *f = NULL;
	char title[320], b1[32], b2[32];
	int rc = CS_ERR_NOMEM;

	if (s->n == 0 || ctx->step_median <= 0 || steady <= 0)
		return 0;
	cache = fact_name_memo_new(kind_of);
	kind = calloc((size_t)a->nkernels + 1, 1);
	order = calloc((size_t)a->nkernels + 1, sizeof(*order));
	cost = calloc((size_t)s->n * 2, sizeof(*cost));
	steps = calloc((size_t)s->n, sizeof(*steps));
	if (!cache || !kind || !order || !cost || !steps)
		goto out;
	rc = 0;
	per = cost + s->n;
	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];

		if (k->pid != s->pid || k->start == CS_TS_UNKNOWN || k->end <= k->start)
			continue;
		kind[i] = (char)fact_name_memo_get(cache, a, k->name_id);
		order[n].t = launched(k);
		order[n++].i = i;
		if (kind[i] == K_GATHER)
			gathers++;
	}
	if (gathers == 0)
		goto out;
	cs_sort(order, (size_t)n, sizeof(*order), by_launch);
	for (int64_t o = 0; o < n; o++) {
		const cs_a_kernel *g = &a->kernels[order[o].i], *c = NULL;
		int64_t nc, cns, ci = -1;
		int st, seen = 0;

		if (kind[order[o].i] != K_GATHER)
			continue;
		st = cs_steps_find_launch(s, g->launch_start, g->start);
		if (st < 0 || s->v[st].warmup)
			continue;
		for (int64_t q = o + 1; q < n && seen < MAX_NEXT; q++) {
			int kq = kind[order[q].i];

			if (kq == K_GATHER || kq == K_NCCL)
				break; /* the next collective: no cat of this one */
			seen++;
			if (kq == K_CAT && a->kernels[order[q].i].start >= g->end) {
				ci = order[q].i;
				c = &a->kernels[ci];
				break;
			}
		}
		if (!c)
			continue;
		if (copy_out(a, s->pid, g->stream_id, launched(g), launched(c), g->end, c->start,
			     &nc, &cns, &copy_idx) ||
		    cs_i64s_push(&cat_idx, ci)) {
			rc = CS_ERR_NOMEM;
			goto out;
		}
		matches++;
		copies += nc;
		copy_ns = cs_sat_add(copy_ns, cns);
		cat_ns = cs_sat_add(cat_ns, cs_sat_sub(c->end, c->start));
		gather_ns = cs_sat_add(gather_ns, cs_sat_sub(g->end, g->start));
		cost[st] = cs_sat_add(cost[st], cs_sat_add(cns, cs_sat_sub(c->end, c->start)));
		if (gather_name < 0)
			gather_name = g->name_id;
		if (cat_name < 0)
			cat_name = c->name_id;
	}
	for (int32_t i = 0; i < s->n; i++)
		if (!s->v[i].warmup && cost[i] > 0)
			steps[nsteps++] = i;
	if (matches == 0 || nsteps < 2 || (double)nsteps < MIN_STEP_SHARE * (double)steady)
		goto out;
	for (int32_t i = 0; i < nsteps; i++)
		per[i] = cost[steps[i]];
	{
		int64_t lm = cs_median_i64(per, nsteps);
		double share = (double)lm / (double)ctx->step_median;

		if (lm <= 0 || share < MIN_SHARE)
			goto out;
		snprintf(
			title, sizeof(title),
			"NCCL all-gather into a list, then concatenated: %.1f all-gathers per step "
			"each followed by %.1f copies out of the gathered buffer and a cat kernel, "
			"%s of GPU time per step (%s)",
			(double)matches / nsteps, (double)copies / (double)matches,
			ru_fmt_ns(b1, sizeof(b1), lm),
			ru_fmt_steps(b2, sizeof(b2), nsteps, steady));
		rc = CS_ERR_NOMEM;
		f = ru_step_finding(
			ctx, RULE_ID, ru_severity(share), title,
			"Gather into one preallocated tensor: "
			"torch.distributed.all_gather_into_tensor(output, input) "
			"(_all_gather_base in older PyTorch) with output of "
			"world_size times the input's size, instead of all_gather(list, input) and "
			"torch.cat(list): no list tensors, no copy-out, no cat.",
			steps, nsteps, lm);
		if (!f)
			goto out;
		{
			const struct ru_field ev[] = {
				{"matches", (double)matches, NULL},
				{"all_gathers", (double)gathers, NULL},
				{"copy_out_copies", (double)copies, NULL},
				{"copy_out_ns", (double)copy_ns, NULL},
				{"cat_ns", (double)cat_ns, NULL},
				{"all_gather_ns", (double)gather_ns, NULL},
				{"all_gather_kernel", 0, cs_analysis_string(a, gather_name)},
				{"cat_kernel", 0, cs_analysis_string(a, cat_name)},
			};

			if (!ru_add_fields(f->evidence, ev, sizeof(ev) / sizeof(ev[0])))
				rc = edit_fix(f, &copy_idx, &cat_idx);
		}
	}
out:
	rc = ru_finish(ctx, f, rc, err);
	free(cache);
	free(kind);
	free(order);
	free(cost);
	free(steps);
	cs_i64s_free(&copy_idx);
	cs_i64s_free(&cat_idx);
	return rc;
}
