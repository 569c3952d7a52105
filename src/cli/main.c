/*
 * main.c - the cuscope command: global options and the table of subcommands (what every command
 * shares is in common.c, and the commands with it in libcuscope-cli.a, which the tests link).
 *
 * Adding a command is one line in cli_commands[] plus its cmd_NAME() in its own file.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cuscope/gate.h"

#ifndef CUSCOPE_VERSION
#define CUSCOPE_VERSION "unknown"
#endif

/* Command flags. */
#define CLI_RUNS_PROGRAM 1 /* runs another program: keep the signal dispositions it inherits */

struct cli_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
	int flags;
};

#ifdef CUSCOPE_HAVE_RECORD
#define CLI_CMD_RECORD	  cmd_record
#define CLI_CMD_CALIBRATE cmd_calibrate
#else
/* Builds without CUPTI keep the command so that it can say why it is missing. */
static int cmd_record_unavailable(int argc, char **argv)
{
	(void)argc;
	cli_error("this build has no CUDA support; %s is not available", argv[0]);
	return CLI_EXIT_USAGE;
}
#define CLI_CMD_RECORD	  cmd_record_unavailable
#define CLI_CMD_CALIBRATE cmd_record_unavailable
#endif

static const struct cli_command cli_commands[] = {
	{"record", CLI_CMD_RECORD, "run a CUDA program and record a trace of it", CLI_RUNS_PROGRAM},
	{"dump", cmd_dump, "write the trace of a job still being recorded, without stopping it", 0},
	{"import", cmd_import, "turn spool files written without record into a trace", 0},
	{"info", cmd_info, "show what a trace holds", 0},
	{"stats", cmd_stats, "summarize kernel, memcpy and memset time", 0},
	{"report", cmd_report, "find performance anti-patterns, most costly first", 0},
	{"export", cmd_export, "write the trace for chrome://tracing or ui.perfetto.dev", 0},
	{"diff", cmd_diff, "compare two traces per training step, regressions first", 0},
	{"gate", cmd_gate, "fail when a trace regressed against a baseline (for CI)", 0},
	{"view", cmd_view, "serve the trace to the web viewer on 127.0.0.1", 0},
	{"calibrate", CLI_CMD_CALIBRATE, "measure what recording costs a kernel launch here", 0},
};

#define CLI_NCOMMANDS (sizeof(cli_commands) / sizeof(cli_commands[0]))

/* ---- the cuscope command ---- */

static void print_usage(FILE *out)
{
	fputs("usage: cuscope [--version] [--help] COMMAND [ARGS]\n"
	      "\n"
	      "Commands:\n",
	      out);
	for (size_t i = 0; i < CLI_NCOMMANDS; i++)
		fprintf(out, "  %-9s  %s\n", cli_commands[i].name, cli_commands[i].summary);
	fputs("\n"
	      "Run 'cuscope COMMAND --help' (or 'cuscope help COMMAND') for the options of a "
	      "command.\n",
	      out);
}

static const struct cli_command *find_command(const char *name)
{
	for (size_t i = 0; i < CLI_NCOMMANDS; i++)
		if (!strcmp(cli_commands[i].name, name))
			return &cli_commands[i];
	return NULL;
}

/* inherited_sigpipe: the SIGPIPE disposition cuscope was started with. */
static int run_command(const char *name, int argc, char **argv, void (*inherited_sigpipe)(int))
{
	const struct cli_command *cmd = find_command(name);

	if (!cmd)
		return cli_usage_error(NULL, "'%s' is not a cuscope command", name);
	/* The program a command runs inherits what cuscope inherited, not the ignored SIGPIPE. */
	if (cmd->flags & CLI_RUNS_PROGRAM) {
		signal(SIGPIPE, inherited_sigpipe);
		cli_getopt_options_first();
	} else {
		/* it would make getopt_long stop at the first operand; the program record runs
		 * keeps it */
		unsetenv("POSIXLY_CORRECT");
	}
	cli_getopt_begin();
	return cmd->run(argc, argv);
}

int main(int argc, char **argv)
{
	void (*inherited_sigpipe)(int);
	const char *arg;
	int rc;

	/*
	 * Output into a closed pipe (`cuscope stats x.db | head -1`) ends quietly, with the exit
	 * code the command would have had: see cli_finish_output().
	 */
	inherited_sigpipe = signal(SIGPIPE, SIG_IGN);
	if (inherited_sigpipe == SIG_ERR)
		inherited_sigpipe = SIG_DFL;
	/*
	 * The analysis allocates and frees arrays of millions of events one after another. glibc
	 * gives each array over 32 MiB its own mapping and unmaps it on free, so that every new one
	 * is faulted in page by page again (a third of report's time on 10 million events): keep
	 * them in the heap, and freed memory there for the next array.
	 */
	mallopt(M_MMAP_MAX, 0);
	mallopt(M_TRIM_THRESHOLD, INT_MAX);

	if (argc < 2) {
		print_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	arg = argv[1];
	if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
		print_usage(stdout);
		return cli_finish_output(CLI_EXIT_OK);
	}
	if (!strcmp(arg, "--version") || !strcmp(arg, "-V")) {
		printf("cuscope %s\n", CUSCOPE_VERSION);
		printf("trace schema version %d\n", CS_SCHEMA_VERSION);
		return cli_finish_output(CLI_EXIT_OK);
	}
	if (arg[0] == '-')
		return cli_usage_error(NULL, "unknown option '%s'", arg);
	if (!strcmp(arg, "help")) {
		char *help_argv[3];

		if (argc < 3) {
			print_usage(stdout);
			return cli_finish_output(CLI_EXIT_OK);
		}
		if (argc > 3)
			return cli_usage_error(NULL, "unexpected argument '%s' after 'help %s'",
					       argv[3], argv[2]);
		help_argv[0] = argv[2];
		help_argv[1] = "--help";
		help_argv[2] = NULL;
		rc = run_command(argv[2], 2, help_argv, inherited_sigpipe);
	} else {
		rc = run_command(arg, argc - 1, argv + 1, inherited_sigpipe);
	}
	return cli_finish_output(rc);
}
