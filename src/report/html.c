/*
 * html.c - `cuscope report --format html`: the report as one self-contained web page.
 *
 * The page is written from the JSON report (report_json()'s document, with report_charts() added as
 * "charts"): the header, the findings with their lines and evidence, and the table of top kernels
 * are HTML written here, every string from the trace escaped; the charts (step time per step, GPU
 * busy and idle by cause per step, device memory over time, top kernels) are SVG drawn by the
 * page's inline script (report.js) from the same document, embedded as JSON in a script element.
 * Nothing is fetched: the style and the script are inline (report_assets.c, generated from
 * report.css and report.js), and a Content-Security-Policy forbids every request.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/demangle.h"
#include "cuscope/escape.h"
#include "cuscope/json.h"
#include "cuscope/strbuf.h"
#include "cuscope/units.h"
#include "cuscope/utf8.h"
#include "report.h"
#include "report_internal.h"

#define HTML_STEP_RUNS_SHOWN 12 /* runs of a finding's steps shown */

/* report.css and report.js (report_assets.c, made by src/report/embed.py) */
extern const char report_css[];
extern const char report_js[];

/* ---- escaping ---- */

/*
 * Write doc as JSON fit for the inside of a <script> element: "<", ">" and "&" as \u003c, \u003e
 * and \u0026 (no "</script>" or "<!--" can end or change the element), and U+2028 and U+2029 as
 * \u2028 and \u2029. These characters appear in JSON text only inside strings, where the escapes
 * mean the same characters. -1 without memory.
 */
static int json_for_script(FILE *out, const cJSON *doc)
{
	char *text = cJSON_PrintUnformatted(doc);

	if (!text)
		return -1;
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		if (*p == '<')
			fputs("\\u003c", out);
		else if (*p == '>')
			fputs("\\u003e", out);
		else if (*p == '&')
			fputs("\\u0026", out);
		else if (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
			fputs(p[2] == 0xa8 ? "\\u2028" : "\\u2029", out);
			p += 2;
		} else
			fputc(*p, out);
	}
	cJSON_free(text);
	return 0;
}

/* ---- reading the document ---- */

static const cJSON *get(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *get_str(const cJSON *o, const char *key)
{
	const cJSON *v = get(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int64_t get_int(const cJSON *o, const char *key, int64_t none)
{
	return cs_json_get_int(o, key, none);
}

/* An array item that is an integer (cs_json_int writes raw numbers), or none. */
static int64_t item_int(const cJSON *it, int64_t none)
{
	if (cJSON_IsRaw(it) && it->valuestring) {
		char *end;
		long long n = strtoll(it->valuestring, &end, 10);

		return *end ? none : n;
	}
	return cJSON_IsNumber(it) ? (int64_t)it->valuedouble : none;
}

static double get_num(const cJSON *o, const char *key)
{
	const cJSON *v = get(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

static const char *dur(char *buf, int64_t ns)
{
	return cs_fmt_duration(buf, CS_FMT_MAX, ns);
}

static const char *plural(int64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* "rank 1 (pid 1202)", "local rank 0 (pid 1202)" or "pid 1202" of an object with pid and ranks. */
static const char *proc_label(char *buf, size_t size, const cJSON *o)
{
	int64_t pid = get_int(o, "pid", 0), rank = get_int(o, "rank", -1),
		local = get_int(o, "local_rank", -1);

	if (rank >= 0)
		snprintf(buf, size, "rank %" PRId64 " (pid %" PRId64 ")", rank, pid);
	else if (local >= 0)
		snprintf(buf, size, "local rank %" PRId64 " (pid %" PRId64 ")", local, pid);
	else
		snprintf(buf, size, "pid %" PRId64, pid);
	return buf;
}

/* The process object of pid in doc's "processes", or NULL. */
static const cJSON *process_of(const cJSON *doc, int64_t pid)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, get(doc, "processes")) if (get_int(p, "pid", -1) == pid) return p;
	return NULL;
}

/* The steps of a JSON array as runs: "3-29", "3-10, 12, 14-29", at most max_runs. */
static void step_runs(cs_strbuf *sb, const cJSON *steps, int max_runs)
{
	int n = cJSON_GetArraySize(steps), runs = 0;
	int64_t *v = calloc((size_t)n + 1, sizeof(*v));
	int i = 0;

	if (!v) {
		sb->failed = 1;
		return;
	}
	for (const cJSON *it = steps ? steps->child : NULL; it; it = it->next)
		v[i++] = item_int(it, 0);
	for (i = 0; i < n;) {
		int j = i;

		while (j + 1 < n && v[j + 1] == v[j] + 1)
			j++;
		if (runs == max_runs) {
			cs_strbuf_printf(sb, ", ... (%d more)", n - i);
			break;
		}
		if (j == i)
			cs_strbuf_printf(sb, "%s%" PRId64, runs ? ", " : "", v[i]);
		else
			cs_strbuf_printf(sb, "%s%" PRId64 "-%" PRId64, runs ? ", " : "", v[i],
					 v[j]);
		runs++;
		i = j + 1;
	}
	free(v);
}

/* "file:line in function", "function (module)", ... of a location or frame object. */
static void frame_text(cs_strbuf *sb, const cJSON *f)
{
	const char *file = get_str(f, "file"), *fn = get_str(f, "function"),
		   *mod = get_str(f, "module");
	int64_t line = get_int(f, "line", 0);
	const char *base = mod && strrchr(mod, '/') ? strrchr(mod, '/') + 1 : mod;

	if (file && line > 0)
		cs_strbuf_printf(sb, "%s:%" PRId64, file, line);
	else if (file)
		cs_strbuf_puts(sb, file);
	if (file && fn)
		cs_strbuf_printf(sb, " in %s", fn);
	else if (fn && base)
		cs_strbuf_printf(sb, "%s (%s)", fn, base);
	else if (fn)
		cs_strbuf_puts(sb, fn);
	else if (!file)
		cs_strbuf_puts(sb, base ? base : "?");
}

/* ---- the page ---- */

static void head(FILE *out, const cJSON *doc)
{
	const char *file = get_str(get(doc, "trace"), "file");
	const char *base = file && strrchr(file, '/') ? strrchr(file, '/') + 1 : file;

	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	      "<meta name=\"generator\" content=\"cuscope " CUSCOPE_VERSION "\">\n<title>",
	      out);
	fputs("cuscope report: ", out);
	cs_xml_text(out, base ? base : "");
	fputs("</title>\n<style>\n", out);
	fputs(report_css, out);
	fputs("</style>\n</head>\n<body>\n", out);
}

/* A <dt>label</dt><dd>text</dd> pair, text escaped. */
static void dl_item(FILE *out, const char *label, const char *text)
{
	fprintf(out, "<dt>%s</dt><dd>", label);
	cs_xml_text(out, text);
	fputs("</dd>\n", out);
}

/* "45 (period of ...), 4 warm-up" and "median 2.94 ms (p10 .. p90), GPU busy 8.3%" */
static void steps_items(FILE *out, const cJSON *steps)
{
	char a[CS_FMT_MAX], b[CS_FMT_MAX], c[CS_FMT_MAX], line[1024];
	const char *method = get_str(steps, "method"), *detail = get_str(steps, "detail");

	if (method && !strcmp(method, "none")) {
		snprintf(line, sizeof(line), "none found (%s)", detail ? detail : "");
		dl_item(out, "steps", line);
	} else {
		snprintf(line, sizeof(line), "%" PRId64 " (%s), %" PRId64 " warm-up",
			 get_int(steps, "count", 0), detail ? detail : "",
			 get_int(steps, "warmup", 0));
		dl_item(out, "steps", line);
		snprintf(line, sizeof(line), "median %s (p10 %s .. p90 %s)%s",
			 dur(a, get_int(steps, "median_ns", 0)),
			 dur(b, get_int(steps, "p10_ns", 0)), dur(c, get_int(steps, "p90_ns", 0)),
			 get_str(steps, "step_time") && !strcmp(get_str(steps, "step_time"), "gpu")
				 ? "; GPU-bound: step time from the GPU"
				 : "");
		dl_item(out, "step time", line);
	}
	snprintf(line, sizeof(line), "%.1f%%", 100.0 * get_num(steps, "gpu_busy_share"));
	dl_item(out, "GPU busy", line);
	if (cJSON_IsNumber(get(steps, "host_idle_share"))) {
		const cJSON *by = get(steps, "host_idle_share_by_cause");
		struct report_host_idle h = {1, get_num(steps, "host_idle_share"), {0}, 0};

		for (int c = 0; c < CS_IDLE_NCAUSES; c++)
			h.share[c] = get_num(by, cs_idle_cause_name(c));
		h.queued = fmax(0, 1 - get_num(steps, "gpu_busy_share") - h.total);
		if (h.total >= REPORT_HOST_IDLE_SHOWN)
			dl_item(out, "GPU idle", report_host_idle_text(line, sizeof(line), &h));
		if (cJSON_IsString(get(steps, "idle_without_finding")))
			dl_item(out, "without a finding",
				get(steps, "idle_without_finding")->valuestring);
	}
	if (cJSON_IsObject(get(steps, "fix_all")))
		dl_item(out, "if fixed",
			report_fix_all_text(line, sizeof(line),
					    get_int(get(steps, "fix_all"), "replayed_step_ns", 0),
					    get_int(get(steps, "fix_all"), "step_ns", 0),
					    get_num(get(steps, "fix_all"), "findings_saving_share")));
}

static void header(FILE *out, const cJSON *doc)
{
	const cJSON *trace = get(doc, "trace"), *procs = get(doc, "processes"), *sum, *it;
	const char *file = get_str(trace, "file"), *command = get_str(trace, "command");
	char line[1024], t[CS_FMT_MAX];
	int nprocs = cJSON_GetArraySize(procs);

	fputs("<header>\n<h1>cuscope report <span class=\"file\">", out);
	cs_xml_text(out, file ? file : "");
	fputs("</span></h1>\n<dl class=\"meta\">\n", out);
	if (command)
		dl_item(out, "command", command);
	if (cJSON_IsObject(get(trace, "window"))) {
		const cJSON *wo = get(trace, "window");
		cs_load_window w = {
			.on = 1,
			.asked = cJSON_IsTrue(get(wo, "asked")),
			.by_limit = cJSON_IsTrue(get(wo, "memory_limited")),
			.start = get_int(wo, "start_ns", 0),
			.end = get_int(wo, "end_ns", 0),
			.trace_start = get_int(wo, "trace_start_ns", 0),
			.trace_end = get_int(wo, "trace_end_ns", 0),
			.events = get_int(wo, "events", 0),
			.trace_events = get_int(wo, "trace_events", 0),
			.bytes = get_int(wo, "estimated_bytes", 0),
			.trace_bytes = get_int(wo, "trace_estimated_bytes", 0),
			.asked_bytes = get_int(wo, "asked_estimated_bytes", 0),
			.max_bytes = get_int(wo, "max_memory_bytes", 0),
		};
		char wl[512];

		snprintf(line, sizeof(line), "%s; %s", cs_load_window_text(wl, sizeof(wl), &w),
			 REPORT_WINDOW_NOTE);
		dl_item(out, "window", line);
	}
	if (nprocs <= 1)
		steps_items(out, get(doc, "steps"));
	sum = get(doc, "summary");
	snprintf(line, sizeof(line),
		 "%" PRId64 ": %" PRId64 " error, %" PRId64 " warning, %" PRId64 " info",
		 get_int(sum, "findings", 0), get_int(sum, "error", 0), get_int(sum, "warning", 0),
		 get_int(sum, "info", 0));
	dl_item(out, "findings", line);
	cJSON_ArrayForEach(it, get(trace, "processes_without_end"))
	{
		int64_t last = get_int(it, "last_event_ns", INT64_MIN);

		if (last == INT64_MIN)
			snprintf(line, sizeof(line),
				 "pid %" PRId64
				 " ended without its end record and recorded nothing",
				 get_int(it, "pid", 0));
		else
			snprintf(line, sizeof(line),
				 "pid %" PRId64 " ended without its end record (killed, os._exit): "
				 "records after %s may be missing",
				 get_int(it, "pid", 0), dur(t, last));
		dl_item(out, "warning", line);
	}
	fputs("</dl>\n", out);
	if (nprocs > 1) {
		fprintf(out,
			"<table class=\"procs\">\n<caption>%d processes, each with its own "
			"steps</caption>\n<thead><tr><th>Process</th><th>Steps</th>"
			"<th>Median step</th><th>GPU busy</th><th>Waiting for the host</th>"
			"<th>Findings</th></tr></thead>\n"
			"<tbody>\n",
			nprocs);
		cJSON_ArrayForEach(it, procs)
		{
			const cJSON *s = get(it, "steps"), *fi;
			cs_strbuf sb = CS_STRBUF_INIT;
			char lab[96];

			cJSON_ArrayForEach(fi, get(it, "findings"))
			{
				const cJSON *f = cJSON_GetArrayItem(get(doc, "findings"),
								    (int)item_int(fi, -1));

				cs_strbuf_printf(&sb, "%s%s", sb.len ? ", " : "",
						 get_str(f, "rule") ? get_str(f, "rule") : "?");
			}
			fputs("<tr><td>", out);
			cs_xml_text(out, proc_label(lab, sizeof(lab), it));
			fprintf(out, "</td><td class=\"num\">%" PRId64 "</td><td class=\"num\">",
				get_int(s, "count", 0));
			cs_xml_text(out, dur(t, get_int(s, "median_ns", 0)));
			fprintf(out, "</td><td class=\"num\">%.1f%%</td><td class=\"num\">",
				100.0 * get_num(s, "gpu_busy_share"));
			/* the text header's share: left out under 0.5%, and without steps */
			if (cJSON_IsNumber(get(s, "host_idle_share")) &&
			    get_num(s, "host_idle_share") >= REPORT_HOST_IDLE_SHOWN)
				fprintf(out, "%.1f%%", 100.0 * get_num(s, "host_idle_share"));
			fputs("</td><td>", out);
			cs_xml_text(out, sb.len ? cs_strbuf_str(&sb) : "none");
			fputs("</td></tr>\n", out);
			cs_strbuf_free(&sb);
		}
		fputs("</tbody>\n</table>\n", out);
	}
	fputs("<nav><a href=\"#findings\">Findings</a> <a href=\"#step-time\">Step time</a> "
	      "<a href=\"#busy\">GPU busy and idle</a> <a href=\"#memory\">Device memory</a> "
	      "<a href=\"#kernels\">Top kernels</a></nav>\n</header>\n",
	      out);
}

/* The evidence of a finding as a table of words and values. */
static void evidence(FILE *out, const cJSON *ev)
{
	const cJSON *it;
	int n = cJSON_GetArraySize(ev);

	if (n == 0)
		return;
	fprintf(out, "<details class=\"evidence\"><summary>Evidence (%d)</summary>\n<table>\n", n);
	cJSON_ArrayForEach(it, ev)
	{
		char *label = report_evidence_label(it->string), *val;

		val = report_evidence_value(it->string, it, 1);
		fputs("<tr><th>", out);
		cs_xml_text(out, label ? label : "");
		fputs("</th><td>", out);
		cs_xml_text(out, val ? val : "");
		fputs("</td></tr>\n", out);
		free(label);
		free(val);
	}
	fputs("</table>\n</details>\n", out);
}

static void stack(FILE *out, const cJSON *frames)
{
	const cJSON *fr;
	int n = cJSON_GetArraySize(frames);

	if (n == 0)
		return;
	fprintf(out,
		"<details class=\"stack\"><summary>Stack (%d %s)</summary>\n<ol start=\"0\">\n", n,
		plural(n, "frame", "frames"));
	cJSON_ArrayForEach(fr, frames)
	{
		cs_strbuf sb = CS_STRBUF_INIT;
		const char *kind = get_str(fr, "kind");

		frame_text(&sb, fr);
		fprintf(out, "<li class=\"%s\"><code>",
			kind && !strcmp(kind, "python") ? "python" : "native");
		cs_xml_text(out, cs_strbuf_str(&sb));
		fputs("</code></li>\n", out);
		cs_strbuf_free(&sb);
	}
	fputs("</ol>\n</details>\n", out);
}

static void finding(FILE *out, const cJSON *doc, const cJSON *f, int index, int multi)
{
	const char *sev = get_str(f, "severity"), *rule = get_str(f, "rule");
	const cJSON *loc = get(f, "location"), *steps = get(f, "steps"), *p;
	const cJSON *proc = process_of(doc, get_int(f, "pid", -1));
	int64_t lost = get_int(f, "lost_ns_per_step", 0), nsteps = cJSON_GetArraySize(steps);
	char a[CS_FMT_MAX], b[CS_FMT_MAX], lab[96], line[1024];
	cs_strbuf sb = CS_STRBUF_INIT;

	if (!sev || (strcmp(sev, "error") && strcmp(sev, "warning")))
		sev = "info";
	fprintf(out, "<article class=\"finding sev-%s\" id=\"finding-%d\">\n<h3>", sev, index + 1);
	fprintf(out, "<span class=\"badge sev-%s\">%s</span> <code class=\"rule\">", sev, sev);
	cs_xml_text(out, rule ? rule : "");
	fputs("</code> <span class=\"title\">", out);
	cs_xml_text(out, get_str(f, "title"));
	fputs("</span></h3>\n<dl>\n", out);
	if (multi)
		dl_item(out, "process", proc_label(lab, sizeof(lab), proc ? proc : f));
	if (nsteps > 0) {
		const cJSON *ps = proc ? get(proc, "steps") : get(doc, "steps");
		int64_t steady = get_int(ps, "count", 0) - get_int(ps, "warmup", 0);

		cs_strbuf_printf(&sb, "%" PRId64 " of %" PRId64 " steady-state %s: ", nsteps,
				 steady, plural(steady, "step", "steps"));
		step_runs(&sb, steps, HTML_STEP_RUNS_SHOWN);
		dl_item(out, "steps", cs_strbuf_str(&sb));
		cs_strbuf_reset(&sb);
	}
	if (lost > 0) {
		if (nsteps > 0)
			snprintf(line, sizeof(line), "%s per step (%.1f%% of step time), %s in all",
				 dur(a, lost),
				 100.0 * get_num(f, get(f, "saving_ns") ? "saving_share" : "step_share"),
				 dur(b, get_int(f, "total_lost_ns", 0)));
		else
			snprintf(line, sizeof(line), "%s", dur(a, lost));
		/* a replayed saving (docs/replay.md), or the time the rule charged */
		dl_item(out, get(f, "saving_ns") ? "saves (replayed)" : "GPU lost", line);
	}
	cJSON_ArrayForEach(p, get(f, "processes"))
	{
		int64_t pl = get_int(p, "lost_ns_per_step", 0),
			pn = cJSON_GetArraySize(get(p, "steps"));

		if (get_int(p, "pid", -1) == get_int(f, "pid", -2))
			continue;
		if (pl > 0 && pn > 0)
			snprintf(line, sizeof(line),
				 "%s: %s per step (%.1f%%) in %" PRId64 " %s, %s in all",
				 proc_label(lab, sizeof(lab), p), dur(a, pl),
				 100.0 * get_num(p, "step_share"), pn, plural(pn, "step", "steps"),
				 dur(b, get_int(p, "total_lost_ns", 0)));
		else
			snprintf(line, sizeof(line), "%s: in %" PRId64 " %s",
				 proc_label(lab, sizeof(lab), p), pn, plural(pn, "step", "steps"));
		dl_item(out, "also in", line);
	}
	if (cJSON_IsObject(loc)) {
		frame_text(&sb, loc);
		fputs("<dt>where</dt><dd class=\"where\"><code>", out);
		if (cJSON_IsTrue(get(loc, "autograd_engine_thread")))
			fputs("backward() at ", out);
		cs_xml_text(out, cs_strbuf_str(&sb));
		fputs("</code>", out);
		if (cJSON_IsTrue(get(loc, "autograd_engine_thread")))
			fputs(" (autograd engine thread)", out);
		fputs("</dd>\n", out);
		cs_strbuf_reset(&sb);
	}
	if (get_str(f, "fix") && *get_str(f, "fix"))
		dl_item(out, "fix", get_str(f, "fix"));
	fputs("</dl>\n", out);
	evidence(out, get(f, "evidence"));
	stack(out, get(f, "stack"));
	fputs("</article>\n", out);
	cs_strbuf_free(&sb);
}

/* The findings that have a location, one row per location with the rules found there. */
static void by_location(FILE *out, const cJSON *findings)
{
	int n = cJSON_GetArraySize(findings), shown = 0;
	char **where = calloc((size_t)n + 1, sizeof(*where));
	const cJSON *f;
	int i = 0;

	if (!where)
		return;
	cJSON_ArrayForEach(f, findings)
	{
		const cJSON *loc = get(f, "location");

		if (cJSON_IsObject(loc)) {
			cs_strbuf sb = CS_STRBUF_INIT;

			frame_text(&sb, loc);
			where[i] = sb.failed ? NULL : strdup(cs_strbuf_str(&sb));
			cs_strbuf_free(&sb);
		}
		i++;
	}
	for (i = 0; i < n; i++) {
		int seen = 0;

		if (!where[i])
			continue;
		for (int j = 0; j < i && !seen; j++)
			seen = where[j] && !strcmp(where[j], where[i]);
		if (seen)
			continue;
		if (!shown++)
			fputs("<h3>By source location</h3>\n<table "
			      "class=\"locations\">\n<thead><tr>"
			      "<th>Where</th><th>Findings</th></tr></thead>\n<tbody>\n",
			      out);
		fputs("<tr><td><code>", out);
		cs_xml_text(out, where[i]);
		fputs("</code></td><td>", out);
		for (int j = i, k = 0; j < n; j++) {
			const cJSON *g = cJSON_GetArrayItem(findings, j);

			if (!where[j] || strcmp(where[j], where[i]))
				continue;
			fprintf(out, "%s<a href=\"#finding-%d\">", k++ ? ", " : "", j + 1);
			cs_xml_text(out, get_str(g, "rule"));
			fputs(" (", out);
			cs_xml_text(out, get_str(g, "severity"));
			fputs(")</a>", out);
		}
		fputs("</td></tr>\n", out);
	}
	if (shown)
		fputs("</tbody>\n</table>\n", out);
	for (i = 0; i < n; i++)
		free(where[i]);
	free(where);
}

static void findings(FILE *out, const cJSON *doc)
{
	const cJSON *list = get(doc, "findings"), *f;
	int i = 0, multi = cJSON_GetArraySize(get(doc, "processes")) > 1;

	fputs("<section id=\"findings\">\n<h2>Findings</h2>\n", out);
	if (cJSON_GetArraySize(list) == 0)
		fputs("<p class=\"none\">No findings.</p>\n", out);
	cJSON_ArrayForEach(f, list) finding(out, doc, f, i++, multi);
	by_location(out, list);
	fputs("</section>\n", out);
}

/* A chart's section: the script draws into the figure; without it, the figure says so. */
static void chart_section(FILE *out, const char *id, const char *title, const char *note)
{
	fprintf(out,
		"<section id=\"%s\">\n<h2>%s</h2>\n<figure class=\"chart\" id=\"chart-%s\">"
		"<noscript>The charts need JavaScript.</noscript></figure>\n",
		id, title, id);
	if (note)
		fprintf(out, "<p class=\"note\">%s</p>\n", note);
	fputs("</section>\n", out);
}

static void kernels_table(FILE *out, const cJSON *charts)
{
	const cJSON *k = get(charts, "kernels"), *it;
	char a[CS_FMT_MAX], b[CS_FMT_MAX], c[CS_FMT_MAX], n[CS_FMT_MAX];
	int i = 0;

	if (cJSON_GetArraySize(get(k, "top")) == 0) {
		fputs("<p class=\"none\">No kernels.</p>\n", out);
		return;
	}
	fprintf(out,
		"<table class=\"kernels\">\n<caption>%s kernels of %" PRId64
		" names, %s of GPU time in all</caption>\n<thead><tr><th>#</th><th>Kernel</th>"
		"<th>Count</th><th>Total</th><th>Mean</th><th>Max</th><th>Share</th></tr>"
		"</thead>\n<tbody>\n",
		cs_fmt_count(n, sizeof(n), get_int(k, "count", 0)), get_int(k, "names", 0),
		dur(a, get_int(k, "total_ns", 0)));
	cJSON_ArrayForEach(it, get(k, "top"))
	{
		fprintf(out, "<tr><td class=\"num\">%d</td><td class=\"name\"><code title=\"", ++i);
		cs_xml_text(out, get_str(it, "name_demangled"));
		fputs("\">", out);
		cs_xml_text(out, get_str(it, "name_short"));
		fprintf(out, "</code></td><td class=\"num\">%s</td>",
			cs_fmt_count(n, sizeof(n), get_int(it, "count", 0)));
		fputs("<td class=\"num\">", out);
		cs_xml_text(out, dur(a, get_int(it, "total_ns", 0)));
		fputs("</td><td class=\"num\">", out);
		cs_xml_text(out, dur(b, get_int(it, "mean_ns", 0)));
		fputs("</td><td class=\"num\">", out);
		cs_xml_text(out, dur(c, get_int(it, "max_ns", 0)));
		fprintf(out, "</td><td class=\"num\">%.1f%%</td></tr>\n",
			100.0 * get_num(it, "share"));
	}
	fputs("</tbody>\n</table>\n", out);
}

int report_html_write(FILE *out, const cJSON *doc)
{
	head(out, doc);
	header(out, doc);
	fputs("<main>\n", out);
	findings(out, doc);
	chart_section(out, "step-time", "Step time per step",
		      "Warm-up steps are pale; the dashed line is the median of the steady-state "
		      "steps. The axis fits the steady-state steps: a longer step is cut at the "
		      "top, marked with a break, its time written above it.");
	chart_section(
		out, "busy", "GPU busy and idle by cause, per step",
		"The idle of steady-state steps that the host caused is split by cause as the "
		"launch-starvation rule splits it (docs/rules/launch-starvation.md); the rest "
		"of the idle (work already queued, the idle of warm-up steps) is "
		"<em>other idle</em>. The axis is that of the step time's chart: longer steps "
		"are cut.");
	chart_section(out, "memory", "Device memory in use",
		      "Allocations minus frees of each process on each GPU, made inside the trace; "
		      "with many changes, the highest level of each short interval.");
	fputs("<section id=\"kernels\">\n<h2>Top kernels by GPU time</h2>\n<figure class=\"chart\" "
	      "id=\"chart-kernels\"><noscript>The charts need JavaScript.</noscript></figure>\n",
	      out);
	kernels_table(out, get(doc, "charts"));
	fputs("</section>\n</main>\n<footer>cuscope " CUSCOPE_VERSION "</footer>\n"
	      "<script type=\"application/json\" id=\"cuscope-data\">",
	      out);
	if (json_for_script(out, doc))
		return -1;
	fputs("</script>\n<script>\n", out);
	fputs(report_js, out);
	fputs("</script>\n</body>\n</html>\n", out);
	return 0;
}
