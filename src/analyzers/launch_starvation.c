/*
 * launch_starvation.c - the launch-starvation rule: inside steady-state steps the GPU keeps
 * running out of work because the host launches it too slowly: the next piece of GPU work was
 * launched only after the previous one had ended.
 *
 * One pass over the process's GPU work in start order (facts/idle_by_cause.h) finds each such
 * starved gap and splits its idle among causes (launch overhead, host work, host waits, the input
 * pipeline, pageable copies), each nanosecond to one; the gaps that d2h-sync already charges to a
 * device-to-host wait are left out of the decision and shown apart. docs/rules/launch-starvation.md
 * has the decision, its thresholds and the measured values.
 */
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_order.h"
#include "idle_by_cause.h"
#include "launch_calls.h"
#include "d2h_waits.h"
#include "cache.h"
#include "edits.h"
#include "finding_kit.h"
#include "estimates.h"
#include "sites.h"
#include "rules.h"
#include "cuscope/sort.h"
#include "cuscope/grow.h"
#include "cuscope/checked.h"
#include "cuscope/launch_cost.h"

#define RULE_ID RULE_ID_LAUNCH_STARVATION

/*
 * A step is starved when the GPU waits for the host at least as long as it works: the host's
 * idle (every counted cause but the allocator calls, which are the memory rules') is at least the
 * step's GPU busy time. Then the host, not the GPU, sets the step's pace: a GPU twice as fast
 * would shorten the step by less than a host that launched in no time. The median steady step
 * must be so ...
 */
/* ... and at least this share of the steady steps, and this many. */
#define MIN_STEP_SHARE 0.5
#define MIN_STEPS      3
/* Call sites listed in the evidence. */
#define MAX_SITES 5
/*
 * The GPU's gap between two nodes of a CUDA graph where the trace has no graph to measure it on:
 * 0.42 us in the committed launch-starvation-fixed (the step in one graph, H200), against 1.06 to
 * 1.50 us between kernels queued one by one (docs/replay.md). A trace with at least
 * MIN_GRAPH_GAPS such gaps gives its own median.
 */
#define GRAPH_GAP_NS   420
#define MIN_GRAPH_GAPS 20
/* The gaps the median is taken of at most (the first of the trace). */
#define MAX_GRAPH_GAPS 65536

static int64_t counted(const struct fact_idle_step *x)
{
	int64_t n = 0;

	for (int c = 0; c < CS_IDLE_NCAUSES; c++)
		if (c != CS_IDLE_D2H)
			n = cs_sat_add(n, x->idle[c]);
	return n;
}

/* The host's own idle in a step: every counted cause but the allocator calls. */
static int64_t host_idle(const struct fact_idle_step *x)
{
	return cs_sat_sub(counted(x), x->idle[CS_IDLE_ALLOC]);
}

static const char *cause_words(int c)
{
	switch (c) {
	case CS_IDLE_HOST:
		return "host work between launches";
	case CS_IDLE_WAIT:
		return "host waits";
	case CS_IDLE_INPUT:
		return "the input pipeline (host work before host-to-device copies: of a batch, "
		       "dataloader-stall's cost, or of tensors made on the host, "
		       "host-created-tensor's)";
	case CS_IDLE_PAGEABLE:
		return "copies of pageable memory holding the host";
	case CS_IDLE_ALLOC:
		return "device allocator calls holding the host (the memory rules' cost)";
	default:
		return "launch overhead between short kernels launched one by one";
	}
}

/* The advice for one cause; graph: the kernels already run from CUDA graphs. */
static const char *cause_fix(int c, int graph)
{
	switch (c) {
	case CS_IDLE_HOST:
		return "Host work: take Python work out of the step or do it while the GPU runs "
		       "work queued ahead (precompute, fewer host-side tensor operations, logging "
		       "and checks every N steps).";
	case CS_IDLE_WAIT:
		return "Host waits: remove synchronize calls and blocking copies from the step, or "
		       "wait on an event as late as possible.";
	case CS_IDLE_INPUT:
		return "Input pipeline: have the next batch ready before the step needs it "
		       "(DataLoader num_workers and prefetch_factor, pin_memory, copies with "
		       "non_blocking=True), and make tensors on the device rather than on the "
		       "host (see dataloader-stall and host-created-tensor).";
	case CS_IDLE_PAGEABLE:
		return "Pageable copies: copy from pinned memory (pin_memory=True, "
		       "non_blocking=True) so that the copy call does not hold the host.";
	case CS_IDLE_ALLOC:
		return "Allocator calls: see the memory findings (allocator-churn, "
		       "empty-cache-in-loop, memory-ceiling-thrash).";
	default:
		return graph ? "Launch overhead: the kernels already run from CUDA graphs; "
			       "capture more of the step in one graph, fuse small ops "
			       "(torch.compile), grow the batch."
			     : "Launch overhead: give the GPU more work per launch: capture the "
			       "step in a CUDA graph (torch.cuda.graphs, torch.compile "
			       "mode=\"reduce-overhead\"), fuse small ops (torch.compile, fused "
			       "optimizers), grow the batch.";
	}
}

struct launch_ref {
	uint32_t tid;
	int32_t step;
	int64_t start;
	int64_t kernel;
};

/* The GPU's gap between consecutive kernels of process pid's CUDA graphs on a stream: the median
 * of the first MAX_GRAPH_GAPS, or GRAPH_GAP_NS when the trace has fewer than MIN_GRAPH_GAPS. */
static int64_t graph_gap(const cs_analysis *a, uint32_t pid)
{
	int64_t *g = NULL, n = 0, gap = GRAPH_GAP_NS;

	for (int64_t q = 1; q < a->nkernels && a->kernel_stream_order && n < MAX_GRAPH_GAPS; q++) {
		const cs_a_kernel *p = &a->kernels[a->kernel_stream_order[q - 1]];
		const cs_a_kernel *k = &a->kernels[a->kernel_stream_order[q]];

		if (k->pid != pid || !k->graph || !p->graph || p->pid != pid ||
		    p->stream_id != k->stream_id || p->device_id != k->device_id ||
		    p->end == CS_TS_UNKNOWN || k->start == CS_TS_UNKNOWN || k->start < p->end ||
		    k->launch_start != p->launch_start)
			continue;
		if (!g && !(g = malloc(MAX_GRAPH_GAPS * sizeof(*g))))
			return gap; /* without memory: the committed traces' gap */
		g[n++] = k->start - p->end;
	}
	if (n >= MIN_GRAPH_GAPS) {
		cs_sort_i64(g, (size_t)n);
		gap = g[n / 2];
	}
	free(g);
	return gap;
}

/*
 * The fix as an edit of the run (docs/replay.md): the kernels each thread launches in a step go
 * into one CUDA graph, launched by the first launch call; the others are not made, nor is the host
 * time before them on their thread (the Python between captured launches does not run), and each
 * follows the one before it on its stream after a graph's gap (graph_gap()). Kernels already
 * replayed from a graph are left as they are. 0 or CS_ERR_NOMEM.
 */
static int edit_graph(cs_report_finding *f, const cs_analysis *a, const cs_steps *s,
		      const int32_t *steps, int32_t n)
{
	struct launch_ref *v;
	int64_t nv = 0, gap = graph_gap(a, s->pid);
	uint8_t *in = ru_steps_mask(s, steps, n);
	int rc = 0;

	if (!in)
		return CS_ERR_NOMEM;
	v = malloc((size_t)(a->nkernels > 0 ? a->nkernels : 1) * sizeof(*v));
	if (!v) {
		free(in);
		return CS_ERR_NOMEM;
	}
	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];
		int st;

		if (k->pid != s->pid || k->graph || k->launch_start == CS_TS_UNKNOWN)
			continue;
		st = cs_steps_find_launch(s, k->launch_start, k->start);
		if (st < 0 || !in[st])
			continue;
		v[nv++] = (struct launch_ref){k->launch_tid, st, k->launch_start, i};
	}
	{
		static const cs_sort_key keys[] = {
			{offsetof(struct launch_ref, tid), CS_KEY_U32},
			{offsetof(struct launch_ref, start), CS_KEY_I64}};

		cs_sort_records(v, (size_t)nv, sizeof(*v), keys, 2);
	}
	for (int64_t i = 1; i < nv && rc == 0; i++) {
		if (v[i].tid != v[i - 1].tid || v[i].step != v[i - 1].step)
			continue; /* the graph's launch */
		rc = cs_edit_add(&f->edit, CS_EDIT_DROP_CALL, CS_EDIT_KERNEL, v[i].kernel, 0);
		if (rc == 0)
			rc = cs_edit_add(&f->edit, CS_EDIT_HOST_CUT, CS_EDIT_KERNEL, v[i].kernel,
					 INT64_MAX);
		if (rc == 0)
			rc = cs_edit_add(&f->edit, CS_EDIT_GPU_GAP, CS_EDIT_KERNEL, v[i].kernel,
					 gap);
	}
	free(v);
	free(in);
	return rc ? CS_ERR_NOMEM : 0;
}

/*
 * med, lo and hi: the median margin of the steady steps (the host's idle less the GPU's busy
 * time, as a share of the step) and its 95% interval, in millionths; near: the interval holds 0
 * (the finding is info).
 */
static int emit_finding(cs_rule_ctx *ctx, const struct fact_idle_step *acc, const int32_t *steps,
			int32_t n, int64_t *tmp, int64_t med, int64_t lo, int64_t hi, int near,
			struct ru_sites *sites, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	cs_report_finding *f;
	cJSON *e, *by;
	int64_t lost, own, cause_med[CS_IDLE_NCAUSES], gaps_med[CS_IDLE_NCAUSES], work, work_ns,
		dur, best_gap = 0;
	int64_t launches, gk = 0, kernels = 0;
	int top = CS_IDLE_LAUNCH, rc = CS_ERR_NOMEM, graph, done[CS_IDLE_NCAUSES] = {0};
	int64_t rec, left_to_stall, host, busy;
	double share, busy_share, rec_launch_ns, net_share;
	char title[400], fix[1600] = "", b1[32], b2[32], b3[32], b4[256] = "", b5[32], b6[32];

	for (int32_t i = 0; i < n; i++)
		tmp[i] = counted(&acc[steps[i]]);
	lost = cs_median_i64(tmp, n);
	/* the input pipeline's idle is dataloader-stall's cost: counted in the decision, not in the
	 * cost (the median idle of the other causes) */
	for (int32_t i = 0; i < n; i++)
		tmp[i] = counted(&acc[steps[i]]) - acc[steps[i]].idle[CS_IDLE_INPUT] -
			 acc[steps[i]].idle[CS_IDLE_ALLOC];
	own = cs_median_i64(tmp, n);
	for (int c = 0; c < CS_IDLE_NCAUSES; c++) {
		for (int32_t i = 0; i < n; i++)
			tmp[i] = acc[steps[i]].idle[c];
		cause_med[c] = cs_median_i64(tmp, n);
		for (int32_t i = 0; i < n; i++)
			tmp[i] = acc[steps[i]].gaps[c];
		gaps_med[c] = cs_median_i64(tmp, n);
	}
	/* The main cause, once every median is known. */
	for (int c = 0; c < CS_IDLE_NCAUSES; c++)
		if (c != CS_IDLE_D2H && cause_med[c] > cause_med[top])
			top = c;
	for (int32_t i = 0; i < n; i++)
		tmp[i] = acc[steps[i]].work;
	work = cs_median_i64(tmp, n);
	for (int32_t i = 0; i < n; i++)
		tmp[i] = acc[steps[i]].work_ns;
	work_ns = cs_median_i64(tmp, n);
	for (int32_t i = 0; i < n; i++)
		tmp[i] = acc[steps[i]].launches;
	launches = cs_median_i64(tmp, n);
	for (int32_t i = 0; i < n; i++) {
		gk += acc[steps[i]].graph_kernels;
		kernels += acc[steps[i]].kernels;
	}
	/* most kernels of the affected steps ran from a CUDA graph: no advice to use one */
	graph = gk > 0 && 2 * gk > kernels;
	/* the fix: the advice of each cause with idle in the median step, the main one first */
	done[CS_IDLE_D2H] = 1;
	for (int c = top; c >= 0;) {
		size_t len = strlen(fix);

		done[c] = 1;
		snprintf(fix + len, sizeof(fix) - len, "%s%s", len ? " " : "", cause_fix(c, graph));
		c = -1;
		for (int k = 0; k < CS_IDLE_NCAUSES; k++)
			if (!done[k] && cause_med[k] > 0 && (c < 0 || cause_med[k] > cause_med[c]))
				c = k;
	}
	for (int32_t i = 0; i < n; i++)
		tmp[i] = s->v[steps[i]].end - s->v[steps[i]].start;
	dur = cs_median_i64(tmp, n);
	for (int32_t i = 0; i < n; i++)
		tmp[i] = host_idle(&acc[steps[i]]);
	host = cs_median_i64(tmp, n);
	for (int32_t i = 0; i < n; i++)
		tmp[i] = s->v[steps[i]].gpu_busy;
	busy = cs_median_i64(tmp, n);
	share = dur > 0 ? (double)host / (double)dur : 0;
	busy_share = dur > 0 ? (double)busy / (double)dur : 0;
	/*
	 * What recording itself added: every launch call of the step took rec_launch_ns longer
	 * (measured by record after the program, META launch_cost), so a host that launched each
	 * kernel just in time started the step's last one up to launches x rec_launch_ns late. The
	 * idle is counted net of that; when the host's idle left is shorter than the GPU's busy
	 * time, the program may not starve without the profiler and the finding is info.
	 */
	rec_launch_ns = cs_launch_cost_ns(cs_trace_meta(a->trace, CS_META_LAUNCH_COST));
	rec = (int64_t)((double)launches * rec_launch_ns);
	if (rec > lost)
		rec = lost;
	net_share = dur - rec > 0 ? (double)(lost - rec) / (double)(dur - rec) : 0;
	left_to_stall = lost - own;
	own = own > rec ? own - rec : 0;
	if (near)
		snprintf(
			b4, sizeof(b4),
			"; near the threshold, the GPU working about as long (the host's idle less "
			"its work, 95%% interval %+.0f..%+.0f%% of the step)",
			(double)lo / 1e4, (double)hi / 1e4);
	if (rec > 0) {
		size_t len = strlen(b4);

		snprintf(b4 + len, sizeof(b4) - len,
			 "; up to %s of that idle is recording's own cost (%s per launch)%s",
			 ru_fmt_ns(b5, sizeof(b5), rec),
			 ru_fmt_ns(b6, sizeof(b6), (int64_t)rec_launch_ns),
			 host - rec < busy ? ", which could account for the finding" : "");
	}
	if (host - rec < busy)
		near = 1;
	snprintf(title, sizeof(title),
		 "GPU waits for the host %.0f%% of the step and works %.0f%%: %s idle per step, "
		 "mostly %s (%lld launch calls per step%s, %s of GPU work each, one every %s)%s",
		 share * 100, busy_share * 100, ru_fmt_ns(b1, sizeof(b1), lost), cause_words(top),
		 (long long)launches, graph ? " of CUDA graphs" : "",
		 ru_fmt_ns(b2, sizeof(b2), launches > 0 ? work_ns / launches : 0),
		 ru_fmt_ns(b3, sizeof(b3), launches > 0 ? dur / launches : 0), b4);
	f = ru_step_finding(ctx, RULE_ID,
			    near ? CS_SEV_INFO
				 : ru_severity(dur > 0 ? (double)own / (double)dur : 0),
			    title, fix, steps, n, own);
	if (!f)
		goto out;
	f->step_share = (double)own / (double)(ctx->step_median > 0 ? ctx->step_median : dur);
	for (int32_t i = 0; i < n; i++) {
		const struct fact_idle_step *x = &acc[steps[i]];

		if (x->biggest_gap > best_gap && x->biggest_next >= 0) {
			best_gap = x->biggest_gap;
			f->stack_id = a->kernels[x->biggest_next].stack_id;
		}
	}
	e = f->evidence;
	cJSON_AddNumberToObject(e, "idle_share", dur > 0 ? (double)lost / (double)dur : 0);
	cJSON_AddNumberToObject(e, "host_idle_share", share);
	cJSON_AddNumberToObject(e, "busy_share", busy_share);
	cJSON_AddNumberToObject(e, "idle_ns_per_step", (double)lost);
	if (rec_launch_ns > 0) { /* record measured it (META launch_cost) */
		cJSON_AddNumberToObject(e, "recording_ns_per_launch", rec_launch_ns);
		cJSON_AddNumberToObject(e, "recording_ns_per_step", (double)rec);
		cJSON_AddNumberToObject(e, "idle_share_net_of_recording", net_share);
	}
	cJSON_AddNumberToObject(e, "idle_ns_left_to_dataloader_stall", (double)left_to_stall);
	cJSON_AddNumberToObject(e, "step_ns", (double)dur);
	by = cJSON_AddObjectToObject(e, "idle_ns_by_cause");
	if (!by)
		goto out;
	for (int c = 0; c < CS_IDLE_NCAUSES; c++)
		cJSON_AddNumberToObject(by, cs_idle_cause_name(c), (double)cause_med[c]);
	by = cJSON_AddObjectToObject(e, "gaps_by_cause");
	if (!by)
		goto out;
	for (int c = 0; c < CS_IDLE_NCAUSES; c++)
		cJSON_AddNumberToObject(by, cs_idle_cause_name(c), (double)gaps_med[c]);
	cJSON_AddNumberToObject(e, "gpu_work_per_step", (double)work);
	cJSON_AddNumberToObject(e, "gpu_work_ns_per_step", (double)work_ns);
	cJSON_AddNumberToObject(e, "mean_work_ns", (double)(work > 0 ? work_ns / work : 0));
	cJSON_AddNumberToObject(e, "mean_launch_interval_ns", (double)(work > 0 ? dur / work : 0));
	cJSON_AddNumberToObject(e, "launch_calls_per_step", (double)launches);
	cJSON_AddBoolToObject(e, "graph_launched", graph);
	cJSON_AddNumberToObject(e, "host_bound_margin_low", (double)lo / 1e6);
	cJSON_AddNumberToObject(e, "host_bound_margin_high", (double)hi / 1e6);
	cJSON_AddNumberToObject(e, "threshold_margin", (double)med / 1e6);
	cJSON_AddBoolToObject(e, "near_threshold", near);
	if (ru_sites_evidence(e, sites, steps, n, MAX_SITES, &f->stack_id))
		goto out;
	cJSON_AddNumberToObject(e, "steady_steps", cs_steps_steady(s));
	cJSON_AddNumberToObject(e, "affected_steps", n);
	if (!graph && edit_graph(f, a, s, steps, n))
		goto out;
	return ru_emit(ctx, f, err);
out:
	cs_finding_free(f);
	return cs_error_set(err, rc, "out of memory");
}

/* The call sites of the late launches: each work that ended a gap, with the gap's idle the rule
 * counts. */
struct late_sites {
	const cs_analysis *a;
	struct ru_sites *sites;
};

static int add_late(void *arg, const struct fact_gpu_work *w, int32_t step, int64_t ns)
{
	const struct late_sites *x = arg;
	const cs_a_kernel *k = w->is_kernel ? &x->a->kernels[w->index] : NULL;
	const cs_a_copy *cp = w->is_kernel ? NULL : &x->a->copies[w->index];

	return ru_sites_add(x->sites, k ? k->name_id : -1, k ? k->launch_tid : cp->launch_tid,
			    k ? k->stack_id : cp->stack_id, step, ns);
}

int cs_rule_launch_starvation_check(cs_rule_ctx *ctx, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	struct cs_rule_cache own = {0};
	const struct fact_waits *d;
	const struct fact_floor *floor;
	const struct fact_launch_calls *lc;
	const int64_t *idle;
	struct fact_idle_scan sc;
	struct ru_sites sites = {0};
	struct fact_idle_step *acc;
	int64_t *tmp = NULL, med, lo, hi;
	int near;
	int32_t *steps = NULL, n = 0, m = 0, steady = cs_steps_steady(s);
	int rc;

	if (steady <= 0 || a->nkernels == 0)
		return 0;
	rc = ru_cached_d2h(ctx, &own, &d);
	if (rc == 0)
		rc = ru_cached_launch_calls(ctx, &own, &lc);
	if (rc == 0)
		rc = ru_cached_floor(ctx, &own, &floor);
	if (rc) {
		ru_cache_free(&own);
		return cs_error_set(err, rc, "out of memory");
	}
	rc = CS_ERR_NOMEM;
	tmp = calloc((size_t)s->n + 1, sizeof(*tmp));
	steps = calloc((size_t)s->n + 1, sizeof(*steps));
	/* the GPU idle by cause, which pageable-memcpy, low-utilization and the report's header
	 * read, is made now, from the same host intervals and launch calls as the rule's scan: the
	 * report frees the launch calls after this rule */
	if (fact_idle_scan_prepare(a, s, d, lc, floor->lag, &sc) || !tmp || !steps)
		goto out;
	rc = ru_cached_idle_by_cause_from(ctx, &own, &sc, &idle);
	if (rc)
		goto out;
	rc = CS_ERR_NOMEM;
	if (fact_idle_scan_gaps(a, s, &sc, add_late, &(struct late_sites){a, &sites}))
		goto out;
	acc = sc.acc;

	/* how much longer the GPU waited for the host than it worked in each steady step, as
	 * millionths of the step: starved from 0 up */
	for (int32_t i = 0; i < s->n; i++) {
		int64_t dur = s->v[i].end - s->v[i].start, host = host_idle(&acc[i]), margin_pm;

		if (s->v[i].warmup || dur <= 0)
			continue;
		margin_pm =
			cs_sat_from_double((double)(host - s->v[i].gpu_busy) * 1e6 / (double)dur);
		tmp[m++] = margin_pm;
		if (margin_pm >= 0 && host > 0)
			steps[n++] = i;
	}
	med = cs_median_i64(tmp, m);
	/* the 95% interval of the median: a threshold inside it makes the finding info */
	ru_median_interval(tmp, m, &lo, &hi);
	rc = 0;
	if (hi < 0 || n < MIN_STEPS)
		goto out;
	near = lo < 0;
	if (!near && (med < 0 || n < MIN_STEP_SHARE * steady))
		goto out;
	rc = emit_finding(ctx, acc, steps, n, tmp, med, lo, hi, near, &sites, err);
	goto done;
out:
	if (rc)
		cs_error_set(err, rc, "out of memory");
done:
	ru_cache_free(&own);
	fact_idle_scan_free(&sc);
	ru_sites_free(&sites);
	free(tmp);
	free(steps);
	return rc;
}
