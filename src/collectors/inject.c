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
 * - After a host wait (device, context, stream or event synchronize, a synchronous copy or set),
 *   what completed before it: the wait's exit flushes it, on the waiting thread or, soon, on the
 *   flush thread (flush.c says when, and what that costs).
 * - SIGTERM, SIGINT, SIGHUP and SIGQUIT, when the program left them at their default action: the
 *   handler wakes the flush thread, which forces a flush and writes the process's end record, waits
 *   for it (at most FATAL_FLUSH_TIMEOUT_MS), restores the default action and raises the signal
 *   again, so the process ends as it would have, status 128+N. A handler the program installed
 *   (before or after) is never replaced. The handler itself calls only async-signal-safe functions.
 *
 * Options come from CUSCOPE_OPTIONS, a comma-separated list set by `cuscope record`: options.c
 * lists them.
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

#include "api.h"
#include "collector.h"
#include "cuscope/files.h"
#include "cuscope/launch_cost.h"
#include "flush.h"
#include "flush_budget.h"
#include "inject.h"
#include "options.h"
#include "pyframes.h"

#define BUFFER_POOL_MAX 8 /* zeroed activity buffers kept for reuse */
/* How long a fatal signal waits for the flush thread before the process ends anyway. */
#define FATAL_FLUSH_TIMEOUT_MS 3000

static CUpti_SubscriberHandle subscriber;
static atomic_int shut_down;
static pid_t owner_pid;
static pthread_t flush_thread;
static atomic_int flush_stop;
static uint64_t last_dropped_reported;

/* A fatal signal's handler waits on done_fd, an eventfd like wake_fd (flush.c): writing it is
 * async-signal-safe. */
static int done_fd = -1;
static atomic_int fatal_signal; /* the signal being handled; 0 when none */

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

/* The spool's shared buffer is half full: the flush thread writes it (cs_out_set_drain_wake). */
static atomic_int drain_pending;

static void wake_for_drain(void)
{
	atomic_store(&drain_pending, 1);
	wake(wake_fd);
}

static uint64_t census_flush_thread_cpu_ns; /* the flush thread's CPU time, all of it */

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
