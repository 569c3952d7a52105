/*
 * fuzz_trace.c - a coverage-guided fuzz target (libFuzzer) of the trace reader: each input is the
 * bytes of one trace file, read in this process by the commands that read a trace as the binary
 * runs them (src/cli): `info` (text and JSON), `stats`, `report` (text and JSON: the analysis,
 * the steps and every rule) and `export` (Chrome JSON and an nsys-sqlite copy).
 *
 * Built with -Dfuzzers=enabled by clang (docs/building.md); tests/fuzz/run.sh runs it on the seeds
 * of tests/fuzz/corpus/trace. A file refused with exit status 2 is fine; a crash, a sanitizer
 * report or a hang is not. What the commands print goes to /dev/null.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "fuzz_files.h"

/* Run one command as main() would, its stdout going to /dev/null. */
static void run(int (*cmd)(int, char **), const char *const *args)
{
	char *argv[16];
	int argc = 0, rc;

	while (args[argc] && argc < 15) {
		argv[argc] = (char *)args[argc];
		argc++;
	}
	argv[argc] = NULL;
	cli_getopt_begin();
	rc = cmd(argc, argv);
	fflush(stdout);
	if (rc < 0 || rc > 2) {
		fprintf(stderr, "fuzz_trace: %s exited %d\n", args[0], rc);
		abort();
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int fd = open("/dev/null", O_WRONLY);

	(void)argc;
	(void)argv;
	if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0) {
		perror("fuzz_trace: /dev/null");
		abort();
	}
	close(fd);
	setenv("TZ", "UTC", 1);
	unsetenv("POSIXLY_CORRECT");
	fuzz_files_init("trace", "in.db", "out.sqlite");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *info[] = {"info", fuzz_in_path, NULL};
	const char *info_json[] = {"info", "--format", "json", fuzz_in_path, NULL};
	const char *stats[] = {"stats", fuzz_in_path, NULL};
	const char *report[] = {"report", fuzz_in_path, NULL};
	const char *report_json[] = {"report", "--format", "json", fuzz_in_path, NULL};
	const char *chrome[] = {"export", "--quiet", "-o", "/dev/null", fuzz_in_path, NULL};
	const char *nsys[] = {"export", "--quiet", "--format", "nsys-sqlite", "--force",
			      "-o",	fuzz_out_path,  fuzz_in_path,    NULL};

	fuzz_files_write(data, size);
	run(cmd_info, info);
	run(cmd_info, info_json);
	run(cmd_stats, stats);
	run(cmd_report, report);
	run(cmd_report, report_json);
	run(cmd_export, chrome);
	run(cmd_export, nsys);
	unlink(fuzz_out_path);
	return 0;
}
