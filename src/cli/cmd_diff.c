/*
 * cmd_diff.c - `cuscope diff BASE NEW`: two traces of one program side by side, per training
 * step: step time, GPU busy share, kernel time and launches (all, and by kernel name), memcpys by
 * direction, host waits, device allocations, peak device memory and findings, regressions first,
 * most significant change first, as text, JSON or markdown.
 *
 * The numbers come from src/gate/ (cs_comparison_load); this file parses the options and
 * prints. `cuscope gate` (cmd_gate.c) judges the same diff against thresholds.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cuscope/analyze.h"
#include "cuscope/demangle.h"
#include "cuscope/gate.h"
#include "report.h"

#define DIFF_DEFAULT_LIMIT 10

static const char diff_usage[] =
	"usage: cuscope diff [OPTIONS] BASE NEW\n"
	"\n"
	"Compare two traces of the same program, per training step: step time (median, p10..p90),\n"
	"GPU busy share, kernel time and launches (all and by kernel name), memcpy bytes and "
	"counts\n"
	"by direction, pageable copies, host waits, device-to-host syncs, device allocations, "
	"peak\n"
	"device memory, and the findings that are new or fixed. Regressions first, then\n"
	"improvements, each most significant first.\n"
	"\n"
	"Options:\n"
	"  -f, --format FORMAT    text (default), json or markdown\n"
	"      --fold             fold kernel names before matching them: template arguments,\n"
	"                         anonymous namespace hashes and number suffixes dropped\n"
	"      --config FILE      thresholds that rank changes (the gate's, docs/ci.md)\n"
	"      --step-range PAT   steps are the NVTX ranges whose text matches PAT (both traces)\n"
	"      --warmup N         the first N steps of each trace are warm-up\n"
	"      --rank N|slowest   compare rank N of both traces, or in each trace the rank with\n"
	"                         the longest median step (default: the process with the most\n"
	"                         kernels)\n"
	"      --max-memory SIZE  analyse at most what fits in SIZE (4G, 512M) of each trace:\n"
	"                         a larger one is analysed in a window of its middle (default:\n"
	"                         a quarter of the memory, at most 4G)\n"
	"  -n, --limit N          kernel rows shown in text and markdown (default 10, 0 = all)\n"
	"  -w, --width N          fit text in N columns (default: the terminal's width on a\n"
	"                         terminal, no limit otherwise; 0 = no limit)\n"
	"      --no-color         no colour for worse and better (also off with NO_COLOR set,\n"
	"                         or not on a terminal)\n"
	"  -h, --help             show this help\n"
	"\n"
	"Exit status: 0, or 2 on bad usage or an unreadable trace.\n";

enum diff_format {
	DIFF_TEXT = 0,
	DIFF_JSON,
	DIFF_MARKDOWN,
};

/* ---- the command ---- */

enum {
	OPT_CONFIG = 256,
	OPT_NO_COLOR,
};

int cmd_diff(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"format", required_argument, NULL, 'f'},
		{"fold", no_argument, NULL, CLI_OPT_FOLD},
		{"config", required_argument, NULL, OPT_CONFIG},
		{"step-range", required_argument, NULL, CLI_OPT_STEP_RANGE},
		{"warmup", required_argument, NULL, CLI_OPT_WARMUP},
		{"rank", required_argument, NULL, CLI_OPT_RANK},
		{"max-memory", required_argument, NULL, CLI_OPT_MAX_MEMORY},
		{"limit", required_argument, NULL, 'n'},
		{"width", required_argument, NULL, 'w'},
		{"no-color", no_argument, NULL, OPT_NO_COLOR},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	enum diff_format format = DIFF_TEXT;
	int64_t limit = DIFF_DEFAULT_LIMIT, width = -1;
	const char *config = NULL;
	cs_run_opts o = {NULL, -1, 0, 0, CS_RANK_DEFAULT, 0, cs_analysis_default_max_bytes()};
	cs_comparison cmp;
	cs_error err = {0, ""};
	int c, rc, no_color = 0;

	while ((c = cli_getopt(argc, argv, "f:n:w:h", longopts)) != -1) {
		switch (c) {
		case 'f':
			if (!strcmp(optarg, "text"))
				format = DIFF_TEXT;
			else if (!strcmp(optarg, "json"))
				format = DIFF_JSON;
			else if (!strcmp(optarg, "markdown") || !strcmp(optarg, "md"))
				format = DIFF_MARKDOWN;
			else
				return cli_usage_error(
					argv[0],
					"invalid value '%s' for --format (text, json "
					"or markdown)",
					optarg);
			break;
		case OPT_CONFIG:
			config = optarg;
			break;
		case OPT_NO_COLOR:
			no_color = 1;
			break;
		case 'n':
			if (cli_parse_int(argv[0], "--limit", optarg, 0, INT32_MAX, &limit))
				return CLI_EXIT_USAGE;
			break;
		case 'w':
			if (cli_parse_int(argv[0], "--width", optarg, 0, 100000, &width))
				return CLI_EXIT_USAGE;
			break;
		case 'h':
			fputs(diff_usage, stdout);
			return cli_finish_output(CLI_EXIT_OK);
		default: /* --fold, --step-range, --warmup, --rank, --max-memory; '?' */
			if (cli_run_option(argv[0], c, optarg, &o))
				return CLI_EXIT_USAGE;
			break;
		}
	}
	if (argc - optind < 2)
		return cli_usage_error(argv[0], argc - optind == 0 ? "missing trace files"
								   : "missing the NEW trace file");
	if (argc - optind > 2)
		return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind + 2]);
	if (cs_comparison_load(config, &o, (const char *const *)&argv[optind], 1, argv[optind + 1],
			       &cmp, &err) < 0) {
		cli_error("%s", err.msg);
		return CLI_EXIT_USAGE;
	}
	cli_note_comparison_warmup(o.warmup >= 0 ? o.warmup : cmp.cfg.warmup, &cmp);
	cli_note_comparison_windows(&cmp);
	if (format == DIFF_JSON) {
		cJSON *doc = report_diff_json(&cmp.d);

		if (doc) {
			rc = cli_json_print(doc);
			cJSON_Delete(doc);
		} else {
			cli_error("out of memory");
			rc = CLI_EXIT_USAGE;
		}
	} else if (format == DIFF_MARKDOWN) {
		rc = report_diff_markdown(stdout, &cmp.d, 0, (int)limit) ? CLI_EXIT_USAGE : 0;
	} else {
		rc = report_diff_text(stdout, &cmp.d, (int)limit, cli_output_width((int)width),
				      cli_use_color(no_color));
	}
	rc = cli_finish_output(rc);
	cs_comparison_free(&cmp);
	return rc;
}
