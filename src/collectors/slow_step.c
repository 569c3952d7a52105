/*
 * slow_step.c - `record --dump-on slow-step=K`: the steps are the NVTX ranges whose text matches a
 * pattern (nvtx.c tells each one's end); a step that took more than K times the median of the last
 * SLOW_WINDOW steps makes the process write a notice "slow.<pid>.<n>" into the spool directory, and
 * `cuscope record`, which looks for notices, writes a dump (src/cli/cmd_dump.c). The first
 * SLOW_WARMUP steps (compilation, the caching allocator filling) are never judged, a median needs
 * SLOW_MIN steps, and notices are at most one per SLOW_GAP_NS (unless the step is K times the one
 * last noticed: a mild slow step does not hide a much worse one that follows) and SLOW_MAX per
 * process, so that a job that slows down for good makes a few dumps, not one per step. Two steps
 * ending at once on two threads: the second is not judged (the lock is only ever tried).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"
#include "cuscope/files.h"

#define SLOW_WINDOW  64
#define SLOW_WARMUP  3
#define SLOW_MIN     8
#define SLOW_GAP_NS  (60ull * 1000000000ull)
#define SLOW_MAX     10

static struct {
	pthread_mutex_t lock;
	char spool[4096];
	char *pattern; /* NULL: off */
	double k;
	uint64_t seen; /* steps ended */
	uint64_t dur[SLOW_WINDOW];
	unsigned n, next;
	uint64_t last_notice; /* CUPTI ns; 0 none */
	uint64_t last_dur;    /* the duration of the step last noticed */
	unsigned notices;
} slow = {.lock = PTHREAD_MUTEX_INITIALIZER};

void cs_slow_step_setup(const char *spool, double k, const char *pattern)
{
	if (!spool || !(k > 1.0) || !pattern || !*pattern)
		return;
	snprintf(slow.spool, sizeof(slow.spool), "%s", spool);
	slow.k = k;
	slow.pattern = strdup(pattern);
}

const char *cs_slow_step_pattern(void)
{
	return slow.pattern;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Write "slow.<pid>.<n>": the step's duration, the median, its end (CUPTI ns). */
static void write_notice(uint64_t dur, uint64_t median, uint64_t end)
{
	char name[64], text[128];
	int len;

	snprintf(name, sizeof(name), "slow.%d.%u", (int)getpid(), slow.notices);
	len = snprintf(text, sizeof(text), "%llu %llu %llu\n", (unsigned long long)dur,
		       (unsigned long long)median, (unsigned long long)end);
	cs_file_put(slow.spool, name, text, (size_t)len);
}

int cs_slow_step_end(uint64_t start, uint64_t end)
{
	uint64_t dur = end > start ? end - start : 0, sorted[SLOW_WINDOW], median;
	int noticed = 0;

	/* never wait: a child forked while another thread held the lock keeps it held */
	if (!slow.pattern || pthread_mutex_trylock(&slow.lock))
		return 0;
	if (slow.seen++ < SLOW_WARMUP)
		goto out;
	if (slow.n >= SLOW_MIN) {
		memcpy(sorted, slow.dur, slow.n * sizeof(sorted[0]));
		qsort(sorted, slow.n, sizeof(sorted[0]), cmp_u64);
		median = sorted[slow.n / 2];
		if (median && (double)dur > slow.k * (double)median && slow.notices < SLOW_MAX &&
		    (!slow.last_notice || end - slow.last_notice >= SLOW_GAP_NS ||
		     (double)dur > slow.k * (double)slow.last_dur)) {
			write_notice(dur, median, end);
			slow.last_notice = end;
			slow.last_dur = dur;
			slow.notices++;
			noticed = 1;
		}
	}
	slow.dur[slow.next] = dur;
	slow.next = (slow.next + 1) % SLOW_WINDOW;
	if (slow.n < SLOW_WINDOW)
		slow.n++;
out:
	pthread_mutex_unlock(&slow.lock);
	return noticed;
}
