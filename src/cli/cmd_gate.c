/*
 * cmd_gate.c - `cuscope gate --baseline BASE NEW`: the CI performance regression gate. Compares
 * NEW with the baseline as `cuscope diff` does and judges each check (a metric, or a kernel with
 * enough GPU time) against its threshold: exit 1 when one regressed past it, 0 otherwise, 2 on bad
 * input. Writes a summary on stdout, and on request JUnit XML (--junit) and markdown for a CI
 * comment (--markdown).
 *
 * Thresholds, the config file and how to use this in a CI job: docs/ci.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cuscope/analyze.h"
#include "cuscope/demangle.h"
#include "cuscope/files.h"
#include "cuscope/gate.h"

static const char gate_usage[] =
	"usage: cuscope gate --baseline BASE [OPTIONS] NEW\n"
	"       cuscope gate --list-metrics [--config FILE]\n"
	"\n"
	"Fail when NEW regressed against the baseline trace BASE: step time, GPU busy share,\n"
	"kernel time (all, and each kernel with enough GPU time), memcpys, host waits,\n"
	"device-to-host syncs, device allocations, peak device memory, new findings. Values are\n"
	"per training step; thresholds have relative and absolute floors (docs/ci.md).\n"
	"\n"
	"Options:\n"
	"  -b, --baseline FILE    the baseline trace (required)\n"
	"  -c, --config FILE      thresholds per metric and per kernel (JSON, docs/ci.md)\n"
	"      --junit FILE       write JUnit XML: one testcase per check\n"
	"      --markdown FILE    write a markdown summary for a CI comment ('-': stdout,\n"
	"                         instead of the text summary)\n"
	"      --fold             fold kernel names before matching them (docs/commands/diff.md)\n"
	"      --step-range PAT   steps are the NVTX ranges whose text matches PAT (both traces)\n"
	"      --warmup N         the first N steps of each trace are warm-up\n"
	"  -q, --quiet            no summary on stdout\n"
	"      --list-metrics     list the metrics and their thresholds, then exit\n"
	"  -w, --width N          fit text in N columns (0 = no limit)\n"
	"  -h, --help             show this help\n"
	"\n"
	"Exit status: 0 when no check regressed, 1 when one did, 2 on bad usage, an unreadable\n"
	"trace or config, or traces whose steps cannot be compared.\n";

/* ---- text ---- */

static void add_check_row(struct cli_table *table, const cs_diff_row *r)
{
	const cs_metric_def *def = cs_metric_get(r->metric);
	char name[4096], b[64], n[64], ch[96], th[96], *clean;
	const char *row[] = {r->worse ? "FAIL" : "ok", name, b, n, ch, th};

	if (r->kernel)
		snprintf(name, sizeof(name), "%s: %s", cs_diff_row_label(r),
			 cs_demangle_short(r->kernel));
	else
		snprintf(name, sizeof(name), "%s", cs_diff_row_label(r));
	clean = cs_utf8_repair(name);
	if (clean) {
		snprintf(name, sizeof(name), "%s", clean);
		free(clean);
	}
	cs_metric_format(b, sizeof(b), def->unit, r->base, 0);
	cs_metric_format(n, sizeof(n), def->unit, r->new_, 0);
	cs_metric_format(ch, sizeof(ch), def->unit, r->delta, 1);
	if (r->base != 0 && r->delta != 0 && def->unit != CS_UNIT_SHARE)
		snprintf(ch + strlen(ch), sizeof(ch) - strlen(ch), " (%+.1f%%)", 100 * r->rel);
	cs_threshold_format(th, sizeof(th), r->metric, &r->t);
	cli_table_add_row(table, row);
}

static void print_text(const cs_diff *d, int width)
{
	static const struct cli_column cols[] = {
		{"Result", CLI_ALIGN_LEFT, 0},	{"Check", CLI_ALIGN_LEFT, 1},
		{"Base", CLI_ALIGN_RIGHT, 0},	{"New", CLI_ALIGN_RIGHT, 0},
		{"Change", CLI_ALIGN_RIGHT, 0}, {"Threshold", CLI_ALIGN_LEFT, 0},
	};
	struct cli_table table;
	char a[64], b[64];

	printf("cuscope gate: %s: %d of %d %s regressed\n", d->failed ? "FAIL" : "PASS", d->failed,
	       d->checks, d->checks == 1 ? "check" : "checks");
	printf("base: %s (step time %s)\nnew:  %s (step time %s)\n", d->base->path,
	       cs_metric_format(a, sizeof(a), CS_UNIT_NS,
				(double)d->base->step_median / d->base_scale, 0),
	       d->new_->path,
	       cs_metric_format(b, sizeof(b), CS_UNIT_NS,
				(double)d->new_->step_median / d->new_scale, 0));
	if (d->note[0])
		printf("note: %s\n", d->note);
	putchar('\n');
	cli_table_init(&table, cols, 6);
	for (int pass = 0; pass < 2; pass++)
		for (int32_t i = 0; i < d->nrows; i++)
			if (d->rows[i].gated && d->rows[i].worse == !pass)
				add_check_row(&table, &d->rows[i]);
	cli_table_print(&table, stdout, 1, width);
	cli_table_free(&table);
	for (int32_t i = 0, first = 1; i < d->nfindings; i++) {
		const cs_run_finding *f = d->findings[i].new_;
		char *title;

		if (!f || d->findings[i].base)
			continue;
		if (first)
			printf("\nNew findings:\n");
		first = 0;
		title = cs_utf8_repair(f->title);
		printf("  [%s] %s  %s\n", cs_severity_name(f->severity), f->rule,
		       title ? title : "");
		free(title);
	}
}

static int list_metrics(const cs_gate_config *c)
{
	static const struct cli_column cols[] = {
		{"Metric", CLI_ALIGN_LEFT, 0},
		{"Threshold", CLI_ALIGN_LEFT, 0},
		{"Description", CLI_ALIGN_LEFT, 1},
	};
	struct cli_table table;

	cli_table_init(&table, cols, 3);
	for (int m = 0; m < CS_GM_COUNT; m++) {
		const cs_metric_def *def = cs_metric_get(m);
		char th[128];
		const char *row[] = {def->id, th, def->label};

		cs_threshold_format(th, sizeof(th), m, &c->t[m]);
		if (m == CS_GM_KERNEL_TIME && c->t[m].gate && c->t[m].min_share > 0)
			snprintf(th + strlen(th), sizeof(th) - strlen(th),
				 ", kernels with >= %g%% of GPU time", 100 * c->t[m].min_share);
		cli_table_add_row(&table, row);
	}
	cli_table_print(&table, stdout, 0, cli_output_width(-1));
	cli_table_free(&table);
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
static int write_report(const char *path, const cs_diff *d, int junit)
{
	cs_outfile out;
	FILE *f = stdout;
	int rc;

	if (strcmp(path, "-")) {
		if (cs_outfile_open(&out, path)) {
			cli_error("cannot write '%s': %s", path, strerror(errno));
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

/* ---- the command ---- */

enum {
	OPT_JUNIT = 256,
	OPT_MARKDOWN,
	OPT_LIST_METRICS,
};

int cmd_gate(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"baseline", required_argument, NULL, 'b'},
		{"config", required_argument, NULL, 'c'},
		{"junit", required_argument, NULL, OPT_JUNIT},
		{"markdown", required_argument, NULL, OPT_MARKDOWN},
		{"fold", no_argument, NULL, CLI_OPT_FOLD},
		{"step-range", required_argument, NULL, CLI_OPT_STEP_RANGE},
		{"warmup", required_argument, NULL, CLI_OPT_WARMUP},
		{"quiet", no_argument, NULL, 'q'},
		{"list-metrics", no_argument, NULL, OPT_LIST_METRICS},
		{"width", required_argument, NULL, 'w'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *baseline = NULL, *config = NULL, *junit = NULL, *markdown = NULL, *path;
	int64_t width = -1;
	int quiet = 0, list = 0, c, rc;
	cs_run_opts o = {NULL, -1, 0};
	cs_gate_config cfg;
	cs_comparison cmp;
	const cs_diff *d = &cmp.d;
	cs_error err = {0, ""};

	while ((c = cli_getopt(argc, argv, "b:c:qw:h", longopts)) != -1) {
		switch (c) {
		case 'b':
			baseline = optarg;
			break;
		case 'c':
			config = optarg;
			break;
		case OPT_JUNIT:
			junit = optarg;
			break;
		case OPT_MARKDOWN:
			markdown = optarg;
			break;
		case 'q':
			quiet = 1;
			break;
		case OPT_LIST_METRICS:
			list = 1;
			break;
		case 'w':
			if (cli_parse_int(argv[0], "--width", optarg, 0, 100000, &width))
				return CLI_EXIT_USAGE;
			break;
		case 'h':
			fputs(gate_usage, stdout);
			return cli_finish_output(CLI_EXIT_OK);
		default: /* --fold, --step-range, --warmup; '?' */
			if (cli_run_option(argv[0], c, optarg, &o))
				return CLI_EXIT_USAGE;
			break;
		}
	}
	if (list) {
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
		rc = list_metrics(&cfg);
		cs_gate_config_free(&cfg);
		return cli_finish_output(rc);
	}
	if (!baseline)
		return cli_usage_error(argv[0], "missing --baseline FILE");
	path = cli_single_file(argv[0], argc, argv);
	if (!path)
		return CLI_EXIT_USAGE;
	{
		const char *inputs[] = {baseline, path, config};

		if ((junit && output_is_input("--junit", junit, inputs, 3)) ||
		    (markdown && output_is_input("--markdown", markdown, inputs, 3)))
			return CLI_EXIT_USAGE;
		if (junit && markdown && cs_same_file(junit, markdown))
			return cli_usage_error(argv[0],
					       "--junit and --markdown name the same file");
	}
	if (cs_comparison_load(config, &o, baseline, path, &cmp, &err) < 0) {
		cli_error("%s", err.msg);
		return CLI_EXIT_USAGE;
	}
	if (!d->comparable) {
		cli_error("cannot compare '%s' with '%s': %s", path, baseline, d->note);
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	rc = 0;
	if (junit)
		rc = write_report(junit, d, 1);
	if (!rc && markdown)
		rc = write_report(markdown, d, 0);
	if (!rc && !quiet && !(markdown && !strcmp(markdown, "-")))
		print_text(d, cli_output_width((int)width));
	if (!rc)
		rc = d->failed ? CLI_EXIT_FINDINGS : CLI_EXIT_OK;
	rc = cli_finish_output(rc);
out:
	cs_comparison_free(&cmp);
	return rc;
}
