/*
 * test_bounds.c - values at the int64 limits (include/cuscope/trace.h, "plausibility bounds").
 *
 * tu_write_extreme_trace() writes rows whose start, end, duration and size are INT64_MIN,
 * INT64_MAX, INT64_MAX - 1, -1, 2^62, 2^63 - 2^10 and their neighbours. The reader returns each
 * implausible value as unknown (times) or 0 (sizes), never a negative duration; every command
 * (info, stats, report, export in both formats, diff, gate) reads the trace without a negative
 * duration in its output; and, built with -Db_sanitize=address,undefined, without a sanitizer
 * report (UBSAN_OPTIONS=halt_on_error=1 makes one an abort, which fails the test). A trace of the
 * A copy edited with SQL (EVENT_TABLE_INFO, the overview's meta, processes, devices and findings
 * at the limits) reads back with those values unknown, and the commands read it too.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "cuscope/trace.h"
#include "testutil.h"

#define PID 4242

static char *tmp_dir, *extreme_db, *sample_db;

/* In this test program, built with UBSan, a report aborts (the child commands: UBSAN_OPTIONS). */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

static int plausible_span(int64_t s, int64_t e)
{
	if (s != CS_TS_UNKNOWN && !cs_ts_plausible(s))
		return 0;
	if (e == CS_TS_UNKNOWN)
		return 1;
	return cs_ts_plausible(e) && (s == CS_TS_UNKNOWN || (e >= s && e - s <= CS_TS_MAX));
}

/*
 * A command's result: no sanitizer report, no negative duration (nothing at -2^63 ns), no NaN.
 * With deltas (diff, gate), negative values are changes: a sum that saturated at INT64_MAX (the
 * kernel time of a step of TU_NLONG kernels of CS_TS_MAX ns) against a plausible one may show
 * -9223372037 s as its change.
 */
static void assert_sane(const struct tu_result *r, const char *what, int deltas)
{
	const char *bad[] = {"runtime error", "AddressSanitizer", "duration -", "nan", "inf\"",
			     "-9223"};
	size_t nbad = sizeof(bad) / sizeof(bad[0]) - (deltas ? 1 : 0);

	for (size_t i = 0; i < nbad; i++) {
		ck_assert_msg(!strstr(r->out, bad[i]), "%s: stdout has '%s':\n%.2000s", what,
			      bad[i], r->out);
		ck_assert_msg(!strstr(r->err, bad[i]), "%s: stderr has '%s':\n%.2000s", what,
			      bad[i], r->err);
	}
}

static void assert_sane_output(const struct tu_result *r, const char *what)
{
	assert_sane(r, what, 0);
}

/* ---- the reader ---- */

START_TEST(test_reader_returns_plausible_values)
{
	cs_trace *t;
	cs_error err;
	cs_trace_summary sum;
	cs_iter *it;
	cs_event ev;
	int64_t rows = 0;

	ck_assert_int_eq(cs_trace_open(extreme_db, &t, &err), 0);
	ck_assert_int_eq(cs_trace_get_summary(t, &sum, &err), 0);
	/* the span of the plausible values: -1 .. 2^53 - 1 at most */
	ck_assert(cs_ts_plausible(sum.start) && cs_ts_plausible(sum.end));
	ck_assert_int_le(sum.start, 0);
	ck_assert_int_eq(sum.end, CS_TS_MAX);
	ck_assert_int_eq(sum.start, -CS_TS_MAX);
	ck_assert_int_ge(sum.dropped_records, 0);
	for (int k = 0; k < CS_EV_COUNT; k++) {
		ck_assert_int_eq(cs_iter_open(t, (enum cs_event_kind)k, NULL, &it, &err), 0);
		while (cs_iter_next(it, &ev) == 1) {
			rows++;
			switch (ev.kind) {
			case CS_EV_KERNEL:
				ck_assert(plausible_span(ev.u.kernel.start, ev.u.kernel.end));
				ck_assert(plausible_span(ev.u.kernel.launch_start,
							 ev.u.kernel.launch_end));
				ck_assert(plausible_span(ev.u.kernel.queued, CS_TS_UNKNOWN));
				break;
			case CS_EV_MEMCPY:
				ck_assert(plausible_span(ev.u.memcpy.start, ev.u.memcpy.end));
				ck_assert(cs_bytes_plausible(ev.u.memcpy.bytes));
				break;
			case CS_EV_MEMSET:
				ck_assert(plausible_span(ev.u.memset.start, ev.u.memset.end));
				ck_assert(cs_bytes_plausible(ev.u.memset.bytes));
				break;
			case CS_EV_MEMORY:
				ck_assert(plausible_span(ev.u.memory.start, CS_TS_UNKNOWN));
				ck_assert(cs_bytes_plausible(ev.u.memory.bytes));
				break;
			case CS_EV_SYNC:
				ck_assert(plausible_span(ev.u.sync.start, ev.u.sync.end));
				break;
			case CS_EV_API:
				ck_assert(plausible_span(ev.u.api.start, ev.u.api.end));
				break;
			case CS_EV_NVTX:
				ck_assert(plausible_span(ev.u.nvtx.start, ev.u.nvtx.end));
				break;
			default:
				break;
			}
		}
		cs_iter_close(it);
	}
	ck_assert_int_eq(rows, 7 * (TU_NEXTREME + 3) * (TU_NEXTREME + 3) + 4 * TU_NLONG +
				       6 * TU_NSTEPS + 2 * TU_NBIG);
	cs_trace_close(t);
}
END_TEST

struct scan_ctx {
	int rows, unknown_start, unknown_end, zero_bytes;
};

static int scan_row(const int64_t *v, void *arg)
{
	struct scan_ctx *c = arg;

	c->rows++;
	c->unknown_start += v[CS_COL_MEMCPY_start] == CS_TS_UNKNOWN;
	c->unknown_end += v[CS_COL_MEMCPY_end] == CS_TS_UNKNOWN;
	c->zero_bytes += v[CS_COL_MEMCPY_bytes] == 0;
	ck_assert(plausible_span(v[CS_COL_MEMCPY_start], v[CS_COL_MEMCPY_end]));
	ck_assert(cs_bytes_plausible(v[CS_COL_MEMCPY_bytes]));
	return 0;
}

/* A stored INT64_MAX start is unknown, an end before its start too, 2^62 as a size is 0. */
START_TEST(test_reader_values_read_as_unknown)
{
	static const int cols[] = {CS_COL_MEMCPY_start, CS_COL_MEMCPY_end, CS_COL_MEMCPY_bytes};
	cs_trace *t;
	cs_error err;
	cs_iter *it;
	cs_event ev;
	int i = 0, found = 0;

	ck_assert_int_eq(cs_trace_open(extreme_db, &t, &err), 0);
	ck_assert_int_eq(cs_iter_open(t, CS_EV_MEMCPY, NULL, &it, &err), 0);
	while (cs_iter_next(it, &ev) == 1) {
		const cs_memcpy *c = &ev.u.memcpy;

		/* the plausible rows: start 1000 .. 3000, 4096 bytes, end after the start */
		if (c->start >= 1000 && c->start <= 3000 && c->end != CS_TS_UNKNOWN &&
		    c->end > c->start && c->bytes == 4096)
			found++;
		i++;
	}
	cs_iter_close(it);
	ck_assert_int_ge(found, 9);
	ck_assert_int_eq(i, (TU_NEXTREME + 3) * (TU_NEXTREME + 3) + TU_NSTEPS + TU_NBIG);
	cs_trace_close(t);

	/* the scan returns the same: implausible values as the null values */
	{
		struct scan_ctx c = {0};

		ck_assert_int_eq(cs_trace_open(extreme_db, &t, &err), 0);
		ck_assert_int_eq(cs_trace_scan(t, CS_EV_MEMCPY, cols, 3, scan_row, &c, &err), 0);
		ck_assert_int_eq(c.rows, i);
		/* starts INT64_MIN, INT64_MIN + 1, INT64_MAX, INT64_MAX - 1, 2^62, -2^62,
		 * 2^63 - 2^10: 7 of the 10 extreme values, each with 13 ends */
		ck_assert_int_eq(c.unknown_start, 7 * (TU_NEXTREME + 3));
		ck_assert_int_gt(c.unknown_end, c.unknown_start);
		ck_assert_int_gt(c.zero_bytes, 0);
		cs_trace_close(t);
	}
}
END_TEST

/* A time window over the whole int64 range reads the plausible rows only. */
START_TEST(test_reader_window_at_the_limits)
{
	cs_trace *t;
	cs_error err;
	cs_iter *it;
	cs_event ev;
	cs_filter f = cs_filter_all();
	int n = 0;

	ck_assert_int_eq(cs_trace_open(extreme_db, &t, &err), 0);
	f.t0 = INT64_MIN + 1;
	f.t1 = INT64_MAX;
	ck_assert_int_eq(cs_iter_open(t, CS_EV_KERNEL, &f, &it, &err), 0);
	while (cs_iter_next(it, &ev) == 1) {
		ck_assert(ev.u.kernel.start != CS_TS_UNKNOWN);
		ck_assert(plausible_span(ev.u.kernel.start, ev.u.kernel.end));
		n++;
	}
	cs_iter_close(it);
	/* starts -1, 0, 1000, 1000, 2000, 3000: 6 of 13, each with 13 ends; the long ones; the
	 * steps' */
	ck_assert_int_eq(n, 6 * (TU_NEXTREME + 3) + TU_NLONG + TU_NSTEPS);

	/* a small window: every event returned overlaps it as read (an unknown end is an instant)
	 */
	f.t0 = 5000;
	f.t1 = 6000;
	for (int k = 0; k < CS_EV_COUNT; k++) {
		if (k == CS_EV_MEMORY)
			continue;
		ck_assert_int_eq(cs_iter_open(t, (enum cs_event_kind)k, &f, &it, &err), 0);
		while (cs_iter_next(it, &ev) == 1) {
			int64_t s = ev.u.kernel.start, e = ev.u.kernel.end;

			switch (ev.kind) {
			case CS_EV_MEMCPY:
				s = ev.u.memcpy.start, e = ev.u.memcpy.end;
				break;
			case CS_EV_MEMSET:
				s = ev.u.memset.start, e = ev.u.memset.end;
				break;
			case CS_EV_SYNC:
				s = ev.u.sync.start, e = ev.u.sync.end;
				break;
			case CS_EV_API:
				s = ev.u.api.start, e = ev.u.api.end;
				break;
			case CS_EV_NVTX:
				s = ev.u.nvtx.start, e = ev.u.nvtx.end;
				break;
			default:
				break;
			}
			ck_assert(s != CS_TS_UNKNOWN && s < f.t1);
			ck_assert_msg(e != CS_TS_UNKNOWN ? e > f.t0 || s >= f.t0 : s >= f.t0,
				      "kind %d [%lld, %lld] outside the window", k, (long long)s,
				      (long long)e);
		}
		cs_iter_close(it);
	}
	cs_trace_close(t);
}
END_TEST

/* ---- the commands ---- */

static void run_ok_deltas(const char **argv, const char *what, int deltas)
{
	struct tu_result r = tu_cuscope(argv);

	ck_assert_msg(r.rc == 0, "%s: exit %d\n%s", what, r.rc, r.err);
	assert_sane(&r, what, deltas);
	tu_result_free(&r);
}

static void run_ok(const char **argv, const char *what)
{
	run_ok_deltas(argv, what, 0);
}

START_TEST(test_info)
{
	const char *argv[] = {NULL, "info", extreme_db, NULL};
	const char *json[] = {NULL, "info", "--format", "json", extreme_db, NULL};
	struct tu_result r = tu_cuscope(argv);
	cJSON *doc, *d;
	const char *line;

	ck_assert_msg(r.rc == 0, "%s", r.err);
	assert_sane_output(&r, "info");
	line = strstr(r.out, "duration");
	ck_assert_ptr_nonnull(line);
	tu_result_free(&r);

	r = tu_cuscope(json);
	ck_assert_int_eq(r.rc, 0);
	assert_sane_output(&r, "info --format json");
	doc = cJSON_Parse(r.out);
	ck_assert_ptr_nonnull(doc);
	d = cJSON_GetObjectItem(doc, "duration_ns");
	ck_assert_ptr_nonnull(d);
	ck_assert(cJSON_IsNumber(d) && d->valuedouble >= 0 &&
		  d->valuedouble <= 2.0 * (double)CS_TS_MAX);
	cJSON_Delete(doc);
	tu_result_free(&r);
}
END_TEST

START_TEST(test_stats)
{
	const char *text[] = {NULL, "stats", "--limit", "0", extreme_db, NULL};
	const char *json[] = {NULL, "stats", "--format", "json", extreme_db, NULL};

	run_ok(text, "stats");
	run_ok(json, "stats --format json");
}
END_TEST

START_TEST(test_report)
{
	const char *text[] = {NULL, "report", extreme_db, NULL};
	const char *json[] = {NULL, "report", "--format", "json", extreme_db, NULL};
	const char *md[] = {NULL, "report", "--format", "markdown", extreme_db, NULL};

	const char *steps[] = {NULL,	       "report", "--format", "json",
			       "--step-range", "step",	 extreme_db, NULL};
	const char *all[] = {NULL, "report", "--step-range", "*", extreme_db, NULL};

	run_ok(text, "report");
	run_ok(json, "report --format json");
	run_ok(md, "report --format markdown");
	/* the TU_NSTEPS steps, and every NVTX range a step (some of 1 ns, some of 2^53 ns) */
	run_ok(steps, "report --step-range step");
	run_ok(all, "report --step-range '*'");
}
END_TEST

START_TEST(test_export)
{
	char *chrome = tu_path(tmp_dir, "extreme.json");
	char *perfetto = tu_path(tmp_dir, "extreme.pftrace");
	const char *a[] = {NULL, "export", "--quiet", "--force", "-o", chrome, extreme_db, NULL};
	const char *b[] = {NULL,       "export", "--quiet", "--force",	"--format",
			   "perfetto", "-o",	 perfetto,  extreme_db, NULL};
	const char *c[] = {NULL, "export", "--quiet",  "--force", "--time-range", "1ns:9200000000s",
			   "-o", chrome,   extreme_db, NULL};
	const char *c2[] = {
		NULL, "export", "--quiet",  "--force", "--time-range", "9000000000s:9100000000s",
		"-o", chrome,	extreme_db, NULL};
	char *json;
	cJSON *doc;

	run_ok(a, "export chrome");
	json = tu_read_file(chrome, NULL);
	ck_assert_ptr_nonnull(json);
	doc = cJSON_Parse(json);
	ck_assert_msg(doc != NULL, "export chrome: not JSON");
	cJSON_Delete(doc);
	free(json);
	run_ok(b, "export perfetto");
	ck_assert(tu_file_exists(perfetto));
	{
		struct tu_result r = tu_cuscope(c);

		/* past int64 ns: refused in one line */
		tu_assert_one_line_error(&r, "export --time-range past the limits");
		assert_sane_output(&r, "export --time-range");
		tu_result_free(&r);
	}
	/* a window of 2^63 ns and more after the trace's end */
	run_ok(c2, "export --time-range at the limits");
	{
		const char *st[] = {NULL,	    "export", "--quiet",  "--force",
				    "--step-range", "step",   "--steps",  "2-5",
				    "-o",	    chrome,   extreme_db, NULL};

		run_ok(st, "export --steps 2-5");
	}
	free(chrome);
	free(perfetto);
}
END_TEST

START_TEST(test_diff_and_gate)
{
	const char *d1[] = {NULL, "diff", "--format", "json", extreme_db, extreme_db, NULL};
	const char *d2[] = {NULL, "diff", sample_db, extreme_db, NULL};
	const char *d3[] = {NULL, "diff", "--format", "markdown", extreme_db, sample_db, NULL};
	const char *g1[] = {NULL, "gate", "--baseline", extreme_db, extreme_db, NULL};
	const char *g2[] = {NULL, "gate", "--baseline", sample_db, extreme_db, NULL};
	const char *d4[] = {NULL, "diff", "--step-range", "step", extreme_db, extreme_db, NULL};
	const char *d5[] = {NULL, "diff", "--step-range", "*", extreme_db, extreme_db, NULL};
	const char *g3[] = {NULL,	  "gate",     "--step-range", "step",
			    "--baseline", extreme_db, extreme_db,     NULL};
	struct tu_result r;

	run_ok_deltas(d1, "diff extreme extreme", 1);
	run_ok_deltas(d2, "diff sample extreme", 1);
	run_ok_deltas(d3, "diff extreme sample", 1);
	run_ok_deltas(g1, "gate extreme extreme", 1);
	run_ok_deltas(d4, "diff --step-range step", 1);
	run_ok_deltas(d5, "diff --step-range '*'", 1);
	run_ok_deltas(g3, "gate --step-range step", 1);
	/* a regression or not: exit 0 or 1, never a crash */
	r = tu_cuscope(g2);
	ck_assert_msg(r.rc == 0 || r.rc == 1 || r.rc == 2, "gate: exit %d\n%s", r.rc, r.err);
	if (r.rc == 2)
		tu_assert_one_line_error(&r, "gate sample extreme");
	assert_sane(&r, "gate sample extreme", 1);
	tu_result_free(&r);
}
END_TEST

/* ---- a file edited by hand ---- */

static char *edited_db;

static int check_process(const cs_process *p, void *arg)
{
	(void)arg;
	ck_assert(plausible_span(p->start, p->end));
	ck_assert_int_ge(p->dropped_records, 0);
	ck_assert(cs_bytes_plausible(p->cupti_device_bytes));
	return 0;
}

static int check_device(const cs_device *d, void *arg)
{
	(void)arg;
	ck_assert_int_eq(d->total_memory, 0);
	ck_assert(cs_bytes_plausible(d->memory_bandwidth));
	return 0;
}

static void write_edited(void)
{
	static const char sql[] =
		"UPDATE EVENT_TABLE_INFO SET minStart = -9223372036854775807, "
		"maxEnd = 9223372036854775807, maxDuration = 9223372036854775807;"
		"UPDATE META SET value = '-9223372036854775807' WHERE key = 'overview_start_ns';"
		"UPDATE META SET value = '9223372036854775807' WHERE key = 'overview_bin_ns';"
		"UPDATE TIMELINE_OVERVIEW SET busy = 9223372036854775807, "
		"events = 9223372036854775807;"
		"UPDATE PROCESSES SET droppedRecords = -5, start = 9223372036854775807, "
		"end = -9223372036854775807, cuptiDeviceBytes = -1;"
		"UPDATE TARGET_INFO_GPU SET smCount = -1, totalMemory = -9223372036854775807;"
		"INSERT INTO FINDINGS(rule, severity, start, end, steps, evidence, lostNsPerStep, "
		"stepShare, message, fix) VALUES('d2h-sync', 3, -9223372036854775807, "
		"9223372036854775807, '[0,1]', '{}', 9223372036854775807, 1e300, 'm', 'f'),"
		"('d2h-sync', 2, 0, -5, '[]', '{}', -9223372036854775807, -1, 'm', 'f');";
	char *data, *msg = NULL;
	size_t len;
	sqlite3 *db;

	edited_db = tu_path(tmp_dir, "edited.db");
	data = tu_read_file(extreme_db, &len);
	tu_need(data && !tu_write_file(edited_db, data, len), "test_bounds", edited_db);
	free(data);
	tu_need(sqlite3_open(edited_db, &db) == SQLITE_OK &&
			sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK,
		"test_bounds", msg ? msg : "sqlite3_open");
	sqlite3_close(db);
}

START_TEST(test_edited_trace)
{
	const char *info[] = {NULL, "info", "--format", "json", edited_db, NULL};
	const char *report[] = {NULL, "report", "--format", "json", edited_db, NULL};
	char *out = tu_path(tmp_dir, "edited.json");
	const char *export[] = {NULL, "export", "--quiet", "--force", "-o", out, edited_db, NULL};
	cs_trace *t;
	cs_error err;
	cs_trace_summary sum;

	ck_assert_int_eq(cs_trace_open(edited_db, &t, &err), 0);
	ck_assert_int_eq(cs_trace_get_summary(t, &sum, &err), 0);
	/* what EVENT_TABLE_INFO says is implausible: no span rather than a wrong one */
	ck_assert_int_eq(sum.start, CS_TS_UNKNOWN);
	ck_assert_int_eq(sum.end, CS_TS_UNKNOWN);
	ck_assert_int_eq(sum.dropped_records, 0);
	ck_assert_int_eq(cs_trace_each_process(t, check_process, NULL, &err), 0);
	ck_assert_int_eq(cs_trace_each_device(t, check_device, NULL, &err), 0);
	ck_assert_int_eq(sum.findings, 2); /* rows of FINDINGS are counted, never read */
	cs_trace_close(t);
	run_ok(info, "info on the edited trace");
	run_ok(report, "report on the edited trace");
	run_ok(export, "export on the edited trace");
	free(out);
}
END_TEST

static Suite *bounds_suite(void)
{
	Suite *s = suite_create("bounds");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_reader_returns_plausible_values);
	tcase_add_test(tc, test_reader_values_read_as_unknown);
	tcase_add_test(tc, test_reader_window_at_the_limits);
	tcase_add_test(tc, test_info);
	tcase_add_test(tc, test_stats);
	tcase_add_test(tc, test_report);
	tcase_add_test(tc, test_export);
	tcase_add_test(tc, test_diff_and_gate);
	tcase_add_test(tc, test_edited_trace);
	suite_add_tcase(s, tc);
	return s;
}

/* With an argument, only write the trace there (to run commands on it by hand). */
int main(int argc, char **argv)
{
	SRunner *sr;
	int failed;

	if (argc == 2) {
		tu_write_extreme_trace(argv[1], PID, "test_bounds");
		return 0;
	}
	setenv("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1", 0);
	tmp_dir = tu_tmpdir();
	extreme_db = tu_path(tmp_dir, "extreme.db");
	tu_write_extreme_trace(extreme_db, PID, "test_bounds");
	sample_db = tu_source_file("samples/traces/counts.db");
	write_edited();
	sr = srunner_create(bounds_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
