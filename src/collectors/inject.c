/*
 * inject.c - entry point and life cycle of libcuscope-inject.so.
 *
 * The CUDA driver loads the library named by CUDA_INJECTION64_PATH at cuInit and calls
 * InitializeInjection. It subscribes to CUPTI (once per process: if another tool holds CUPTI it
 * says which and lets the program run unprofiled), enables the activity kinds and API callbacks
 * cuscope records, starts a flush thread that hands CUPTI's completed buffers to the spool file
 * every few hundred milliseconds, and flushes everything at exit.
 *
 * What a job that ends abruptly keeps (docs/recording.md):
 * - After a host wait (device, context, stream or event synchronize, a synchronous copy or set)
 *   every record of work the wait covered is complete, so a default flush delivers it: the waiting
 *   thread flushes CUPTI and the spool at the wait's exit, unless the last such flush ended less
 *   than 2 x wait_flush_ms (20) ago: then the flush thread does it once wait_flush_ms have passed
 *   since the last one. The waiting threads' own flushes take at most wait_flush_budget
 *   thousandths (2) of the time, saved up for 1 s (flush_budget.c); past that the flush thread
 *   makes them at once. So what completed before a wait reaches the spool file at once, within a
 *   flush's time, or within wait_flush_ms, at a cost of at most one flush per wait_flush_ms, made by
 *   the flush thread when the program waits often. A periodic default flush alone delivers nothing
 *   while the host runs ahead of a busy GPU (a buffer holding an unfinished record is not
 *   returned).
 * - SIGTERM, SIGINT, SIGHUP and SIGQUIT, when the program left them at their default action: the
 *   handler wakes the flush thread, which forces a flush and writes the process's end record, waits
 *   for it (at most FATAL_FLUSH_TIMEOUT_MS), restores the default action and raises the signal
 *   again, so the process ends as it would have, status 128+N. A handler the program installed
 *   (before or after) is never replaced. The handler itself calls only async-signal-safe functions.
 *
 * Options come from CUSCOPE_OPTIONS, a comma-separated list set by `cuscope record`:
 *   api=all          record every runtime and driver API call
 *   census           count calls per API id, and the flushes with their time and CPU time, and
 *                    print them at exit (for development)
 *   latency          turn on CUPTI latency timestamps (kernel queued/submitted; costs about 3%)
 *   limit=BYTES      stop recording once the spool file reaches BYTES
 *   ring_bytes=BYTES keep only the last BYTES of the events, in segments (spool_out.c); the
 *                    limit is then ignored
 *   ring_ns=NS       keep only the events of the last NS nanoseconds, in segments
 *   window=T0:T1     record only GPU work and calls that start in [T0, T1) (CLOCK_REALTIME ns;
 *                    0 = open)
 *   capture=profiler record only between cudaProfilerStart and cudaProfilerStop
 *   capture=nvtx:PAT record only inside NVTX ranges whose text matches PAT (fnmatch)
 *   hang_after_ms=N  (record --hang-after) a thread in a wait, or spinning on a query, for N ms
 *                    with no GPU work completed since makes a notice for record (hang.c)
 *   slow_step=K      (record --dump-on slow-step) a step over K x the median of the recent ones
 *                    makes a notice for record to dump (slow_step.c)
 *   step_pattern=PAT the steps of slow_step: NVTX ranges whose text matches PAT (default step*)
 *   backtrace        capture stacks at waits, copies, allocations and frees, and at kernel
 *                    launches once per call site (stacks.c)
 *   no_launch_stacks with backtrace: no stacks at kernel launches (to measure what they cost)
 *   buffers=N        CUPTI device buffers per context (default 8; 3.2 MB each)
 *   buffer_kb=N      size of the activity buffers handed to CUPTI, KiB (default 4096; 64..65536):
 *                    CUPTI returns a buffer only once every record in it has completed, so
 *                    smaller ones let a flush take what completed while later work still runs
 *   flush_ms=N       flush period (default 200)
 *   wait_flush_ms=N  longest time between flushes after host waits (default 20; 0: no flush
 *                    after waits)
 *   wait_flush_budget=N  the waiting threads flush themselves only while those flushes take at
 *                    most N thousandths of the program's time, saved up for at most 1 s
 *                    (flush_budget.c); past that, a wait that would flush on the waiting thread
 *                    wakes the flush thread to flush at once instead (default 2; 0: no limit)
 *   no_signals       leave signal dispositions alone (no flush when a default-action signal ends
 *                    the process)
 *   quiet            no messages on stderr
 *   no_staging       events go straight to the shared spool buffer, not through a staging buffer
 *                    per thread (spool_out.c)
 *   no_callbacks, no_memory, no_sync, no_nvtx, cb=runtime, cb=driver, no_pool
 *                    leave one source or mechanism out (to measure what each costs)
 *   cb_noop          the API callbacks are enabled but return at once (CUPTI's cost of them
 *                    without cuscope's code; records no API calls)
 *   pinned           CUPTI keeps its kernel, copy and set records in pinned host memory
 *                    (CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED) instead of device memory
 *   no_memcpy2       no MEMCPY2 activity (copies between GPUs)
 *   zero_all         a completed activity buffer is zeroed whole for reuse, not only its valid
 *                    bytes (to measure what that costs)
 *   clock=cupti      the callbacks time calls with cuptiGetTimestamp() even where the TSC could
 *                    be read (clock.c)
 *   check_tails      count the completed activity buffers with a byte that is not zero past
 *                    their valid bytes (scans each buffer: slow) and print it at exit
 *   sync_activity    synchronization records from CUPTI's SYNCHRONIZATION activity (with the
 *                    CUDA event ids) instead of from the wait and query callbacks (api.c); that
 *                    activity costs every kernel launch, the callbacks only the waits
 *   calibrate        the process is `cuscope record`'s measurement of what recording costs a
 *                    launch: cuscope_calibrate_switch() may turn recording on and off
 *
 * Nothing here may crash, hang or change the program: every failure turns recording off and
 * returns.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#include "collector.h"
#include "cuscope/files.h"
#include "cuscope/launch_cost.h"
#include "flush_budget.h"
#include "inject.h"
#include "pyframes.h"

#define ACTIVITY_BUFFER_SIZE (4u << 20) /* the default; buffer_kb=N */
#define BUFFER_POOL_MAX	     8 /* zeroed activity buffers kept for reuse */
/* How long a fatal signal waits for the flush thread before the process ends anyway. */
#define FATAL_FLUSH_TIMEOUT_MS 3000

struct inject_options {
	int api_all, census, latency, quiet, capture_profiler;
	char *capture_nvtx;			       /* fnmatch pattern */
	double slow_step;			       /* --dump-on slow-step=K; 0 off */
	uint64_t hang_after_ms;			       /* --hang-after; 0 off */
	char *step_pattern;			       /* its steps' NVTX pattern */
	int no_callbacks, no_memory, no_sync, no_nvtx; /* for measuring what each source costs */
	int cb_noop;	      /* callbacks enabled, returning at once: CUPTI's own cost of them */
	int sync_activity;    /* sync records from CUPTI's activity, not from the wait callbacks */
	int cb_domains;	      /* 1 runtime, 2 driver, 3 both (default) */
	int backtrace;	      /* capture stacks at waits, copies, allocations and frees */
	int no_launch_stacks; /* ... but not at kernel launches */
	int pinned;	      /* CUPTI's records in pinned host memory, not device memory */
	int no_memcpy2;	      /* no MEMCPY2 activity */
	int no_pool;	      /* fresh, unzeroed activity buffers from malloc (the CUPTI default) */
	int zero_all;	      /* a completed buffer zeroed whole, not only where CUPTI wrote */
	int check_tails;      /* count completed buffers with a byte written past the valid ones */
	int staging;	      /* events through per-thread staging buffers (spool_out.c) */
	uint64_t limit;
	uint64_t ring_bytes, ring_ns;  /* record --ring: one of them, or neither */
	uint64_t window_t0, window_t1; /* realtime ns */
	size_t cupti_buffers;
	size_t buffer_size; /* of the activity buffers handed to CUPTI, bytes */
	unsigned flush_ms;
	unsigned wait_flush_ms;	    /* 0: no flush after waits */
	unsigned wait_flush_budget; /* permille of the time the waiting threads' flushes may take */
	int no_signals;
	int calibrate; /* the calibration process (cuscope_calibrate_switch) */
	int clock_cupti; /* callbacks read cuptiGetTimestamp(), never the TSC (clock.c) */
};

static struct inject_options opts = {.cupti_buffers = 8,
				     .buffer_size = ACTIVITY_BUFFER_SIZE,
				     .flush_ms = 200,
				     .wait_flush_ms = 20,
				     .wait_flush_budget = 2,
				     .cb_domains = 3,
				     .staging = 1};
static CUpti_SubscriberHandle subscriber;
static atomic_int active; /* recording in this process */
static atomic_int shut_down;
static atomic_int subscribed; /* CUPTI is ours in this process */
static pid_t owner_pid;
static pthread_t flush_thread;
static int flush_thread_started;
static atomic_int flush_stop;
static uint64_t last_dropped_reported;

/* The flush thread sleeps in poll() on wake_fd; a fatal signal's handler waits on done_fd. Both are
 * eventfds: writing them is async-signal-safe. */
static int wake_fd = -1, done_fd = -1;
static atomic_int fatal_signal; /* the signal being handled; 0 when none */

/* Flushes after waits: when the last one ended (CUPTI ns); pending when a wait came too soon after
 * it and the flush thread is to flush once wait_flush_ms have passed. */
static _Atomic uint64_t wait_flush_end;
static atomic_int wait_flush_pending;
static atomic_int wait_flush_urgent; /* the pending flush is due at once */
/* wait_flush_budget: the waiting threads' flushes (used under wait_flush_busy). What they may take
 * at once is what the share earns in WAIT_FLUSH_SAVED_NS. */
static struct cs_flush_budget wait_budget;
#define WAIT_FLUSH_SAVED_NS 1000000000ull
static atomic_flag wait_flush_busy = ATOMIC_FLAG_INIT;

/*
 * Activity buffers are handed to CUPTI already zeroed and reused. CUPTI asks for a buffer on the
 * thread whose record fills the last one, often the launching thread; a fresh buffer would cost
 * that thread CUPTI's zeroing of 4 MiB and a page fault per 4 KiB page. A completed buffer is
 * zeroed on the thread that completes it (the flush thread or CUPTI's own) and kept here.
 */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *pool[BUFFER_POOL_MAX];
static int pool_len;

static void inject_log(const char *fmt, const char *arg)
{
	if (opts.quiet)
		return;
	fprintf(stderr, "cuscope: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
}

int cs_inject_active(void)
{
	return atomic_load_explicit(&active, memory_order_relaxed);
}

int cs_capture_profiler_api(void)
{
	return opts.capture_profiler;
}

const char *cs_capture_nvtx_pattern(void)
{
	return opts.capture_nvtx;
}

static void parse_options(void)
{
	const char *env = getenv(CS_ENV_OPTIONS);
	char *copy, *tok, *save = NULL;

	if (!env)
		return;
	copy = strdup(env);
	if (!copy)
		return;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (strcmp(tok, "api=all") == 0)
			opts.api_all = 1;
		else if (strcmp(tok, "census") == 0)
			opts.census = 1;
		else if (strcmp(tok, "latency") == 0)
			opts.latency = 1;
		else if (strcmp(tok, "quiet") == 0)
			opts.quiet = 1;
		else if (strcmp(tok, "no_callbacks") == 0)
			opts.no_callbacks = 1;
		else if (strcmp(tok, "cb_noop") == 0)
			opts.cb_noop = 1;
		else if (strcmp(tok, "sync_activity") == 0)
			opts.sync_activity = 1;
		else if (strcmp(tok, "backtrace") == 0)
			opts.backtrace = 1;
		else if (strcmp(tok, "no_launch_stacks") == 0)
			opts.no_launch_stacks = 1;
		else if (strcmp(tok, "pinned") == 0)
			opts.pinned = 1;
		else if (strcmp(tok, "no_memcpy2") == 0)
			opts.no_memcpy2 = 1;
		else if (strcmp(tok, "no_pool") == 0)
			opts.no_pool = 1;
		else if (strcmp(tok, "no_staging") == 0)
			opts.staging = 0;
		else if (strcmp(tok, "cb=runtime") == 0)
			opts.cb_domains = 1;
		else if (strcmp(tok, "cb=driver") == 0)
			opts.cb_domains = 2;
		else if (strcmp(tok, "no_memory") == 0)
			opts.no_memory = 1;
		else if (strcmp(tok, "no_sync") == 0)
			opts.no_sync = 1;
		else if (strcmp(tok, "no_nvtx") == 0)
			opts.no_nvtx = 1;
		else if (strcmp(tok, "capture=profiler") == 0)
			opts.capture_profiler = 1;
		else if (strncmp(tok, "capture=nvtx:", 13) == 0)
			opts.capture_nvtx = strdup(tok + 13);
		else if (strncmp(tok, "hang_after_ms=", 14) == 0)
			opts.hang_after_ms = strtoull(tok + 14, NULL, 10);
		else if (strncmp(tok, "slow_step=", 10) == 0)
			opts.slow_step = strtod(tok + 10, NULL);
		else if (strncmp(tok, "step_pattern=", 13) == 0)
			opts.step_pattern = strdup(tok + 13);
		else if (strncmp(tok, "limit=", 6) == 0)
			opts.limit = strtoull(tok + 6, NULL, 10);
		else if (strncmp(tok, "ring_bytes=", 11) == 0)
			opts.ring_bytes = strtoull(tok + 11, NULL, 10);
		else if (strncmp(tok, "ring_ns=", 8) == 0)
			opts.ring_ns = strtoull(tok + 8, NULL, 10);
		else if (strncmp(tok, "buffers=", 8) == 0)
			opts.cupti_buffers = strtoull(tok + 8, NULL, 10);
		else if (strncmp(tok, "buffer_kb=", 10) == 0)
			opts.buffer_size = (size_t)strtoull(tok + 10, NULL, 10) << 10;
		else if (strcmp(tok, "zero_all") == 0)
			opts.zero_all = 1;
		else if (strcmp(tok, "check_tails") == 0)
			opts.check_tails = 1;
		else if (strcmp(tok, "clock=cupti") == 0)
			opts.clock_cupti = 1;
		else if (strncmp(tok, "flush_ms=", 9) == 0)
			opts.flush_ms = (unsigned)strtoul(tok + 9, NULL, 10);
		else if (strncmp(tok, "wait_flush_ms=", 14) == 0)
			opts.wait_flush_ms = (unsigned)strtoul(tok + 14, NULL, 10);
		else if (strncmp(tok, "wait_flush_budget=", 18) == 0)
			opts.wait_flush_budget = (unsigned)strtoul(tok + 18, NULL, 10);
		else if (strcmp(tok, "no_signals") == 0)
			opts.no_signals = 1;
		else if (strcmp(tok, "calibrate") == 0)
			opts.calibrate = 1;
		else if (strncmp(tok, "window=", 7) == 0) {
			char *colon;

			opts.window_t0 = strtoull(tok + 7, &colon, 10);
			if (*colon == ':')
				opts.window_t1 = strtoull(colon + 1, NULL, 10);
		}
	}
	free(copy);
	if (opts.flush_ms < 10)
		opts.flush_ms = 10;
	if (opts.cupti_buffers < 1)
		opts.cupti_buffers = 1;
	if (opts.wait_flush_budget > 1000)
		opts.wait_flush_budget = 1000;
	if (opts.buffer_size < (64u << 10))
		opts.buffer_size = 64u << 10;
	if (opts.buffer_size > (64u << 20))
		opts.buffer_size = 64u << 20;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	uint8_t *b = NULL;

	if (opts.no_pool) {
		b = aligned_alloc(8, opts.buffer_size);
	} else {
		pthread_mutex_lock(&pool_lock);
		if (pool_len > 0)
			b = pool[--pool_len];
		pthread_mutex_unlock(&pool_lock);
		if (!b)
			b = calloc(1, opts.buffer_size); /* malloc's alignment is enough */
	}
	*buffer = b;
	*size = b ? opts.buffer_size : 0;
	*max_records = 0;
}

/* check_tails: completed buffers, and those with a byte that is not zero past the valid ones */
static _Atomic uint64_t tails_checked, tails_dirty;

/* 1 when a byte of buffer[from, opts.buffer_size) is not zero. */
static int tail_dirty(const uint8_t *buffer, size_t from)
{
	for (size_t i = from; i < opts.buffer_size; i++)
		if (buffer[i])
			return 1;
	return 0;
}

/*
 * Zero a completed buffer and keep it for buffer_requested, or free it when the pool is full.
 * CUPTI writes only the first `valid` bytes of a buffer it was given zeroed (the attribute asks for
 * zeros so that it need not write the fields a record leaves unset), so only those are zeroed:
 * a flush that returns a buffer holding a few records costs a memset of those, not of the whole
 * buffer (4 MiB by default)
 * (the check_tails option checks that every byte past `valid` is still zero).
 */
static void buffer_recycle(uint8_t *buffer, size_t valid)
{
	if (!opts.no_pool) {
		size_t dirty = opts.zero_all || valid > opts.buffer_size ? opts.buffer_size : valid;

		if (opts.check_tails) {
			atomic_fetch_add(&tails_checked, 1);
			if (tail_dirty(buffer, dirty))
				atomic_fetch_add(&tails_dirty, 1);
		}
		memset(buffer, 0, dirty);
		pthread_mutex_lock(&pool_lock);
		if (pool_len < BUFFER_POOL_MAX) {
			pool[pool_len++] = buffer;
			buffer = NULL;
		}
		pthread_mutex_unlock(&pool_lock);
	}
	free(buffer);
}

/* Write the records lost since the last report (always when force: the final report carries CUPTI's
 * device memory). */
static void report_dropped(int force)
{
	uint64_t dropped = cs_out_dropped();
	struct cs_rec_dropped r;

	if (dropped == last_dropped_reported && !force)
		return;
	memset(&r, 0, sizeof(r));
	r.count = dropped - last_dropped_reported;
	r.cupti_device_bytes = (uint64_t)opts.cupti_buffers * 3200000ull;
	last_dropped_reported = dropped;
	cs_out_write(&r, sizeof(r), CS_REC_DROPPED, 0);
}

/* census: the buffers CUPTI handed back, their valid bytes and the time in buffer_completed
 * (decoding and recycling: cuscope's part of a flush) */
static _Atomic uint64_t census_buffers, census_buffer_bytes, census_buffer_ns;

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
				      size_t size, size_t valid)
{
	CUpti_Activity *rec = NULL;
	size_t dropped = 0;
	uint64_t t0 = 0, t1 = 0;

	if (opts.census)
		cuptiGetTimestamp(&t0);
	if (cs_inject_active() && valid > 0) {
		while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
			cs_decode_activity(rec);
		if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS &&
		    dropped)
			cs_out_add_dropped(dropped);
	}
	(void)size;
	buffer_recycle(buffer, valid);
	if (opts.census) {
		cuptiGetTimestamp(&t1);
		atomic_fetch_add(&census_buffers, 1);
		atomic_fetch_add(&census_buffer_bytes, valid);
		atomic_fetch_add(&census_buffer_ns, t1 - t0);
	}
}

static void wake(int fd)
{
	uint64_t one = 1;
	ssize_t n;

	do
		n = write(fd, &one, sizeof(one)); /* async-signal-safe; never blocks below 2^64-1 */
	while (n < 0 && errno == EINTR);
}

/* The spool's shared buffer is half full: the flush thread writes it (cs_out_set_drain_wake). */
static atomic_int drain_pending;

static void wake_for_drain(void)
{
	atomic_store(&drain_pending, 1);
	wake(wake_fd);
}

/* The time after a flush after a wait before the next one, CUPTI ns. */
static uint64_t wait_flush_gap(void)
{
	return (uint64_t)opts.wait_flush_ms * 1000000ull;
}

/* census: flushes after waits made by the waiting threads [0] and the flush thread [1], the
 * periodic flushes of CUPTI [2], their time and the CPU time of the thread in them, in ns */
static _Atomic uint64_t census_flushes[3], census_flush_ns[3], census_flush_cpu_ns[3];
/* of census_flush_ns, the time inside cuptiActivityFlushAll */
static _Atomic uint64_t census_flushall_ns[3];
static uint64_t census_flush_thread_cpu_ns; /* the flush thread's CPU time, all of it */

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* census: one flush of kind k (the index of census_flushes) that took wall_ns and began when the
 * thread's CPU time was cpu0 */
static void census_add_flush(int k, uint64_t wall_ns, uint64_t flushall_ns, uint64_t cpu0)
{
	atomic_fetch_add(&census_flushes[k], 1);
	atomic_fetch_add(&census_flush_ns[k], wall_ns);
	atomic_fetch_add(&census_flushall_ns[k], flushall_ns);
	atomic_fetch_add(&census_flush_cpu_ns[k], thread_cpu_ns() - cpu0);
}

static void census_report(void)
{
	static const char *const kind[3] = {"flushes after waits on the waiting threads",
					    "flushes after waits on the flush thread",
					    "periodic flushes"};

	for (int i = 0; i < 3; i++)
		fprintf(stderr,
			"cuscope census: %s: %llu, %.1f us in all (%.1f in cuptiActivityFlushAll), "
			"%.1f us of CPU\n",
			kind[i], (unsigned long long)census_flushes[i],
			(double)census_flush_ns[i] / 1e3, (double)census_flushall_ns[i] / 1e3,
			(double)census_flush_cpu_ns[i] / 1e3);
	fprintf(stderr,
		"cuscope census: buffers handed back: %llu, %.1f KiB of records, %.1f us in "
		"buffer_completed\n",
		(unsigned long long)census_buffers, (double)census_buffer_bytes / 1024.0,
		(double)census_buffer_ns / 1e3);
	fprintf(stderr,
		"cuscope census: the flush thread's CPU time: %.1f us; the callbacks' clock: %s\n",
		(double)census_flush_thread_cpu_ns / 1e3,
		cs_clock_uses_tsc() ? "TSC" : "cuptiGetTimestamp");
}

/* Hand everything complete now to the spool file: CUPTI's buffers whose records have all completed
 * and every thread's staged records. Called by one thread at a time (wait_flush_busy). */
static uint64_t flush_completed(int on_flush_thread)
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

/* The process's end record; exit_code -1 when unknown. */
static void write_end(int32_t exit_code)
{
	struct cs_rec_end end;
	uint64_t now = 0;

	cuptiGetTimestamp(&now);
	cs_write_clock_record(now);
	report_dropped(1);
	cs_api_write_call_tails();
	memset(&end, 0, sizeof(end));
	end.timestamp = now;
	end.exit_code = exit_code;
	end.records = cs_out_records();
	end.dropped = cs_out_dropped();
	cs_out_write(&end, sizeof(end), CS_REC_END, cs_tid());
}

/* On the flush thread, for a fatal signal's handler: force out everything, write the end, and say
 * so on done_fd. */
static void flush_fatal(int sig)
{
	if (!atomic_exchange(&shut_down, 1) && cs_inject_active()) {
		if (atomic_load(&subscribed))
			cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
		write_end(128 + sig);
		cs_out_flush();
	}
	wake(done_fd);
}

/* Milliseconds from CUPTI time now to deadline, rounded up; 0 when it has passed. */
static int ms_until(uint64_t now, uint64_t deadline)
{
	uint64_t d = deadline > now ? deadline - now : 0;

	return (int)((d + 999999) / 1000000);
}

static void *flush_main(void *arg)
{
	unsigned ticks = 0;
	uint64_t now = 0, next_tick, cpu0;

	(void)arg;
	cuptiGetTimestamp(&now);
	next_tick = now + (uint64_t)opts.flush_ms * 1000000ull;
	while (!atomic_load(&flush_stop)) {
		struct pollfd pfd = {.fd = wake_fd, .events = POLLIN};
		uint64_t deadline = next_tick, v;
		int sig;

		if (atomic_load(&wait_flush_pending)) {
			uint64_t due = atomic_load(&wait_flush_urgent)
					       ? 0
					       : atomic_load(&wait_flush_end) + wait_flush_gap();

			if (due < deadline)
				deadline = due;
		}
		cuptiGetTimestamp(&now);
		if (poll(&pfd, 1, ms_until(now, deadline)) > 0 && (pfd.revents & POLLIN)) {
			if (read(wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				break;
		}
		sig = atomic_load(&fatal_signal);
		if (sig) {
			flush_fatal(sig);
			break;
		}
		if (atomic_load(&flush_stop) || !cs_inject_active())
			continue;
		if (atomic_exchange(&drain_pending, 0))
			cs_out_drain();
		cuptiGetTimestamp(&now);
		if (atomic_load(&wait_flush_pending) &&
		    (atomic_load(&wait_flush_urgent) ||
		     now >= atomic_load(&wait_flush_end) + wait_flush_gap()) &&
		    !atomic_flag_test_and_set(&wait_flush_busy)) {
			atomic_store(&wait_flush_urgent, 0);
			if (atomic_load(&subscribed))
				flush_completed(1);
			atomic_flag_clear(&wait_flush_busy);
		}
		if (now < next_tick)
			continue;
		next_tick = now + (uint64_t)opts.flush_ms * 1000000ull;
		cs_clock_anchor();
		cpu0 = opts.census ? thread_cpu_ns() : 0;
		/* skipped while a waiting thread flushes: that flush delivers the same */
		if (atomic_load(&subscribed) && !atomic_flag_test_and_set(&wait_flush_busy)) {
			cuptiActivityFlushAll(0);
			atomic_flag_clear(&wait_flush_busy);
		}
		if (opts.census) {
			uint64_t t1 = 0;

			cuptiGetTimestamp(&t1);
			census_add_flush(2, t1 - now, t1 - now, cpu0);
		}
		if (++ticks % 25 == 0)
			cs_write_clock_record(now);
		report_dropped(0);
		cs_out_flush();
		cs_dump_poll(now);
		cs_hang_poll(now);
	}
	if (opts.census)
		census_flush_thread_cpu_ns = thread_cpu_ns();
	return NULL;
}

static void inject_shutdown(void)
{
	if (getpid() != owner_pid || atomic_exchange(&shut_down, 1))
		return;
	if (flush_thread_started) {
		atomic_store(&flush_stop, 1);
		wake(wake_fd);
		pthread_join(flush_thread, NULL);
		cs_out_set_drain_wake(NULL); /* no one left to drain: the writers do */
	}
	if (cs_inject_active()) {
		if (atomic_load(&subscribed))
			cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
		write_end(-1);
	}
	atomic_store(&active, 0);
	cs_out_close();
	if (atomic_exchange(&subscribed, 0)) {
		cs_api_census_report();
		if (opts.census)
			census_report();
		if (opts.check_tails)
			fprintf(stderr,
				"cuscope check_tails: %llu activity buffers completed, %llu with "
				"a byte written past the valid ones\n",
				(unsigned long long)tails_checked, (unsigned long long)tails_dirty);
		/* Buffers that arrive later (context teardown) are freed by buffer_completed,
		 * unread. */
		cuptiUnsubscribe(subscriber);
	}
}

/* ---- fatal signals ---- */

static const int fatal_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};

static void fatal_signal_handler(int sig, siginfo_t *si, void *uc)
{
	int saved = errno, expected = 0;
	struct sigaction dfl;

	(void)si;
	(void)uc;
	if (getpid() == owner_pid && flush_thread_started && !atomic_load(&flush_stop)) {
		struct timespec t0, t;
		int left = FATAL_FLUSH_TIMEOUT_MS;

		if (atomic_compare_exchange_strong(&fatal_signal, &expected, sig))
			wake(wake_fd);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (;;) {
			struct pollfd pfd = {.fd = done_fd, .events = POLLIN};

			if (poll(&pfd, 1, left) >= 0 || errno != EINTR)
				break;
			clock_gettime(CLOCK_MONOTONIC, &t);
			left = FATAL_FLUSH_TIMEOUT_MS - (int)((t.tv_sec - t0.tv_sec) * 1000 +
							      (t.tv_nsec - t0.tv_nsec) / 1000000);
			if (left <= 0)
				break;
		}
	}
	/* End as the default action would have: the signal stays blocked until the handler
	 * returns, then kills the process (or dumps core for SIGQUIT). */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	raise(sig);
	errno = saved;
}

/* Take the fatal signals the program left at their default action. */
static void install_signal_handlers(void)
{
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++) {
		struct sigaction old, sa;

		if (sigaction(fatal_signals[i], NULL, &old) || (old.sa_flags & SA_SIGINFO) ||
		    old.sa_handler != SIG_DFL)
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = fatal_signal_handler;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sigfillset(&sa.sa_mask);
		sigaction(fatal_signals[i], &sa, NULL);
	}
}

static void atfork_prepare(void)
{
	cs_stacks_atfork_prepare();
	cs_out_atfork_prepare();
}

static void atfork_parent(void)
{
	cs_out_atfork_parent();
	cs_stacks_atfork_parent();
}

static void atfork_child(void)
{
	/* The child has none of the parent's threads and cannot use CUDA: record nothing there. */
	atomic_store(&active, 0);
	flush_thread_started = 0;
	cs_out_set_drain_wake(NULL);
	pthread_mutex_init(&pool_lock, NULL); /* a thread of the parent may have held it */
	cs_out_atfork_child();
	cs_stacks_atfork_child();
}

/*
 * Where this process writes: $CUSCOPE_SPOOL_DIR as given (`cuscope record` makes a fresh private
 * one), else the per-user default of cs_default_spool_dir(), made 0700 when missing. The default
 * lives in a directory everyone can write (/tmp): one that another user made or can write to, or
 * a symbolic link planted at its name, is refused, and NULL returned after saying so.
 */
static const char *spool_dir(char *buf, size_t cap)
{
	const char *dir = getenv(CS_ENV_SPOOL_DIR);
	char why[160], msg[sizeof(why) + 4200];

	if (dir && *dir)
		return dir;
	if (!cs_default_spool_dir(buf, cap)) {
		inject_log("%s", "the default spool directory's name is too long (TMPDIR); this "
				 "process runs unprofiled");
		return NULL;
	}
	if (cs_private_dir(buf, 1, why, sizeof(why))) {
		snprintf(msg, sizeof(msg), "'%s': %s", buf, why);
		inject_log("refusing the spool directory %s; this process runs unprofiled (set "
			   "CUSCOPE_SPOOL_DIR to a directory of your own)",
			   msg);
		return NULL;
	}
	return buf;
}

static const CUpti_ActivityKind activity_kinds[] = {
	CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
	CUPTI_ACTIVITY_KIND_MEMCPY,
	CUPTI_ACTIVITY_KIND_MEMCPY2, /* copies between GPUs */
	CUPTI_ACTIVITY_KIND_MEMSET,
	CUPTI_ACTIVITY_KIND_MEMORY2,
	CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
	CUPTI_ACTIVITY_KIND_DEVICE,
};

/* The activity kinds the options record. */
static int kind_wanted(CUpti_ActivityKind kind)
{
	return !((opts.no_memory && kind == CUPTI_ACTIVITY_KIND_MEMORY2) ||
		 (opts.no_memcpy2 && kind == CUPTI_ACTIVITY_KIND_MEMCPY2) ||
		 ((opts.no_sync || !opts.sync_activity) &&
		  kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION));
}

static int enable_activities(void)
{
	size_t limit = opts.cupti_buffers,
	       prealloc = opts.cupti_buffers < 3 ? opts.cupti_buffers : 3;
	size_t sz = sizeof(size_t);

	/* Cap CUPTI's device memory: at the memory ceiling it would change the program. */
	cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT, &sz, &limit);
	cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE, &sz,
				  &prealloc);
	if (!opts.no_pool) {
		uint8_t zeroed = 1;
		size_t zsz = sizeof(zeroed);

		/* Our buffers come zeroed: CUPTI need not zero them on the requesting thread. */
		cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &zsz,
					  &zeroed);
	}
	if (opts.pinned) {
		uint8_t pinned = 1;
		size_t psz = sizeof(pinned);

		cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED, &psz,
					  &pinned);
	}
	if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS)
		return -1;
	for (size_t i = 0; i < sizeof(activity_kinds) / sizeof(activity_kinds[0]); i++) {
		CUptiResult rc;

		if (!kind_wanted(activity_kinds[i]))
			continue;
		rc = cuptiActivityEnable(activity_kinds[i]);

		if (rc != CUPTI_SUCCESS && activity_kinds[i] != CUPTI_ACTIVITY_KIND_DEVICE) {
			const char *s = NULL;

			cuptiGetResultString(rc, &s);
			inject_log("cannot enable a CUPTI activity kind: %s", s ? s : "?");
		}
	}
	if (opts.latency)
		cuptiActivityEnableLatencyTimestamps(1);
	return 0;
}

/* Once per process, from whichever entry point runs first (CUDA or NVTX): spool file, fork and exit
 * hooks, flush thread. Returns 0 when the process records. */
static int setup_status = -1;

#include <execinfo.h>
static void debug_crash_handler(int sig)
{
	void *pcs[64];
	int n = backtrace(pcs, 64);

	backtrace_symbols_fd(pcs, n, 2);
	signal(sig, SIG_DFL);
	raise(sig);
}
/* --hang-after: the Python frames of a thread blocked in a CUDA wait, for the hang notice (hang.c):
 * "frame TID LINE FILE<TAB>FUNC" lines, innermost first, read from the flush thread with safe
 * reads while the thread stays in one call (none when it kept moving). */
static size_t hang_py_frames(uintptr_t ts, uint64_t thread, uint32_t tid, char *buf, size_t cap)
{
	cs_py_frame f[24];
	int n = 0;
	size_t len = 0;

	/* a thread that spins on a query runs between its reads: a read holds while it sleeps or
	 * queries, so a few tries find it still */
	for (int i = 0; i < 50 && n <= 0; i++)
		n = cs_py_walk_other(ts, thread, f, 24);

	for (int i = 0; i < n; i++) {
		char file[512], func[256];
		int w;

		if (cs_py_code_strings_other(f[i].code, file, sizeof(file), func, sizeof(func)))
			continue;
		w = snprintf(buf + len, cap - len, "frame %u %d %s\t%s\n", tid, (int)f[i].line,
			     file, func);
		if (w < 0 || (size_t)w >= cap - len)
			break;
		len += (size_t)w;
	}
	return len;
}


static void process_setup_once(void)
{
	char dirbuf[4096];
	const char *dir;
	uint64_t now = 0, t0 = 0, t1 = 0;
	sigset_t all, old;

	parse_options();
	cs_clock_init(!opts.clock_cupti);
	if (getenv("CUSCOPE_DEBUG_CRASH"))
		signal(SIGSEGV, debug_crash_handler);
	owner_pid = getpid();
	cuptiGetTimestamp(&now);
	dir = spool_dir(dirbuf, sizeof(dirbuf));
	if (!dir)
		return; /* spool_dir() said why */
	cs_out_set_ring(opts.ring_bytes, opts.ring_ns, cs_clock_now);
	if (cs_out_open(dir, now)) {
		inject_log("cannot create a spool file in '%s'; this process runs unprofiled", dir);
		return;
	}
	cs_out_set_limit(opts.ring_bytes || opts.ring_ns ? 0 : opts.limit);
	cs_dump_setup(dir);
	if (getenv(CS_ENV_RECORD_PID))
		cs_slow_step_setup(dir, opts.slow_step, opts.step_pattern ? opts.step_pattern : "step*");
	if (getenv(CS_ENV_RECORD_PID) && !opts.no_callbacks) {
		cs_hang_setup(dir, opts.hang_after_ms * 1000000ull, cs_api_call_name);
		cs_hang_set_python(cs_py_thread_state, hang_py_frames);
	}
	cs_out_set_staging(opts.staging);
	cs_flush_budget_init(&wait_budget, now, opts.wait_flush_budget,
			     WAIT_FLUSH_SAVED_NS / 1000u * opts.wait_flush_budget);
	if (opts.window_t0 || opts.window_t1) {
		struct timespec rt;
		int64_t offset;

		clock_gettime(CLOCK_REALTIME, &rt);
		offset = (int64_t)now - ((int64_t)rt.tv_sec * 1000000000ll + rt.tv_nsec);
		t0 = opts.window_t0 ? (uint64_t)((int64_t)opts.window_t0 + offset) : 0;
		t1 = opts.window_t1 ? (uint64_t)((int64_t)opts.window_t1 + offset) : 0;
	}
	cs_capture_configure(t0, t1, opts.capture_profiler || opts.capture_nvtx);
	atomic_store(&active, 1);
	cs_write_clock_record(now);
	cs_write_process_record();
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	/* The flush thread takes no signals: they stay with the program's own threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (wake_fd >= 0 && done_fd >= 0 &&
	    pthread_create(&flush_thread, NULL, flush_main, NULL) == 0) {
		flush_thread_started = 1;
		pthread_setname_np(flush_thread, "cuscope-flush");
		cs_out_set_drain_wake(wake_for_drain);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	atexit(inject_shutdown);
	if (flush_thread_started && !opts.no_signals)
		install_signal_handlers();
	setup_status = 0;
}

int cs_inject_nvtx_enabled(void)
{
	return !opts.no_nvtx;
}

int cs_inject_setup(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, process_setup_once);
	return setup_status;
}

/* The API callbacks the options ask for; noop: returning at once (calibration). */
static void enable_callbacks(int noop)
{
	if (!opts.no_callbacks)
		cs_api_enable(subscriber, opts.api_all, opts.census, opts.cb_domains,
			      opts.backtrace ? (opts.no_launch_stacks ? 1 : 3) : 0, noop,
			      !opts.no_sync && !opts.sync_activity);
}

int InitializeInjection(void) __attribute__((visibility("default")));

int InitializeInjection(void)
{
	static atomic_int initialized;
	CUpti_SubscriberParams sp;
	char old_name[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 64];
	CUptiResult rc;

	if (atomic_exchange(&initialized, 1))
		return 1;
	if (cs_inject_setup())
		return 1;
	memset(&sp, 0, sizeof(sp));
	memset(old_name, 0, sizeof(old_name));
	sp.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
	sp.subscriberName = "cuscope";
	sp.oldSubscriberName = old_name;
	sp.oldSubscriberSize = sizeof(old_name);
	rc = cuptiSubscribe_v2(&subscriber, cs_api_callback, NULL, &sp);
	if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		inject_log("CUPTI is already in use by %s; CUDA activity of this process is not "
			   "recorded",
			   old_name[0] ? old_name : "another tool");
		return 1;
	}
	if (rc != CUPTI_SUCCESS) {
		const char *s = NULL;

		cuptiGetResultString(rc, &s);
		inject_log("cannot subscribe to CUPTI (%s); CUDA activity is not recorded",
			   s ? s : "?");
		return 1;
	}
	if (enable_activities()) {
		inject_log("cannot register CUPTI activity buffers; %s",
			   "CUDA activity is not recorded");
		cuptiUnsubscribe(subscriber);
		return 1;
	}
	/* Stacks: set up here, outside any callback (the unwinder and the Python layout need
	 * dlopen/dlsym). */
	if (opts.backtrace && cs_stacks_init(1))
		opts.backtrace = 0;
	enable_callbacks(opts.cb_noop);
	atomic_store(&subscribed, 1);
	return 1;
}

/*
 * What recording costs a launch is measured by `cuscope record` in a process of its own
 * (src/cli/calibrate.c): it loads this library, calls InitializeInjection() and runs loops of
 * launches, switching between them what CUPTI and cuscope do (enum cs_calibrate_mode). Only a
 * process started with the "calibrate" option may switch.
 */
int cuscope_calibrate_switch(int mode) __attribute__((visibility("default")));

int cuscope_calibrate_switch(int mode)
{
	int all = mode == CS_CALIBRATE_ALL || mode == CS_CALIBRATE_EMPTY_CALLBACKS;

	if (!opts.calibrate || !atomic_load(&subscribed))
		return -1;
	cuptiEnableDomain(0, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
	cuptiEnableDomain(0, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
	for (size_t i = 0; i < sizeof(activity_kinds) / sizeof(activity_kinds[0]); i++) {
		CUpti_ActivityKind k = activity_kinds[i];
		int on = all ? kind_wanted(k)
			     : mode == CS_CALIBRATE_KERNELS &&
					 k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;

		if (k != CUPTI_ACTIVITY_KIND_DEVICE)
			(on ? cuptiActivityEnable : cuptiActivityDisable)(k);
	}
	if (all)
		enable_callbacks(mode == CS_CALIBRATE_EMPTY_CALLBACKS ? 1 : opts.cb_noop);
	return 0;
}
