/*
 * cmd_export.c - `cuscope export`: write a trace in Chrome's trace event format (JSON, for
 * chrome://tracing, ui.perfetto.dev, Holistic Trace Analysis, TensorBoard) or Perfetto's protobuf
 * format, the whole trace or a time window of it (--time-range, --steps).
 *
 * The work is in src/export/; this file parses the options, finds the window and prints the one
 * summary line.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cuscope/analyze.h"
#include "cuscope/export.h"
#include "cuscope/files.h"
#include "cuscope/progress.h"

static const char export_usage[] =
	"usage: cuscope export [--format chrome|perfetto|nsys-sqlite] [-o OUT] [--time-range "
	"START:END]\n"
	"                      [--steps A-B] [--step-range PATTERN] [--pid PID | --per-rank]\n"
	"                      [--no-profiler-steps] [--max-memory SIZE] [--force] [--quiet] FILE\n"
	"\n"
	"Write the trace for a trace viewer: Chrome's trace event format (JSON: chrome://tracing,\n"
	"ui.perfetto.dev, Holistic Trace Analysis, TensorBoard) or Perfetto's protobuf format\n"
	"(ui.perfetto.dev), or a copy of the trace with the table and column names of Nsight\n"
	"Systems' SQLite export added (nsys-sqlite: SQL written for nsys runs on it). Kernels, "
	"copies and memsets on a process per GPU with a thread per\n"
	"stream; API calls, waits and NVTX ranges on the host threads; arrows from each launch\n"
	"to its GPU work; device memory in use as a counter and as [memory] events; training\n"
	"steps as ProfilerStep#N slices. The Chrome JSON follows the PyTorch profiler's (rank,\n"
	"steps, NVTX as user_annotation, deviceProperties), so that Holistic Trace Analysis and\n"
	"TensorBoard's profiler plugin read it.\n"
	"\n"
	"Options:\n"
	"  -f, --format FORMAT      chrome (default), perfetto or nsys-sqlite (the whole trace:\n"
	"                           no --time-range, --steps, --pid, --per-rank or -o -)\n"
	"  -o, --output OUT         the file to write; '-' for standard output; a name ending in\n"
	"                           .gz is compressed with gzip (default: FILE's name without .db\n"
	"                           and with .json or .pftrace, in the current directory)\n"
	"  -t, --time-range START:END\n"
	"                           only events overlapping this window, in seconds since the\n"
	"                           trace start or with a unit: 1.5:2, 1.5s:2s, 100ms:250ms,\n"
	"                           20us:90us; either side may be left empty\n"
	"  -s, --steps A-B          only training steps A to B (0-based; 'A' alone: one step)\n"
	"      --step-range PATTERN the NVTX ranges that are steps (fnmatch pattern), for --steps\n"
	"                           and the ProfilerStep#N slices\n"
	"  -p, --pid PID            only events of process PID (one the trace has)\n"
	"      --no-profiler-steps  no ProfilerStep#N slices (finding the steps loads the trace\n"
	"                           as report does: about 110 MB a million rows)\n"
	"      --max-memory SIZE    find the steps within SIZE (4G, 512M): a larger trace gets\n"
	"                           the slices of its --time-range, or of its middle, numbered\n"
	"                           from there, and --steps is refused (default: a quarter of\n"
	"                           the memory, at most 4G)\n"
	"      --per-rank           one file per rank, as HTA reads them: OUT's name with\n"
	"                           .rankN before its extension (run.rank0.json, run.rank1.json);\n"
	"                           OUT's directory is made when missing\n"
	"      --force              replace OUT when it exists\n"
	"  -q, --quiet              no summary line on standard error\n"
	"  -h, --help               show this help\n";

enum {
	OPT_STEP_RANGE = 256,
	OPT_PER_RANK,
	OPT_NO_PROFILER_STEPS,
	OPT_MAX_MEMORY,
};

/* Browsers do not open a JSON trace much larger than this (a string of that size) */
#define JSON_BROWSER_LIMIT (INT64_C(1) << 30)

/* "A-B" or "A": step indices. */
static int parse_steps(const char *arg, int64_t *a, int64_t *b)
{
	char *end;

	errno = 0;
	*a = strtoll(arg, &end, 10);
	if (errno || end == arg || *a < 0 || arg[0] == '+' || arg[0] == '-')
		return -1;
	if (!*end) {
		*b = *a;
		return 0;
	}
	if (*end != '-' || !end[1] || end[1] == '+' || end[1] == '-')
		return -1;
	arg = end + 1;
	*b = strtoll(arg, &end, 10);
	if (errno || *end || *b < *a)
		return -1;
	return 0;
}

/* The window of steps a..b: from the first host or GPU start to the last end. The steps are
 * numbered over the whole trace: one whose model needs more than max_bytes is refused. */
static int steps_window(cs_trace *t, const char *path, const char *step_range, int64_t a, int64_t b,
			int64_t max_bytes, int64_t *t0, int64_t *t1)
{
	cs_analysis an;
	cs_steps steps;
	cs_step_opts so = {step_range, -1, 0, 0};
	cs_load_opts lo = {max_bytes, CS_TS_UNKNOWN, CS_TS_UNKNOWN};
	cs_error err = {0, ""};
	int rc;

	memset(&an, 0, sizeof(an));
	memset(&steps, 0, sizeof(steps));
	rc = cs_analysis_load_opts(t, &an, &lo, &err);
	if (!rc && an.window.on) {
		char need[CS_FMT_MAX], limit[CS_FMT_MAX];

		cli_error("cannot number the steps of '%s' within --max-memory %s: the whole trace "
			  "would need %s; export a --time-range, or give a larger --max-memory",
			  path, cs_fmt_bytes(limit, sizeof(limit), max_bytes),
			  cs_fmt_bytes(need, sizeof(need), an.window.trace_bytes));
		cs_analysis_free(&an);
		return CLI_EXIT_USAGE;
	}
	if (!rc)
		rc = cs_steps_detect(&an, &so, &steps, &err);
	if (rc < 0) {
		cs_steps_free(&steps);
		cs_analysis_free(&an);
		return cli_trace_error(path, rc, &err);
	}
	if (b >= steps.n) {
		cli_error("cannot export steps %" PRId64 "-%" PRId64 " of '%s': it has %d %s (%s)",
			  a, b, path, steps.n, steps.n == 1 ? "step" : "steps", steps.detail);
		rc = CLI_EXIT_USAGE;
	} else {
		const cs_step *s = &steps.v[a], *e = &steps.v[b];

		*t0 = s->start;
		if (s->gpu_start != CS_TS_UNKNOWN && s->gpu_start < *t0)
			*t0 = s->gpu_start;
		*t1 = e->end;
		if (e->gpu_end != CS_TS_UNKNOWN && e->gpu_end > *t1)
			*t1 = e->gpu_end;
		(*t1)++; /* the window is half-open: keep what starts at the very end */
		rc = 0;
	}
	cs_steps_free(&steps);
	cs_analysis_free(&an);
	return rc;
}

/* FILE's name without its directory and ".db", with ext, in the current directory. */
static char *default_output(const char *path, const char *ext)
{
	const char *base = strrchr(path, '/');
	size_t n;
	char *out;

	base = base ? base + 1 : path;
	n = strlen(base);
	if (n > 3 && !strcmp(base + n - 3, ".db"))
		n -= 3;
	out = malloc(n + strlen(ext) + 1);
	if (!out)
		return NULL;
	memcpy(out, base, n);
	strcpy(out + n, ext);
	return out;
}

/* name with ".rankN" before its extension (".json", ".json.gz", ".pftrace"), or at its end. */
/* --per-rank: the directory of OUT (traces/ of traces/job.json), made with its missing parents,
 * as HTA reads a directory of files. The directories made are kept in made[] (innermost last), so
 * that a failed export can remove them again. 0, or -1 after the error line. */
#define MAX_MADE_DIRS 32
static int make_output_dir(const char *output, char *made[MAX_MADE_DIRS], int *nmade)
{
	char *dir = strdup(output), *slash;
	struct stat sb;

	*nmade = 0;
	if (!dir) {
		cli_error("out of memory");
		return -1;
	}
	slash = strrchr(dir, '/');
	if (!slash || slash == dir) {
		free(dir);
		return 0;
	}
	*slash = '\0';
	for (char *p = dir + 1;; p++) {
		char c = *p;

		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (stat(dir, &sb) != 0) {
			if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
				cli_error("cannot create the directory '%s': %s", dir,
					  strerror(errno));
				free(dir);
				return -1;
			}
			if (*nmade < MAX_MADE_DIRS)
				made[(*nmade)++] = strdup(dir);
		} else if (!S_ISDIR(sb.st_mode)) {
			cli_error("cannot write into '%s': not a directory", dir);
			free(dir);
			return -1;
		}
		*p = c;
		if (!c)
			break;
	}
	free(dir);
	return 0;
}

static char *rank_output(const char *name, int32_t rank)
{
	const char *base = strrchr(name, '/'), *dot, *end = name + strlen(name);
	char tag[24];
	size_t n, t;
	char *out;

	base = base ? base + 1 : name;
	if (end - base > 3 && !strcmp(end - 3, ".gz"))
		end -= 3;
	for (dot = end; dot > base && dot[-1] != '.'; dot--)
		;
	dot = dot > base + 1 ? dot - 1 : name + strlen(name);
	snprintf(tag, sizeof(tag), ".rank%d", rank);
	n = strlen(name);
	t = strlen(tag);
	out = malloc(n + t + 1);
	if (!out)
		return NULL;
	memcpy(out, name, (size_t)(dot - name));
	memcpy(out + (dot - name), tag, t);
	strcpy(out + (dot - name) + t, dot);
	return out;
}

struct ranked {
	uint32_t pid[4096];
	int32_t rank[4096];
	int n;
};

static int add_ranked(const cs_process *p, void *arg)
{
	struct ranked *r = arg;

	if (p->rank == CS_ID_NONE || r->n == 4096)
		return 0;
	r->pid[r->n] = p->pid;
	r->rank[r->n++] = p->rank;
	return 0;
}

/* A warning before an export that a browser will not open, naming the ways around it. */
static void warn_size(cs_trace *t, const cs_export_opts *o, const char *output)
{
	cs_error err = {0, ""};
	char size[CS_FMT_MAX];
	int64_t bytes;

	if (o->format != CS_EXPORT_CHROME || cs_export_estimate(t, o, &bytes, &err) ||
	    bytes <= JSON_BROWSER_LIMIT)
		return;
	fprintf(stderr,
		"cuscope: warning: '%s' will be about %s of JSON, more than a browser opens (about "
		"1 GiB); export some steps (--steps A-B), a window (--time-range) or --format "
		"perfetto\n",
		output, cs_fmt_bytes(size, sizeof(size), bytes));
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int cmd_export(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"format", required_argument, NULL, 'f'},
		{"output", required_argument, NULL, 'o'},
		{"time-range", required_argument, NULL, 't'},
		{"steps", required_argument, NULL, 's'},
		{"step-range", required_argument, NULL, OPT_STEP_RANGE},
		{"pid", required_argument, NULL, 'p'},
		{"per-rank", no_argument, NULL, OPT_PER_RANK},
		{"no-profiler-steps", no_argument, NULL, OPT_NO_PROFILER_STEPS},
		{"max-memory", required_argument, NULL, OPT_MAX_MEMORY},
		{"force", no_argument, NULL, 'F'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	cs_export_opts opts;
	cs_export_stats st;
	cs_error err = {0, ""};
	const char *path, *output = NULL, *time_range = NULL, *steps = NULL, *step_range = NULL;
	char *out_alloc = NULL, size[CS_FMT_MAX], events[CS_FMT_MAX], rows[CS_FMT_MAX];
	int64_t step_a = 0, step_b = 0;
	size_t n;
	int c, rc, quiet = 0, force = 0, fmt, per_rank = 0;
	struct ranked *ranks = NULL;
	cs_export_steps *found_steps = NULL;
	char **outs = NULL;
	int nouts = 0;
	cs_trace *t;
	double t_start;
	char *made[MAX_MADE_DIRS];
	int nmade = 0;

	cs_export_opts_init(&opts);
	opts.max_bytes = cs_analysis_default_max_bytes();
	while ((c = cli_getopt(argc, argv, "f:o:t:s:p:qh", longopts)) != -1) {
		switch (c) {
		case 'f':
			fmt = cs_export_format_parse(optarg);
			if (fmt < 0)
				return cli_usage_error(argv[0],
						       "invalid value '%s' for --format (chrome, "
						       "perfetto or nsys-sqlite)",
						       optarg);
			opts.format = (enum cs_export_format)fmt;
			break;
		case 'o':
			output = optarg;
			break;
		case 't':
			time_range = optarg;
			if (cli_parse_time_range(optarg, &opts.t0, &opts.t1))
				return cli_usage_error(argv[0],
						       "invalid value '%s' for --time-range "
						       "(START:END, e.g. 1.5s:2s)",
						       optarg);
			break;
		case 's':
			steps = optarg;
			if (parse_steps(optarg, &step_a, &step_b))
				return cli_usage_error(
					argv[0], "invalid value '%s' for --steps (A-B, e.g. 3-5)",
					optarg);
			break;
		case OPT_STEP_RANGE:
			step_range = optarg;
			break;
		case 'p':
			if (cli_parse_int(argv[0], "--pid", optarg, 0, UINT32_MAX, &opts.pid))
				return CLI_EXIT_USAGE;
			break;
		case OPT_PER_RANK:
			per_rank = 1;
			break;
		case OPT_NO_PROFILER_STEPS:
			opts.profiler_steps = 0;
			break;
		case OPT_MAX_MEMORY:
			if (cli_parse_max_memory(argv[0], optarg, &opts.max_bytes))
				return CLI_EXIT_USAGE;
			break;
		case 'F':
			force = 1;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			fputs(export_usage, stdout);
			return cli_finish_output(CLI_EXIT_OK);
		default:
			return CLI_EXIT_USAGE;
		}
	}
	if (time_range && steps)
		return cli_usage_error(argv[0], "--time-range and --steps cannot be used together");
	if (opts.format == CS_EXPORT_NSYS_SQLITE &&
	    (time_range || steps || opts.pid >= 0 || per_rank || (output && !strcmp(output, "-"))))
		return cli_usage_error(argv[0],
				       "--format nsys-sqlite copies the whole trace into a "
				       "file: no --time-range, --steps, --pid, --per-rank "
				       "or -o -");
	if (per_rank && opts.pid >= 0)
		return cli_usage_error(argv[0], "--per-rank and --pid cannot be used together");
	if (per_rank && output && !strcmp(output, "-"))
		return cli_usage_error(argv[0], "--per-rank writes files: give -o a file name");
	opts.step_range = step_range;
	path = cli_single_file(argv[0], argc, argv);
	if (!path)
		return CLI_EXIT_USAGE;
	if (output && !output[0])
		return cli_usage_error(argv[0], "empty output name");
	/* one thread at a time: the exporter's reader thread uses it alone between its start and
	 * its join (src/export/export.c, export_events) */
	rc = cli_open_trace(path, &t, CS_TRACE_ONE_THREAD);
	if (rc)
		return rc;
	rc = cli_check_pid(t, path, opts.pid);
	if (rc) {
		cs_trace_close(t);
		return rc;
	}
	if (steps) {
		rc = steps_window(t, path, step_range, step_a, step_b, opts.max_bytes, &opts.t0,
				  &opts.t1);
		if (rc) {
			cs_trace_close(t);
			return rc;
		}
	}
	if (!output) {
		out_alloc = default_output(path, opts.format == CS_EXPORT_PERFETTO	? ".pftrace"
						 : opts.format == CS_EXPORT_NSYS_SQLITE ? ".sqlite"
											: ".json");
		if (!out_alloc) {
			cs_trace_close(t);
			cli_error("out of memory");
			return CLI_EXIT_USAGE;
		}
		output = out_alloc;
	}
	/* the files to write: OUT, or one per rank */
	ranks = calloc(1, sizeof(*ranks));
	outs = calloc(4097, sizeof(*outs));
	if (!ranks || !outs) {
		cli_error("out of memory");
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if (per_rank) {
		cs_error perr = {0, ""};

		rc = cs_trace_each_process(t, add_ranked, ranks, &perr);
		if (rc) {
			rc = cli_trace_error(path, rc, &perr);
			goto out;
		}
		if (!ranks->n) { /* no ranks: the whole trace as rank 0, as without --per-rank */
			ranks->pid[0] = 0;
			ranks->rank[0] = 0;
			ranks->n = 1;
		}
		for (nouts = 0; nouts < ranks->n; nouts++) {
			outs[nouts] = rank_output(output, ranks->rank[nouts]);
			if (!outs[nouts]) {
				cli_error("out of memory");
				rc = CLI_EXIT_USAGE;
				goto out;
			}
		}
	} else {
		outs[nouts++] = strdup(output);
		if (!outs[0]) {
			cli_error("out of memory");
			rc = CLI_EXIT_USAGE;
			goto out;
		}
	}
	for (int i = 0; i < nouts; i++) {
		if (cs_same_file(outs[i], path)) {
			cli_error("'%s' is the trace being exported; write to another file",
				  outs[i]);
			rc = CLI_EXIT_USAGE;
			goto out;
		}
		if (cli_output_check(outs[i], force, opts.format == CS_EXPORT_NSYS_SQLITE)) {
			rc = CLI_EXIT_USAGE;
			goto out;
		}
	}
	n = strlen(output);
	opts.gzip = n > 3 && !strcmp(output + n - 3, ".gz");
	if (opts.gzip && opts.format == CS_EXPORT_NSYS_SQLITE) {
		cli_error("--format nsys-sqlite writes an SQLite file, not gzip: name it .sqlite");
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if (nouts > 1 && opts.profiler_steps) { /* the steps of every rank, found once */
		rc = cs_export_steps_find(t, step_range, opts.max_bytes, &found_steps, &err);
		if (rc) {
			rc = cli_trace_error(path, rc, &err);
			goto out;
		}
		opts.steps = found_steps;
	}
	if (per_rank && make_output_dir(output, made, &nmade)) {
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	for (int i = 0; i < nouts; i++) {
		cs_export_opts o = opts;

		if (per_rank && ranks->pid[i])
			o.pid = ranks->pid[i];
		if (i == 0 && !per_rank && opts.pid < 0 && opts.format == CS_EXPORT_CHROME) {
			struct ranked *r = calloc(1, sizeof(*r));
			cs_error perr = {0, ""};

			if (r && !cs_trace_each_process(t, add_ranked, r, &perr) && r->n > 1)
				fprintf(stderr,
					"cuscope: note: '%s' holds %d ranks; Holistic Trace "
					"Analysis "
					"reads one rank per file: export with --per-rank\n",
					outs[i], r->n);
			free(r);
		}
		warn_size(t, &o, outs[i]);
		t_start = now_s();
		o.progress = cs_progress_start(nouts > 1 ? "exporting a rank" : "exporting");
		rc = cs_export(t, &o, outs[i], &st, &err);
		cs_progress_end(o.progress);
		if (rc < 0) {
			if (!strncmp(err.msg, "cannot ", 7))
				cli_error("%s", err.msg);
			else
				cli_error("cannot export '%s': %s", path,
					  err.msg[0] ? err.msg : cs_err_str(rc));
			/* no half of a set of files: the ones written before go too */
			for (int j = 0; j < i; j++)
				unlink(outs[j]);
			for (int j = nmade - 1; j >= 0; j--) /* and the directories made for them */
				rmdir(made[j]);
			rc = CLI_EXIT_USAGE;
			goto out;
		}
		if (!quiet && o.format == CS_EXPORT_NSYS_SQLITE)
			fprintf(stderr,
				"cuscope: wrote '%s' (%s, the trace with Nsight Systems' names) in "
				"%.2f s\n",
				outs[i], cs_fmt_bytes(size, sizeof(size), st.bytes),
				now_s() - t_start);
		else if (!quiet && strcmp(outs[i], "-"))
			fprintf(stderr,
				"cuscope: wrote '%s' (%s, %s events from %s trace rows) in %.2f "
				"s\n",
				outs[i], cs_fmt_bytes(size, sizeof(size), st.bytes),
				cs_fmt_count(events, sizeof(events), st.events),
				cs_fmt_count(rows, sizeof(rows), st.rows), now_s() - t_start);
		if (!quiet && st.steps_window[0] && (!per_rank || i == 0))
			fprintf(stderr,
				"cuscope: note: the ProfilerStep#N slices are those of %s (numbered "
				"from there)\n",
				st.steps_window);
	}
	rc = CLI_EXIT_OK;
out:
	cs_trace_close(t);
	cs_export_steps_free(found_steps);
	for (int i = 0; i < nouts; i++)
		free(outs[i]);
	for (int i = 0; i < nmade; i++)
		free(made[i]);
	free(outs);
	free(ranks);
	free(out_alloc);
	return rc;
}
