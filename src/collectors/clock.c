/*
 * clock.c - the host clock of the records the callbacks write (API calls, synchronizations, NVTX),
 * in CUPTI's time base, read cheaply.
 *
 * CUPTI's timestamps (cuptiGetTimestamp, and the GPU times it converts) are CLOCK_REALTIME in ns.
 * Reading that clock costs a vDSO clock_gettime, 34 to 50 ns, and a kernel launch takes two of
 * them (enter and exit of its call). Where the kernel itself keeps time with the TSC (its clock
 * source is "tsc": the counter is invariant and the same on every CPU), the callbacks read the TSC
 * instead and convert it with an anchor: a (TSC, CUPTI time) pair and the ns per tick measured
 * between the last two anchors. The flush thread takes a new anchor every flush period (200 ms), so
 * the conversion follows NTP's slewing of CLOCK_REALTIME and a read is off by at most the anchors'
 * own jitter (tens of ns) plus the rate's change over one period. Until the second anchor (no rate
 * yet), and wherever the TSC cannot be trusted, every read is cuptiGetTimestamp().
 *
 * Readers take the anchor under a sequence lock (the flush thread is the only writer); a read never
 * waits for more than a writer's few stores.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <cupti.h>

#include "collector.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#define HAVE_TSC 1
#else
#define HAVE_TSC 0
#endif

static atomic_int tsc_on;		     /* the TSC is read, once a rate is known */
static _Atomic uint64_t a_tsc, a_rt, a_mult; /* the anchor readers use; a_mult 0: no rate yet */
static atomic_uint a_seq;		     /* odd while the flush thread writes the anchor */
static struct cs_clock_anchor last;	     /* the writer's last pair */

static uint64_t cupti_now(void)
{
	uint64_t t = 0;

	cuptiGetTimestamp(&t);
	return t;
}

#if HAVE_TSC
/* 1 when the CPU's TSC runs at a constant rate in every power state (CPUID 0x80000007 EDX bit 8).
 */
static int tsc_invariant(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid(0x80000007u, &a, &b, &c, &d))
		return 0;
	return (d >> 8) & 1u;
}

/* 1 when the kernel keeps its own time with the TSC: it checked that the counters of all CPUs
 * agree and stay stable (it would have switched to another clock source otherwise). */
static int kernel_uses_tsc(void)
{
	char src[32] = "";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");

	if (!f)
		return 0;
	if (!fgets(src, sizeof(src), f))
		src[0] = '\0';
	fclose(f);
	return strcmp(src, "tsc\n") == 0 || strcmp(src, "tsc") == 0;
}

/* A (TSC, CUPTI time) pair: the TSC halfway through the tightest of three CUPTI reads. */
static struct cs_clock_anchor take_pair(void)
{
	struct cs_clock_anchor best = {0, 0, 0};
	uint64_t best_span = UINT64_MAX;

	for (int i = 0; i < 3; i++) {
		uint64_t t0 = __rdtsc(), rt = cupti_now(), t1 = __rdtsc();

		if (t1 >= t0 && t1 - t0 < best_span) {
			best_span = t1 - t0;
			best.tsc = t0 + (t1 - t0) / 2;
			best.rt = rt;
		}
	}
	return best;
}
#endif

int cs_clock_next(const struct cs_clock_anchor *last, uint64_t tsc, uint64_t rt,
		  struct cs_clock_anchor *next)
{
	unsigned __int128 m;

	/* Too close to the last pair to tell a rate: keep that one. */
	if (tsc >= last->tsc && tsc - last->tsc <= 1000000u)
		return 0;
	/*
	 * The rate between the last two pairs, unless it is one no TSC has (outside 0.1 to 10 ns
	 * per tick) or moved by more than NTP ever slews the clock (0.05%) since the last, or
	 * either clock went back: the realtime clock was set, or the counter jumped (a virtual
	 * machine moved). Then the new pair is kept with the old rate, which puts reads back on
	 * CUPTI's clock from here on; without an old rate, the TSC waits for the next pair.
	 */
	next->tsc = tsc;
	next->rt = rt;
	next->mult = last->mult;
	if (tsc > last->tsc && rt > last->rt) {
		m = ((unsigned __int128)(rt - last->rt) << 32) / (tsc - last->tsc);
		if (m >= ((unsigned __int128)1 << 32) / 10 && m <= ((unsigned __int128)10 << 32) &&
		    (!last->mult ||
		     (m <= last->mult + last->mult / 2000 && m >= last->mult - last->mult / 2000)))
			next->mult = (uint64_t)m;
	}
	return 1;
}

int cs_clock_init(int want_tsc)
{
	atomic_store(&tsc_on, 0);
	atomic_store(&a_mult, 0);
#if HAVE_TSC
	if (!want_tsc || !tsc_invariant() || !kernel_uses_tsc())
		return 0;
	last = take_pair();
	atomic_store(&tsc_on, 1);
	return 1;
#else
	(void)want_tsc;
	return 0;
#endif
}

void cs_clock_anchor(void)
{
#if HAVE_TSC
	struct cs_clock_anchor now;

	if (!atomic_load_explicit(&tsc_on, memory_order_relaxed))
		return;
	now = take_pair();
	if (!cs_clock_next(&last, now.tsc, now.rt, &now))
		return;
	last = now;
	if (!now.mult)
		return;
	atomic_fetch_add_explicit(&a_seq, 1, memory_order_acq_rel);
	atomic_store_explicit(&a_tsc, now.tsc, memory_order_relaxed);
	atomic_store_explicit(&a_rt, now.rt, memory_order_relaxed);
	atomic_store_explicit(&a_mult, now.mult, memory_order_relaxed);
	atomic_fetch_add_explicit(&a_seq, 1, memory_order_release);
#endif
}

int cs_clock_uses_tsc(void)
{
	return atomic_load_explicit(&tsc_on, memory_order_relaxed) &&
	       atomic_load_explicit(&a_mult, memory_order_relaxed) != 0;
}

uint64_t cs_clock_now(void)
{
#if HAVE_TSC
	if (atomic_load_explicit(&tsc_on, memory_order_relaxed)) {
		uint64_t tsc, rt, mult, t;
		unsigned seq;

		do {
			seq = atomic_load_explicit(&a_seq, memory_order_acquire);
			tsc = atomic_load_explicit(&a_tsc, memory_order_relaxed);
			rt = atomic_load_explicit(&a_rt, memory_order_relaxed);
			mult = atomic_load_explicit(&a_mult, memory_order_relaxed);
			atomic_thread_fence(memory_order_acquire);
		} while ((seq & 1u) || seq != atomic_load_explicit(&a_seq, memory_order_relaxed));
		if (mult) {
			t = __rdtsc();
			if (t >= tsc)
				return rt + (uint64_t)(((unsigned __int128)(t - tsc) * mult) >> 32);
			return rt - (uint64_t)(((unsigned __int128)(tsc - t) * mult) >> 32);
		}
	}
#endif
	return cupti_now();
}
