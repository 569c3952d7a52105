/* estimates.c - the severity of a share and the 95% intervals of medians and shares
 * (estimates.h). */
#include <math.h>

#include "cuscope/analyze.h"
#include "cuscope/sort.h"
#include "estimates.h"

int ru_severity(double share)
{
	if (share >= 0.10)
		return CS_SEV_ERROR;
	if (share >= 0.03)
		return CS_SEV_WARNING;
	return CS_SEV_INFO;
}

void ru_sort_i64(int64_t *v, int64_t n)
{
	if (n > 1)
		cs_sort_i64(v, (size_t)n);
}

void ru_median_interval(int64_t *v, int64_t n, int64_t *lo, int64_t *hi)
{
	double half, w;
	int64_t a, b;

	*lo = *hi = 0;
	if (n <= 0)
		return;
	ru_sort_i64(v, n);
	half = (double)n / 2;
	w = 0.98 * sqrt((double)n);
	a = (int64_t)floor(half - w);
	b = (int64_t)ceil(half + w) - 1;
	*lo = v[a < 0 ? 0 : a];
	*hi = v[b >= n ? n - 1 : b < 0 ? 0 : b];
}

void ru_share_interval(int64_t k, int64_t n, double *lo, double *hi)
{
	const double z = 1.96;
	double p, d, c, h;

	*lo = 0;
	*hi = 1;
	if (n <= 0)
		return;
	p = (double)k / (double)n;
	d = 1 + z * z / (double)n;
	c = (p + z * z / (2.0 * (double)n)) / d;
	h = z * sqrt(p * (1 - p) / (double)n + z * z / (4.0 * (double)n * (double)n)) / d;
	*lo = c - h > 0 ? c - h : 0;
	*hi = c + h < 1 ? c + h : 1;
}
