/*
 * charts.c - the figures of the HTML report that the JSON report does not hold: the GPU idle of
 * each step by cause, the device memory in use over time, and the kernels with the most GPU time.
 * Computed once from the arrays the rules ran on (cs_analysis), for the processes they analysed.
 */
#include <stdlib.h>
#include <string.h>

#include "cuscope/demangle.h"
#include "cuscope/grow.h"
#include "cuscope/timeline.h"
#include "cuscope/json.h"
#include "report.h"
#include "report_internal.h"
#include "cuscope/checked.h"
#include "cuscope/u64map.h"

/* ---- idle by cause ---- */

/* {"pid": P, "idle_by_cause": [[ns per cause] per step]} for one process. */
static cJSON *proc_idle(const struct report_view *v, const cs_report_process *p, cs_error *err)
{
	const cs_steps *s = &p->steps;
	const int64_t *idle = report_steps_idle(v, s, err);
	cJSON *o = cJSON_CreateObject(), *list;

	if (!idle)
		goto fail;
	if (!o)
		goto nomem;
	cs_json_add_int(o, "pid", p->pid, -1);
	list = cJSON_AddArrayToObject(o, "idle_by_cause");
	if (!list)
		goto nomem;
	for (int32_t i = 0; i < s->n; i++) {
		cJSON *row = cJSON_CreateArray();

		if (!row || !cJSON_AddItemToArray(list, row)) {
			cJSON_Delete(row);
			goto nomem;
		}
		for (int c = 0; c < CS_IDLE_NCAUSES; c++)
			if (!cJSON_AddItemToArray(
				    row, cs_json_int(idle[(size_t)i * CS_IDLE_NCAUSES + c])))
				goto nomem;
	}
	return o;
nomem:
	cs_error_set(err, CS_ERR_NOMEM, "out of memory");
fail:
	cJSON_Delete(o);
	return NULL;
}

/* ---- device memory ---- */

struct mem_point {
	int64_t t, level;
};

/* The changes of one counter of the timeline's (cs_tl_mem, same index). */
struct mem_track {
	struct mem_point *v;
	size_t n, cap;
};

static int analysed(const cs_report_processes *procs, uint32_t pid)
{
	return cs_report_process_find(procs, pid) != NULL;
}

/* Record the level after a change at time at: 0, or CS_ERR_NOMEM. */
static int track_point(struct mem_track *t, int64_t at, int64_t level)
{
	if (t->n > 0 && t->v[t->n - 1].t == at) {
		t->v[t->n - 1].level = level;
		return 0;
	}
	if (cs_grow((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)))
		return CS_ERR_NOMEM;
	t->v[t->n].t = at;
	t->v[t->n++].level = level;
	return 0;
}

/* Append the point [t, level] to arr: 0, or -1 without memory. */
static int add_point(cJSON *arr, int64_t t, int64_t level)
{
	cJSON *pt = cJSON_CreateArray();

	if (!pt || !cJSON_AddItemToArray(arr, pt))
		goto fail;
	if (!cJSON_AddItemToArray(pt, cs_json_int(t)) ||
	    !cJSON_AddItemToArray(pt, cs_json_int(level)))
		return -1;
	return 0;
fail:
	cJSON_Delete(pt);
	return -1;
}

/* Which of REPORT_MEMORY_POINTS - 1 equal intervals of span ns from t0 time t is in. */
static size_t interval_of(int64_t t, int64_t t0, double span)
{
	double x = ((double)t - (double)t0) / span * (REPORT_MEMORY_POINTS - 2);

	return x <= 0 ? 0 : x >= REPORT_MEMORY_POINTS - 2 ? REPORT_MEMORY_POINTS - 2 : (size_t)x;
}

/* [[t, bytes], ...]: every change; past REPORT_MEMORY_POINTS of them, the highest level of each of
 * REPORT_MEMORY_POINTS - 1 equal intervals at its first change, and the last level. */
static cJSON *track_points(const struct mem_track *t)
{
	cJSON *arr = cJSON_CreateArray();
	int64_t t0, t1;
	double span;
	size_t i = 0, first = 0;

	if (!arr || t->n == 0)
		return arr;
	t0 = t->v[0].t;
	t1 = t->v[t->n - 1].t;
	if (t->n <= REPORT_MEMORY_POINTS || t1 <= t0) {
		for (i = 0; i < t->n; i++)
			if (add_point(arr, t->v[i].t, t->v[i].level))
				goto fail;
		return arr;
	}
	/* intervals by a double: times near the int64 limits must not overflow */
	span = (double)t1 - (double)t0;
	while (i < t->n) {
		int64_t level = t->v[i].level;
		size_t b = interval_of(t->v[i].t, t0, span);

		first = i;
		for (; i < t->n && interval_of(t->v[i].t, t0, span) == b; i++)
			if (t->v[i].level > level)
				level = t->v[i].level;
		if (add_point(arr, t->v[first].t, level))
			goto fail;
	}
	if (first != t->n - 1 && add_point(arr, t->v[t->n - 1].t, t->v[t->n - 1].level))
		goto fail;
	return arr;
fail:
	cJSON_Delete(arr);
	return NULL;
}

/* "memory": [{"pid", "device", "peak_bytes", "points"}] of the analysed processes, from the
 * timeline's device memory counter (include/cuscope/timeline.h). */
static int add_memory(const cs_analysis *a, const cs_report_processes *procs, cJSON *charts)
{
	cs_tl_mem mem;
	struct mem_track *tracks = NULL;
	size_t n = 0, cap = 0;
	cJSON *arr = cJSON_AddArrayToObject(charts, "memory");
	int rc = arr ? 0 : CS_ERR_NOMEM;

	cs_tl_mem_init(&mem);
	for (int64_t i = 0; !rc && i < a->nmemory; i++) {
		const cs_a_memory *m = &a->memory[i];
		struct cs_tl_mem_row row = {m->start,	 m->pid,    m->device_id, m->op,
					    m->mem_kind, m->result, m->address,	  m->bytes};
		struct cs_tl_mem_change c;
		int r;

		if (!analysed(procs, m->pid))
			continue;
		r = cs_tl_mem_apply(&mem, &row, &c);
		if (r <= 0) {
			rc = r;
			continue;
		}
		for (; n < mem.n; n++) {
			if (cs_grow((void **)&tracks, &cap, n + 1, sizeof(*tracks))) {
				rc = CS_ERR_NOMEM;
				break;
			}
			memset(&tracks[n], 0, sizeof(tracks[n]));
		}
		if (!rc)
			rc = track_point(&tracks[c.level], m->start, mem.v[c.level].level);
	}
	for (size_t i = 0; !rc && i < n; i++) {
		cJSON *o = cJSON_CreateObject(), *pts = track_points(&tracks[i]);

		if (!o || !pts || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			cJSON_Delete(pts);
			rc = CS_ERR_NOMEM;
			break;
		}
		cs_json_add_int(o, "pid", mem.v[i].pid, -1);
		cs_json_add_int(o, "device", mem.v[i].device, -1);
		cs_json_add_int(o, "peak_bytes", mem.v[i].peak, -1);
		cJSON_AddItemToObject(o, "points", pts);
	}
	for (size_t i = 0; i < n; i++)
		free(tracks[i].v);
	free(tracks);
	cs_tl_mem_free(&mem);
	return rc;
}

/* ---- top kernels ---- */

struct kstat {
	int64_t name_id;
	int64_t count, total, max;
};

static int kstat_cmp(const void *pa, const void *pb)
{
	const struct kstat *x = pa, *y = pb;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return (x->name_id > y->name_id) - (x->name_id < y->name_id);
}

/* "kernels": {"count", "total_ns", "names", "top": [...]} of the analysed processes. */
static int add_kernels(const cs_analysis *a, const cs_report_processes *procs, cJSON *charts)
{
	struct u64map by_name;
	struct kstat *v = NULL;
	size_t n = 0, nshown = 0;
	int64_t count = 0, total = 0;
	const char **raw = NULL;
	char **shorts = NULL;
	cJSON *o = cJSON_AddObjectToObject(charts, "kernels"), *top;
	int rc = CS_ERR_NOMEM;

	u64map_init(&by_name, sizeof(struct kstat));
	if (!o)
		goto out;
	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];
		struct kstat *s;
		int64_t d;
		int created;

		if (k->start == CS_TS_UNKNOWN || k->end == CS_TS_UNKNOWN || k->end < k->start ||
		    !analysed(procs, k->pid))
			continue;
		s = u64map_put(&by_name, (uint64_t)k->name_id, &created);
		if (!s)
			goto out;
		d = k->end - k->start;
		s->name_id = k->name_id;
		s->count++;
		s->total = cs_sat_add(s->total, d);
		if (d > s->max)
			s->max = d;
		count++;
		total = cs_sat_add(total, d);
	}
	v = malloc((by_name.n + 1) * sizeof(*v));
	if (!v)
		goto out;
	for (size_t i = 0; i < by_name.cap; i++)
		if (by_name.used[i])
			v[n++] = *(struct kstat *)u64map_val(&by_name, i);
	cs_sort(v, n, sizeof(*v), kstat_cmp);
	cs_json_add_int(o, "count", count, -1);
	cs_json_add_int(o, "total_ns", total, -1);
	cs_json_add_int(o, "names", (int64_t)n, -1);
	top = cJSON_AddArrayToObject(o, "top");
	if (!top)
		goto out;
	/* rows grouped by the name as recorded, told apart where their short names agree */
	nshown = n < REPORT_TOP_KERNELS ? n : REPORT_TOP_KERNELS;
	raw = calloc(nshown ? nshown : 1, sizeof(*raw));
	shorts = calloc(nshown ? nshown : 1, sizeof(*shorts));
	for (size_t i = 0; raw && i < nshown; i++)
		raw[i] = cs_analysis_string(a, v[i].name_id);
	if (!raw || !shorts || cs_demangle_short_distinct(raw, nshown, shorts)) {
		free(shorts);
		shorts = NULL;
	}
	for (size_t i = 0; i < n && i < REPORT_TOP_KERNELS; i++) {
		const char *name = cs_analysis_string(a, v[i].name_id);
		cJSON *e = cJSON_CreateObject();

		if (!e || !cJSON_AddItemToArray(top, e)) {
			cJSON_Delete(e);
			goto out;
		}
		cs_json_add_string(e, "name", name);
		cs_json_add_string(e, "name_demangled", cs_demangle(name));
		cs_json_add_string(e, "name_short", shorts ? shorts[i] : cs_demangle_short(name));
		cs_json_add_int(e, "count", v[i].count, -1);
		cs_json_add_int(e, "total_ns", v[i].total, -1);
		cs_json_add_int(e, "mean_ns", v[i].total / v[i].count, -1);
		cs_json_add_int(e, "max_ns", v[i].max, -1);
		cJSON_AddNumberToObject(e, "share",
					total > 0 ? (double)v[i].total / (double)total : 0.0);
	}
	rc = 0;
out:
	for (size_t i = 0; shorts && i < nshown; i++)
		free(shorts[i]);
	free(shorts);
	free(raw);
	free(v);
	u64map_free(&by_name);
	return rc;
}

cJSON *report_charts(const struct report_view *v, cs_error *err)
{
	const cs_analysis *a = v->a;
	const cs_report_processes *procs = v->procs;
	cJSON *charts = cJSON_CreateObject(), *causes, *words, *arr;

	if (!charts)
		goto nomem;
	causes = cJSON_AddArrayToObject(charts, "idle_causes");
	/* the legends' words: those of the text report's header */
	words = cJSON_AddArrayToObject(charts, "idle_cause_words");
	arr = cJSON_AddArrayToObject(charts, "processes");
	if (!causes || !words || !arr)
		goto nomem;
	for (int c = 0; c < CS_IDLE_NCAUSES; c++)
		if (!cJSON_AddItemToArray(causes, cJSON_CreateString(cs_idle_cause_name(c))) ||
		    !cJSON_AddItemToArray(words, cJSON_CreateString(report_idle_cause_words(c))))
			goto nomem;
	for (int32_t i = 0; i < procs->n; i++) {
		cJSON *p = proc_idle(v, &procs->v[i], err);

		if (!p) {
			cJSON_Delete(charts);
			return NULL;
		}
		if (!cJSON_AddItemToArray(arr, p)) {
			cJSON_Delete(p);
			goto nomem;
		}
	}
	cs_json_add_int(charts, "device_memory_total", a->device_memory_total, 0);
	if (add_memory(a, procs, charts) || add_kernels(a, procs, charts))
		goto nomem;
	return charts;
nomem:
	cJSON_Delete(charts);
	cs_error_set(err, CS_ERR_NOMEM, "out of memory");
	return NULL;
}
