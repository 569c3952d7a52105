/*
 * report.h - what `cuscope report` shares between its output formats beyond the JSON document
 * (src/cli/cmd_report.c): text fit for people (names from the trace cleaned, evidence in words and
 * units), the figures the HTML report charts, and the HTML report itself.
 *
 * Part of the cuscope program (it formats with src/cli/format.c), not of the libraries.
 */
#ifndef CUSCOPE_REPORT_REPORT_H
#define CUSCOPE_REPORT_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "cuscope/analyze.h"

/* ---- text for people (evidence.c) ---- */

/*
 * A copy of s fit for a terminal, a markdown or an HTML file (malloc'd): invalid UTF-8 repaired,
 * control characters (C0, DEL, C1) shown as '?', so that names from a trace cannot move the cursor
 * or change colours. NULL without memory.
 */
char *report_clean_text(const char *s);

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

/* ---- the figures of the HTML report (charts.c) ---- */

/*
 * What the HTML report charts that the JSON report does not hold, computed from the loaded
 * trace: for each process of procs, the GPU idle of each step by cause (cs_steps_idle_by_cause);
 * the device memory in use of each process and GPU over time (at most REPORT_MEMORY_POINTS points
 * each: the highest level of each interval); and the kernels of those processes with the most GPU
 * time (REPORT_TOP_KERNELS). NULL with err set on failure.
 */
#define REPORT_MEMORY_POINTS 1200
#define REPORT_TOP_KERNELS   20
cJSON *report_charts(const cs_analysis *a, const cs_report_processes *procs, cs_error *err);

/* ---- the HTML report (html.c) ---- */

/*
 * Write the HTML report of doc (the JSON report of cmd_report.c with report_charts() added as
 * "charts") to out: one self-contained page, no request to any other place (inline CSS, script
 * and SVG; a Content-Security-Policy that forbids any fetch). Every string from the trace is
 * HTML-escaped, and the data the charts are drawn from is embedded as JSON with <, >, &, U+2028
 * and U+2029 escaped. Returns 0, or -1 without memory.
 */
int report_html_write(FILE *out, const cJSON *doc);

#endif
