/*
 * launch_starvation.c - the launch-starvation rule: inside steady-state steps the GPU keeps
 * running out of work because the host launches it too slowly (tiny kernels, Python overhead, a
 * host wait, work at the start of the step): the next piece of GPU work was launched only after
 * the previous one had ended.
 *
 * One pass over the process's GPU work in start order finds each such starved gap and its cause;
 * the gaps that d2h-sync already charges to a device-to-host wait are left out of the decision
 * and shown apart. docs/rules/launch-starvation.md has the decision, its thresholds and the
 * measured values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzers/rule_util.h"
#include "util/checked.h"

#define RULE_ID "launch-starvation"

/* The GPU waits for the host at least this share of the step, in the median steady step ... */
#define MIN_IDLE_SHARE 0.65
/* ... and in at least this share of the steady steps, and this many. */
#define MIN_STEP_SHARE 0.5
#define MIN_STEPS      3

enum cause {
	CAUSE_SYNC = 0, /* the first gap after a host wait */
	CAUSE_TINY,	/* between kernels: the host launches slower than they run */
	CAUSE_START,	/* the GPU ran dry before the step's first launch */
	CAUSE_D2H,	/* charged by d2h-sync: not counted here */
	NCAUSES,
};

static const char *const cause_key[NCAUSES] = {"after_host_wait", "between_kernels",
					       "at_step_start", "after_d2h_sync"};

struct step_acc {
	int64_t idle[NCAUSES];
	int64_t gaps[NCAUSES];
	int64_t work;	      /* kernels, copies and memsets that ran */
	int64_t work_ns;      /* their summed duration */
	int64_t biggest_gap;  /* the largest counted gap */
	int64_t biggest_next; /* kernel index after it, or -1 */
};

/* Ends of the process's host waits, ascending. */
static int host_wait_ends(const cs_analysis *a, uint32_t pid, struct ru_i64 *ends)
{
	for (int64_t i = 0; i < a->nsyncs; i++) {
		const cs_a_sync *y = &a->syncs[i];

		if (y->pid != pid || !y->host_wait || y->start == CS_TS_UNKNOWN)
			continue;
		if (ru_i64_push(ends, y->end != CS_TS_UNKNOWN ? y->end : y->start))
			return CS_ERR_NOMEM;
	}
	ru_sort_i64(ends->v, ends->n);
	return 0;
}

/* First of the sorted v[0..n) that is >= t, or n. */
static int64_t lower_i64(const int64_t *v, int64_t n, int64_t t)
{
	int64_t lo = 0, hi = n;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (v[mid] < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The windows d2h-sync charges, by start: [idle_start, window_end] of the waits that cost. */
static int d2h_windows(const struct ru_d2h *d, struct ru_i64 *from, struct ru_i64 *to)
{
	for (int64_t i = 0; i < d->n; i++) {
		const struct ru_d2h_wait *w = &d->v[i];

		if (w->step < 0 || ru_d2h_cost(w) == 0)
			continue;
		if (ru_i64_push(from, w->idle_start) || ru_i64_push(to, w->window_end))
			return CS_ERR_NOMEM;
	}
	return 0;
}

static void scan_gaps(const cs_analysis *a, const cs_steps *s, const struct ru_i64 *waits,
		      const struct ru_i64 *wfrom, const struct ru_i64 *wto, struct step_acc *acc)
{
	struct ru_gpu_iter it;
	struct ru_work w;
	int64_t reach = CS_TS_UNKNOWN, p = 0;

	ru_gpu_iter_init(&it, a, s->pid);
	while (ru_gpu_next(&it, &w)) {
		int64_t launched = ru_work_launched(&w), prev = reach, gap, x;
		int st = ru_steady_step(s, cs_launch_time(w.launch_start, w.start));
		enum cause c;

		if (reach == CS_TS_UNKNOWN || w.end > reach)
			reach = w.end;
		if (st < 0)
			continue;
		acc[st].work++;
		cs_sat_accum(&acc[st].work_ns, w.end - w.start);
		/* a gap the host caused: the work was launched only after the GPU ran out */
		if (prev == CS_TS_UNKNOWN || w.start <= prev || launched == CS_TS_UNKNOWN ||
		    launched <= prev)
			continue;
		gap = w.start - prev;
		while (p < wto->n && wto->v[p] < prev)
			p++;
		x = lower_i64(waits->v, waits->n, prev);
		if (p < wto->n && wfrom->v[p] < w.start && prev <= wto->v[p])
			c = CAUSE_D2H;
		else if (x < waits->n && waits->v[x] <= launched)
			c = CAUSE_SYNC;
		else if (prev < s->v[st].start)
			c = CAUSE_START;
		else
			c = CAUSE_TINY;
		cs_sat_accum(&acc[st].idle[c], gap);
		acc[st].gaps[c]++;
		if (c != CAUSE_D2H && gap > acc[st].biggest_gap) {
			acc[st].biggest_gap = gap;
			acc[st].biggest_next = w.is_kernel ? w.index : -1;
		}
	}
}

static int64_t counted(const struct step_acc *x)
{
	return cs_sat_add(cs_sat_add(x->idle[CAUSE_SYNC], x->idle[CAUSE_TINY]),
			  x->idle[CAUSE_START]);
}

static const char *cause_words(int c)
{
	switch (c) {
	case CAUSE_SYNC:
		return "after host waits";
	case CAUSE_START:
		return "at the start of the step";
	default:
		return "between kernels launched slower than they run";
	}
}

/*
 * med, lo and hi: the median idle share of the steady steps and its 95% interval, in millionths;
 * near: the interval holds the threshold (the finding is info).
 */
static int emit_finding(cs_rule_ctx *ctx, const struct step_acc *acc, const int64_t *share_pm,
			const int32_t *steps, int32_t n, int64_t *tmp, int64_t med, int64_t lo,
			int64_t hi, int near, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	cs_report_finding *f;
	cJSON *e, *by;
	int64_t lost, cause_med[NCAUSES], gaps_med[NCAUSES], work, work_ns, dur, best_gap = 0;
	int top = CAUSE_TINY, rc = CS_ERR_NOMEM;
	double share;
	char title[400], b1[32], b2[32], b3[32], b4[96] = "";

	for (int32_t i = 0; i < n; i++)
		tmp[i] = counted(&acc[steps[i]]);
	lost = ru_median(tmp, n);
	for (int c = 0; c < NCAUSES; c++) {
		for (int32_t i = 0; i < n; i++)
			tmp[i] = acc[steps[i]].idle[c];
		cause_med[c] = ru_median(tmp, n);
		for (int32_t i = 0; i < n; i++)
			tmp[i] = acc[steps[i]].gaps[c];
		gaps_med[c] = ru_median(tmp, n);
	}
	/* The main cause, once every median is known. */
	for (int c = 0; c < NCAUSES; c++)
		if (c != CAUSE_D2H && cause_med[c] > cause_med[top])
			top = c;
	for (int32_t i = 0; i < n; i++)
		tmp[i] = acc[steps[i]].work;
	work = ru_median(tmp, n);
	for (int32_t i = 0; i < n; i++)
		tmp[i] = acc[steps[i]].work_ns;
	work_ns = ru_median(tmp, n);
	for (int32_t i = 0; i < n; i++)
		tmp[i] = s->v[steps[i]].end - s->v[steps[i]].start;
	dur = ru_median(tmp, n);
	for (int32_t i = 0; i < n; i++)
		tmp[i] = share_pm[steps[i]];
	share = (double)ru_median(tmp, n) / 1e6;

	if (near)
		snprintf(b4, sizeof(b4), "; near the %.0f%% threshold (95%% interval %.0f-%.0f%%)",
			 MIN_IDLE_SHARE * 100, (double)lo / 1e4, (double)hi / 1e4);
	snprintf(title, sizeof(title),
		 "GPU waits for the host %.0f%% of the step: %s idle per step, mostly %s (%lld "
		 "launches per step, %s of GPU work each, one every %s)%s",
		 share * 100, ru_fmt_ns(b1, sizeof(b1), lost), cause_words(top), (long long)work,
		 ru_fmt_ns(b2, sizeof(b2), work > 0 ? work_ns / work : 0),
		 ru_fmt_ns(b3, sizeof(b3), work > 0 ? dur / work : 0), b4);
	f = cs_finding_new(
		RULE_ID, near ? CS_SEV_INFO : ru_severity(share), title,
		"Give the GPU more work per launch: capture the step in a CUDA graph "
		"(torch.cuda.graphs, torch.compile mode=\"reduce-overhead\"), fuse small "
		"ops (torch.compile, fused optimizers), grow the batch, and take host waits "
		"and data preparation out of the step (DataLoader workers, pinned memory, "
		"prefetch).");
	if (!f)
		goto out;
	if (cs_finding_set_steps(f, steps, n))
		goto out;
	f->lost_ns_per_step = lost;
	f->step_share = (double)lost / (double)(ctx->step_median > 0 ? ctx->step_median : dur);
	f->first = s->v[steps[0]].start;
	f->last = s->v[steps[n - 1]].end;
	for (int32_t i = 0; i < n; i++) {
		const struct step_acc *x = &acc[steps[i]];

		if (x->biggest_gap > best_gap && x->biggest_next >= 0) {
			best_gap = x->biggest_gap;
			f->stack_id = a->kernels[x->biggest_next].stack_id;
		}
	}
	e = f->evidence;
	cJSON_AddNumberToObject(e, "idle_share", share);
	cJSON_AddNumberToObject(e, "idle_ns_per_step", (double)lost);
	cJSON_AddNumberToObject(e, "step_ns", (double)dur);
	by = cJSON_AddObjectToObject(e, "idle_ns_by_cause");
	if (!by)
		goto out;
	for (int c = 0; c < NCAUSES; c++)
		cJSON_AddNumberToObject(by, cause_key[c], (double)cause_med[c]);
	by = cJSON_AddObjectToObject(e, "gaps_by_cause");
	if (!by)
		goto out;
	for (int c = 0; c < NCAUSES; c++)
		cJSON_AddNumberToObject(by, cause_key[c], (double)gaps_med[c]);
	cJSON_AddNumberToObject(e, "gpu_work_per_step", (double)work);
	cJSON_AddNumberToObject(e, "gpu_work_ns_per_step", (double)work_ns);
	cJSON_AddNumberToObject(e, "mean_work_ns", (double)(work > 0 ? work_ns / work : 0));
	cJSON_AddNumberToObject(e, "mean_launch_interval_ns", (double)(work > 0 ? dur / work : 0));
	cJSON_AddNumberToObject(e, "min_idle_share", MIN_IDLE_SHARE);
	cJSON_AddNumberToObject(e, "idle_share_low", (double)lo / 1e6);
	cJSON_AddNumberToObject(e, "idle_share_high", (double)hi / 1e6);
	cJSON_AddNumberToObject(e, "steady_idle_share", (double)med / 1e6);
	cJSON_AddNumberToObject(e, "threshold_margin", (double)med / 1e6 - MIN_IDLE_SHARE);
	cJSON_AddBoolToObject(e, "near_threshold", near);
	cJSON_AddNumberToObject(e, "steady_steps", cs_steps_steady(s));
	cJSON_AddNumberToObject(e, "affected_steps", n);
	return ru_emit(ctx, f, err);
out:
	cs_finding_free(f);
	return cs_error_set(err, rc, "out of memory");
}

static int run(cs_rule_ctx *ctx, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	struct cs_rule_cache own = {0};
	const struct ru_d2h *d;
	struct ru_i64 waits = {0}, wfrom = {0}, wto = {0};
	struct step_acc *acc = NULL;
	int64_t *share_pm = NULL, *tmp = NULL, med, lo, hi;
	int near;
	int32_t *steps = NULL, n = 0, m = 0, steady = cs_steps_steady(s);
	int rc;

	if (steady <= 0 || a->nkernels == 0)
		return 0;
	rc = ru_cached_d2h(ctx, &own, &d);
	if (rc)
		return cs_error_set(err, rc, "out of memory");
	rc = CS_ERR_NOMEM;
	acc = calloc((size_t)s->n, sizeof(*acc));
	share_pm = calloc((size_t)s->n, sizeof(*share_pm));
	tmp = calloc((size_t)s->n + 1, sizeof(*tmp));
	steps = calloc((size_t)s->n + 1, sizeof(*steps));
	if (!acc || !share_pm || !tmp || !steps || host_wait_ends(a, s->pid, &waits) ||
	    d2h_windows(d, &wfrom, &wto))
		goto out;
	scan_gaps(a, s, &waits, &wfrom, &wto, acc);

	/* share of each steady step the GPU waited for the host, in millionths */
	for (int32_t i = 0; i < s->n; i++) {
		int64_t dur = s->v[i].end - s->v[i].start;

		if (s->v[i].warmup || dur <= 0)
			continue;
		share_pm[i] = cs_sat_from_double((double)counted(&acc[i]) * 1e6 / (double)dur);
		tmp[m++] = share_pm[i];
		if (share_pm[i] >= MIN_IDLE_SHARE * 1e6)
			steps[n++] = i;
	}
	med = ru_median(tmp, m);
	/* the 95% interval of the median: a threshold inside it makes the finding info */
	ru_median_interval(tmp, m, &lo, &hi);
	rc = 0;
	if (hi < MIN_IDLE_SHARE * 1e6 || n < MIN_STEPS)
		goto out;
	near = lo < MIN_IDLE_SHARE * 1e6;
	if (!near && (med < MIN_IDLE_SHARE * 1e6 || n < MIN_STEP_SHARE * steady))
		goto out;
	rc = emit_finding(ctx, acc, share_pm, steps, n, tmp, med, lo, hi, near, err);
	goto done;
out:
	if (rc)
		cs_error_set(err, rc, "out of memory");
done:
	ru_cache_free(&own);
	ru_i64_free(&waits);
	ru_i64_free(&wfrom);
	ru_i64_free(&wto);
	free(acc);
	free(share_pm);
	free(tmp);
	free(steps);
	return rc;
}

const cs_analyzer cs_rule_launch_starvation = {
	RULE_ID,
	"the GPU keeps running out of work inside the steps: the host launches kernels slower "
	"than they run",
	"000 #12, 001 6.3-6.4",
	run,
};
