/*
 * stats.c - the statistics of the gate's timing checks (docs/ci.md, "How timing checks are
 * judged"): Student's t distribution (its CDF through the regularized incomplete beta function,
 * its quantiles by bisection), Yuen's test (Welch's t on 10%-trimmed means with winsorized
 * variances) on the per-step samples of two runs, and the standard deviation of the baselines'
 * run values.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/gate.h"
#include "cuscope/grow.h"
#include "cuscope/sort.h"

/* Continued fraction of the incomplete beta function (modified Lentz). */
static double beta_cf(double a, double b, double x)
{
	const double tiny = 1e-300, eps = 1e-15;
	double c = 1, d = 1 - (a + b) * x / (a + 1), h;

	if (fabs(d) < tiny)
		d = tiny;
	d = 1 / d;
	h = d;
	for (int m = 1; m <= 300; m++) {
		double m2 = 2.0 * m, aa, del;

		aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
		d = 1 + aa * d;
		if (fabs(d) < tiny)
			d = tiny;
		c = 1 + aa / c;
		if (fabs(c) < tiny)
			c = tiny;
		d = 1 / d;
		h *= d * c;
		aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
		d = 1 + aa * d;
		if (fabs(d) < tiny)
			d = tiny;
		c = 1 + aa / c;
		if (fabs(c) < tiny)
			c = tiny;
		d = 1 / d;
		del = d * c;
		h *= del;
		if (fabs(del - 1) < eps)
			break;
	}
	return h;
}

/* The regularized incomplete beta function I_x(a, b). */
static double beta_inc(double a, double b, double x)
{
	double front;

	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
	if (x < (a + 1) / (a + b + 2))
		return front * beta_cf(a, b, x) / a;
	return 1 - front * beta_cf(b, a, 1 - x) / b;
}

double cs_stat_t_cdf(double t, double df)
{
	double tail;

	if (isnan(t) || !(df > 0))
		return NAN;
	if (isinf(t))
		return t > 0 ? 1 : 0;
	if (df > 1e7) /* the normal distribution */
		return 0.5 * erfc(-t / sqrt(2));
	tail = 0.5 * beta_inc(df / 2, 0.5, df / (df + t * t));
	return t > 0 ? 1 - tail : tail;
}

double cs_stat_t_quantile(double p, double df)
{
	double lo = -1e6, hi = 1e6;

	if (!(p > 0 && p < 1) || !(df > 0))
		return NAN;
	for (int i = 0; i < 200 && hi - lo > 1e-12 * (1 + fabs(lo)); i++) {
		double mid = (lo + hi) / 2;

		if (cs_stat_t_cdf(mid, df) < p)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

double cs_stat_median(double *v, int64_t n)
{
	if (n <= 0)
		return 0;
	cs_sort_double(v, (size_t)n);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Steps trimmed at each end of n: 10%, at least one from 3 values on (as the per-step values). */
static int32_t yuen_trim(int32_t n)
{
	if (n < 3)
		return 0;
	return n / 10 > 1 ? n / 10 : 1;
}

/*
 * The trimmed mean of v (n values, sorted here), and d = (n - 1) s_w^2 / (h (h - 1)): the squared
 * standard error of the trimmed mean, from the winsorized variance s_w^2 and the h values kept.
 * Returns h.
 */
static int32_t trimmed_stats(double *v, int32_t n, double *mean, double *d)
{
	int32_t g = yuen_trim(n), h = n - 2 * g;
	double sum = 0, wsum = 0, wmean, ss = 0;

	cs_sort_double(v, (size_t)n);
	for (int32_t i = g; i < n - g; i++)
		sum += v[i];
	*mean = h > 0 ? sum / h : 0;
	for (int32_t i = 0; i < n; i++)
		wsum += v[i < g ? g : i >= n - g ? n - g - 1 : i];
	wmean = wsum / n;
	for (int32_t i = 0; i < n; i++) {
		double w = v[i < g ? g : i >= n - g ? n - g - 1 : i] - wmean;

		ss += w * w;
	}
	*d = h > 1 ? ss / (double)(h * (double)(h - 1)) : 0;
	return h;
}

int cs_stat_yuen(const double *x, int32_t nx, const double *y, int32_t ny, cs_stat_test *out)
{
	double *v = malloc((size_t)(nx > ny ? nx : ny) * sizeof(*v) + sizeof(*v));
	double mx, my, dx, dy;
	int32_t hx, hy;

	memset(out, 0, sizeof(*out));
	out->t = out->df = NAN;
	if (!v)
		return CS_ERR_NOMEM;
	if (nx < 2 || ny < 2) {
		free(v);
		return 0; /* no spread to judge by: out->valid stays 0 */
	}
	memcpy(v, x, (size_t)nx * sizeof(*v));
	hx = trimmed_stats(v, nx, &mx, &dx);
	memcpy(v, y, (size_t)ny * sizeof(*v));
	hy = trimmed_stats(v, ny, &my, &dy);
	free(v);
	out->valid = 1;
	out->mean_x = mx;
	out->mean_y = my;
	out->se = sqrt(dx + dy);
	if (dx + dy > 0) {
		out->t = (my - mx) / out->se;
		out->df = (dx + dy) * (dx + dy) /
			  (dx * dx / (hx > 1 ? hx - 1 : 1) + dy * dy / (hy > 1 ? hy - 1 : 1));
	} else {
		/* no spread in either run: any difference is certain */
		out->t = my > mx ? INFINITY : my < mx ? -INFINITY : 0;
		out->df = hx + hy - 2 > 0 ? hx + hy - 2 : 1;
	}
	return 0;
}

double cs_stat_sd(const double *v, int32_t n)
{
	double mean = 0, ss = 0;

	if (n < 2)
		return 0;
	for (int32_t i = 0; i < n; i++)
		mean += v[i];
	mean /= n;
	for (int32_t i = 0; i < n; i++)
		ss += (v[i] - mean) * (v[i] - mean);
	return sqrt(ss / (n - 1));
}
