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

static char dir[4096], in_path[4200], out_path[4200];

/* A private directory for the input and the export's copy, in memory when /dev/shm is there. */
static void make_dir(void)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");

	snprintf(dir, sizeof dir, "%s/cuscope-fuzz-trace-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(dir)) {
		perror("fuzz_trace: mkdtemp");
		abort();
	}
	snprintf(in_path, sizeof in_path, "%s/in.db", dir);
	snprintf(out_path, sizeof out_path, "%s/out.sqlite", dir);
}

static void remove_dir(void)
{
	unlink(in_path);
	unlink(out_path);
	rmdir(dir);
}

static int write_input(const uint8_t *data, size_t size)
{
	FILE *f = fopen(in_path, "wb");
	int ok;

	if (!f)
		return -1;
	ok = fwrite(data, 1, size, f) == size;
	return fclose(f) == 0 && ok ? 0 : -1;
}

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
	make_dir();
	atexit(remove_dir);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *info[] = {"info", in_path, NULL};
	const char *info_json[] = {"info", "--format", "json", in_path, NULL};
	const char *stats[] = {"stats", in_path, NULL};
	const char *report[] = {"report", in_path, NULL};
	const char *report_json[] = {"report", "--format", "json", in_path, NULL};
	const char *chrome[] = {"export", "--quiet", "-o", "/dev/null", in_path, NULL};
	const char *nsys[] = {"export", "--quiet", "--format", "nsys-sqlite", "--force",
			      "-o",	out_path,  in_path,    NULL};

	if (write_input(data, size)) {
		perror("fuzz_trace: write");
		abort();
	}
	run(cmd_info, info);
	run(cmd_info, info_json);
	run(cmd_stats, stats);
	run(cmd_report, report);
	run(cmd_report, report_json);
	run(cmd_export, chrome);
	run(cmd_export, nsys);
	unlink(out_path);
	return 0;
}
