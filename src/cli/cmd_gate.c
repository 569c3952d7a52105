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
	"  -q, --quiet            no summary on stdout\n"
	"      --no-color         no colour (also off with NO_COLOR set, or not on a terminal)\n"
	"      --list-metrics     list the metrics and their thresholds, then exit\n"
	"  -w, --width N          fit text in N columns (default: the terminal's, 120 in a pipe;\n"
	"                         0 = no limit)\n"
	"  -h, --help             show this help\n"
	"\n"
	"Exit status: 0 when no check regressed, 1 when one did, 2 on bad usage, an unreadable\n"
	"trace or config, or traces whose steps cannot be compared, 3 when none regressed but\n"
	"a wall check fails as recorded and passes at the baseline's host speed, which the\n"
	"host-speed probes of 'cuscope record' say differs (inconclusive: the host was slower).\n";

/* Text width in a pipe or a file: CI logs are read in a browser. */
#define GATE_PIPE_WIDTH 120

/* ---- text ---- */

enum {
	COL_RESULT,
	COL_CHECK,
	COL_KIND,
	COL_BASE,
	COL_NEW,
	COL_CHANGE,
	COL_CONF,
	COL_THRESHOLD,
	NCOLS
};

/* The Check column keeps at least this many characters; columns are dropped to leave it that. */
#define CHECK_MIN 28

/* The cells of a check's row (malloc'd strings; NULL without memory). */
static char **check_cells(const cs_diff *d, const cs_diff_row *r)
{
	const cs_metric_def *def = cs_metric_get(r->metric);
	char name[4096], b[64], n[64], ch[96], th[96], conf[32], *clean;
	const char *row[NCOLS] = {r->worse ? "FAIL" : r->inconclusive ? "INCONCLUSIVE" : "ok",
				  name,
				  r->kernel ? "kernel" : cs_metric_kind_name(def->kind),
				  b,
				  n,
				  ch,
				  conf,
				  th};
	char **cells = calloc(NCOLS, sizeof(*cells));

	if (!cells)
		return NULL;
	/* a kernel's row is its time per step: the name alone, its kind says "kernel" */
	snprintf(name, sizeof(name), "%s",
		 r->kernel ? cs_demangle_short(r->kernel) : cs_diff_row_label(r));
	clean = cs_utf8_repair(name);
	if (clean) {
		snprintf(name, sizeof(name), "%s", clean);
		free(clean);
	}
	cs_fmt_value(b, sizeof(b), def->unit, r->base, 0);
	cs_fmt_value(n, sizeof(n), def->unit, r->new_, 0);
	cs_fmt_value(ch, sizeof(ch), def->unit, r->delta, 1);
	if (r->base != 0 && r->delta != 0 && def->unit != CS_UNIT_SHARE)
		snprintf(ch + strlen(ch), sizeof(ch) - strlen(ch),
			 fabs(r->rel) >= 1 ? " (%+.0f%%)" : " (%+.1f%%)", 100 * r->rel);
	if (r->tested)
		cs_confidence_format(conf, sizeof(conf), r->confidence);
	else
		snprintf(conf, sizeof(conf), "%s",
			 r->t.gate && r->t.rel <= 0 && r->t.abs <= 0 ? "exact" : "-");
	cs_diff_row_threshold(th, sizeof(th), d, r);
	for (int c = 0; c < NCOLS; c++) {
		cells[c] = strdup(row[c]);
		if (!cells[c]) {
			for (int j = 0; j < c; j++)
				free(cells[j]);
			free(cells);
			return NULL;
		}
	}
	return cells;
}

/*
 * The checks as a table that fits width (0: no limit): the failed checks, then the passed ones.
 * When the Check column would get fewer than CHECK_MIN
 * characters, the Kind, Threshold and Confidence columns are left out, in that order.
 */
static void print_checks(const cs_diff *d, int width, int color)
{
	static const struct cs_column all[NCOLS] = {
		[COL_RESULT] = {"Result", CS_ALIGN_LEFT, 0},
		[COL_CHECK] = {"Check", CS_ALIGN_LEFT, 1},
		[COL_KIND] = {"Kind", CS_ALIGN_LEFT, 0},
		[COL_BASE] = {"Base", CS_ALIGN_RIGHT, 0},
		[COL_NEW] = {"New", CS_ALIGN_RIGHT, 0},
		[COL_CHANGE] = {"Change", CS_ALIGN_RIGHT, 0},
		[COL_CONF] = {"Confidence", CS_ALIGN_RIGHT, 0},
		[COL_THRESHOLD] = {"Threshold", CS_ALIGN_LEFT, 0},
	};
	static const int drop_order[] = {COL_KIND, COL_THRESHOLD, COL_CONF};
	struct cs_column cols[NCOLS];
	char ***rows = calloc((size_t)d->nrows + 1, sizeof(*rows));
	size_t widths[NCOLS];
	int show[NCOLS], ncols = 0;
	int32_t n = 0;
	struct cs_table table;

	if (!rows)
		return;
	for (int pass = 0; pass < 2; pass++)
		for (int32_t i = 0; i < d->nrows; i++) {
			const cs_diff_row *r = &d->rows[i];

			if (r->gated && (r->worse || r->inconclusive) == !pass) {
				rows[n] = check_cells(d, r);
				if (rows[n])
					n++;
			}
		}
	for (int c = 0; c < NCOLS; c++) {
		widths[c] = cs_text_width(all[c].header);
		for (int32_t i = 0; i < n; i++) {
			size_t w = cs_text_width(rows[i][c]);

			if (w > widths[c])
				widths[c] = w;
		}
		show[c] = 1;
	}
	for (size_t k = 0; width > 0 && k < sizeof(drop_order) / sizeof(drop_order[0]); k++) {
		size_t others = 1; /* the indent */
		int shown = 0;

		for (int c = 0; c < NCOLS; c++)
			if (show[c] && c != COL_CHECK) {
				others += widths[c];
				shown++;
			}
		others += (size_t)shown * 2;
		if (others + CHECK_MIN <= (size_t)width)
			break;
		show[drop_order[k]] = 0;
	}
	for (int c = 0; c < NCOLS; c++)
		if (show[c])
			cols[ncols++] = all[c];
	cs_table_init(&table, cols, ncols);
	for (int32_t i = 0; i < n; i++) {
		const char *cells[NCOLS];
		int k = 0;

		for (int c = 0; c < NCOLS; c++)
			if (show[c])
				cells[k++] = rows[i][c];
		cs_table_add_row(&table, cells);
		for (int c = 0; c < NCOLS; c++)
			free(rows[i][c]);
		free(rows[i]);
	}
	free(rows);
	{
		static const struct cs_mark fail[] = {{"FAIL", "1;31"}, {"INCONCLUSIVE", "1;33"}};

		cs_table_print_marked(&table, 1, width, color, fail, 2);
	}
	cs_table_free(&table);
}

/*
 * Print prefix and text, the text wrapped at spaces to lines of at most width characters (0: no
 * limit), its continuation lines indented as far as the prefix.
 */
static void print_wrapped(const char *prefix, const char *text, int width)
{
	size_t indent = strlen(prefix), col = indent;
	const char *p = text;

	fputs(prefix, stdout);
	while (*p) {
		const char *end = strchr(p, ' ');
		size_t len = end ? (size_t)(end - p) : strlen(p), w = 0;

		for (size_t i = 0; i < len; i++)
			w += ((unsigned char)p[i] & 0xc0) != 0x80;
		if (width > 0 && col > indent && col + 1 + w > (size_t)width) {
			printf("\n%*s", (int)indent, "");
			col = indent;
		} else if (col > indent) {
			putchar(' ');
			col++;
		}
		fwrite(p, 1, len, stdout);
		col += w;
		p += len;
		while (*p == ' ')
			p++;
	}
	putchar('\n');
}

/* "20.00 ms" and, for several baselines, their run-to-run spread of the step time. */
static void print_base(const cs_diff *d)
{
	char a[64], r[64];
	double v[256], mean = 0;
	int32_t n = d->nbases < 256 ? d->nbases : 256;

	if (d->nbases == 1) {
		cs_run_rank_label(d->base, r, sizeof(r));
		printf("base: %s (%s%sstep time %s)\n", d->base->path, r, r[0] ? ", " : "",
		       cs_fmt_value(a, sizeof(a), CS_UNIT_NS,
				    (double)d->base->step_median / d->base_scale, 0));
		return;
	}
	for (int32_t i = 0; i < n; i++) {
		v[i] = (double)d->bases[i]->step_median / d->base_scales[i];
		mean += v[i];
	}
	mean /= n;
	if (d->base->rank_select == CS_RANK_N)
		snprintf(r, sizeof(r), "rank %d, ", (int)d->base->rank);
	else if (d->base->rank_select == CS_RANK_SLOWEST)
		snprintf(r, sizeof(r), "the slowest rank of each, ");
	else
		r[0] = '\0';
	printf("base: %d runs, %s .. %s (%sstep time %s, run-to-run spread %.2f%%", d->nbases,
	       d->bases[0]->path, d->bases[d->nbases - 1]->path, r,
	       cs_fmt_value(a, sizeof(a), CS_UNIT_NS, mean, 0),
	       mean > 0 ? 100 * cs_stat_sd(v, n) / mean : 0);
	if (d->host_speeds) {
		/* the same steps at the baselines' mean host speed: the spread the gate tests */
		mean = 0;
		for (int32_t i = 0; i < n; i++) {
			v[i] /= d->host_speeds[i];
			mean += v[i] / n;
		}
		printf(", %.2f%% at one host speed", mean > 0 ? 100 * cs_stat_sd(v, n) / mean : 0);
	}
	printf(")\n");
}

static void print_text(const cs_diff *d, int width, int color)
{
	char b[64], r[64];

	if (color && d->failed)
		printf("cuscope gate: \033[1;31mFAIL\033[0m: ");
	else if (color && d->inconclusive)
		printf("cuscope gate: \033[1;33mINCONCLUSIVE\033[0m: ");
	else
		printf("cuscope gate: %s: ", d->failed	       ? "FAIL"
					     : d->inconclusive ? "INCONCLUSIVE"
							       : "PASS");
	printf("%d of %d %s regressed", d->failed, d->checks, d->checks == 1 ? "check" : "checks");
	if (d->inconclusive)
		printf("; %d inconclusive: the host was %.0f%% %s (host-speed probe)", d->inconclusive,
		       100 * fabs(d->probe_ratio - 1), d->probe_ratio > 1 ? "slower" : "faster");
	putchar('\n');
	print_base(d);
	cs_run_rank_label(d->new_, r, sizeof(r));
	printf("new:  %s (%s%sstep time %s)\n", d->new_->path, r, r[0] ? ", " : "",
	       cs_fmt_value(b, sizeof(b), CS_UNIT_NS, (double)d->new_->step_median / d->new_scale,
			    0));
	if (d->note[0])
		print_wrapped("note: ", d->note, width);
	print_wrapped("note: ", d->test_note, width);
	if (d->host_note[0])
		print_wrapped("note: ", d->host_note, width);
	if (d->shared_note[0])
		print_wrapped("note: ", d->shared_note, width);
	putchar('\n');
	print_checks(d, width, color);
	for (int32_t i = 0, first = 1; i < d->nfindings; i++) {
		const cs_run_finding *f = d->findings[i].new_;
		char *title, head[128], text[4096];

		if (!f || d->findings[i].base)
			continue;
		if (first)
			printf("\nNew findings:\n");
		first = 0;
		title = cs_utf8_repair(f->title);
		snprintf(head, sizeof(head), "  [%s] %s  ", cs_severity_name(f->severity), f->rule);
		snprintf(text, sizeof(text), "%s%s", title ? title : "",
			 f->near ? " (near its threshold: not gated)" : "");
		print_wrapped(head, text, width);
		free(title);
	}
}

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
	rc = junit ? cs_gate_write_junit(f, d) : cs_diff_write_markdown(f, d, 1, 0);
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
	cs_run_opts o = {NULL, -1, 0, 0, CS_RANK_DEFAULT, 0};
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
		default: /* --fold, --step-range, --warmup; '?' */
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
		print_text(d, w, cli_use_color(no_color));
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
