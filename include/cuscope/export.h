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
};

typedef struct cs_export_opts {
	enum cs_export_format format;
	int64_t t0,
		t1; /* events overlapping [t0, t1), ns since trace start; CS_TS_UNKNOWN: no bound */
	int64_t pid; /* only this process; -1 = every process */
	int gzip;    /* compress the output with gzip */
} cs_export_opts;

/* Chrome format, the whole trace, every process, no compression. */
void cs_export_opts_init(cs_export_opts *o);

typedef struct cs_export_stats {
	int64_t rows;	 /* trace rows read */
	int64_t events;	 /* events written (slices, flows, counters, metadata, ...) */
	int64_t skipped; /* rows left out because a timestamp they need is unknown */
	int64_t bytes;	 /* bytes written (compressed size with gzip) */
} cs_export_stats;

/*
 * Export t to path; "-" is standard output. A file is written under a temporary name beside path
 * and renamed onto it at the end, so on failure nothing is left behind (an existing file at path is
 * replaced only on success). stats may be NULL. Returns 0 or a negative cs_err code with a one-line
 * message in err.
 */
int cs_export(cs_trace *t, const cs_export_opts *o, const char *path, cs_export_stats *stats,
	      cs_error *err);

/* "chrome", "perfetto"; and back: the format, or -1 for an unknown name. */
const char *cs_export_format_name(enum cs_export_format f);
int cs_export_format_parse(const char *name);

#ifdef __cplusplus
}
#endif
#endif
