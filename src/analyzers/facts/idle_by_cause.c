/*
 * idle_by_cause.c - the GPU idle of a process's steady steps by cause (facts/idle_by_cause.h).
 *
 * One pass over the process's GPU work in start order finds each gap the host caused (the work
 * was launched only after the GPU ran out of the earlier work) and splits its idle among causes
 * (launch overhead, host work, host waits, the input pipeline, pageable copies, allocator calls),
 * each nanosecond to one; the gaps that d2h-sync charges to a device-to-host wait are its own
 * cause. docs/rules/launch-starvation.md has the decision and the measured values.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/checked.h"
#include "cuscope/grow.h"
#include "cuscope/sort.h"
#include "d2h_waits.h"
#include "gpu_order.h"
#include "idle_by_cause.h"
#include "launch_calls.h"
#include "release_bursts.h"

/*
 * A time between two launch calls is host work, not the launch pace, beyond this many robust
 * standard deviations (1.4826 median absolute deviations) over the median time between calls:
 * for normally spread times 5 of them are passed once in 3.5 million, so the host's ordinary
 * per-op time (Python, dispatcher) stays launch overhead and only a stretch of other work passes.
 */
#define FAR_K 5.0

/* The causes' names in the evidence and the JSON report (cs_idle_cause_name()). */
static const char *const cause_key[CS_IDLE_NCAUSES] = {
	"launch_overhead", "host_work",	     "host_wait",     "input_pipeline",
	"pageable_copy",   "after_d2h_sync", "allocator_call"};

const char *cs_idle_cause_name(int cause)
{
	return cause >= 0 && cause < CS_IDLE_NCAUSES ? cause_key[cause] : "?";
}

/* Host intervals by start: the process's host waits, or its pageable copy calls. */
struct iv {
	int64_t s, e;
};
/* by start (stable) */
static const cs_sort_key iv_key = {offsetof(struct iv, s), CS_KEY_I64};
struct ivs {
	struct iv *v;
	int64_t n, cap, longest;
	int64_t hint; /* the last search's answer: the gaps' searches come in time order */
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
static int64_t ivs_from(struct ivs *x, int64_t t)
{
	return cs_lower_bound_near_i64(x->v, sizeof(*x->v), x->n, t - x->longest, &x->hint);
}

/* 1 when time t lies in one of the intervals. */
static int ivs_holds(struct ivs *x, int64_t t)
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
	int64_t hint;	/* the last search's answer (call_before()) */
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
		int64_t ls = lc->v[i].start, le = fact_launch_call_end(lc, &lc->v[i]), e;

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
static int64_t call_before(struct calls *c, int64_t t)
{
	int64_t lo = cs_lower_bound_near_i64(c->v, sizeof(*c->v), c->n, t, &c->hint);

	return lo > 0 ? c->reach[lo - 1] : CS_TS_UNKNOWN;
}

/* Kernel launch calls per step: graph launches (distinct launch times of graph kernels) once. */
static int count_launches(const cs_analysis *a, const cs_steps *s, struct fact_idle_step *acc)
{
	struct cs_i64s g = {0};
	struct fact_steady_kernels it;
	const cs_a_kernel *k;
	int64_t t;
	int st;

	for (int32_t i = 0; i < s->n; i++)
		acc[i].first_kernel = acc[i].last_kernel = CS_TS_UNKNOWN;
	fact_steady_kernels_init(&it, a, s);
	while ((st = fact_steady_kernel_next(&it, &k, &t)) >= 0) {
		acc[st].kernels++;
		fact_span_widen(&acc[st].first_kernel, &acc[st].last_kernel, t);
		if (!k->graph || k->launch_start == CS_TS_UNKNOWN) {
			acc[st].launches++;
			continue;
		}
		acc[st].graph_kernels++;
		if (cs_i64s_push(&g, k->launch_start))
			return CS_ERR_NOMEM;
	}
	if (g.n > 1)
		cs_sort_i64(g.v, (size_t)g.n);
	for (int64_t i = 0; i < g.n; i++)
		if (i == 0 || g.v[i] != g.v[i - 1])
			acc[cs_steps_find_steady(s, g.v[i])].launches++;
	cs_i64s_free(&g);
	return 0;
}

struct gap_ctx {
	struct ivs *waits, *pages, *allocs;
	int64_t lag; /* fact_gpu_launch_lag() */
	struct calls calls;
	struct cs_i64s cut;
};

/* Did the launch call at ls follow a stretch without launch calls far longer than the pace? */
static int after_far_stretch(struct calls *calls, int64_t ls)
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
	struct ivs *set[3] = {c->pages, c->waits, c->allocs};
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
	if (c->cut.n > 1)
		cs_sort_i64(c->cut.v, (size_t)c->cut.n);
	for (int64_t i = 0; i + 1 < c->cut.n; i++) {
		int64_t t = c->cut.v[i], len = c->cut.v[i + 1] - t;
		enum cs_idle_cause k;

		if (len <= 0)
			continue;
		if (ivs_holds(c->pages, t))
			k = CS_IDLE_PAGEABLE;
		else if (ivs_holds(c->waits, t))
			k = CS_IDLE_WAIT;
		else if (ivs_holds(c->allocs, t) || t >= aend)
			k = CS_IDLE_ALLOC;
		else if (input)
			k = CS_IDLE_INPUT;
		else if (t >= h0 && t < h1)
			k = CS_IDLE_HOST;
		else
			k = CS_IDLE_LAUNCH;
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
			  int input, int d2h, struct fact_idle_step *acc)
{
	while (g0 < g1) {
		int st = cs_steps_find(s, g0);
		int64_t e = g1, part[CS_IDLE_NCAUSES] = {0};

		if (st < 0)
			break;
		if (s->v[st].end < e)
			e = s->v[st].end;
		if (e <= g0)
			break;
		if (d2h)
			part[CS_IDLE_D2H] = e - g0;
		else if (charge_gap(gc, g0, e, ls, input, part))
			return CS_ERR_NOMEM;
		for (int c = 0; !s->v[st].warmup && c < CS_IDLE_NCAUSES; c++)
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

	for (int c = 0; c < CS_IDLE_NCAUSES; c++)
		if (c != CS_IDLE_D2H && c != CS_IDLE_INPUT && c != CS_IDLE_ALLOC)
			n = cs_sat_add(n, part[c]);
	return n;
}

/*
 * The starved gaps of the steady steps into acc: each charged to the step of the work that ends it
 * (the rule's way, with late() told of the work), or with by_time to the steps whose spans hold it
 * (charge_by_time).
 */
static int scan_gaps(const cs_analysis *a, const cs_steps *s, struct gap_ctx *gc,
		     const struct cs_i64s *wfrom, const struct cs_i64s *wto,
		     struct fact_idle_step *acc, int by_time, fact_idle_late_fn late, void *arg)
{
	struct fact_gpu_iter it;
	struct fact_gpu_work w;
	int64_t reach = CS_TS_UNKNOWN, p = 0;
	int hint = -1;

	fact_gpu_iter_init(&it, a, s->pid);
	while (fact_gpu_next(&it, &w)) {
		int64_t launched = fact_gpu_launched(&w), prev = reach, gap, t;
		int64_t part[CS_IDLE_NCAUSES] = {0};
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
		    fact_gpu_queued(&w, gc->lag, prev))
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
			part[CS_IDLE_D2H] = gap;
		else if (charge_gap(gc, prev, w.start, w.launch_start, input, part))
			return CS_ERR_NOMEM;
		for (int c = 0; c < CS_IDLE_NCAUSES; c++)
			if (part[c] > 0) {
				cs_sat_accum(&acc[st].idle[c], part[c]);
				acc[st].gaps[c]++;
			}
		/* the gap's line: the launch that came late, with the gap's idle but d2h-sync's
		 * and the input pipeline's (the finding's cost) */
		if (late && counted_part(part) > 0 && late(arg, &w, st, counted_part(part)))
			return CS_ERR_NOMEM;
		if (part[CS_IDLE_D2H] == 0 && gap > acc[st].biggest_gap) {
			acc[st].biggest_gap = gap;
			acc[st].biggest_next = w.is_kernel ? w.index : -1;
		}
	}
	return 0;
}

/* What a scan of a process's starved gaps reads: the host intervals, the launch calls and the
 * windows d2h-sync charges. */
struct fact_idle_inputs {
	struct cs_i64s wfrom, wto;
	struct ivs waits, pages, allocs;
	struct gap_ctx gc;
};

void fact_idle_scan_free(struct fact_idle_scan *sc)
{
	struct fact_idle_inputs *in = sc->in;

	if (in) {
		free(in->waits.v);
		free(in->pages.v);
		free(in->allocs.v);
		cs_i64s_free(&in->gc.cut);
		free(in->gc.calls.reach);
		cs_i64s_free(&in->wfrom);
		cs_i64s_free(&in->wto);
		free(in);
	}
	free(sc->acc);
	memset(sc, 0, sizeof(*sc));
}

int fact_idle_scan_prepare(const cs_analysis *a, const cs_steps *s, const struct fact_waits *d,
			   const struct fact_launch_calls *lc, int64_t lag,
			   struct fact_idle_scan *sc)
{
	struct fact_idle_inputs *in;

	memset(sc, 0, sizeof(*sc));
	sc->in = in = calloc(1, sizeof(*in));
	if (!in)
		return CS_ERR_NOMEM;
	in->gc.waits = &in->waits;
	in->gc.pages = &in->pages;
	in->gc.allocs = &in->allocs;
	in->gc.lag = lag;
	sc->acc = calloc((size_t)s->n + 1, sizeof(*sc->acc));
	if (!sc->acc || host_intervals(a, s->pid, &in->waits, &in->pages, &in->allocs) ||
	    d2h_windows(d, &in->wfrom, &in->wto) || launch_calls(lc, &in->gc.calls) ||
	    count_launches(a, s, sc->acc))
		return CS_ERR_NOMEM;
	return 0;
}

int fact_idle_scan_gaps(const cs_analysis *a, const cs_steps *s, struct fact_idle_scan *sc,
			fact_idle_late_fn late, void *arg)
{
	struct fact_idle_inputs *in = sc->in;

	return scan_gaps(a, s, &in->gc, &in->wfrom, &in->wto, sc->acc, 0, late, arg);
}

int fact_idle_by_cause(const cs_analysis *a, const cs_steps *s, const struct fact_idle_scan *sc,
		       int64_t *idle)
{
	struct fact_idle_inputs *in = sc->in;
	struct fact_idle_step *acc = malloc(((size_t)s->n + 1) * sizeof(*acc));

	if (!acc)
		return CS_ERR_NOMEM;
	memcpy(acc, sc->acc, (size_t)s->n * sizeof(*acc));
	if (scan_gaps(a, s, &in->gc, &in->wfrom, &in->wto, acc, 1, NULL, NULL)) {
		free(acc);
		return CS_ERR_NOMEM;
	}
	for (int32_t i = 0; i < s->n; i++)
		for (int c = 0; c < CS_IDLE_NCAUSES; c++)
			idle[(size_t)i * CS_IDLE_NCAUSES + (size_t)c] = acc[i].idle[c];
	free(acc);
	return 0;
}
