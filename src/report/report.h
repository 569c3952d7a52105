/*
 * report.h - the renderers of `cuscope report` (src/cli/cmd_report.c runs the analysis, the
 * renderers print it): the report as text (text.c), as a JSON document (json.c, whose findings the
 * view's findings answer shares), as markdown (markdown.c) and as one HTML page (html.c, with the
 * figures of charts.c); the cross-rank section (ranks.c); text fit for people (evidence.c).
 */
#ifndef CUSCOPE_REPORT_REPORT_H
#define CUSCOPE_REPORT_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "cuscope/analyze.h"
#include "cuscope/ranks.h"
#include "cuscope/trace.h"

/*
 * The GPU idle of each step of each process of procs by cause (cs_steps_idle_by_cause(): one scan
 * of the process's GPU work), made the first time a renderer asks for a process's
 * (report_steps_idle()), so that the text header, the JSON steps objects and the HTML charts share
 * one scan per process. cmd_report.c owns it (report_idle_cache_free()).
 */
struct report_idle_cache {
	int64_t **v; /* per process, s->n * CS_IDLE_NCAUSES values; NULL until asked */
	int32_t n;
};
void report_idle_cache_free(struct report_idle_cache *c);
struct report_view;
/* The GPU idle of each step of s (those of a process of v->procs) by cause, from v->idle: idle[i *
 * CS_IDLE_NCAUSES + cause] for step i; NULL with err set on failure. */
const int64_t *report_steps_idle(const struct report_view *v, const cs_steps *s, cs_error *err);

/* Everything a renderer prints: the analysis of a trace and how to show it. */
struct report_view {
	const cs_unended *unended; /* records after their last one may be missing */
	int nunended;
	const char *path;
	cs_trace *t;
	const cs_analysis *a;
	const cs_steps *s; /* of the primary process: the default step detection's, or --pid's */
	const cs_report *r;
	const cs_report_processes *procs; /* every process analysed, each with its steps */
	const cs_rank_view *ranks;	  /* the processes that communicate, side by side */
	int multi;			  /* more than one process analysed */
	const cs_analyzer **rules;	  /* the rules that ran, NULL-terminated */
	const char *step_range;
	int verbose, color, width;
	int64_t median, p10, p90;
	double busy_share; /* GPU busy share of the steady-state step time */
	struct report_idle_cache *idle; /* filled as renderers ask */
	FILE *out;			/* where the text and markdown renderers write */
};

/* What a report of a window of its trace says under the window's line (cs_load_window). */
#define REPORT_WINDOW_NOTE "findings and their totals cover this window only"

/* ---- the formats ---- */

/* Print the report as text on v->out (colours with v->color, lines fit in v->width). Returns 0. */
int report_text(const struct report_view *v);
/* The JSON report (docs/report-format.md); NULL without memory. */
cJSON *report_json(const struct report_view *v);
/*
 * One finding f as the JSON report lists it: rule, severity, title, steps, costs, first_ns and
 * last_ns, evidence (UTF-8 repaired), fix, location and stack (read from t), pid, ranks and every
 * process it was found in (procs has their ranks). NULL without memory.
 */
cJSON *report_json_finding(cs_trace *t, const cs_report_processes *procs,
			   const cs_report_finding *f);
/* Print the report as markdown on stdout. Returns 0. */
int report_markdown(const struct report_view *v);

/* ---- the cross-rank section (ranks.c) ---- */

/* Print the section (nothing for a view of fewer than two ranks); verbose adds the table of
 * steps. */
void report_ranks_text(FILE *out, const cs_rank_view *rv, int verbose, int width);
/* The "ranks" object of the JSON report (docs/report-format.md); JSON null for a view of fewer
 * than two ranks; NULL without memory. */
cJSON *report_ranks_json(const cs_rank_view *rv);
/* The "Ranks" section of the markdown report (nothing for fewer than two ranks). */
void report_ranks_markdown(FILE *out, const cs_rank_view *rv);

/* ---- text for people (evidence.c) ---- */

/*
 * An evidence key in words (malloc'd): "idle_ns_per_step" -> "idle per step", "wait_ns" -> "wait
 * time", "share_of_gpu_time" -> "share of GPU time". NULL without memory.
 */
char *report_evidence_label(const char *key);

/*
 * An evidence value as one line of text in the unit its key names (malloc'd, cleaned): durations
 * for keys with an "ns" word ("740 us"), sizes for byte counts ("3.73 GiB"), percentages for
 * shares ("93.0%"), counts with thousands separators, yes/no; objects as "word value, ..." (a
 * kernel by its short demangled name first, the whole demangled name with verbose), lists with at
 * most 3 items unless verbose, and zero entries of an object of numbers left out unless verbose.
 * NULL without memory.
 */
char *report_evidence_value(const char *key, const cJSON *v, int verbose);

/*
 * Is the evidence key shown: without verbose, times since the trace start ("wait_start") and the
 * stacks of call sites ("sites", "stack_id"; the "where:" lines name them) are not. Inside an
 * object, report_evidence_value() shows an interval (wait_start, wait_end) as its duration ("wait
 * 308 us"; at its start with verbose), other times with verbose only, to the microsecond
 * ("5.265482 s"); mangled kernel names demangled and CUDA API names without CUPTI's version
 * suffix ("cudaFree", not "cudaFree_v3020").
 */
int report_evidence_shown(const char *key, int verbose);

/* ---- diff and gate (compare.c) ---- */

struct cs_diff;
/* The diff as JSON (docs/commands/diff.md); NULL without memory. */
cJSON *report_diff_json(const struct cs_diff *d);
/*
 * Markdown of a diff (gate 0: `cuscope diff`, the most significant rows, at most limit kernel rows;
 * 0 = all) or of a gate's checks (gate 1: verdict, failures, then the passing checks folded).
 * Returns 0 or CS_ERR_IO.
 */
int report_diff_markdown(FILE *f, const struct cs_diff *d, int gate, int limit);
/* JUnit XML: one testcase per check, a <failure> naming metric, base, new and threshold. */
int report_gate_junit(FILE *f, const struct cs_diff *d);
/*
 * The diff as text: both runs, the notes, the metrics' table (at most limit kernel rows, 0 = all)
 * fit in width (0: no limit), the findings. Returns 0.
 */
int report_diff_text(FILE *f, const struct cs_diff *d, int limit, int width, int color);
/* The gate as text: the verdict, both runs, the notes, the checks' table, the new findings. */
void report_gate_text(FILE *f, const struct cs_diff *d, int width, int color);

/* ---- the figures of the HTML report (charts.c) ---- */

/*
 * What the HTML report charts that the JSON report does not hold, computed from the loaded
 * trace: for each process of v->procs, the GPU idle of each step by cause (report_steps_idle());
 * the device memory in use of each process and GPU over time (at most REPORT_MEMORY_POINTS points
 * each: the highest level of each interval); and the kernels of those processes with the most GPU
 * time (REPORT_TOP_KERNELS). NULL with err set on failure.
 */
#define REPORT_MEMORY_POINTS 1200
#define REPORT_TOP_KERNELS   20
cJSON *report_charts(const struct report_view *v, cs_error *err);

/* ---- the HTML report (html.c) ---- */

/*
 * Write the HTML report of doc (the JSON report of report_json() with report_charts() added as
 * "charts") to out: one self-contained page, no request to any other place (inline CSS, script
 * and SVG; a Content-Security-Policy that forbids any fetch). Every string from the trace is
 * HTML-escaped, and the data the charts are drawn from is embedded as JSON with <, >, &, U+2028
 * and U+2029 escaped. Returns 0, or -1 without memory.
 */
int report_html_write(FILE *out, const cJSON *doc);

#endif
