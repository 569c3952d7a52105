/*
 * test_sort.c - the radix sorts of src/util/sort.c (cuscope/sort.h) against a comparison sort:
 * signed values and the extremes, equal keys keeping their order (the analysis relies on glibc's
 * stable merge sort order), records by several keys of each type, and the small and empty arrays
 * that take the comparison path; the median by selection against the median of the sorted array.
 */
#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/sort.h"
#include "testutil.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static void check_i64(size_t n, int64_t (*gen)(size_t i))
{
	int64_t *v = malloc((n + 1) * sizeof(*v)), *w = malloc((n + 1) * sizeof(*w));

	for (size_t i = 0; i < n; i++)
		v[i] = w[i] = gen(i);
	cs_sort_i64(v, n);
	qsort(w, n, sizeof(*w), cmp_i64);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(v[i] == w[i], "n %zu, at %zu: %lld, not %lld", n, i, (long long)v[i],
			      (long long)w[i]);
	free(v);
	free(w);
}

static int64_t gen_any(size_t i)
{
	(void)i;
	return (int64_t)next();
}

static int64_t gen_times(size_t i)
{
	/* event times of a trace: the high bytes alike */
	return (int64_t)(next() % 5000000000ull) + (int64_t)(i % 3);
}

static int64_t gen_extremes(size_t i)
{
	static const int64_t x[] = {INT64_MIN, INT64_MAX, 0, -1, 1, INT64_MIN + 1, INT64_MAX - 1};

	return x[(i + next() % 3) % 7];
}

static int64_t gen_few(size_t i)
{
	(void)i;
	return (int64_t)(next() % 4) - 2;
}

START_TEST(test_sort_i64)
{
	size_t sizes[] = {0, 1, 2, 255, 256, 257, 1000, 100000};

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		check_i64(sizes[k], gen_any);
		check_i64(sizes[k], gen_times);
		check_i64(sizes[k], gen_extremes);
		check_i64(sizes[k], gen_few);
	}
}
END_TEST

static int64_t gen_sorted(size_t i)
{
	return (int64_t)i * 3 - 500;
}

static int64_t gen_descending(size_t i)
{
	return -(int64_t)i;
}

START_TEST(test_median_select)
{
	size_t sizes[] = {0, 1, 2, 3, 4, 5, 255, 256, 1000, 1001, 100000, 100001, 131072};
	int64_t (*gens[])(size_t) = {gen_any, gen_times, gen_extremes, gen_few, gen_sorted,
				     gen_descending};

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
		for (size_t g = 0; g < sizeof(gens) / sizeof(gens[0]); g++) {
			size_t n = sizes[k];
			int64_t *v = malloc((n + 1) * sizeof(*v)), *w = malloc((n + 1) * sizeof(*w));

			for (size_t i = 0; i < n; i++)
				v[i] = w[i] = gens[g](i);
			ck_assert_msg(cs_median_select_i64(v, (int64_t)n) ==
					      cs_median_i64(w, (int64_t)n),
				      "n %zu, generator %zu", n, g);
			/* w is sorted now: every rank of a 32-bit copy */
			for (size_t k = 0; k < n; k += n / 7 + 1) {
				int32_t *x = malloc((n + 1) * sizeof(*x));

				for (size_t i = 0; i < n; i++)
					x[i] = (int32_t)(v[i] >> 32);
				ck_assert_int_eq(cs_select_i32(x, (int64_t)n, (int64_t)k),
						 (int32_t)(w[k] >> 32));
				free(x);
			}
			/* the same values, in another order */
			cs_sort_i64(v, n);
			for (size_t i = 0; i < n; i++)
				ck_assert(v[i] == w[i]);
			free(v);
			free(w);
		}
}
END_TEST

/* A long array whose evenly spaced sample misleads (every eighth value large, the others small):
 * the median by selection in the whole array after all. */
START_TEST(test_median_select_misleading_sample)
{
	size_t n = 131072;
	int64_t *v = malloc(n * sizeof(*v)), *w = malloc(n * sizeof(*w));

	for (size_t i = 0; i < n; i++)
		v[i] = w[i] = i % 8 ? (int64_t)(i % 8) : 1000000 + (int64_t)i;
	ck_assert_int_eq(cs_median_select_i64(v, (int64_t)n), cs_median_i64(w, (int64_t)n));
	free(v);
	free(w);
}
END_TEST

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

START_TEST(test_sort_double)
{
	size_t sizes[] = {0, 1, 7, 255, 256, 5000};

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		double *v = malloc((n + 1) * sizeof(*v)), *w = malloc((n + 1) * sizeof(*w));

		for (size_t i = 0; i < n; i++) {
			switch (next() % 4) {
			case 0:
				v[i] = (double)(int64_t)(next() % 1000) -
				       500; /* whole, some equal */
				break;
			case 1:
				v[i] = (double)(next() % 1000000) / 7.0 * (next() % 2 ? 1 : -1);
				break;
			case 2:
				v[i] = next() % 2 ? 1e300 : -1e-300;
				break;
			default:
				v[i] = 0.0;
			}
			w[i] = v[i];
		}
		cs_sort_double(v, n);
		qsort(w, n, sizeof(*w), cmp_double);
		for (size_t i = 0; i < n; i++)
			ck_assert_msg(v[i] == w[i], "n %zu, at %zu: %g, not %g", n, i, v[i], w[i]);
		free(v);
		free(w);
	}
}
END_TEST

struct rec {
	int32_t a;
	uint32_t b;
	int64_t c;
	uint64_t d;
	int64_t order; /* position before sorting: equal keys keep it */
};

static int cmp_rec(const void *x, const void *y)
{
	const struct rec *p = x, *q = y;

	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	if (p->b != q->b)
		return p->b < q->b ? -1 : 1;
	if (p->c != q->c)
		return p->c < q->c ? -1 : 1;
	if (p->d != q->d)
		return p->d < q->d ? -1 : 1;
	return (p->order > q->order) - (p->order < q->order);
}

/* The four keys of struct rec, in cmp_rec's order. */
static const cs_sort_key rec_keys[] = {
	{offsetof(struct rec, a), CS_KEY_I32},
	{offsetof(struct rec, b), CS_KEY_U32},
	{offsetof(struct rec, c), CS_KEY_I64},
	{offsetof(struct rec, d), CS_KEY_U64},
};

/*
 * Number the n records of v by their place (order), copy them to w, then sort v by rec_keys and w
 * by cmp_rec: the same records must stand in the same places. what: the case, for the message.
 */
static void check_records(struct rec *v, struct rec *w, size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		v[i].order = (int64_t)i;
		w[i] = v[i];
	}
	cs_sort_records(v, n, sizeof(*v), rec_keys, 4);
	qsort(w, n, sizeof(*w), cmp_rec);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(!memcmp(&v[i], &w[i], sizeof(v[i])),
			      "%s: record %zu out of place (order %lld, expected %lld)", what, i,
			      (long long)v[i].order, (long long)w[i].order);
}

START_TEST(test_sort_records)
{
	size_t sizes[] = {0, 1, 3, 300, 50000};
	char what[64];

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		struct rec *v = calloc(n + 1, sizeof(*v)), *w = calloc(n + 1, sizeof(*w));

		for (size_t i = 0; i < n; i++) {
			/* few distinct values, so that every key decides somewhere and many
			 * records tie on all four */
			v[i].a = (int32_t)(next() % 5) - 2;
			v[i].b = next() % 2 ? UINT32_MAX : (uint32_t)(next() % 3);
			v[i].c = next() % 2 ? INT64_MIN : (int64_t)(next() % 3) - 1;
			v[i].d = next() % 2 ? UINT64_MAX : next() % 2;
		}
		snprintf(what, sizeof(what), "n %zu", n);
		check_records(v, w, n, what);
		free(v);
		free(w);
	}
}
END_TEST

/* Records in order or nearly (left as they are when in order): the order of the comparison sort,
 * equal keys in their order. */
START_TEST(test_sort_nearly_sorted)
{
	size_t sizes[] = {2, 100, 300, 5000, 50000};
	/* pairs swapped per 1000 records: none, a few, many */
	int swaps[] = {0, 3, 200, 1000};
	char what[64];

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
		for (size_t m = 0; m < sizeof(swaps) / sizeof(swaps[0]); m++) {
			size_t n = sizes[k];
			struct rec *v = calloc(n + 1, sizeof(*v)), *w = calloc(n + 1, sizeof(*w));

			for (size_t i = 0; i < n; i++) {
				/* ascending c with runs of equal keys */
				v[i].a = 0;
				v[i].b = 7;
				v[i].c = (int64_t)(i / 3) - 100;
				v[i].d = 0;
			}
			for (size_t x = 0; x < n * (size_t)swaps[m] / 1000; x++) {
				size_t i = next() % n, j = i + next() % 20;
				struct rec t;

				if (j >= n)
					continue;
				t = v[i];
				v[i] = v[j];
				v[j] = t;
			}
			snprintf(what, sizeof(what), "n %zu, swaps %d", n, swaps[m]);
			check_records(v, w, n, what);
			/* one key */
			for (size_t i = 0; i < n; i++)
				w[i] = v[n - 1 - i];
			cs_sort_records(w, n, sizeof(*w), &rec_keys[2], 1);
			for (size_t i = 1; i < n; i++)
				ck_assert(w[i - 1].c < w[i].c ||
					  (w[i - 1].c == w[i].c && w[i - 1].order > w[i].order));
			free(v);
			free(w);
		}
}
END_TEST

/* records of 40 bytes or more take glibc's merge sort: the same order */
struct wide {
	struct rec r;
	char pad[16];
};

static int cmp_wide(const void *x, const void *y)
{
	return cmp_rec(&((const struct wide *)x)->r, &((const struct wide *)y)->r);
}

START_TEST(test_sort_wide_records)
{
	static const cs_sort_key keys[] = {
		{offsetof(struct wide, r.a), CS_KEY_I32},
		{offsetof(struct wide, r.b), CS_KEY_U32},
		{offsetof(struct wide, r.c), CS_KEY_I64},
	};
	size_t n = 20000;
	struct wide *v = calloc(n, sizeof(*v)), *w = calloc(n, sizeof(*w));

	for (size_t i = 0; i < n; i++) {
		v[i].r.a = (int32_t)(next() % 5) - 2;
		v[i].r.b = (uint32_t)(next() % 3);
		v[i].r.c = (int64_t)(next() % 3) - 1;
		v[i].r.order = (int64_t)i; /* d stays 0: ties on the three keys keep this order */
		w[i] = v[i];
	}
	cs_sort_records(v, n, sizeof(*v), keys, 3);
	qsort(w, n, sizeof(*w), cmp_wide);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(v[i].r.order, w[i].r.order);
	free(v);
	free(w);
}
END_TEST

/* records of 16 and 24 bytes (sort.c copies those sizes with fixed moves) */
struct r16 {
	int64_t key, order;
};
struct r24 {
	int64_t key;
	uint32_t tid;
	int64_t order;
};

START_TEST(test_sort_small_records)
{
	static const cs_sort_key k16 = {offsetof(struct r16, key), CS_KEY_I64};
	static const cs_sort_key k24[] = {
		{offsetof(struct r24, tid), CS_KEY_U32},
		{offsetof(struct r24, key), CS_KEY_I64},
	};
	size_t n = 3000;
	struct r16 *a = calloc(n, sizeof(*a));
	struct r24 *b = calloc(n, sizeof(*b));

	for (size_t i = 0; i < n; i++) {
		a[i].key = (int64_t)(next() % 100) - 50;
		a[i].order = (int64_t)i;
		b[i].key = (int64_t)(next() % 100);
		b[i].tid = (uint32_t)(next() % 3);
		b[i].order = (int64_t)i;
	}
	cs_sort_records(a, n, sizeof(*a), &k16, 1);
	cs_sort_records(b, n, sizeof(*b), k24, 2);
	for (size_t i = 1; i < n; i++) {
		ck_assert(a[i - 1].key < a[i].key ||
			  (a[i - 1].key == a[i].key && a[i - 1].order < a[i].order));
		ck_assert(b[i - 1].tid < b[i].tid ||
			  (b[i - 1].tid == b[i].tid &&
			   (b[i - 1].key < b[i].key ||
			    (b[i - 1].key == b[i].key && b[i - 1].order < b[i].order))));
	}
	free(a);
	free(b);
}
END_TEST

START_TEST(test_sort_records_first_key_decides)
{
	/* one key of two: the second key's order only among equal first keys */
	static const cs_sort_key keys[] = {
		{offsetof(struct rec, c), CS_KEY_I64},
		{offsetof(struct rec, a), CS_KEY_I32},
	};
	struct rec v[400];

	memset(v, 0, sizeof(v));
	for (int i = 0; i < 400; i++) {
		v[i].c = 399 - i / 2;
		v[i].a = i % 2 ? -5 : 5;
		v[i].order = i;
	}
	cs_sort_records(v, 400, sizeof(v[0]), keys, 2);
	for (int i = 0; i < 400; i++) {
		ck_assert_int_eq(v[i].c, 200 + i / 2);
		ck_assert_int_eq(v[i].a, i % 2 ? 5 : -5);
	}
}
END_TEST

START_TEST(test_lower_bound)
{
	/* records by their first member, with equal runs; and plain values */
	struct span {
		int64_t t, other;
	} v[] = {{-3, 9}, {1, 8}, {1, 7}, {4, 6}, {4, 5}, {4, 4}, {10, 3}};
	int64_t x[] = {2, 2, 5};

	ck_assert_int_eq(cs_lower_bound_i64(v, sizeof(v[0]), 7, INT64_MIN), 0);
	ck_assert_int_eq(cs_lower_bound_i64(v, sizeof(v[0]), 7, -3), 0);
	ck_assert_int_eq(cs_lower_bound_i64(v, sizeof(v[0]), 7, 1), 1);
	ck_assert_int_eq(cs_lower_bound_i64(v, sizeof(v[0]), 7, 2), 3);
	ck_assert_int_eq(cs_lower_bound_i64(v, sizeof(v[0]), 7, 4), 3);
	ck_assert_int_eq(cs_lower_bound_i64(v, sizeof(v[0]), 7, 10), 6);
	ck_assert_int_eq(cs_lower_bound_i64(v, sizeof(v[0]), 7, 11), 7);
	ck_assert_int_eq(cs_lower_bound_i64(v, sizeof(v[0]), 0, 4), 0);
	ck_assert_int_eq(cs_lower_bound_i64(x, sizeof(x[0]), 3, 2), 0);
	ck_assert_int_eq(cs_lower_bound_i64(x, sizeof(x[0]), 3, 3), 2);
	ck_assert_int_eq(cs_lower_bound_i64(NULL, sizeof(x[0]), 0, 3), 0);
}
END_TEST

/* The search from a hint gives the binary search's answer from every hint, on runs of equal keys. */
START_TEST(test_lower_bound_near)
{
	int64_t v[300];

	for (int i = 0; i < 300; i++)
		v[i] = (i / 3) * 2; /* 0 0 0 2 2 2 4 ... */
	for (int64_t n = 0; n <= 300; n += n < 10 ? 1 : 37)
		for (int64_t t = -2; t <= 202; t++)
			for (int64_t h = -1; h <= n + 1; h++) {
				int64_t hint = h, want = cs_lower_bound_i64(v, sizeof(v[0]), n, t);

				ck_assert_int_eq(cs_lower_bound_near_i64(v, sizeof(v[0]), n, t, &hint),
						 want);
				ck_assert_int_eq(hint, want);
			}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sort");
	TCase *tc = tcase_create("sort");

	tcase_add_test(tc, test_sort_i64);
	tcase_add_test(tc, test_median_select);
	tcase_add_test(tc, test_median_select_misleading_sample);
	tcase_add_test(tc, test_sort_double);
	tcase_add_test(tc, test_sort_records);
	tcase_add_test(tc, test_sort_nearly_sorted);
	tcase_add_test(tc, test_sort_wide_records);
	tcase_add_test(tc, test_sort_small_records);
	tcase_add_test(tc, test_sort_records_first_key_decides);
	tcase_add_test(tc, test_lower_bound);
	tcase_add_test(tc, test_lower_bound_near);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
