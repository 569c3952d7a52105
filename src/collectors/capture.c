/*
 * capture.c - what part of the run is recorded: --delay/--duration, and capture ranges
 * (cudaProfilerStart/Stop, NVTX ranges matching --capture=nvtx:PATTERN).
 *
 * Host events (API calls, NVTX) are kept by their time. GPU work is kept by its GPU time for the
 * window, and by the correlation id of its launch for capture ranges, so that a kernel launched
 * inside a range and run after it ended is kept, and one launched before it is not. Ranges are a
 * ring of the latest MAX_CAPTURE_RANGES, newest first when searched: records arrive within seconds
 * of their range.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "collector.h"

#define MAX_CAPTURE_RANGES 4096

struct capture_range {
	uint64_t t0, t1; /* t1 == 0: the range is still open */
	uint32_t c0, c1;
};

static uint64_t cap_t0, cap_t1; /* window in CUPTI time, 0 = open */
static int capture_ranged;
static struct capture_range ranges[MAX_CAPTURE_RANGES];
static atomic_int nranges;
static _Atomic uint32_t last_corr;
static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;

void cs_capture_configure(uint64_t t0, uint64_t t1, int ranged)
{
	cap_t0 = t0;
	cap_t1 = t1;
	capture_ranged = ranged;
}

static int in_window(uint64_t ts)
{
	return !(cap_t0 && ts < cap_t0) && !(cap_t1 && ts >= cap_t1);
}

/* 1 when v is inside a capture range, comparing times (by_corr 0) or correlation ids (by_corr 1).
 */
static int in_range(uint64_t v, int by_corr)
{
	int n = atomic_load(&nranges);

	/* Newest first: most records belong to a recent range. */
	for (int i = n - 1; i >= 0 && i >= n - MAX_CAPTURE_RANGES; i--) {
		const struct capture_range *r = &ranges[i % MAX_CAPTURE_RANGES];
		uint64_t lo = by_corr ? r->c0 : r->t0, hi = by_corr ? r->c1 : r->t1;

		if (v >= lo && (!r->t1 || v <= hi))
			return 1;
		if (r->t1 && v > hi)
			return 0;
	}
	return 0;
}

int cs_capture_keep_host(uint64_t ts)
{
	return in_window(ts) && (!capture_ranged || in_range(ts, 0));
}

int cs_capture_keep_gpu(uint32_t corr, uint64_t ts)
{
	return in_window(ts) && (!capture_ranged || in_range(corr, 1));
}

void cs_capture_note_corr(uint32_t corr)
{
	atomic_store_explicit(&last_corr, corr, memory_order_relaxed);
}

void cs_capture_begin(uint64_t ts)
{
	int n;

	pthread_mutex_lock(&capture_lock);
	n = atomic_load(&nranges);
	if (n == 0 || ranges[(n - 1) % MAX_CAPTURE_RANGES].t1) {
		struct capture_range *r = &ranges[n % MAX_CAPTURE_RANGES];

		r->t1 = 0;
		r->c1 = 0;
		r->t0 = ts;
		r->c0 = atomic_load(&last_corr) + 1;
		atomic_store(&nranges, n + 1);
	}
	pthread_mutex_unlock(&capture_lock);
}

void cs_capture_end(uint64_t ts)
{
	int n;

	pthread_mutex_lock(&capture_lock);
	n = atomic_load(&nranges);
	if (n > 0) {
		struct capture_range *r = &ranges[(n - 1) % MAX_CAPTURE_RANGES];

		if (!r->t1) {
			r->c1 = atomic_load(&last_corr);
			r->t1 = ts > r->t0 ? ts : r->t0;
		}
	}
	pthread_mutex_unlock(&capture_lock);
}
