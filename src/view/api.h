/*
 * api.h - the data behind `cuscope view`: a trace read into per-track arrays, and the JSON answers
 * of the viewer's API (docs/commands/view.md).
 *
 * view_data_load() opens the trace and returns at once; a thread of its own then reads the
 * timeline (its own column scans, without the arrays of `cuscope report`), and after it finds the
 * steps and runs the rules. The summary answer says "loading" until the timeline is read, the
 * findings answer "pending" until the rules have run; the window and memory answers need the
 * timeline. Every answer is a malloc'd NUL-terminated JSON text.
 */
#ifndef CUSCOPE_VIEW_API_H
#define CUSCOPE_VIEW_API_H

#include <stdint.h>

#include "cuscope/error.h"

struct view_data;

/*
 * Open the trace at path and start reading it in the background; 0, or a negative cs_err code
 * with a message in err (a missing, foreign or newer trace is refused here).
 */
int view_data_load(const char *path, struct view_data **out, cs_error *err);
/* view_data_load() with the analysis's memory limit (cs_load_opts.max_bytes; view_data_load():
 * report's default): the steps and findings of a larger trace are a window's. */
int view_data_load_limited(const char *path, int64_t max_memory, struct view_data **out,
			   cs_error *err);
/* Stop reading and free v (an analysis under way frees it when it ends). */
void view_data_free(struct view_data *v);
/* 1 once the timeline is read (the window and memory answers are ready). */
int view_data_timeline_ready(struct view_data *v);

/* 1 when the trace has the writer's overview (TIMELINE_OVERVIEW): answers before the timeline. */
int view_data_has_overview(struct view_data *v);

/* GET /api/summary: trace meta, time span and tracks; {"status":"loading",...} until then. */
char *view_api_summary(struct view_data *v);
/*
 * GET /api/findings: steps and findings; {"status":"pending"} until the rules have run, with the
 * steps of the primary process once they are found.
 */
char *view_api_findings(struct view_data *v);
/* GET /api/window: the events of every track overlapping [t0, t1), thinned to px columns. */
char *view_api_window(struct view_data *v, int64_t t0, int64_t t1, int px);
/* GET /api/memory: device memory in use per counter track within [t0, t1), px columns. */
char *view_api_memory(struct view_data *v, int64_t t0, int64_t t1, int px);
/*
 * GET /api/range: per track, what [t0, t1) holds: busy time, events, kernels, memcpys, memsets,
 * launches and bytes copied or set; memory tracks their level at t0 and t1 and their peak.
 */
char *view_api_range(struct view_data *v, int64_t t0, int64_t t1);
/*
 * GET /api/event: every stored field of the event drawn as [start, end) on track (on a launch
 * track: the GPU work it launched), its launch and GPU ends and its stack; "none" when not found.
 * NULL for a track that does not exist.
 */
char *view_api_event(struct view_data *v, int64_t track, int64_t start, int64_t end);
/*
 * GET /api/search: the events whose name contains q (case-insensitive; kernels also by their
 * demangled name; not the launch calls, named as their GPU work): how many, and the next after (t,
 * track) in (start, track) order (dir > 0) or the one before (dir < 0), wrapping around. NULL for
 * an empty or over-long q.
 */
char *view_api_search(struct view_data *v, const char *q, int64_t t, int64_t track, int dir);
/*
 * Before the timeline is read, from the overview: 1 when a column of the window is at least one
 * overview bin wide (the window answer can come from the overview), and the answers themselves:
 * busy blocks per bin ("overview": true), and no memory track.
 */
int view_api_overview_covers(struct view_data *v, int64_t t0, int64_t t1, int px);
char *view_api_window_overview(struct view_data *v, int64_t t0, int64_t t1, int px);
char *view_api_memory_overview(struct view_data *v, int64_t t0, int64_t t1, int px);

#endif
