/*
 * export.h - exporting a trace for other viewers: Chrome's trace event format (JSON, for
 * chrome://tracing, ui.perfetto.dev, Holistic Trace Analysis and TensorBoard's trace view) and
 * Perfetto's protobuf trace format (ui.perfetto.dev, trace_processor).
 *
 * The exporter reads the trace once, every event kind merged in time order, and writes each event
 * as it reads it: its memory does not grow with the number of events (what it keeps is per
 * process, thread, stream and live allocation). docs/commands/export.md says what goes where.
 */
#ifndef CUSCOPE_EXPORT_H
#define CUSCOPE_EXPORT_H

#include <stdint.h>

#include "cuscope/error.h"
#include "cuscope/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

enum cs_export_format {
	CS_EXPORT_CHROME = 1, /* Chrome trace event format, JSON object form (Kineto conventions) */
	CS_EXPORT_PERFETTO,   /* Perfetto TracePacket protobuf stream */
	CS_EXPORT_NSYS_SQLITE, /* a copy of the trace with Nsight Systems' SQL names (nsys_compat.h)
				*/
};

/* The training steps of a trace placed as ProfilerStep#N slices (cs_export_steps_find). */
typedef struct cs_export_steps cs_export_steps;

typedef struct cs_export_opts {
	enum cs_export_format format;
	int64_t t0,
		t1; /* events overlapping [t0, t1), ns since trace start; CS_TS_UNKNOWN: no bound */
	int64_t pid; /* only this process; -1 = every process */
	int gzip;    /* compress the output with gzip */
	/* ProfilerStep#N slices of the training steps each process has (docs/commands/export.md);
	 * found as `cuscope report` finds them, with step_range as its --step-range (may be NULL)
	 */
	int profiler_steps;
	const char *step_range;
	/* the steps found once for several exports of one trace (--per-rank); NULL: cs_export finds
	 * them */
	const cs_export_steps *steps;
	/* the most the steps' model may need, bytes (cs_analysis_load_opts()); 0: no limit. A trace
	 * (or window) that needs more gets the steps of the middle part that fits */
	int64_t max_bytes;
	struct cs_progress *progress; /* rows read are reported to it (progress.h); may be NULL */
} cs_export_opts;

/*
 * Find the steps of every process of t for the ProfilerStep#N slices (step_range may be NULL):
 * the trace is loaded as `cuscope report` loads it, within max_bytes (0: no limit; a larger trace
 * gets the steps of its middle part, and (*out)->window says which). 0 or a cs_err code; free with
 * cs_export_steps_free().
 */
int cs_export_steps_find(cs_trace *t, const char *step_range, int64_t max_bytes,
			 cs_export_steps **out, cs_error *err);
void cs_export_steps_free(cs_export_steps *s);

/* Chrome format, the whole trace, every process, no compression, ProfilerStep slices. */
void cs_export_opts_init(cs_export_opts *o);

typedef struct cs_export_stats {
	int64_t rows;	 /* trace rows read */
	int64_t events;	 /* events written (slices, flows, counters, metadata, ...) */
	int64_t skipped; /* rows left out because a timestamp they need is unknown */
	int64_t bytes;	 /* bytes written (compressed size with gzip) */
	/* when the steps were found on a window of the trace (its model over max_bytes): the window
	 * as cs_load_window_text() says it; "" otherwise */
	char steps_window[400];
} cs_export_stats;

/*
 * Export t to path; "-" is standard output. A file is written under a temporary name beside path
 * and renamed onto it at the end, so on failure nothing is left behind (an existing file at path is
 * replaced only on success). stats may be NULL. Returns 0 or a negative cs_err code with a one-line
 * message in err.
 */
int cs_export(cs_trace *t, const cs_export_opts *o, const char *path, cs_export_stats *stats,
	      cs_error *err);

/*
 * About how many bytes cs_export(t, o, ...) writes without compression, from the row counts of the
 * trace (a time window scales them by its share of the trace's span), for a warning before a long
 * export. 0 or a cs_err code.
 */
int cs_export_estimate(cs_trace *t, const cs_export_opts *o, int64_t *bytes, cs_error *err);

/* "chrome", "perfetto"; and back: the format, or -1 for an unknown name. */
const char *cs_export_format_name(enum cs_export_format f);
int cs_export_format_parse(const char *name);

#ifdef __cplusplus
}
#endif
#endif
