/*
 * flush.c - whether this process records, and the flushes after host waits: the state that the
 * API callbacks (api.c) read on every call and the flush they make at a wait's exit, with the
 * census counts of all flushes. The life cycle (inject.c) sets this state up, runs the flush
 * thread that makes the flushes left to it, and ends recording.
 *
 * After a host wait (device, context, stream or event synchronize, a synchronous copy or set)
 * every record of work the wait covered is complete, so a default flush delivers it: the waiting
 * thread flushes CUPTI and the spool at the wait's exit, unless the last such flush ended less
 * than 2 x wait_flush_ms (20) ago: then the flush thread does it once wait_flush_ms have passed
 * since the last one. The waiting threads' own flushes take at most wait_flush_budget
 * thousandths (2) of the time, saved up for 1 s (flush_budget.c); past that the flush thread
 * makes them at once. So what completed before a wait reaches the spool file at once, within a
 * flush's time, or within wait_flush_ms, at a cost of at most one flush per wait_flush_ms, made by
 * the flush thread when the program waits often. A periodic default flush alone delivers nothing
 * while the host runs ahead of a busy GPU (a buffer holding an unfinished record is not
 * returned).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#include "collector.h"
#include "flush.h"
#include "options.h"

atomic_int active;     /* recording in this process */
atomic_int subscribed; /* CUPTI is ours in this process */
int flush_thread_started;

/* The flush thread sleeps in poll() on wake_fd, an eventfd: writing it is async-signal-safe. */
int wake_fd = -1;

/* Flushes after waits: when the last one ended (CUPTI ns); pending when a wait came too soon after
 * it and the flush thread is to flush once wait_flush_ms have passed. */
_Atomic uint64_t wait_flush_end;
atomic_int wait_flush_pending;
atomic_int wait_flush_urgent; /* the pending flush is due at once */
/* wait_flush_budget: the waiting threads' flushes (used under wait_flush_busy). What they may take
 * at once is what the share earns in WAIT_FLUSH_SAVED_NS. */
struct cs_flush_budget wait_budget;
atomic_flag wait_flush_busy = ATOMIC_FLAG_INIT;

int cs_inject_active(void)
{
	return atomic_load_explicit(&active, memory_order_relaxed);
}

void wake(int fd)
{
	uint64_t one = 1;
	ssize_t n;

	do
		n = write(fd, &one, sizeof(one)); /* async-signal-safe; never blocks below 2^64-1 */
	while (n < 0 && errno == EINTR);
}

/* The time after a flush after a wait before the next one, CUPTI ns. */
uint64_t wait_flush_gap(void)
{
	return (uint64_t)opts.wait_flush_ms * 1000000ull;
}

/* census: flushes after waits made by the waiting threads [0] and the flush thread [1], the
 * periodic flushes of CUPTI [2], their time and the CPU time of the thread in them, in ns */
_Atomic uint64_t census_flushes[3], census_flush_ns[3], census_flush_cpu_ns[3];
/* of census_flush_ns, the time inside cuptiActivityFlushAll */
_Atomic uint64_t census_flushall_ns[3];

uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* census: one flush of kind k (the index of census_flushes) that took wall_ns and began when the
 * thread's CPU time was cpu0 */
void census_add_flush(int k, uint64_t wall_ns, uint64_t flushall_ns, uint64_t cpu0)
{
	atomic_fetch_add(&census_flushes[k], 1);
	atomic_fetch_add(&census_flush_ns[k], wall_ns);
	atomic_fetch_add(&census_flushall_ns[k], flushall_ns);
	atomic_fetch_add(&census_flush_cpu_ns[k], thread_cpu_ns() - cpu0);
}

/* Hand everything complete now to the spool file: CUPTI's buffers whose records have all completed
 * and every thread's staged records. Called by one thread at a time (wait_flush_busy). */
uint64_t flush_completed(int on_flush_thread)
{
	uint64_t t0 = 0, tf = 0, t1 = 0, cpu0 = opts.census ? thread_cpu_ns() : 0;

	atomic_store(&wait_flush_pending, 0);
	cuptiGetTimestamp(&t0);
	cuptiActivityFlushAll(0);
	if (opts.census)
		cuptiGetTimestamp(&tf);
	cs_out_flush();
	cuptiGetTimestamp(&t1);
	atomic_store(&wait_flush_end, t1);
	if (opts.census)
		census_add_flush(on_flush_thread, t1 - t0, tf - t0, cpu0);
	return t1 > t0 ? t1 - t0 : 0;
}

/* The flush thread makes the pending flush at once. */
static void flush_soon(void)
{
	atomic_store(&wait_flush_urgent, 1);
	atomic_store(&wait_flush_pending, 1);
	wake(wake_fd);
}

/* The flush thread flushes once a period has passed since the last flush. */
static void flush_later(void)
{
	if (!atomic_load_explicit(&wait_flush_pending, memory_order_relaxed) &&
	    !atomic_exchange(&wait_flush_pending, 1) && wake_fd >= 0)
		wake(wake_fd);
}

void cs_inject_after_wait(uint64_t now)
{
	if (!opts.wait_flush_ms || !atomic_load_explicit(&subscribed, memory_order_relaxed) ||
	    !cs_inject_active())
		return;
	/* Within two gaps of the last flush, the flush thread flushes (once one gap has passed), so
	 * that in a loop that waits often the decoding stays off the waiting thread; past that (a
	 * GPU-bound stretch without waits, or the first wait) the waiting thread flushes itself, so
	 * that a process that ends right after the wait keeps what completed before it. */
	if (now <
	    atomic_load_explicit(&wait_flush_end, memory_order_relaxed) + 2 * wait_flush_gap()) {
		flush_later();
		return;
	}
	if (atomic_flag_test_and_set(&wait_flush_busy)) {
		/* another thread is flushing, perhaps since before this wait's work completed: the
		 * flush thread flushes again once a period has passed */
		flush_later();
		return;
	}
	if (opts.wait_flush_budget && flush_thread_started &&
	    !cs_flush_budget_allows(&wait_budget, now)) {
		/* this thread's flushes took their share of the time: the flush thread flushes at
		 * once instead, and the program's thread goes on (what completed before the wait is
		 * in the file once that flush is done: a process gone before then loses it) */
		atomic_flag_clear(&wait_flush_busy);
		flush_soon();
		return;
	}
	{
		uint64_t took = flush_completed(0);

		if (opts.wait_flush_budget)
			cs_flush_budget_spend(&wait_budget, took);
	}
	atomic_flag_clear(&wait_flush_busy);
}
