/*
 * json.c - the report as a JSON document (docs/report-format.md), and one finding as that document
 * has it, which the view's findings answer uses too (src/view/api.c).
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/demangle.h"
#include "cuscope/grow.h"
#include "cuscope/json.h"
#include "cuscope/strbuf.h"
#include "cuscope/utf8.h"
#include "report.h"
#include "report_internal.h"

#define REPORT_JSON_VERSION 1

/* ---- JSON ---- */

/* A deep copy of an evidence value with every string (and key) valid UTF-8. */
static cJSON *json_clean_copy(const cJSON *v)
{
	cJSON *r = NULL, *it;

	if (cJSON_IsString(v)) {
		char *s = cs_utf8_repair(v->valuestring ? v->valuestring : "");

		r = s ? cJSON_CreateString(s) : NULL;
		free(s);
	} else if (cJSON_IsRaw(v)) {
		r = cJSON_CreateRaw(v->valuestring);
	} else if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
		r = cJSON_IsArray(v) ? cJSON_CreateArray() : cJSON_CreateObject();
		cJSON_ArrayForEach(it, v)
		{
			cJSON *c = json_clean_copy(it);

			if (!r || !c) {
				cJSON_Delete(c);
				cJSON_Delete(r);
				return NULL;
			}
			if (cJSON_IsArray(v)) {
				cJSON_AddItemToArray(r, c);
			} else {
				char *k = cs_utf8_repair(it->string ? it->string : "");

				if (!k) {
					cJSON_Delete(c);
					cJSON_Delete(r);
					return NULL;
				}
				cJSON_AddItemToObject(r, k, c);
				/* a kernel's name: the raw one, and the demangled one beside it */
				if (!strcmp(k, "name") && cJSON_IsString(c) &&
				    strcmp(cs_demangle(c->valuestring), c->valuestring) &&
				    !cJSON_GetObjectItemCaseSensitive(v, "name_demangled"))
					cs_json_add_string(r, "name_demangled",
							   cs_demangle(c->valuestring));
				free(k);
			}
		}
	} else {
		r = cJSON_Duplicate(v, 0);
	}
	return r;
}

/* A rank or local rank: the number, or null when not set. */
static cJSON *json_rank(int32_t rank)
{
	return rank != CS_ID_NONE ? cs_json_int(rank) : cJSON_CreateNull();
}

static int json_add_rank(cJSON *o, const char *key, int32_t rank)
{
	cJSON *r = json_rank(rank);

	if (!r || !cJSON_AddItemToObject(o, key, r)) {
		cJSON_Delete(r);
		return -1;
	}
	return 0;
}

static const char *frame_kind(int kind)
{
	return kind == 2 ? "python" : kind == 3 ? "note" : "native";
}

static cJSON *json_frame(const cs_frame *f)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cs_json_add_string(o, "kind", frame_kind(f->kind));
	cs_json_add_string(o, "function", f->symbol);
	cs_json_add_string(o, "file", f->file);
	cs_json_add_int(o, "line", f->line, 0);
	cs_json_add_string(o, "module", f->module);
	return o;
}

/* "locations": each call site of a finding that names several (file, line, function, count,
 * cost_ns, share), costliest first; absent otherwise ("location" names the one). */
static int json_locations(cs_trace *t, const cs_report_finding *f, cJSON *o)
{
	struct report_site *sites;
	int64_t total;
	int n = report_sites(t, f, &sites, &total), rc = 0;
	cJSON *arr;

	if (n == 0)
		return 0;
	arr = cJSON_AddArrayToObject(o, "locations");
	for (int i = 0; arr && i < n; i++) {
		cJSON *l = cJSON_CreateObject();

		if (!l || !cJSON_AddItemToArray(arr, l)) {
			cJSON_Delete(l);
			arr = NULL;
			break;
		}
		cs_json_add_string(l, "file", sites[i].file);
		cs_json_add_int(l, "line", sites[i].line, 0);
		cs_json_add_string(l, "function", sites[i].function);
		cs_json_add_string(l, "where", sites[i].where);
		cs_json_add_int(l, "count", sites[i].count, INT64_MIN);
		cs_json_add_int(l, "cost_ns", sites[i].cost_ns, INT64_MIN);
		cJSON_AddNumberToObject(l, "share",
					total > 0 ? (double)sites[i].cost_ns / (double)total : 0.0);
	}
	if (!arr)
		rc = -1;
	report_sites_free(sites, n);
	return rc;
}

static int json_stack(cs_trace *t, const cs_report_finding *f, cJSON *o)
{
	cJSON *stack;
	const cs_frame *frames = NULL, *loc;
	cs_error err = {0, ""};
	int n = 0;

	if (f->stack_id != CS_ID_NONE && cs_trace_get_stack(t, f->stack_id, &frames, &n, &err) < 0)
		n = 0;
	loc = n > 0 ? report_location_frame(frames, n) : NULL;
	if (loc) {
		cJSON *l = json_frame(loc);

		if (!l || !cJSON_AddItemToObject(o, "location", l)) {
			cJSON_Delete(l);
			return -1;
		}
		cJSON_DeleteItemFromObject(l, "kind");
		if (report_stack_borrowed(frames, n, loc) &&
		    !cJSON_AddTrueToObject(l, "autograd_engine_thread"))
			return -1;
	} else if (!cJSON_AddNullToObject(o, "location")) {
		return -1;
	}
	if (json_locations(t, f, o))
		return -1;
	/* the sites read other stacks: the trace's frame buffer holds the last one read */
	if (n > 0 && cs_trace_get_stack(t, f->stack_id, &frames, &n, &err) < 0)
		n = 0;
	stack = cJSON_AddArrayToObject(o, "stack");
	if (!stack)
		return -1;
	for (int i = 0; i < n; i++) {
		cJSON *fr = json_frame(&frames[i]);

		if (!fr || !cJSON_AddItemToArray(stack, fr)) {
			cJSON_Delete(fr);
			return -1;
		}
	}
	return 0;
}

cJSON *report_json_finding(cs_trace *t, const cs_report_processes *rp, const cs_report_finding *f)
{
	cJSON *o = cJSON_CreateObject(), *steps, *ev;

	if (!o)
		return NULL;
	cs_json_add_string(o, "rule", f->rule);
	cs_json_add_string(o, "severity", cs_severity_name(f->severity));
	cs_json_add_string(o, "title", f->title);
	steps = cJSON_AddArrayToObject(o, "steps");
	for (int32_t i = 0; steps && i < f->nsteps; i++)
		cJSON_AddItemToArray(steps, cs_json_int(f->steps[i]));
	cs_json_add_int(o, "lost_ns_per_step", f->lost_ns_per_step, INT64_MIN);
	cJSON_AddNumberToObject(o, "step_share", f->step_share);
	cs_json_add_int(o, "total_lost_ns", cs_finding_total_lost(f), INT64_MIN);
	if (f->saving_ns >= 0) {
		/* the cost above is this replayed saving (docs/replay.md) */
		cs_json_add_int(o, "saving_ns", f->saving_ns, INT64_MIN);
		cJSON_AddNumberToObject(o, "saving_share", f->saving_share);
	}
	cs_json_add_int(o, "first_ns", f->first, CS_TS_UNKNOWN);
	cs_json_add_int(o, "last_ns", f->last, CS_TS_UNKNOWN);
	ev = f->evidence ? json_clean_copy(f->evidence) : cJSON_CreateObject();
	if (!ev || !cJSON_AddItemToObject(o, "evidence", ev)) {
		cJSON_Delete(ev);
		goto fail;
	}
	cs_json_add_string(o, "fix", f->fix);
	if (!steps || json_stack(t, f, o))
		goto fail;
	{
		const cs_report_process *p = cs_report_process_find(rp, f->pid);
		cJSON *procs;

		cs_json_add_int(o, "pid", f->pid, 0);
		if (json_add_rank(o, "rank", p ? p->rank : CS_ID_NONE) ||
		    json_add_rank(o, "local_rank", p ? p->local_rank : CS_ID_NONE))
			goto fail;
		procs = cJSON_AddArrayToObject(o, "processes");
		if (!procs)
			goto fail;
		for (int32_t i = 0; i < f->nprocs; i++) {
			const cs_finding_proc *x = &f->procs[i];
			cJSON *e = cJSON_CreateObject(), *st;

			if (!e || !cJSON_AddItemToArray(procs, e)) {
				cJSON_Delete(e);
				goto fail;
			}
			cs_json_add_int(e, "pid", x->pid, -1);
			if (json_add_rank(e, "rank", x->rank) ||
			    json_add_rank(e, "local_rank", x->local_rank))
				goto fail;
			cs_json_add_string(e, "severity", cs_severity_name(x->severity));
			st = cJSON_AddArrayToObject(e, "steps");
			for (int32_t k = 0; st && k < x->nsteps; k++)
				cJSON_AddItemToArray(st, cs_json_int(x->steps[k]));
			if (!st)
				goto fail;
			cs_json_add_int(e, "lost_ns_per_step", x->lost_ns_per_step, INT64_MIN);
			cJSON_AddNumberToObject(e, "step_share", x->step_share);
			cs_json_add_int(e, "total_lost_ns",
					cs_finding_proc_total_lost(x), INT64_MIN);
			cs_json_add_int(e, "first_ns", x->first, CS_TS_UNKNOWN);
			cs_json_add_int(e, "last_ns", x->last, CS_TS_UNKNOWN);
		}
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

/* host_idle_share and host_idle_share_by_cause of a steps object (null without steps); -1 without
 * memory. */
static int json_host_idle(const struct report_view *v, const cs_steps *s, cJSON *o)
{
	struct report_host_idle h;
	cJSON *by;

	if (report_host_idle(v, s, &h))
		return -1;
	if (!h.known)
		return cJSON_AddNullToObject(o, "host_idle_share") &&
				       cJSON_AddNullToObject(o, "host_idle_share_by_cause") &&
				       cJSON_AddNullToObject(o, "idle_without_finding")
			       ? 0
			       : -1;
	cJSON_AddNumberToObject(o, "host_idle_share", h.total);
	{
		char line[1024];
		const char *t = report_idle_unexplained_text(v, s->pid, cs_steps_busy_share(s), &h,
							     line, sizeof(line));

		if (!(t ? cs_json_add_string(o, "idle_without_finding", t) != NULL
			: cJSON_AddNullToObject(o, "idle_without_finding") != NULL))
			return -1;
	}
	by = cJSON_AddObjectToObject(o, "host_idle_share_by_cause");
	if (!by)
		return -1;
	for (int c = 0; c < CS_IDLE_NCAUSES; c++)
		if (!cJSON_AddNumberToObject(by, cs_idle_cause_name(c), h.share[c]))
			return -1;
	return 0;
}

/* A steps object: the top level's (the primary process's) or a process's. */
static cJSON *json_steps(const struct report_view *v, const cs_steps *s)
{
	cJSON *o = cJSON_CreateObject(), *list;
	int64_t median, p10, p90;

	if (!o)
		return NULL;
	cs_steps_duration_stats(s, &median, &p10, &p90);
	cs_json_add_string(o, "method", cs_step_method_name(s->method));
	cs_json_add_string(o, "detail", s->detail);
	cs_json_add_string(o, "step_range", v->step_range);
	cs_json_add_int(o, "pid", s->pid, 0);
	cs_json_add_int(o, "count", s->n, -1);
	cs_json_add_int(o, "warmup", s->warmup, -1);
	cs_json_add_int(o, "period_kernels", s->period, 0);
	cs_json_add_int(o, "period_operations", s->period_ops, 0);
	cs_json_add_string(o, "step_time", cs_step_timing_name(s->timing));
	cs_json_add_int(o, "median_ns", median, -1);
	cs_json_add_int(o, "p10_ns", p10, -1);
	cs_json_add_int(o, "p90_ns", p90, -1);
	cJSON_AddNumberToObject(o, "gpu_busy_share", cs_steps_busy_share(s));
	{
		const cs_report_process *p = cs_report_process_find(v->procs, s->pid);

		if (p && p->replay_step_ns > 0) {
			cJSON *fa = cJSON_AddObjectToObject(o, "fix_all");

			if (!fa)
				goto fail;
			cs_json_add_int(fa, "replayed_step_ns", p->replay_step_ns, INT64_MIN);
			cs_json_add_int(fa, "step_ns", p->fix_all_step_ns, INT64_MIN);
			cJSON_AddNumberToObject(fa, "saving_share",
						1.0 - (double)p->fix_all_step_ns /
							      (double)p->replay_step_ns);
			cJSON_AddNumberToObject(fa, "findings_saving_share",
						report_savings_sum(v, p->pid));
		}
	}
	if (json_host_idle(v, s, o))
		goto fail;
	list = cJSON_AddArrayToObject(o, "list");
	if (!list)
		goto fail;
	for (int32_t i = 0; i < s->n; i++) {
		const cs_step *st = &s->v[i];
		cJSON *e = cJSON_CreateObject();
		int64_t d = cs_step_time(s, i);

		if (!e || !cJSON_AddItemToArray(list, e)) {
			cJSON_Delete(e);
			goto fail;
		}
		cs_json_add_int(e, "index", st->index, -1);
		cs_json_add_int(e, "start_ns", st->start, CS_TS_UNKNOWN);
		cs_json_add_int(e, "end_ns", st->end, CS_TS_UNKNOWN);
		cs_json_add_int(e, "duration_ns", d, INT64_MIN);
		cs_json_add_int(e, "host_duration_ns", st->end - st->start, INT64_MIN);
		cs_json_add_int(e, "gpu_start_ns", st->gpu_start, CS_TS_UNKNOWN);
		cs_json_add_int(e, "gpu_end_ns", st->gpu_end, CS_TS_UNKNOWN);
		cs_json_add_int(e, "gpu_busy_ns", st->gpu_busy, INT64_MIN);
		cJSON_AddNumberToObject(e, "gpu_busy_share",
					d > 0 ? (double)st->gpu_busy / (double)d : 0.0);
		cs_json_add_int(e, "kernels", st->kernels, -1);
		cJSON_AddBoolToObject(e, "warmup", st->warmup != 0);
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

/* "processes": every process analysed, with its steps and the rules that found something in it. */
static int json_processes(const struct report_view *v, cJSON *doc)
{
	cJSON *arr = cJSON_AddArrayToObject(doc, "processes");

	if (!arr)
		return -1;
	for (int32_t i = 0; i < v->procs->n; i++) {
		const cs_report_process *p = &v->procs->v[i];
		cJSON *o = cJSON_CreateObject(), *steps, *found;

		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			return -1;
		}
		cs_json_add_int(o, "pid", p->pid, -1);
		if (json_add_rank(o, "rank", p->rank) ||
		    json_add_rank(o, "local_rank", p->local_rank))
			return -1;
		cJSON_AddBoolToObject(o, "primary", i == v->procs->primary);
		steps = json_steps(v, &p->steps);
		if (!steps || !cJSON_AddItemToObject(o, "steps", steps)) {
			cJSON_Delete(steps);
			return -1;
		}
		found = cJSON_AddArrayToObject(o, "findings");
		if (!found)
			return -1;
		for (int32_t j = 0; j < v->r->n; j++) {
			const cs_report_finding *f = v->r->v[j];

			if (report_finding_proc(f, p->pid) || (f->nprocs == 0 && f->pid == p->pid))
				cJSON_AddItemToArray(found, cs_json_int(j));
		}
	}
	return 0;
}

/*
 * The "window" object of "trace" (docs/report-format.md), only when a window of the trace was
 * analysed: its bounds, the whole trace's, the events of each, why (asked with --window, chosen by
 * the memory limit), the estimates and the limit. 0, or -1 without memory.
 */
static int json_window(cJSON *trace, const cs_load_window *w)
{
	cJSON *o = cJSON_AddObjectToObject(trace, "window");

	if (!o)
		return -1;
	cs_json_add_int(o, "start_ns", w->start, INT64_MIN);
	cs_json_add_int(o, "end_ns", w->end, INT64_MIN);
	cs_json_add_int(o, "trace_start_ns", w->trace_start, INT64_MIN);
	cs_json_add_int(o, "trace_end_ns", w->trace_end, INT64_MIN);
	cs_json_add_int(o, "events", w->events, -1);
	cs_json_add_int(o, "trace_events", w->trace_events, -1);
	cJSON_AddBoolToObject(o, "asked", w->asked);
	cJSON_AddBoolToObject(o, "memory_limited", w->by_limit);
	cs_json_add_int(o, "estimated_bytes", w->bytes, -1);
	cs_json_add_int(o, "asked_estimated_bytes", w->asked_bytes, -1);
	cs_json_add_int(o, "trace_estimated_bytes", w->trace_bytes, -1);
	cs_json_add_int(o, "max_memory_bytes", w->max_bytes, -1);
	return 0;
}

cJSON *report_json(const struct report_view *v)
{
	cJSON *doc = cJSON_CreateObject(), *trace, *steps, *rules, *findings, *summary;
	int count[4] = {0};
	int64_t total = 0;

	if (!doc)
		return NULL;
	cs_json_add_int(doc, "version", REPORT_JSON_VERSION, -1);
	trace = cJSON_AddObjectToObject(doc, "trace");
	if (!trace)
		goto fail;
	cs_json_add_string(trace, "file", v->path);
	cs_json_add_string(trace, "command", cs_trace_meta(v->t, "command"));
	cs_json_add_int(trace, "start_ns", v->a->trace_start, INT64_MIN);
	cs_json_add_int(trace, "end_ns", v->a->trace_end, INT64_MIN);
	cs_json_add_int(trace, "kernels", v->a->nkernels, -1);
	if (v->a->window.on && json_window(trace, &v->a->window))
		goto fail;
	{
		cJSON *arr = cJSON_AddArrayToObject(trace, "processes_without_end");

		if (!arr)
			goto fail;
		for (int i = 0; i < v->nunended; i++) {
			cJSON *o = cJSON_CreateObject();

			if (!o || !cJSON_AddItemToArray(arr, o)) {
				cJSON_Delete(o);
				goto fail;
			}
			cs_json_add_int(o, "pid", v->unended[i].pid, -1);
			cs_json_add_int(o, "last_event_ns", v->unended[i].last, CS_TS_UNKNOWN);
		}
	}
	steps = json_steps(v, v->s);
	if (!steps || !cJSON_AddItemToObject(doc, "steps", steps)) {
		cJSON_Delete(steps);
		goto fail;
	}
	if (json_processes(v, doc))
		goto fail;
	{
		cJSON *rk = report_ranks_json(v->ranks);

		if (!rk || !cJSON_AddItemToObject(doc, "ranks", rk)) {
			cJSON_Delete(rk);
			goto fail;
		}
	}
	rules = cJSON_AddArrayToObject(doc, "rules");
	if (!rules)
		goto fail;
	for (const cs_analyzer **r = v->rules; *r; r++)
		cJSON_AddItemToArray(rules, cJSON_CreateString((*r)->id));
	findings = cJSON_AddArrayToObject(doc, "findings");
	if (!findings)
		goto fail;
	for (int32_t i = 0; i < v->r->n; i++) {
		cJSON *f = report_json_finding(v->t, v->procs, v->r->v[i]);

		if (!f || !cJSON_AddItemToArray(findings, f)) {
			cJSON_Delete(f);
			goto fail;
		}
		count[v->r->v[i]->severity]++;
		total += cs_finding_total_lost(v->r->v[i]);
	}
	summary = cJSON_AddObjectToObject(doc, "summary");
	if (!summary)
		goto fail;
	cs_json_add_int(summary, "findings", v->r->n, -1);
	cs_json_add_int(summary, "error", count[CS_SEV_ERROR], -1);
	cs_json_add_int(summary, "warning", count[CS_SEV_WARNING], -1);
	cs_json_add_int(summary, "info", count[CS_SEV_INFO], -1);
	cs_json_add_int(summary, "total_lost_ns", total, INT64_MIN);
	return doc;
fail:
	cJSON_Delete(doc);
	return NULL;
}
