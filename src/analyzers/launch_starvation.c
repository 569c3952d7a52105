/*
 * launch_starvation.c - the launch-starvation rule: inside steady-state steps the GPU keeps
 * running out of work because the host launches it too slowly: the next piece of GPU work was
 * launched only after the previous one had ended.
 *
 * One pass over the process's GPU work in start order finds each such starved gap and splits its
 * idle among causes (launch overhead, host work, host waits, the input pipeline, pageable copies),
 * each nanosecond to one; the gaps that d2h-sync already charges to a device-to-host wait are left
 * out of the decision and shown apart. docs/rules/launch-starvation.md has the decision, its
 * thresholds and the measured values.
 */
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_order.h"
#include "launch_calls.h"
#include "d2h_waits.h"
#include "release_bursts.h"
#include "cache.h"
#include "edits.h"
#include "finding_kit.h"
#include "sites.h"
#include "cuscope/sort.h"
#include "cuscope/grow.h"
#include "cuscope/checked.h"
#include "cuscope/launch_cost.h"

#define RULE_ID "launch-starvation"

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
/*
 * A time between two launch calls is host work, not the launch pace, beyond this many robust
 * standard deviations (1.4826 median absolute deviations) over the median time between calls:
 * for normally spread times 5 of them are passed once in 3.5 million, so the host's ordinary
 * per-op time (Python, dispatcher) stays launch overhead and only a stretch of other work passes.
 */
#define FAR_K 5.0
/* Call sites listed in the evidence. */
#define MAX_SITES 5

/* The causes are those of analyze.h (enum cs_idle_cause), which cs_steps_idle_by_cause() shares. */
enum cause {
	CAUSE_LAUNCH =
		CS_IDLE_LAUNCH,	   /* the last launch interval of a gap: launch calls one by one */
	CAUSE_HOST = CS_IDLE_HOST, /* the rest of a gap with no CUDA call in it: host work */
	CAUSE_WAIT = CS_IDLE_WAIT, /* the part of a gap the host spent in a wait */
	CAUSE_INPUT = CS_IDLE_INPUT, /* a gap before the H2D copies at a step's boundary */
	CAUSE_PAGEABLE =
		CS_IDLE_PAGEABLE,    /* the part of a gap a pageable copy call held the host */
	CAUSE_D2H = CS_IDLE_D2H,     /* charged by d2h-sync: not counted here */
	CAUSE_ALLOC = CS_IDLE_ALLOC, /* a device allocator call holding the host: allocator-churn's
					cost, counted in the decision, not in the cost */
	NCAUSES = CS_IDLE_NCAUSES,
};

static const char *const cause_key[NCAUSES] = {"launch_overhead", "host_work",	   "host_wait",
					       "input_pipeline",  "pageable_copy", "after_d2h_sync",
					       "allocator_call"};

const char *cs_idle_cause_name(int cause)
{
	return cause >= 0 && cause < NCAUSES ? cause_key[cause] : "?";
}

struct step_acc {
	int64_t idle[NCAUSES];
	int64_t gaps[NCAUSES]; /* gaps with some of their idle charged to the cause */
	int64_t work;	       /* kernels, copies and memsets that ran */
	int64_t work_ns;       /* their summed duration */
	int64_t launches;      /* host launch calls: one per kernel, one per graph launch */
	int64_t kernels;       /* kernels launched in the step */
	int64_t graph_kernels; /* of them replayed from a CUDA graph */
	int64_t biggest_gap;   /* the largest counted gap */
	int64_t biggest_next;  /* kernel index after it, or -1 */
	int64_t first_kernel;  /* launch time of the step's first and last kernel */
	int64_t last_kernel;
};

/* Host intervals by start: the process's host waits, or its pageable copy calls. */
struct iv {
	int64_t s, e;
};
/* by start (stable) */
static const cs_sort_key iv_key = {offsetof(struct iv, s), CS_KEY_I64};
struct ivs {
	struct iv *v;
	int64_t n, cap, longest;
};

static int ivs_push(struct ivs *x, int64_t s, int64_t e)
{
	if (e <= s)
		return 0;
	if (x->n == (int64_t)x->cap) {
		int64_t cap = x->cap ? x->cap * 2 : 64;
		struct iv *v = realloc(x->v, (size_t)cap * sizeof(*v));

		if (!v)
			return CS_ERR_NOMEM;
		x->v = v;
		x->cap = cap;
	}
	x->v[x->n].s = s;
	x->v[x->n++].e = e;
	if (e - s > x->longest)
		x->longest = e - s;
	return 0;
}

/* First interval that may overlap [t, ...): every earlier one starts before t - longest. */
static int64_t ivs_from(const struct ivs *x, int64_t t)
{
	int64_t lo = 0, hi = x->n;

	t -= x->longest;
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (x->v[mid].s < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* 1 when time t lies in one of the intervals. */
static int ivs_holds(const struct ivs *x, int64_t t)
{
	for (int64_t i = ivs_from(x, t); i < x->n && x->v[i].s <= t; i++)
		if (t < x->v[i].e)
			return 1;
	return 0;
}

/* Host waits of the process (stream/context/event synchronize, synchronous memcpy) and the host
 * time of its pageable copy calls, each sorted by start. */
static int host_intervals(const cs_analysis *a, uint32_t pid, struct ivs *waits, struct ivs *pages,
			  struct ivs *allocs)
{
	struct fact_alloc_calls calls = {0};

	if (fact_alloc_calls(a, pid, 1, &calls))
		return CS_ERR_NOMEM;
	for (int64_t k = 0; k < calls.n; k++)
		if (ivs_push(allocs, a->apis[calls.v[k]].start, a->apis[calls.v[k]].end)) {
			fact_alloc_calls_free(&calls);
			return CS_ERR_NOMEM;
		}
	fact_alloc_calls_free(&calls);
	for (int64_t i = 0; i < a->nsyncs; i++) {
		const cs_a_sync *y = &a->syncs[i];

		if (y->pid != pid || !y->host_wait || y->start == CS_TS_UNKNOWN ||
		    y->end == CS_TS_UNKNOWN)
			continue;
		if (ivs_push(waits, y->start, y->end))
			return CS_ERR_NOMEM;
	}
	for (int64_t i = 0; i < a->ncopies; i++) {
		const cs_a_copy *c = &a->copies[i];

		if (c->pid != pid || c->is_memset || c->launch_start == CS_TS_UNKNOWN ||
		    c->launch_end == CS_TS_UNKNOWN ||
		    (c->src_kind != CS_MEM_PAGEABLE && c->dst_kind != CS_MEM_PAGEABLE))
			continue;
		if (ivs_push(pages, c->launch_start, c->launch_end))
			return CS_ERR_NOMEM;
	}
	cs_sort_records(waits->v, (size_t)waits->n, sizeof(*waits->v), &iv_key, 1);
	cs_sort_records(pages->v, (size_t)pages->n, sizeof(*pages->v), &iv_key, 1);
	return 0;
}

/* The windows d2h-sync charges, by start: [idle_start, window_end] of the waits that cost. */
static int d2h_windows(const struct fact_waits *d, struct cs_i64s *from, struct cs_i64s *to)
{
	for (int64_t i = 0; i < d->n; i++) {
		const struct fact_wait *w = &d->v[i];

		if (w->step < 0 || fact_wait_cost(w) == 0)
			continue;
		if (cs_i64s_push(from, w->idle_start) || cs_i64s_push(to, w->window_end))
			return CS_ERR_NOMEM;
	}
	return 0;
}

/*
 * The process's launch calls (kernels, copies, memsets; the kernels of one graph launch are one
 * call), by start, with the latest end of a call so far, and the host's usual time between two of
 * them: the median of the time from the end of one call to the start of the next (0 when they
 * overlap, on several threads), measured in this trace. A stretch without launch calls longer
 * than far (FAR_K robust standard deviations over the usual) is not the host's launch pace.
 */
struct calls {
	const struct fact_launch_call *v; /* the launch calls fact, by start */
	int64_t n;
	int64_t *reach; /* reach[i]: the latest end of the calls of v[0..i] (see launch_calls()) */
	int64_t usual;	/* median time between two calls */
	int64_t far;	/* usual + FAR_K robust standard deviations: see launch_calls() */
};

/*
 * The calls of lc that count: the first of each start (with its end, one ns when unknown), in
 * order; each(call's start, the latest end of those before it, arg) for each.
 */
static void each_call(const struct fact_launch_calls *lc,
		      void (*each)(int64_t i, int64_t start, int64_t end, int64_t reach, void *arg),
		      void *arg)
{
	int64_t reach = CS_TS_UNKNOWN, prev = CS_TS_UNKNOWN;

	for (int64_t i = 0; i < lc->n; i++) {
		int64_t ls = lc->v[i].start, le = lc->v[i].end, e;

		e = le != CS_TS_UNKNOWN && le > ls ? le : ls + 1;
		if (ls == CS_TS_UNKNOWN || e <= ls || (prev != CS_TS_UNKNOWN && ls == prev))
			continue;
		each(i, ls, e, reach, arg);
		prev = ls;
		reach = reach != CS_TS_UNKNOWN && reach > e ? reach : e;
	}
}

/* the gaps from the latest end of the calls before each to its start (0 when they overlap) */
struct gaps {
	int64_t *v, n;
};

static void add_gap(int64_t i, int64_t start, int64_t end, int64_t reach, void *arg)
{
	struct gaps *g = arg;

	(void)i;
	(void)end;
	if (reach != CS_TS_UNKNOWN)
		g->v[g->n++] = start > reach ? start - reach : 0;
}

/* reach[] of struct calls at each call counted */
static void add_reach(int64_t i, int64_t start, int64_t end, int64_t before, void *arg)
{
	struct calls *c = arg;

	(void)start;
	c->reach[i] = before != CS_TS_UNKNOWN && before > end ? before : end;
}

static int launch_calls(const struct fact_launch_calls *lc, struct calls *c)
{
	struct gaps g = {malloc(((size_t)lc->n + 1) * sizeof(*g.v)), 0};

	/*
	 * The calls are the fact's, with the latest end so far beside each, and the pace comes
	 * from the gaps, made and dropped first: no copy of the millions of calls, and the gaps
	 * and the ends never in memory at once (this is the report's peak).
	 */
	if (!g.v)
		return CS_ERR_NOMEM;
	each_call(lc, add_gap, &g);
	/* millions of gaps, read in no order after: selected, not sorted */
	c->usual = cs_median_select_i64(g.v, g.n);
	/* the robust standard deviation: 1.4826 median absolute deviations */
	for (int64_t i = 0; i < g.n; i++)
		g.v[i] = g.v[i] > c->usual ? g.v[i] - c->usual : c->usual - g.v[i];
	c->far = c->usual +
		 cs_sat_from_double(FAR_K * 1.4826 * (double)cs_median_select_i64(g.v, g.n));
	free(g.v);
	c->v = lc->v;
	c->n = lc->n;
	c->reach = malloc(((size_t)lc->n + 1) * sizeof(*c->reach));
	if (!c->reach)
		return CS_ERR_NOMEM;
	for (int64_t k = 0; k < c->n; k++)
		c->reach[k] = CS_TS_UNKNOWN;
	each_call(lc, add_reach, c);
	/* a call not counted (another of the same start) has the reach of the one before */
	for (int64_t k = 1; k < c->n; k++)
		if (c->reach[k] == CS_TS_UNKNOWN)
			c->reach[k] = c->reach[k - 1];
	return 0;
}

/* End of the host's last launch call that started before t, or CS_TS_UNKNOWN. */
static int64_t call_before(const struct calls *c, int64_t t)
{
	int64_t lo = 0, hi = c->n;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (c->v[mid].start < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 ? c->reach[lo - 1] : CS_TS_UNKNOWN;
}

/* Kernel launch calls per step: graph launches (distinct launch times of graph kernels) once. */
static int count_launches(const cs_analysis *a, const cs_steps *s, struct step_acc *acc)
{
	struct cs_i64s g = {0};
	int hint = -1;

	for (int32_t i = 0; i < s->n; i++)
		acc[i].first_kernel = acc[i].last_kernel = CS_TS_UNKNOWN;
	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];
		int64_t t = cs_launch_time(k->launch_start, k->start);
		int st;

		if (k->pid != s->pid || (st = cs_steps_find_steady_near(s, t, &hint)) < 0)
			continue;
		acc[st].kernels++;
		if (acc[st].first_kernel == CS_TS_UNKNOWN || t < acc[st].first_kernel)
			acc[st].first_kernel = t;
		if (acc[st].last_kernel == CS_TS_UNKNOWN || t > acc[st].last_kernel)
			acc[st].last_kernel = t;
		if (!k->graph || k->launch_start == CS_TS_UNKNOWN) {
			acc[st].launches++;
			continue;
		}
		acc[st].graph_kernels++;
		if (cs_i64s_push(&g, k->launch_start))
			return CS_ERR_NOMEM;
	}
	ru_sort_i64(g.v, g.n);
	for (int64_t i = 0; i < g.n; i++)
		if (i == 0 || g.v[i] != g.v[i - 1])
			acc[cs_steps_find_steady(s, g.v[i])].launches++;
	cs_i64s_free(&g);
	return 0;
}

struct gap_ctx {
	const struct ivs *waits, *pages, *allocs;
	struct calls calls;
	struct cs_i64s cut;
	struct ru_sites sites; /* the work after each gap, with the idle the rule counts in it */
};

/* Did the launch call at ls follow a stretch without launch calls far longer than the pace? */
static int after_far_stretch(const struct calls *calls, int64_t ls)
{
	int64_t prev = ls != CS_TS_UNKNOWN ? call_before(calls, ls) : CS_TS_UNKNOWN;

	return prev != CS_TS_UNKNOWN && ls - prev > calls->far;
}

/*
 * Charges each nanosecond of the gap [g0, g1), ended by work whose launch call started at ls, to
 * one cause: the host time of a pageable copy call, else a host wait, else a device allocator call
 * or the rest of the gap after one that ended in it (cudaFree waits for the device: the host
 * relaunches into an empty queue, as after any wait), else (input set) the input pipeline, else
 * host work when the host had made no launch call for far longer than its usual
 * time between two calls (from the end of the previous call plus that usual time to ls), else
 * launch overhead.
 */
static int charge_gap(struct gap_ctx *c, int64_t g0, int64_t g1, int64_t ls, int input,
		      int64_t *out)
{
	const struct ivs *set[3] = {c->pages, c->waits, c->allocs};
	int64_t aend = INT64_MAX, h0 = g1, h1 = g1,
		prev = ls != CS_TS_UNKNOWN ? call_before(&c->calls, ls) : CS_TS_UNKNOWN;

	/* [h0, h1): the host's stretch without launch calls, beyond the usual, inside the gap,
	 * when it is far longer than the launch pace */
	if (prev != CS_TS_UNKNOWN && ls - prev > c->calls.far) {
		h0 = prev + c->calls.usual > g0 ? prev + c->calls.usual : g0;
		h1 = ls < g1 ? ls : g1;
		if (h1 < h0)
			h1 = h0 = g1;
	}
	c->cut.n = 0;
	if (cs_i64s_push(&c->cut, g0) || cs_i64s_push(&c->cut, g1) || cs_i64s_push(&c->cut, h0) ||
	    cs_i64s_push(&c->cut, h1))
		return CS_ERR_NOMEM;
	/* the first allocator call that ended inside the gap */
	for (int64_t i = ivs_from(c->allocs, g0); i < c->allocs->n && c->allocs->v[i].s < g1; i++)
		if (c->allocs->v[i].e > g0 && c->allocs->v[i].e < g1 && c->allocs->v[i].e < aend)
			aend = c->allocs->v[i].e;
	for (int k = 0; k < 3; k++)
		for (int64_t i = ivs_from(set[k], g0); i < set[k]->n && set[k]->v[i].s < g1; i++) {
			const struct iv *x = &set[k]->v[i];

			if (x->e <= g0)
				continue;
			if ((x->s > g0 && cs_i64s_push(&c->cut, x->s)) ||
			    (x->e < g1 && cs_i64s_push(&c->cut, x->e)))
				return CS_ERR_NOMEM;
		}
	ru_sort_i64(c->cut.v, c->cut.n);
	for (int64_t i = 0; i + 1 < c->cut.n; i++) {
		int64_t t = c->cut.v[i], len = c->cut.v[i + 1] - t;
		enum cause k;

		if (len <= 0)
			continue;
		if (ivs_holds(c->pages, t))
			k = CAUSE_PAGEABLE;
		else if (ivs_holds(c->waits, t))
			k = CAUSE_WAIT;
		else if (ivs_holds(c->allocs, t) || t >= aend)
			k = CAUSE_ALLOC;
		else if (input)
			k = CAUSE_INPUT;
		else if (t >= h0 && t < h1)
			k = CAUSE_HOST;
		else
			k = CAUSE_LAUNCH;
		out[k] += len;
	}
	return 0;
}

/*
 * Charge the gap [g0, g1) piece by piece to the steady step whose span holds each piece (the
 * pieces in no step or in a warm-up step to none): cs_steps_idle_by_cause()'s way, for a chart of
 * each step's time. d2h: the gap is d2h-sync's.
 */
static int charge_by_time(const cs_steps *s, struct gap_ctx *gc, int64_t g0, int64_t g1, int64_t ls,
			  int input, int d2h, struct step_acc *acc)
{
	while (g0 < g1) {
		int st = cs_steps_find(s, g0);
		int64_t e = g1, part[NCAUSES] = {0};

		if (st < 0)
			break;
		if (s->v[st].end < e)
			e = s->v[st].end;
		if (e <= g0)
			break;
		if (d2h)
			part[CAUSE_D2H] = e - g0;
		else if (charge_gap(gc, g0, e, ls, input, part))
			return CS_ERR_NOMEM;
		for (int c = 0; !s->v[st].warmup && c < NCAUSES; c++)
			if (part[c] > 0) {
				cs_sat_accum(&acc[st].idle[c], part[c]);
				acc[st].gaps[c]++;
			}
		g0 = e;
	}
	return 0;
}

/* The idle of a gap's parts that the finding's cost counts: all but d2h-sync's and the input
 * pipeline's. */
static int64_t counted_part(const int64_t *part)
{
	int64_t n = 0;

	for (int c = 0; c < NCAUSES; c++)
		if (c != CAUSE_D2H && c != CAUSE_INPUT && c != CAUSE_ALLOC)
			n = cs_sat_add(n, part[c]);
	return n;
}

/*
 * The starved gaps of the steady steps into acc: each charged to the step of the work that ends it
 * (the rule's way), or with by_time to the steps whose spans hold it (charge_by_time).
 */
static int scan_gaps(const cs_analysis *a, const cs_steps *s, struct gap_ctx *gc,
		     const struct cs_i64s *wfrom, const struct cs_i64s *wto, struct step_acc *acc,
		     int by_time)
{
	struct fact_gpu_iter it;
	struct fact_gpu_work w;
	int64_t reach = CS_TS_UNKNOWN, p = 0;
	int hint = -1;

	fact_gpu_iter_init(&it, a, s->pid);
	while (fact_gpu_next(&it, &w)) {
		int64_t launched = fact_gpu_launched(&w), prev = reach, gap, t;
		int64_t part[NCAUSES] = {0};
		int st = cs_steps_find_steady_near(s, t = cs_launch_time(w.launch_start, w.start),
						   &hint),
		    input, d2h;

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
		d2h = p < wto->n && wfrom->v[p] < w.start && prev <= wto->v[p];
		/* a host-to-device copy launched before the step's first kernel or after its last:
		 * the next batch going in. Steps found from the kernel sequence's period start at
		 * whichever kernel began the loop, so there the copy need not be at a boundary but
		 * must end a stretch without launch calls far longer than the launch pace, as
		 * dataloader-stall decides */
		input = !d2h && !w.is_kernel && a->copies[w.index].copy_kind == CS_COPY_HTOD &&
			(s->method == CS_STEPS_PERIOD
				 ? after_far_stretch(&gc->calls, w.launch_start)
				 : acc[st].first_kernel == CS_TS_UNKNOWN ||
					   t < acc[st].first_kernel || t > acc[st].last_kernel);
		if (by_time) {
			if (charge_by_time(s, gc, prev, w.start, w.launch_start, input, d2h, acc))
				return CS_ERR_NOMEM;
			continue;
		}
		if (d2h)
			part[CAUSE_D2H] = gap;
		else if (charge_gap(gc, prev, w.start, w.launch_start, input, part))
			return CS_ERR_NOMEM;
		for (int c = 0; c < NCAUSES; c++)
			if (part[c] > 0) {
				cs_sat_accum(&acc[st].idle[c], part[c]);
				acc[st].gaps[c]++;
			}
		/* the gap's line: the launch that came late, with the gap's idle but d2h-sync's
		 * and the input pipeline's (the finding's cost) */
		if (counted_part(part) > 0) {
			const cs_a_kernel *k = w.is_kernel ? &a->kernels[w.index] : NULL;
			const cs_a_copy *cp = w.is_kernel ? NULL : &a->copies[w.index];

			if (ru_sites_add(&gc->sites, k ? k->name_id : -1,
					 k ? k->launch_tid : cp->launch_tid,
					 k ? k->stack_id : cp->stack_id, st, counted_part(part)))
				return CS_ERR_NOMEM;
		}
		if (part[CAUSE_D2H] == 0 && gap > acc[st].biggest_gap) {
			acc[st].biggest_gap = gap;
			acc[st].biggest_next = w.is_kernel ? w.index : -1;
		}
	}
	return 0;
}

static int64_t counted(const struct step_acc *x)
{
	int64_t n = 0;

	for (int c = 0; c < NCAUSES; c++)
		if (c != CAUSE_D2H)
			n = cs_sat_add(n, x->idle[c]);
	return n;
}

/* The host's own idle in a step: every counted cause but the allocator calls. */
static int64_t host_idle(const struct step_acc *x)
{
	return cs_sat_sub(counted(x), x->idle[CAUSE_ALLOC]);
}

static const char *cause_words(int c)
{
	switch (c) {
	case CAUSE_HOST:
		return "host work between launches";
	case CAUSE_WAIT:
		return "host waits";
	case CAUSE_INPUT:
		return "the input pipeline (host work before host-to-device copies: of a batch, "
		       "dataloader-stall's cost, or of tensors made on the host, "
		       "host-created-tensor's)";
	case CAUSE_PAGEABLE:
		return "copies of pageable memory holding the host";
	case CAUSE_ALLOC:
		return "device allocator calls holding the host (the memory rules' cost)";
	default:
		return "launch overhead between short kernels launched one by one";
	}
}

/* The advice for one cause; graph: the kernels already run from CUDA graphs. */
static const char *cause_fix(int c, int graph)
{
	switch (c) {
	case CAUSE_HOST:
		return "Host work: take Python work out of the step or do it while the GPU runs "
		       "work queued ahead (precompute, fewer host-side tensor operations, logging "
		       "and checks every N steps).";
	case CAUSE_WAIT:
		return "Host waits: remove synchronize calls and blocking copies from the step, or "
		       "wait on an event as late as possible.";
	case CAUSE_INPUT:
		return "Input pipeline: have the next batch ready before the step needs it "
		       "(DataLoader num_workers and prefetch_factor, pin_memory, copies with "
		       "non_blocking=True), and make tensors on the device rather than on the "
		       "host (see dataloader-stall and host-created-tensor).";
	case CAUSE_PAGEABLE:
		return "Pageable copies: copy from pinned memory (pin_memory=True, "
		       "non_blocking=True) so that the copy call does not hold the host.";
	case CAUSE_ALLOC:
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

/*
 * The fix as an edit of the run (docs/replay.md): the kernels each thread launches in a step go
 * into one CUDA graph, launched by the first launch call; the others are not made, nor is the host
 * time before them on their thread (the Python between captured launches does not run). Kernels
 * already replayed from a graph are left as they are. 0 or CS_ERR_NOMEM.
 */
static int edit_graph(cs_report_finding *f, const cs_analysis *a, const cs_steps *s,
		      const int32_t *steps, int32_t n)
{
	struct launch_ref *v;
	int64_t nv = 0;
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
static int emit_finding(cs_rule_ctx *ctx, const struct step_acc *acc, const int32_t *steps,
			int32_t n, int64_t *tmp, int64_t med, int64_t lo, int64_t hi, int near,
			struct ru_sites *sites, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	cs_report_finding *f;
	cJSON *e, *by;
	int64_t lost, own, cause_med[NCAUSES], gaps_med[NCAUSES], work, work_ns, dur, best_gap = 0;
	int64_t launches, gk = 0, kernels = 0;
	int top = CAUSE_LAUNCH, rc = CS_ERR_NOMEM, graph, done[NCAUSES] = {0};
	int64_t rec, left_to_stall, host, busy;
	double share, busy_share, rec_launch_ns, net_share;
	char title[400], fix[1600] = "", b1[32], b2[32], b3[32], b4[256] = "", b5[32], b6[32];

	for (int32_t i = 0; i < n; i++)
		tmp[i] = counted(&acc[steps[i]]);
	lost = cs_median_i64(tmp, n);
	/* the input pipeline's idle is dataloader-stall's cost: counted in the decision, not in the
	 * cost (the median idle of the other causes) */
	for (int32_t i = 0; i < n; i++)
		tmp[i] = counted(&acc[steps[i]]) - acc[steps[i]].idle[CAUSE_INPUT] -
			 acc[steps[i]].idle[CAUSE_ALLOC];
	own = cs_median_i64(tmp, n);
	for (int c = 0; c < NCAUSES; c++) {
		for (int32_t i = 0; i < n; i++)
			tmp[i] = acc[steps[i]].idle[c];
		cause_med[c] = cs_median_i64(tmp, n);
		for (int32_t i = 0; i < n; i++)
			tmp[i] = acc[steps[i]].gaps[c];
		gaps_med[c] = cs_median_i64(tmp, n);
	}
	/* The main cause, once every median is known. */
	for (int c = 0; c < NCAUSES; c++)
		if (c != CAUSE_D2H && cause_med[c] > cause_med[top])
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
	done[CAUSE_D2H] = 1;
	for (int c = top; c >= 0;) {
		size_t len = strlen(fix);

		done[c] = 1;
		snprintf(fix + len, sizeof(fix) - len, "%s%s", len ? " " : "", cause_fix(c, graph));
		c = -1;
		for (int k = 0; k < NCAUSES; k++)
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
	f = cs_finding_new(
		RULE_ID, near ? CS_SEV_INFO : ru_severity(dur > 0 ? (double)own / (double)dur : 0),
		title, fix);
	if (!f)
		goto out;
	if (cs_finding_set_steps(f, steps, n))
		goto out;
	f->lost_ns_per_step = own;
	f->step_share = (double)own / (double)(ctx->step_median > 0 ? ctx->step_median : dur);
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

/* What one scan of a process's starved gaps holds: the host intervals, the launch calls, the
 * windows d2h-sync charges, and the sums per step (s->n of them). */
struct scan {
	struct cs_i64s wfrom, wto;
	struct ivs waits, pages, allocs;
	struct gap_ctx gc;
	struct step_acc *acc;
};

static void scan_free(struct scan *sc)
{
	free(sc->waits.v);
	free(sc->pages.v);
	free(sc->allocs.v);
	cs_i64s_free(&sc->gc.cut);
	free(sc->gc.calls.reach);
	ru_sites_free(&sc->gc.sites);
	cs_i64s_free(&sc->wfrom);
	cs_i64s_free(&sc->wto);
	free(sc->acc);
}

/*
 * Make what a scan of the starved gaps of the steady steps of s reads, with the device-to-host
 * waits d: the host intervals, the launch calls and the launches per step in sc->acc. 0 or
 * CS_ERR_NOMEM (sc is to be freed with scan_free() in both cases). The rule and the idle by
 * cause both scan the gaps, each on a copy of these sums (scan_idle()).
 */
static int scan_prepare(const cs_analysis *a, const cs_steps *s, const struct fact_waits *d,
			const struct fact_launch_calls *lc, struct scan *sc)
{
	memset(sc, 0, sizeof(*sc));
	sc->gc.waits = &sc->waits;
	sc->gc.pages = &sc->pages;
	sc->gc.allocs = &sc->allocs;
	sc->acc = calloc((size_t)s->n + 1, sizeof(*sc->acc));
	if (!sc->acc || host_intervals(a, s->pid, &sc->waits, &sc->pages, &sc->allocs) ||
	    d2h_windows(d, &sc->wfrom, &sc->wto) || launch_calls(lc, &sc->gc.calls) ||
	    count_launches(a, s, sc->acc))
		return CS_ERR_NOMEM;
	return 0;
}

/* The GPU idle of each step by cause (s->n * CS_IDLE_NCAUSES into idle) from a prepared scan,
 * which it leaves as it was. */
static int scan_idle(const cs_analysis *a, const cs_steps *s, struct scan *sc, int64_t *idle)
{
	struct step_acc *acc = malloc(((size_t)s->n + 1) * sizeof(*acc));

	if (!acc)
		return CS_ERR_NOMEM;
	memcpy(acc, sc->acc, (size_t)s->n * sizeof(*acc));
	if (scan_gaps(a, s, &sc->gc, &sc->wfrom, &sc->wto, acc, 1)) {
		free(acc);
		return CS_ERR_NOMEM;
	}
	for (int32_t i = 0; i < s->n; i++)
		for (int c = 0; c < NCAUSES; c++)
			idle[(size_t)i * CS_IDLE_NCAUSES + (size_t)c] = acc[i].idle[c];
	free(acc);
	return 0;
}

/* cs_steps_idle_by_cause() with the context's cache for the device-to-host waits, from the
 * prepared scan sc, or a scan of its own when sc is NULL */
static int idle_by_cause(cs_rule_ctx *ctx, struct cs_rule_cache *own, struct scan *sc,
			 int64_t *idle)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	const struct fact_launch_calls *lc;
	const struct fact_waits *d;
	struct scan mine;
	int rc;

	if (s->n > 0)
		memset(idle, 0, (size_t)s->n * CS_IDLE_NCAUSES * sizeof(*idle));
	if (cs_steps_steady(s) <= 0 || a->nkernels == 0)
		return 0;
	if (sc)
		return scan_idle(a, s, sc, idle);
	rc = ru_cached_d2h(ctx, own, &d);
	if (rc == 0)
		rc = ru_cached_launch_calls(ctx, own, &lc);
	if (rc)
		return rc;
	rc = scan_prepare(a, s, d, lc, &mine);
	if (rc == 0)
		rc = scan_idle(a, s, &mine, idle);
	scan_free(&mine);
	return rc;
}

int cs_steps_idle_by_cause(const cs_analysis *a, const cs_steps *s, int64_t *idle, cs_error *err)
{
	struct cs_rule_cache own = {0};
	cs_rule_ctx ctx = {a, s, 0, NULL, NULL, NULL, NULL, NULL};
	int rc = idle_by_cause(&ctx, &own, NULL, idle);

	ru_cache_free(&own);
	return rc ? cs_error_set(err, rc, "out of memory") : 0;
}

/* ru_cached_idle_by_cause() from the prepared scan sc (NULL: a scan of its own) */
static int cached_idle(cs_rule_ctx *ctx, struct cs_rule_cache *own, struct scan *sc,
		       const int64_t **out)
{
	struct cs_rule_cache *c = ctx->cache ? ctx->cache : own;

	if (!c->idle) {
		int64_t *idle = calloc((size_t)ctx->steps->n * CS_IDLE_NCAUSES + 1, sizeof(*idle));
		int rc = idle ? idle_by_cause(ctx, own, sc, idle) : CS_ERR_NOMEM;

		if (rc) {
			free(idle);
			return rc;
		}
		c->idle = idle;
	}
	*out = c->idle;
	return 0;
}

int ru_cached_idle_by_cause(cs_rule_ctx *ctx, struct cs_rule_cache *own, const int64_t **out)
{
	return cached_idle(ctx, own, NULL, out);
}

static int check(cs_rule_ctx *ctx, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	struct cs_rule_cache own = {0};
	const struct fact_waits *d;
	const struct fact_launch_calls *lc;
	const int64_t *idle;
	struct scan sc;
	struct step_acc *acc;
	int64_t *tmp = NULL, med, lo, hi;
	int near;
	int32_t *steps = NULL, n = 0, m = 0, steady = cs_steps_steady(s);
	int rc;

	if (steady <= 0 || a->nkernels == 0)
		return 0;
	rc = ru_cached_d2h(ctx, &own, &d);
	if (rc == 0)
		rc = ru_cached_launch_calls(ctx, &own, &lc);
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
	if (scan_prepare(a, s, d, lc, &sc) || !tmp || !steps)
		goto out;
	rc = cached_idle(ctx, &own, &sc, &idle);
	if (rc)
		goto out;
	rc = CS_ERR_NOMEM;
	if (scan_gaps(a, s, &sc.gc, &sc.wfrom, &sc.wto, sc.acc, 0))
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
	rc = emit_finding(ctx, acc, steps, n, tmp, med, lo, hi, near, &sc.gc.sites, err);
	goto done;
out:
	if (rc)
		cs_error_set(err, rc, "out of memory");
done:
	ru_cache_free(&own);
	scan_free(&sc);
	free(tmp);
	free(steps);
	return rc;
}

const cs_analyzer cs_rule_launch_starvation = {
	RULE_ID,
	"the GPU keeps running out of work inside the steps: the host launches kernels slower "
	"than they run",
	"000 #12, 001 6.3-6.4",
	check,
	CS_FACT_LAUNCH_CALLS | CS_FACT_WAITS,
};
