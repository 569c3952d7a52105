/*
 * test_clock.c - the callbacks' clock (src/collectors/clock.c) against CUPTI's own, without a GPU.
 *
 * Every read of cs_clock_now() must fall between two cuptiGetTimestamp() reads taken around it
 * (give or take the conversion's error, 2 us here), whether it reads CUPTI's clock or the TSC,
 * before and after anchors, and from threads reading while the anchor is being replaced.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cupti.h>

#include "collector.h"
#include "testutil.h"

#define SLACK_NS 2000 /* what a converted TSC read may be off by */

static uint64_t cupti_now(void)
{
	uint64_t t = 0;

	ck_assert_int_eq(cuptiGetTimestamp(&t), CUPTI_SUCCESS);
	return t;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Reads of cs_clock_now() outside [before - SLACK_NS, after + SLACK_NS], in n tries. */
static int reads_outside(int n)
{
	int bad = 0;

	for (int i = 0; i < n; i++) {
		uint64_t before = cupti_now(), t = cs_clock_now(), after = cupti_now();

		if (t + SLACK_NS < before || t > after + SLACK_NS) {
			if (bad++ < 3)
				fprintf(stderr, "read %d: %llu not in [%llu, %llu]\n", i,
					(unsigned long long)t, (unsigned long long)before,
					(unsigned long long)after);
		}
	}
	return bad;
}

/* The TSC is read only where the kernel keeps time with it: say which path the TSC tests took. */
static int tsc_here(void)
{
	int on = cs_clock_init(1);

	if (!on)
		fprintf(stderr, "test_clock: this machine's clock source is not the TSC: the "
				"TSC tests check the fallback to CUPTI's clock\n");
	return on;
}

START_TEST(cupti_clock_when_asked)
{
	ck_assert_int_eq(cs_clock_init(0), 0);
	cs_clock_anchor();
	sleep_ms(5);
	cs_clock_anchor();
	ck_assert_int_eq(cs_clock_uses_tsc(), 0);
	ck_assert_int_eq(reads_outside(10000), 0);
}
END_TEST

START_TEST(tsc_needs_two_anchors_then_agrees_with_cupti)
{
	int on = tsc_here();

	/* one pair, no rate yet: CUPTI's clock */
	ck_assert_int_eq(cs_clock_uses_tsc(), 0);
	ck_assert_int_eq(reads_outside(1000), 0);
	sleep_ms(20);
	cs_clock_anchor();
	ck_assert_int_eq(cs_clock_uses_tsc(), on);
	/* right after the anchor, and 50 ms past it (extrapolated with the rate) */
	ck_assert_int_eq(reads_outside(10000), 0);
	sleep_ms(50);
	ck_assert_int_eq(reads_outside(10000), 0);
}
END_TEST

static atomic_int stop_readers;

static void *reader(void *arg)
{
	int *bad = arg;

	while (!atomic_load(&stop_readers))
		*bad += reads_outside(100);
	return NULL;
}

START_TEST(reads_while_anchors_change)
{
	pthread_t th[3];
	int bad[3] = {0, 0, 0};

	tsc_here();
	cs_clock_anchor();
	sleep_ms(5);
	cs_clock_anchor();
	atomic_store(&stop_readers, 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, reader, &bad[i]), 0);
	for (int i = 0; i < 200; i++) {
		sleep_ms(1);
		cs_clock_anchor();
	}
	atomic_store(&stop_readers, 1);
	for (int i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(bad[i], 0);
	}
}
END_TEST

START_TEST(later_reads_are_not_earlier)
{
	uint64_t prev, back = 0;

	tsc_here();
	sleep_ms(5);
	cs_clock_anchor();
	prev = cs_clock_now();
	/* within one anchor a thread's reads never go back; across a new anchor by at most the
	 * slack (api.c keeps a call's end at or after its start) */
	for (int i = 0; i < 200000; i++) {
		uint64_t t;

		if (i % 20000 == 0)
			cs_clock_anchor();
		t = cs_clock_now();
		if (t < prev && prev - t > back)
			back = prev - t;
		prev = t;
	}
	ck_assert_uint_le(back, SLACK_NS);
}
END_TEST

/* The anchor rule alone, on made-up pairs: 3 GHz (1/3 ns per tick), a pair every 200 ms. */
START_TEST(anchor_rule)
{
	const uint64_t mult = (1ull << 32) / 3, t0 = 1000000000000ull, r0 = 1700000000000000000ull;
	struct cs_clock_anchor first = {t0, r0, 0}, a, b;

	/* too close to tell a rate: nothing changes */
	ck_assert_int_eq(cs_clock_next(&first, t0 + 1000, r0 + 333, &a), 0);
	/* the first rate */
	ck_assert_int_eq(cs_clock_next(&first, t0 + 600000000, r0 + 200000000, &a), 1);
	ck_assert_uint_eq(a.tsc, t0 + 600000000);
	ck_assert_uint_eq(a.rt, r0 + 200000000);
	ck_assert_uint_le(a.mult > mult ? a.mult - mult : mult - a.mult, 1);
	/* NTP slewing by 100 ppm: followed */
	ck_assert_int_eq(cs_clock_next(&a, a.tsc + 600000000, a.rt + 200020000, &b), 1);
	ck_assert_uint_gt(b.mult, a.mult);
	ck_assert_uint_eq(b.rt, a.rt + 200020000);
	/* the realtime clock set forward by 1 s: the pair moves, the rate stays */
	ck_assert_int_eq(cs_clock_next(&a, a.tsc + 600000000, a.rt + 1200000000, &b), 1);
	ck_assert_uint_eq(b.mult, a.mult);
	ck_assert_uint_eq(b.rt, a.rt + 1200000000);
	/* ... and set back by an hour */
	ck_assert_int_eq(cs_clock_next(&a, a.tsc + 600000000, a.rt - 3600000000000ull, &b), 1);
	ck_assert_uint_eq(b.mult, a.mult);
	ck_assert_uint_eq(b.rt, a.rt - 3600000000000ull);
	/* the counter jumped back (a virtual machine moved): the pair moves, the rate stays */
	ck_assert_int_eq(cs_clock_next(&a, a.tsc - 5000000000ull, a.rt + 200000000, &b), 1);
	ck_assert_uint_eq(b.mult, a.mult);
	ck_assert_uint_eq(b.tsc, a.tsc - 5000000000ull);
	/* a first rate no TSC has (100 GHz): no rate yet */
	ck_assert_int_eq(cs_clock_next(&first, t0 + 20000000000ull, r0 + 200000000, &b), 1);
	ck_assert_uint_eq(b.mult, 0);
}
END_TEST

static Suite *clock_suite(void)
{
	Suite *s = suite_create("clock");
	TCase *tc = tcase_create("clock");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, cupti_clock_when_asked);
	tcase_add_test(tc, tsc_needs_two_anchors_then_agrees_with_cupti);
	tcase_add_test(tc, reads_while_anchors_change);
	tcase_add_test(tc, later_reads_are_not_earlier);
	tcase_add_test(tc, anchor_rule);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(clock_suite());
}
