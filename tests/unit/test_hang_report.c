/*
 * test_hang_report.c - the hang report that `cuscope record --hang-after` writes
 * (src/cli/hang_report.c) from a process's notice (src/collectors/hang.c writes it; test_dump
 * checks that) and the dump taken at that moment: the waiting thread, the kernels launched after
 * the last GPU work that completed, oldest first, named and with the call sites their launches had
 * in the dump, and the last kernel completed on the stream; the native stack of a waiting thread,
 * read from outside its process (src/cli/native_stack.c), which then goes on undisturbed.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "cuscope/trace.h"
#include "testutil.h"

#define MS   1000000LL
#define S    1000000000LL
#define T0   (10 * S)
#define PID  4242
#define TEST "test_hang_report"

/* A stack of two Python frames (inner at line a of train.py, called from outer at line b). */
static int64_t two_frames(cs_trace_writer *w, const char *inner, int a, const char *outer, int b)
{
	cs_frame frames[2];
	int64_t stack;

	memset(frames, 0, sizeof(frames));
	frames[0] = (cs_frame){2, 0, NULL, inner, 0, "train.py", a};
	frames[1] = (cs_frame){2, 0, NULL, outer, 0, "train.py", b};
	stack = cs_writer_add_stack(w, frames, 2);
	tu_need(stack >= 0, TEST, "a stack");
	return stack;
}

/* A dump of pid: kernel "step" completed (correlation id 40), then two launches (41: "spin",
 * launched from train.py:12 in loop < train.py:30 in main; 42: another kernel with no stack) whose
 * kernels never ended, so the dump holds their calls only. */
static void write_dump(const char *path)
{
	static const char *const names[] = {"_Z4stepPf", "cudaLaunchKernel"};
	int64_t ids[2];
	cs_trace_writer *w = tu_open_trace(path, "python3 train.py", TEST);
	cs_kernel k;
	cs_api a;
	int64_t stack;

	tu_add_process(w, PID, "python3 train.py", TEST);
	tu_intern_names(w, names, 2, ids, TEST);
	stack = two_frames(w, "loop", 12, "main", 30);
	k = tu_kernel(PID, ids[0], T0 + 1 * MS, T0 + 1 * MS + 10000, T0 + 2 * MS);
	k.correlation_id = 40;
	tu_need(cs_writer_add_kernel(w, &k) == 0, TEST, "a kernel");
	for (uint32_t c = 40; c <= 42; c++) {
		cs_event ev;

		cs_event_clear(&ev, CS_EV_API);
		a = ev.u.api;
		a.start = T0 + (int64_t)(c - 39) * MS;
		a.end = a.start + 5000;
		a.pid = a.tid = PID;
		a.correlation_id = c;
		a.name_id = ids[1];
		a.stack_id = c == 41 ? stack : CS_ID_NONE;
		tu_need(cs_writer_add_api(w, &a) == 0, TEST, "an API call");
	}
	tu_finish_trace(w, TEST);
}

START_TEST(pending_kernels_are_named_with_their_sites)
{
	char *dir = tu_tmpdir(), *dump = tu_path(dir, "run.dump-1.db"), notice[64], *path, *text;
	char want[256];
	size_t len = 0;
	FILE *out;

	write_dump(dump);
	snprintf(notice, sizeof(notice), "hang.%d", PID);
	path = tu_path(dir, notice);
	snprintf(want, sizeof(want),
		 "now %lld\ngpu_done %lld\nlaunched 42 40\n"
		 "thread %d wait %lld 43 cudaDeviceSynchronize\n"
		 "pending 41 %d _Z4spinPKi\npending 42 %d ?\n",
		 T0 + 9 * S, T0 + 2 * MS, PID, T0 + 4 * S, PID, PID);
	ck_assert_int_eq(tu_write_file(path, want, strlen(want)), 0);
	out = open_memstream(&text, &len);
	ck_assert_int_eq(cli_hang_report(out, dir, "python3 train.py", dump), 1);
	fclose(out);
	ck_assert_msg(strstr(text, "process 4242: no GPU work has completed for 9.0 s\n"
				   "  thread 4242: waiting in cudaDeviceSynchronize for 5.0 s "
				   "(correlation id 43)\n"),
		      "%s", text);
	ck_assert_msg(strstr(text, "  launched after the last GPU work that completed, oldest first:\n"
				   "    correlation id 41 (thread 4242): spin, launched "
				   "from train.py:12 in loop < train.py:30 in main\n"
				   "    correlation id 42 (thread 4242): a kernel not named\n"),
		      "%s", text);
	ck_assert_msg(strstr(text, "last completed kernel _Z4stepPf"), "%s", text);
	/* the notice is taken: a second report has nothing to say */
	ck_assert(!tu_file_exists(path));
	free(text);
	out = open_memstream(&text, &len);
	ck_assert_int_eq(cli_hang_report(out, dir, "python3 train.py", dump), 0);
	fclose(out);
	ck_assert_uint_eq(len, 0);
	free(text);
	free(path);
	free(dump);
	free(dir);
}
END_TEST

/* The child's wait: tells the parent it is here, then blocks in read() until the parent writes. */
__attribute__((noinline)) void hang_report_blocked_here(int ready, int go)
{
	char c = 'r';

	if (write(ready, &c, 1) != 1 || read(go, &c, 1) != 1)
		_exit(3);
	__asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays on the stack */
}

static volatile sig_atomic_t got_signals;

static void on_signal(int sig)
{
	(void)sig;
	got_signals++;
}

/* A child blocked in hang_report_blocked_here() (its pipes in fds: ready, then go); it counts the
 * SIGRTMIN it is given (queued: each one sent arrives once; its handler restarts the read), writes
 * the count (an int) into the ready pipe once it goes on, and ends with status 7. */
static pid_t start_blocked_child(int fds[4])
{
	char c;
	pid_t child;

	ck_assert(pipe(fds) == 0 && pipe(fds + 2) == 0);
	child = fork();
	ck_assert(child >= 0);
	if (child == 0) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sa.sa_flags = SA_RESTART;
		sigaction(SIGRTMIN, &sa, NULL);
		hang_report_blocked_here(fds[1], fds[2]);
		{
			int n = got_signals;

			if (write(fds[1], &n, sizeof(n)) != (ssize_t)sizeof(n))
				_exit(3);
		}
		_exit(7);
	}
	ck_assert_int_eq(read(fds[0], &c, 1), 1);
	usleep(20000); /* in read() by now */
	return child;
}

/* Let the child go on: it must end as it would have, with status want; *signals (when not NULL):
 * the signals it counted. */
static void end_blocked_child(pid_t child, int fds[4], int want, int *signals)
{
	int status = 0;

	ck_assert_int_eq(write(fds[3], "g", 1), 1);
	if (signals)
		ck_assert_int_eq(read(fds[0], signals, sizeof(*signals)), sizeof(*signals));
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), want);
	for (int i = 0; i < 4; i++)
		close(fds[i]);
}

START_TEST(native_stack_of_a_waiting_thread)
{
	char *dir = tu_tmpdir(), notice[64], *path, *text, line[256], err[256], buf[4096];
	int fds[4];
	size_t len = 0;
	pid_t child = start_blocked_child(fds);
	FILE *out;

	snprintf(notice, sizeof(notice), "hang.%d", (int)child);
	path = tu_path(dir, notice);
	snprintf(line, sizeof(line),
		 "now %lld\ngpu_done %lld\nlaunched 2 1\nthread %d wait %lld 3 "
		 "cudaDeviceSynchronize\n",
		 T0 + 9 * S, T0 + 2 * MS, (int)child, T0 + 4 * S);
	ck_assert_int_eq(tu_write_file(path, line, strlen(line)), 0);
#ifdef CUSCOPE_HAVE_LIBDW
	ck_assert_int_eq(cli_hang_native(dir), 1);
#else
	ck_assert_int_eq(cli_hang_native(dir), 0);
#endif
	out = open_memstream(&text, &len);
	ck_assert_int_eq(cli_hang_report(out, dir, "./a.out", NULL), 1);
	fclose(out);
#ifdef CUSCOPE_HAVE_LIBDW
	/* innermost first: the read, then the function of the program that called it */
	ck_assert_msg(strstr(text, "    native:   "), "%s", text);
	ck_assert_msg(strstr(text, "hang_report_blocked_here+0x"), "%s", text);
	ck_assert_msg(strstr(text, "(test_hang_report"), "%s", text); /* its module */
	ck_assert_msg(strstr(text, "read") < strstr(text, "hang_report_blocked_here"), "%s", text);
#else
	ck_assert_msg(strstr(text, "native:   not read: this cuscope was built without libdw"),
		      "%s", text);
#endif
	free(text);
	/* the child goes on from its read as if nothing happened, and ends with its own status */
	end_blocked_child(child, fds, 7, NULL);
	/* a thread that is gone: a reason, no frames */
	ck_assert_int_eq(cli_native_stack(child, child, buf, sizeof(buf), err, sizeof(err)), 0);
	ck_assert_str_eq(buf, "");
	ck_assert_msg(err[0], "no reason given");
	free(path);
	free(dir);
}
END_TEST

/* A signal the program is sent while its stack is read reaches it: the reader's stop never
 * swallows it. */
struct pester {
	pid_t child;
	atomic_int stop, sent;
};

/* SIGRTMIN to the child every 20 us until told to stop, counting those sent. */
static void *pester(void *arg)
{
	struct pester *p = arg;

	while (!atomic_load(&p->stop)) {
		if (kill(p->child, SIGRTMIN) == 0)
			atomic_fetch_add(&p->sent, 1);
		usleep(20);
	}
	return NULL;
}

START_TEST(a_signal_during_the_read_is_delivered)
{
	char out[8192], err[256];
	int fds[4];
	struct pester p = {start_blocked_child(fds), 0, 0};
	int got = -1, sent;
	pthread_t th;

	ck_assert_int_eq(pthread_create(&th, NULL, pester, &p), 0);
	for (int i = 0; i < 20; i++)
		cli_native_stack(p.child, p.child, out, sizeof(out), err, sizeof(err));
	atomic_store(&p.stop, 1);
	pthread_join(th, NULL);
#ifdef CUSCOPE_HAVE_LIBDW
	ck_assert_msg(strstr(out, "hang_report_blocked_here+0x"), "%s%s", out, err);
#endif
	end_blocked_child(p.child, fds, 7, &got);
	/* every signal sent reached the program, those that came while it was stopped too */
	sent = atomic_load(&p.sent);
	ck_assert_int_gt(sent, 0);
	ck_assert_int_eq(got, sent);
}
END_TEST

/* The report of a two ranks' dump: each completed three all-reduces; rank `waiting` launched a
 * fourth that never completes and waits for it, rank `missing` never launched it (no CUDA wait: no
 * notice). */
static char *collective_report(uint32_t waiting, uint32_t missing)
{
	static const char *const names[] = {"ncclDevKernel_AllReduce_Sum_f32_RING_LL"};
	char *dir = tu_tmpdir(), *dump = tu_path(dir, "job.dump-1.db"), notice[64], *path, *text;
	char want[512];
	cs_trace_writer *w = tu_open_trace(dump, "torchrun train.py", TEST);
	uint32_t pids[2] = {waiting, missing};
	int64_t ids[1];
	size_t len = 0;
	FILE *out;

	int64_t stack;

	tu_add_process(w, waiting, "python3 train.py", TEST);
	tu_add_process(w, missing, "python3 train.py", TEST);
	tu_intern_names(w, names, 1, ids, TEST);
	stack = two_frames(w, "validate", 88, "main", 120);
	for (int r = 0; r < 2; r++)
		for (int i = 0; i < 3; i++) {
			cs_kernel k = tu_kernel(pids[r], ids[0], T0 + i * MS, T0 + i * MS + 10000,
						T0 + i * MS + 500000);

			if (r == 1) { /* the missing rank's launches, from its validation loop */
				k.stack_id = stack;
				k.launch_tid = missing;
			}
			tu_need(cs_writer_add_kernel(w, &k) == 0, TEST, "a kernel");
		}
	/* NCCL's NVTX ranges: one per call, with its communicator and size; the waiting rank made a
	 * fourth call, of 8192 B, whose kernel never completed */
	for (int r = 0; r < 2; r++)
		for (int i = 0; i < 4 - r; i++) {
			char payload[160];
			cs_nvtx x = tu_nvtx(pids[r], cs_writer_intern(w, "ncclAllReduce"),
					    T0 + i * MS - 1000, T0 + i * MS + 30000);

			snprintf(payload, sizeof(payload),
				 "{\"NCCL communicator ID\":11259375,\"Message size [bytes]\":%d,"
				 "\"Reduction operation\":\"Sum\"}",
				 i == 3 ? 8192 : 4096);
			x.domain_id = cs_writer_intern(w, "NCCL");
			x.payload_id = cs_writer_intern(w, payload);
			tu_need(cs_writer_add_nvtx(w, &x) == 0, TEST, "an NVTX range");
		}
	tu_finish_trace(w, TEST);
	snprintf(notice, sizeof(notice), "hang.%u", waiting);
	path = tu_path(dir, notice);
	snprintf(want, sizeof(want),
		 "now %lld\ngpu_done %lld\nlaunched 9 8\nthread %u wait %lld 10 cudaStreamSynchronize\n"
		 "pending 9 %u %s\n",
		 T0 + 200 * S, T0 + 3 * MS, waiting, T0 + 5 * MS, waiting, names[0]);
	ck_assert_int_eq(tu_write_file(path, want, strlen(want)), 0);
	out = open_memstream(&text, &len);
	ck_assert_int_eq(cli_hang_report(out, dir, "torchrun train.py", dump), 1);
	fclose(out);
	free(path);
	free(dump);
	free(dir);
	return text;
}

START_TEST(the_rank_that_has_not_launched_the_collective)
{
	char *text = collective_report(100, 200);

	ck_assert_msg(strstr(text, "correlation id 9 (thread 100): "
				   "ncclDevKernel_AllReduce_Sum_f32_RING_LL\n"),
		      "%s", text);
	ck_assert_msg(strstr(text, "the collective 1 process waits in "
				   "(ncclDevKernel_AllReduce_Sum_f32_RING_LL, launched and not "
				   "completed):\n  process 200 has not launched it"),
		      "%s", text);
	ck_assert_msg(!strstr(text, "process 100 has not launched"), "%s", text);
	/* each rank's NCCL stream and its last collective */
	ck_assert_msg(strstr(text, "the last NCCL collective completed on each stream (a "
				   "communicator's own stream, from the dump):\n"
				   "  process 100 stream 7: 3 completed, the last "
				   "ncclDevKernel_AllReduce_Sum_f32_RING_LL, 0.0 s before the last GPU "
				   "work of the dump\n"
				   "  process 200 stream 7: 3 completed"),
		      "%s", text);
	/* each rank's last NCCL call per communicator, from NCCL's NVTX payloads */
	ck_assert_msg(strstr(text, "the last NCCL call on each communicator (NCCL's NVTX ranges, from "
				   "the dump):\n"
				   "  process 100 communicator 0xabcdef: 4 calls, the last ncclAllReduce "
				   "of 8192 B (Sum), no kernel of it completed\n"
				   "  process 200 communicator 0xabcdef: 3 calls, the last ncclAllReduce "
				   "of 4096 B (Sum), its kernel completed on stream 7\n"
				   "communicator 0xabcdef: process 200 made 3 NCCL calls on it, process "
				   "100 4: process 200 has not made the last call of process 100 "
				   "(ncclAllReduce of 8192 B)\n"),
		      "%s", text);
	/* process 200 is not this test's: never traced, and the report says why */
	ck_assert_msg(strstr(text, "    its first thread now:\n"
				   "    native:   not read: process 200 is not one this process "
				   "started\n"
				   "    its last launch with a recorded site (thread 200): train.py:88 "
				   "in validate < train.py:120 in main\n"),
		      "%s", text);
	free(text);
}
END_TEST

/* The rank that has not launched the collective is a live process (a child blocked in read()):
 * the report shows where its first thread is, by its native frames. */
START_TEST(the_rank_that_has_not_launched_it_is_shown_where_it_is)
{
	int fds[4];
	pid_t child = start_blocked_child(fds);
	char *text = collective_report(100, (uint32_t)child);

	ck_assert_msg(strstr(text, "has not launched it"), "%s", text);
	ck_assert_msg(strstr(text, "    its first thread now:\n"), "%s", text);
#ifdef CUSCOPE_HAVE_LIBDW
	ck_assert_msg(strstr(text, "hang_report_blocked_here+0x"), "%s", text);
#else
	ck_assert_msg(strstr(text, "not read: this cuscope was built without libdw"), "%s", text);
#endif
	free(text);
	end_blocked_child(child, fds, 7, NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hang_report");
	TCase *tc = tcase_create("hang_report");

	tcase_add_test(tc, pending_kernels_are_named_with_their_sites);
	tcase_add_test(tc, the_rank_that_has_not_launched_the_collective);
	tcase_add_test(tc, native_stack_of_a_waiting_thread);
	tcase_add_test(tc, a_signal_during_the_read_is_delivered);
	tcase_add_test(tc, the_rank_that_has_not_launched_it_is_shown_where_it_is);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
