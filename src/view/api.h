/*
 * api.h - the data behind `cuscope view`: a trace loaded once into per-track arrays, and the JSON
 * answers of the viewer's API (docs/commands/view.md).
 *
 * view_data_load() reads the trace through the reader (cs_analysis_load: one pass per table), finds
 * the steps and runs the rules once; the API calls then answer from memory, so that a window query
 * over millions of events takes milliseconds. Every answer is a malloc'd NUL-terminated JSON text.
 */
#ifndef CUSCOPE_VIEW_API_H
#define CUSCOPE_VIEW_API_H

#include <stdint.h>

#include "cuscope/error.h"

struct view_data;

/* Load the trace at path; 0, or a negative cs_err code with a message in err. */
int view_data_load(const char *path, struct view_data **out, cs_error *err);
void view_data_free(struct view_data *v);

/* GET /api/summary: trace meta, time span, tracks, steps, findings. */
char *view_api_summary(struct view_data *v);
/* GET /api/window: the events of every track overlapping [t0, t1), thinned to px columns. */
char *view_api_window(struct view_data *v, int64_t t0, int64_t t1, int px);
/* GET /api/memory: device memory in use per counter track within [t0, t1), px columns. */
char *view_api_memory(struct view_data *v, int64_t t0, int64_t t1, int px);

#endif
