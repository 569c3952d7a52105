/*
 * test_record.c - `cuscope record` as a wrapper, with real child processes and no GPU: the
 * program's exit status, signals and output pass through unchanged, bad options and an existing
 * output are refused before anything runs, and no spool directory is left behind. What happens
 * inside a CUDA process is checked by the GPU routine (tests/gpu/run.sh).
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>

#include "cuscope/host_speed.h"
#include "testutil.h"

static int record_available;

static void probe_record(void)
{
	const char *argv[] = {tu_cuscope_bin(), "record", "--help", NULL};
	char *out = NULL, *err = NULL;

	record_available = tu_run(argv, NULL, &out, &err) == 0;
	free(out);
	free(err);
}

/* Entries in dir whose name starts with prefix. */
static int count_entries(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
			n++;
	closedir(d);
	return n;
}

/* Run `cuscope record -o DIR/out.db ARGS...`; returns the exit status. */
static int run_record(const char *dir, const char *const *args, char **out, char **err)
{
	const char *argv[32];
	char *output = tu_path(dir, "out.db");
	int n = 0, rc;

	argv[n++] = tu_cuscope_bin();
	argv[n++] = "record";
	argv[n++] = "-o";
	argv[n++] = output;
	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	rc = tu_run(argv, NULL, out, err);
	free(output);
	return rc;
}

/* record --hang-after 0.5 of `sh -c script` (no calibration, no host probe), as run_record. */
static int run_hang_script(const char *dir, const char *script, char **out, char **err)
{
	const char *args[] = {"--no-calibrate", "--no-host-probe", "--hang-after", "0.5",
			      "--", "sh", "-c", script, NULL};

	return run_record(dir, args, out, err);
}

START_TEST(unavailable_without_cuda)
{
	const char *argv[] = {tu_cuscope_bin(), "record", "--", "true", NULL};
	char *err = NULL;

	if (record_available)
		return;
	ck_assert_int_eq(tu_run(argv, NULL, NULL, &err), 2);
	ck_assert_ptr_nonnull(strstr(err, "no CUDA support"));
	ck_assert_int_eq(tu_count_lines(err), 1);
	free(err);
}
END_TEST

START_TEST(exit_status_passes_through)
{
	const char *args[] = {"--", "sh", "-c", "exit 7", NULL};
	char *dir = tu_tmpdir();

	if (!record_available)
		return;
	ck_assert_int_eq(run_record(dir, args, NULL, NULL), 7);
	ck_assert_int_eq(count_entries(dir, ".cuscope-spool"), 0);
}
END_TEST

START_TEST(signal_death_is_128_plus_signal)
{
	const char *term[] = {"--force", "--", "sh", "-c", "kill -TERM $$", NULL};
	const char *kill9[] = {"--force", "--", "sh", "-c", "kill -KILL $$", NULL};
	char *dir = tu_tmpdir();

	if (!record_available)
		return;
	ck_assert_int_eq(run_record(dir, term, NULL, NULL), 128 + 15);
	ck_assert_int_eq(run_record(dir, kill9, NULL, NULL), 128 + 9);
}
END_TEST

START_TEST(signals_sent_to_record_reach_the_program)
{
	/* A scheduler stops the job by signalling record: the program gets the signal and its
	 * status comes back. The program traps TERM and exits 42, so the status proves it got it.
	 */
	char *dir = tu_tmpdir();
	char script[1024];
	char *out = NULL;
	const char *argv[] = {"sh", "-c", script, NULL};

	if (!record_available)
		return;
	snprintf(script, sizeof(script),
		 "'%s' record -q -o '%s/o.db' -- sh -c 'trap \"exit 42\" TERM; while :; do sleep "
		 "0.05; done' & p=$!; sleep 0.5; kill -TERM $p; wait $p; echo status=$?",
		 tu_cuscope_bin(), dir);
	ck_assert_int_eq(tu_run(argv, NULL, &out, NULL), 0);
	ck_assert_str_eq(out, "status=42\n");
	free(out);
}
END_TEST

/* --dump-on signal=SIG: record takes the signal for a dump (here of a job with no CUDA process yet:
 * it says so) instead of passing it on; without it the signal reaches the program. */
START_TEST(dump_signal_is_taken_not_passed_on)
{
	const char *with[] = {"--no-calibrate", "--no-host-probe", "--dump-on", "signal=USR2",
			      "--", "sh", "-c", "kill -USR2 $CUSCOPE_RECORD_PID; sleep 0.5; echo ran",
			      NULL};
	/* record passes signals on once the program runs: the program waits for that first */
	const char *without[] = {"--no-calibrate", "--no-host-probe", "--", "sh", "-c",
				 "sleep 0.5; kill -USR2 $CUSCOPE_RECORD_PID; sleep 0.5; echo ran",
				 NULL};
	const char *bad[] = {"--dump-on", "signal=KILL", "--", "true", NULL};
	char *dir = tu_tmpdir(), *out = NULL, *err = NULL;

	if (!record_available)
		return;
	ck_assert_int_eq(run_record(dir, with, &out, &err), 0);
	ck_assert_str_eq(out, "ran\n");
	ck_assert_msg(strstr(err, "no CUDA process yet"), "%s", err);
	free(out);
	free(err);
	ck_assert_int_eq(run_record(dir, without, &out, &err), 128 + SIGUSR2);
	ck_assert_str_eq(out, "");
	free(out);
	free(err);
	ck_assert_int_eq(run_record(dir, bad, &out, &err), 2);
	ck_assert_int_eq(tu_count_lines(err), 1);
	ck_assert_ptr_nonnull(strstr(err, "--dump-on"));
	free(out);
	free(err);
	ck_assert_int_eq(count_entries(dir, ".cuscope-spool"), 0);
}
END_TEST

/* --dump-on slow-step=K: a notice in the spool directory (what a process writes after a slow step)
 * makes record dump the job and go on; here the "process" is the shell, with a committed spool file
 * of its own, which does not answer the dump and is taken as its file is once it ends. */
START_TEST(slow_step_notice_makes_a_dump)
{
	char *dir = tu_tmpdir(), *spool = tu_source_file("tests/data/spool/4242.cuspool");
	char script[2048], *out = NULL, *err = NULL, *dump = tu_path(dir, "out.dump-1.db");
	const char *args[] = {"--no-calibrate", "--no-host-probe", "--dump-on", "slow-step=3",
			      "--", "sh", "-c", script, NULL};
	const char *bad[][6] = {{"--dump-on", "slow-step=1", "--", "true", NULL},
				{"--dump-on", "slow-step=x", "--", "true", NULL},
				{"--dump-on", "slow-step=2:", "--", "true", NULL},
				{"--dump-on", "slow-step=2:a,b", "--", "true", NULL},
				{"--dump-on", "slow", "--", "true", NULL}};

	if (!record_available)
		return;
	snprintf(script, sizeof(script),
		 "case \"$CUSCOPE_OPTIONS\" in *slow_step=3*step_pattern*) exit 9;; "
		 "*slow_step=3*) ;; *) exit 8;; esac; "
		 "cp '%s' \"$CUSCOPE_SPOOL_DIR/$$.cuspool\" && "
		 "echo '50000000 10000000 1' > \"$CUSCOPE_SPOOL_DIR/slow.$$.0\" && sleep 1.5 && "
		 "echo ran",
		 spool);
	ck_assert_int_eq(run_record(dir, args, &out, &err), 0);
	ck_assert_str_eq(out, "ran\n");
	ck_assert_msg(strstr(err, "a step took 50.0 ms, 5.0 times the median of the recent steps "
				  "(10.0 ms): dumping"),
		      "%s", err);
	ck_assert_msg(tu_file_exists(dump), "no %s: %s", dump, err);
	free(out);
	free(err);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(run_record(dir, bad[i], &out, &err), 2);
		ck_assert_int_eq(tu_count_lines(err), 1);
		ck_assert_ptr_nonnull(strstr(err, "--dump-on"));
		free(out);
		free(err);
	}
	ck_assert_int_eq(count_entries(dir, ".cuscope-spool"), 0);
	free(dump);
	free(spool);
}
END_TEST

/* --hang-after: a hang notice in the spool directory (what a process writes when a thread has
 * waited too long with no GPU work completing) makes record dump and write the hang report beside
 * the dump; here the "process" is the shell with a committed spool file of its own, whose own
 * thread record traces for its native frames (it goes on, and its output and status pass). */
START_TEST(hang_notice_makes_a_report)
{
	char *dir = tu_tmpdir(), *spool = tu_source_file("tests/data/spool/4242.cuspool");
	char script[2048], *out = NULL, *err = NULL, *report = tu_path(dir, "out.dump-1.hang.txt");
	char *text;
	size_t len;

	if (!record_available)
		return;
	snprintf(script, sizeof(script),
		 "case \"$CUSCOPE_OPTIONS\" in *hang_after_ms=500*) ;; *) exit 8;; esac; "
		 "cp '%s' \"$CUSCOPE_SPOOL_DIR/$$.cuspool\" && "
		 "printf 'now 3000000000\\ngpu_done 1000000000\\nlaunched 12 10\\n"
		 "thread 77 wait 1500000000 11 cudaStreamSynchronize\\n"
		 "frame 77 985 /py/torch/cuda/__init__.py\\tsynchronize\\n"
		 "frame 77 40 /w/train job.py\\tmain\\n"
		 "thread %%s wait 1600000000 13 cudaDeviceSynchronize\\n' $$ >"
		 "\"$CUSCOPE_SPOOL_DIR/notice.tmp\" && "
		 "mv \"$CUSCOPE_SPOOL_DIR/notice.tmp\" \"$CUSCOPE_SPOOL_DIR/hang.$$\" && "
		 "sleep 1.5 && echo ran",
		 spool);
	ck_assert_int_eq(run_hang_script(dir, script, &out, &err), 0);
	ck_assert_str_eq(out, "ran\n");
	ck_assert_msg(strstr(err, "hang report written to"), "%s", err);
	text = tu_read_file(report, &len);
	ck_assert_msg(text, "no %s: %s", report, err);
	ck_assert_msg(strstr(text, ": no GPU work has completed for 2.0 s\n") &&
			      strstr(text, "  thread 77: waiting in cudaStreamSynchronize for 1.5 s "
					   "(correlation id 11)\n"
					   "    Python:   /py/torch/cuda/__init__.py:985 in "
					   "synchronize\n"
					   "              /w/train job.py:40 in main\n") &&
			      strstr(text, "correlation ids up to 12 launched, 10 the last "
					   "completed") &&
			      strstr(text, ": last completed kernel ") &&
			      strstr(text, "the trace of the time before: "),
		      "%s", text);
	/* the shell itself (record's child, waiting for its sleep) is traced for its native frames
	 * and goes on; thread 77 is no thread of it and is never traced */
	ck_assert_msg(strstr(text, "    native:   not read: thread 77 is not one of process "), "%s",
		      text);
#ifdef CUSCOPE_HAVE_LIBDW
	ck_assert_msg(strstr(text, "waiting in cudaDeviceSynchronize for 1.4 s (correlation id 13)\n"
				   "    native:   ") &&
			      !strstr(strstr(text, "correlation id 13)\n"), "not read"),
		      "%s", text);
#endif
	free(text);
	free(out);
	free(err);
	/* default: on, at 300 s; 0 turns it off; a bad value is refused */
	{
		const char *bad[] = {"--hang-after", "soon", "--", "true", NULL};

		ck_assert_int_eq(run_record(dir, bad, &out, &err), 2);
		ck_assert_int_eq(tu_count_lines(err), 1);
		free(out);
		free(err);
	}
	ck_assert_int_eq(count_entries(dir, ".cuscope-spool"), 0);
	free(report);
	free(spool);
}
END_TEST

/* Processes that hang together write their notices a flush period or two apart: a second notice
 * 0.25 s after the first is in the same report (record gives them 0.5 s), not in a report of its
 * own. No spool file here, so that no dump is waited for: the report is written at once, beside
 * the output. */
START_TEST(hang_notices_of_two_processes_make_one_report)
{
	char *dir = tu_tmpdir();
	char script[2048], *out = NULL, *err = NULL, *report = tu_path(dir, "out.hang.txt");
	char *text;
	size_t len;

	if (!record_available)
		return;
	snprintf(script, sizeof(script),
		 "n() { printf 'now 3000000000\\ngpu_done 1000000000\\n"
		 "thread %%s wait 1500000000 11 cudaStreamSynchronize\\n' $1 >"
		 "\"$CUSCOPE_SPOOL_DIR/notice.tmp\" && "
		 "mv \"$CUSCOPE_SPOOL_DIR/notice.tmp\" \"$CUSCOPE_SPOOL_DIR/hang.$1\"; } && "
		 "n $$ && sleep 0.25 && n 999999 && sleep 1.5 && echo ran");
	ck_assert_int_eq(run_hang_script(dir, script, &out, &err), 0);
	ck_assert_str_eq(out, "ran\n");
	text = tu_read_file(report, &len);
	ck_assert_msg(text, "no %s: %s", report, err);
	ck_assert_msg(strstr(text, "process 999999: no GPU work has completed") &&
			      tu_count_lines(text) > 3 &&
			      strstr(strstr(text, ": no GPU work has completed") + 1,
				     ": no GPU work has completed"),
		      "%s", text);
	/* one report: a second would have been written over the first */
	ck_assert_msg(strstr(err, "hang report written to") &&
			      !strstr(strstr(err, "hang report written to") + 1,
				      "hang report written to"),
		      "%s", err);
	free(text);
	free(out);
	free(err);
	free(report);
}
END_TEST

START_TEST(output_passes_through)
{
	const char *args[] = {"--", "sh", "-c", "echo to-stdout; echo to-stderr >&2", NULL};
	char *dir = tu_tmpdir(), *out = NULL, *err = NULL;

	if (!record_available)
		return;
	ck_assert_int_eq(run_record(dir, args, &out, &err), 0);
	ck_assert_str_eq(out, "to-stdout\n");
	ck_assert_ptr_nonnull(strstr(err, "to-stderr\n"));
	free(out);
	free(err);
}
END_TEST

START_TEST(exec_failure)
{
	const char *args[] = {"--", "/nonexistent/program", NULL};
	char *dir = tu_tmpdir(), *err = NULL;

	if (!record_available)
		return;
	ck_assert_int_eq(run_record(dir, args, NULL, &err), 127);
	ck_assert_int_eq(tu_count_lines(err), 1);
	ck_assert_ptr_nonnull(strstr(err, "cannot run '/nonexistent/program'"));
	ck_assert_int_eq(count_entries(dir, ".cuscope-spool"), 0);
	free(err);
}
END_TEST

START_TEST(existing_output_is_refused)
{
	const char *args[] = {"--", "sh", "-c", "echo ran", NULL};
	char *dir = tu_tmpdir(), *path = tu_path(dir, "out.db"), *out = NULL, *err = NULL;
	char *content;

	if (!record_available)
		return;
	ck_assert_int_eq(tu_write_file(path, "keep me", 7), 0);
	ck_assert_int_eq(run_record(dir, args, &out, &err), 2);
	ck_assert_str_eq(out, ""); /* the program did not run */
	ck_assert_int_eq(tu_count_lines(err), 1);
	ck_assert_ptr_nonnull(strstr(err, "--force"));
	content = tu_read_file(path, NULL);
	ck_assert_str_eq(content, "keep me");
	ck_assert_int_eq(count_entries(dir, ".cuscope-spool"), 0);
	free(content);
	free(out);
	free(err);
	free(path);
}
END_TEST

START_TEST(another_injection_is_refused)
{
	const char *argv[] = {tu_cuscope_bin(), "record", "-o", NULL, "--", "sh", "-c",
			      "echo ran",	NULL};
	const char *env[] = {"CUDA_INJECTION64_PATH=/opt/other-tool/libinject.so", NULL};
	char *dir = tu_tmpdir(), *path = tu_path(dir, "out.db"), *out = NULL, *err = NULL;

	if (!record_available)
		return;
	argv[3] = path;
	ck_assert_int_eq(tu_run(argv, env, &out, &err), 2);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(tu_count_lines(err), 1);
	ck_assert_ptr_nonnull(strstr(err, "CUDA_INJECTION64_PATH"));
	ck_assert_ptr_nonnull(strstr(err, "/opt/other-tool/libinject.so"));
	ck_assert(!tu_file_exists(path));
	free(out);
	free(err);
	free(path);
}
END_TEST

START_TEST(bad_options)
{
	static const char *const bad[][6] = {
		{"--delay", "soon", "--", "true", NULL},
		{"--duration", "-1", "--", "true", NULL},
		{"--size-limit", "0", "--", "true", NULL},
		{"--size-limit", "12Q", "--", "true", NULL},
		{"--ring", "10", "--", "true", NULL}, /* no unit */
		{"--ring", "5x", "--", "true", NULL},
		{"--ring", "", "--", "true", NULL},
		{"--ring", "0s", "--", "true", NULL},
		{"--ring", "-1G", "--", "true", NULL},
		{"--ring", "100K", "--", "true", NULL}, /* under 1MiB */
		{"--ring", "0.5s", "--", "true", NULL}, /* under 1s */
		{"--ring", "200d", "--", "true", NULL}, /* over 1e7 s */
		{"--ring", "2G", "--size-limit", "1G", "true", NULL},
		{"--capture=bogus", "--", "true", NULL},
		{"--capture=nvtx:", "--", "true", NULL},
		{"--api=some", "--", "true", NULL},
		{"--cupti-buffers", "0", "--", "true", NULL},
		{"--no-such-option", "--", "true", NULL},
		{NULL}, /* no command */
	};
	char *dir = tu_tmpdir();

	if (!record_available)
		return;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *out = NULL, *err = NULL;
		int rc = run_record(dir, bad[i], &out, &err);

		ck_assert_msg(rc == 2, "case %zu: exit %d", i, rc);
		ck_assert_msg(tu_count_lines(err) == 1, "case %zu: stderr '%s'", i, err);
		ck_assert_str_eq(out, "");
		free(out);
		free(err);
	}
	ck_assert_int_eq(count_entries(dir, ".cuscope-spool"), 0);
	ck_assert(!tu_file_exists(tu_path(dir, "out.db")));
}
END_TEST

/* --ring reaches the library as ring_bytes or ring_ns (m is minutes, M MiB); without it, neither.
 */
START_TEST(ring_reaches_the_library)
{
	static const struct {
		const char *arg, *want;
	} cases[] = {
		{"2GiB", ",ring_bytes=2147483648"}, {"512M", ",ring_bytes=536870912"},
		{"5m", ",ring_ns=300000000000"},    {"1.5h", ",ring_ns=5400000000000"},
		{"30s", ",ring_ns=30000000000"},    {NULL, NULL},
	};
	char *dir = tu_tmpdir();

	if (!record_available)
		return;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *with[] = {"--ring", cases[i].arg, "--",
				      "sh",	"-c",	      "echo \"$CUSCOPE_OPTIONS\"",
				      NULL};
		const char **args = cases[i].arg ? with : with + 3;
		char *out = NULL, *err = NULL;
		int rc = run_record(dir, args, &out, &err);

		ck_assert_msg(rc == 0, "case %zu: exit %d: %s", i, rc, err);
		if (cases[i].want)
			ck_assert_msg(strstr(out, cases[i].want), "case %zu: '%s'", i, out);
		else
			ck_assert_msg(!strstr(out, "ring_"), "'%s'", out);
		free(out);
		free(err);
	}
	ck_assert_int_eq(count_entries(dir, ".cuscope-spool"), 0);
}
END_TEST

/* NVTX payloads as NCCL sends them (tests/unit/nvtx_payload_prog.c, no GPU needed): each range's
 * payload in NVTX_EVENTS as a JSON object decoded by the schema the program registered, nothing
 * for what cannot be read safely, and the program's exit code kept. */
START_TEST(nvtx_payloads_are_decoded)
{
	static const char *const want[] = {
		"{\"NCCL communicator ID\":305441741,\"Message size [bytes]\":4096,"
		"\"Reduction \\\"operation\\\"\":\"ncclMax\"}",
		"{\"NCCL communicator ID\":305441741,\"Message size [bytes]\":8192,"
		"\"Reduction \\\"operation\\\"\":\"ncclMax\"}",
		"{\"NCCL communicator ID\":305441741}",
		NULL,
		"{\"a\":-3,\"b\":70000,\"c\":0.5}",
		NULL,
		"{\"after\":5,\"explicit\":-9}",
		"{\"value\":-42}",
	};
	const char *prog = getenv("CUSCOPE_NVTX_PAYLOAD_PROG");
	char *dir = tu_tmpdir(), *path = tu_path(dir, "out.db"), *err = NULL;
	const char *args[] = {"--", prog, NULL};
	cs_trace *t = NULL;
	cs_iter *it = NULL;
	cs_filter f = cs_filter_all();
	cs_error e;
	cs_event ev;
	int n = 0, rc;

	if (!record_available || !prog)
		return;
	rc = run_record(dir, args, NULL, &err);
	ck_assert_msg(rc == 7, "exit %d: %s", rc, err);
	ck_assert_int_eq(cs_trace_open(path, &t, &e), CS_OK);
	ck_assert_int_eq(cs_iter_open(t, CS_EV_NVTX, &f, &it, &e), CS_OK);
	while ((rc = cs_iter_next(it, &ev)) == 1) {
		ck_assert_int_lt(n, 8);
		if (want[n])
			ck_assert_msg(ev.u.nvtx.payload && !strcmp(ev.u.nvtx.payload, want[n]),
				      "event %d: payload %s, want %s", n,
				      ev.u.nvtx.payload ? ev.u.nvtx.payload : "none", want[n]);
		else
			ck_assert_msg(!ev.u.nvtx.payload, "event %d: payload %s", n,
				      ev.u.nvtx.payload);
		ck_assert_str_eq(ev.u.nvtx.text, n < 7 ? "ncclAllReduce" : "plain");
		n++;
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(n, 8);
	cs_iter_close(it);
	cs_trace_close(t);
	free(err);
	free(path);
}
END_TEST

START_TEST(help_lists_options)
{
	const char *argv[] = {tu_cuscope_bin(), "record", "--help", NULL};
	char *out = NULL;

	if (!record_available)
		return;
	ck_assert_int_eq(tu_run(argv, NULL, &out, NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "--output"));
	ck_assert_ptr_nonnull(strstr(out, "--capture"));
	ck_assert_ptr_nonnull(strstr(out, "--size-limit"));
	ck_assert_ptr_nonnull(strstr(out, "--ring SIZE|DURATION"));
	ck_assert_ptr_nonnull(strstr(out, "--backtrace"));
	ck_assert_ptr_nonnull(strstr(out, "--latency-timestamps"));
	ck_assert_ptr_nonnull(strstr(out, "--no-calibrate"));
	free(out);
}
END_TEST

/*
 * `cuscope calibrate`: on a machine without a GPU (or without the driver) a one-line error and exit
 * 2, nothing on stdout; with one, the measurement as JSON. Bad options: a one-line error, exit 2.
 */
START_TEST(calibrate_measures_or_says_why)
{
	const char *argv[] = {tu_cuscope_bin(), "calibrate", "--rounds", "1", "--launches", "256",
			      "--format",	"json",	     NULL};
	static const char *const bad[][4] = {
		{"--rounds", "0", NULL},   {"--rounds", "65", NULL}, {"--launches", "10", NULL},
		{"--format", "xml", NULL}, {"extra", NULL},	     {"--no-such-option", NULL},
	};
	char *out = NULL, *err = NULL;
	int rc;

	if (!record_available)
		return;
	rc = tu_run(argv, NULL, &out, &err);
	if (rc == 0) {
		cJSON *j = cJSON_Parse(out), *v = cJSON_GetObjectItem(j, "ns_per_launch");

		ck_assert_msg(cJSON_IsNumber(v) && v->valuedouble >= 0, "%s", out);
		ck_assert_int_eq(cJSON_GetObjectItem(j, "rounds")->valueint, 1);
		/* the waits: a launch then a copy back or a synchronize, 256 / 8 + 1 times */
		v = cJSON_GetObjectItem(j, "waits");
		ck_assert_int_eq(cJSON_GetObjectItem(v, "iterations")->valueint, 33);
		ck_assert(cJSON_IsNumber(
			cJSON_GetObjectItem(cJSON_GetObjectItem(v, "copy"), "added_ns")));
		ck_assert(cJSON_IsNumber(
			cJSON_GetObjectItem(cJSON_GetObjectItem(v, "sync"), "added_ns")));
		cJSON_Delete(j);
	} else {
		ck_assert_int_eq(rc, 2);
		ck_assert_str_eq(out, "");
		ck_assert_int_eq(tu_count_lines(err), 1);
		ck_assert_msg(!strncmp(err, "cuscope: cannot measure the cost of recording: ", 47),
			      "%s", err);
	}
	free(out);
	free(err);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *a[8] = {tu_cuscope_bin(), "calibrate"};
		int n = 2;

		for (int k = 0; bad[i][k]; k++)
			a[n++] = bad[i][k];
		a[n] = NULL;
		out = err = NULL;
		ck_assert_msg(tu_run(a, NULL, &out, &err) == 2, "case %zu", i);
		ck_assert_msg(tu_count_lines(err) == 1, "case %zu: stderr '%s'", i, err);
		ck_assert_str_eq(out, "");
		free(out);
		free(err);
	}
}
END_TEST

/*
 * The measuring processes against a driver without a GPU (tests/fakecuda, found first through
 * LD_LIBRARY_PATH): the bare one starts and answers; the recorded one, given a library that has no
 * switch (the fake driver stands in for the injection library), says why; cuscope prints that on
 * one line, exits 2 and leaves nothing in TMPDIR.
 */
START_TEST(calibrate_reports_what_a_measuring_process_says)
{
	const char *fake = getenv("CUSCOPE_FAKE_CUDA");
	const char *argv[] = {tu_cuscope_bin(), "calibrate", "--rounds", "1",
			      "--launches",	"256",	     NULL};
	char *dir = tu_tmpdir(), *copy, *out = NULL, *err = NULL;
	char ld[4200], lib[4200], tmp[4200];
	const char *env[] = {ld, lib, tmp, NULL};

	if (!record_available || !fake)
		return;
	copy = strdup(fake);
	snprintf(ld, sizeof(ld), "LD_LIBRARY_PATH=%s", dirname(copy));
	snprintf(lib, sizeof(lib), "CUSCOPE_INJECT_LIB=%s", fake);
	snprintf(tmp, sizeof(tmp), "TMPDIR=%s", dir);
	ck_assert_int_eq(tu_run(argv, env, &out, &err), 2);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(tu_count_lines(err), 1);
	ck_assert_msg(strstr(err, "cannot measure the cost of recording: cannot load the injection "
				  "library") != NULL &&
			      strstr(err, "cuscope_calibrate_switch") != NULL,
		      "%s", err);
	ck_assert_int_eq(count_entries(dir, ".cuscope-calibrate"), 0);
	free(out);
	free(err);
	/* the real library: CUPTI cannot attach to the fake driver, so recording never starts */
	if (getenv("CUSCOPE_INJECT_LIB")) {
		snprintf(lib, sizeof(lib), "CUSCOPE_INJECT_LIB=%s", getenv("CUSCOPE_INJECT_LIB"));
		out = err = NULL;
		ck_assert_int_eq(tu_run(argv, env, &out, &err), 2);
		ck_assert_str_eq(out, "");
		ck_assert_int_eq(tu_count_lines(err), 1);
		ck_assert_msg(!strncmp(err, "cuscope: cannot measure the cost of recording: ", 47),
			      "%s", err);
		ck_assert_int_eq(count_entries(dir, ".cuscope-calibrate"), 0);
		free(out);
		free(err);
	}
	free(copy);
}
END_TEST

/*
 * The host-speed probe alone: the CPU work anywhere; the bare launch against the fake driver
 * (found first through LD_LIBRARY_PATH), which answers launches at once; without a driver it says
 * why, exit 0 all the same.
 */
START_TEST(calibrate_host_speed)
{
	const char *fake = getenv("CUSCOPE_FAKE_CUDA");
	const char *argv[] = {tu_cuscope_bin(), "calibrate", "--host-speed", "--format", "json",
			      NULL};
	const char *text[] = {tu_cuscope_bin(), "calibrate", "--host-speed", NULL};
	char ld[4200], *copy, *out = NULL, *err = NULL;
	const char *env[] = {ld, NULL};
	cs_host_speed hs;
	double noise;

	if (!record_available)
		return;
	snprintf(ld, sizeof(ld), "LD_LIBRARY_PATH=/nonexistent");
	ck_assert_int_eq(tu_run(text, env, &out, &err), 0);
	ck_assert_msg(strstr(out, "CPU work:") && strstr(out, "ns per 1000 steps") &&
			      strstr(out, "bare launch:  not measured: "),
		      "%s%s", out, err);
	free(out);
	free(err);
	if (!fake)
		return;
	copy = strdup(fake);
	snprintf(ld, sizeof(ld), "LD_LIBRARY_PATH=%s", dirname(copy));
	out = err = NULL;
	ck_assert_int_eq(tu_run(argv, env, &out, &err), 0);
	ck_assert_msg(cs_host_speed_parse(out, &hs) == 1, "%s%s", out, err);
	ck_assert(hs.ns[CS_PROBE_CPU][CS_PROBE_BEFORE] > 0);
	ck_assert(hs.ns[CS_PROBE_LAUNCH][CS_PROBE_BEFORE] > 0);
	ck_assert(hs.ns[CS_PROBE_CPU][CS_PROBE_AFTER] == 0);
	ck_assert_msg(strstr(out, "\"device\":") != NULL, "%s", out);
	/* one measurement: its index, and its spread for noise */
	ck_assert(cs_host_speed_index(&hs, CS_PROBE_LAUNCH, &noise) ==
		  hs.ns[CS_PROBE_LAUNCH][CS_PROBE_BEFORE]);
	ck_assert(noise == hs.spread[CS_PROBE_LAUNCH][CS_PROBE_BEFORE]);
	free(out);
	free(err);
	free(copy);
}
END_TEST

/* META host_speed read back: before and after, the noise, what is malformed or newer. */
START_TEST(host_speed_values)
{
	cs_host_speed hs;
	double noise = -1;

	ck_assert_int_eq(
		cs_host_speed_parse("{\"version\":1,\"launch_ns\":{\"before\":2000,\"after\":2200},"
				    "\"launch_spread\":{\"before\":0.05,\"after\":0.2},"
				    "\"cpu_ns\":{\"before\":-3,\"after\":\"x\"}}",
				    &hs),
		1);
	ck_assert(fabs(cs_host_speed_index(&hs, CS_PROBE_LAUNCH, &noise) - 2100) < 1e-9);
	ck_assert(fabs(noise - 0.2) < 1e-9); /* the after's spread beats the 10% between them */
	ck_assert(cs_host_speed_index(&hs, CS_PROBE_CPU, &noise) == 0 && noise == 0);
	ck_assert_int_eq(cs_host_speed_parse("{\"version\":2,\"cpu_ns\":{\"before\":1}}", &hs), 0);
	ck_assert_int_eq(cs_host_speed_parse("{\"version\":1}", &hs), 0);
	ck_assert_int_eq(cs_host_speed_parse("[1]", &hs), 0);
	ck_assert_int_eq(cs_host_speed_parse("not json", &hs), 0);
	ck_assert_int_eq(cs_host_speed_parse(NULL, &hs), 0);
	ck_assert(hs.ns[CS_PROBE_CPU][0] == 0);
}
END_TEST

/* A job that wrote no spool file is not measured: no word about the cost of recording. */
START_TEST(no_calibration_without_cuda)
{
	const char *args[] = {"--", "sh", "-c", "exit 3", NULL};
	char *dir = tu_tmpdir(), *err = NULL;

	if (!record_available)
		return;
	ck_assert_int_eq(run_record(dir, args, NULL, &err), 3);
	ck_assert_msg(strstr(err, "never initialized CUDA") != NULL, "%s", err);
	ck_assert_msg(strstr(err, "cost of recording") == NULL, "%s", err);
	ck_assert_int_eq(count_entries(dir, ".cuscope-calibrate"), 0);
	free(err);
}
END_TEST

static Suite *record_suite(void)
{
	Suite *s = suite_create("record");
	TCase *tc = tcase_create("record");

	tcase_add_unchecked_fixture(tc, probe_record, NULL);
	tcase_add_test(tc, calibrate_host_speed);
	tcase_add_test(tc, host_speed_values);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, unavailable_without_cuda);
	tcase_add_test(tc, exit_status_passes_through);
	tcase_add_test(tc, signal_death_is_128_plus_signal);
	tcase_add_test(tc, signals_sent_to_record_reach_the_program);
	tcase_add_test(tc, output_passes_through);
	tcase_add_test(tc, dump_signal_is_taken_not_passed_on);
	tcase_add_test(tc, slow_step_notice_makes_a_dump);
	tcase_add_test(tc, hang_notice_makes_a_report);
	tcase_add_test(tc, hang_notices_of_two_processes_make_one_report);
	tcase_add_test(tc, exec_failure);
	tcase_add_test(tc, existing_output_is_refused);
	tcase_add_test(tc, another_injection_is_refused);
	tcase_add_test(tc, bad_options);
	tcase_add_test(tc, help_lists_options);
	tcase_add_test(tc, ring_reaches_the_library);
	tcase_add_test(tc, nvtx_payloads_are_decoded);
	tcase_add_test(tc, calibrate_measures_or_says_why);
	tcase_add_test(tc, calibrate_reports_what_a_measuring_process_says);
	tcase_add_test(tc, no_calibration_without_cuda);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(record_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
