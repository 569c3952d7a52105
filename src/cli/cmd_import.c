/*
 * cmd_import.c - `cuscope import`: turn the spool files the injection library wrote without
 * `cuscope record` (CUDA_INJECTION64_PATH set by hand) into one trace. docs/spool-format.md
 * describes the files.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cuscope/strbuf.h"
#include "cuscope/progress.h"
#include "cuscope/files.h"
#include "cuscope/import.h"
#include "cuscope/launch_cost.h"

#define IMPORT_DEFAULT_OUTPUT "cuscope.db"

static void import_usage(FILE *out)
{
	fputs("usage: cuscope import [-o FILE] [--force] [--api=all] [--launch-cost FILE]\n"
	      "                      [SPOOL_DIR | SPOOL_FILE...]\n"
	      "\n"
	      "Turn the spool files libcuscope-inject.so wrote (one per process, PID.cuspool) into "
	      "one trace.\n"
	      "For programs run with CUDA_INJECTION64_PATH set by hand instead of under 'cuscope "
	      "record'; the\n"
	      "library writes into $CUSCOPE_SPOOL_DIR, by default $TMPDIR/cuscope-spool-UID or\n"
	      "/tmp/cuscope-spool-UID (UID: your user id), which import reads when no operand is "
	      "given.\n"
	      "\n"
	      "Options:\n"
	      "  -o, --output FILE  trace to write (default: " IMPORT_DEFAULT_OUTPUT ")\n"
	      "      --force        replace FILE when it exists\n"
	      "      --api=all      keep every API call as a row; by default launch, async copy "
	      "and memset\n"
	      "                     calls are folded into the GPU rows they made (--api=default)\n"
	      "      --launch-cost FILE\n"
	      "                     keep in the trace what recording cost a launch: FILE is the "
	      "JSON "
	      "output\n"
	      "                     of 'cuscope calibrate' run on the machine that recorded (what "
	      "'cuscope\n"
	      "                     record' measures itself; 'cuscope info' shows it, and\n"
	      "                     launch-starvation's cost is net of it)\n"
	      "  -h, --help         show this help\n",
	      out);
}

/* The import's progress to the progress line (src/util/progress.c). */
static void import_progress(uint64_t done, uint64_t total, void *arg)
{
	cs_progress_set(arg, (int64_t)done, (int64_t)total);
}

void cli_import_summary(const char *out, const cs_import_stats *st, double launch_ns)
{
	char size[CS_FMT_MAX];
	struct stat sb;
	cs_strbuf line = CS_STRBUF_INIT;

	cs_fmt_bytes(size, sizeof(size), stat(out, &sb) == 0 ? (int64_t)sb.st_size : 0);
	cs_strbuf_printf(&line, "wrote %s (%s): %lld process%s", out, size,
			 (long long)st->processes, st->processes == 1 ? "" : "es");
	for (int k = 0; k < CS_EV_COUNT; k++)
		cs_strbuf_printf(&line, ", %lld %s", (long long)st->counts[k],
				 cs_event_kind_name((enum cs_event_kind)k));
	cs_strbuf_printf(&line, "; %lld dropped", (long long)st->dropped);
	if (st->truncated_files)
		cs_strbuf_printf(&line, ", %lld truncated files", (long long)st->truncated_files);
	if (st->unknown_timestamps)
		cs_strbuf_printf(&line, ", %lld unknown timestamps",
				 (long long)st->unknown_timestamps);
	if (st->implausible)
		cs_strbuf_printf(&line, ", %lld implausible values", (long long)st->implausible);
	if (launch_ns > 0)
		cs_strbuf_printf(&line, "; recording cost %.2f us per launch", launch_ns / 1e3);
	cli_error("%s", cs_strbuf_str(&line));
	cs_strbuf_free(&line);
}

/* 1 when out is an existing spool file of the directory dir (a file a dir import reads). */
static int spool_in_dir(const char *out, const char *dir)
{
	const char *slash = strrchr(out, '/');
	char parent[4096];
	struct stat a, b;

	if (!cs_import_is_spool_name(slash ? slash + 1 : out) || stat(out, &a) || stat(dir, &b) ||
	    !S_ISDIR(b.st_mode))
		return 0;
	if (!slash)
		snprintf(parent, sizeof(parent), ".");
	else
		snprintf(parent, sizeof(parent), "%.*s", slash == out ? 1 : (int)(slash - out),
			 out);
	return stat(parent, &a) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int cmd_import(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"force", no_argument, NULL, 'f'},
		{"api", required_argument, NULL, 'A'},
		{"launch-cost", required_argument, NULL, 'L'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *out = IMPORT_DEFAULT_OUTPUT;
	char host[256] = "";
	/* what `cuscope record` says about its traces, where import knows it */
	const char *meta[7], *cost_path = NULL;
	char *cost = NULL, why[600];
	size_t nmeta = 0;
	cs_import_opts opts;
	cs_import_stats st;
	cs_progress *progress;
	cs_error err = {0, ""};
	struct stat sb;
	char defdir[4096], *defargv[2] = {NULL, NULL};
	int c, rc, npaths, api_all = 0;

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
		case 'L':
			cost_path = optarg;
			break;
		case 'h':
			import_usage(stdout);
			return CLI_EXIT_OK;
		default:
			return CLI_EXIT_USAGE;
		}
	}
	npaths = argc - optind;
	if (!*out)
		return cli_usage_error(argv[0], "empty output file name");
	if (npaths < 1) {
		/* the library's default, under the same check: private to this user */
		char why[160];

		if (!cs_default_spool_dir(defdir, sizeof(defdir)))
			return cli_usage_error(argv[0], "missing spool directory or files");
		if (lstat(defdir, &sb) && errno == ENOENT) {
			cli_error("no spool files: '%s' does not exist (give a spool directory)",
				  defdir);
			return CLI_EXIT_USAGE;
		}
		if (cs_private_dir(defdir, 0, why, sizeof(why))) {
			cli_error("refusing the default spool directory '%s': %s", defdir, why);
			return CLI_EXIT_USAGE;
		}
		defargv[0] = defdir;
		argv = defargv;
		argc = 1;
		optind = 0;
		npaths = 1;
	}
	for (int i = optind; i < argc; i++)
		if (cs_same_file(out, argv[i]) || spool_in_dir(out, argv[i])) {
			cli_error("'%s' is an input; write the trace to another file", out);
			return CLI_EXIT_USAGE;
		}
	if (cli_output_check(out, opts.overwrite, 1))
		return CLI_EXIT_USAGE;
	for (int i = optind; i < argc && npaths > 1; i++)
		if (stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode))
			return cli_usage_error(argv[0],
					       "'%s' is a directory; give one spool directory or "
					       "spool files",
					       argv[i]);
	if (cost_path && !(cost = cs_launch_cost_load(cost_path, why, sizeof(why)))) {
		cli_error("%s", why);
		return CLI_EXIT_USAGE;
	}
	meta[nmeta++] = "api";
	meta[nmeta++] = api_all ? "all" : "default";
	/* the spool files are read on the machine that wrote them */
	if (gethostname(host, sizeof(host) - 1) == 0) {
		meta[nmeta++] = "host";
		meta[nmeta++] = host;
	}
	if (cost) {
		meta[nmeta++] = CS_META_LAUNCH_COST;
		meta[nmeta++] = cost;
	}
	meta[nmeta] = NULL;
	opts.meta = meta;
	progress = cs_progress_start("importing");
	if (progress) {
		opts.progress = import_progress;
		opts.progress_arg = progress;
	}

	if (npaths == 1 && stat(argv[optind], &sb) == 0 && S_ISDIR(sb.st_mode))
		rc = cs_import_dir(argv[optind], out, &opts, &st, &err);
	else
		rc = cs_import_files((const char *const *)argv + optind, npaths, out, &opts, &st,
				     &err);
	cs_progress_end(progress);
	if (rc < 0) {
		cli_error("%s", err.msg[0] ? err.msg : cs_err_str(rc));
		free(cost);
		return CLI_EXIT_USAGE;
	}
	if (err.msg[0])
		cli_error("warning: %s", err.msg);
	cli_import_summary(out, &st, cs_launch_cost_ns(cost));
	free(cost);
	return CLI_EXIT_OK;
}
