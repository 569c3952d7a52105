/*
 * text.c - the report as text, for a terminal or a log: the header (trace, steps, step time,
 * processes), the table of steps with -v, the ranks side by side, then each finding with its steps,
 * cost, evidence, location and fix, most costly first, and the findings by source location.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/demangle.h"
#include "cuscope/grow.h"
#include "cuscope/strbuf.h"
#include "cuscope/table.h"
#include "cuscope/units.h"
#include "cuscope/utf8.h"
#include "report.h"
#include "report_internal.h"

#define PROCS_SHOWN 16 /* processes listed in the text header without --verbose */

/* ---- text ---- */

#define C_RESET	 "\033[0m"
#define C_BOLD	 "\033[1m"
#define C_RED	 "\033[1;31m"
#define C_YELLOW "\033[1;33m"
#define C_CYAN	 "\033[36m"
#define C_DIM	 "\033[2m"

static const char *sev_color(int sev)
{
	return sev == CS_SEV_ERROR ? C_RED : sev == CS_SEV_WARNING ? C_YELLOW : C_CYAN;
}

/*
 * Print "label:   text" after lead spaces, the label padded to label_width, wrapping text at
 * spaces to fit width (0 = no limit) with continuation lines indented under the text.
 */
/*
 * Print text (cleaned) from column col on, wrapping at spaces to fit width (0 = no limit), each
 * continuation line indented to col; ends the line.
 */
static void print_wrapped(FILE *out, int col, const char *text, int width)
{
	int avail = width > 0 ? width - col : 0;
	char *clean = cs_text_clean(text);
	const char *p = clean;

	if (!clean)
		return;
	if (avail < 20 || (int)cs_text_width(p) <= avail) {
		fprintf(out, "%s\n", p);
		free(clean);
		return;
	}
	for (int first = 1; *p; first = 0) {
		const char *end = p, *brk = NULL;
		int w = 0;

		while (*end && w < avail) {
			if (*end == ' ')
				brk = end;
			end++;
			while ((*end & 0xc0) == 0x80)
				end++;
			w++;
		}
		if (*end && *end != ' ' && brk && brk > p)
			end = brk;
		fprintf(out, "%*s%.*s\n", first ? 0 : col, "", (int)(end - p), p);
		p = end;
		while (*p == ' ')
			p++;
	}
	free(clean);
}

/* Print "label:   text" after lead spaces, the label padded to label_width, text wrapped. */
static void print_field_at(FILE *out, int lead, int label_width, const char *label,
			   const char *text, int width)
{
	fprintf(out, "%*s%-*s", lead, "", label_width, label);
	print_wrapped(out, lead + label_width, text, width);
}

/* A field of a finding, under its title line. */
static void print_field(FILE *out, const char *label, const char *text, int width)
{
	print_field_at(out, 4, LABEL_WIDTH, label, text, width);
}

/* A line of the header. */
static void print_header_field(FILE *out, const char *label, const char *text, int width)
{
	print_field_at(out, 0, HEADER_LABEL_WIDTH, label, text, width);
}

static void text_evidence(FILE *out, const cJSON *ev, int verbose, int width)
{
	const cJSON *it;
	int n = 0, shown = 0;

	cJSON_ArrayForEach(it, ev) n += report_evidence_shown(it->string, verbose);
	cJSON_ArrayForEach(it, ev)
	{
		char *key, *val, line[4096];

		if (!report_evidence_shown(it->string, verbose))
			continue;
		if (!verbose && shown == EVIDENCE_KEYS_SHOWN) {
			snprintf(line, sizeof(line), "... %d more (-v shows all)", n - shown);
			print_field(out, "", line, width);
			break;
		}
		key = report_evidence_label(it->string ? it->string : "?");
		val = report_evidence_value(it->string, it, verbose);
		if (key && val) {
			if (!verbose && width > 0 && (int)cs_text_width(val) > width - 16) {
				char *t = cs_truncate_middle(
					val, (size_t)(width > 40 ? width - 16 : 24));

				if (t) {
					free(val);
					val = t;
				}
			}
			snprintf(line, sizeof(line), "%s: %s", key, val);
			print_field(out, shown ? "" : "evidence:", line, verbose ? width : 0);
		}
		free(key);
		free(val);
		shown++;
	}
}

/* A finding with several call sites: a "where:" line each (the costliest REPORT_SITES_SHOWN, all
 * with -v), with its calls and its share of their cost. 0 when it has fewer than two. */
static int text_sites(const struct report_view *v, const cs_report_finding *f)
{
	FILE *out = v->out;
	struct report_site *sites;
	int64_t total;
	int n = report_sites(v->t, f, &sites, &total), shown = v->verbose ? n : REPORT_SITES_SHOWN;

	for (int i = 0; i < n && i < shown; i++) {
		char line[4096], c[CS_FMT_MAX];

		snprintf(line, sizeof(line), "%s (%lld call%s, %s, %.0f%%)", sites[i].where,
			 (long long)sites[i].count, sites[i].count == 1 ? "" : "s",
			 cs_fmt_duration(c, sizeof(c), sites[i].cost_ns),
			 total > 0 ? 100.0 * (double)sites[i].cost_ns / (double)total : 0.0);
		print_field(out, i ? "" : "where:", line, v->width);
	}
	if (n > shown) {
		char line[64];

		snprintf(line, sizeof(line), "... %d more site%s (-v)", n - shown,
			 n - shown == 1 ? "" : "s");
		print_field(out, "", line, v->width);
	}
	report_sites_free(sites, n);
	return n;
}

static void text_stack(const struct report_view *v, const cs_report_finding *f)
{
	FILE *out = v->out;
	const cs_frame *frames;
	cs_error err = {0, ""};
	int n;
	char *s;

	if (f->stack_id == CS_ID_NONE)
		return;
	/* the sites first: they read other stacks, and the trace's frame buffer holds the last one
	 * read, so the finding's own stack is read after them (as markdown and HTML do) */
	if (!text_sites(v, f) && cs_trace_get_stack(v->t, f->stack_id, &frames, &n, &err) == 0 &&
	    n > 0 && (s = report_where_text(frames, n)) != NULL) {
		print_field(out, "where:", s, v->width);
		free(s);
	}
	if (!v->verbose || cs_trace_get_stack(v->t, f->stack_id, &frames, &n, &err) < 0 || n == 0)
		return;
	for (int i = 0; i < n; i++) {
		char line[4096];

		s = report_frame_text(&frames[i], 1);
		if (!s)
			continue;
		snprintf(line, sizeof(line), "#%-2d %s", i, s);
		print_field(out, i ? "" : "stack:", line, 0);
		free(s);
	}
}

static void text_finding(const struct report_view *v, const cs_report_finding *f)
{
	FILE *out = v->out;
	char a[CS_FMT_MAX], b[CS_FMT_MAX], line[1024], runs[512];
	int32_t steady = cs_steps_steady(report_finding_steps(v, f));
	int head = (int)(strlen(cs_severity_name(f->severity)) + strlen(f->rule) + 5);

	if (v->color)
		fprintf(out, "%s[%s]%s %s%s%s  ", sev_color(f->severity), cs_severity_name(f->severity),
		       C_RESET, C_BOLD, f->rule, C_RESET);
	else
		fprintf(out, "[%s] %s  ", cs_severity_name(f->severity), f->rule);
	/* the title after "[severity] rule  ", wrapped under itself */
	print_wrapped(out, head, f->title ? f->title : "", v->width);

	if (v->multi)
		print_field(out, "process:", report_finding_label(line, sizeof(line), v, f), v->width);
	if (f->nsteps > 0) {
		report_step_runs(runs, sizeof(runs), f->steps, f->nsteps,
				 v->verbose ? 0 : STEP_RUNS_SHOWN);
		snprintf(line, sizeof(line), "%d of %d steady-state %s: %s", f->nsteps, steady,
			 report_plural(steady, "step", "steps"), runs);
		print_field(out, "steps:", line, v->width);
	}
	if (f->lost_ns_per_step > 0) {
		if (f->nsteps > 0)
			snprintf(line, sizeof(line), "%s per step (%.1f%% of step time), %s in all",
				 cs_fmt_duration(a, sizeof(a), f->lost_ns_per_step),
				 100.0 * report_cost_share(f),
				 cs_fmt_duration(b, sizeof(b), cs_finding_total_lost(f)));
		else
			snprintf(line, sizeof(line), "%s",
				 cs_fmt_duration(a, sizeof(a), f->lost_ns_per_step));
		/* a replayed saving (docs/replay.md), or the idle the rule charged */
		print_field(out, f->saving_ns >= 0 ? "saves:" : "GPU lost:", line, v->width);
	}
	for (int32_t i = 0, shown = 0; v->multi && i < f->nprocs; i++) {
		const cs_finding_proc *p = &f->procs[i];
		char lab[64], cost[256];

		if (p->pid == f->pid)
			continue;
		if (!v->verbose && shown == ALSO_SHOWN) {
			snprintf(line, sizeof(line), "... %d more (-v shows all)",
				 f->nprocs - 1 - shown);
			print_field(out, "", line, v->width);
			break;
		}
		snprintf(line, sizeof(line), "%s: %s",
			 report_proc_label(lab, sizeof(lab), p->pid, p->rank, p->local_rank),
			 report_proc_cost(cost, sizeof(cost), p));
		print_field(out, shown++ ? "" : "also in:", line, v->width);
	}
	if (f->evidence && cJSON_GetArraySize(f->evidence) > 0)
		text_evidence(out, f->evidence, v->verbose, v->width);
	if (f->fix && *f->fix)
		print_field(out, "fix:", f->fix, v->width);
	text_stack(v, f);
	fputc('\n', out);
}

/* The table of steps s, under title ("Steps:"). */
static void text_steps_table(const struct report_view *v, const cs_steps *s, const char *title)
{
	FILE *out = v->out;
	static const struct cs_column cols[] = {
		{"Step", CS_ALIGN_RIGHT, 0},	 {"Start", CS_ALIGN_RIGHT, 0},
		{"Duration", CS_ALIGN_RIGHT, 0}, {"GPU busy", CS_ALIGN_RIGHT, 0},
		{"Kernels", CS_ALIGN_RIGHT, 0},	 {"Phase", CS_ALIGN_LEFT, 0},
	};
	struct cs_table table;

	print_wrapped(out, 0, title, v->width);
	fputc('\n', out);
	cs_table_init(&table, cols, 6);
	for (int32_t i = 0; i < s->n; i++) {
		const cs_step *st = &s->v[i];
		char idx[CS_FMT_MAX], start[CS_FMT_MAX], dur[CS_FMT_MAX], busy[CS_FMT_MAX],
			kern[CS_FMT_MAX];
		int64_t d = cs_step_time(s, i);
		const char *row[] = {
			idx,
			cs_fmt_duration(start, sizeof(start), st->start),
			cs_fmt_duration(dur, sizeof(dur), d),
			busy,
			cs_fmt_count(kern, sizeof(kern), st->kernels),
			st->warmup ? "warm-up" : "steady",
		};

		snprintf(idx, sizeof(idx), "%d", st->index);
		snprintf(busy, sizeof(busy), "%.1f%%",
			 d > 0 ? 100.0 * (double)st->gpu_busy / (double)d : 0.0);
		cs_table_add_row(&table, row);
	}
	cs_table_print(&table, out, 1, v->width);
	cs_table_free(&table);
	fputc('\n', out);
}

/* The header's list of the processes analysed, one line each. */
static void text_processes(const struct report_view *v)
{
	FILE *out = v->out;
	char line[1024];
	int32_t n = v->procs->n, shown = v->verbose || n <= PROCS_SHOWN ? n : PROCS_SHOWN - 1;

	snprintf(line, sizeof(line), "%d analysed, each with its own steps%s", n,
		 v->verbose ? "" : " (-v: how they were found)");
	print_header_field(out, "processes:", line, v->width);
	for (int32_t i = 0; i < shown; i++) {
		const cs_report_process *p = &v->procs->v[i];
		char lab[64], st[320];
		char *found = report_proc_findings(v, p->pid);

		snprintf(line, sizeof(line), "%s: %s; %s",
			 report_proc_label(lab, sizeof(lab), p->pid, p->rank, p->local_rank),
			 report_proc_line_text(v, st, sizeof(st), &p->steps), found ? found : "");
		print_header_field(out, "", line, v->width);
		free(found);
	}
	if (shown < n) {
		snprintf(line, sizeof(line), "... %d more (-v shows all)", n - shown);
		print_header_field(out, "", line, v->width);
	}
}

/* "if fixed:" under the step time: the run replayed with every finding's fix (docs/replay.md) */
static void text_fix_all(const struct report_view *v)
{
	FILE *out = v->out;
	const cs_report_process *p = cs_report_process_find(v->procs, v->s->pid);
	char line[256];

	if (!p || p->replay_step_ns <= 0)
		return;
	print_header_field(out, 
		"if fixed:",
		report_fix_all_text(line, sizeof(line), p->replay_step_ns, p->fix_all_step_ns,
				    report_savings_sum(v, p->pid)),
		v->width);
}

/* "GPU idle:" under the step time, when the host left the GPU idle for a share worth naming
 * (whether or not a rule reports it: launch-starvation reports when it is at least the GPU busy
 * time). */
static void text_host_idle(const struct report_view *v)
{
	FILE *out = v->out;
	struct report_host_idle h;
	char line[512];

	if (report_host_idle(v, v->s, &h) || !h.known || h.total < REPORT_HOST_IDLE_SHOWN)
		return;
	print_header_field(out, "GPU idle:", report_host_idle_text(line, sizeof(line), &h), v->width);
	if (report_idle_unexplained_text(v, v->s->pid, v->busy_share, &h, line, sizeof(line)))
		print_header_field(out, "", line, v->width);
}

static void text_header(const struct report_view *v)
{
	FILE *out = v->out;
	const char *command = cs_trace_meta(v->t, "command");
	const cs_steps *s = v->s;
	char a[CS_FMT_MAX], b[CS_FMT_MAX], c[CS_FMT_MAX], line[1024];
	char *clean;

	clean = cs_text_clean(v->path);
	print_header_field(out, "trace:", clean ? clean : "", v->width);
	free(clean);
	if (command)
		print_header_field(out, "command:", command, v->width);
	if (v->a->window.on) {
		print_header_field(
			out, "window:", cs_load_window_text(line, sizeof(line), &v->a->window),
			v->width);
		print_header_field(out, "", REPORT_WINDOW_NOTE, v->width);
	}
	if (v->multi) {
		text_processes(v);
	} else if (s->method == CS_STEPS_NONE) {
		snprintf(line, sizeof(line), "none found (%s)", s->detail);
		print_header_field(out, "steps:", line, v->width);
		snprintf(line, sizeof(line), "%s, GPU busy %.1f%%",
			 cs_fmt_duration(a, sizeof(a), s->n ? s->v[0].end - s->v[0].start : 0),
			 100.0 * v->busy_share);
		print_header_field(out, "duration:", line, v->width);
	} else {
		snprintf(line, sizeof(line), "%d (%s), %d warm-up", s->n, s->detail, s->warmup);
		print_header_field(out, "steps:", line, v->width);
		snprintf(line, sizeof(line), "median %s (p10 %s .. p90 %s), GPU busy %.1f%%%s",
			 cs_fmt_duration(a, sizeof(a), v->median),
			 cs_fmt_duration(b, sizeof(b), v->p10),
			 cs_fmt_duration(c, sizeof(c), v->p90), 100.0 * v->busy_share,
			 s->timing == CS_STEP_TIME_GPU ? "; GPU-bound: step time from the GPU"
						       : "");
		print_header_field(out, "step time:", line, v->width);
		text_host_idle(v);
		text_fix_all(v);
	}
	for (int i = 0; i < v->nunended && i < UNENDED_SHOWN; i++)
		print_header_field(out, 
			"warning:", report_unended_text(line, sizeof(line), &v->unended[i]),
			v->width);
	if (v->nunended > UNENDED_SHOWN) {
		snprintf(line, sizeof(line),
			 "%d more processes without their end record (cuscope info)",
			 v->nunended - UNENDED_SHOWN);
		print_header_field(out, "warning:", line, v->width);
	}
	fputc('\n', out);
}

struct located {
	char *where; /* the location frame's text */
	int32_t finding;
};

static int located_cmp(const void *a, const void *b)
{
	const struct located *x = a, *y = b;
	int c = strcmp(x->where, y->where);

	return c ? c : (x->finding > y->finding) - (x->finding < y->finding);
}

/* The findings that have a source location, grouped by it (one line of rules per location). */
static void text_by_location(const struct report_view *v)
{
	FILE *out = v->out;
	struct located *l = calloc((size_t)(v->r->n > 0 ? v->r->n : 0) + 1, sizeof(*l));
	int32_t n = 0;

	if (!l)
		return;
	for (int32_t i = 0; i < v->r->n; i++) {
		const cs_report_finding *f = v->r->v[i];
		const cs_frame *frames;
		cs_error err = {0, ""};
		int nf;

		if (f->stack_id == CS_ID_NONE ||
		    cs_trace_get_stack(v->t, f->stack_id, &frames, &nf, &err) < 0 || nf == 0)
			continue;
		if ((l[n].where = report_where_text(frames, nf)) != NULL)
			l[n++].finding = i;
	}
	if (n > 0) {
		cs_sort(l, (size_t)n, sizeof(*l), located_cmp);
		fprintf(out, "By source location:\n");
		for (int32_t i = 0; i < n; i++) {
			const cs_report_finding *f = v->r->v[l[i].finding];
			int first = i == 0 || strcmp(l[i].where, l[i - 1].where) != 0;
			int last = i == n - 1 || strcmp(l[i].where, l[i + 1].where) != 0;

			if (first)
				fprintf(out, "  %s\n      ", l[i].where);
			fprintf(out, "%s (%s)%s", f->rule, cs_severity_name(f->severity),
			       last ? "\n" : ", ");
		}
		fputc('\n', out);
	}
	for (int32_t i = 0; i < n; i++)
		free(l[i].where);
	free(l);
}

int report_text(const struct report_view *v)
{
	FILE *out = v->out;
	int count[4] = {0};

	text_header(v);
	if (v->verbose && !v->multi && v->s->n > 0)
		text_steps_table(v, v->s, "Steps:");
	for (int32_t i = 0; v->verbose && v->multi && i < v->procs->n; i++) {
		const cs_report_process *p = &v->procs->v[i];
		char lab[64], title[256];

		if (p->steps.n == 0)
			continue;
		snprintf(title, sizeof(title), "Steps of %s: %s",
			 report_proc_label(lab, sizeof(lab), p->pid, p->rank, p->local_rank),
			 p->steps.detail);
		text_steps_table(v, &p->steps, title);
	}
	report_ranks_text(out, v->ranks, v->verbose, v->width);
	if (v->r->n == 0) {
		fprintf(out, "No findings.\n");
		return 0;
	}
	for (int32_t i = 0; i < v->r->n; i++) {
		text_finding(v, v->r->v[i]);
		count[v->r->v[i]->severity]++;
	}
	text_by_location(v);
	fprintf(out, "%d %s: %d error%s, %d warning%s, %d info\n", v->r->n,
	       report_plural(v->r->n, "finding", "findings"), count[CS_SEV_ERROR],
	       count[CS_SEV_ERROR] == 1 ? "" : "s", count[CS_SEV_WARNING],
	       count[CS_SEV_WARNING] == 1 ? "" : "s", count[CS_SEV_INFO]);
	return 0;
}
