/*
 * checked.h - int64 arithmetic that saturates instead of overflowing.
 *
 * Plausible trace values (include/cuscope/trace.h, CS_TS_MAX and CS_BYTES_MAX) keep differences of
 * times and single sizes far from the int64 limits; what can still get there is arithmetic over
 * many values or with factors from outside (sums of durations or bytes over a whole trace, grid *
 * block, unit conversions, a window that the viewer is asked for). Those go through these helpers:
 * on overflow the result is INT64_MAX or INT64_MIN, whichever the exact result lies beyond.
 */
#ifndef CUSCOPE_UTIL_CHECKED_H
#define CUSCOPE_UTIL_CHECKED_H

#include <stdint.h>

static inline int64_t cs_sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static inline int64_t cs_sat_sub(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static inline int64_t cs_sat_mul(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_mul_overflow(a, b, &r))
		return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
	return r;
}

/* a * b * c, saturating: grid or block sizes, whose product can pass int64. */
static inline int64_t cs_sat_mul3(int64_t a, int64_t b, int64_t c)
{
	return cs_sat_mul(cs_sat_mul(a, b), c);
}

/*
 * The point halfway from a to b, for any a and b (rounded towards a when they have the same sign,
 * towards zero otherwise).
 */
static inline int64_t cs_midpoint(int64_t a, int64_t b)
{
	/* of opposite signs a + b cannot overflow; of the same sign b - a cannot */
	if ((a < 0) != (b < 0))
		return (a + b) / 2;
	return a + (b - a) / 2;
}

/* A double as int64, truncated towards zero, saturating (NaN: 0): a cast out of range is UB. */
static inline int64_t cs_sat_from_double(double x)
{
	if (x != x)
		return 0;
	if (x >= 9223372036854775808.0)
		return INT64_MAX;
	if (x <= -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)x;
}

/* *sum += v, saturating. */
static inline void cs_sat_accum(int64_t *sum, int64_t v)
{
	*sum = cs_sat_add(*sum, v);
}

#endif
