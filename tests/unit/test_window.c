/*
 * test_window.c - a trace larger than the memory limit: `cuscope report --max-memory` analyses a
 * window in the middle of the run and says so in every format; --window analyses the range asked;
 * a trace that fits is analysed whole, as without the options; bad values end with one line on
 * stderr and exit code 2. And the model's window itself: cs_analysis_load_opts() loads exactly
 * the events that start in the window, found by cs_trace_row_at(). diff and gate take the limit
 * too.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cuscope/model.h"
#include "cuscope/trace.h"
#include "testutil.h"

#define US    1000
#define STEPS 3000

static char *tmp_dir, *loop_db;
static int64_t loop_end; /* the last timestamp of loop_db */

#define run(...) tu_cuscope((const char *[]){NULL, "report", __VA_ARGS__, NULL})

static void need(int ok, const char *what)
{
	tu_need(ok, "test_window", what);
}

/*
 * STEPS steps of pid 300: 6 kernels of 150 us launched 10 us apart, then loss.item(): a 4-byte
 * device-to-host copy and a stream synchronization the host waits in; the first 5 steps take 5 ms
 * more on the host (warm-up). About 24,000 events, 1.1 ms a step: 3.3 s in all, a model of about
 * 2.5 MiB.
 */
static void write_loop(const char *path)
{
	static const char *const names[] = {"sm90_gemm_bf16_tn", "elementwise_relu",
					    "sm90_gemm_bf16_nt", "reduce_sum",
					    "softmax_fwd",	 "adam_update"};
	cs_trace_writer *w = tu_open_trace(path, "python3 train.py", "test_window");
	int64_t ids[6], host = 1000 * US, gpu = 1000 * US;

	tu_add_process(w, 300, "python3 train.py", "test_window");
	tu_intern_names(w, names, 6, ids, "test_window");
	for (int step = 0; step < STEPS; step++) {
		cs_memcpy m;
		cs_sync s;

		if (step < 5)
			host += 5000 * US;
		for (int i = 0; i < 6; i++) {
			int64_t start = gpu > host + 5 * US ? gpu : host + 5 * US;
			cs_kernel k = tu_kernel(300, ids[i], host, start, start + 150 * US);

			need(cs_writer_add_kernel(w, &k) == 0, cs_writer_errmsg(w));
			gpu = k.end;
			host += 10 * US;
		}
		/* loss.item(): the call returns 5 us after its copy */
		m = tu_memcpy(300, CS_COPY_DTOH, 4, host, gpu + 10 * US, gpu + 2 * US,
			      gpu + 5 * US);
		need(cs_writer_add_memcpy(w, &m) == 0, cs_writer_errmsg(w));
		s = tu_sync(300, host + 1 * US, m.launch_end);
		need(cs_writer_add_sync(w, &s) == 0, cs_writer_errmsg(w));
		host = s.end + 200 * US;
		gpu = host;
		loop_end = s.end;
	}
	tu_finish_trace(w, "test_window");
}

static cJSON *parse(const struct tu_result *r)
{
	cJSON *doc = cJSON_Parse(r->out);

	ck_assert_msg(doc != NULL, "not JSON: %.200s", r->out);
	return doc;
}

static const cJSON *get_o(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	ck_assert_msg(v != NULL, "no '%s'", key);
	return v;
}

/*
 * Every step of the JSON report's steps list starts in [t0, t1); their number. A step starts at
 * its first launch, on the host, before its first kernel starts in the window: t0 is taken 1 ms
 * earlier.
 */
static int steps_within(const cJSON *doc, int64_t t0, int64_t t1)
{
	t0 -= 1000 * US;

	const cJSON *list = get_o(get_o(doc, "steps"), "list"), *it;
	int n = 0;

	cJSON_ArrayForEach(it, list)
	{
		int64_t s = tu_json_i64(it, "start_ns");

		ck_assert_msg(s >= t0 && s < t1, "step at %lld outside %lld..%lld", (long long)s,
			      (long long)t0, (long long)t1);
		n++;
	}
	return n;
}

/* ---- tests ---- */

START_TEST(test_limit_takes_the_middle)
{
	struct tu_result t = run("--max-memory", "1M", loop_db);
	struct tu_result j = run("--max-memory", "1M", "-f", "json", loop_db);
	struct tu_result m = run("--max-memory", "1M", "-f", "md", loop_db);
	cJSON *doc;
	const cJSON *w;
	int64_t t0, t1, span;

	ck_assert_msg(t.rc == 0, "rc %d: %s", t.rc, t.err);
	ck_assert_msg(strstr(t.out, "\nwindow:    ") != NULL, "%s", t.out);
	ck_assert_msg(strstr(t.out, "the middle ") != NULL, "%s", t.out);
	ck_assert_msg(strstr(t.out, "over the memory limit of 1.0 MiB (--max-memory)") != NULL,
		      "%s", t.out);
	ck_assert_msg(strstr(t.out, "findings and their totals cover this window only") != NULL,
		      "%s", t.out);
	ck_assert_msg(m.rc == 0 && strstr(m.out, "| Window | ") != NULL, "%s", m.out);
	ck_assert_msg(j.rc == 0, "rc %d: %s", j.rc, j.err);
	doc = parse(&j);
	w = get_o(get_o(doc, "trace"), "window");
	t0 = tu_json_i64(w, "start_ns");
	t1 = tu_json_i64(w, "end_ns");
	span = loop_end - 1000 * US;
	/* in the middle: the warm-up at the start is left out */
	ck_assert_msg(t0 > 1000 * US + span / 5 && t1 < loop_end - span / 5, "%lld..%lld",
		      (long long)t0, (long long)t1);
	ck_assert_int_eq(tu_json_i64(w, "trace_end_ns"), loop_end);
	ck_assert_msg(cJSON_IsTrue(get_o(w, "memory_limited")), "memory_limited");
	ck_assert_msg(cJSON_IsFalse(get_o(w, "asked")), "asked");
	ck_assert_int_eq(tu_json_i64(w, "max_memory_bytes"), 1 << 20);
	ck_assert_msg(tu_json_i64(w, "estimated_bytes") <= 1 << 20, "estimate over the limit");
	ck_assert_msg(tu_json_i64(w, "trace_estimated_bytes") > 1 << 20, "the whole fits");
	ck_assert_msg(tu_json_i64(w, "events") < tu_json_i64(w, "trace_events"), "every event");
	/* the trace object's times are the window's: the findings' totals cover it */
	ck_assert_int_eq(tu_json_i64(get_o(doc, "trace"), "start_ns"), t0);
	ck_assert_int_eq(tu_json_i64(get_o(doc, "trace"), "end_ns"), t1);
	ck_assert_int_ge(steps_within(doc, t0, t1), 100);
	ck_assert_int_eq(tu_json_i64(get_o(doc, "steps"), "warmup"), 0);
	/* the d2h-sync finding is still found, in the window's steps */
	ck_assert_msg(strstr(t.out, "d2h-sync") != NULL, "%s", t.out);
	cJSON_Delete(doc);
	tu_result_free(&t);
	tu_result_free(&j);
	tu_result_free(&m);
}
END_TEST

START_TEST(test_window_asked)
{
	struct tu_result j = run("--window", "1:2", "-f", "json", loop_db);
	struct tu_result t = run("--window", "1:2", loop_db);
	struct tu_result open = run("--window", "2.5:", "-f", "json", loop_db);
	struct tu_result h = run("--window", "1000ms:2s", "-f", "html", loop_db);
	cJSON *doc, *doc2;
	const cJSON *w;

	ck_assert_msg(j.rc == 0, "rc %d: %s", j.rc, j.err);
	doc = parse(&j);
	w = get_o(get_o(doc, "trace"), "window");
	ck_assert_int_eq(tu_json_i64(w, "start_ns"), 1000000000);
	ck_assert_int_eq(tu_json_i64(w, "end_ns"), 2000000000);
	ck_assert_msg(cJSON_IsTrue(get_o(w, "asked")), "asked");
	ck_assert_msg(cJSON_IsFalse(get_o(w, "memory_limited")), "memory_limited");
	ck_assert_int_ge(steps_within(doc, 1000000000, 2000000000), 800);
	ck_assert_msg(strstr(t.out, "window:    1.00 s to 2.00 s of ") != NULL, "%s", t.out);
	ck_assert_msg(strstr(t.out, "(--window)") != NULL, "%s", t.out);
	ck_assert_msg(open.rc == 0, "rc %d: %s", open.rc, open.err);
	doc2 = parse(&open);
	w = get_o(get_o(doc2, "trace"), "window");
	ck_assert_int_eq(tu_json_i64(w, "start_ns"), 2500000000);
	ck_assert_int_eq(tu_json_i64(w, "end_ns"), loop_end + 1);
	ck_assert_msg(h.rc == 0 && strstr(h.out, "<dt>window</dt>") != NULL, "rc %d: %.300s", h.rc,
		      h.err);
	cJSON_Delete(doc);
	cJSON_Delete(doc2);
	tu_result_free(&j);
	tu_result_free(&t);
	tu_result_free(&open);
	tu_result_free(&h);
}
END_TEST

/* A window asked that does not fit is narrowed to its own middle. */
START_TEST(test_window_asked_and_limited)
{
	struct tu_result j =
		run("--window", "0.5:3.3", "--max-memory", "1M", "-f", "json", loop_db);
	cJSON *doc;
	const cJSON *w;
	int64_t t0, t1;

	ck_assert_msg(j.rc == 0, "rc %d: %s", j.rc, j.err);
	doc = parse(&j);
	w = get_o(get_o(doc, "trace"), "window");
	t0 = tu_json_i64(w, "start_ns");
	t1 = tu_json_i64(w, "end_ns");
	ck_assert_msg(cJSON_IsTrue(get_o(w, "asked")) && cJSON_IsTrue(get_o(w, "memory_limited")),
		      "asked and limited");
	ck_assert_msg(t0 > 500000000 && t1 < 3300000000 && t1 > t0, "%lld..%lld", (long long)t0,
		      (long long)t1);
	/* about centred on the middle of the window asked */
	ck_assert_msg(llabs((t0 + t1) / 2 - 1900000000) < 2000000, "centre %lld",
		      (long long)((t0 + t1) / 2));
	cJSON_Delete(doc);
	tu_result_free(&j);
}
END_TEST

/* A trace that fits is analysed whole: the same bytes as without the options. */
START_TEST(test_fits_unchanged)
{
	static const char *const formats[] = {"text", "json", "markdown"};

	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		struct tu_result a = run("-f", formats[i], loop_db);
		struct tu_result b = run("--max-memory", "1G", "-f", formats[i], loop_db);

		ck_assert_msg(a.rc == 0 && b.rc == 0, "rc %d %d", a.rc, b.rc);
		ck_assert_msg(!strcmp(a.out, b.out), "%s differs", formats[i]);
		if (i == 1) {
			cJSON *doc = parse(&a);

			ck_assert_msg(
				!cJSON_GetObjectItemCaseSensitive(get_o(doc, "trace"), "window"),
				"a window in JSON");
			cJSON_Delete(doc);
		} else {
			ck_assert_msg(!strstr(a.out, "window:") && !strstr(a.out, "| Window |"),
				      "%s: %.300s", formats[i], a.out);
		}
		tu_result_free(&a);
		tu_result_free(&b);
	}
}
END_TEST

START_TEST(test_bad_values)
{
	static const char *const bad[][2] = {
		{"--max-memory", "0"},	 {"--max-memory", "abc"},     {"--max-memory", "-1G"},
		{"--max-memory", "4X"},	 {"--max-memory", "100K"},    {"--window", "5:2"},
		{"--window", "2:2"},	 {"--window", ":"},	      {"--window", "abc"},
		{"--window", "1:2:3"},	 {"--window", "-1:2"},	      {"--window", "100:200"},
		{"--window", ":0.0005"}, {"--window", "0.008:0.012"},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tu_result r = run(bad[i][0], bad[i][1], loop_db);
		char what[64];

		snprintf(what, sizeof(what), "%s %s", bad[i][0], bad[i][1]);
		tu_assert_one_line_error(&r, what);
		tu_result_free(&r);
	}
}
END_TEST

/* diff and gate: the same limit, and a note on stderr for each trace analysed in a window. */
START_TEST(test_diff_gate_limit)
{
	struct tu_result d = tu_cuscope(
		(const char *[]){NULL, "diff", "--max-memory", "1M", loop_db, loop_db, NULL});
	struct tu_result g = tu_cuscope(
		(const char *[]){NULL, "gate", "--max-memory", "1M", "-b", loop_db, loop_db, NULL});
	struct tu_result whole = tu_cuscope((const char *[]){NULL, "diff", loop_db, loop_db, NULL});
	struct tu_result bad = tu_cuscope(
		(const char *[]){NULL, "diff", "--max-memory", "abc", loop_db, loop_db, NULL});
	const char *note = "cuscope: note: '";

	ck_assert_msg(d.rc == 0, "rc %d: %s", d.rc, d.err);
	ck_assert_msg(strstr(d.err, note) && strstr(strstr(d.err, note) + 1, note) &&
			      strstr(d.err, "analysed in a window: ") &&
			      strstr(d.err, "the middle "),
		      "%s", d.err);
	ck_assert_msg(g.rc == 0, "rc %d: %s", g.rc, g.err);
	ck_assert_msg(strstr(g.err, "analysed in a window: ") != NULL, "%s", g.err);
	ck_assert_msg(whole.rc == 0 && whole.err[0] == '\0', "rc %d: %s", whole.rc, whole.err);
	tu_assert_one_line_error(&bad, "diff --max-memory abc");
	tu_result_free(&d);
	tu_result_free(&g);
	tu_result_free(&whole);
	tu_result_free(&bad);
}
END_TEST

/* The number of "ProfilerStep#" slices in a Chrome JSON export, and the smallest N among them. */
static int profiler_steps(const char *path, long *first)
{
	char *text = tu_read_file(path, NULL);
	int n = 0;

	*first = -1;
	for (const char *p = text; p && (p = strstr(p, "\"ProfilerStep#")); p++) {
		long k = strtol(p + 14, NULL, 10);

		if (*first < 0 || k < *first)
			*first = k;
		n++;
	}
	free(text);
	return n;
}

/* export within --max-memory: the slices of the middle (or of --time-range), said in a note;
 * --steps, numbered over the whole trace, refused in one line with nothing written. */
START_TEST(test_export_limit)
{
	char *whole = tu_path(tmp_dir, "whole.json"), *mid = tu_path(tmp_dir, "mid.json");
	char *ranged = tu_path(tmp_dir, "ranged.json"), *steps = tu_path(tmp_dir, "steps.json");
	struct tu_result a = tu_cuscope((const char *[]){NULL, "export", "-o", whole, loop_db, NULL});
	struct tu_result b = tu_cuscope(
		(const char *[]){NULL, "export", "--max-memory", "1M", "-o", mid, loop_db, NULL});
	struct tu_result c = tu_cuscope((const char *[]){NULL, "export", "--max-memory", "1M", "-t",
							  "1s:1.2s", "-o", ranged, loop_db, NULL});
	struct tu_result d = tu_cuscope((const char *[]){NULL, "export", "--max-memory", "1M",
							  "--steps", "5-6", "-o", steps, loop_db,
							  NULL});
	struct tu_result e = tu_cuscope(
		(const char *[]){NULL, "export", "--max-memory", "abc", "-o", steps, loop_db, NULL});
	long first_whole, first_mid, first_ranged;
	int n_whole, n_mid, n_ranged;

	ck_assert_msg(a.rc == 0 && !strstr(a.err, "note:"), "rc %d: %s", a.rc, a.err);
	ck_assert_msg(b.rc == 0 && strstr(b.err, "cuscope: note: the ProfilerStep#N slices are "
						 "those of ") &&
			      strstr(b.err, "the middle ") && strstr(b.err, "(numbered from there)"),
		      "rc %d: %s", b.rc, b.err);
	n_whole = profiler_steps(whole, &first_whole);
	n_mid = profiler_steps(mid, &first_mid);
	/* every step of the run (less the warm-up), and fewer in the middle, numbered from 0 */
	ck_assert_msg(n_whole > 2500 && n_mid > 0 && n_mid < n_whole / 2, "%d and %d steps",
		      n_whole, n_mid);
	ck_assert_int_eq(first_mid, first_whole);
	/* the time range's own steps: about a fifth of a second of 1.1 ms steps */
	ck_assert_msg(c.rc == 0 && strstr(c.err, "cuscope: note: the ProfilerStep#N slices"),
		      "rc %d: %s", c.rc, c.err);
	n_ranged = profiler_steps(ranged, &first_ranged);
	ck_assert_msg(n_ranged > 100 && n_ranged < 250, "%d steps", n_ranged);
	tu_assert_one_line_error(&d, "export --max-memory 1M --steps");
	ck_assert_msg(strstr(d.err, "cannot number the steps of '") &&
			      strstr(d.err, "within --max-memory 1.0 MiB"),
		      "%s", d.err);
	ck_assert(!tu_file_exists(steps));
	tu_assert_one_line_error(&e, "export --max-memory abc");
	tu_result_free(&a);
	tu_result_free(&b);
	tu_result_free(&c);
	tu_result_free(&d);
	tu_result_free(&e);
	free(whole);
	free(mid);
	free(ranged);
	free(steps);
}
END_TEST

/* The model's window: exactly the events that start in it, of every table. */
START_TEST(test_load_window_rows)
{
	cs_trace *t = NULL;
	cs_analysis a, all;
	cs_error err = {0, ""};
	cs_load_opts o = {0, 1234567890, 2345678901};
	int64_t n = 0, row;

	ck_assert_int_eq(cs_trace_open(loop_db, &t, &err), 0);
	ck_assert_msg(cs_analysis_load(t, &all, &err) == 0, "%s", err.msg);
	ck_assert_msg(cs_analysis_load_opts(t, &a, &o, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(a.window.on, 1);
	ck_assert_int_eq(a.trace_start, o.from);
	ck_assert_int_eq(a.trace_end, o.to);
	for (int64_t i = 0; i < all.nkernels; i++)
		n += all.kernels[i].start >= o.from && all.kernels[i].start < o.to;
	ck_assert_int_eq(a.nkernels, n);
	ck_assert_int_ge(a.kernels[0].start, o.from);
	ck_assert_int_lt(a.kernels[a.nkernels - 1].start, o.to);
	n = 0;
	for (int64_t i = 0; i < all.ncopies; i++)
		n += all.copies[i].start >= o.from && all.copies[i].start < o.to;
	ck_assert_int_eq(a.ncopies, n);
	n = 0;
	for (int64_t i = 0; i < all.nsyncs; i++)
		n += all.syncs[i].start >= o.from && all.syncs[i].start < o.to;
	ck_assert_int_eq(a.nsyncs, n);
	ck_assert_int_eq(a.window.events, a.nkernels + a.ncopies + a.nsyncs);
	/* the rows before a time, by binary search */
	ck_assert_int_eq(cs_trace_row_at(t, CS_EV_KERNEL, INT64_MIN, &row, &err), 0);
	ck_assert_int_eq(row, 0);
	ck_assert_int_eq(cs_trace_row_at(t, CS_EV_KERNEL, INT64_MAX, &row, &err), 0);
	ck_assert_int_eq(row, all.nkernels);
	ck_assert_int_eq(cs_trace_row_at(t, CS_EV_KERNEL, all.kernels[100].start, &row, &err), 0);
	ck_assert_int_eq(row, 100);
	/* no limit and no window: the whole trace */
	cs_analysis_free(&a);
	o.from = o.to = CS_TS_UNKNOWN;
	ck_assert_msg(cs_analysis_load_opts(t, &a, &o, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(a.window.on, 0);
	ck_assert_int_eq(a.nkernels, all.nkernels);
	ck_assert_int_eq(a.window.trace_bytes, a.window.bytes);
	cs_analysis_free(&a);
	cs_analysis_free(&all);
	cs_trace_close(t);
}
END_TEST

static Suite *window_suite(void)
{
	Suite *s = suite_create("window");
	TCase *tc = tcase_create("window");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_limit_takes_the_middle);
	tcase_add_test(tc, test_window_asked);
	tcase_add_test(tc, test_window_asked_and_limited);
	tcase_add_test(tc, test_fits_unchanged);
	tcase_add_test(tc, test_bad_values);
	tcase_add_test(tc, test_diff_gate_limit);
	tcase_add_test(tc, test_export_limit);
	tcase_add_test(tc, test_load_window_rows);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	tmp_dir = tu_tmpdir();
	need(tmp_dir != NULL, "a temporary directory");
	loop_db = tu_path(tmp_dir, "loop.db");
	write_loop(loop_db);
	return tu_run_suite(window_suite());
}
