/*
 * estimates.h - how bad and how sure (private to the analyzers): the severity a finding's share
 * of the step earns, and the 95% intervals of a median and of a share measured as k of n (with
 * the ascending sort the median is taken from). The rules, the cross-rank measures (ranks.c) and
 * the findings' severities (findings.c) use them alike.
 */
#ifndef CUSCOPE_ESTIMATES_H
#define CUSCOPE_ESTIMATES_H

#include <stdint.h>

/* Severity of a finding by its estimated loss share of the step: error >= 10%, warning >= 3%. */
int ru_severity(double share);

/* Sort v[0..n) ascending. */
void ru_sort_i64(int64_t *v, int64_t n);

/*
 * The distribution-free 95% confidence interval of the median of v[0..n) (sorted in place), into
 * *lo and *hi: the order statistics at ranks n/2 -/+ 0.98 sqrt(n), as the number of values under
 * the true median is binomial B(n, 1/2) with a standard deviation of sqrt(n)/2 (1.96 of them on
 * either side). Few values give a wide interval (all of them under 6). Nothing when n is 0.
 */
void ru_median_interval(int64_t *v, int64_t n, int64_t *lo, int64_t *hi);

/*
 * The 95% interval of a share measured as k of n (the Wilson score interval, z = 1.96), into *lo
 * and *hi; 0 and 1 when n is 0.
 */
void ru_share_interval(int64_t k, int64_t n, double *lo, double *hi);

#endif
