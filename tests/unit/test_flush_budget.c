/*
 * test_flush_budget.c - the budget of the flushes made on the program's threads
 * (src/collectors/flush_budget.c), on made-up times.
 */
#include <check.h>
#include <stdint.h>

#include "flush_budget.h"
#include "testutil.h"

#define MS 1000000ull
#define S  1000000000ull

/* The allowance is there at once, and a flush may overdraw it once. */
START_TEST(allowance_first)
{
	struct cs_flush_budget b;

	cs_flush_budget_init(&b, 10 * S, 2, 5 * MS);
	ck_assert(cs_flush_budget_allows(&b, 10 * S));
	cs_flush_budget_spend(&b, 5 * MS - 1);
	ck_assert(cs_flush_budget_allows(&b, 10 * S)); /* 1 ns left */
	cs_flush_budget_spend(&b, 2 * MS);
	ck_assert(!cs_flush_budget_allows(&b, 10 * S));
}
END_TEST

/* 2 permille earns 2 ms per second: a 2 ms overdraft is paid back after 1 s, not before. */
START_TEST(earns_its_share)
{
	struct cs_flush_budget b;

	cs_flush_budget_init(&b, 0, 2, 5 * MS);
	cs_flush_budget_spend(&b, 7 * MS);		   /* -2 ms */
	ck_assert(!cs_flush_budget_allows(&b, 400 * MS));  /* -1.2 ms */
	ck_assert(!cs_flush_budget_allows(&b, 1000 * MS)); /* 0: not positive */
	ck_assert(cs_flush_budget_allows(&b, 1001 * MS));
}
END_TEST

/* A read every 110 ms followed by a 1.6 ms flush, for 1,000 s: the flushes allowed on the program's
 * thread take at most the allowance, the share and one flush's overdraft. */
START_TEST(bounds_periodic_flushes)
{
	struct cs_flush_budget b;
	const uint64_t period = 110 * MS, cost = 1600000, end = 1000 * S;
	uint64_t spent = 0, allowed = 0, asked = 0;

	cs_flush_budget_init(&b, 0, 2, 5 * MS);
	for (uint64_t t = period; t < end; t += period) {
		asked++;
		if (cs_flush_budget_allows(&b, t)) {
			cs_flush_budget_spend(&b, cost);
			spent += cost;
			allowed++;
		}
	}
	ck_assert_uint_le(spent, 5 * MS + end / 1000 * 2 + cost);
	/* and it is not starved either: within one flush of the share */
	ck_assert_uint_ge(spent + cost, end / 1000 * 2);
	ck_assert_uint_lt(allowed, asked / 5);
	ck_assert_uint_gt(allowed, 0);
}
END_TEST

/* Savings are capped at the allowance: an hour without flushes allows one allowance's worth. */
START_TEST(savings_capped)
{
	struct cs_flush_budget b;

	cs_flush_budget_init(&b, 0, 2, 5 * MS);
	ck_assert(cs_flush_budget_allows(&b, 3600 * S));
	cs_flush_budget_spend(&b, 5 * MS);
	ck_assert(!cs_flush_budget_allows(&b, 3600 * S));
}
END_TEST

/* One flush that took far longer than the allowance is charged the allowance: at 2 permille and a
 * 2 ms allowance, flushing is allowed again just over 1 s later, not 15 s. */
START_TEST(debt_capped)
{
	struct cs_flush_budget b;

	cs_flush_budget_init(&b, 0, 2, 2 * MS);
	cs_flush_budget_spend(&b, 30 * MS);
	ck_assert_int_eq(b.tokens, -(int64_t)(2 * MS));
	ck_assert(!cs_flush_budget_allows(&b, 1000 * MS)); /* back to 0 */
	ck_assert(cs_flush_budget_allows(&b, 1001 * MS));
	/* and an overdraft within the allowance is kept as it is */
	cs_flush_budget_spend(&b, 1 * MS + 2000);
	ck_assert_int_eq(b.tokens, -(int64_t)(1 * MS));
}
END_TEST

/* A clock that goes back earns nothing and does not move the last time back. */
START_TEST(clock_back)
{
	struct cs_flush_budget b;

	cs_flush_budget_init(&b, 100 * S, 2, 5 * MS);
	cs_flush_budget_spend(&b, 6 * MS); /* -1 ms */
	ck_assert(!cs_flush_budget_allows(&b, 50 * S));
	ck_assert_uint_eq(b.last, 100 * S);
	ck_assert(!cs_flush_budget_allows(&b, 100 * S + 400 * MS)); /* -0.2 ms */
	ck_assert(cs_flush_budget_allows(&b, 100 * S + 600 * MS));
}
END_TEST

/* No share: once the allowance is spent, never again. */
START_TEST(no_share)
{
	struct cs_flush_budget b;

	cs_flush_budget_init(&b, 0, 0, 5 * MS);
	cs_flush_budget_spend(&b, 5 * MS);
	ck_assert(!cs_flush_budget_allows(&b, 3600 * S));
}
END_TEST

static Suite *flush_budget_suite(void)
{
	Suite *s = suite_create("flush_budget");
	TCase *tc = tcase_create("flush_budget");

	tcase_add_test(tc, allowance_first);
	tcase_add_test(tc, earns_its_share);
	tcase_add_test(tc, bounds_periodic_flushes);
	tcase_add_test(tc, savings_capped);
	tcase_add_test(tc, debt_capped);
	tcase_add_test(tc, clock_back);
	tcase_add_test(tc, no_share);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(flush_budget_suite());
}
