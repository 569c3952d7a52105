/*
 * common.c - what the text, JSON and markdown renderers of the report share: processes and their
 * labels, the steps of a finding as runs, what a finding costs in words, and source locations
 * (report_internal.h).
 */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/checked.h"
#include "cuscope/demangle.h"
#include "cuscope/grow.h"
#include "cuscope/strbuf.h"
#include "cuscope/units.h"
#include "cuscope/utf8.h"
#include "report.h"
#include "report_internal.h"

/* ---- small helpers ---- */

const char *report_plural(int64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* The steps of a finding as runs: "3-29", "3-10, 12, 14-29"; at most max_runs (0 = all). */
void report_step_runs(char *buf, size_t size, const int32_t *steps, int32_t n, int max_runs)
{
	size_t len = 0;
	int runs = 0;

	buf[0] = '\0';
	for (int32_t i = 0; i < n;) {
		int32_t j = i;
		int w;

		while (j + 1 < n && steps[j + 1] == steps[j] + 1)
			j++;
		if (max_runs && runs == max_runs) {
			int32_t rest = 0;

			for (int32_t x = i; x < n; x++)
				rest++;
			snprintf(buf + len, size - len, ", ... (%d more)", rest);
			return;
		}
		if (j == i)
			w = snprintf(buf + len, size - len, "%s%d", runs ? ", " : "", steps[i]);
		else
			w = snprintf(buf + len, size - len, "%s%d-%d", runs ? ", " : "", steps[i],
				     steps[j]);
		if (w < 0 || (size_t)w >= size - len) {
			buf[len] = '\0';
			return;
		}
		len += (size_t)w;
		runs++;
		i = j + 1;
	}
}

/* ---- processes ---- */

/* "rank 1 (pid 1202)", "local rank 0 (pid 1202)" or "pid 1202". */
const char *report_proc_label(char *buf, size_t size, uint32_t pid, int32_t rank,
			      int32_t local_rank)
{
	if (rank != CS_ID_NONE)
		snprintf(buf, size, "rank %d (pid %u)", rank, pid);
	else if (local_rank != CS_ID_NONE)
		snprintf(buf, size, "local rank %d (pid %u)", local_rank, pid);
	else
		snprintf(buf, size, "pid %u", pid);
	return buf;
}

/* The entry of pid among a finding's processes, or NULL. */
const cs_finding_proc *report_finding_proc(const cs_report_finding *f, uint32_t pid)
{
	for (int32_t i = 0; i < f->nprocs; i++)
		if (f->procs[i].pid == pid)
			return &f->procs[i];
	return NULL;
}

/* The steps a finding's step indices and figures refer to: those of its process. */
const cs_steps *report_finding_steps(const struct report_view *v, const cs_report_finding *f)
{
	const cs_report_process *p = cs_report_process_find(v->procs, f->pid);

	return p ? &p->steps : v->s;
}

/* The label of a finding's process. */
const char *report_finding_label(char *buf, size_t size, const struct report_view *v,
				 const cs_report_finding *f)
{
	const cs_report_process *p = cs_report_process_find(v->procs, f->pid);

	return report_proc_label(buf, size, f->pid, p ? p->rank : CS_ID_NONE,
				 p ? p->local_rank : CS_ID_NONE);
}

/* "2.10 ms per step (15.0%) in 40 steps, 84.0 ms in all" for one process of a finding. */
const char *report_proc_cost(char *buf, size_t size, const cs_finding_proc *p)
{
	char a[CS_FMT_MAX], b[CS_FMT_MAX];

	if (p->lost_ns_per_step <= 0)
		snprintf(buf, size, "in %d %s", p->nsteps,
			 report_plural(p->nsteps, "step", "steps"));
	else if (p->nsteps > 0)
		snprintf(buf, size, "%s per step (%.1f%%) in %d %s, %s in all",
			 cs_fmt_duration(a, sizeof(a), p->lost_ns_per_step), 100.0 * p->step_share,
			 p->nsteps, report_plural(p->nsteps, "step", "steps"),
			 cs_fmt_duration(b, sizeof(b), cs_finding_proc_total_lost(p)));
	else
		snprintf(buf, size, "%s", cs_fmt_duration(a, sizeof(a), p->lost_ns_per_step));
	return buf;
}

/* ---- source locations ---- */

/* Is file in a library rather than in the user's code? */
static int library_file(const char *file)
{
	const char *p;

	if (!file || !*file)
		return 1;
	if (!strncmp(file, "<frozen", 7) || strstr(file, "site-packages/torch") ||
	    strstr(file, "dist-packages"))
		return 1;
	/* native frames' headers: the C++ library, CUDA's, the system's */
	if (!strncmp(file, "/usr/include/", 13) || strstr(file, "/include/c++/") ||
	    strstr(file, "/cuda/include/") || strstr(file, "/targets/x86_64-linux/include/"))
		return 1;
	for (p = strstr(file, "lib/python3."); p; p = strstr(p + 1, "lib/python3."))
		return 1;
	return 0;
}

/* A native frame of CUDA itself, of the profiler or of the C library: the driver, the runtime
 * (shared, or linked into the program: its cuda* and cudart:: symbols), CUPTI, cuscope's
 * injection library, libc. Not where the program's code is. */
static int cuda_or_system_frame(const cs_frame *f)
{
	static const char *const modules[] = {"libcuda.so", "libcudart",   "libcupti",
					      "libcuscope", "libc.so",	   "libpthread",
					      "ld-linux",   "libstdc++.so"};
	static const char *const symbols[] = {"cuda",		"__cuda",  "cudart::", "cupti",
					      "__device_stub_", "__libc_", "_start"};
	const char *m = report_base_name(f->module), *s = f->symbol;

	for (size_t i = 0; m && i < sizeof(modules) / sizeof(modules[0]); i++)
		if (!strncmp(m, modules[i], strlen(modules[i])))
			return 1;
	for (size_t i = 0; s && i < sizeof(symbols) / sizeof(symbols[0]); i++)
		if (!strncmp(s, symbols[i], strlen(symbols[i])))
			return 1;
	/* the driver API: cu + an upper-case letter (cuMemAlloc, cuLaunchKernel) */
	return s && s[0] == 'c' && s[1] == 'u' && s[2] >= 'A' && s[2] <= 'Z';
}

/* The frame that stands for a stack: the innermost in the user's code (docs/commands/report.md). */
const cs_frame *report_location_frame(const cs_frame *f, int n)
{
	/* the program's Python lines first: a library built with -g has native files too */
	for (int i = 0; i < n; i++)
		if (f[i].kind != 1 && f[i].file && !library_file(f[i].file))
			return &f[i];
	/* then a native frame with a line in the program's own code (built with -g) */
	for (int i = 0; i < n; i++)
		if (f[i].kind == 1 && f[i].file && !library_file(f[i].file) &&
		    !cuda_or_system_frame(&f[i]) &&
		    !(f[i].module && (strstr(f[i].module, "site-packages") ||
				      strstr(f[i].module, "dist-packages"))))
			return &f[i];
	for (int i = 0; i < n; i++)
		if (f[i].kind == 2)
			return &f[i];
	/* native only: the first named frame that is not CUDA's, the profiler's or libc's */
	for (int i = 0; i < n; i++)
		if (f[i].symbol && !cuda_or_system_frame(&f[i]))
			return &f[i];
	for (int i = 0; i < n; i++)
		if (f[i].symbol)
			return &f[i];
	return n > 0 ? &f[0] : NULL;
}

const char *report_base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

/* "file:line in function", "function (module)" or "" (malloc'd, cleaned). */
char *report_frame_text(const cs_frame *f, int full_module)
{
	char buf[2048];
	char *r;

	if (f->file && f->line > 0)
		snprintf(buf, sizeof(buf), "%s:%d%s%s", f->file, f->line, f->symbol ? " in " : "",
			 f->symbol ? f->symbol : "");
	else if (f->file)
		snprintf(buf, sizeof(buf), "%s%s%s", f->file, f->symbol ? " in " : "",
			 f->symbol ? f->symbol : "");
	else if (f->symbol && f->module)
		snprintf(buf, sizeof(buf), "%s (%s+0x%" PRIx64 ")", f->symbol,
			 full_module ? f->module : report_base_name(f->module), f->offset);
	else if (f->symbol)
		snprintf(buf, sizeof(buf), "%s", f->symbol);
	else if (f->module)
		snprintf(buf, sizeof(buf), "0x%" PRIx64 " (%s)", f->pc,
			 full_module ? f->module : report_base_name(f->module));
	else
		snprintf(buf, sizeof(buf), "0x%" PRIx64, f->pc);
	r = cs_text_clean(buf);
	return r;
}

/* Does the stack borrow the Python frames of the thread waiting in backward()? The importer puts a
 * note frame (kind 3) between an autograd engine thread's native frames and those Python frames. */
int report_stack_borrowed(const cs_frame *f, int n, const cs_frame *loc)
{
	for (int i = 0; i < n && &f[i] != loc; i++)
		if (f[i].kind == 3)
			return 1;
	return 0;
}

/* The text of a stack's location: frame_text of location_frame, or for work of autograd's engine
 * thread "backward() at LOCATION (autograd engine thread)". NULL when there is none (malloc'd). */
char *report_where_text(const cs_frame *f, int n)
{
	const cs_frame *loc = n > 0 ? report_location_frame(f, n) : NULL;
	char *s = loc ? report_frame_text(loc, 0) : NULL;
	char *r;
	size_t len;

	if (!s || !report_stack_borrowed(f, n, loc))
		return s;
	len = strlen(s) + 64;
	r = malloc(len);
	if (r)
		snprintf(r, len, "backward() at %s (autograd engine thread)", s);
	free(s);
	return r;
}

static int cmp_site_cost(const void *pa, const void *pb)
{
	const struct report_site *x = pa, *y = pb;

	if (x->cost_ns != y->cost_ns)
		return x->cost_ns > y->cost_ns ? -1 : 1;
	return strcmp(x->where, y->where);
}

int report_sites(cs_trace *t, const cs_report_finding *f, struct report_site **out, int64_t *total)
{
	const cJSON *sites = f->evidence ? cJSON_GetObjectItem(f->evidence, "sites") : NULL, *o;
	struct report_site *v = NULL;
	size_t cap = 0;
	int n = 0;

	*out = NULL;
	*total = 0;
	cJSON_ArrayForEach(o, sites)
	{
		const cJSON *id = cJSON_GetObjectItem(o, "stack_id");
		/* the calls made there (waits, launches, copies) and the cost charged to them */
		const cJSON *cnt = cJSON_GetObjectItem(o, "count");
		const cJSON *cost = cJSON_GetObjectItem(o, "cost_ns");
		const cs_frame *frames;
		cs_error err = {0, ""};
		char *where;
		int nf, j;

		if (!cJSON_IsNumber(id) || id->valuedouble < 0 ||
		    cs_trace_get_stack(t, (int64_t)id->valuedouble, &frames, &nf, &err) < 0 ||
		    nf == 0 || !(where = report_where_text(frames, nf)))
			continue;
		for (j = 0; j < n && strcmp(v[j].where, where); j++)
			;
		if (j == n) {
			if (cs_grow((void **)&v, &cap, (size_t)n + 1, sizeof(*v))) {
				free(where);
				break;
			}
			const cs_frame *loc = report_location_frame(frames, nf);

			memset(&v[n], 0, sizeof(v[n]));
			v[n].where = where;
			/* copied: the trace's stack cache is reused by the next lookup */
			if (loc && loc->file)
				v[n].file = strdup(loc->file);
			if (loc && loc->symbol)
				v[n].function = strdup(loc->symbol);
			v[n].line = loc ? loc->line : 0;
			n++;
		} else {
			free(where);
		}
		v[j].count += cJSON_IsNumber(cnt) ? (int64_t)cnt->valuedouble : 0;
		v[j].cost_ns += cJSON_IsNumber(cost) ? (int64_t)cost->valuedouble : 0;
		*total += cJSON_IsNumber(cost) ? (int64_t)cost->valuedouble : 0;
	}
	if (n < 2) {
		report_sites_free(v, n);
		*total = 0;
		return 0;
	}
	cs_sort(v, (size_t)n, sizeof(*v), cmp_site_cost);
	*out = v;
	return n;
}

void report_sites_free(struct report_site *v, int n)
{
	for (int i = 0; i < n; i++) {
		free(v[i].where);
		free(v[i].file);
		free(v[i].function);
	}
	free(v);
}

/* "pid N ended without its end record: records after T may be missing" */
const char *report_unended_text(char *buf, size_t size, const cs_unended *u)
{
	char t[CS_FMT_MAX];

	if (u->last == CS_TS_UNKNOWN)
		snprintf(buf, size, "pid %u ended without its end record and recorded nothing",
			 u->pid);
	else
		snprintf(buf, size,
			 "pid %u ended without its end record (killed, os._exit): records after "
			 "%s may be missing",
			 u->pid, cs_fmt_duration(t, sizeof(t), u->last));
	return buf;
}

/*
 * What was found in process p: "d2h-sync (warning), launch-starvation (info)" or "no findings"
 * (malloc'd; NULL without memory).
 */
char *report_proc_findings(const struct report_view *v, uint32_t pid)
{
	cs_strbuf sb = CS_STRBUF_INIT;
	char *r;

	for (int32_t i = 0; i < v->r->n; i++) {
		const cs_report_finding *f = v->r->v[i];
		const cs_finding_proc *p = report_finding_proc(f, pid);

		if (!p && !(f->nprocs == 0 && f->pid == pid))
			continue;
		cs_strbuf_printf(&sb, "%s%s (%s)", sb.len ? ", " : "", f->rule,
				 cs_severity_name(p ? p->severity : f->severity));
	}
	r = sb.failed ? NULL : strdup(sb.len ? cs_strbuf_str(&sb) : "no findings");
	cs_strbuf_free(&sb);
	return r;
}

/* "45 steps, median 12.2 ms, GPU busy 62.8%" or "no steps, 1.20 s, GPU busy 3.1%". */
const char *report_proc_steps_text(char *buf, size_t size, const cs_steps *s)
{
	char a[CS_FMT_MAX];
	int64_t median, p10, p90;

	if (s->method == CS_STEPS_NONE) {
		snprintf(buf, size, "no steps, %s, GPU busy %.1f%%",
			 cs_fmt_duration(a, sizeof(a), s->n ? s->v[0].end - s->v[0].start : 0),
			 100.0 * cs_steps_busy_share(s));
		return buf;
	}
	cs_steps_duration_stats(s, &median, &p10, &p90);
	snprintf(buf, size, "%d %s, median %s, GPU busy %.1f%%", s->n,
		 report_plural(s->n, "step", "steps"), cs_fmt_duration(a, sizeof(a), median),
		 100.0 * cs_steps_busy_share(s));
	return buf;
}

/* ---- the GPU idle the host caused ---- */

/* The causes in words, in enum cs_idle_cause's order. */
static const char *const idle_cause_words[CS_IDLE_NCAUSES] = {
	"launch overhead", "host work",	      "host waits",	 "input pipeline",
	"pageable copies", "after D2H syncs", "allocator calls",
};

const char *report_idle_cause_words(int cause)
{
	return cause >= 0 && cause < CS_IDLE_NCAUSES ? idle_cause_words[cause] : "?";
}

void report_idle_cache_free(struct report_idle_cache *c)
{
	for (int32_t i = 0; i < c->n; i++)
		free(c->v[i]);
	free(c->v);
	c->v = NULL;
	c->n = 0;
}

const int64_t *report_steps_idle(const struct report_view *v, const cs_steps *s, cs_error *err)
{
	struct report_idle_cache *c = v->idle;
	int32_t i = 0;
	int64_t *idle;

	while (i < v->procs->n && &v->procs->v[i].steps != s)
		i++;
	if (!c || i == v->procs->n) {
		cs_error_set(err, CS_ERR_INVALID, "steps of no process of the report");
		return NULL;
	}
	if (!c->v) {
		c->v = calloc((size_t)v->procs->n, sizeof(*c->v));
		if (!c->v) {
			cs_error_set(err, CS_ERR_NOMEM, "out of memory");
			return NULL;
		}
		c->n = v->procs->n;
	}
	if (c->v[i])
		return c->v[i];
	if (v->procs->v[i].idle_by_cause)
		return v->procs->v[i].idle_by_cause;
	idle = calloc((size_t)s->n * CS_IDLE_NCAUSES + 1, sizeof(*idle));
	if (!idle) {
		cs_error_set(err, CS_ERR_NOMEM, "out of memory");
		return NULL;
	}
	if (cs_steps_idle_by_cause(v->a, s, idle, err) < 0) {
		free(idle);
		return NULL;
	}
	return c->v[i] = idle;
}

int report_host_idle(const struct report_view *v, const cs_steps *s, struct report_host_idle *out)
{
	int64_t sum[CS_IDLE_NCAUSES] = {0}, total = 0;
	int all = cs_steps_steady(s) == 0;
	const int64_t *idle;
	cs_error err = {0};

	memset(out, 0, sizeof(*out));
	if (s->method == CS_STEPS_NONE || s->n <= 0)
		return 0;
	idle = report_steps_idle(v, s, &err);
	if (!idle)
		return err.code ? err.code : CS_ERR_NOMEM;
	/* shares of the steady steps' time, summed as cs_steps_busy_share() sums the busy time */
	for (int32_t i = 0; i < s->n; i++) {
		if (s->v[i].warmup && !all)
			continue;
		cs_sat_accum(&total, cs_step_time(s, i));
		for (int c = 0; c < CS_IDLE_NCAUSES; c++)
			cs_sat_accum(&sum[c], idle[(size_t)i * CS_IDLE_NCAUSES + (size_t)c]);
	}
	if (total <= 0)
		return 0;
	for (int c = 0; c < CS_IDLE_NCAUSES; c++) {
		out->share[c] = (double)sum[c] / (double)total;
		out->total += out->share[c];
	}
	out->queued = fmax(0, 1 - cs_steps_busy_share(s) - out->total);
	out->known = 1;
	return 0;
}

const char *report_host_idle_text(char *buf, size_t size, const struct report_host_idle *h)
{
	int order[CS_IDLE_NCAUSES], n = 0;
	size_t len;

	for (int c = 0; c < CS_IDLE_NCAUSES; c++)
		if (h->share[c] >= REPORT_HOST_IDLE_SHOWN)
			order[n++] = c;
	/* largest first (a handful of causes: insertion sort) */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && h->share[order[j]] > h->share[order[j - 1]]; j--) {
			int t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	snprintf(buf, size, "%.1f%% of the step waiting for the host", 100.0 * h->total);
	len = strlen(buf);
	for (int i = 0; i < n && len < size; i++) {
		snprintf(buf + len, size - len, "%s%s %.1f%%", i ? ", " : ": ",
			 idle_cause_words[order[i]], 100.0 * h->share[order[i]]);
		len += strlen(buf + len);
	}
	if (h->queued >= REPORT_QUEUED_IDLE_SHOWN && len < size)
		snprintf(buf + len, size - len, "; %.1f%% with its next work queued", 100.0 * h->queued);
	return buf;
}

const char *report_proc_line_text(const struct report_view *v, char *buf, size_t size,
				  const cs_steps *s)
{
	struct report_host_idle h;
	size_t len;

	report_proc_steps_text(buf, size, s);
	len = strlen(buf);
	if (!report_host_idle(v, s, &h) && h.known && h.total >= REPORT_HOST_IDLE_SHOWN &&
	    len < size)
		snprintf(buf + len, size - len, ", waiting for the host %.1f%%", 100.0 * h.total);
	return buf;
}

double report_cost_share(const cs_report_finding *f)
{
	return f->saving_ns >= 0 ? f->saving_share : f->step_share;
}

const char *report_fix_all_text(char *buf, size_t size, int64_t replayed_ns, int64_t fixed_ns,
				double sum_share)
{
	char a[CS_FMT_MAX], b[CS_FMT_MAX];
	double together = replayed_ns > 0 ? 1.0 - (double)fixed_ns / (double)replayed_ns : 0.0;
	size_t len;

	snprintf(buf, size, "every fix below together: %s a step instead of %s (%+.1f%%), replayed",
		 cs_fmt_duration(a, sizeof(a), fixed_ns),
		 cs_fmt_duration(b, sizeof(b), replayed_ns), -100.0 * together);
	len = strlen(buf);
	/* the findings' savings overlap when they add up to more than all the fixes save: what one
	 * fix saves, another's saving already counted (a wait that both a sync and a copy end) */
	if (sum_share > together + REPORT_OVERLAP_SHOWN && len < size)
		snprintf(buf + len, size - len,
			 "; the findings' own savings add up to %.1f%%: they overlap",
			 100.0 * sum_share);
	return buf;
}

/* The rules that report each cause's idle (docs/rules/), NULL-terminated. */
static const char *const cause_rules[CS_IDLE_NCAUSES][4] = {
	[CS_IDLE_LAUNCH] = {"launch-starvation", "unfused-optimizer", "unfused-elementwise", NULL},
	[CS_IDLE_HOST] = {"launch-starvation", "host-created-tensor", NULL},
	[CS_IDLE_WAIT] = {"sync-call", NULL},
	[CS_IDLE_INPUT] = {"dataloader-stall", NULL},
	[CS_IDLE_PAGEABLE] = {"pageable-memcpy", NULL},
	[CS_IDLE_D2H] = {"d2h-sync", NULL},
	[CS_IDLE_ALLOC] = {"allocator-churn", "memory-ceiling-thrash", "empty-cache-in-loop", NULL},
};

static int has_finding(const struct report_view *v, uint32_t pid, const char *rule)
{
	for (int32_t i = 0; i < v->r->n; i++)
		if (v->r->v[i]->pid == pid && !strcmp(v->r->v[i]->rule, rule))
			return 1;
	return 0;
}

/* A cause with no finding of its rules, from REPORT_IDLE_EXPLAINED of the step. */
static int unexplained(const struct report_view *v, uint32_t pid, const struct report_host_idle *h,
		       int c)
{
	if (h->share[c] < REPORT_IDLE_EXPLAINED)
		return 0;
	for (int k = 0; cause_rules[c][k]; k++)
		if (has_finding(v, pid, cause_rules[c][k]))
			return 0;
	return 1;
}

const char *report_idle_unexplained_text(const struct report_view *v, uint32_t pid, double busy,
					 const struct report_host_idle *h, char *buf, size_t size)
{
	size_t len = 0;
	int n = 0, launch, host;

	if (!h->known || has_finding(v, pid, "low-utilization"))
		return NULL;
	buf[0] = '\0';
	/* the launch pace and the host's work: launch-starvation's, one decision for both */
	launch = unexplained(v, pid, h, CS_IDLE_LAUNCH);
	host = unexplained(v, pid, h, CS_IDLE_HOST);
	if (launch || host) {
		char what[96];
		int c = launch ? CS_IDLE_LAUNCH : CS_IDLE_HOST;

		if (launch && host)
			snprintf(what, sizeof(what), "%s %.1f%% and %s %.1f%%",
				 idle_cause_words[CS_IDLE_LAUNCH], 100.0 * h->share[CS_IDLE_LAUNCH],
				 idle_cause_words[CS_IDLE_HOST], 100.0 * h->share[CS_IDLE_HOST]);
		else
			snprintf(what, sizeof(what), "%s %.1f%%", idle_cause_words[c],
				 100.0 * h->share[c]);
		snprintf(buf, size,
			 "no finding for %s (launch-starvation reports when the host's idle is at "
			 "least the GPU's busy time: here %.1f%% against %.1f%%)",
			 what, 100.0 * (h->total - h->share[CS_IDLE_ALLOC]), 100.0 * busy);
		len = strlen(buf);
		n++;
	}
	for (int c = 0; c < CS_IDLE_NCAUSES && len < size; c++) {
		if (c == CS_IDLE_LAUNCH || c == CS_IDLE_HOST || !unexplained(v, pid, h, c))
			continue;
		snprintf(buf + len, size - len, "%s%s %.1f%% (under %s's threshold)",
			 n++ ? "; " : "no finding for ", idle_cause_words[c], 100.0 * h->share[c],
			 cause_rules[c][0]);
		len += strlen(buf + len);
	}
	if (h->queued >= REPORT_IDLE_EXPLAINED && len < size) {
		snprintf(buf + len, size - len,
			 "%swork queued %.1f%% (no rule: the GPU's own gaps between kernels, waits on "
			 "other streams)",
			 n++ ? "; " : "no finding for ", 100.0 * h->queued);
		len += strlen(buf + len);
	}
	return n ? buf : NULL;
}

double report_savings_sum(const struct report_view *v, uint32_t pid)
{
	double sum = 0;

	for (int32_t i = 0; i < v->r->n; i++) {
		const cs_report_finding *f = v->r->v[i];

		if (f->pid == pid && f->saving_ns >= 0)
			sum += f->saving_share;
	}
	return sum;
}
