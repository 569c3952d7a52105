/*
 * cmd_import.c - `cuscope import`: turn the spool files the injection library wrote without
 * `cuscope record` (CUDA_INJECTION64_PATH set by hand) into one trace. docs/spool-format.md
 * describes the files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cuscope/import.h"

#define IMPORT_DEFAULT_OUTPUT "cuscope.db"

static void import_usage(FILE *out)
{
	fputs("usage: cuscope import [-o FILE] [--force] [--api=all] SPOOL_DIR | SPOOL_FILE...\n"
	      "\n"
	      "Turn the spool files libcuscope-inject.so wrote (one per process, PID.cuspool) into "
	      "one trace.\n"
	      "For programs run with CUDA_INJECTION64_PATH set by hand instead of under 'cuscope "
	      "record'; the\n"
	      "library writes into $CUSCOPE_SPOOL_DIR, by default $TMPDIR/cuscope-spool or "
	      "/tmp/cuscope-spool.\n"
	      "\n"
	      "Options:\n"
	      "  -o, --output FILE  trace to write (default: " IMPORT_DEFAULT_OUTPUT ")\n"
	      "  -f, --force        replace FILE when it exists\n"
	      "      --api=all      keep every API call as a row; by default launch, async copy "
	      "and memset\n"
	      "                     calls are folded into the GPU rows they made (--api=default)\n"
	      "  -h, --help         show this help\n",
	      out);
}

/* Percent done on a terminal, rewritten in place; *arg is set once something was shown. */
static void import_progress(uint64_t done, uint64_t total, void *arg)
{
	if (!total)
		return;
	fprintf(stderr, "\rcuscope: importing %3d%%", (int)(done * 100 / total));
	fflush(stderr);
	*(int *)arg = 1;
}

static void print_summary(const char *out, const cs_import_stats *st)
{
	char size[CLI_FMT_MAX], num[CLI_FMT_MAX];
	struct stat sb;

	if (stat(out, &sb))
		sb.st_size = 0;
	fprintf(stderr, "cuscope: wrote %s (%s, %s process%s;", out,
		cli_fmt_bytes(size, sizeof(size), (int64_t)sb.st_size),
		cli_fmt_count(num, sizeof(num), st->processes), st->processes == 1 ? "" : "es");
	for (int k = 0; k < CS_EV_COUNT; k++)
		fprintf(stderr, " %s %s,", cs_event_kind_name((enum cs_event_kind)k),
			cli_fmt_count(num, sizeof(num), st->counts[k]));
	fprintf(stderr, " dropped %s", cli_fmt_count(num, sizeof(num), st->dropped));
	if (st->truncated_files)
		fprintf(stderr, ", truncated files %s",
			cli_fmt_count(num, sizeof(num), st->truncated_files));
	if (st->implausible)
		fprintf(stderr, ", implausible values %s",
			cli_fmt_count(num, sizeof(num), st->implausible));
	fputs(")\n", stderr);
}

int cmd_import(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"force", no_argument, NULL, 'f'},
		{"api", required_argument, NULL, 'A'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *out = IMPORT_DEFAULT_OUTPUT;
	char host[256] = "";
	/* what `cuscope record` says about its traces, where import knows it */
	const char *meta[] = {"api", "default", "host", host, NULL};
	cs_import_opts opts;
	cs_import_stats st;
	cs_error err = {0, ""};
	struct stat sb;
	int c, rc, npaths, shown = 0, api_all = 0;

	memset(&opts, 0, sizeof(opts));
	while ((c = cli_getopt(argc, argv, "o:fh", longopts)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'f':
			opts.overwrite = 1;
			break;
		case 'A':
			if (!strcmp(optarg, "all"))
				api_all = 1;
			else if (!strcmp(optarg, "default"))
				api_all = 0;
			else
				return cli_usage_error(
					argv[0], "invalid value '%s' for --api (all or default)",
					optarg);
			break;
		case 'h':
			import_usage(stdout);
			return CLI_EXIT_OK;
		default:
			return CLI_EXIT_USAGE;
		}
	}
	npaths = argc - optind;
	if (npaths < 1)
		return cli_usage_error(argv[0], "missing spool directory or files");
	if (!*out)
		return cli_usage_error(argv[0], "empty output file name");
	if (!opts.overwrite && access(out, F_OK) == 0) {
		cli_error("'%s' exists; use --force to replace it", out);
		return CLI_EXIT_USAGE;
	}
	for (int i = optind; i < argc && npaths > 1; i++)
		if (stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode))
			return cli_usage_error(argv[0],
					       "'%s' is a directory; give one spool directory or "
					       "spool files",
					       argv[i]);
	if (api_all)
		meta[1] = "all";
	/* the spool files are read on the machine that wrote them */
	if (gethostname(host, sizeof(host) - 1))
		meta[2] = NULL;
	opts.meta = meta;
	if (isatty(STDERR_FILENO)) {
		opts.progress = import_progress;
		opts.progress_arg = &shown;
	}

	if (npaths == 1 && stat(argv[optind], &sb) == 0 && S_ISDIR(sb.st_mode))
		rc = cs_import_dir(argv[optind], out, &opts, &st, &err);
	else
		rc = cs_import_files((const char *const *)argv + optind, npaths, out, &opts, &st,
				     &err);
	if (shown)
		fputs("\r\033[K", stderr);
	if (rc < 0) {
		cli_error("%s", err.msg[0] ? err.msg : cs_err_str(rc));
		return CLI_EXIT_USAGE;
	}
	if (err.msg[0])
		cli_error("warning: %s", err.msg);
	print_summary(out, &st);
	return CLI_EXIT_OK;
}
