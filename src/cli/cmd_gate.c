/*
 * cmd_gate.c - `cuscope gate --baseline BASE [--baseline BASE...] NEW`: the CI performance
 * regression gate. Compares NEW with the baselines (traces, or directories of them) as `cuscope
 * diff` does and judges each check (a metric, or a kernel with enough GPU time) against its
 * threshold and, for timing checks, its confidence: exit 1 when one regressed, 0 otherwise, 2 on
 * bad input. Writes a summary on stdout (a table that fits the terminal, or 120 columns in a pipe;
 * FAIL in colour on a terminal), and on request JUnit XML (--junit) and markdown for a CI comment
 * (--markdown).
 *
 * Thresholds, the config file and how to use this in a CI job: docs/ci.md.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cuscope/analyze.h"
#include "cuscope/demangle.h"
#include "cuscope/files.h"
#include "cuscope/gate.h"
#include "report.h"
#include "cuscope/grow.h"

static const char gate_usage[] =
	"usage: cuscope gate --baseline BASE [--baseline BASE...] [OPTIONS] NEW\n"
	"       cuscope gate --list-metrics [--config FILE]\n"
	"\n"
	"Fail when NEW regressed against the baseline traces: step time, GPU busy share, kernel\n"
	"time (all, and each kernel with enough GPU time), memcpys, pageable copies, launches,\n"
	"host waits, device-to-host syncs, device allocations, peak device memory, new findings.\n"
	"Values are per training step. Timing changes fail only when significant (per-step "
	"samples,\n"
	"and the run-to-run spread of several baselines) and past relative and absolute floors;\n"
	"counts fail on any increase (docs/ci.md).\n"
	"\n"
	"Options:\n"
	"  -b, --baseline PATH    a baseline trace, or a directory of them (*.db); repeat it for\n"
	"                         several runs of the baseline (required)\n"
	"  -c, --config FILE      thresholds per metric and per kernel (JSON, docs/ci.md)\n"
	"      --confidence P     confidence a timing change needs to fail (default 99%)\n"
	"      --junit FILE       write JUnit XML: one testcase per check\n"
	"      --markdown FILE    write a markdown summary for a CI comment ('-': stdout,\n"
	"                         instead of the text summary)\n"
	"      --force            replace the --junit and --markdown files when they exist\n"
	"      --fold             fold kernel names before matching them (docs/commands/diff.md)\n"
	"      --step-range PAT   steps are the NVTX ranges whose text matches PAT (all traces)\n"
	"      --warmup N         the first N steps of each trace are warm-up\n"
	"      --rank N|slowest   compare rank N of every trace, or in each trace the rank with\n"
	"                         the longest median step (default: the process with the most\n"
	"                         kernels)\n"
	"      --max-memory SIZE  analyse at most what fits in SIZE (4G, 512M) of each trace:\n"
	"                         a larger one is analysed in a window of its middle (default:\n"
	"                         a quarter of the memory, at most 4G)\n"
	"  -q, --quiet            no summary on stdout\n"
	"      --no-color         no colour (also off with NO_COLOR set, or not on a terminal)\n"
	"      --list-metrics     list the metrics and their thresholds, then exit\n"
	"  -w, --width N          fit text in N columns (default: the terminal's, 120 in a pipe;\n"
	"                         0 = no limit)\n"
	"  -h, --help             show this help\n"
	"\n"
	"Exit status: 0 when no check regressed, 1 when one did, 2 on bad usage, an unreadable\n"
	"trace or config, or traces whose steps cannot be compared, 3 when none regressed but\n"
	"a wall check fails as recorded on a host that the host-speed probes of 'cuscope record'\n"
	"find slower, which explains it (inconclusive: the host was slower).\n";

/* Text width in a pipe or a file: CI logs are read in a browser. */
#define GATE_PIPE_WIDTH 120

static int list_metrics(const cs_gate_config *c)
{
	static const struct cs_column cols[] = {
		{"Metric", CS_ALIGN_LEFT, 0},
		{"Kind", CS_ALIGN_LEFT, 0},
		{"Threshold", CS_ALIGN_LEFT, 0},
		{"Description", CS_ALIGN_LEFT, 1},
	};
	struct cs_table table;

	cs_table_init(&table, cols, 4);
	for (int m = 0; m < CS_GM_COUNT; m++) {
		const cs_metric_def *def = cs_metric_get(m);
		char th[128];
		const char *row[] = {def->id, cs_metric_kind_name(def->kind), th, def->label};

		cs_threshold_format(th, sizeof(th), m, &c->t[m]);
		if (m == CS_GM_KERNEL_TIME && c->t[m].gate && c->t[m].min_share > 0)
			snprintf(th + strlen(th), sizeof(th) - strlen(th),
				 ", kernels with >= %g%% of GPU time", 100 * c->t[m].min_share);
		cs_table_add_row(&table, row);
	}
	cs_table_print(&table, stdout, 0, cli_output_width(-1));
	cs_table_free(&table);
	printf("\nwall and GPU metrics also need %g%% confidence (Yuen's test on the per-step "
	       "samples;\nwith several baselines, beyond their run-to-run spread); a baseline "
	       "whose GPU is\nbusy less than %g%% of the step is host-bound: against it alone, "
	       "wall metrics fail\nonly past %g%%, with new's host speed (its kernel launch calls' "
	       "median over the\nbaseline's) taken out (docs/ci.md)\n",
	       100 * c->confidence, 100 * c->host_bound, 100 * c->host_floor);
	for (int32_t i = 0; i < c->nkernels; i++) {
		char th[128];

		if (i == 0)
			printf("\nKernel rules (first match wins):\n");
		cs_threshold_format(th, sizeof(th), CS_GM_KERNEL_TIME, &c->kernels[i].t);
		printf("  %s  %s\n", c->kernels[i].pattern, th);
	}
	return 0;
}

/* ---- writing the reports ---- */

/*
 * Write a report to path ("-": stdout): under a temporary name renamed into place at the end, so a
 * failed write leaves the file that was there intact. Prints the error and returns CLI_EXIT_USAGE
 * on failure.
 */
static int write_report(const char *path, const cs_diff *d, int junit, int force)
{
	cs_outfile out;
	FILE *f = stdout;
	int rc;

	if (strcmp(path, "-")) {
		if (cs_outfile_open(&out, path, force)) {
			if (errno == EEXIST)
				cli_error("'%s' exists; use --force to replace it", path);
			else
				cli_error("cannot write '%s': %s", path, cs_file_strerror(errno));
			return CLI_EXIT_USAGE;
		}
		f = fdopen(out.fd, "w");
		if (!f) {
			cli_error("cannot write '%s': %s", path, strerror(errno));
			cs_outfile_abort(&out);
			return CLI_EXIT_USAGE;
		}
		out.fd = -1; /* the stream owns it now */
	}
	errno = 0;
	rc = junit ? report_gate_junit(f, d) : report_diff_markdown(f, d, 1, 0);
	if (f != stdout) {
		if (fclose(f) && !rc)
			rc = CS_ERR_IO;
		if (!rc && cs_outfile_commit(&out))
			rc = CS_ERR_IO;
		if (rc) {
			int e = errno ? errno : EIO;

			cs_outfile_abort(&out);
			cli_error("cannot write '%s': %s", path, strerror(e));
			return CLI_EXIT_USAGE;
		}
	}
	return 0;
}

/* An output named like an input (or the same file under another name): one line, and 1. */
static int output_is_input(const char *option, const char *out, const char *const *inputs, int n)
{
	for (int i = 0; i < n; i++)
		if (inputs[i] && cs_same_file(out, inputs[i])) {
			cli_error("%s '%s' is an input; write the report to another file", option,
				  out);
			return 1;
		}
	return 0;
}

/* ---- the baselines ---- */

struct path_list {
	char **v;
	int32_t n;
	size_t cap;
};

static int path_list_add(struct path_list *l, const char *path)
{
	char *p = strdup(path);

	if (!p || cs_grow((void **)&l->v, &l->cap, (size_t)l->n + 1, sizeof(*l->v))) {
		free(p);
		return -1;
	}
	l->v[l->n++] = p;
	return 0;
}

static void path_list_free(struct path_list *l)
{
	for (int32_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int cmp_path(const void *pa, const void *pb)
{
	return strcmp(*(char *const *)pa, *(char *const *)pb);
}

/*
 * Add a --baseline: a trace, or each regular file named *.db in a directory, in name order.
 * Prints the error and returns CLI_EXIT_USAGE when a directory holds none or cannot be read.
 */
static int add_baseline(struct path_list *l, const char *path)
{
	struct stat st;
	DIR *dir;
	struct dirent *e;
	int32_t first = l->n;

	if (stat(path, &st) || !S_ISDIR(st.st_mode)) {
		if (!path_list_add(l, path))
			return 0;
		cli_error("out of memory");
		return CLI_EXIT_USAGE;
	}
	dir = opendir(path);
	if (!dir) {
		cli_error("cannot read baseline directory '%s': %s", path, strerror(errno));
		return CLI_EXIT_USAGE;
	}
	while ((e = readdir(dir))) {
		size_t len = strlen(e->d_name);
		char *full;
		struct stat fs;
		int rc;

		if (e->d_name[0] == '.' || len < 4 || strcmp(e->d_name + len - 3, ".db"))
			continue;
		if (asprintf(&full, "%s/%s", path, e->d_name) < 0) {
			closedir(dir);
			cli_error("out of memory");
			return CLI_EXIT_USAGE;
		}
		rc = stat(full, &fs) == 0 && S_ISREG(fs.st_mode) ? path_list_add(l, full) : 0;
		free(full);
		if (rc) {
			closedir(dir);
			cli_error("out of memory");
			return CLI_EXIT_USAGE;
		}
	}
	closedir(dir);
	if (l->n == first) {
		cli_error("no trace (*.db) in baseline directory '%s'", path);
		return CLI_EXIT_USAGE;
	}
	cs_sort(l->v + first, (size_t)(l->n - first), sizeof(*l->v), cmp_path);
	return 0;
}

/* A confidence: "99%" or 0.99, at least 50% and below 100%. */
static int parse_confidence(const char *cmd, const char *arg, double *out)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(arg, &end);
	if (end != arg && *end == '%' && !end[1])
		x /= 100;
	else if (end == arg || *end)
		x = -1;
	if (errno || !(x >= 0.5 && x < 1))
		return cli_usage_error(cmd,
				       "invalid value '%s' for --confidence (0.5 to 0.999, or "
				       "50%% to 99.9%%)",
				       arg);
	*out = x;
	return 0;
}

/* ---- the command ---- */

enum {
	OPT_JUNIT = 256,
	OPT_FORCE,
	OPT_MARKDOWN,
	OPT_LIST_METRICS,
	OPT_CONFIDENCE,
	OPT_NO_COLOR,
};

int cmd_gate(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"baseline", required_argument, NULL, 'b'},
		{"config", required_argument, NULL, 'c'},
		{"confidence", required_argument, NULL, OPT_CONFIDENCE},
		{"junit", required_argument, NULL, OPT_JUNIT},
		{"markdown", required_argument, NULL, OPT_MARKDOWN},
		{"force", no_argument, NULL, OPT_FORCE},
		{"fold", no_argument, NULL, CLI_OPT_FOLD},
		{"step-range", required_argument, NULL, CLI_OPT_STEP_RANGE},
		{"warmup", required_argument, NULL, CLI_OPT_WARMUP},
		{"rank", required_argument, NULL, CLI_OPT_RANK},
		{"max-memory", required_argument, NULL, CLI_OPT_MAX_MEMORY},
		{"quiet", no_argument, NULL, 'q'},
		{"no-color", no_argument, NULL, OPT_NO_COLOR},
		{"list-metrics", no_argument, NULL, OPT_LIST_METRICS},
		{"width", required_argument, NULL, 'w'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *config = NULL, *junit = NULL, *markdown = NULL, *path;
	struct path_list bases = {0};
	int64_t width = -1;
	int quiet = 0, list = 0, no_color = 0, force = 0, c, rc;
	cs_run_opts o = {NULL, -1, 0, 0, CS_RANK_DEFAULT, 0, cs_analysis_default_max_bytes()};
	cs_gate_config cfg;
	cs_comparison cmp;
	const cs_diff *d = &cmp.d;
	cs_error err = {0, ""};
	const char **inputs = NULL;

	while ((c = cli_getopt(argc, argv, "b:c:qw:h", longopts)) != -1) {
		switch (c) {
		case 'b':
			if (add_baseline(&bases, optarg)) {
				path_list_free(&bases);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'c':
			config = optarg;
			break;
		case OPT_CONFIDENCE:
			if (parse_confidence(argv[0], optarg, &o.confidence)) {
				path_list_free(&bases);
				return CLI_EXIT_USAGE;
			}
			break;
		case OPT_JUNIT:
			junit = optarg;
			break;
		case OPT_MARKDOWN:
			markdown = optarg;
			break;
		case OPT_FORCE:
			force = 1;
			break;
		case 'q':
			quiet = 1;
			break;
		case OPT_NO_COLOR:
			no_color = 1;
			break;
		case OPT_LIST_METRICS:
			list = 1;
			break;
		case 'w':
			if (cli_parse_int(argv[0], "--width", optarg, 0, 100000, &width)) {
				path_list_free(&bases);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'h':
			path_list_free(&bases);
			fputs(gate_usage, stdout);
			return cli_finish_output(CLI_EXIT_OK);
		default: /* --fold, --step-range, --warmup, --rank, --max-memory; '?' */
			if (cli_run_option(argv[0], c, optarg, &o)) {
				path_list_free(&bases);
				return CLI_EXIT_USAGE;
			}
			break;
		}
	}
	if (list) {
		path_list_free(&bases);
		if (optind < argc)
			return cli_usage_error(argv[0],
					       "unexpected argument '%s' after --list-metrics",
					       argv[optind]);
		cs_gate_config_defaults(&cfg);
		if (config && cs_gate_config_load(config, &cfg, &err) < 0) {
			cli_error("%s", err.msg);
			cs_gate_config_free(&cfg);
			return CLI_EXIT_USAGE;
		}
		if (o.confidence > 0)
			cfg.confidence = o.confidence;
		rc = list_metrics(&cfg);
		cs_gate_config_free(&cfg);
		return cli_finish_output(rc);
	}
	rc = CLI_EXIT_USAGE;
	if (bases.n == 0) {
		cli_usage_error(argv[0], "missing --baseline FILE");
		goto out_paths;
	}
	path = cli_single_file(argv[0], argc, argv);
	if (!path)
		goto out_paths;
	inputs = calloc((size_t)bases.n + 2, sizeof(*inputs));
	if (!inputs) {
		cli_error("out of memory");
		goto out_paths;
	}
	for (int32_t i = 0; i < bases.n; i++)
		inputs[i] = bases.v[i];
	inputs[bases.n] = path;
	inputs[bases.n + 1] = config;
	if ((junit && output_is_input("--junit", junit, inputs, bases.n + 2)) ||
	    (markdown && output_is_input("--markdown", markdown, inputs, bases.n + 2)))
		goto out_paths;
	if (junit && markdown && cs_same_file(junit, markdown)) {
		cli_usage_error(argv[0], "--junit and --markdown name the same file");
		goto out_paths;
	}
	/* before the comparison's work: an output there is replaced only with --force */
	if ((junit && cli_output_check(junit, force, 0)) ||
	    (markdown && cli_output_check(markdown, force, 0)))
		goto out_paths;
	if (cs_comparison_load(config, &o, (const char *const *)bases.v, bases.n, path, &cmp,
			       &err) < 0) {
		cli_error("%s", err.msg);
		goto out_paths;
	}
	cli_note_comparison_warmup(o.warmup >= 0 ? o.warmup : cmp.cfg.warmup, &cmp);
	cli_note_comparison_windows(&cmp);
	if (!d->comparable) {
		cli_error("cannot compare '%s' with '%s': %s", path, d->base->path, d->note);
		goto out;
	}
	rc = 0;
	if (junit)
		rc = write_report(junit, d, 1, force);
	if (!rc && markdown)
		rc = write_report(markdown, d, 0, force);
	if (!rc && !quiet && !(markdown && !strcmp(markdown, "-"))) {
		int w = cli_output_width((int)width);

		if (width < 0 && w == 0)
			w = GATE_PIPE_WIDTH;
		report_gate_text(stdout, d, w, cli_use_color(no_color));
	}
	if (!rc)
		rc = d->failed ? CLI_EXIT_FINDINGS : d->inconclusive ? CLI_EXIT_INCONCLUSIVE : CLI_EXIT_OK;
	rc = cli_finish_output(rc);
out:
	cs_comparison_free(&cmp);
out_paths:
	free(inputs);
	path_list_free(&bases);
	return rc;
}
