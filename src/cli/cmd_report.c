/*
 * cmd_report.c - `cuscope report`: load a trace, find its training steps, run the analyzers and
 * print their findings, most costly first, as text (a terminal or a log), JSON (tools; schema in
 * docs/report-format.md), markdown (a CI comment) or HTML (one page with charts: src/report/).
 *
 * Each output format is one entry of report_formats[]: a function that prints a report_view, with
 * the renderers of src/report/ (report.h).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cuscope/escape.h"
#include "cuscope/progress.h"
#include "cuscope/timings.h"
#include "cuscope/grow.h"
#include "cuscope/analyze.h"
#include "cuscope/demangle.h"
#include "cuscope/files.h"
#include "cuscope/strbuf.h"
#include "report.h"

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
	"      --max-memory SIZE  analyse at most what fits in SIZE (4G, 512M): a larger\n"
	"                         trace is analysed in a window of its middle (default:\n"
	"                         a quarter of the memory, at most 4G)\n"
	"      --window START:END analyse only the events that start in this window,\n"
	"                         seconds from the trace start (either may be left out)\n"
	"      --fail-on LEVEL    exit 1 when a finding of LEVEL or worse exists\n"
	"                         (info, warning or error; default: never)\n"
	"      --source-dir DIR   the program's Python files are under DIR, their recorded\n"
	"                         paths less leading directories (default: at those paths,\n"
	"                         else under the current directory); the rules read the\n"
	"                         lines that made a tensor copied to the GPU\n"
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

static int print_json(const struct report_view *v)
{
	cJSON *doc = report_json(v);
	int rc;

	if (!doc) {
		cli_error("out of memory");
		return CLI_EXIT_USAGE;
	}
	rc = cli_json_fprint(v->out, doc);
	cJSON_Delete(doc);
	return rc;
}

/* ---- HTML (src/report/html.c) ---- */

/* The JSON report with the figures of the charts, written as one page. */
static int print_html(const struct report_view *v)
{
	cJSON *doc = report_json(v), *charts;
	cs_error err = {0, ""};
	int rc = 0;

	if (!doc) {
		cli_error("out of memory");
		return CLI_EXIT_USAGE;
	}
	charts = report_charts(v, &err);
	if (!charts || !cJSON_AddItemToObject(doc, "charts", charts)) {
		cJSON_Delete(charts);
		cli_error("cannot chart '%s': %s", v->path, err.msg[0] ? err.msg : "out of memory");
		rc = CLI_EXIT_USAGE;
	} else if (report_html_write(v->out, doc)) {
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
	[REPORT_TEXT] = {"text", report_text},
	[REPORT_JSON] = {"json", print_json},
	[REPORT_MARKDOWN] = {"markdown", report_markdown},
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
			cs_json_add_string(o, "id", (*r)->id);
			cs_json_add_string(o, "summary", (*r)->summary);
			cs_json_add_string(o, "source", (*r)->source);
		}
		rc = cli_json_print(doc);
		cJSON_Delete(doc);
		return rc;
	}
	if (format == REPORT_MARKDOWN) {
		printf("| Rule | Source | Summary |\n|---|---|---|\n");
		for (const cs_analyzer *const *r = cs_analyzers; *r; r++) {
			printf("| ");
			cs_md_code(stdout, (*r)->id);
			printf(" | ");
			cs_md_text(stdout, (*r)->source);
			printf(" | ");
			cs_md_text(stdout, (*r)->summary);
			printf(" |\n");
		}
		return 0;
	}
	{
		static const struct cs_column cols[] = {
			{"Rule", CS_ALIGN_LEFT, 0},
			{"Source", CS_ALIGN_LEFT, 0},
			{"Summary", CS_ALIGN_LEFT, 1},
		};
		struct cs_table table;

		cs_table_init(&table, cols, 3);
		for (const cs_analyzer *const *r = cs_analyzers; *r; r++) {
			const char *row[] = {(*r)->id, (*r)->source, (*r)->summary};

			cs_table_add_row(&table, row);
		}
		cs_table_print(&table, stdout, 0, cli_output_width(-1));
		cs_table_free(&table);
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
	FILE *fp; /* the renderers write here (a stream of its own on a copy of file.fd) */
};

/*
 * Open the report's file beside path: 0, or CLI_EXIT_USAGE after one line saying why (path
 * exists without --force, is the trace itself, or cannot be written).
 */
static int output_begin(struct report_output *o, const char *path, const char *trace, int force)
{
	int fd;

	o->fp = NULL;
	if (cli_output_check(path, force, 0))
		return CLI_EXIT_USAGE;
	if (cs_same_file(path, trace)) {
		cli_error("cannot write the report over its trace '%s'", path);
		return CLI_EXIT_USAGE;
	}
	if (cs_outfile_open(&o->file, path, force) < 0) {
		cli_error("cannot write '%s': %s", path, cs_file_strerror(errno));
		return CLI_EXIT_USAGE;
	}
	fd = dup(o->file.fd);
	o->fp = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!o->fp) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		cs_outfile_abort(&o->file);
		cli_error("cannot write '%s': %s", path, strerror(e));
		return CLI_EXIT_USAGE;
	}
	return 0;
}

/*
 * Close the report's stream and put the file in place, or remove it when the report failed (rc
 * 2) or could not be written whole. Returns rc, or CLI_EXIT_USAGE after the error.
 */
static int output_end(struct report_output *o, const char *path, int rc)
{
	int failed = fflush(o->fp) != 0 || ferror(o->fp), e = errno;

	failed |= fclose(o->fp) != 0;
	o->fp = NULL;
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
	OPT_SOURCE_DIR,
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
		{"max-memory", required_argument, NULL, CLI_OPT_MAX_MEMORY},
		{"window", required_argument, NULL, CLI_OPT_WINDOW},
		{"fail-on", required_argument, NULL, OPT_FAIL_ON},
		{"source-dir", required_argument, NULL, OPT_SOURCE_DIR},
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
	const char *path, *step_range = NULL, *source_dir = NULL;
	cs_trace *t = NULL;
	cs_analysis a;
	const cs_steps *steps;
	cs_report rep;
	cs_report_processes procs;
	cs_step_opts so;
	cs_error err = {0, ""};
	cs_stopwatch w;
	cs_progress *progress;
	struct report_view view;
	struct report_idle_cache idle = {NULL, 0};
	cs_unended *unended = NULL;
	cs_load_opts lo = {0, CS_TS_UNKNOWN, CS_TS_UNKNOWN};
	cs_trace_summary sum = {0};

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
		case OPT_SOURCE_DIR: {
			struct stat st;

			if (stat(optarg, &st) != 0 || !S_ISDIR(st.st_mode))
				return cli_usage_error(
					argv[0], "--source-dir: '%s' is not a directory", optarg);
			source_dir = optarg;
			break;
		}
		case OPT_WARMUP:
			if (cli_parse_int(argv[0], "--warmup", optarg, 0, INT32_MAX, &warmup))
				return CLI_EXIT_USAGE;
			break;
		case 'p':
			if (cli_parse_int(argv[0], "--pid", optarg, 1, UINT32_MAX, &pid))
				return CLI_EXIT_USAGE;
			break;
		case CLI_OPT_MAX_MEMORY:
		case CLI_OPT_WINDOW:
			if (cli_load_option(argv[0], c, optarg, &lo))
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
	cs_stopwatch_start(&w);
	if (!lo.max_bytes)
		lo.max_bytes = cs_analysis_default_max_bytes();
	rc = cs_analysis_load_opts(t, &a, &lo, &err);
	cs_timings_add("reading the trace", &w);
	if (rc < 0) {
		cs_progress_end(progress);
		if (rc == CS_ERR_INVALID)
			rc = cli_usage_error(argv[0], "%s", err.msg);
		else
			rc = cli_trace_error(path, rc, &err);
		cs_trace_close(t);
		return rc;
	}
	a.source_dir = source_dir;
	cs_progress_phase(progress, "finding the steps and running the rules");
	so.step_range = step_range;
	so.warmup = (int)warmup;
	so.pid = (uint32_t)pid;
	so.windows = 1; /* a run without steps gets windows for the rules (docs/steps.md) */
	memset(&rep, 0, sizeof(rep));
	memset(&procs, 0, sizeof(procs));
	rc = cs_report_run_processes(&a, &so, selected, &procs, &rep, &err);
	cs_stopwatch_start(&w);
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
	for (int32_t i = 0; i < procs.n; i++)
		cli_note_warmup(warmup, path, procs.v[i].steps.pid, procs.v[i].steps.n,
				procs.v[i].steps.warmup);

	memset(&view, 0, sizeof(view));
	rc = cs_trace_unended_pids(t, &unended, &view.nunended, &err);
	if (rc < 0) {
		rc = cli_trace_error(path, rc, &err);
		goto out;
	}
	/* a window has not every event: the last of a process is the trace's (its end, when the
	 * trace has one process), or the reader's scan */
	if (a.window.on && view.nunended > 0 && cs_trace_get_summary(t, &sum, &err) == 0 &&
	    sum.processes > 1) {
		free(unended);
		unended = NULL;
		rc = cs_trace_unended(t, &unended, &view.nunended, &err);
		if (rc < 0) {
			rc = cli_trace_error(path, rc, &err);
			goto out;
		}
	}
	for (int i = 0; i < view.nunended; i++)
		unended[i].last = !a.window.on	      ? cs_analysis_last_time(&a, unended[i].pid)
				  : sum.processes > 1 ? unended[i].last
						      : a.window.trace_end;
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
	view.idle = &idle;
	view.out = stdout;

	if (output && (rc = output_begin(&out, output, path, force)) != 0)
		goto out;
	if (output)
		view.out = out.fp;
	rc = report_formats[format].print(&view);
	cs_timings_add("rendering", &w);
	if (rc == 0 && fail_on > 0)
		for (int32_t i = 0; i < rep.n; i++)
			if (rep.v[i]->severity >= fail_on)
				rc = CLI_EXIT_FINDINGS;
	rc = output ? output_end(&out, output, rc) : cli_finish_output(rc);
out:
	report_idle_cache_free(&idle);
	free(unended);
	cs_report_free(&rep);
	cs_report_processes_free(&procs);
	cs_analysis_free(&a);
	cs_trace_close(t);
	cs_timings_print();
	return rc;
}
