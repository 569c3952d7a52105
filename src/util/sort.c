/*
 * sort.c - least-significant-digit radix sort of integers and of records by integer fields
 * (include/cuscope/sort.h).
 *
 * Each key is turned into an unsigned 64-bit value of the same order (the sign bit flipped), and
 * the records are distributed by one byte of it per pass, the least significant first, each pass
 * stable; the keys are taken last to first, so the first key decides. One pass over the input
 * counts every byte of every key, and a byte that is the same in all records takes no pass (event
 * times of one trace differ only in their low five or six bytes).
 */
#include <stdlib.h>
#include <string.h>

#include "cuscope/checked.h"
#include "cuscope/grow.h"
#include "cuscope/sort.h"

/* Below this many elements a comparison sort is as fast. */
#define RADIX_MIN 256
/*
 * Records of this size or larger are sorted by comparison: the radix passes need a second copy of
 * the array, while glibc's merge sort orders pointers to such records and then moves each record
 * once (16 bytes of scratch per record). On the 10-million-event trace the launch order (48-byte
 * records) sorts in 2.4 s instead of 1.4 s, with 160 MiB less at the report's peak.
 */
#define RADIX_MAX_SIZE 40

static uint64_t key_of(const unsigned char *rec, const cs_sort_key *k)
{
	switch (k->type) {
	case CS_KEY_I32: {
		int32_t v;

		memcpy(&v, rec + k->offset, sizeof(v));
		return (uint64_t)(uint32_t)v ^ 0x80000000u;
	}
	case CS_KEY_U32: {
		uint32_t v;

		memcpy(&v, rec + k->offset, sizeof(v));
		return v;
	}
	case CS_KEY_U64: {
		uint64_t v;

		memcpy(&v, rec + k->offset, sizeof(v));
		return v;
	}
	case CS_KEY_I64:
	default: {
		int64_t v;

		memcpy(&v, rec + k->offset, sizeof(v));
		return (uint64_t)v ^ 0x8000000000000000ull;
	}
	}
}

static int key_bytes(const cs_sort_key *k)
{
	return k->type == CS_KEY_I64 || k->type == CS_KEY_U64 ? 8 : 4;
}

/* the keys of the comparison fallback */
struct cmp_arg {
	const cs_sort_key *keys;
	int nkeys;
};

static int cmp_records(const void *a, const void *b, void *arg)
{
	const struct cmp_arg *c = arg;

	for (int i = 0; i < c->nkeys; i++) {
		uint64_t x = key_of(a, &c->keys[i]), y = key_of(b, &c->keys[i]);

		if (x != y)
			return x < y ? -1 : 1;
	}
	return 0;
}

static void sort_by_comparison(void *base, size_t n, size_t size, const cs_sort_key *keys,
			       int nkeys)
{
	struct cmp_arg c = {keys, nkeys};

	/* glibc's qsort_r is a stable merge sort when it can have its scratch memory */
	qsort_r(base, n, size, cmp_records, &c);
}

/* count[b][byte] over the records (b numbers the bytes from the last key's least significant one
 * up) */
static void count_bytes(const unsigned char *base, size_t n, size_t size, const cs_sort_key *keys,
			int nkeys, size_t (*count)[256])
{
	for (size_t i = 0; i < n; i++) {
		const unsigned char *rec = base + i * size;
		int b = 0;

		for (int k = nkeys - 1; k >= 0; k--) {
			uint64_t v = key_of(rec, &keys[k]);

			for (int j = 0; j < key_bytes(&keys[k]); j++, b++)
				count[b][(v >> (8 * j)) & 0xff]++;
		}
	}
}

/* Turn count[b] into the first position of each byte value; 0 when every record has the same
 * byte there (the pass is not needed). */
static int offsets(size_t *c, size_t n)
{
	size_t pos = 0;

	for (int x = 0; x < 256; x++)
		if (c[x] == n)
			return 0;
	for (int x = 0; x < 256; x++) {
		size_t m = c[x];

		c[x] = pos;
		pos += m;
	}
	return 1;
}

/* One pass: each record to its place by byte j of key k. The common sizes get a copy of a fixed
 * size, which the compiler makes a few moves instead of a call to memcpy per record. */
#define SCATTER(SIZE)                                                           \
	for (size_t i = 0; i < n; i++) {                                        \
		const unsigned char *rec = src + i * (SIZE);                    \
		uint64_t v = key_of(rec, k);                                    \
                                                                                \
		memcpy(dst + c[(v >> (8 * j)) & 0xff]++ * (SIZE), rec, (SIZE)); \
	}

static void scatter(const unsigned char *src, unsigned char *dst, size_t n, size_t size,
		    const cs_sort_key *k, int j, size_t *c)
{
	switch (size) {
	case 8:
		SCATTER(8)
		break;
	case 16:
		SCATTER(16)
		break;
	case 24:
		SCATTER(24)
		break;
	case 32:
		SCATTER(32)
		break;
	default:
		SCATTER(size)
	}
}

#undef SCATTER

/* 1 when the records are in order already (a stable sort leaves them as they are): the analysis
 * sorts arrays that often come in order (launch times of kernels by start, a process's copies).
 * Stops at the first pair out of order. */
static int in_order(const unsigned char *base, size_t n, size_t size, const cs_sort_key *keys,
		    int nkeys)
{
	struct cmp_arg c = {keys, nkeys};

	if (nkeys == 1) {
		uint64_t prev = key_of(base, keys);

		for (size_t i = 1; i < n; i++) {
			uint64_t v = key_of(base + i * size, keys);

			if (v < prev)
				return 0;
			prev = v;
		}
		return 1;
	}
	for (size_t i = 1; i < n; i++)
		if (cmp_records(base + (i - 1) * size, base + i * size, &c) > 0)
			return 0;
	return 1;
}

void cs_sort_records(void *base, size_t n, size_t size, const cs_sort_key *keys, int nkeys)
{
	size_t(*count)[256];
	unsigned char *src = base, *dst, *tmp;
	int nbytes = 0, b = 0;

	if (n < 2 || nkeys <= 0 || in_order(base, n, size, keys, nkeys))
		return;
	for (int k = 0; k < nkeys; k++)
		nbytes += key_bytes(&keys[k]);
	if (n < RADIX_MIN || n > SIZE_MAX / size || size >= RADIX_MAX_SIZE) {
		sort_by_comparison(base, n, size, keys, nkeys);
		return;
	}
	count = calloc((size_t)nbytes, sizeof(*count));
	tmp = count ? cs_big_alloc(n * size) : NULL;
	if (!tmp) {
		free(count);
		sort_by_comparison(base, n, size, keys, nkeys);
		return;
	}
	count_bytes(src, n, size, keys, nkeys, count);
	dst = tmp;
	for (int k = nkeys - 1; k >= 0; k--) {
		for (int j = 0; j < key_bytes(&keys[k]); j++, b++) {
			size_t *c = count[b];
			unsigned char *t;

			if (!offsets(c, n))
				continue;
			scatter(src, dst, n, size, &keys[k], j, c);
			/* the next pass reads what this one wrote */
			t = src;
			src = dst;
			dst = t;
		}
	}
	if (src != base)
		memcpy(base, src, n * size);
	free(count);
	free(tmp);
}

void cs_sort_i64(int64_t *v, size_t n)
{
	static const cs_sort_key key = {0, CS_KEY_I64};

	cs_sort_records(v, n, sizeof(*v), &key, 1);
}

int64_t cs_lower_bound_i64(const void *base, size_t size, int64_t n, int64_t t)
{
	int64_t lo = 0, hi = n;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (*(const int64_t *)(const void *)((const char *)base + (size_t)mid * size) < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int64_t cs_lower_bound_key_i64(const void *base, size_t size, int64_t n, uint64_t key, int64_t t)
{
	int64_t lo = 0, hi = n;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;
		const char *r = (const char *)base + (size_t)mid * size;
		uint64_t k = *(const uint64_t *)(const void *)r;

		if (k < key || (k == key && *(const int64_t *)(const void *)(r + 8) < t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#define KEY_AT(i) (*(const int64_t *)(const void *)((const char *)base + (size_t)(i) * size))

int64_t cs_lower_bound_near_i64(const void *base, size_t size, int64_t n, int64_t t, int64_t *hint)
{
	int64_t h = *hint, lo, hi, step = 1;

	if (h < 0)
		h = 0;
	if (h > n)
		h = n;
	if (h < n && KEY_AT(h) < t) {
		/* the answer is after h: [lo, hi] holds it */
		lo = h + 1;
		hi = h + 1;
		while (hi < n && KEY_AT(hi) < t) {
			lo = hi + 1;
			hi = n - hi > step ? hi + step : n;
			step *= 2;
		}
	} else {
		/* the answer is at h or before it */
		hi = h;
		lo = h;
		while (lo > 0 && KEY_AT(lo - 1) >= t) {
			hi = lo - 1;
			lo = lo - 1 > step ? lo - 1 - step : 0;
			step *= 2;
		}
	}
	/* every key before lo is < t; every key from hi on is >= t (or hi == n) */
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (KEY_AT(mid) < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	*hint = lo;
	return lo;
}

#undef KEY_AT

int64_t cs_median_i64(int64_t *v, int64_t n)
{
	if (n <= 0)
		return 0;
	if (n > 1)
		cs_sort_i64(v, (size_t)n);
	if (n % 2)
		return v[n / 2];
	return cs_midpoint(v[n / 2 - 1], v[n / 2]);
}

/*
 * The k-th smallest of v[0..n) (0 <= k < n), put at v[k], the smaller ones before it and the
 * larger after it (Hoare's selection, the pivot the median of three: linear on average, and on
 * the sorted or nearly sorted arrays of event times too). One body for each integer type.
 */
#define SELECT(NAME, T)                                                                   \
	T NAME(T *v, int64_t n, int64_t k)                                                 \
	{                                                                                  \
		int64_t lo = 0, hi = n - 1;                                                \
                                                                                           \
		while (hi > lo) {                                                          \
			int64_t mid = lo + (hi - lo) / 2, i = lo, j = hi;                  \
			T p, t;                                                            \
                                                                                           \
			/* v[lo] <= v[mid] <= v[hi] */                                     \
			if (v[mid] < v[lo])                                                \
				t = v[mid], v[mid] = v[lo], v[lo] = t;                     \
			if (v[hi] < v[lo])                                                 \
				t = v[hi], v[hi] = v[lo], v[lo] = t;                       \
			if (v[hi] < v[mid])                                                \
				t = v[hi], v[hi] = v[mid], v[mid] = t;                     \
			p = v[mid];                                                        \
			while (i <= j) {                                                   \
				while (v[i] < p)                                           \
					i++;                                               \
				while (v[j] > p)                                           \
					j--;                                               \
				if (i <= j) {                                              \
					t = v[i], v[i] = v[j], v[j] = t;                   \
					i++;                                               \
					j--;                                               \
				}                                                          \
			}                                                                  \
			/* v[lo..j] <= p <= v[i..hi], and v[j+1..i-1] == p */              \
			if (k <= j)                                                        \
				hi = j;                                                    \
			else if (k >= i)                                                   \
				lo = i;                                                    \
			else                                                               \
				break;                                                     \
		}                                                                          \
		return v[k];                                                               \
	}

SELECT(cs_select_i64, int64_t)
SELECT(cs_select_i32, int32_t)

#undef SELECT

/* Arrays this long find their median from a sample first (median_sampled()). */
#define SAMPLED_MIN   (1 << 16)
#define SAMPLE_SIZE   16384
#define SAMPLE_MARGIN 512 /* sample ranks each side of the middle: about 8 standard deviations */

/*
 * The values of ranks r0 and r1 (r0 <= r1) of v[0..n) into *x0 and *x1, in one pass that leaves v
 * as it is: a sample of v brackets the middle between two of its values lo and hi, the pass counts
 * the values below lo, equal to lo and to hi, and keeps those in between, among which the ranks
 * are selected. 1 when found; 0 when the ranks fall outside the bracket (or memory is short): then
 * the caller selects in the whole array.
 */
static int median_sampled(const int64_t *v, int64_t n, int64_t r0, int64_t r1, int64_t *x0,
			  int64_t *x1)
{
	int64_t lo, hi, below = 0, eq_lo = 0, eq_hi = 0, nin = 0, cap = n / 8;
	int64_t *in = malloc(((size_t)cap + 1) * sizeof(*in)), r[2] = {r0, r1}, *x[2] = {x0, x1};
	int64_t *sample = malloc(SAMPLE_SIZE * sizeof(*sample));

	if (!in || !sample) {
		free(in);
		free(sample);
		return 0;
	}
	for (int64_t i = 0; i < SAMPLE_SIZE; i++)
		sample[i] = v[(int64_t)((__int128)i * n / SAMPLE_SIZE)];
	cs_sort_i64(sample, SAMPLE_SIZE);
	lo = sample[SAMPLE_SIZE / 2 - SAMPLE_MARGIN];
	hi = sample[SAMPLE_SIZE / 2 + SAMPLE_MARGIN];
	free(sample);
	/* without branches on the values, which come in no order */
	for (int64_t i = 0, two = lo != hi; i < n; i++) {
		int64_t y = v[i];

		below += y < lo;
		eq_lo += y == lo;
		eq_hi += (y == hi) & two;
		in[nin] = y;
		nin += (y > lo) & (y < hi);
		if (nin == cap) {
			free(in);
			return 0;
		}
	}
	/* ranks: [0, below) below lo, then eq_lo of lo, nin between, eq_hi of hi (none when
	 * lo == hi: those counted as lo), the rest above */
	for (int j = 0; j < 2; j++) {
		int64_t q = r[j] - below;

		if (q < 0) {
			free(in);
			return 0;
		}
		if (q < eq_lo) {
			*x[j] = lo;
			continue;
		}
		q -= eq_lo;
		if (q < nin) {
			*x[j] = cs_select_i64(in, nin, q);
			continue;
		}
		q -= nin;
		if (q < eq_hi) {
			*x[j] = hi;
			continue;
		}
		free(in);
		return 0;
	}
	free(in);
	return 1;
}

int64_t cs_median_select_i64(int64_t *v, int64_t n)
{
	int64_t below, x0, x1;

	if (n <= 0)
		return 0;
	if (n >= SAMPLED_MIN && median_sampled(v, n, n % 2 ? n / 2 : n / 2 - 1, n / 2, &x0, &x1))
		return n % 2 ? x1 : cs_midpoint(x0, x1);
	cs_select_i64(v, n, n / 2);
	if (n % 2)
		return v[n / 2];
	/* the other middle value: the largest of the smaller half */
	below = v[0];
	for (int64_t i = 1; i < n / 2; i++)
		if (v[i] > below)
			below = v[i];
	return cs_midpoint(below, v[n / 2]);
}

/* a double's bits as an int64 of the same order: negative values with their other bits flipped */
static int64_t double_key(double d)
{
	int64_t x;

	memcpy(&x, &d, sizeof(x));
	return x < 0 ? x ^ INT64_MAX : x;
}

static double key_double(int64_t x)
{
	double d;

	x = x < 0 ? x ^ INT64_MAX : x;
	memcpy(&d, &x, sizeof(d));
	return d;
}

static int cmp_double(const void *a, const void *b)
{
	int64_t x = double_key(*(const double *)a), y = double_key(*(const double *)b);

	return (x > y) - (x < y);
}

void cs_sort_double(double *v, size_t n)
{
	int64_t *x = n >= RADIX_MIN ? malloc(n * sizeof(*x)) : NULL;

	if (!x) {
		cs_sort(v, n, sizeof(*v), cmp_double);
		return;
	}
	/* the keys sorted, then turned back into the values */
	for (size_t i = 0; i < n; i++)
		x[i] = double_key(v[i]);
	cs_sort_i64(x, n);
	for (size_t i = 0; i < n; i++)
		v[i] = key_double(x[i]);
	free(x);
}
