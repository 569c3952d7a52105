/*
 * cmd_report.c - `cuscope report`: load a trace, find its training steps, run the analyzers and
 * print their findings, most costly first, as text (a terminal or a log), JSON (tools; schema in
 * docs/report-format.md), markdown (a CI comment) or HTML (one page with charts: src/report/).
 *
 * Each output format is one entry of report_formats[]: a function that prints a report_view.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cuscope/progress.h"
#include "cuscope/grow.h"
#include "cuscope/analyze.h"
#include "cuscope/demangle.h"
#include "cuscope/files.h"
#include "cuscope/strbuf.h"
#include "report/report.h"
#include "cli/report_ranks.h"

#define REPORT_JSON_VERSION 1
#define EVIDENCE_KEYS_SHOWN 8  /* evidence keys shown without --verbose */
#define STEP_RUNS_SHOWN	    6  /* runs of the step list shown without --verbose */
#define ALSO_SHOWN	    4  /* other processes of a finding shown without --verbose */
#define LABEL_WIDTH	    10 /* labels of a finding's fields */
#define HEADER_LABEL_WIDTH  11 /* labels of the header */

static const char report_usage[] =
	"usage: cuscope report [OPTIONS] FILE\n"
	"       cuscope report --list-rules [--format FORMAT]\n"
	"\n"
	"Find the performance anti-patterns in a trace: what is wrong, in which training steps,\n"
	"how much GPU time it costs, where in the source, and how to fix it. Most costly first.\n"
	"Ranks that communicate (NCCL kernels) are also shown side by side, with the slowest.\n"
	"\n"
	"Options:\n"
	"  -f, --format FORMAT    text (default), json, markdown or html\n"
	"  -o, --output FILE      write the report to FILE (default: standard output)\n"
	"      --force            replace FILE when it exists\n"
	"      --rules LIST       run only these rules (comma-separated ids)\n"
	"      --skip LIST        do not run these rules\n"
	"      --list-rules       list the rules (id, source, summary) and exit\n"
	"      --step-range PAT   steps are the NVTX ranges whose text matches PAT ('step*')\n"
	"      --warmup N         the first N steps are warm-up (default: docs/steps.md)\n"
	"  -p, --pid PID          analyse only process PID (default: every process that\n"
	"                         launched GPU work, each with its own steps)\n"
	"      --fail-on LEVEL    exit 1 when a finding of LEVEL or worse exists\n"
	"                         (info, warning or error; default: never)\n"
	"      --no-color         no colour (also off with NO_COLOR set, or not on a terminal)\n"
	"  -w, --width N          fit text in N columns (default: the terminal's width on a\n"
	"                         terminal, no limit otherwise; 0 = no limit)\n"
	"  -v, --verbose          whole stacks, all evidence, the table of steps and the\n"
	"                         slowest rank of each step\n"
	"  -h, --help             show this help\n"
	"\n"
	"Exit status: 0, or 1 with --fail-on when a finding reaches the level, 2 on bad usage or\n"
	"an unreadable trace.\n";

enum report_format {
	REPORT_TEXT = 0,
	REPORT_JSON,
	REPORT_MARKDOWN,
	REPORT_HTML,
};

/* Everything an output format prints. */
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
};

/* ---- small helpers ---- */

static const char *plural(int64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* The steps of a finding as runs: "3-29", "3-10, 12, 14-29"; at most max_runs (0 = all). */
static void step_runs(char *buf, size_t size, const int32_t *steps, int32_t n, int max_runs)
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
static const char *proc_label(char *buf, size_t size, uint32_t pid, int32_t rank,
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
static const cs_finding_proc *finding_proc(const cs_report_finding *f, uint32_t pid)
{
	for (int32_t i = 0; i < f->nprocs; i++)
		if (f->procs[i].pid == pid)
			return &f->procs[i];
	return NULL;
}

/* The steps a finding's step indices and figures refer to: those of its process. */
static const cs_steps *finding_steps(const struct report_view *v, const cs_report_finding *f)
{
	const cs_report_process *p = cs_report_process_find(v->procs, f->pid);

	return p ? &p->steps : v->s;
}

/* The label of a finding's process. */
static const char *finding_label(char *buf, size_t size, const struct report_view *v,
				 const cs_report_finding *f)
{
	const cs_report_process *p = cs_report_process_find(v->procs, f->pid);

	return proc_label(buf, size, f->pid, p ? p->rank : CS_ID_NONE,
			  p ? p->local_rank : CS_ID_NONE);
}

/* "2.10 ms per step (15.0%) in 40 steps, 84.0 ms in all" for one process of a finding. */
static const char *proc_cost(char *buf, size_t size, const cs_finding_proc *p)
{
	char a[CLI_FMT_MAX], b[CLI_FMT_MAX];

	if (p->lost_ns_per_step <= 0)
		snprintf(buf, size, "in %d %s", p->nsteps, plural(p->nsteps, "step", "steps"));
	else if (p->nsteps > 0)
		snprintf(buf, size, "%s per step (%.1f%%) in %d %s, %s in all",
			 cli_fmt_duration(a, sizeof(a), p->lost_ns_per_step), 100.0 * p->step_share,
			 p->nsteps, plural(p->nsteps, "step", "steps"),
			 cli_fmt_duration(b, sizeof(b),
					  cs_lost_total(p->lost_ns_per_step, p->nsteps)));
	else
		snprintf(buf, size, "%s", cli_fmt_duration(a, sizeof(a), p->lost_ns_per_step));
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
	for (p = strstr(file, "lib/python3."); p; p = strstr(p + 1, "lib/python3."))
		return 1;
	return 0;
}

/* The frame that stands for a stack: the innermost in the user's code (docs/commands/report.md). */
static const cs_frame *location_frame(const cs_frame *f, int n)
{
	for (int i = 0; i < n; i++)
		if (f[i].file && !library_file(f[i].file))
			return &f[i];
	for (int i = 0; i < n; i++)
		if (f[i].kind == 2)
			return &f[i];
	for (int i = 0; i < n; i++)
		if (f[i].symbol)
			return &f[i];
	return n > 0 ? &f[0] : NULL;
}

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

/* "file:line in function", "function (module)" or "" (malloc'd, cleaned). */
static char *frame_text(const cs_frame *f, int full_module)
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
			 full_module ? f->module : base_name(f->module), f->offset);
	else if (f->symbol)
		snprintf(buf, sizeof(buf), "%s", f->symbol);
	else if (f->module)
		snprintf(buf, sizeof(buf), "0x%" PRIx64 " (%s)", f->pc,
			 full_module ? f->module : base_name(f->module));
	else
		snprintf(buf, sizeof(buf), "0x%" PRIx64, f->pc);
	r = report_clean_text(buf);
	return r;
}

/* Does the stack borrow the Python frames of the thread waiting in backward()? The importer puts a
 * note frame (kind 3) between an autograd engine thread's native frames and those Python frames. */
static int stack_borrowed(const cs_frame *f, int n, const cs_frame *loc)
{
	for (int i = 0; i < n && &f[i] != loc; i++)
		if (f[i].kind == 3)
			return 1;
	return 0;
}

/* The text of a stack's location: frame_text of location_frame, or for work of autograd's engine
 * thread "backward() at LOCATION (autograd engine thread)". NULL when there is none (malloc'd). */
static char *where_text(const cs_frame *f, int n)
{
	const cs_frame *loc = n > 0 ? location_frame(f, n) : NULL;
	char *s = loc ? frame_text(loc, 0) : NULL;
	char *r;
	size_t len;

	if (!s || !stack_borrowed(f, n, loc))
		return s;
	len = strlen(s) + 64;
	r = malloc(len);
	if (r)
		snprintf(r, len, "backward() at %s (autograd engine thread)", s);
	free(s);
	return r;
}

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
static void print_wrapped(int col, const char *text, int width)
{
	int avail = width > 0 ? width - col : 0;
	char *clean = report_clean_text(text);
	const char *p = clean;

	if (!clean)
		return;
	if (avail < 20 || (int)cli_text_width(p) <= avail) {
		printf("%s\n", p);
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
		printf("%*s%.*s\n", first ? 0 : col, "", (int)(end - p), p);
		p = end;
		while (*p == ' ')
			p++;
	}
	free(clean);
}

/* Print "label:   text" after lead spaces, the label padded to label_width, text wrapped. */
static void print_field_at(int lead, int label_width, const char *label, const char *text,
			   int width)
{
	printf("%*s%-*s", lead, "", label_width, label);
	print_wrapped(lead + label_width, text, width);
}

/* A field of a finding, under its title line. */
static void print_field(const char *label, const char *text, int width)
{
	print_field_at(4, LABEL_WIDTH, label, text, width);
}

/* A line of the header. */
static void print_header_field(const char *label, const char *text, int width)
{
	print_field_at(0, HEADER_LABEL_WIDTH, label, text, width);
}

static void text_evidence(const cJSON *ev, int verbose, int width)
{
	const cJSON *it;
	int n = cJSON_GetArraySize(ev), shown = 0;

	cJSON_ArrayForEach(it, ev)
	{
		char *key, *val, line[4096];

		if (!verbose && shown == EVIDENCE_KEYS_SHOWN) {
			snprintf(line, sizeof(line), "... %d more (-v shows all)", n - shown);
			print_field("", line, width);
			break;
		}
		key = report_evidence_label(it->string ? it->string : "?");
		val = report_evidence_value(it->string, it, verbose);
		if (key && val) {
			if (!verbose && width > 0 && (int)cli_text_width(val) > width - 16) {
				char *t = cli_truncate_middle(
					val, (size_t)(width > 40 ? width - 16 : 24));

				if (t) {
					free(val);
					val = t;
				}
			}
			snprintf(line, sizeof(line), "%s: %s", key, val);
			print_field(shown ? "" : "evidence:", line, verbose ? width : 0);
		}
		free(key);
		free(val);
		shown++;
	}
}

static void text_stack(const struct report_view *v, const cs_report_finding *f)
{
	const cs_frame *frames;
	cs_error err = {0, ""};
	int n;
	char *s;

	if (f->stack_id == CS_ID_NONE)
		return;
	if (cs_trace_get_stack(v->t, f->stack_id, &frames, &n, &err) < 0 || n == 0)
		return;
	s = where_text(frames, n);
	if (s)
		print_field("where:", s, v->width);
	free(s);
	if (!v->verbose)
		return;
	for (int i = 0; i < n; i++) {
		char line[4096];

		s = frame_text(&frames[i], 1);
		if (!s)
			continue;
		snprintf(line, sizeof(line), "#%-2d %s", i, s);
		print_field(i ? "" : "stack:", line, 0);
		free(s);
	}
}

static void text_finding(const struct report_view *v, const cs_report_finding *f)
{
	char a[CLI_FMT_MAX], b[CLI_FMT_MAX], line[1024], runs[512];
	int32_t steady = cs_steps_steady(finding_steps(v, f));
	int head = (int)(strlen(cs_severity_name(f->severity)) + strlen(f->rule) + 5);

	if (v->color)
		printf("%s[%s]%s %s%s%s  ", sev_color(f->severity), cs_severity_name(f->severity),
		       C_RESET, C_BOLD, f->rule, C_RESET);
	else
		printf("[%s] %s  ", cs_severity_name(f->severity), f->rule);
	/* the title after "[severity] rule  ", wrapped under itself */
	print_wrapped(head, f->title ? f->title : "", v->width);

	if (v->multi)
		print_field("process:", finding_label(line, sizeof(line), v, f), v->width);
	if (f->nsteps > 0) {
		step_runs(runs, sizeof(runs), f->steps, f->nsteps,
			  v->verbose ? 0 : STEP_RUNS_SHOWN);
		snprintf(line, sizeof(line), "%d of %d steady-state %s: %s", f->nsteps, steady,
			 plural(steady, "step", "steps"), runs);
		print_field("steps:", line, v->width);
	}
	if (f->lost_ns_per_step > 0) {
		if (f->nsteps > 0)
			snprintf(line, sizeof(line), "%s per step (%.1f%% of step time), %s in all",
				 cli_fmt_duration(a, sizeof(a), f->lost_ns_per_step),
				 100.0 * f->step_share,
				 cli_fmt_duration(b, sizeof(b), cs_finding_total_lost(f)));
		else
			snprintf(line, sizeof(line), "%s",
				 cli_fmt_duration(a, sizeof(a), f->lost_ns_per_step));
		print_field("GPU lost:", line, v->width);
	}
	for (int32_t i = 0, shown = 0; v->multi && i < f->nprocs; i++) {
		const cs_finding_proc *p = &f->procs[i];
		char lab[64], cost[256];

		if (p->pid == f->pid)
			continue;
		if (!v->verbose && shown == ALSO_SHOWN) {
			snprintf(line, sizeof(line), "... %d more (-v shows all)",
				 f->nprocs - 1 - shown);
			print_field("", line, v->width);
			break;
		}
		snprintf(line, sizeof(line), "%s: %s",
			 proc_label(lab, sizeof(lab), p->pid, p->rank, p->local_rank),
			 proc_cost(cost, sizeof(cost), p));
		print_field(shown++ ? "" : "also in:", line, v->width);
	}
	if (f->evidence && cJSON_GetArraySize(f->evidence) > 0)
		text_evidence(f->evidence, v->verbose, v->width);
	if (f->fix && *f->fix)
		print_field("fix:", f->fix, v->width);
	text_stack(v, f);
	putchar('\n');
}

/* The table of steps s, under title ("Steps:"). */
static void text_steps_table(const struct report_view *v, const cs_steps *s, const char *title)
{
	static const struct cli_column cols[] = {
		{"Step", CLI_ALIGN_RIGHT, 0},	  {"Start", CLI_ALIGN_RIGHT, 0},
		{"Duration", CLI_ALIGN_RIGHT, 0}, {"GPU busy", CLI_ALIGN_RIGHT, 0},
		{"Kernels", CLI_ALIGN_RIGHT, 0},  {"Phase", CLI_ALIGN_LEFT, 0},
	};
	struct cli_table table;

	print_wrapped(0, title, v->width);
	putchar('\n');
	cli_table_init(&table, cols, 6);
	for (int32_t i = 0; i < s->n; i++) {
		const cs_step *st = &s->v[i];
		char idx[CLI_FMT_MAX], start[CLI_FMT_MAX], dur[CLI_FMT_MAX], busy[CLI_FMT_MAX],
			kern[CLI_FMT_MAX];
		int64_t d = cs_step_time(s, i);
		const char *row[] = {
			idx,
			cli_fmt_duration(start, sizeof(start), st->start),
			cli_fmt_duration(dur, sizeof(dur), d),
			busy,
			cli_fmt_count(kern, sizeof(kern), st->kernels),
			st->warmup ? "warm-up" : "steady",
		};

		snprintf(idx, sizeof(idx), "%d", st->index);
		snprintf(busy, sizeof(busy), "%.1f%%",
			 d > 0 ? 100.0 * (double)st->gpu_busy / (double)d : 0.0);
		cli_table_add_row(&table, row);
	}
	cli_table_print(&table, stdout, 1, v->width);
	cli_table_free(&table);
	putchar('\n');
}

/* "pid N ended without its end record: records after T may be missing" */
static const char *unended_text(char *buf, size_t size, const cs_unended *u)
{
	char t[CLI_FMT_MAX];

	if (u->last == CS_TS_UNKNOWN)
		snprintf(buf, size, "pid %u ended without its end record and recorded nothing",
			 u->pid);
	else
		snprintf(buf, size,
			 "pid %u ended without its end record (killed, os._exit): records after "
			 "%s may be missing",
			 u->pid, cli_fmt_duration(t, sizeof(t), u->last));
	return buf;
}

#define UNENDED_SHOWN 3	 /* processes named in the text and markdown headers */
#define PROCS_SHOWN   16 /* processes listed in the text header without --verbose */

/*
 * What was found in process p: "d2h-sync (warning), launch-starvation (info)" or "no findings"
 * (malloc'd; NULL without memory).
 */
static char *proc_findings(const struct report_view *v, uint32_t pid)
{
	cs_strbuf sb = CS_STRBUF_INIT;
	char *r;

	for (int32_t i = 0; i < v->r->n; i++) {
		const cs_report_finding *f = v->r->v[i];
		const cs_finding_proc *p = finding_proc(f, pid);

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
static const char *proc_steps_text(char *buf, size_t size, const cs_steps *s)
{
	char a[CLI_FMT_MAX];
	int64_t median, p10, p90;

	if (s->method == CS_STEPS_NONE) {
		snprintf(buf, size, "no steps, %s, GPU busy %.1f%%",
			 cli_fmt_duration(a, sizeof(a), s->n ? s->v[0].end - s->v[0].start : 0),
			 100.0 * cs_steps_busy_share(s));
		return buf;
	}
	cs_steps_duration_stats(s, &median, &p10, &p90);
	snprintf(buf, size, "%d %s, median %s, GPU busy %.1f%%", s->n,
		 plural(s->n, "step", "steps"), cli_fmt_duration(a, sizeof(a), median),
		 100.0 * cs_steps_busy_share(s));
	return buf;
}

/* The header's list of the processes analysed, one line each. */
static void text_processes(const struct report_view *v)
{
	char line[1024];
	int32_t n = v->procs->n, shown = v->verbose || n <= PROCS_SHOWN ? n : PROCS_SHOWN - 1;

	snprintf(line, sizeof(line), "%d analysed, each with its own steps%s", n,
		 v->verbose ? "" : " (-v: how they were found)");
	print_header_field("processes:", line, v->width);
	for (int32_t i = 0; i < shown; i++) {
		const cs_report_process *p = &v->procs->v[i];
		char lab[64], st[256];
		char *found = proc_findings(v, p->pid);

		snprintf(line, sizeof(line), "%s: %s; %s",
			 proc_label(lab, sizeof(lab), p->pid, p->rank, p->local_rank),
			 proc_steps_text(st, sizeof(st), &p->steps), found ? found : "");
		print_header_field("", line, v->width);
		free(found);
	}
	if (shown < n) {
		snprintf(line, sizeof(line), "... %d more (-v shows all)", n - shown);
		print_header_field("", line, v->width);
	}
}

static void text_header(const struct report_view *v)
{
	const char *command = cs_trace_meta(v->t, "command");
	const cs_steps *s = v->s;
	char a[CLI_FMT_MAX], b[CLI_FMT_MAX], c[CLI_FMT_MAX], line[1024];
	char *clean;

	clean = report_clean_text(v->path);
	print_header_field("trace:", clean ? clean : "", v->width);
	free(clean);
	if (command)
		print_header_field("command:", command, v->width);
	if (v->multi) {
		text_processes(v);
	} else if (s->method == CS_STEPS_NONE) {
		snprintf(line, sizeof(line), "none found (%s)", s->detail);
		print_header_field("steps:", line, v->width);
		snprintf(line, sizeof(line), "%s, GPU busy %.1f%%",
			 cli_fmt_duration(a, sizeof(a), s->n ? s->v[0].end - s->v[0].start : 0),
			 100.0 * v->busy_share);
		print_header_field("duration:", line, v->width);
	} else {
		snprintf(line, sizeof(line), "%d (%s), %d warm-up", s->n, s->detail, s->warmup);
		print_header_field("steps:", line, v->width);
		snprintf(line, sizeof(line), "median %s (p10 %s .. p90 %s), GPU busy %.1f%%%s",
			 cli_fmt_duration(a, sizeof(a), v->median),
			 cli_fmt_duration(b, sizeof(b), v->p10),
			 cli_fmt_duration(c, sizeof(c), v->p90), 100.0 * v->busy_share,
			 s->timing == CS_STEP_TIME_GPU ? "; GPU-bound: step time from the GPU"
						       : "");
		print_header_field("step time:", line, v->width);
	}
	for (int i = 0; i < v->nunended && i < UNENDED_SHOWN; i++)
		print_header_field("warning:", unended_text(line, sizeof(line), &v->unended[i]),
				   v->width);
	if (v->nunended > UNENDED_SHOWN) {
		snprintf(line, sizeof(line),
			 "%d more processes without their end record (cuscope info)",
			 v->nunended - UNENDED_SHOWN);
		print_header_field("warning:", line, v->width);
	}
	putchar('\n');
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
		if ((l[n].where = where_text(frames, nf)) != NULL)
			l[n++].finding = i;
	}
	if (n > 0) {
		cs_sort(l, (size_t)n, sizeof(*l), located_cmp);
		printf("By source location:\n");
		for (int32_t i = 0; i < n; i++) {
			const cs_report_finding *f = v->r->v[l[i].finding];
			int first = i == 0 || strcmp(l[i].where, l[i - 1].where) != 0;
			int last = i == n - 1 || strcmp(l[i].where, l[i + 1].where) != 0;

			if (first)
				printf("  %s\n      ", l[i].where);
			printf("%s (%s)%s", f->rule, cs_severity_name(f->severity),
			       last ? "\n" : ", ");
		}
		putchar('\n');
	}
	for (int32_t i = 0; i < n; i++)
		free(l[i].where);
	free(l);
}

static int print_text(const struct report_view *v)
{
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
			 proc_label(lab, sizeof(lab), p->pid, p->rank, p->local_rank),
			 p->steps.detail);
		text_steps_table(v, &p->steps, title);
	}
	report_ranks_text(v->ranks, v->verbose, v->width);
	if (v->r->n == 0) {
		printf("No findings.\n");
		return 0;
	}
	for (int32_t i = 0; i < v->r->n; i++) {
		text_finding(v, v->r->v[i]);
		count[v->r->v[i]->severity]++;
	}
	text_by_location(v);
	printf("%d %s: %d error%s, %d warning%s, %d info\n", v->r->n,
	       plural(v->r->n, "finding", "findings"), count[CS_SEV_ERROR],
	       count[CS_SEV_ERROR] == 1 ? "" : "s", count[CS_SEV_WARNING],
	       count[CS_SEV_WARNING] == 1 ? "" : "s", count[CS_SEV_INFO]);
	return 0;
}

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
					cli_json_add_string(r, "name_demangled",
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
	return rank != CS_ID_NONE ? cli_json_int(rank) : cJSON_CreateNull();
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
	cli_json_add_string(o, "kind", frame_kind(f->kind));
	cli_json_add_string(o, "function", f->symbol);
	cli_json_add_string(o, "file", f->file);
	cli_json_add_int(o, "line", f->line, 0);
	cli_json_add_string(o, "module", f->module);
	return o;
}

static int json_stack(const struct report_view *v, const cs_report_finding *f, cJSON *o)
{
	cJSON *stack;
	const cs_frame *frames = NULL, *loc;
	cs_error err = {0, ""};
	int n = 0;

	if (f->stack_id != CS_ID_NONE &&
	    cs_trace_get_stack(v->t, f->stack_id, &frames, &n, &err) < 0)
		n = 0;
	loc = n > 0 ? location_frame(frames, n) : NULL;
	if (loc) {
		cJSON *l = json_frame(loc);

		if (!l || !cJSON_AddItemToObject(o, "location", l)) {
			cJSON_Delete(l);
			return -1;
		}
		cJSON_DeleteItemFromObject(l, "kind");
		if (stack_borrowed(frames, n, loc) &&
		    !cJSON_AddTrueToObject(l, "autograd_engine_thread"))
			return -1;
	} else if (!cJSON_AddNullToObject(o, "location")) {
		return -1;
	}
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

static cJSON *json_finding(const struct report_view *v, const cs_report_finding *f)
{
	cJSON *o = cJSON_CreateObject(), *steps, *ev;

	if (!o)
		return NULL;
	cli_json_add_string(o, "rule", f->rule);
	cli_json_add_string(o, "severity", cs_severity_name(f->severity));
	cli_json_add_string(o, "title", f->title);
	steps = cJSON_AddArrayToObject(o, "steps");
	for (int32_t i = 0; steps && i < f->nsteps; i++)
		cJSON_AddItemToArray(steps, cli_json_int(f->steps[i]));
	cli_json_add_int(o, "lost_ns_per_step", f->lost_ns_per_step, INT64_MIN);
	cJSON_AddNumberToObject(o, "step_share", f->step_share);
	cli_json_add_int(o, "total_lost_ns", cs_finding_total_lost(f), INT64_MIN);
	cli_json_add_int(o, "first_ns", f->first, CS_TS_UNKNOWN);
	cli_json_add_int(o, "last_ns", f->last, CS_TS_UNKNOWN);
	ev = f->evidence ? json_clean_copy(f->evidence) : cJSON_CreateObject();
	if (!ev || !cJSON_AddItemToObject(o, "evidence", ev)) {
		cJSON_Delete(ev);
		goto fail;
	}
	cli_json_add_string(o, "fix", f->fix);
	if (!steps || json_stack(v, f, o))
		goto fail;
	{
		const cs_report_process *p = cs_report_process_find(v->procs, f->pid);
		cJSON *procs;

		cli_json_add_int(o, "pid", f->pid, 0);
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
			cli_json_add_int(e, "pid", x->pid, -1);
			if (json_add_rank(e, "rank", x->rank) ||
			    json_add_rank(e, "local_rank", x->local_rank))
				goto fail;
			cli_json_add_string(e, "severity", cs_severity_name(x->severity));
			st = cJSON_AddArrayToObject(e, "steps");
			for (int32_t k = 0; st && k < x->nsteps; k++)
				cJSON_AddItemToArray(st, cli_json_int(x->steps[k]));
			if (!st)
				goto fail;
			cli_json_add_int(e, "lost_ns_per_step", x->lost_ns_per_step, INT64_MIN);
			cJSON_AddNumberToObject(e, "step_share", x->step_share);
			cli_json_add_int(e, "total_lost_ns",
					 cs_lost_total(x->lost_ns_per_step, x->nsteps), INT64_MIN);
			cli_json_add_int(e, "first_ns", x->first, CS_TS_UNKNOWN);
			cli_json_add_int(e, "last_ns", x->last, CS_TS_UNKNOWN);
		}
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

/* A steps object: the top level's (the primary process's) or a process's. */
static cJSON *json_steps(const struct report_view *v, const cs_steps *s)
{
	cJSON *o = cJSON_CreateObject(), *list;
	int64_t median, p10, p90;

	if (!o)
		return NULL;
	cs_steps_duration_stats(s, &median, &p10, &p90);
	cli_json_add_string(o, "method", cs_step_method_name(s->method));
	cli_json_add_string(o, "detail", s->detail);
	cli_json_add_string(o, "step_range", v->step_range);
	cli_json_add_int(o, "pid", s->pid, 0);
	cli_json_add_int(o, "count", s->n, -1);
	cli_json_add_int(o, "warmup", s->warmup, -1);
	cli_json_add_int(o, "period_kernels", s->period, 0);
	cli_json_add_int(o, "period_operations", s->period_ops, 0);
	cli_json_add_string(o, "step_time", cs_step_timing_name(s->timing));
	cli_json_add_int(o, "median_ns", median, -1);
	cli_json_add_int(o, "p10_ns", p10, -1);
	cli_json_add_int(o, "p90_ns", p90, -1);
	cJSON_AddNumberToObject(o, "gpu_busy_share", cs_steps_busy_share(s));
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
		cli_json_add_int(e, "index", st->index, -1);
		cli_json_add_int(e, "start_ns", st->start, CS_TS_UNKNOWN);
		cli_json_add_int(e, "end_ns", st->end, CS_TS_UNKNOWN);
		cli_json_add_int(e, "duration_ns", d, INT64_MIN);
		cli_json_add_int(e, "host_duration_ns", st->end - st->start, INT64_MIN);
		cli_json_add_int(e, "gpu_start_ns", st->gpu_start, CS_TS_UNKNOWN);
		cli_json_add_int(e, "gpu_end_ns", st->gpu_end, CS_TS_UNKNOWN);
		cli_json_add_int(e, "gpu_busy_ns", st->gpu_busy, INT64_MIN);
		cJSON_AddNumberToObject(e, "gpu_busy_share",
					d > 0 ? (double)st->gpu_busy / (double)d : 0.0);
		cli_json_add_int(e, "kernels", st->kernels, -1);
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
		cli_json_add_int(o, "pid", p->pid, -1);
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

			if (finding_proc(f, p->pid) || (f->nprocs == 0 && f->pid == p->pid))
				cJSON_AddItemToArray(found, cli_json_int(j));
		}
	}
	return 0;
}

static cJSON *json_report(const struct report_view *v)
{
	cJSON *doc = cJSON_CreateObject(), *trace, *steps, *rules, *findings, *summary;
	int count[4] = {0};
	int64_t total = 0;

	if (!doc)
		return NULL;
	cli_json_add_int(doc, "version", REPORT_JSON_VERSION, -1);
	trace = cJSON_AddObjectToObject(doc, "trace");
	if (!trace)
		goto fail;
	cli_json_add_string(trace, "file", v->path);
	cli_json_add_string(trace, "command", cs_trace_meta(v->t, "command"));
	cli_json_add_int(trace, "start_ns", v->a->trace_start, INT64_MIN);
	cli_json_add_int(trace, "end_ns", v->a->trace_end, INT64_MIN);
	cli_json_add_int(trace, "kernels", v->a->nkernels, -1);
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
			cli_json_add_int(o, "pid", v->unended[i].pid, -1);
			cli_json_add_int(o, "last_event_ns", v->unended[i].last, CS_TS_UNKNOWN);
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
		cJSON *f = json_finding(v, v->r->v[i]);

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
	cli_json_add_int(summary, "findings", v->r->n, -1);
	cli_json_add_int(summary, "error", count[CS_SEV_ERROR], -1);
	cli_json_add_int(summary, "warning", count[CS_SEV_WARNING], -1);
	cli_json_add_int(summary, "info", count[CS_SEV_INFO], -1);
	cli_json_add_int(summary, "total_lost_ns", total, INT64_MIN);
	return doc;
fail:
	cJSON_Delete(doc);
	return NULL;
}

static int print_json(const struct report_view *v)
{
	cJSON *doc = json_report(v);
	int rc;

	if (!doc) {
		cli_error("out of memory");
		return CLI_EXIT_USAGE;
	}
	rc = cli_json_print(doc);
	cJSON_Delete(doc);
	return rc;
}

/* ---- markdown ---- */

/* Print s for a markdown table cell or paragraph: cleaned, markdown punctuation escaped. */
static void md_puts(const char *s)
{
	char *c = report_clean_text(s);

	if (!c)
		return;
	for (const char *p = c; *p; p++) {
		if (strchr("\\`*_[]<>|#~&!", *p))
			putchar('\\');
		putchar(*p);
	}
	free(c);
}

/* Print s as inline code (cleaned; backticks and pipes cannot end the span or a table cell). */
static void md_code(const char *s)
{
	char *c = report_clean_text(s);

	if (!c)
		return;
	for (char *p = c; *p; p++)
		if (*p == '`' || *p == '|')
			*p = '\'';
	printf("`%s`", c);
	free(c);
}

static void md_finding(const struct report_view *v, const cs_report_finding *f)
{
	char a[CLI_FMT_MAX], b[CLI_FMT_MAX], runs[512];
	const cJSON *it;

	printf("\n### %s: ", cs_severity_name(f->severity));
	md_code(f->rule);
	printf(" ");
	md_puts(f->title);
	printf("\n\n");
	if (v->multi) {
		char lab[64];

		printf("- **Process:** ");
		md_puts(finding_label(lab, sizeof(lab), v, f));
		printf("\n");
		for (int32_t i = 0; i < f->nprocs; i++) {
			const cs_finding_proc *p = &f->procs[i];
			char cost[256];

			if (p->pid == f->pid)
				continue;
			printf("- **Also in:** ");
			md_puts(proc_label(lab, sizeof(lab), p->pid, p->rank, p->local_rank));
			printf(": ");
			md_puts(proc_cost(cost, sizeof(cost), p));
			printf("\n");
		}
	}
	if (f->nsteps > 0) {
		step_runs(runs, sizeof(runs), f->steps, f->nsteps, STEP_RUNS_SHOWN);
		printf("- **Steps:** %d of %d steady-state (%s)\n", f->nsteps,
		       cs_steps_steady(finding_steps(v, f)), runs);
	}
	if (f->lost_ns_per_step > 0)
		printf("- **GPU time lost:** %s per step (%.1f%% of step time), %s in all\n",
		       cli_fmt_duration(a, sizeof(a), f->lost_ns_per_step), 100.0 * f->step_share,
		       cli_fmt_duration(b, sizeof(b), cs_finding_total_lost(f)));
	if (f->stack_id != CS_ID_NONE) {
		const cs_frame *frames;
		cs_error err = {0, ""};
		int n;

		if (cs_trace_get_stack(v->t, f->stack_id, &frames, &n, &err) == 0 && n > 0) {
			char *s = where_text(frames, n);

			if (s) {
				printf("- **Where:** ");
				md_code(s);
				printf("\n");
			}
			free(s);
		}
	}
	if (f->fix && *f->fix) {
		printf("- **Fix:** ");
		md_puts(f->fix);
		printf("\n");
	}
	if (f->evidence && cJSON_GetArraySize(f->evidence) > 0) {
		printf("\n<details><summary>Evidence</summary>\n\n| | |\n|---|---|\n");
		cJSON_ArrayForEach(it, f->evidence)
		{
			char *val = report_evidence_value(it->string, it, v->verbose);
			char *key = report_evidence_label(it->string);

			printf("| ");
			md_puts(key ? key : "");
			free(key);
			printf(" | ");
			md_puts(val ? val : "");
			printf(" |\n");
			free(val);
		}
		printf("\n</details>\n");
	}
}

static int print_markdown(const struct report_view *v)
{
	const cs_steps *s = v->s;
	char a[CLI_FMT_MAX], b[CLI_FMT_MAX], c[CLI_FMT_MAX];
	int count[4] = {0};

	printf("## cuscope report: ");
	md_code(base_name(v->path));
	printf("\n\n| | |\n|---|---|\n");
	for (int32_t i = 0; v->multi && i < v->procs->n; i++) {
		const cs_report_process *p = &v->procs->v[i];
		char lab[64], st[256];
		char *found = proc_findings(v, p->pid);

		printf("| Process | ");
		md_puts(proc_label(lab, sizeof(lab), p->pid, p->rank, p->local_rank));
		printf(": ");
		md_puts(proc_steps_text(st, sizeof(st), &p->steps));
		printf("; ");
		md_puts(found ? found : "");
		printf(" |\n");
		free(found);
	}
	if (v->multi) {
		/* each process's steps and GPU busy share are in its row */
	} else if (s->method == CS_STEPS_NONE) {
		printf("| Steps | none found (");
		md_puts(s->detail);
		printf(") |\n");
	} else {
		printf("| Steps | %d (", s->n);
		md_puts(s->detail);
		printf("), %d warm-up |\n", s->warmup);
		printf("| Step time | median %s (p10 %s, p90 %s)%s |\n",
		       cli_fmt_duration(a, sizeof(a), v->median),
		       cli_fmt_duration(b, sizeof(b), v->p10),
		       cli_fmt_duration(c, sizeof(c), v->p90),
		       s->timing == CS_STEP_TIME_GPU ? "; GPU-bound: step time from the GPU" : "");
	}
	if (!v->multi)
		printf("| GPU busy | %.1f%% |\n", 100.0 * v->busy_share);
	for (int i = 0; i < v->nunended && i < UNENDED_SHOWN; i++) {
		char line[256];

		printf("| Incomplete | ");
		md_puts(unended_text(line, sizeof(line), &v->unended[i]));
		printf(" |\n");
	}
	if (v->nunended > UNENDED_SHOWN)
		printf("| Incomplete | %d more processes without their end record |\n",
		       v->nunended - UNENDED_SHOWN);
	for (int32_t i = 0; i < v->r->n; i++)
		count[v->r->v[i]->severity]++;
	printf("| Findings | %d (%d error, %d warning, %d info) |\n", v->r->n, count[CS_SEV_ERROR],
	       count[CS_SEV_WARNING], count[CS_SEV_INFO]);
	report_ranks_markdown(v->ranks);
	if (v->r->n == 0) {
		printf("\n**No findings.**\n");
		return 0;
	}
	printf("\n| Severity | Rule | Finding |%s Steps | GPU lost per step | Total |\n"
	       "|---|---|---|%s---:|---:|---:|\n",
	       v->multi ? " Processes |" : "", v->multi ? "---|" : "");
	for (int32_t i = 0; i < v->r->n; i++) {
		const cs_report_finding *f = v->r->v[i];

		printf("| %s | ", cs_severity_name(f->severity));
		md_code(f->rule);
		printf(" | ");
		md_puts(f->title);
		if (v->multi) {
			char lab[64];

			printf(" | ");
			if (f->nprocs <= 1) {
				md_puts(finding_label(lab, sizeof(lab), v, f));
			} else {
				for (int32_t k = 0; k < f->nprocs; k++) {
					const cs_finding_proc *p = &f->procs[k];

					printf("%s", k ? ", " : "");
					md_puts(proc_label(lab, sizeof(lab), p->pid, p->rank,
							   p->local_rank));
				}
			}
		}
		printf(" | %d | %s (%.1f%%) | %s |\n", f->nsteps,
		       cli_fmt_duration(a, sizeof(a), f->lost_ns_per_step), 100.0 * f->step_share,
		       cli_fmt_duration(b, sizeof(b), cs_finding_total_lost(f)));
	}
	for (int32_t i = 0; i < v->r->n; i++)
		md_finding(v, v->r->v[i]);
	return 0;
}

/* ---- HTML (src/report/html.c) ---- */

/* The JSON report with the figures of the charts, written as one page. */
static int print_html(const struct report_view *v)
{
	cJSON *doc = json_report(v), *charts;
	cs_error err = {0, ""};
	int rc = 0;

	if (!doc) {
		cli_error("out of memory");
		return CLI_EXIT_USAGE;
	}
	charts = report_charts(v->a, v->procs, &err);
	if (!charts || !cJSON_AddItemToObject(doc, "charts", charts)) {
		cJSON_Delete(charts);
		cli_error("cannot chart '%s': %s", v->path, err.msg[0] ? err.msg : "out of memory");
		rc = CLI_EXIT_USAGE;
	} else if (report_html_write(stdout, doc)) {
		cli_error("out of memory");
		rc = CLI_EXIT_USAGE;
	}
	cJSON_Delete(doc);
	return rc;
}

/* ---- the formats ---- */

struct report_format_ops {
	const char *name;
	int (*print)(const struct report_view *v);
};

static const struct report_format_ops report_formats[] = {
	[REPORT_TEXT] = {"text", print_text},
	[REPORT_JSON] = {"json", print_json},
	[REPORT_MARKDOWN] = {"markdown", print_markdown},
	[REPORT_HTML] = {"html", print_html},
};

static int parse_format(const char *arg, enum report_format *out)
{
	for (size_t i = 0; i < sizeof(report_formats) / sizeof(report_formats[0]); i++)
		if (!strcmp(arg, report_formats[i].name) ||
		    (i == REPORT_MARKDOWN && !strcmp(arg, "md"))) {
			*out = (enum report_format)i;
			return 0;
		}
	return cli_usage_error(
		"report", "invalid value '%s' for --format (text, json, markdown or html)", arg);
}

/* ---- --list-rules ---- */

static int list_rules(enum report_format format)
{
	if (format == REPORT_JSON) {
		cJSON *doc = cJSON_CreateObject(), *arr;
		int rc;

		arr = doc ? cJSON_AddArrayToObject(doc, "rules") : NULL;
		if (!arr) {
			cJSON_Delete(doc);
			cli_error("out of memory");
			return CLI_EXIT_USAGE;
		}
		for (const cs_analyzer *const *r = cs_analyzers; *r; r++) {
			cJSON *o = cJSON_CreateObject();

			if (!o || !cJSON_AddItemToArray(arr, o)) {
				cJSON_Delete(o);
				break;
			}
			cli_json_add_string(o, "id", (*r)->id);
			cli_json_add_string(o, "summary", (*r)->summary);
			cli_json_add_string(o, "source", (*r)->source);
		}
		rc = cli_json_print(doc);
		cJSON_Delete(doc);
		return rc;
	}
	if (format == REPORT_MARKDOWN) {
		printf("| Rule | Source | Summary |\n|---|---|---|\n");
		for (const cs_analyzer *const *r = cs_analyzers; *r; r++) {
			printf("| ");
			md_code((*r)->id);
			printf(" | ");
			md_puts((*r)->source);
			printf(" | ");
			md_puts((*r)->summary);
			printf(" |\n");
		}
		return 0;
	}
	{
		static const struct cli_column cols[] = {
			{"Rule", CLI_ALIGN_LEFT, 0},
			{"Source", CLI_ALIGN_LEFT, 0},
			{"Summary", CLI_ALIGN_LEFT, 1},
		};
		struct cli_table table;

		cli_table_init(&table, cols, 3);
		for (const cs_analyzer *const *r = cs_analyzers; *r; r++) {
			const char *row[] = {(*r)->id, (*r)->source, (*r)->summary};

			cli_table_add_row(&table, row);
		}
		cli_table_print(&table, stdout, 0, cli_output_width(-1));
		cli_table_free(&table);
	}
	return 0;
}

/* ---- rule selection ---- */

/*
 * Mark in sel[] (one flag per registry entry) the rules of a comma-separated list; a usage error
 * for an unknown id or an empty list.
 */
static int parse_rule_list(const char *option, const char *list, char *sel)
{
	char *copy = strdup(list), *save = NULL, *tok;
	int n = 0;

	if (!copy) {
		cli_error("out of memory");
		return CLI_EXIT_USAGE;
	}
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const cs_analyzer *r;
		size_t i;

		while (isspace((unsigned char)*tok))
			tok++;
		for (char *e = tok + strlen(tok); e > tok && isspace((unsigned char)e[-1]);)
			*--e = '\0';
		if (!*tok)
			continue;
		r = cs_analyzer_find(tok);
		if (!r) {
			int rc = cli_usage_error("report",
						 "unknown rule '%s' in %s (cuscope report "
						 "--list-rules lists them)",
						 tok, option);

			free(copy);
			return rc;
		}
		for (i = 0; cs_analyzers[i] != r; i++)
			;
		sel[i] = 1;
		n++;
	}
	free(copy);
	if (n == 0)
		return cli_usage_error("report", "%s needs at least one rule id", option);
	return 0;
}

/* ---- -o FILE ---- */

/* Where the report goes with -o: a file written under a temporary name, renamed at the end. */
struct report_output {
	cs_outfile file;
	int saved_stdout; /* the standard output, while stdout writes to the file */
};

/*
 * Send stdout to a temporary file beside path: 0, or CLI_EXIT_USAGE after one line saying why
 * (path exists without --force, is the trace itself, or cannot be written).
 */
static int output_begin(struct report_output *o, const char *path, const char *trace, int force)
{
	struct stat sb;

	o->saved_stdout = -1;
	if (!force && lstat(path, &sb) == 0 &&
	    (S_ISREG(sb.st_mode) ||
	     (S_ISLNK(sb.st_mode) && stat(path, &sb) == 0 && S_ISREG(sb.st_mode)))) {
		cli_error("'%s' exists; use --force to replace it", path);
		return CLI_EXIT_USAGE;
	}
	if (cs_same_file(path, trace)) {
		cli_error("cannot write the report over its trace '%s'", path);
		return CLI_EXIT_USAGE;
	}
	if (cs_outfile_open(&o->file, path) < 0) {
		cli_error("cannot write '%s': %s", path, cs_file_strerror(errno));
		return CLI_EXIT_USAGE;
	}
	fflush(stdout);
	o->saved_stdout = dup(STDOUT_FILENO);
	if (o->saved_stdout < 0 || dup2(o->file.fd, STDOUT_FILENO) < 0) {
		int e = errno;

		if (o->saved_stdout >= 0)
			close(o->saved_stdout);
		o->saved_stdout = -1;
		cs_outfile_abort(&o->file);
		cli_error("cannot write '%s': %s", path, strerror(e));
		return CLI_EXIT_USAGE;
	}
	return 0;
}

/*
 * Give stdout back and put the file in place, or remove it when the report failed (rc 2) or could
 * not be written whole. Returns rc, or CLI_EXIT_USAGE after the error.
 */
static int output_end(struct report_output *o, const char *path, int rc)
{
	int failed = fflush(stdout) != 0 || ferror(stdout), e = errno;

	dup2(o->saved_stdout, STDOUT_FILENO);
	close(o->saved_stdout);
	clearerr(stdout);
	if (failed || rc == CLI_EXIT_USAGE) {
		cs_outfile_abort(&o->file);
		if (failed)
			cli_error("cannot write '%s': %s", path, strerror(e ? e : EIO));
		return CLI_EXIT_USAGE;
	}
	if (cs_outfile_commit(&o->file) < 0) {
		cli_error("cannot write '%s': %s", path, cs_file_strerror(errno));
		return CLI_EXIT_USAGE;
	}
	return rc;
}

/* ---- the command ---- */

enum {
	OPT_RULES = 256,
	OPT_SKIP,
	OPT_LIST_RULES,
	OPT_STEP_RANGE,
	OPT_WARMUP,
	OPT_FAIL_ON,
	OPT_NO_COLOR,
	OPT_FORCE,
};

int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"format", required_argument, NULL, 'f'},
		{"output", required_argument, NULL, 'o'},
		{"force", no_argument, NULL, OPT_FORCE},
		{"rules", required_argument, NULL, OPT_RULES},
		{"skip", required_argument, NULL, OPT_SKIP},
		{"list-rules", no_argument, NULL, OPT_LIST_RULES},
		{"step-range", required_argument, NULL, OPT_STEP_RANGE},
		{"warmup", required_argument, NULL, OPT_WARMUP},
		{"pid", required_argument, NULL, 'p'},
		{"fail-on", required_argument, NULL, OPT_FAIL_ON},
		{"no-color", no_argument, NULL, OPT_NO_COLOR},
		{"width", required_argument, NULL, 'w'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	enum { NRULES_MAX = 64 };
	char only[NRULES_MAX] = {0}, skip[NRULES_MAX] = {0};
	const cs_analyzer *selected[NRULES_MAX + 1];
	enum report_format format = REPORT_TEXT;
	int have_only = 0, list = 0, no_color = 0, verbose = 0, fail_on = 0, c, rc, nsel = 0;
	int force = 0;
	const char *output = NULL;
	struct report_output out;
	int64_t warmup = -1, pid = 0, width = -1;
	const char *path, *step_range = NULL;
	cs_trace *t = NULL;
	cs_analysis a;
	const cs_steps *steps;
	cs_report rep;
	cs_report_processes procs;
	cs_step_opts so;
	cs_error err = {0, ""};
	cs_progress *progress;
	struct report_view view;
	cs_unended *unended = NULL;

	while ((c = cli_getopt(argc, argv, "f:o:p:w:vh", longopts)) != -1) {
		switch (c) {
		case 'f':
			if (parse_format(optarg, &format))
				return CLI_EXIT_USAGE;
			break;
		case 'o':
			if (!*optarg)
				return cli_usage_error(argv[0], "--output needs a file name");
			output = strcmp(optarg, "-") ? optarg : NULL;
			break;
		case OPT_FORCE:
			force = 1;
			break;
		case OPT_RULES:
			if (parse_rule_list("--rules", optarg, only))
				return CLI_EXIT_USAGE;
			have_only = 1;
			break;
		case OPT_SKIP:
			if (parse_rule_list("--skip", optarg, skip))
				return CLI_EXIT_USAGE;
			break;
		case OPT_LIST_RULES:
			list = 1;
			break;
		case OPT_STEP_RANGE:
			if (!*optarg)
				return cli_usage_error(argv[0], "--step-range needs a pattern");
			step_range = optarg;
			break;
		case OPT_WARMUP:
			if (cli_parse_int(argv[0], "--warmup", optarg, 0, INT32_MAX, &warmup))
				return CLI_EXIT_USAGE;
			break;
		case 'p':
			if (cli_parse_int(argv[0], "--pid", optarg, 1, UINT32_MAX, &pid))
				return CLI_EXIT_USAGE;
			break;
		case OPT_FAIL_ON:
			fail_on = cs_severity_parse(optarg);
			if (fail_on < 0)
				return cli_usage_error(argv[0],
						       "invalid value '%s' for --fail-on (info, "
						       "warning or error)",
						       optarg);
			break;
		case OPT_NO_COLOR:
			no_color = 1;
			break;
		case 'w':
			if (cli_parse_int(argv[0], "--width", optarg, 0, 100000, &width))
				return CLI_EXIT_USAGE;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			fputs(report_usage, stdout);
			return cli_finish_output(CLI_EXIT_OK);
		default:
			return CLI_EXIT_USAGE;
		}
	}
	if (list) {
		if (format == REPORT_HTML)
			return cli_usage_error(
				argv[0], "--list-rules prints text, json or markdown, not html");
		if (output)
			return cli_usage_error(argv[0], "--list-rules prints to standard output");
		if (optind < argc)
			return cli_usage_error(argv[0],
					       "unexpected argument '%s' after --list-rules",
					       argv[optind]);
		return cli_finish_output(list_rules(format));
	}
	for (int i = 0; cs_analyzers[i] && i < NRULES_MAX; i++)
		if ((!have_only || only[i]) && !skip[i])
			selected[nsel++] = cs_analyzers[i];
	selected[nsel] = NULL;

	path = cli_single_file(argv[0], argc, argv);
	if (!path)
		return CLI_EXIT_USAGE;
	rc = cli_open_trace(path, &t, CS_TRACE_ONE_THREAD);
	if (rc)
		return rc;
	rc = pid ? cli_check_pid(t, path, pid) : 0;
	if (rc) {
		cs_trace_close(t);
		return rc;
	}
	progress = cs_progress_start("reading the trace");
	rc = cs_analysis_load(t, &a, &err);
	if (rc < 0) {
		cs_progress_end(progress);
		rc = cli_trace_error(path, rc, &err);
		cs_trace_close(t);
		return rc;
	}
	cs_progress_phase(progress, "finding the steps and running the rules");
	so.step_range = step_range;
	so.warmup = (int)warmup;
	so.pid = (uint32_t)pid;
	memset(&rep, 0, sizeof(rep));
	memset(&procs, 0, sizeof(procs));
	rc = cs_report_run_processes(&a, &so, selected, &procs, &rep, &err);
	cs_progress_end(progress);
	if (rc < 0 && procs.n == 0) {
		/* the steps could not be found: a --step-range that matches nothing */
		if (rc == CS_ERR_INVALID)
			cli_error("%s", err.msg);
		else
			cli_trace_error(path, rc, &err);
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if (rc < 0) {
		cli_error("cannot analyze '%s': %s", path, err.msg);
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	steps = &procs.v[procs.primary].steps;

	memset(&view, 0, sizeof(view));
	rc = cs_trace_unended(t, &unended, &view.nunended, &err);
	if (rc < 0) {
		rc = cli_trace_error(path, rc, &err);
		goto out;
	}
	view.unended = unended;
	view.path = path;
	view.t = t;
	view.a = &a;
	view.s = steps;
	view.r = &rep;
	view.procs = &procs;
	view.ranks = procs.ranks;
	view.multi = procs.n > 1;
	view.rules = selected;
	view.step_range = step_range;
	view.verbose = verbose;
	view.color = cli_use_color(no_color) && !output;
	view.width = output ? (width >= 0 ? (int)width : 0) : cli_output_width((int)width);
	cs_steps_duration_stats(steps, &view.median, &view.p10, &view.p90);
	view.busy_share = cs_steps_busy_share(steps);

	if (output && (rc = output_begin(&out, output, path, force)) != 0)
		goto out;
	rc = report_formats[format].print(&view);
	if (rc == 0 && fail_on > 0)
		for (int32_t i = 0; i < rep.n; i++)
			if (rep.v[i]->severity >= fail_on)
				rc = CLI_EXIT_FINDINGS;
	rc = output ? output_end(&out, output, rc) : cli_finish_output(rc);
out:
	free(unended);
	cs_report_free(&rep);
	cs_report_processes_free(&procs);
	cs_analysis_free(&a);
	cs_trace_close(t);
	return rc;
}
