/*
 * dataloader_stall.c - the dataloader-stall rule: at the boundary of the steady steps the GPU
 * idles while the training thread prepares the next batch: it makes no CUDA call for far longer
 * than its launch pace, then copies the batch to the device and launches the step.
 *
 * One pass over the process's GPU work in start order finds each host-to-device copy launched at a
 * step boundary (before the step's first kernel launch or after its last) after the GPU had run
 * out of work; the GPU idle while the thread that launched the copy made no CUDA call before it
 * is the stall. launch-starvation splits the same gaps as its "input pipeline" cause and leaves
 * their cost to this rule. docs/rules/dataloader-stall.md has the decision and the measured values.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/grow.h"

#include "analyzers/rule_util.h"
#include "util/checked.h"

#define RULE_ID "dataloader-stall"

/* A recurring pattern: a stall in at least this share of the steady steps ... */
#define MIN_STEP_SHARE 0.5
/* ... and in at least this many of them. */
#define MIN_STEPS 3
/*
 * A stretch without CUDA calls is the wait for a batch, not the host's launch pace, beyond this
 * many robust standard deviations (1.4826 median absolute deviations) over the median time
 * between two launch calls, as launch-starvation separates host work from launch overhead.
 */
#define FAR_K 5.0

struct call {
	int64_t s, e;
	uint32_t tid;
};

struct step_sum {
	int64_t stall_ns;   /* GPU idle while the training thread made no CUDA call */
	int64_t stretch_ns; /* the longest of its stretches without CUDA calls */
	int64_t copies;	    /* host-to-device copies at the boundary that ended a stall */
	int64_t bytes;	    /* their bytes */
	int64_t pageable;   /* of them from pageable memory */
	int64_t copy;	    /* index in a->copies of the copy after the longest stall, or -1 */
	int64_t first_kernel, last_kernel; /* launch time of the step's first and last kernel */
};

static int cmp_call(const void *pa, const void *pb)
{
	const struct call *x = pa, *y = pb;

	return x->s < y->s ? -1 : x->s > y->s;
}

static int push_call(struct call **v, int64_t *n, size_t *cap, int64_t s, int64_t e, uint32_t tid)
{
	if (s == CS_TS_UNKNOWN)
		return 0;
	if (e == CS_TS_UNKNOWN || e < s)
		e = s;
	if ((size_t)*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		struct call *nv = realloc(*v, nc * sizeof(*nv));

		if (!nv)
			return CS_ERR_NOMEM;
		*v = nv;
		*cap = nc;
	}
	(*v)[*n].s = s;
	(*v)[*n].e = e;
	(*v)[(*n)++].tid = tid;
	return 0;
}

/*
 * The recorded CUDA calls of process pid (launch calls of kernels, copies and memsets, host waits,
 * API rows), by start, and the host's launch pace: far is the median time from the end of one
 * launch call to the start of the next (0 where calls overlap) plus FAR_K robust standard
 * deviations, measured over the launch calls of the trace.
 */
static int collect_calls(const cs_analysis *a, uint32_t pid, struct call **out, int64_t *nout,
			 int64_t *longest, int64_t *far)
{
	struct call *v = NULL;
	int64_t n = 0, nl, reach = CS_TS_UNKNOWN, usual;
	size_t cap = 0;
	struct ru_i64 d = {0};

	for (int64_t i = 0; i < a->nkernels; i++)
		if (a->kernels[i].pid == pid &&
		    push_call(&v, &n, &cap, a->kernels[i].launch_start, a->kernels[i].launch_end,
			      a->kernels[i].launch_tid))
			goto nomem;
	for (int64_t i = 0; i < a->ncopies; i++)
		if (a->copies[i].pid == pid &&
		    push_call(&v, &n, &cap, a->copies[i].launch_start, a->copies[i].launch_end,
			      a->copies[i].launch_tid))
			goto nomem;
	nl = n;
	/* the launch pace, from the launch calls alone (the kernels of one graph launch: once) */
	cs_sort(v, (size_t)nl, sizeof(*v), cmp_call);
	for (int64_t i = 0; i < nl; i++) {
		if (i > 0 && v[i].s == v[i - 1].s)
			continue;
		if (reach != CS_TS_UNKNOWN && ru_i64_push(&d, v[i].s > reach ? v[i].s - reach : 0))
			goto nomem;
		if (reach == CS_TS_UNKNOWN || v[i].e > reach)
			reach = v[i].e;
	}
	usual = ru_median(d.v, d.n);
	for (int64_t i = 0; i < d.n; i++)
		d.v[i] = d.v[i] > usual ? d.v[i] - usual : usual - d.v[i];
	*far = usual + cs_sat_from_double(FAR_K * 1.4826 * (double)ru_median(d.v, d.n));
	ru_i64_free(&d);

	for (int64_t i = 0; i < a->nsyncs; i++)
		if (a->syncs[i].pid == pid &&
		    push_call(&v, &n, &cap, a->syncs[i].start, a->syncs[i].end, a->syncs[i].tid))
			goto nomem;
	for (int64_t i = 0; i < a->napis; i++)
		if (a->apis[i].pid == pid &&
		    push_call(&v, &n, &cap, a->apis[i].start, a->apis[i].end, a->apis[i].tid))
			goto nomem;
	cs_sort(v, (size_t)n, sizeof(*v), cmp_call);
	*longest = 0;
	for (int64_t i = 0; i < n; i++)
		if (v[i].e - v[i].s > *longest)
			*longest = v[i].e - v[i].s;
	*out = v;
	*nout = n;
	return 0;
nomem:
	ru_i64_free(&d);
	free(v);
	return CS_ERR_NOMEM;
}

/* End of the last CUDA call of thread tid that started before t, or CS_TS_UNKNOWN. */
static int64_t last_call_end(const struct call *v, int64_t n, int64_t longest, uint32_t tid,
			     int64_t t)
{
	int64_t lo = 0, hi = n, best = CS_TS_UNKNOWN;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (v[mid].s < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* back from the last call that started before t, while a call could still end later */
	for (int64_t i = lo - 1; i >= 0; i--) {
		if (best != CS_TS_UNKNOWN && v[i].s + longest < best)
			break;
		if (v[i].tid == tid && (best == CS_TS_UNKNOWN || v[i].e > best))
			best = v[i].e;
	}
	return best;
}

/* Launch times of the first and last kernel of each steady step. */
static void step_kernels(const cs_analysis *a, const cs_steps *s, struct step_sum *sum)
{
	for (int32_t i = 0; i < s->n; i++) {
		sum[i].first_kernel = sum[i].last_kernel = CS_TS_UNKNOWN;
		sum[i].copy = -1;
	}
	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];
		int64_t t = cs_launch_time(k->launch_start, k->start);
		int st;

		if (k->pid != s->pid || (st = ru_steady_step(s, t)) < 0)
			continue;
		if (sum[st].first_kernel == CS_TS_UNKNOWN || t < sum[st].first_kernel)
			sum[st].first_kernel = t;
		if (sum[st].last_kernel == CS_TS_UNKNOWN || t > sum[st].last_kernel)
			sum[st].last_kernel = t;
	}
}

/*
 * The stalls of the steady steps into sum: for each host-to-device copy launched at a step
 * boundary after all earlier GPU work had ended, the GPU idle between the end of that work (or
 * the end of the launching thread's last CUDA call, when later) and the copy's launch, when the
 * thread made no CUDA call for longer than far before it.
 */
static void scan_stalls(const cs_analysis *a, const cs_steps *s, const struct call *calls,
			int64_t ncalls, int64_t longest, int64_t far, struct step_sum *sum)
{
	struct ru_gpu_iter it;
	struct ru_work w;
	int64_t reach = CS_TS_UNKNOWN;

	ru_gpu_iter_init(&it, a, s->pid);
	while (ru_gpu_next(&it, &w)) {
		int64_t prev = reach, t, c_end, from, to;
		const cs_a_copy *c;
		struct step_sum *x;
		int st;

		if (reach == CS_TS_UNKNOWN || w.end > reach)
			reach = w.end;
		if (w.is_kernel || prev == CS_TS_UNKNOWN || w.start <= prev ||
		    w.launch_start == CS_TS_UNKNOWN)
			continue;
		c = &a->copies[w.index];
		t = w.launch_start;
		if (c->is_memset || c->copy_kind != CS_COPY_HTOD ||
		    (st = ru_steady_step(s, t)) < 0 || ru_work_launched(&w) <= prev)
			continue;
		x = &sum[st];
		/* at the boundary: before the step's first kernel launch or after its last. Only
		 * where the program marked its steps: steps found from the kernel sequence's period
		 * start at whichever kernel began the loop (often the loss accumulation that ends
		 * a step), so their boundary says nothing about where the program waits for input;
		 * there, the recurrence over the steps is what tells a stall from host work */
		if (s->method != CS_STEPS_PERIOD && x->first_kernel != CS_TS_UNKNOWN &&
		    t >= x->first_kernel && t <= x->last_kernel)
			continue;
		c_end = last_call_end(calls, ncalls, longest, c->launch_tid, t);
		if (c_end == CS_TS_UNKNOWN || t - c_end <= far)
			continue;
		from = c_end > prev ? c_end : prev;
		to = t < w.start ? t : w.start;
		if (to <= from)
			continue;
		cs_sat_accum(&x->stall_ns, to - from);
		x->copies++;
		cs_sat_accum(&x->bytes, c->bytes);
		if (c->src_kind == CS_MEM_PAGEABLE)
			x->pageable++;
		if (t - c_end > x->stretch_ns) {
			x->stretch_ns = t - c_end;
			x->copy = w.index;
		}
	}
}

static int64_t median_field(const struct step_sum *sum, const int32_t *steps, int32_t n,
			    size_t offset, int64_t *tmp)
{
	return ru_median_field(sum, sizeof(*sum), steps, n, offset, tmp);
}

static int emit_finding(cs_rule_ctx *ctx, const struct step_sum *sum, int32_t *steps,
			int32_t nsteps, int64_t far, const struct ru_recur *r, int64_t *tmp,
			cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	cs_report_finding *f = NULL;
	cJSON *e;
	int64_t stretch, stall, copies, bytes, pageable = 0, all = 0, best = -1;
	char title[480], b1[32], b2[32], b3[32], near1[96], near2[96], rare[200];

	stretch = median_field(sum, steps, nsteps, offsetof(struct step_sum, stretch_ns), tmp);
	stall = median_field(sum, steps, nsteps, offsetof(struct step_sum, stall_ns), tmp);
	copies = median_field(sum, steps, nsteps, offsetof(struct step_sum, copies), tmp);
	bytes = median_field(sum, steps, nsteps, offsetof(struct step_sum, bytes), tmp);
	for (int32_t i = 0; i < nsteps; i++) {
		const struct step_sum *x = &sum[steps[i]];

		pageable += x->pageable;
		all += x->copies;
		if (x->copy >= 0 && (best < 0 || x->stretch_ns > sum[best].stretch_ns))
			best = steps[i];
	}
	ru_recur_near_text(r, near1, sizeof(near1), near2, sizeof(near2));
	if (r->recurring)
		snprintf(
			title, sizeof(title),
			"GPU idle at the start of the step while the host prepares the next batch: "
			"%s per step (%.1f%%), the training thread making no CUDA call for %s "
			"before the batch's copy to the device%s%s",
			ru_fmt_ns(b1, sizeof(b1), r->lost), r->share * 100,
			ru_fmt_ns(b2, sizeof(b2), stretch), near1, near2);
	else {
		ru_recur_rare_text(r, nsteps, stall, rare, sizeof(rare));
		snprintf(title, sizeof(title),
			 "GPU idle at a step start while the host prepares the next batch (no CUDA "
			 "call for %s) %s%s",
			 ru_fmt_ns(b3, sizeof(b3), stretch), rare, near1);
	}
	f = cs_finding_new(
		RULE_ID, r->near ? CS_SEV_INFO : ru_severity(r->share), title,
		r->recurring
			? "Have the next batch ready before the step asks for it: load it in "
			  "DataLoader worker processes (num_workers of a few per GPU, "
			  "prefetch_factor "
			  "for uneven batches), pin_memory=True with .to(device, "
			  "non_blocking=True), "
			  "persistent_workers=True; move per-item CPU work (decoding, "
			  "augmentation) "
			  "out of the training process or onto the GPU."
			: "A stall in a few steps only: with a DataLoader, persistent_workers=True "
			  "keeps the workers (and their prefetched batches) across epochs; "
			  "otherwise "
			  "prepare the batches of those steps ahead (num_workers, "
			  "prefetch_factor).");
	if (!f)
		goto nomem;
	if (cs_finding_set_steps(f, steps, nsteps))
		goto nomem;
	f->lost_ns_per_step = r->lost;
	f->step_share = r->share;
	f->first = s->v[steps[0]].start;
	f->last = s->v[steps[nsteps - 1]].end;
	if (best >= 0)
		f->stack_id = a->copies[sum[best].copy].stack_id;
	e = f->evidence;
	cJSON_AddNumberToObject(e, "stall_ns_per_step", (double)stall);
	cJSON_AddNumberToObject(e, "no_call_stretch_ns", (double)stretch);
	cJSON_AddNumberToObject(e, "launch_pace_far_ns", (double)far);
	cJSON_AddNumberToObject(e, "h2d_copies_per_step", (double)copies);
	cJSON_AddNumberToObject(e, "h2d_bytes_per_step", (double)bytes);
	cJSON_AddNumberToObject(e, "pageable_copy_share", all > 0 ? (double)pageable / all : 0);
	cJSON_AddNumberToObject(e, "steady_steps", cs_steps_steady(s));
	cJSON_AddNumberToObject(e, "affected_steps", nsteps);
	ru_recur_evidence(e, r, nsteps);
	return ru_emit(ctx, f, err);
nomem:
	cs_finding_free(f);
	return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
}

static int run(cs_rule_ctx *ctx, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	struct step_sum *sum = NULL;
	struct call *calls = NULL;
	int64_t ncalls = 0, longest = 0, far = 0, *cost = NULL, *tmp = NULL;
	int32_t *steps = NULL, nsteps = 0;
	struct ru_recur r;
	int rc = 0;

	if (cs_steps_steady(s) <= 0 || a->ncopies == 0)
		return 0;
	sum = calloc((size_t)s->n + 1, sizeof(*sum));
	cost = calloc((size_t)s->n + 1, sizeof(*cost));
	tmp = calloc((size_t)s->n + 1, sizeof(*tmp));
	if (!sum || !cost || !tmp || collect_calls(a, s->pid, &calls, &ncalls, &longest, &far))
		goto nomem;
	step_kernels(a, s, sum);
	scan_stalls(a, s, calls, ncalls, longest, far, sum);
	for (int32_t i = 0; i < s->n; i++)
		cost[i] = sum[i].stall_ns;
	if (ru_steps_nonzero(s, cost, &steps, &nsteps))
		goto nomem;
	if (ru_recur_decide(s, ctx->step_median, cost, steps, &nsteps, 1, MIN_STEPS, MIN_STEP_SHARE,
			    RU_RARE_MIN_STEPS, RU_MIN_LOSS_SHARE, tmp, &r))
		rc = emit_finding(ctx, sum, steps, nsteps, far, &r, tmp, err);
	goto out;
nomem:
	rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory");
out:
	free(sum);
	free(cost);
	free(tmp);
	free(steps);
	free(calls);
	return rc;
}

const cs_analyzer cs_rule_dataloader_stall = {
	RULE_ID,
	"the GPU idles at the start of the steps while the training thread, making no CUDA "
	"call, prepares the next batch",
	"001 5.4, 6.1",
	run,
};
