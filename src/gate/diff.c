/*
 * diff.c - the difference of a run against one or several baselines (`cuscope diff`: one, and
 * what `cuscope gate` judges): one row per metric and per kernel name, each with the threshold
 * that applies and how far past it the change is, most significant first; timing rows (wall and
 * GPU kinds) tested on the runs' per-step samples and, with two baselines or more, against the
 * baselines' run-to-run spread (stats.c; docs/ci.md, "How timing checks are judged"); the
 * findings matched by rule and title, those near their rule's threshold not gated; the JSON and
 * markdown forms of it.
 *
 * Step alignment: the step detector may take several training steps for one (docs/steps.md,
 * "Limits"), in one run and not the other. When the kernels that one run launches exactly once
 * per step run k times (k >= 2) in each step of the other, the other run's per-step values are
 * divided by k, so that both are compared per training step.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/host_speed.h"
#include "cuscope/escape.h"
#include "cuscope/grow.h"
#include "cuscope/analyze.h"
#include "cuscope/demangle.h"
#include "cuscope/gate.h"
#include "cuscope/utf8.h"

/* A kernel launched exactly once in this share of the steps is "once per step". */
#define ONCE_SHARE 0.8
/* Fewer steady-state steps than this make noisy medians: the diff says so. */
#define FEW_STEPS 10
/* Scores of exact metrics (no noise allowance) that changed: above every thresholded change. */
#define EXACT_SCORE 1e6

const char *cs_diff_row_label(const cs_diff_row *r)
{
	if (r->metric == CS_GM_KERNEL_TIME)
		return "kernel time";
	if (r->metric == CS_GM_KERNEL_COUNT)
		return "kernel launches";
	if (r->metric == CS_GM_HOST_GAP)
		return "host time before";
	return cs_metric_get(r->metric)->label;
}

const char *cs_diff_row_kernel(char *buf, size_t size, const cs_diff_row *r)
{
	if (r->place > 0)
		snprintf(buf, size, "launch %d of %s", (int)r->place, cs_demangle_short(r->kernel));
	else
		snprintf(buf, size, "%s", cs_demangle_short(r->kernel));
	return buf;
}

int cs_diff_finding_status(const cs_diff_finding *m)
{
	return !m->base ? 0 : !m->new_ ? 1 : 2;
}

/* ---- step alignment ---- */

static int cmp_name_ref(const void *pa, const void *pb)
{
	return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

/*
 * How many of fine's steps each step of coarse holds: the median count per step, in coarse, of
 * the kernels fine launches once per step, when it is near an integer k >= 2; else 1.
 */
static int steps_per_step(const cs_run *fine, const cs_run *coarse)
{
	double *v, median, k;
	int32_t n = 0;

	if (fine->nkernels == 0)
		return 1;
	v = malloc((size_t)fine->nkernels * sizeof(*v));
	if (!v)
		return 1;
	for (int32_t i = 0; i < fine->nkernels; i++) {
		const cs_run_kernel *fk = &fine->kernels[i], *ck;

		if (fk->once < ONCE_SHARE || fabs(fk->count_per_step - 1) > 0.1)
			continue;
		ck = cs_run_kernel_find(coarse, fk->name);
		v[n++] = ck ? ck->count_per_step : 0;
	}
	if (n == 0) {
		free(v);
		return 1;
	}
	median = cs_stat_median(v, n);
	free(v);
	k = floor(median + 0.5);
	if (k < 2 || fabs(median - k) > 0.25 || k > 1000)
		return 1;
	return (int)k;
}

/*
 * The scales of baseline b against new: how many compared steps each step found holds, and the
 * note that says so (when note is not NULL). Returns 0, or -1 when steps were found in one run
 * and not the other (the note says why).
 */
static int align_pair(const cs_run *b, const cs_run *n, double *bscale, double *nscale, char *note,
		      size_t size)
{
	int k;

	*bscale = *nscale = 1;
	if ((b->method == CS_STEPS_NONE) != (n->method == CS_STEPS_NONE)) {
		snprintf(
			note, size,
			"steps found in %s (%d) but not in %s: per-step values are not comparable; "
			"name the steps with NVTX ranges and --step-range",
			b->method != CS_STEPS_NONE ? "base" : "new",
			b->method != CS_STEPS_NONE ? b->steps : n->steps,
			b->method != CS_STEPS_NONE ? "new" : "base");
		return -1;
	}
	if (b->method == CS_STEPS_NONE)
		return 0;
	k = steps_per_step(b, n);
	if (k > 1) {
		*nscale = k;
		if (note)
			snprintf(
				note, size,
				"each step found in new holds %d of base's steps (the kernels base "
				"launches "
				"once per step run %d times): new's per-step values are divided by "
				"%d",
				k, k, k);
		return 0;
	}
	k = steps_per_step(n, b);
	if (k > 1) {
		*bscale = k;
		if (note)
			snprintf(note, size,
				 "each step found in base holds %d of new's steps (the kernels new "
				 "launches once per step run %d times): base's per-step values are "
				 "divided by %d",
				 k, k, k);
	}
	return 0;
}

/*
 * The scales of every baseline, in new's compared steps: new's scale is the one it has against
 * the first baseline; another baseline's is its own against new times new's over new's against
 * it.
 */
static void align_steps(cs_diff *d)
{
	d->comparable = 1;
	d->new_scale = d->base_scale = 1;
	for (int32_t i = 0; i < d->nbases; i++)
		d->base_scales[i] = 1;
	for (int32_t i = 0; i < d->nbases; i++) {
		double bs, ns;
		char other[320];

		if (align_pair(d->bases[i], d->new_, &bs, &ns, i == 0 ? d->note : other,
			       i == 0 ? sizeof(d->note) : sizeof(other)) < 0) {
			if (i > 0)
				snprintf(d->note, sizeof(d->note), "%.200s (baseline %.100s)",
					 other, d->bases[i]->path);
			d->comparable = 0;
			return;
		}
		if (i == 0) {
			d->new_scale = ns;
			d->base_scales[0] = bs;
		} else {
			d->base_scales[i] = bs * d->new_scale / ns;
		}
	}
	d->base_scale = d->base_scales[0];
}

/* Say so when a run has too few steady steps for steady medians. */
static void few_steps_note(cs_diff *d)
{
	const cs_run *b = d->base, *n = d->new_;
	const cs_run *few = b->steady <= n->steady ? b : n;
	size_t len = strlen(d->note);

	if (!d->comparable || few->method == CS_STEPS_NONE || few->steady >= FEW_STEPS)
		return;
	snprintf(d->note + len, sizeof(d->note) - len,
		 "%s%s has %d steady-state step%s: per-step values are noisy below %d",
		 len ? "; " : "", few == b ? "base" : "new", few->steady,
		 few->steady == 1 ? "" : "s", FEW_STEPS);
}

/* ---- rows ---- */

static int add_row(cs_diff *d, int32_t *cap, int metric, const char *kernel, double base,
		   double new_, const cs_threshold *t)
{
	cs_diff_row *r;

	if (d->nrows == *cap) {
		int32_t ncap = *cap ? *cap * 2 : 64;
		cs_diff_row *nv = realloc(d->rows, (size_t)ncap * sizeof(*nv));

		if (!nv)
			return CS_ERR_NOMEM;
		d->rows = nv;
		*cap = ncap;
	}
	r = &d->rows[d->nrows++];
	memset(r, 0, sizeof(*r));
	r->metric = metric;
	r->kernel = kernel;
	r->base = base;
	r->new_ = new_;
	r->t = *t;
	r->gated = t->gate;
	return 0;
}

/* delta, rel, score, worse and better of a row, by its floors. */
static void evaluate(cs_diff_row *r)
{
	const cs_metric_def *def = cs_metric_get(r->metric);
	double m, eps, s_abs, s_rel, bad;

	r->delta = r->new_ - r->base;
	r->rel = r->base != 0 ? r->delta / fabs(r->base) : 0;
	m = fabs(r->delta);
	eps = 1e-9 * (fabs(r->base) > 1 ? fabs(r->base) : 1);
	bad = def->higher_is_worse ? r->delta : -r->delta;
	r->score = 0;
	if (m <= eps)
		return;
	if (r->t.rel <= 0 && r->t.abs <= 0) {
		r->score = EXACT_SCORE + m;
	} else {
		s_abs = r->t.abs > 0 ? m / r->t.abs : HUGE_VAL;
		s_rel = r->t.rel > 0 ? (r->base != 0 ? fabs(r->rel) / r->t.rel : HUGE_VAL)
				     : HUGE_VAL;
		r->score = s_abs < s_rel ? s_abs : s_rel;
	}
	r->worse = r->score > 1 && bad > 0;
	r->better = r->score > 1 && bad < 0;
}

/* Regressions first, then improvements, then the rest; each most significant first; ties by
 * metric, then kernel name. */
static int cmp_row(const void *pa, const void *pb)
{
	const cs_diff_row *x = pa, *y = pb;
	int gx = x->worse ? 0 : x->better ? 1 : 2, gy = y->worse ? 0 : y->better ? 1 : 2;

	if (gx != gy)
		return gx < gy ? -1 : 1;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (fabs(x->rel) != fabs(y->rel))
		return fabs(x->rel) > fabs(y->rel) ? -1 : 1;
	if (x->metric != y->metric)
		return x->metric < y->metric ? -1 : 1;
	if (x->kernel && y->kernel)
		return strcmp(x->kernel, y->kernel);
	return 0;
}

/* The value of a metric of a run, per compared step. */
static double run_value(const cs_run *r, int metric, double scale)
{
	switch (metric) {
	case CS_GM_STEP_TIME:
		return (double)r->step_median / scale;
	case CS_GM_GPU_BUSY:
		return r->gpu_busy;
	case CS_GM_KERNEL_TOTAL:
		return r->kernel_total / scale;
	case CS_GM_LAUNCHES:
		return r->launches / scale;
	case CS_GM_HTOD_COUNT:
	case CS_GM_DTOH_COUNT:
	case CS_GM_DTOD_COUNT:
	case CS_GM_OTHER_COUNT:
	case CS_GM_MEMSET_COUNT:
		return r->copy_count[(metric - CS_GM_HTOD_COUNT) / 2] / scale;
	case CS_GM_HTOD_BYTES:
	case CS_GM_DTOH_BYTES:
	case CS_GM_DTOD_BYTES:
	case CS_GM_OTHER_BYTES:
	case CS_GM_MEMSET_BYTES:
		return r->copy_bytes[(metric - CS_GM_HTOD_BYTES) / 2] / scale;
	case CS_GM_PAGEABLE_COUNT:
		return r->pageable / scale;
	case CS_GM_HOST_WAITS:
		return r->host_waits / scale;
	case CS_GM_D2H_SYNCS:
		return r->d2h_syncs / scale;
	case CS_GM_ALLOCS:
		return r->allocs / scale;
	case CS_GM_FREES:
		return r->frees / scale;
	case CS_GM_PEAK_MEMORY:
		return (double)r->peak_memory;
	case CS_GM_FINDINGS:
		return r->nfindings;
	}
	return 0;
}

/* The value of a row's metric (or kernel) in a run, per compared step. */
static double row_value(const cs_run *r, const cs_diff_row *row, double scale)
{
	const cs_run_kernel *k;

	if (row->metric == CS_GM_HOST_GAP) {
		k = cs_run_gap_find(r, row->kernel, row->place);
		return k ? k->time_per_step / scale : 0;
	}
	if (row->metric != CS_GM_KERNEL_TIME && row->metric != CS_GM_KERNEL_COUNT)
		return run_value(r, row->metric, scale);
	k = cs_run_kernel_find(r, row->kernel);
	if (!k)
		return 0;
	return (row->metric == CS_GM_KERNEL_TIME ? k->time_per_step : k->count_per_step) / scale;
}

/*
 * The base value of a row: the mean of the baselines' for timing (wall and GPU) metrics, the
 * highest of them for the others (a value one baseline run had is within the program's range).
 */
static double base_value(const cs_diff *d, const cs_diff_row *row)
{
	int kind = cs_metric_get(row->metric)->kind;
	double sum = 0, high = -HUGE_VAL;

	for (int32_t i = 0; i < d->nbases; i++) {
		double v = row_value(d->bases[i], row, d->base_scales[i]);

		sum += v;
		if (v > high)
			high = v;
	}
	if (kind == CS_KIND_WALL || kind == CS_KIND_GPU ||
	    !cs_metric_get(row->metric)->higher_is_worse)
		return sum / d->nbases;
	return high;
}

static int kernel_rows(cs_diff *d, int32_t *cap, const cs_gate_config *c)
{
	struct name_ref {
		const char *name;
		double share;
	} *names = NULL;
	const cs_run *n = d->new_;
	int32_t nnames = 0, total = n->nkernels;
	int rc = CS_ERR_NOMEM;

	for (int32_t b = 0; b < d->nbases; b++)
		total += d->bases[b]->nkernels;
	names = malloc((size_t)(total > 0 ? total : 1) * sizeof(*names));
	if (!names)
		return rc;
	/* every kernel name of any run, with its highest share */
	for (int32_t b = 0; b <= d->nbases; b++) {
		const cs_run *r = b < d->nbases ? d->bases[b] : n;

		for (int32_t i = 0; i < r->nkernels; i++) {
			names[nnames].name = r->kernels[i].name;
			names[nnames++].share = r->kernels[i].share;
		}
	}
	cs_sort(names, (size_t)nnames, sizeof(*names), cmp_name_ref);
	for (int32_t i = 0; i < nnames;) {
		const char *name = names[i].name;
		double share = 0;
		const cs_threshold *t = cs_gate_kernel_threshold(c, name);
		const cs_run_kernel *kn = cs_run_kernel_find(n, name);
		cs_diff_row *r;

		for (; i < nnames && !strcmp(names[i].name, name); i++)
			if (names[i].share > share)
				share = names[i].share;
		if (add_row(d, cap, CS_GM_KERNEL_TIME, name, 0,
			    kn ? kn->time_per_step / d->new_scale : 0, t))
			goto out;
		r = &d->rows[d->nrows - 1];
		r->base = base_value(d, r);
		r->gated = t->gate && share >= t->min_share;
		if (add_row(d, cap, CS_GM_KERNEL_COUNT, name, 0,
			    kn ? kn->count_per_step / d->new_scale : 0, &c->t[CS_GM_KERNEL_COUNT]))
			goto out;
		r = &d->rows[d->nrows - 1];
		r->base = base_value(d, r);
	}
	rc = 0;
out:
	free(names);
	return rc;
}

/*
 * Host-bound runs: the places of new's step (the k-th launch of a kernel name, cs_run.gaps) whose
 * host time before the launch grew, at the baselines' host speed, past the host_gap threshold:
 * its relative part a share of the baselines' step time, its absolute part in ns (the row's
 * threshold becomes the larger, in ns; and the host floor of the place's own time). Only those
 * places get a row: a step has hundreds of
 * them. A place that a baseline lacks is not compared (the program changed there; the counts
 * and kernel rows say how).
 */
static int host_gap_rows(cs_diff *d, int32_t *cap, const cs_gate_config *c)
{
	const cs_threshold *t = &c->t[CS_GM_HOST_GAP];
	const cs_run *n = d->new_;
	double sn = d->host_speed > 0 ? d->host_speed : 1, step = 0;

	if (!d->host_bound || !d->comparable)
		return 0;
	for (int32_t b = 0; b < d->nbases; b++)
		step += (double)d->bases[b]->step_median / d->base_scales[b] /
			(d->host_speeds ? d->host_speeds[b] : 1) / d->nbases;
	for (int32_t i = 0; i < n->ngaps; i++) {
		const cs_run_kernel *g = &n->gaps[i];
		double base = 0, raw = 0, floor = fmax(t->rel * step, t->abs);
		int32_t b;

		for (b = 0; b < d->nbases; b++) {
			const cs_run_kernel *x = cs_run_gap_find(d->bases[b], g->name, g->place);
			double v;

			if (!x)
				break;
			v = x->time_per_step / d->base_scales[b];
			raw += v / d->nbases;
			base += v / (d->host_speeds ? d->host_speeds[b] : 1) / d->nbases;
		}
		/* neither one baseline nor a few show how much the place moves between runs (a
		 * clean run of 14 was 17.7% slower at one place, docs/ci.md): as a host-bound wall
		 * metric, it must also pass the host floor of its own time */
		floor = fmax(floor, d->host_floor * base);
		if (b < d->nbases || g->time_per_step / d->new_scale / sn - base <= floor)
			continue;
		if (add_row(d, cap, CS_GM_HOST_GAP, g->name, raw, g->time_per_step / d->new_scale,
			    t))
			return CS_ERR_NOMEM;
		d->rows[d->nrows - 1].place = g->place;
		d->rows[d->nrows - 1].t.rel = 0;
		d->rows[d->nrows - 1].t.abs = floor;
	}
	return 0;
}

/*
 * An exact count (both floors 0) that increased: is the increase more than one event over a
 * whole run? A periodic event (a log line with a read-back every 10 steps) adds 1/n to the mean
 * of n steps for each occurrence, and where the warm-up ends moves one occurrence in or out; so
 * the plain means of the runs must differ by more than 1/n_new + 1/n_base per step, on top of the
 * trimmed means' increase. The highest plain mean of the baselines, and their fewest steps.
 */
static int exact_increase(const cs_diff *d, const cs_diff_row *r)
{
	double base = 0, tol_base = 0, v;
	const cs_run *n = d->new_;

	for (int32_t i = 0; i < d->nbases; i++) {
		const cs_run *b = d->bases[i];

		v = b->plain[r->metric] / d->base_scales[i];
		if (i == 0 || v > base)
			base = v;
		v = b->steady > 0 ? 1.0 / (b->steady * d->base_scales[i]) : 0;
		if (v > tol_base)
			tol_base = v;
	}
	v = n->plain[r->metric] / d->new_scale;
	return v - base > tol_base + (n->steady > 0 ? 1.0 / (n->steady * d->new_scale) : 0) + 1e-9;
}

/* ---- the test of timing rows (docs/ci.md, "How timing checks are judged") ---- */

/* The per-step samples of a row's metric in a run (steady values each), or NULL: for a kernel's
 * row, the kernel's own in *k. */
static const double *row_samples(const cs_run *r, const cs_diff_row *row, const cs_run_kernel **k)
{
	*k = NULL;
	switch (row->metric) {
	case CS_GM_STEP_TIME:
		return r->step_samples;
	case CS_GM_GPU_BUSY:
		return r->busy_samples;
	case CS_GM_KERNEL_TOTAL:
		return r->kernel_samples;
	case CS_GM_KERNEL_TIME:
		*k = cs_run_kernel_find(r, row->kernel);
		return NULL;
	case CS_GM_HOST_GAP:
		*k = cs_run_gap_find(r, row->kernel, row->place);
		return NULL;
	}
	return NULL;
}

/* Samples of a run scaled to compared steps into v (r->steady values; zeros without any). */
static void scaled_samples(const cs_run *r, const cs_diff_row *row, double scale, double *v)
{
	const cs_run_kernel *k;
	const double *x = row_samples(r, row, &k);
	double f = row->metric == CS_GM_GPU_BUSY ? 1 : scale;

	for (int32_t i = 0; i < r->steady; i++)
		v[i] = x ? x[i] / f : 0;
	for (int32_t i = 0; k && i < k->nsamples; i++)
		if (k->sample_step[i] >= 0 && k->sample_step[i] < r->steady)
			v[k->sample_step[i]] = k->sample_ns[i] / f;
}

/* A wall value of a host-bound run taken at another host's speed: the step time of host work
 * divided by how much slower the run's host was (speed), the GPU busy share multiplied by it. */
static double at_host_speed(const cs_diff_row *r, double v, double speed)
{
	return r->metric == CS_GM_GPU_BUSY ? v * speed : v / speed;
}

/*
 * Test a timing row: Yuen's test of new's per-step samples against the baselines' (pooled), and
 * with two baselines or more, the new value against the prediction interval of the baselines'
 * values (their run-to-run spread). confidence: the lower of the two one-sided confidences that
 * new is worse. A change that is not significant at the diff's level is neither worse nor
 * better, and ranks at most at its threshold.
 */
static int test_row(cs_diff *d, cs_diff_row *r)
{
	const cs_metric_def *def = cs_metric_get(r->metric);
	int32_t nb = 0, k = d->nbases;
	double *xb, *xn, *vals, bad = def->higher_is_worse ? r->delta : -r->delta;
	double conf = 1;
	cs_stat_test st;
	int tested = 0;

	for (int32_t i = 0; i < k; i++)
		nb += d->bases[i]->steady;
	xb = malloc((size_t)(nb + 1) * sizeof(*xb));
	xn = malloc((size_t)(d->new_->steady + 1) * sizeof(*xn));
	vals = malloc((size_t)k * sizeof(*vals));
	if (!xb || !xn || !vals) {
		free(xb);
		free(xn);
		free(vals);
		return CS_ERR_NOMEM;
	}
	nb = 0;
	for (int32_t i = 0; i < k; i++) {
		scaled_samples(d->bases[i], r, d->base_scales[i], xb + nb);
		nb += d->bases[i]->steady;
		vals[i] = row_value(d->bases[i], r, d->base_scales[i]);
	}
	scaled_samples(d->new_, r, d->new_scale, xn);
	if (r->host_wall && d->host_speeds) {
		/* every baseline at the baselines' mean host speed (new below) */
		nb = 0;
		r->host_base = 0;
		for (int32_t i = 0; i < k; i++) {
			for (int32_t j = 0; j < d->bases[i]->steady; j++)
				xb[nb + j] = at_host_speed(r, xb[nb + j], d->host_speeds[i]);
			vals[i] = at_host_speed(r, vals[i], d->host_speeds[i]);
			r->host_base += vals[i] / k;
			nb += d->bases[i]->steady;
		}
	}
	if (r->host_wall && d->host_speed > 0) {
		/* new's samples as if its host had run at the baseline's speed */
		for (int32_t i = 0; i < d->new_->steady; i++)
			xn[i] = at_host_speed(r, xn[i], d->host_speed);
	}
	if (cs_stat_yuen(xb, nb, xn, d->new_->steady, &st)) {
		free(xb);
		free(xn);
		free(vals);
		return CS_ERR_NOMEM;
	}
	if (st.valid) {
		double cdf = cs_stat_t_cdf(st.t, st.df);

		conf = def->higher_is_worse ? cdf : 1 - cdf;
		tested = 1;
	}
	if (k >= 2) {
		double f = sqrt(1 + 1.0 / k), run_conf;

		if (r->host_wall && d->host_speeds && r->host_base > 0) {
			/* the change at the common host speed */
			double nv = at_host_speed(r, r->new_, d->host_speed);

			bad = def->higher_is_worse ? nv - r->host_base : r->host_base - nv;
		}
		r->spread = cs_stat_sd(vals, k);
		r->margin = cs_stat_t_quantile(d->confidence, k - 1) * r->spread * f;
		if (r->spread > 0)
			run_conf = cs_stat_t_cdf(bad / (r->spread * f), k - 1);
		else
			run_conf = bad > 0 ? 1 : bad < 0 ? 0 : 0.5;
		if (!tested || run_conf < conf)
			conf = run_conf;
		tested = 1;
	}
	free(xb);
	free(xn);
	free(vals);
	r->tested = tested;
	r->confidence = tested ? conf : 0;
	if (tested) {
		if (conf < d->confidence)
			r->worse = 0;
		if (1 - conf < d->confidence)
			r->better = 0;
		if (!r->worse && !r->better && r->score > 1)
			r->score = 1;
	}
	return 0;
}

/* Do two titles read the same once their numbers are masked? */
static int same_title(const char *x, const char *y)
{
	for (;;) {
		int dx = *x >= '0' && *x <= '9', dy = *y >= '0' && *y <= '9';

		if (dx != dy)
			return 0;
		if (dx) {
			while ((*x >= '0' && *x <= '9') ||
			       (*x == '.' && x[1] >= '0' && x[1] <= '9'))
				x++;
			while ((*y >= '0' && *y <= '9') ||
			       (*y == '.' && y[1] >= '0' && y[1] <= '9'))
				y++;
			continue;
		}
		if (*x != *y)
			return 0;
		if (!*x)
			return 1;
		x++;
		y++;
	}
}

/* Does finding f match one of run r's (same rule; same title up to numbers when strict)? */
static const cs_run_finding *find_match(const cs_run *r, const cs_run_finding *f, int strict)
{
	for (int32_t j = 0; j < r->nfindings; j++)
		if (!strcmp(r->findings[j].rule, f->rule) &&
		    (!strict || same_title(r->findings[j].title, f->title)))
			return &r->findings[j];
	return NULL;
}

/*
 * Match findings: same rule and same title up to its numbers first, then same rule (in order of
 * cost), against the first baseline. What is left in new is new unless another baseline has a
 * finding of its rule (then it is persisting), what is left in the first baseline is fixed.
 */
static int match_findings(cs_diff *d)
{
	const cs_run *b = d->base, *n = d->new_;
	int32_t *pair = malloc((size_t)(n->nfindings + 1) * sizeof(*pair));
	const cs_run_finding **other = calloc((size_t)n->nfindings + 1, sizeof(*other));
	char *used = calloc((size_t)b->nfindings + 1, 1);
	int32_t k = 0;

	d->findings = calloc((size_t)(b->nfindings + n->nfindings + 1), sizeof(*d->findings));
	if (!pair || !used || !other || !d->findings) {
		free(pair);
		free(used);
		free(other);
		return CS_ERR_NOMEM;
	}
	for (int pass = 0; pass < 2; pass++) {
		for (int32_t i = 0; i < n->nfindings; i++) {
			if (pass == 0)
				pair[i] = -1;
			if (pair[i] >= 0)
				continue;
			for (int32_t j = 0; j < b->nfindings; j++) {
				if (used[j] || strcmp(b->findings[j].rule, n->findings[i].rule))
					continue;
				if (pass == 0 &&
				    !same_title(b->findings[j].title, n->findings[i].title))
					continue;
				pair[i] = j;
				used[j] = 1;
				break;
			}
		}
	}
	for (int32_t i = 0; i < n->nfindings; i++)
		for (int32_t x = 1; pair[i] < 0 && x < d->nbases && !other[i]; x++)
			other[i] = find_match(d->bases[x], &n->findings[i], 0);
	for (int32_t i = 0; i < n->nfindings; i++)
		if (pair[i] < 0 && !other[i]) {
			d->findings[k++].new_ = &n->findings[i];
			d->nnew++;
			d->nnew_gated += !n->findings[i].near;
		}
	for (int32_t j = 0; j < b->nfindings; j++)
		if (!used[j]) {
			d->findings[k++].base = &b->findings[j];
			d->nfixed++;
		}
	for (int32_t i = 0; i < n->nfindings; i++)
		if (pair[i] >= 0 || other[i]) {
			d->findings[k].base = pair[i] >= 0 ? &b->findings[pair[i]] : other[i];
			d->findings[k++].new_ = &n->findings[i];
		}
	d->nfindings = k;
	free(pair);
	free(used);
	free(other);
	return 0;
}

/*
 * Several host-bound baselines, and a host-bound new run, all with a launch pace: each run's
 * speed against the baselines' mean pace (d->host_speeds, d->host_speed). 1 when set; 0 when a
 * run lacks the pace (or memory), and the wall metrics are then gated on their raw spread.
 */
static int several_host_speeds(cs_diff *d, const cs_gate_config *c)
{
	double mean = 0;

	if (d->nbases < 2 || d->new_->launch_pace <= 0 || d->new_->method == CS_STEPS_NONE ||
	    d->new_->gpu_busy >= c->host_bound)
		return 0;
	for (int32_t i = 0; i < d->nbases; i++) {
		if (d->bases[i]->launch_pace <= 0)
			return 0;
		mean += d->bases[i]->launch_pace / d->nbases;
	}
	d->host_speeds = malloc((size_t)d->nbases * sizeof(*d->host_speeds));
	if (!d->host_speeds)
		return 0;
	for (int32_t i = 0; i < d->nbases; i++)
		d->host_speeds[i] = d->bases[i]->launch_pace / mean;
	d->host_speed = d->new_->launch_pace / mean;
	return 1;
}

/*
 * Record's host-speed probes (cuscope/host_speed.h), when every run has one of a kind (the bare
 * launch where all have it, else the CPU work): new's index over the baselines' mean
 * (d->probe_ratio), how far the probes move by themselves (d->probe_noise: new's and the noisiest
 * baseline's), and whether the ratio is past that (d->probe_differs). The probes run outside the
 * program, before and after it: they do not replace the launch pace as the host's speed (on the
 * GPU machine they missed a slow state that the program's launch pace followed, docs/ci.md); they
 * only tell a change that a slower host explains from a regression (probe_inconclusive()).
 */
static void probe_speeds(cs_diff *d)
{
	double mean = 0, noise = 0;
	int kind = -1;

	for (int k = CS_PROBE_LAUNCH; k >= CS_PROBE_CPU && kind < 0; k--) {
		int all = d->new_->probe_ns[k] > 0;

		for (int32_t i = 0; all && i < d->nbases; i++)
			all = d->bases[i]->probe_ns[k] > 0;
		if (all)
			kind = k;
	}
	if (kind < 0)
		return;
	for (int32_t i = 0; i < d->nbases; i++) {
		mean += d->bases[i]->probe_ns[kind] / d->nbases;
		noise = fmax(noise, d->bases[i]->probe_noise[kind]);
	}
	d->probe = kind + 1;
	d->probe_ratio = d->new_->probe_ns[kind] / mean;
	d->probe_noise = d->new_->probe_noise[kind] + noise;
	d->probe_differs = fabs(d->probe_ratio - 1) > d->probe_noise;
}

/* The notes on how timing changes were tested, and on a host-bound baseline. */
static void test_notes(cs_diff *d, const cs_gate_config *c)
{
	char nb[64], bb[64];
	double busy[64];
	int32_t n = d->nbases < 64 ? d->nbases : 64;

	for (int32_t i = 0; i < n; i++)
		busy[i] = d->bases[i]->gpu_busy;
	d->base_busy = cs_stat_median(busy, n);
	d->host_bound = d->bases[0]->method != CS_STEPS_NONE && d->base_busy < c->host_bound;
	if (d->nbases == 1)
		snprintf(d->test_note, sizeof(d->test_note),
			 "one baseline: timing changes are tested on the per-step samples of both "
			 "runs (Yuen's test at %g%%); the run-to-run spread is unknown: give "
			 "several "
			 "baselines (--baseline repeated, or a directory)",
			 100 * d->confidence);
	else
		snprintf(d->test_note, sizeof(d->test_note),
			 "%d baselines: timing changes are tested on the per-step samples and "
			 "against the baselines' run-to-run spread (at %g%%)",
			 d->nbases, 100 * d->confidence);
	d->shared_gpu = d->new_->shared_gpu > CS_SHARED_GPU;
	for (int32_t i = 0; i < d->nbases; i++)
		if (d->bases[i]->shared_gpu > CS_SHARED_GPU)
			d->shared_gpu = 1;
	if (d->shared_gpu && d->nbases == 1)
		snprintf(d->shared_note, sizeof(d->shared_note),
			 "shared GPU: other processes' kernels ran during %.0f%% (baseline) and "
			 "%.0f%% (new) of this process's kernel time; its GPU times and GPU busy "
			 "share follow their work and are not gated against one baseline (give "
			 "several baselines to gate the total and the busy share on their spread)",
			 100 * d->base->shared_gpu, 100 * d->new_->shared_gpu);
	else if (d->shared_gpu)
		snprintf(
			d->shared_note, sizeof(d->shared_note),
			"shared GPU: other processes' kernels ran during %.0f%% (new) of this "
			"process's kernel time; its total kernel time and GPU busy share are gated "
			"against the baselines' run-to-run spread, single kernels' times not at "
			"all",
			100 * d->new_->shared_gpu);
	/* the launch pace measures the host only while its launches do not wait for the GPU: new
	 * must be host-bound too (a full launch queue makes each call wait for a kernel to finish)
	 */
	if (d->host_bound && d->nbases == 1 && d->base->launch_pace > 0 &&
	    d->new_->launch_pace > 0 && d->new_->method != CS_STEPS_NONE &&
	    d->new_->gpu_busy < c->host_bound) {
		d->host_speed = d->new_->launch_pace / d->base->launch_pace;
		snprintf(d->host_note, sizeof(d->host_note),
			 "host-bound: the GPU is busy %.0f%% of the baseline's step: wall metrics "
			 "(step time, GPU busy share) follow the host's speed; new's host launched "
			 "kernels at %.2fx the baseline's pace (median %s from one launch to the "
			 "next against %s), so they are compared with new's host taken at the "
			 "baseline's speed and fail only past %g%%; a change that slows every op "
			 "alike (a heavier launch path, more work per op) is taken for a slower "
			 "host "
			 "and hidden (give several baselines to gate them on their spread)",
			 100 * d->base_busy, d->host_speed,
			 cs_fmt_value(nb, sizeof(nb), CS_UNIT_NS, d->new_->launch_pace, 0),
			 cs_fmt_value(bb, sizeof(bb), CS_UNIT_NS, d->base->launch_pace, 0),
			 100 * c->host_floor);
	} else if (d->host_bound && d->nbases == 1 && d->base->launch_pace > 0 &&
		   d->new_->launch_pace > 0) {
		snprintf(d->host_note, sizeof(d->host_note),
			 "host-bound: the GPU is busy %.0f%% of the baseline's step: wall metrics "
			 "(step time, GPU busy share) follow the host's speed; with one baseline "
			 "they fail only past %g%%; new's GPU is busy %.0f%%, so its kernel "
			 "launches may wait for the GPU and do not measure its host's speed (give "
			 "several baselines to gate them on their spread)",
			 100 * d->base_busy, 100 * c->host_floor, 100 * d->new_->gpu_busy);
	} else if (d->host_bound && d->nbases == 1)
		snprintf(
			d->host_note, sizeof(d->host_note),
			"host-bound: the GPU is busy %.0f%% of the baseline's step: wall metrics "
			"(step time, GPU busy share) follow the host's speed; with one baseline "
			"they "
			"fail only past %g%% (give several baselines to gate them on their spread)",
			100 * d->base_busy, 100 * c->host_floor);
	else if (d->host_bound && several_host_speeds(d, c))
		snprintf(
			d->host_note, sizeof(d->host_note),
			"host-bound: the GPU is busy %.0f%% of the baselines' step: wall metrics "
			"(step time, GPU busy share) follow the host's speed, so every run's are "
			"taken at the baselines' mean host speed (its launch pace, the median time "
			"from one kernel launch to the next, over theirs: new %.2fx) and gated "
			"against the spread of the baselines so corrected, past %g%%; a change "
			"that slows every op alike is taken for a slower host and hidden",
			100 * d->base_busy, d->host_speed, 100 * c->host_floor);
	else if (d->host_bound)
		snprintf(d->host_note, sizeof(d->host_note),
			 "host-bound: the GPU is busy %.0f%% of the baselines' step: wall metrics "
			 "(step time, GPU busy share) follow the host's speed; they are gated "
			 "against "
			 "the baselines' run-to-run spread",
			 100 * d->base_busy);
	if (d->host_bound)
		probe_speeds(d);
	if (d->probe) {
		size_t len = strlen(d->host_note);

		snprintf(d->host_note + len, sizeof(d->host_note) - len,
			 "; record's host-speed probe (%s) took %.2fx the baseline%s time on new's "
			 "host (its own noise %.1f%%)%s",
			 d->probe == 1 + CS_PROBE_LAUNCH ? "a bare kernel launch" : "fixed CPU work",
			 d->probe_ratio, d->nbases > 1 ? "s'" : "'s", 100 * d->probe_noise,
			 d->probe_differs && d->probe_ratio > 1
				 ? ": a wall check that only so slow a host explains is "
				   "inconclusive, not a regression"
				 : "");
	}
}

/*
 * A wall metric of host-bound baselines when every run has a host-speed index (docs/ci.md,
 * "Host-bound runs"): the step time of a host-bound program is host work, which takes host_speed
 * times as long on new's host as on the baseline's (several: as on their mean); its GPU busy share
 * is fixed GPU work over that step. The change with the ratio taken out must pass the floor in
 * the bad (good) direction, and the test of the samples so corrected (test_row) must be
 * significant.
 */
static void host_wall_judge(cs_diff *d, cs_diff_row *r)
{
	const cs_metric_def *def = cs_metric_get(r->metric);
	/* several baselines: against their mean at the common speed (the test has the
	 * corrected spread); one: against its value; past the host floor either way (a clean
	 * run of 14 was 17% slower throughout, its probes unmoved: docs/ci.md) */
	double bad, conf = r->tested ? r->confidence : 0.5,
		    floor = fmax(d->host_speeds ? r->t.rel : 0, d->host_floor),
		    base = d->host_speeds ? r->host_base : r->base;

	r->host_rel = base > 0 ? at_host_speed(r, r->new_, d->host_speed) / base - 1 : 0;
	bad = def->higher_is_worse ? r->host_rel : -r->host_rel;
	if (floor <= 0)
		floor = d->host_floor;
	r->worse = bad > floor && (!r->tested || conf >= d->confidence);
	r->better = -bad > floor && (!r->tested || 1 - conf >= d->confidence);
	if (r->worse || r->better) {
		if (r->score < fabs(r->host_rel) / floor)
			r->score = fabs(r->host_rel) / floor;
	} else if (r->score > 1) {
		r->score = 1;
	}
}

/*
 * A host_gap row (host_gap_rows()): worse when its growth at the baselines' host speed is past
 * the row's threshold (in ns) and the test of its samples (test_row, at the same speed) is
 * significant; never better (only grown places have rows).
 */
static void host_gap_judge(cs_diff *d, cs_diff_row *r)
{
	double nv = r->new_ / (d->host_speed > 0 ? d->host_speed : 1);
	double base = d->host_speeds && r->host_base > 0 ? r->host_base : r->base;
	double bad = nv - base;

	r->host_rel = base > 0 ? nv / base - 1 : 0;
	r->worse = bad > r->t.abs && (!r->tested || r->confidence >= d->confidence);
	r->better = 0;
	r->score = r->t.abs > 0 ? bad / r->t.abs : 0;
	if (!r->worse && r->score > 1)
		r->score = 1;
}

/*
 * A wall metric of host-bound runs on a host that the probes find slower than the baselines' past
 * their noise: when its change as recorded is past its floor in the bad direction (it would fail
 * without any host speed taken out) and it is not a regression at the launch pace's host speed or
 * at the probe's, the slower host alone explains it: inconclusive, neither a regression nor a pass
 * (docs/ci.md, "The host-speed probe").
 */
static void probe_inconclusive(cs_diff *d, cs_diff_row *r)
{
	const cs_metric_def *def = cs_metric_get(r->metric);
	double floor = d->host_speeds ? r->t.rel : d->host_floor;
	double base = d->host_speeds && r->host_base > 0 ? r->host_base : r->base, raw, bad, at;

	if (!r->host_wall || !d->probe_differs || d->probe_ratio <= 1 || r->base <= 0 || base <= 0)
		return;
	if (floor <= 0)
		floor = d->host_floor;
	raw = r->new_ / r->base - 1;
	bad = def->higher_is_worse ? raw : -raw;
	if (bad <= floor)
		return;
	at = at_host_speed(r, r->new_, d->probe_ratio) / base - 1;
	if (r->worse && (def->higher_is_worse ? at : -at) > floor)
		return;
	r->worse = 0;
	r->inconclusive = 1;
}

int cs_diff_compute(const cs_run *const *bases, int32_t nbases, const cs_run *new_,
		    const cs_gate_config *c, cs_diff *out, cs_error *err)
{
	int32_t cap = 0;
	int rc = CS_ERR_NOMEM;

	memset(out, 0, sizeof(*out));
	out->bases = bases;
	out->nbases = nbases;
	out->base = bases[0];
	out->new_ = new_;
	out->confidence = c->confidence;
	out->host_floor = c->host_floor;
	out->base_scales = malloc((size_t)nbases * sizeof(*out->base_scales));
	if (!out->base_scales)
		goto fail;
	align_steps(out);
	few_steps_note(out);
	test_notes(out, c);
	if (match_findings(out))
		goto fail;
	for (int m = 0; m < CS_GM_COUNT; m++) {
		if (m == CS_GM_KERNEL_TIME) {
			if (kernel_rows(out, &cap, c))
				goto fail;
			continue;
		}
		if (m == CS_GM_KERNEL_COUNT)
			continue;
		if (m == CS_GM_HOST_GAP) {
			if (host_gap_rows(out, &cap, c))
				goto fail;
			continue;
		}
		if (add_row(out, &cap, m, NULL, 0, run_value(new_, m, out->new_scale), &c->t[m]))
			goto fail;
		out->rows[out->nrows - 1].base = base_value(out, &out->rows[out->nrows - 1]);
	}
	for (int32_t i = 0; i < out->nrows; i++) {
		cs_diff_row *r = &out->rows[i];
		int kind = cs_metric_get(r->metric)->kind;

		/* host-bound baselines: a wall metric moves with the host (several: only with
		 * every run's host speed) */
		r->host_wall = kind == CS_KIND_WALL && out->host_bound &&
			       (nbases == 1 || out->host_speeds);
		evaluate(r);
		if ((kind == CS_KIND_WALL || kind == CS_KIND_GPU) && out->comparable &&
		    test_row(out, r))
			goto fail;
		if (kind == CS_KIND_COUNT && !r->kernel && r->t.rel <= 0 && r->t.abs <= 0 &&
		    r->worse && !exact_increase(out, r)) {
			r->worse = 0;
			r->score = 1;
		}
		if (r->metric == CS_GM_HOST_GAP) {
			host_gap_judge(out, r);
		} else if (r->host_wall && out->host_speed > 0) {
			host_wall_judge(out, r);
		} else if (r->host_wall) {
			/* only a change past the host floor fails */
			if (r->base == 0 || fabs(r->rel) <= c->host_floor) {
				r->worse = r->better = 0;
				if (r->score > 1)
					r->score = 1;
			}
		}
		if (r->gated)
			probe_inconclusive(out, r);
		if (out->shared_gpu && r->metric != CS_GM_HOST_GAP &&
		    (r->kernel ||
		     ((kind == CS_KIND_GPU || r->metric == CS_GM_GPU_BUSY) && nbases == 1))) {
			/* a shared GPU: the other processes' work moves these (a single kernel's
			 * time by up to 2x in two ranks on one GPU), with one baseline all of them
			 */
			r->shared = 1;
			r->worse = r->better = 0;
			if (r->score > 1)
				r->score = 1;
		}
		if (r->metric == CS_GM_FINDINGS) {
			/* the new findings beyond their rule's margin count, whatever was fixed;
			 * absolute: how many may be new */
			r->worse = out->nnew_gated > r->t.abs;
			r->better = !r->worse && out->nfixed > 0;
			r->score = out->nnew || out->nfixed ? EXACT_SCORE + out->nnew + out->nfixed
							    : 0;
		}
		if (r->gated) {
			out->checks++;
			out->failed += r->worse;
			out->inconclusive += r->inconclusive;
		}
	}
	cs_sort(out->rows, (size_t)out->nrows, sizeof(*out->rows), cmp_row);
	return 0;
fail:
	cs_diff_free(out);
	return cs_error_set(err, rc, "out of memory");
}

void cs_diff_free(cs_diff *d)
{
	free(d->rows);
	free(d->findings);
	free(d->base_scales);
	free(d->host_speeds);
	d->host_speeds = NULL;
	d->rows = NULL;
	d->findings = NULL;
	d->base_scales = NULL;
	d->nrows = d->nfindings = 0;
}

char *cs_diff_row_threshold(char *buf, size_t size, const cs_diff *d, const cs_diff_row *r)
{
	size_t n;

	cs_threshold_format(buf, size, r->metric, &r->t);
	n = strlen(buf);
	if (r->host_wall && r->gated && n < size && d->host_speeds)
		snprintf(buf + n, size - n, ", host-bound %+.1f%% at the baselines' host speed",
			 100 * r->host_rel);
	else if (r->host_wall && r->gated && n < size && d->host_speed > 0)
		snprintf(buf + n, size - n,
			 ", host-bound %s%g%% at the baseline's host speed (%+.1f%%)",
			 cs_metric_get(r->metric)->higher_is_worse ? "+" : "-", 100 * d->host_floor,
			 100 * r->host_rel);
	else if (r->host_wall && r->gated && n < size)
		snprintf(buf + n, size - n, ", host-bound %s%g%%",
			 cs_metric_get(r->metric)->higher_is_worse ? "+" : "-",
			 100 * d->host_floor);
	return buf;
}

/* The rank a run compares, for people (gate.h). */
const char *cs_run_rank_label(const cs_run *r, char *buf, size_t size)
{
	if (r->rank_select == CS_RANK_DEFAULT)
		snprintf(buf, size, "%s", "");
	else
		snprintf(buf, size, "rank %d%s", (int)r->rank,
			 r->rank_select == CS_RANK_SLOWEST ? ", the slowest" : "");
	return buf;
}
