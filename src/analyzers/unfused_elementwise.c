/*
 * unfused_elementwise.c - the unfused-elementwise rule: chains of element-wise kernels back to
 * back on one stream, each over a tensor of the same size (the same grid), that one fused kernel
 * (torch.compile, a fused built-in op, a custom kernel) would replace. Each kernel of a chain
 * reads its inputs from device memory and writes its output back; a fused kernel reads the
 * chain's inputs once and writes its result once, and is launched once.
 *
 * What a chain costs per step, from the trace: its kernels' own GPU time beyond the longest of
 * them (a fused kernel moves at least as many bytes as the largest of its parts, so at least the
 * longest kernel's time stays), plus the GPU idle between them (the launches that fusion
 * removes). Runs of element-wise kernels whose name sequence repeats with a period over several
 * different grids are left out: that is an optimizer's per-parameter loop (`foreach=False`),
 * which the unfused-optimizer rule judges. docs/rules/unfused-elementwise.md has the decision,
 * its thresholds and the measured values.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cuscope/grow.h"
#include "cuscope/sort.h"
#include "kernel_names.h"
#include "edits.h"
#include "finding_kit.h"
#include "recurrence.h"
#include "sites.h"
#include "rules.h"
#include "cuscope/checked.h"

#define RULE_ID RULE_ID_UNFUSED_ELEMENTWISE

/* A chain is at least this many kernels (one launch and one round trip to memory saved). */
#define MIN_CHAIN 2
/* A chain whose kernels' grids differ (PyTorch's unrolled and vectorized loops over one tensor:
 * same_size()) is at least this many: a grid twice another may also be a tensor twice the size. */
#define MIN_MIXED_CHAIN 3
/* A recurring pattern: in at least this share of the steady steps, and this many ... */
#define MIN_STEP_SHARE 0.5
#define MIN_STEPS      3
/* ... costing at least this share of the median step (see the doc: the cost is an upper bound). */
#define MIN_LOSS_SHARE 0.05
/* Fewer steps than that: found when the cost over the steady state reaches MIN_LOSS_SHARE, in at
 * least this many steps. */
#define MIN_RARE_STEPS 2
/* A run whose kernel names repeat with a period of at most MAX_PERIOD kernels, for at least
 * MIN_PERIODS periods, over at least MIN_PERIOD_GRIDS different grids: a per-parameter loop. */
#define MAX_PERIOD	 32
#define MIN_PERIODS	 3
#define MIN_PERIOD_GRIDS 3
/* Chains listed in the evidence, and kernel names per chain. */
#define MAX_CHAINS 3
#define MAX_NAMES  12
/* Call sites listed in the evidence. */
#define MAX_SITES 5

/* Is a kernel name (own: its function's own name) an element-wise kernel of PyTorch (or a Triton
 * pointwise kernel)? */
static int is_elementwise_name(const char *name, const char *own)
{
	if (!strncmp(own, "triton_poi_", 11))
		return 1;
	if (!strcasestr(own, "elementwise") || strcasestr(own, "index"))
		return 0;
	/* a fill writes without reading: zero_grad's and torch.zeros' memsets, not a chain's link
	 */
	return !strstr(name, "FillFunctor");
}

/* PyTorch's two loops of element-wise kernels: the same tensor has twice to four times as many
 * blocks in the unrolled loop (4 elements a thread) as in the vectorized one (8 or 16). */
enum loop { LOOP_OTHER, LOOP_VECTORIZED, LOOP_UNROLLED };

static int8_t loop_of(const char *name)
{
	char own[256];

	fact_kernel_own_name(name, own, sizeof(own));
	return !strcmp(own, "vectorized_elementwise_kernel") ? LOOP_VECTORIZED
	       : !strcmp(own, "unrolled_elementwise_kernel") ? LOOP_UNROLLED
							     : LOOP_OTHER;
}

struct step_sum {
	int64_t cost, chains, kernels, saved, kernel_ns, longest_ns, fused_ns, idle_ns, periodic;
};

/* One chain signature: its kernel names and grid, with what it cost over the steady steps. */
struct chain_kind {
	uint64_t hash;
	int64_t grid, len;
	int64_t first; /* position in kernel_stream_order of an instance's first kernel */
	int64_t cost, count;
	int64_t stack_id;
};

struct state {
	const cs_analysis *a;
	const cs_steps *s;
	const int8_t *ew;
	/* per name id: its operands (fact_kernel_operands) and its PyTorch loop (enum loop) */
	const int8_t *ops, *loop;
	struct step_sum *sum;
	struct chain_kind *kinds;
	size_t nkinds, kinds_cap;
	int8_t *skip; /* per position of a run: 1 in a per-parameter loop */
	size_t skip_cap;
	int64_t *names; /* per position of a run: the kernel's name id (mark_periodic()) */
	size_t names_cap;
	struct ru_sites sites; /* each chain kernel with its part of its chain's cost */
	/* the fix as an edit of the run (docs/replay.md): each chain one kernel, launched once,
	 * that takes the longest kernel's time; the others are not launched, nor is the host's
	 * dispatch between them */
	cs_edit *edit;
};

static const cs_a_kernel *kat(const struct state *st, int64_t pos)
{
	return &st->a->kernels[st->a->kernel_stream_order[pos]];
}

/* Did a host wait of the process end between t0 and t1? (The GPU idle there is its.) The search
 * starts at *hint, the last one's answer (the kernels come in time order, stream by stream). */
static int wait_between(const cs_analysis *a, uint32_t pid, int64_t t0, int64_t t1, int64_t *hint)
{
	int64_t i = cs_lower_bound_near_i64(a->syncs, sizeof(*a->syncs), a->nsyncs,
					    cs_sat_sub(t0, a->sync_longest), hint);

	for (; i < a->nsyncs && a->syncs[i].start < t1; i++) {
		const cs_a_sync *y = &a->syncs[i];

		if (y->pid == pid && y->host_wait && y->end != CS_TS_UNKNOWN && y->end >= t0 &&
		    y->end <= t1)
			return 1;
	}
	return 0;
}

/* GPU idle of the process between the end of one kernel and the start of the next. */
static int64_t idle_between(const cs_analysis *a, uint32_t pid, int64_t t0, int64_t t1)
{
	int64_t idle;

	if (t1 <= t0)
		return 0;
	idle = (t1 - t0) - cs_analysis_gpu_busy(a, pid, t0, t1);
	return idle > 0 ? idle : 0;
}

/*
 * Mark the kernels of run [p0, p1) that belong to a per-parameter loop: a stretch whose names
 * repeat with a period p (name at j equal to name at j + p) for MIN_PERIODS periods or more, over
 * MIN_PERIOD_GRIDS different grids or more.
 */
static void mark_periodic(struct state *st, int64_t p0, int64_t p1)
{
	int64_t len = p1 - p0;
	const int64_t *nm = st->names; /* nm[q - p0]: name id at position q */

	for (int64_t p = 1; p <= MAX_PERIOD && MIN_PERIODS * p <= len; p++) {
		int64_t j = p0;

		while (j + p < p1) {
			int64_t e = j;

			while (e + p < p1 && nm[e - p0] == nm[e + p - p0])
				e++;
			/* names repeat over [j, e + p) */
			if (e + p - j >= MIN_PERIODS * p) {
				int64_t grids[MIN_PERIOD_GRIDS];
				int ng = 0;

				for (int64_t q = j; q < e + p && ng < MIN_PERIOD_GRIDS; q += p) {
					int64_t g = kat(st, q)->grid_blocks;
					int seen = 0;

					for (int t = 0; t < ng; t++)
						seen |= grids[t] == g;
					if (!seen)
						grids[ng++] = g;
				}
				if (ng >= MIN_PERIOD_GRIDS)
					for (int64_t q = j; q < e + p; q++)
						st->skip[q - p0] = 1;
			}
			j = e + 1;
		}
	}
}

/* Are kernels x and y over tensors of the same size? The same grid, or PyTorch's unrolled loop's
 * grid twice or four times its vectorized loop's. */
static int same_size(const struct state *st, const cs_a_kernel *x, const cs_a_kernel *y)
{
	const cs_a_kernel *u = st->loop[x->name_id] == LOOP_UNROLLED ? x : y, *v = u == x ? y : x;

	if (x->grid_blocks == y->grid_blocks)
		return 1;
	return st->loop[u->name_id] == LOOP_UNROLLED && st->loop[v->name_id] == LOOP_VECTORIZED &&
	       (u->grid_blocks == 2 * v->grid_blocks || u->grid_blocks == 4 * v->grid_blocks);
}

/*
 * The time of the one kernel that replaces the chain [c0, c1), whose longest kernel takes longest:
 * its memory traffic. Each kernel of the chain moves its operands through memory, so its time over
 * its operands is what one pass over the tensor costs it; the fused kernel passes over as many
 * tensors as the widest kernel of the chain has operands (the chain's inputs and its output), at
 * the cheapest pass of the chain (the narrowest element type). So it takes at least the time of
 * the kernel with that pass (a small tensor's kernels take a launch's time on the GPU whatever
 * they move), and at most the longest's; the longest's when a kernel's name does not tell its
 * operands (Triton's).
 */
static int64_t fused_time(const struct state *st, int64_t c0, int64_t c1, int64_t longest)
{
	int64_t pass = INT64_MAX;
	int width = 0;

	for (int64_t q = c0; q < c1; q++) {
		const cs_a_kernel *kk = kat(st, q);
		int ops = st->ops[kk->name_id];

		if (ops <= 0)
			return longest;
		if ((kk->end - kk->start) / ops < pass)
			pass = (kk->end - kk->start) / ops;
		if (ops > width)
			width = ops;
	}
	return pass < longest / width ? pass * width : longest;
}

static uint64_t hash_step(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h;
}

/* Count the chain [c0, c1) of the run (positions in kernel_stream_order) in its step. */
static int add_chain(struct state *st, int32_t step, int64_t c0, int64_t c1)
{
	struct step_sum *x = &st->sum[step];
	int64_t total = 0, longest = 0, fused, idle = 0, cost, qlong = c0;
	uint64_t h = 0;
	struct chain_kind *k = NULL;

	for (int64_t q = c0; q < c1; q++) {
		const cs_a_kernel *kk = kat(st, q);
		int64_t d = kk->end - kk->start;

		cs_sat_accum(&total, d);
		if (d > longest) {
			longest = d;
			qlong = q;
		}
		if (q > c0)
			cs_sat_accum(&idle,
				     idle_between(st->a, kk->pid, kat(st, q - 1)->end, kk->start));
		h = hash_step(h, (uint64_t)kk->name_id);
	}
	fused = fused_time(st, c0, c1, longest);
	/* each kernel's part of the cost: the idle before it, and its own time but for what the
	 * fused kernel keeps of the longest's */
	for (int64_t q = c0; q < c1; q++) {
		const cs_a_kernel *kk = kat(st, q);
		int64_t part = kk->end - kk->start - (q == qlong ? fused : 0);

		if (q > c0)
			part = cs_sat_add(
				part, idle_between(st->a, kk->pid, kat(st, q - 1)->end, kk->start));
		if (ru_sites_add(&st->sites, kk->name_id, kk->launch_tid, kk->stack_id, step, part))
			return CS_ERR_NOMEM;
	}
	h = hash_step(h, (uint64_t)kat(st, c0)->grid_blocks);
	cost = cs_sat_add(total - fused, idle);
	x->chains++;
	x->kernels += c1 - c0;
	x->saved += c1 - c0 - 1;
	cs_sat_accum(&x->kernel_ns, total);
	cs_sat_accum(&x->longest_ns, longest);
	cs_sat_accum(&x->fused_ns, fused);
	cs_sat_accum(&x->idle_ns, idle);
	cs_sat_accum(&x->cost, cost);
	for (size_t i = 0; i < st->nkinds; i++)
		if (st->kinds[i].hash == h && st->kinds[i].len == c1 - c0) {
			k = &st->kinds[i];
			break;
		}
	if (!k) {
		if (cs_grow((void **)&st->kinds, &st->kinds_cap, st->nkinds + 1,
			    sizeof(*st->kinds)))
			return CS_ERR_NOMEM;
		k = &st->kinds[st->nkinds++];
		memset(k, 0, sizeof(*k));
		k->hash = h;
		k->len = c1 - c0;
		k->grid = kat(st, c0)->grid_blocks;
		k->first = c0;
		k->stack_id = CS_ID_NONE;
	}
	for (int64_t q = c0; q < c1 && k->stack_id == CS_ID_NONE; q++)
		k->stack_id = kat(st, q)->stack_id;
	for (int64_t q = c0; q < c1; q++) {
		int64_t ki = st->a->kernel_stream_order[q];

		if (q == qlong) {
			if (fused < longest &&
			    cs_edit_add(&st->edit, CS_EDIT_GPU_TIME, CS_EDIT_KERNEL, ki, fused))
				return CS_ERR_NOMEM;
			continue;
		}
		if (ru_edit_not_launched(&st->edit, CS_EDIT_KERNEL, ki, q > c0))
			return CS_ERR_NOMEM;
	}
	cs_sat_accum(&k->cost, cost);
	k->count++;
	return 0;
}

/* The chains of one run of element-wise kernels [p0, p1) of one step. */
static int scan_run(struct state *st, int32_t step, int64_t p0, int64_t p1)
{
	int64_t len = p1 - p0, c0;
	int mixed = 0; /* the chain from c0 joins PyTorch's two loops (same_size()) */

	if (len < MIN_CHAIN)
		return 0;
	if (cs_grow((void **)&st->skip, &st->skip_cap, (size_t)len, 1) ||
	    cs_grow((void **)&st->names, &st->names_cap, (size_t)len, sizeof(*st->names)))
		return CS_ERR_NOMEM;
	memset(st->skip, 0, (size_t)len);
	/* the names once, for the periods' comparisons */
	for (int64_t q = p0; q < p1; q++)
		st->names[q - p0] = kat(st, q)->name_id;
	mark_periodic(st, p0, p1);
	for (int64_t q = p0; q < p1; q++)
		st->sum[step].periodic += st->skip[q - p0];
	c0 = -1;
	for (int64_t q = p0; q <= p1; q++) {
		int brk = q == p1 || st->skip[q - p0] ||
			  (c0 >= 0 && !same_size(st, kat(st, q), kat(st, c0)));

		if (brk && c0 >= 0) {
			if (q - c0 >= (mixed ? MIN_MIXED_CHAIN : MIN_CHAIN) && add_chain(st, step, c0, q))
				return CS_ERR_NOMEM;
			c0 = -1;
		}
		if (q < p1 && !st->skip[q - p0] && c0 < 0) {
			c0 = q;
			mixed = 0;
		} else if (q < p1 && c0 >= 0) {
			mixed |= kat(st, q)->grid_blocks != kat(st, c0)->grid_blocks;
		}
	}
	return 0;
}

/* Walk the process's kernels stream by stream and count the chains of each steady step. */
static int find_chains(struct state *st)
{
	const cs_analysis *a = st->a;
	uint32_t pid = st->s->pid;
	int64_t p0 = -1;
	int32_t run_step = -1;
	int hint = -1;
	int64_t wait_hint = 0;

	for (int64_t pos = 0; pos <= a->nkernels; pos++) {
		const cs_a_kernel *k = pos < a->nkernels ? kat(st, pos) : NULL;
		int32_t step = -1;
		int ok = k && k->pid == pid && k->name_id >= 0 && st->ew[k->name_id] > 0 &&
			 k->start != CS_TS_UNKNOWN && k->end != CS_TS_UNKNOWN && k->end >= k->start;

		if (ok) {
			step = cs_steps_find_steady_near(
				st->s, cs_launch_time(k->launch_start, k->start), &hint);
			ok = step >= 0;
		}
		/* the run goes on: same stream, same step, no host wait in between */
		if (ok && p0 >= 0) {
			const cs_a_kernel *prev = kat(st, pos - 1);

			if (prev->stream_id != k->stream_id || prev->device_id != k->device_id ||
			    prev->pid != k->pid || step != run_step ||
			    wait_between(a, pid, prev->end, k->start, &wait_hint)) {
				if (scan_run(st, run_step, p0, pos))
					return CS_ERR_NOMEM;
				p0 = -1;
			}
		}
		if (!ok) {
			if (p0 >= 0 && scan_run(st, run_step, p0, pos))
				return CS_ERR_NOMEM;
			p0 = -1;
			continue;
		}
		if (p0 < 0) {
			p0 = pos;
			run_step = step;
		}
	}
	return 0;
}

static int cmp_kind_cost(const void *pa, const void *pb)
{
	const struct chain_kind *x = pa, *y = pb;

	if (x->cost != y->cost)
		return x->cost > y->cost ? -1 : 1;
	return (x->first > y->first) - (x->first < y->first);
}

static int64_t median_field(const struct step_sum *sum, const int32_t *steps, int32_t n,
			    size_t offset, int64_t *tmp)
{
	return ru_median_field(sum, sizeof(*sum), steps, n, offset, tmp);
}

static int add_chains(cJSON *e, const struct state *st, int32_t steady)
{
	cJSON *arr = cJSON_AddArrayToObject(e, "chains");

	if (!arr)
		return CS_ERR_NOMEM;
	for (size_t i = 0; i < st->nkinds && i < MAX_CHAINS; i++) {
		const struct chain_kind *k = &st->kinds[i];
		cJSON *o = cJSON_CreateObject(), *names;

		if (!o)
			return CS_ERR_NOMEM;
		cJSON_AddItemToArray(arr, o);
		cJSON_AddNumberToObject(o, "kernels", (double)k->len);
		cJSON_AddNumberToObject(o, "grid_blocks", (double)k->grid);
		cJSON_AddNumberToObject(o, "per_step", (double)k->count / (double)steady);
		cJSON_AddNumberToObject(o, "cost_ns_per_step", (double)(k->cost / steady));
		if (k->stack_id != CS_ID_NONE)
			cJSON_AddNumberToObject(o, "stack_id", (double)k->stack_id);
		names = cJSON_AddArrayToObject(o, "names");
		if (!names)
			return CS_ERR_NOMEM;
		for (int64_t q = 0; q < k->len && q < MAX_NAMES; q++) {
			cJSON *nm = cJSON_CreateString(
				cs_analysis_string(st->a, kat(st, k->first + q)->name_id));

			if (!nm)
				return CS_ERR_NOMEM;
			cJSON_AddItemToArray(names, nm);
		}
	}
	return 0;
}

int cs_rule_unfused_elementwise_check(cs_rule_ctx *ctx, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	struct state st;
	int8_t *ew = NULL, *ops = NULL, *loop = NULL;
	int64_t nnames = 0, *cost = NULL, *tmp = NULL;
	int32_t *steps = NULL, nsteps = 0, steady = cs_steps_steady(s);
	cs_report_finding *f = NULL;
	struct ru_recur r;
	int rc = CS_ERR_NOMEM;

	memset(&st, 0, sizeof(st));
	if (steady <= 0 || ctx->step_median <= 0 || !a->kernel_stream_order)
		return 0;
	rc = fact_kernel_name_marks(a, s->pid, is_elementwise_name, &ew, &nnames);
	if (rc <= 0)
		goto out;
	rc = CS_ERR_NOMEM;
	ops = calloc((size_t)nnames + 1, 1);
	loop = calloc((size_t)nnames + 1, 1);
	if (!ops || !loop)
		goto out;
	for (int64_t id = 0; id < nnames; id++)
		if (ew[id] > 0) {
			ops[id] = (int8_t)fact_kernel_operands(cs_analysis_string(a, id));
			loop[id] = loop_of(cs_analysis_string(a, id));
		}
	st.a = a;
	st.s = s;
	st.ew = ew;
	st.ops = ops;
	st.loop = loop;
	st.sum = ru_recur_arrays(s, sizeof(*st.sum), &cost, &tmp);
	if (!st.sum || find_chains(&st))
		goto out;
	for (int32_t i = 0; i < s->n; i++)
		cost[i] = st.sum[i].cost;
	rc = ru_recur_find(s, ctx->step_median, cost, 0, MIN_STEPS, MIN_STEP_SHARE, MIN_RARE_STEPS,
			   MIN_LOSS_SHARE, tmp, &steps, &nsteps, &r);
	if (rc <= 0)
		goto out;
	rc = CS_ERR_NOMEM;
	if (st.nkinds > 1)
		cs_sort(st.kinds, st.nkinds, sizeof(*st.kinds), cmp_kind_cost);
	{
		static const struct ru_median_key medians[] = {
			{"chain_kernel_ns_per_step", offsetof(struct step_sum, kernel_ns)},
			{"longest_ns_per_step", offsetof(struct step_sum, longest_ns)},
			{"fused_ns_per_step", offsetof(struct step_sum, fused_ns)},
			{"idle_ns_per_step", offsetof(struct step_sum, idle_ns)},
			{"periodic_kernels_per_step", offsetof(struct step_sum, periodic)},
		};
		char title[400], b1[32], b2[96], b3[96], rare[200], own[128];
		int64_t chains =
			median_field(st.sum, steps, nsteps, offsetof(struct step_sum, chains), tmp);
		int64_t saved =
			median_field(st.sum, steps, nsteps, offsetof(struct step_sum, saved), tmp);
		cJSON *e;

		own[0] = '\0';
		if (st.nkinds)
			fact_kernel_own_name(
				cs_analysis_string(a, kat(&st, st.kinds[0].first)->name_id), own,
				sizeof(own));
		ru_recur_near_text(&r, b2, sizeof(b2), b3, sizeof(b3));
		if (r.recurring)
			snprintf(title, sizeof(title),
				 "%lld chains of same-size element-wise kernels per step could be "
				 "fused: %lld launches and %s of GPU time per step (%.1f%%)%s%s",
				 (long long)chains, (long long)saved,
				 ru_fmt_ns(b1, sizeof(b1), r.lost), r.share * 100, b2, b3);
		else {
			ru_recur_rare_text(&r, nsteps,
					   median_field(st.sum, steps, nsteps,
							offsetof(struct step_sum, cost), tmp),
					   rare, sizeof(rare));
			snprintf(title, sizeof(title),
				 "chains of same-size element-wise kernels could be fused %s%s",
				 rare, b2);
		}
		f = ru_recur_finding(
			RULE_ID, &r, title,
			"Fuse the chain into one kernel: torch.compile the function (or module) "
			"that runs these operations, or use the fused built-in (F.gelu(x, "
			"approximate='tanh'), torch.addcmul, F.silu, ...) or a custom (Triton) "
			"kernel; each kernel of a chain reads and writes the whole tensor.",
			steps, nsteps);
		if (!f)
			goto out;
		/* the fix as an edit of the run: the finding's from now on */
		f->edit = st.edit;
		st.edit = NULL;
		ru_finding_span(f, ctx->a, s, steps, nsteps);
		f->stack_id = st.nkinds ? st.kinds[0].stack_id : CS_ID_NONE;
		e = f->evidence;
		cJSON_AddNumberToObject(e, "chains_per_step", (double)chains);
		cJSON_AddNumberToObject(e, "chain_kernels_per_step",
					(double)median_field(st.sum, steps, nsteps,
							     offsetof(struct step_sum, kernels),
							     tmp));
		cJSON_AddNumberToObject(e, "launches_saved_per_step", (double)saved);
		ru_add_medians(e, medians, sizeof(medians) / sizeof(*medians), st.sum,
			       sizeof(*st.sum), steps, nsteps, tmp);
		cJSON_AddStringToObject(e, "costliest_first_kernel", own);
		cJSON_AddNumberToObject(e, "min_chain", MIN_CHAIN);
		if (add_chains(e, &st, steady) ||
		    ru_sites_evidence(e, &st.sites, steps, nsteps, MAX_SITES, &f->stack_id))
			goto out;
		ru_recur_evidence(e, &r, nsteps);
	}
	rc = 0;
out:
	rc = ru_finish(ctx, f, rc, err);
	free(ew);
	free(ops);
	free(loop);
	free(st.sum);
	free(st.kinds);
	free(st.skip);
	free(st.names);
	cs_edit_free(st.edit);
	ru_sites_free(&st.sites);
	free(steps);
	return rc;
}
