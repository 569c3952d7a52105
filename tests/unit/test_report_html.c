/*
 * test_report_html.c - what `cuscope report` shows people, run as a real binary: the HTML report
 * (one self-contained page: no address to fetch, every string of the trace escaped in the HTML and
 * in the embedded JSON, the figures of its charts computed right for a trace written here), -o FILE
 * (written whole or not at all, never over an existing file without --force), the evidence of the
 * text and markdown reports in words and units, and colours on a terminal only.
 */
#include <check.h>
#include <fcntl.h>
#include <poll.h>
#include <errno.h>
#include <math.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cuscope/analyze.h"
#include "cuscope/trace.h"
#include "testutil.h"

#define US  1000
#define MIB (1024 * 1024)

#define NSTEPS	  20
#define NKERNELS  6
#define KERNEL_US 200

static char *tmp_dir;
static char *job_db; /* two ranks, hostile names, a read-back at a hostile file name, memory */

/* Names from the trace that must come out as text (the kernels of job_db). */
static const char *const kernel_names[NKERNELS] = {
	"<b>\"bold\"</b>&amp;",
	"</script><script>alert(1)</script>",
	"_ZN2at6native13reduce_kernelILi512ELi1EEEvv",
	"line\xe2\x80\xa8separator\xe2\x80\xa9paragraph",
	"elementwise_relu",
	"adam_update",
};
#define HOSTILE_FILE "/home/user/<train>&\"x\".py"

#define run(...)       tu_cuscope((const char *[]){NULL, "report", __VA_ARGS__, NULL})
#define need(ok, what) tu_need(ok, "test_report_html", what)

/* ---- the trace ---- */

/*
 * Process pid (rank, on GPU device) of a two-rank job: NSTEPS steps of the NKERNELS kernels of
 * KERNEL_US each, launched ahead of the GPU, each step ended by a 4-byte read-back (a synchronous
 * device-to-host copy and the host's wait) at HOSTILE_FILE:42, which leaves the GPU idle until the
 * next step's launches; 8 MiB allocated before the first step and kept, 2 MiB allocated in each
 * step and freed at its end.
 */
static void write_rank(cs_trace_writer *w, const int64_t *ids, uint32_t pid, int32_t device)
{
	int64_t host = 1000 * US, gpu = 1000 * US, stack;
	cs_memory mem;
	cs_frame f[3];

	memset(f, 0, sizeof(f));
	f[0].kind = 1;
	f[0].pc = 0x7f0000001000ull;
	f[0].module = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
	f[0].symbol = "cuMemcpyDtoH_v2";
	f[1].kind = 2;
	f[1].symbol = "train_step";
	f[1].file = HOSTILE_FILE;
	f[1].line = 42;
	f[2].kind = 2;
	f[2].symbol = "<module>";
	f[2].file = HOSTILE_FILE;
	f[2].line = 60;
	stack = cs_writer_add_stack(w, f, 3);
	need(stack >= 0, "stack");

	mem = tu_memory(pid, CS_MEMOP_ALLOC, 0x700000000000ull, 8 * MIB, 500 * US);
	mem.device_id = device;
	need(cs_writer_add_memory(w, &mem) == 0, cs_writer_errmsg(w));

	for (int step = 0; step < NSTEPS; step++) {
		cs_memcpy m;
		cs_sync s;

		mem = tu_memory(pid, CS_MEMOP_ALLOC, 0x710000000000ull + (uint64_t)step * 4 * MIB,
				2 * MIB, host);
		mem.device_id = device;
		need(cs_writer_add_memory(w, &mem) == 0, cs_writer_errmsg(w));
		for (int i = 0; i < NKERNELS; i++) {
			int64_t start = gpu > host + 5 * US ? gpu : host + 5 * US;
			cs_kernel k = tu_kernel(pid, ids[i], host, start, start + KERNEL_US * US);

			k.device_id = device;
			need(cs_writer_add_kernel(w, &k) == 0, cs_writer_errmsg(w));
			gpu = k.end;
			host += 10 * US;
		}
		/* the call returns 5 us after its copy */
		m = tu_memcpy(pid, CS_COPY_DTOH, 4, host, gpu + 10 * US, gpu + 2 * US,
			      gpu + 5 * US);
		m.device_id = device;
		m.stack_id = stack;
		need(cs_writer_add_memcpy(w, &m) == 0, cs_writer_errmsg(w));
		s = tu_sync(pid, host + 1 * US, m.launch_end);
		s.stack_id = stack;
		need(cs_writer_add_sync(w, &s) == 0, cs_writer_errmsg(w));
		mem.start = s.end + 1 * US;
		mem.op = CS_MEMOP_FREE;
		mem.bytes = 0;
		need(cs_writer_add_memory(w, &mem) == 0, cs_writer_errmsg(w));
		host = s.end + 200 * US;
		gpu = host;
	}
}

static void write_job(const char *path)
{
	cs_trace_writer *w = tu_open_trace(path, "torchrun <train>.py", "test_report_html");
	int64_t ids[NKERNELS];

	for (uint32_t r = 0; r < 2; r++)
		tu_add_rank(w, 600 + r, "python3 <train>.py", (int32_t)r, 2, 100000 * US,
			    "test_report_html");
	tu_intern_names(w, kernel_names, NKERNELS, ids, "test_report_html");
	write_rank(w, ids, 600, 0);
	write_rank(w, ids, 601, 1);
	tu_finish_trace(w, "test_report_html");
}

/* ---- reading a page ---- */

/* The JSON embedded in a page (its script element's text), parsed; fails the test when missing. */
static cJSON *page_data(const char *html, char **raw)
{
	const char *open = "<script type=\"application/json\" id=\"cuscope-data\">";
	const char *b = strstr(html, open), *e;
	cJSON *doc;

	ck_assert_msg(b != NULL, "no data element");
	b += strlen(open);
	e = strstr(b, "</script>");
	ck_assert_msg(e != NULL, "the data element does not end");
	*raw = strndup(b, (size_t)(e - b));
	doc = cJSON_Parse(*raw);
	ck_assert_msg(doc != NULL, "the data is not JSON: %.200s", *raw);
	return doc;
}

static int count_of(const char *s, const char *what)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what))
		n++;
	return n;
}

/* ---- tests ---- */

START_TEST(test_html_self_contained)
{
	struct tu_result r = run("--format", "html", job_db);
	char *raw;
	cJSON *doc;

	ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
	ck_assert_str_eq(r.err, "");
	ck_assert(strncmp(r.out, "<!DOCTYPE html>\n", 16) == 0);
	ck_assert(strstr(r.out, "</html>\n") != NULL);
	/* nothing to fetch: no address (but the SVG namespace's name), no external script, style
	 * sheet or font */
	ck_assert_msg(count_of(r.out, "http:") == count_of(r.out, "http://www.w3.org/2000/svg") &&
			      strstr(r.out, "https:") == NULL && strstr(r.out, "//fonts") == NULL &&
			      strstr(r.out, "@import") == NULL && strstr(r.out, "url(") == NULL &&
			      strstr(r.out, " src=") == NULL && strstr(r.out, "<link") == NULL,
		      "the page refers to something outside it");
	ck_assert(strstr(r.out, "content=\"default-src 'none';") != NULL);
	/* the two script elements: the data and the charts' code */
	ck_assert_int_eq(count_of(r.out, "<script"), 2);
	ck_assert_int_eq(count_of(r.out, "</script>"), 2);
	doc = page_data(r.out, &raw);
	ck_assert(cJSON_GetObjectItemCaseSensitive(doc, "findings") != NULL);
	ck_assert(cJSON_GetObjectItemCaseSensitive(doc, "charts") != NULL);
	/* each chart has its figure */
	ck_assert(strstr(r.out, "id=\"chart-step-time\"") && strstr(r.out, "id=\"chart-busy\"") &&
		  strstr(r.out, "id=\"chart-memory\"") && strstr(r.out, "id=\"chart-kernels\""));
	cJSON_Delete(doc);
	free(raw);
	tu_result_free(&r);
}
END_TEST

START_TEST(test_html_escapes_trace_strings)
{
	struct tu_result r = run("-f", "html", job_db);
	const cJSON *top, *k;
	char *raw;
	cJSON *doc;
	int found = 0;

	ck_assert_int_eq(r.rc, 0);
	/* no name from the trace comes out as markup */
	for (int i = 0; i < 2; i++)
		ck_assert_msg(strstr(r.out, kernel_names[i]) == NULL, "'%s' unescaped",
			      kernel_names[i]);
	ck_assert(strstr(r.out, "<train>") == NULL);
	ck_assert(strstr(r.out, "&lt;b&gt;&quot;bold&quot;&lt;/b&gt;&amp;amp;") != NULL);
	ck_assert(strstr(r.out, "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;") != NULL);
	ck_assert(strstr(r.out, "torchrun &lt;train&gt;.py") != NULL);
	/* the finding's line, escaped */
	ck_assert_msg(
		strstr(r.out, "/home/user/&lt;train&gt;&amp;&quot;x&quot;.py:42 in train_step"),
		"no location of the read-back");
	/* a mangled name demangled in the table, with the whole name in its title */
	ck_assert_msg(strstr(r.out, ">at::native::reduce_kernel&lt;512, 1&gt;</code>") != NULL,
		      "%.300s",
		      strstr(r.out, "<td class=\"name\"><code title=\"void at::native::reduce"));
	ck_assert(strstr(r.out, "title=\"void at::native::reduce_kernel&lt;512, 1&gt;()\"") !=
		  NULL);

	/* the embedded JSON: no <, >, & or line separator a parser of HTML or JS would see ... */
	doc = page_data(r.out, &raw);
	ck_assert(strpbrk(raw, "<>&") == NULL);
	ck_assert(strstr(raw, "\xe2\x80\xa8") == NULL && strstr(raw, "\xe2\x80\xa9") == NULL);
	ck_assert(strstr(raw, "\\u003c/script\\u003e") != NULL);
	ck_assert(strstr(raw, "\\u2028") != NULL);
	/* ... and every name the same once parsed */
	top = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "charts"),
						 "kernels"),
		"top");
	cJSON_ArrayForEach(k, top)
	{
		const char *name =
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(k, "name"));

		for (int i = 0; i < NKERNELS; i++)
			found += name && !strcmp(name, kernel_names[i]);
	}
	ck_assert_int_eq(found, NKERNELS);
	cJSON_Delete(doc);
	free(raw);
	tu_result_free(&r);
}
END_TEST

/* The figures of the charts are those of the trace written above. */
START_TEST(test_html_chart_figures)
{
	struct tu_result r = run("-f", "html", job_db);
	const cJSON *charts, *it, *procs, *kernels, *words;
	char *raw;
	cJSON *doc;
	int n = 0;
	int64_t after_d2h = 0;

	ck_assert_int_eq(r.rc, 0);
	doc = page_data(r.out, &raw);
	charts = cJSON_GetObjectItemCaseSensitive(doc, "charts");

	/* the legends' words, one per cause key: the text header's, never the key */
	words = cJSON_GetObjectItemCaseSensitive(charts, "idle_cause_words");
	ck_assert_int_eq(cJSON_GetArraySize(words), CS_IDLE_NCAUSES);
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(charts, "idle_causes")),
		CS_IDLE_NCAUSES);
	cJSON_ArrayForEach(it, words)
	{
		ck_assert(cJSON_IsString(it) && strchr(it->valuestring, '_') == NULL);
		n++;
	}
	ck_assert_str_eq(cJSON_GetArrayItem(words, CS_IDLE_ALLOC)->valuestring, "allocator calls");
	ck_assert_str_eq(cJSON_GetArrayItem(words, CS_IDLE_D2H)->valuestring, "after D2H syncs");
	/* the charts' script names no cause itself */
	ck_assert(strstr(r.out, "CAUSE_WORDS") == NULL);
	ck_assert(strstr(r.out, "a longer step is cut at the top") != NULL);
	n = 0;

	/* device memory: per rank, 8 MiB kept and 2 MiB in each step: a peak of 10, 8 at the end */
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(charts, "memory"))
	{
		const cJSON *pts = cJSON_GetObjectItemCaseSensitive(it, "points");
		const cJSON *last = cJSON_GetArrayItem(pts, cJSON_GetArraySize(pts) - 1);

		ck_assert_int_eq(tu_json_i64(it, "peak_bytes"), 10 * MIB);
		ck_assert_int_eq(tu_json_i64(it, "device"), tu_json_i64(it, "pid") - 600);
		/* the first allocation, an allocation and a free per step */
		ck_assert_int_eq(cJSON_GetArraySize(pts), 1 + 2 * NSTEPS);
		ck_assert_int_eq((int64_t)cJSON_GetArrayItem(last, 1)->valuedouble, 8 * MIB);
		n++;
	}
	ck_assert_int_eq(n, 2);

	/* kernels: each name NSTEPS times per rank, KERNEL_US each */
	kernels = cJSON_GetObjectItemCaseSensitive(charts, "kernels");
	ck_assert_int_eq(tu_json_i64(kernels, "count"), 2 * NSTEPS * NKERNELS);
	ck_assert_int_eq(tu_json_i64(kernels, "total_ns"), 2LL * NSTEPS * NKERNELS * KERNEL_US * US);
	ck_assert_int_eq(tu_json_i64(kernels, "names"), NKERNELS);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(kernels, "top"))
	{
		ck_assert_int_eq(tu_json_i64(it, "count"), 2 * NSTEPS);
		ck_assert_int_eq(tu_json_i64(it, "mean_ns"), KERNEL_US * US);
		ck_assert(fabs(cJSON_GetObjectItemCaseSensitive(it, "share")->valuedouble -
			       1.0 / NKERNELS) < 1e-9);
	}

	/* idle by cause: a row per step of each process, never more than the step's idle, and
	 * the idle after each read-back charged to it in the steady steps */
	procs = cJSON_GetObjectItemCaseSensitive(doc, "processes");
	n = 0;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(charts, "processes"))
	{
		const cJSON *rows = cJSON_GetObjectItemCaseSensitive(it, "idle_by_cause"), *p,
			    *list = NULL;
		int i = 0;

		cJSON_ArrayForEach(p, procs) if (tu_json_i64(p, "pid") == tu_json_i64(it, "pid")) list =
			cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(p, "steps"), "list");
		ck_assert(list != NULL);
		ck_assert_int_eq(cJSON_GetArraySize(rows), cJSON_GetArraySize(list));
		ck_assert_int_gt(cJSON_GetArraySize(rows), 10);
		for (const cJSON *row = rows->child; row; row = row->next, i++) {
			const cJSON *st = cJSON_GetArrayItem(list, i), *c;
			int64_t sum = 0;

			ck_assert_int_eq(cJSON_GetArraySize(row), CS_IDLE_NCAUSES);
			cJSON_ArrayForEach(c, row)
			{
				ck_assert(c->valuedouble >= 0);
				sum += (int64_t)c->valuedouble;
			}
			ck_assert_msg(sum <= tu_json_i64(st, "duration_ns") - tu_json_i64(st, "gpu_busy_ns"),
				      "step %d: %lld charged, %lld idle", i, (long long)sum,
				      (long long)(tu_json_i64(st, "duration_ns") - tu_json_i64(st, "gpu_busy_ns")));
			if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "warmup")))
				ck_assert_int_eq(sum, 0);
			after_d2h += (int64_t)cJSON_GetArrayItem(row, CS_IDLE_D2H)->valuedouble;
		}
		n++;
	}
	ck_assert_int_eq(n, 2);
	ck_assert_int_gt(after_d2h, 0);
	cJSON_Delete(doc);
	free(raw);
	tu_result_free(&r);
}
END_TEST

START_TEST(test_html_findings_and_processes)
{
	struct tu_result r = run("-f", "html", job_db), j = run("-f", "json", job_db);
	cJSON *doc = cJSON_Parse(j.out);
	int nfind;

	ck_assert_int_eq(r.rc, 0);
	ck_assert(doc != NULL);
	nfind = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "findings"));
	ck_assert_int_gt(nfind, 0);
	/* an article per finding of the JSON report, the read-back first */
	ck_assert_int_eq(count_of(r.out, "<article class=\"finding sev-"), nfind);
	ck_assert(strstr(r.out, "id=\"finding-1\"") != NULL);
	ck_assert(strstr(r.out, "<code class=\"rule\">d2h-sync</code>") != NULL);
	ck_assert(strstr(r.out, "<h3>By source location</h3>") != NULL);
	/* the processes' table, each with its steps */
	ck_assert(strstr(r.out, "<td>rank 0 (pid 600)</td>") != NULL);
	ck_assert(strstr(r.out, "<td>rank 1 (pid 601)</td>") != NULL);
	ck_assert(strstr(r.out, "<dt>also in</dt>") != NULL);
	/* evidence in words */
	ck_assert(strstr(r.out, "<th>idle per step</th>") != NULL);
	ck_assert(strstr(r.out, "idle_ns_per_step") == NULL ||
		  strstr(r.out, "\"idle_ns_per_step\""));
	cJSON_Delete(doc);
	tu_result_free(&r);
	tu_result_free(&j);
}
END_TEST

START_TEST(test_output_file)
{
	char *out = tu_path(tmp_dir, "out.html"), *again,
	     *trace = tu_source_file("samples/rules/traces/d2h-sync-bad.db");
	char *missing = tu_path(tmp_dir, "no-such-dir/r.html"), *bad = tu_path(tmp_dir, "bad.db");
	char *bad_out = tu_path(tmp_dir, "bad.html"), *text;
	struct tu_result r = run("-f", "html", "-o", out, trace), s = run("-f", "html", trace);

	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_str_eq(r.out, "");
	again = tu_read_file(out, NULL);
	ck_assert(again != NULL);
	ck_assert_str_eq(again, s.out);
	free(again);
	tu_result_free(&r);

	/* an existing file: kept without --force, replaced with it; options after the file */
	ck_assert_int_eq(tu_write_file(out, "old\n", 4), 0);
	r = run("-f", "html", trace, "-o", out);
	tu_assert_one_line_error(&r, "existing output");
	ck_assert(strstr(r.err, "use --force") != NULL);
	again = tu_read_file(out, NULL);
	ck_assert_str_eq(again, "old\n");
	free(again);
	tu_result_free(&r);
	r = run("--format", "markdown", "--output", out, "--force", trace);
	ck_assert_int_eq(r.rc, 0);
	again = tu_read_file(out, NULL);
	ck_assert(strncmp(again, "## cuscope report: ", 19) == 0);
	free(again);
	tu_result_free(&r);

	/* text into a file: whole lines, no colour */
	r = run("--force", "-o", out, "--width", "40", trace);
	ck_assert_int_eq(r.rc, 0);
	text = tu_read_file(out, NULL);
	ck_assert(strchr(text, '\033') == NULL && strstr(text, "[warning] d2h-sync") != NULL);
	free(text);
	tu_result_free(&r);

	/* the trace itself, a directory that is not there, a bad trace: nothing written */
	r = run("-f", "html", "--force", "-o", trace, trace);
	tu_assert_one_line_error(&r, "output over the trace");
	tu_result_free(&r);
	r = run("-f", "html", "-o", missing, trace);
	tu_assert_one_line_error(&r, "output in a missing directory");
	tu_result_free(&r);
	ck_assert_int_eq(tu_write_file(bad, "not a trace", 11), 0);
	r = run("-f", "html", "-o", bad_out, bad);
	tu_assert_one_line_error(&r, "bad trace");
	ck_assert(!tu_file_exists(bad_out));
	tu_result_free(&r);
	r = run("-f", "htm", trace);
	tu_assert_one_line_error(&r, "bad format");
	ck_assert(strstr(r.err, "html") != NULL);
	tu_result_free(&r);
	r = run("--list-rules", "-f", "html");
	tu_assert_one_line_error(&r, "rules as html");
	tu_result_free(&r);

	tu_result_free(&s);
	free(out);
	free(trace);
	free(missing);
	free(bad);
	free(bad_out);
}
END_TEST

/* The value of "label: value" in text (the first line with it), or NULL. */
static char *line_value(const char *text, const char *label)
{
	const char *p = strstr(text, label), *e;

	if (!p)
		return NULL;
	p += strlen(label);
	e = strchr(p, '\n');
	return strndup(p, e ? (size_t)(e - p) : strlen(p));
}

/* A duration as the report writes it ("740 us", "36.0 ms") in ns. */
static double parse_duration(const char *s)
{
	char unit[8] = "";
	double v;

	ck_assert_msg(sscanf(s, "%lf %7[a-z]", &v, unit) == 2, "'%s' is no duration", s);
	if (!strcmp(unit, "s"))
		return v * 1e9;
	if (!strcmp(unit, "ms"))
		return v * 1e6;
	if (!strcmp(unit, "us"))
		return v * 1e3;
	ck_assert_str_eq(unit, "ns");
	return v;
}

START_TEST(test_evidence_in_words)
{
	char *trace = tu_source_file("samples/rules/traces/launch-starvation-bad.db");
	struct tu_result t = run(trace), j = run("-f", "json", trace), m = run("-f", "md", trace);
	cJSON *doc = cJSON_Parse(j.out);
	const cJSON *ev = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "findings"), 0),
		"evidence");
	const cJSON *by = cJSON_GetObjectItemCaseSensitive(ev, "idle_ns_by_cause");
	double idle = cJSON_GetObjectItemCaseSensitive(ev, "idle_ns_per_step")->valuedouble;
	double share = cJSON_GetObjectItemCaseSensitive(ev, "idle_share")->valuedouble;
	char *v, expect[64];

	ck_assert_int_eq(t.rc, 0);
	/* the JSON keeps the keys and the numbers; the text has words and units */
	ck_assert(strstr(t.out, "idle_ns_per_step") == NULL && strstr(t.out, "idle_share") == NULL);
	v = line_value(t.out, "evidence: idle share: ");
	snprintf(expect, sizeof(expect), "%.1f%%", 100.0 * share);
	ck_assert_str_eq(v, expect);
	free(v);
	v = line_value(t.out, " idle per step: ");
	ck_assert(v != NULL);
	ck_assert_msg(fabs(parse_duration(v) - idle) <= 0.005 * idle, "%s for %.0f ns", v, idle);
	free(v);
	/* a breakdown: its non-zero entries, in words, each a duration */
	v = line_value(t.out, " idle by cause: ");
	ck_assert(v != NULL);
	ck_assert(strstr(v, "launch overhead ") != NULL);
	ck_assert_msg(strstr(v, "host wait") == NULL ||
			      cJSON_GetObjectItemCaseSensitive(by, "host_wait")->valuedouble > 0,
		      "%s", v);
	ck_assert(parse_duration(strstr(v, "launch overhead ") + 16) > 0);
	free(v);
	/* the markdown's evidence table too */
	ck_assert(strstr(m.out, "| idle per step | ") != NULL);
	cJSON_Delete(doc);
	free(trace);
	tu_result_free(&t);
	tu_result_free(&j);
	tu_result_free(&m);
}
END_TEST

/*
 * Times since the trace start in the evidence: an interval is its duration ("wait 308 us"), the
 * times themselves only with -v and in HTML, to the microsecond; API names without CUPTI's version
 * suffix; the call sites' stack ids only with -v. The JSON keeps them all.
 */
START_TEST(test_evidence_times_and_names)
{
	char *d2h = tu_source_file("samples/rules/traces/d2h-sync-bad.db");
	char *churn = tu_source_file("samples/rules/traces/allocator-churn-bad_no_caching.db");
	struct tu_result m = run("-f", "md", d2h), tv = run("-v", d2h), j = run("-f", "json", d2h),
			 h = run("-f", "html", churn), cm = run("-f", "md", churn);
	const char *at;
	char *v;

	ck_assert_int_eq(m.rc, 0);
	/* markdown: the costliest wait's times as durations; no "5.27 s" four times */
	v = line_value(m.out, "| costliest wait | ");
	ck_assert(v != NULL);
	ck_assert_msg(strstr(v, "wait 308 us") && !strstr(v, "wait start") && !strstr(v, " s,") &&
			      !strstr(v, "window end"),
		      "%s", v);
	free(v);
	/* -v: the duration, and where it starts to the microsecond */
	v = line_value(tv.out, "costliest wait: ");
	ck_assert(v != NULL);
	ck_assert_msg(strstr(v, "wait 308 us at 5.265482 s") && strstr(v, "window end 5.266420 s"),
		      "%s", v);
	free(v);
	/* the JSON unchanged */
	ck_assert(strstr(j.out, "\"wait_start\":\t5265481532") != NULL);
	/* HTML: the longest allocator call by its plain name, its duration, not raw nanoseconds */
	ck_assert_int_eq(h.rc, 0);
	at = strstr(h.out, "<tr><th>longest call</th><td>");
	ck_assert(at != NULL);
	v = line_value(at, "<td>");
	ck_assert_msg(!strncmp(v, "cudaMalloc (step ", 17) && strstr(v, " us at ") &&
			      !strstr(v, "_v3020") && !strstr(v, "start "),
		      "%s", v);
	free(v);
	/* the call sites: the "where:" lines name them; their stack ids only with -v */
	ck_assert(strstr(cm.out, "| sites |") == NULL && strstr(cm.out, "stack id") == NULL);
	ck_assert(strstr(cm.out, "bad_no_caching.py:") != NULL);
	tu_result_free(&m);
	tu_result_free(&tv);
	tu_result_free(&j);
	tu_result_free(&h);
	tu_result_free(&cm);
	free(d2h);
	free(churn);
}
END_TEST

/* Run cuscope with args on a terminal (a pseudo-terminal), extra environment env; its output. */
static char *run_on_terminal(const char *const *args, const char *env)
{
	const char *bin = tu_cuscope_bin();
	char *out = NULL;
	size_t len = 0, cap = 0;
	int fd, status = 0, slave, done = 0;
	pid_t pid = forkpty(&fd, NULL, NULL, NULL);

	ck_assert_msg(pid >= 0, "forkpty: %s", strerror(errno));
	if (pid == 0) {
		char *argv[16];
		int n = 0;

		argv[n++] = (char *)bin;
		for (; args[n - 1] && n < 15; n++)
			argv[n] = (char *)args[n - 1];
		argv[n] = NULL;
		unsetenv("NO_COLOR");
		if (env)
			putenv((char *)env);
		execv(bin, argv);
		_exit(127);
	}
	/* Hold the terminal's other side open here too, so that the child's exit does not hang
	 * it up before everything it wrote has been read (a read then fails with EIO and what was
	 * still buffered is lost, which happened on a loaded machine): read until the child has
	 * ended and nothing more comes. */
	slave = open(ptsname(fd), O_RDWR | O_NOCTTY);
	for (;;) {
		struct pollfd pf = {fd, POLLIN, 0};
		ssize_t r;
		int ready = poll(&pf, 1, 200);

		if (ready > 0 && (pf.revents & POLLIN)) {
			if (len + 4096 + 1 > cap) {
				cap = cap ? cap * 2 : 65536;
				out = realloc(out, cap);
				ck_assert(out != NULL);
			}
			r = read(fd, out + len, 4096);
			if (r <= 0)
				break;
			len += (size_t)r;
			continue;
		}
		if (ready < 0 && errno != EINTR)
			break;
		if (!done && waitpid(pid, &status, WNOHANG) == pid)
			done = 1;
		else if (done || (ready > 0 && !(pf.revents & POLLIN)))
			break;
	}
	if (!out) {
		out = malloc(1);
		ck_assert(out != NULL);
	}
	out[len] = '\0';
	close(fd);
	if (slave >= 0)
		close(slave);
	if (!done)
		waitpid(pid, &status, 0);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return out;
}

/*
 * Whether s holds a colour (an SGR escape, ESC [ digits m). The progress line that a report
 * slower than its delay writes to the terminal erases itself with ESC [ K, which is not colour and
 * comes with NO_COLOR too: whether it appears depends on the machine's speed.
 */
static int has_colour(const char *s)
{
	for (const char *p = strstr(s, "\033["); p; p = strstr(p + 1, "\033[")) {
		const char *q = p + 2;

		while ((*q >= '0' && *q <= '9') || *q == ';')
			q++;
		if (*q == 'm')
			return 1;
	}
	return 0;
}

START_TEST(test_colour_on_terminal_only)
{
	char *trace = tu_source_file("samples/rules/traces/launch-starvation-bad.db");
	const char *args[] = {"report", trace, NULL};
	const char *no_color[] = {"report", "--no-color", trace, NULL};
	char *tty = run_on_terminal(args, NULL), *plain = run_on_terminal(args, "NO_COLOR=1");
	char *flag = run_on_terminal(no_color, NULL);
	struct tu_result pipe = run(trace);

	/* an error in bold red on a terminal */
	ck_assert_msg(strstr(tty, "\033[1;31m[error]\033[0m") != NULL, "%.300s", tty);
	ck_assert(!has_colour(plain) && strstr(plain, "[error] launch-starvation"));
	ck_assert(!has_colour(flag));
	ck_assert(strchr(pipe.out, '\033') == NULL);
	free(tty);
	free(plain);
	free(flag);
	free(trace);
	tu_result_free(&pipe);
}
END_TEST

static Suite *report_html_suite(void)
{
	Suite *s = suite_create("report-html");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_html_self_contained);
	tcase_add_test(tc, test_html_escapes_trace_strings);
	tcase_add_test(tc, test_html_chart_figures);
	tcase_add_test(tc, test_html_findings_and_processes);
	tcase_add_test(tc, test_output_file);
	tcase_add_test(tc, test_evidence_in_words);
	tcase_add_test(tc, test_evidence_times_and_names);
	tcase_add_test(tc, test_colour_on_terminal_only);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	signal(SIGPIPE, SIG_IGN);
	tmp_dir = tu_tmpdir();
	job_db = tu_path(tmp_dir, "job.db");
	write_job(job_db);
	sr = srunner_create(report_html_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
