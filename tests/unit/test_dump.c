/*
 * test_dump.c - `cuscope dump` against processes that write spool files as the injection library
 * does (src/collectors/spool_out.c and dump.c linked here; no GPU): a job is dumped twice while it
 * keeps running, with and without a ring; a process that never answers is taken as its files are;
 * bad input gets one line and leaves nothing behind.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "collector.h"
#include "cuscope/import.h"
#include "cuscope/json.h"
#include "cuscope/trace.h"
#include "testutil.h"

#define BASE  1700000000000000000ull /* a CUPTI timestamp: ns since the epoch */
#define BATCH 64
#define STEP  20000 /* ns between launches */
#define PAIR  (sizeof(struct cs_rec_api) + sizeof(struct cs_rec_kernel))

/* The capture window lives in inject.c, which needs libcupti: keep everything. */
int cs_capture_keep(uint64_t ts)
{
	(void)ts;
	return 1;
}

static uint64_t clock_ns;

static uint64_t now(void)
{
	return clock_ns;
}

/* What `cuscope record` leaves in its spool directory for a dump. */
static void write_session(const char *dir, const char *output)
{
	char *path = tu_path(dir, CS_SESSION_FILE), text[8192];
	int n = snprintf(text, sizeof(text),
			 "output\t%s\ncommand\tpython train.py\noptions\tbacktrace\nstart\t%llu\n"
			 "record_pid\t%d\n",
			 output, (unsigned long long)(BASE / 1000000000ull * 1000000000ull),
			 (int)getpid());

	ck_assert_int_eq(tu_write_file(path, text, (size_t)n), 0);
	free(path);
}

/* The profiled process: launches (an API record and its kernel) with the clock advancing, a
 * flush and a look at the dump request after each batch, for at most 30 s or until killed.
 * answer 0: never looks (a process stuck in the driver). */
static void job(const char *dir, uint64_t ring_bytes, int answer)
{
	uint32_t name, api, corr = 0;
	time_t t0 = time(NULL);

	setenv(CS_ENV_RECORD_PID, "1", 1);
	clock_ns = BASE;
	cs_capture_configure(0, 0, 0);
	if (ring_bytes)
		cs_out_set_ring(ring_bytes, 0, now);
	if (cs_out_open(dir, BASE))
		_exit(3);
	cs_write_clock_record(BASE);
	cs_dump_setup(dir);
	name = cs_intern("_Z6kernelPfi", (size_t)-1);
	api = cs_intern("cudaLaunchKernel_v7000", (size_t)-1);
	while (time(NULL) - t0 < 30) {
		uint32_t first = corr + 1;
		struct timespec ts = {0, 2000000};

		for (int b = 0; b < BATCH; b++) {
			struct cs_rec_api a;

			memset(&a, 0, sizeof(a));
			a.start = clock_ns;
			a.end = clock_ns + 3000;
			a.correlation_id = ++corr;
			a.cbid = 211;
			a.domain = 1;
			a.api_class = CS_APICLASS_LAUNCH;
			a.name_sid = api;
			cs_out_write_event(&a, sizeof(a), CS_REC_API, 77);
			clock_ns += STEP;
		}
		for (uint32_t c = first; c <= corr; c++) {
			struct cs_rec_kernel k;

			memset(&k, 0, sizeof(k));
			k.start = clock_ns - (uint64_t)(corr - c + 1) * STEP + 5000;
			k.end = k.start + STEP / 2;
			k.correlation_id = c;
			k.stream_id = 7;
			k.name_sid = name;
			cs_out_write_event(&k, sizeof(k), CS_REC_KERNEL, 0);
		}
		cs_out_flush();
		if (answer)
			cs_dump_poll(clock_ns);
		nanosleep(&ts, NULL);
	}
	_exit(0);
}

static pid_t start_job(const char *dir, uint64_t ring_bytes, int answer)
{
	pid_t pid = fork();
	char name[64];

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		job(dir, ring_bytes, answer);
	/* its spool file exists and holds a few batches */
	snprintf(name, sizeof(name), "%d%s", (int)pid, CS_SPOOL_SUFFIX);
	for (int i = 0; i < 500; i++) {
		char *path = tu_path(dir, name);
		struct stat sb;
		/* a ring's main file holds only definitions: give it time for a few segments */
		int ready = stat(path, &sb) == 0 && (ring_bytes || sb.st_size > 64 * 1024);
		struct timespec ts = {0, 10000000}, more = {0, 300000000};

		free(path);
		if (ready) {
			if (ring_bytes)
				nanosleep(&more, NULL);
			return pid;
		}
		nanosleep(&ts, NULL);
	}
	ck_abort_msg("the job wrote no spool file");
	return pid;
}

static void stop_job(pid_t pid)
{
	int st;

	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

/* Kernels in the trace at path, and its META dump parsed (NULL when none). */
static int64_t kernels_of(const char *path, cJSON **dump)
{
	cs_trace *t = NULL;
	cs_trace_summary s;
	cs_error err = {0};
	const char *m;

	ck_assert_msg(cs_trace_open(path, &t, &err) == 0, "open %s: %s", path, err.msg);
	ck_assert_int_eq(cs_trace_get_summary(t, &s, &err), 0);
	m = cs_trace_meta(t, CS_META_DUMP);
	if (dump)
		*dump = m ? cJSON_Parse(m) : NULL;
	cs_trace_close(t);
	return s.counts[CS_EV_KERNEL];
}

static int json_int(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	ck_assert_msg(cJSON_IsNumber(v), "no %s", key);
	return v->valueint;
}

/* Entries of dir whose name starts with prefix. */
static int count_entries(const char *dir, const char *prefix)
{
	char cmd[4400];
	char *out = NULL;
	int n;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' | grep -c '^%s' || true", dir, prefix);
	{
		const char *argv[] = {"sh", "-c", cmd, NULL};

		ck_assert_int_eq(tu_run(argv, NULL, &out, NULL), 0);
	}
	n = atoi(out);
	free(out);
	return n;
}

static void dump_twice(uint64_t ring_bytes)
{
	char *dir = tu_tmpdir(), *trace = tu_path(dir, "job.db"), *d1, *d2;
	const char *argv[] = {NULL, "dump", dir, NULL};
	struct tu_result r;
	cJSON *meta;
	int64_t k1, k2;
	pid_t pid;

	write_session(dir, trace);
	pid = start_job(dir, ring_bytes, 1);
	r = tu_cuscope(argv);
	ck_assert_msg(r.rc == 0, "dump: %d %s", r.rc, r.err);
	ck_assert_ptr_nonnull(strstr(r.err, "dump 1 of 'python train.py'"));
	tu_result_free(&r);
	d1 = tu_path(dir, "job.dump-1.db");
	k1 = kernels_of(d1, &meta);
	ck_assert_int_gt(k1, 0);
	ck_assert_ptr_nonnull(meta);
	ck_assert_int_eq(json_int(meta, "n"), 1);
	ck_assert_int_eq(json_int(meta, "running"), 1);
	ck_assert_int_eq(json_int(meta, "answered"), 1);
	ck_assert_int_eq(json_int(meta, "late"), 0);
	cJSON_Delete(meta);
	{
		const char *info[] = {NULL, "info", d1, NULL};
		struct tu_result ri = tu_cuscope(info);

		ck_assert_int_eq(ri.rc, 0);
		ck_assert_msg(strstr(ri.out, "1 of a running recording, taken ") &&
				      strstr(ri.out, "; 1 of 1 running process answered"),
			      "%s", ri.out);
		tu_result_free(&ri);
	}
	/* the job goes on: its file grows, and a second dump holds later work */
	ck_assert_int_eq(kill(pid, 0), 0);
	{
		struct timespec ts = {0, 300000000};

		nanosleep(&ts, NULL);
	}
	r = tu_cuscope(argv);
	ck_assert_msg(r.rc == 0, "second dump: %d %s", r.rc, r.err);
	tu_result_free(&r);
	d2 = tu_path(dir, "job.dump-2.db");
	k2 = kernels_of(d2, NULL);
	if (!ring_bytes)
		ck_assert_msg(k2 > k1, "second dump %lld kernels, first %lld", (long long)k2,
			      (long long)k1);
	else
		/* a ring holds between its size and 1.25 times it of launches (a call and a
		 * kernel record each), never the whole run */
		ck_assert_msg((uint64_t)k2 * PAIR >= ring_bytes / 2 &&
				      (uint64_t)k2 * PAIR <= ring_bytes * 5 / 4,
			      "%lld kernels in a %llu-byte ring", (long long)k2,
			      (unsigned long long)ring_bytes);
	ck_assert_int_eq(kill(pid, 0), 0);
	/* nothing of the dumps is left in the spool directory but the request */
	ck_assert_int_eq(count_entries(dir, CS_DUMP_DIR_PREFIX), 0);
	stop_job(pid);
	free(d1);
	free(d2);
	free(trace);
	free(dir);
}

START_TEST(a_running_job_is_dumped_twice)
{
	dump_twice(0);
}
END_TEST

START_TEST(a_ring_is_dumped_with_its_window)
{
	char *dir;
	pid_t pid;

	dump_twice(1u << 20);
	/* the ring goes on deleting segments after a dump: no more than 4 closed and the current */
	dir = tu_tmpdir();
	write_session(dir, "/nonexistent/job.db");
	pid = start_job(dir, 1u << 20, 1);
	{
		const char *argv[] = {NULL, "dump", "-o", NULL, dir, NULL};
		char *out = tu_path(dir, "x.db");
		struct tu_result r;
		struct timespec ts = {0, 500000000};

		argv[3] = out;
		r = tu_cuscope(argv);
		ck_assert_msg(r.rc == 0, "dump -o: %s", r.err);
		tu_result_free(&r);
		nanosleep(&ts, NULL);
		ck_assert_int_le(count_entries(dir, "[0-9]*\\.[0-9]*\\.cuseg"), 6);
		free(out);
	}
	stop_job(pid);
	free(dir);
}
END_TEST

START_TEST(a_process_that_does_not_answer_is_taken_as_it_is)
{
	char *dir = tu_tmpdir(), *trace = tu_path(dir, "job.db"), *d1;
	const char *argv[] = {NULL, "dump", "--timeout", "0.5", dir, NULL};
	struct tu_result r;
	cJSON *meta;
	pid_t pid;

	write_session(dir, trace);
	pid = start_job(dir, 0, 0);
	r = tu_cuscope(argv);
	ck_assert_msg(r.rc == 0, "dump: %s", r.err);
	ck_assert_ptr_nonnull(strstr(r.err, "did not answer within 0.5 s"));
	tu_result_free(&r);
	d1 = tu_path(dir, "job.dump-1.db");
	ck_assert_int_gt(kernels_of(d1, &meta), 0);
	ck_assert_int_eq(json_int(meta, "answered"), 0);
	ck_assert_int_eq(json_int(meta, "late"), 1);
	cJSON_Delete(meta);
	stop_job(pid);
	free(d1);
	free(trace);
	free(dir);
}
END_TEST

START_TEST(bad_input_gets_one_line)
{
	char *dir = tu_tmpdir(), *trace = tu_path(dir, "job.db"), *taken = tu_path(dir, "t.db");
	struct {
		const char *argv[8];
		const char *says;
	} cases[] = {
		{{NULL, "dump", NULL}, "missing PID"},
		{{NULL, "dump", "--all", "12", NULL}, "not both"},
		{{NULL, "dump", "12", "13", NULL}, "one PID"},
		{{NULL, "dump", "abc", NULL}, "not a process id"},
		{{NULL, "dump", "999999999", NULL}, "not a job"},
		{{NULL, "dump", "--timeout", "x", dir, NULL}, "--timeout"},
		{{NULL, "dump", "--timeout", "0", dir, NULL}, "--timeout"},
		{{NULL, "dump", "--bogus", dir, NULL}, "--bogus"},
		{{NULL, "dump", "/", NULL}, "not the spool directory"},
		/* a recording with no CUDA process yet */
		{{NULL, "dump", dir, NULL}, "no CUDA process"},
		/* an existing output */
		{{NULL, "dump", "-o", taken, dir, NULL}, "exists"},
	};

	write_session(dir, trace);
	ck_assert_int_eq(tu_write_file(taken, "keep", 4), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tu_result r = tu_cuscope(cases[i].argv);
		size_t len;
		char *kept;

		tu_assert_one_line_error(&r, cases[i].says);
		ck_assert_msg(strstr(r.err, cases[i].says), "case %zu: %s", i, r.err);
		tu_result_free(&r);
		/* nothing written, nothing left */
		ck_assert(!tu_file_exists(trace));
		ck_assert_int_eq(count_entries(dir, "job.dump"), 0);
		ck_assert_int_eq(count_entries(dir, CS_DUMP_DIR_PREFIX), 0);
		kept = tu_read_file(taken, &len);
		ck_assert_str_eq(kept, "keep");
		free(kept);
	}
	free(taken);
	free(trace);
	free(dir);
}
END_TEST

/* --dump-on slow-step: a step over K times the recent median makes one notice; warm-up steps and
 * steps under K do not; notices are spaced, unless a step is K times the one last noticed. */
START_TEST(a_slow_step_makes_a_notice)
{
	char *dir = tu_tmpdir();
	uint64_t t = BASE, ms = 1000000;
	int notices = 0;

	cs_slow_step_setup(dir, 3.0, "step*");
	ck_assert_str_eq(cs_slow_step_pattern(), "step*");
	/* warm-up: a 10 s first step is not judged */
	ck_assert_int_eq(cs_slow_step_end(t, t + 10000 * ms), 0);
	t += 10000 * ms;
	for (int i = 0; i < 20; i++, t += 10 * ms)
		notices += cs_slow_step_end(t, t + 10 * ms);
	ck_assert_int_eq(notices, 0);
	/* 2.5 x: under K */
	ck_assert_int_eq(cs_slow_step_end(t, t + 25 * ms), 0);
	t += 25 * ms;
	/* 5 x: a notice, holding the step and the median */
	ck_assert_int_eq(cs_slow_step_end(t, t + 50 * ms), 1);
	t += 50 * ms;
	{
		char name[64], *path, *text;
		size_t len;
		unsigned long long dur = 0, median = 0;

		snprintf(name, sizeof(name), "slow.%d.0", (int)getpid());
		path = tu_path(dir, name);
		text = tu_read_file(path, &len);
		ck_assert_ptr_nonnull(text);
		ck_assert_int_eq(sscanf(text, "%llu %llu", &dur, &median), 2);
		ck_assert_int_eq(dur, 50 * ms);
		ck_assert_int_eq(median, 10 * ms);
		free(text);
		free(path);
	}
	/* another within a minute: none */
	ck_assert_int_eq(cs_slow_step_end(t, t + 80 * ms), 0);
	t += 80 * ms;
	/* unless it is K times the step last noticed: 3 x 50 ms is 150 ms */
	ck_assert_int_eq(cs_slow_step_end(t, t + 140 * ms), 0);
	t += 140 * ms;
	ck_assert_int_eq(cs_slow_step_end(t, t + 160 * ms), 1);
	t += 61000 * ms;
	ck_assert_int_eq(cs_slow_step_end(t, t + 80 * ms), 1);
	ck_assert_int_eq(count_entries(dir, "slow."), 3);
	free(dir);
}
END_TEST

/* --hang-after: a wait longer than the threshold with no GPU work completed since it began makes
 * one notice; GPU work completing, or the wait ending, keeps it quiet; a query spin counts from its
 * first "not ready". */
/* A Python thread state for the hang slots, and frames that say which state and thread they were
 * asked for. */
static uintptr_t fake_py_state(void)
{
	return 0x1234;
}

static size_t fake_py_frames(uintptr_t ts, uint64_t thread, uint32_t tid, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, "frame %u 7 /x/state-%lu.py\tf%llu\n", tid, (unsigned long)ts,
			 (unsigned long long)thread);

	return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

START_TEST(a_hang_makes_one_notice)
{
	char *dir = tu_tmpdir(), name[64], want[256], *path, *text, *pages;
	uint64_t ms = 1000000, t = BASE;
	size_t len, page;

	snprintf(name, sizeof(name), "hang.%d", (int)getpid());
	path = tu_path(dir, name);
	cs_hang_setup(dir, 100 * ms, NULL);
	cs_hang_set_python(fake_py_state, fake_py_frames);
	ck_assert(cs_hang_on());
	cs_hang_launched(40, "_Z4stepPf");
	cs_hang_gpu_done(t + 1 * ms, 39);
	/* a wait of 50 ms: not yet */
	cs_hang_enter(CS_HANG_WAIT, 1, 131, 41, t + 2 * ms);
	ck_assert_int_eq(cs_hang_poll(t + 52 * ms), 0);
	/* GPU work completes during it: not a hang */
	cs_hang_gpu_done(t + 60 * ms, 40);
	ck_assert_int_eq(cs_hang_poll(t + 200 * ms), 0);
	cs_hang_leave();
	/* a wait with nothing completing: one notice after 100 ms, not two */
	cs_hang_launched(42, "_Z4spinPKi");
	cs_hang_launched(44, NULL);
	/* names read a page at a time: one across two pages, one that runs into a page that cannot
	 * be read (what could be read of it is kept) */
	page = (size_t)sysconf(_SC_PAGESIZE);
	pages = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(pages != MAP_FAILED);
	memcpy(pages + page - 5, "_Z5crossEv", 11);
	memcpy(pages + 2 * page - 6, "_Z3end", 6);
	ck_assert_int_eq(mprotect(pages + 2 * page, page, PROT_NONE), 0);
	cs_hang_launched(45, pages + page - 5);
	cs_hang_launched(46, pages + 2 * page - 6);
	cs_hang_enter(CS_HANG_WAIT, 1, 131, 43, t + 300 * ms);
	ck_assert_int_eq(cs_hang_poll(t + 350 * ms), 0);
	ck_assert_int_eq(cs_hang_poll(t + 401 * ms), 1);
	ck_assert_int_eq(cs_hang_poll(t + 600 * ms), 0);
	text = tu_read_file(path, &len);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strstr(text, "gpu_done 1700000000060000000\n") &&
			      strstr(text, "launched 46 40\n") &&
			      strstr(text, " wait 1700000000300000000 43 ?\n"),
		      "%s", text);
	/* the launches after the last that completed, oldest first, with their kernels */
	snprintf(want, sizeof(want),
		 "pending 42 %u _Z4spinPKi\npending 44 %u ?\npending 45 %u _Z5crossEv\n"
		 "pending 46 %u _Z3end\n",
		 cs_tid(), cs_tid(), cs_tid(), cs_tid());
	ck_assert_msg(strstr(text, want) && !strstr(text, "pending 40 "), "%s", text);
	munmap(pages, 3 * page);
	/* the waiting thread's Python frames follow its line, from the state it had at the wait */
	snprintf(want, sizeof(want), " 43 ?\nframe %u 7 /x/state-4660.py\tf%llu\n", cs_tid(),
		 (unsigned long long)(uint64_t)pthread_self());
	ck_assert_msg(strstr(text, want), "%s", text);
	free(text);
	unlink(path);
	/* the wait ends: the next hang is reported again; a query spinning counts from its first
	 * "not ready" */
	cs_hang_leave();
	ck_assert_int_eq(cs_hang_poll(t + 700 * ms), 0);
	cs_hang_enter(CS_HANG_QUERY, 1, 140, 50, t + 800 * ms);
	cs_hang_enter(CS_HANG_QUERY, 1, 140, 51, t + 850 * ms);
	ck_assert_int_eq(cs_hang_poll(t + 880 * ms), 0);
	ck_assert_int_eq(cs_hang_poll(t + 901 * ms), 1);
	text = tu_read_file(path, &len);
	ck_assert_ptr_nonnull(strstr(text, " query 1700000000800000000 50 "));
	free(text);
	cs_hang_leave();
	free(path);
	free(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dump");
	TCase *tc = tcase_create("dump");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, a_running_job_is_dumped_twice);
	tcase_add_test(tc, a_ring_is_dumped_with_its_window);
	tcase_add_test(tc, a_process_that_does_not_answer_is_taken_as_it_is);
	tcase_add_test(tc, bad_input_gets_one_line);
	tcase_add_test(tc, a_slow_step_makes_a_notice);
	tcase_add_test(tc, a_hang_makes_one_notice);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
