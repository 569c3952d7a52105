/*
 * fuzz_spool.c - a coverage-guided fuzz target (libFuzzer) of the spool importer: each input is the
 * bytes of one spool file, imported into a trace as `cuscope import` does (framing, decoding,
 * correlation, symbolization, the trace writer), and the trace written is opened and summed up.
 *
 * Built with -Dfuzzers=enabled by clang (docs/building.md); tests/fuzz/run.sh runs it on the seeds
 * of tests/fuzz/corpus/spool. A file the importer refuses is fine; a crash, a sanitizer report, a
 * leak of the importer's own or a hang is not.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuscope/import.h"
#include "cuscope/trace.h"

static char dir[4096], in_path[4200], out_path[4200];

/* A private directory for the input and the trace, in memory when /dev/shm is there. */
static void make_dir(void)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");

	snprintf(dir, sizeof dir, "%s/cuscope-fuzz-spool-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(dir)) {
		perror("fuzz_spool: mkdtemp");
		abort();
	}
	snprintf(in_path, sizeof in_path, "%s/1.cuspool", dir);
	snprintf(out_path, sizeof out_path, "%s/out.db", dir);
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

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	make_dir();
	atexit(remove_dir);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *paths[] = {in_path};
	cs_import_opts opts;
	cs_import_stats st;
	cs_error err = {0, ""};
	cs_trace *t = NULL;
	cs_trace_summary sum;

	if (write_input(data, size)) {
		perror("fuzz_spool: write");
		abort();
	}
	memset(&opts, 0, sizeof opts);
	opts.overwrite = 1;
	if (cs_import_files(paths, 1, out_path, &opts, &st, &err) == 0 &&
	    cs_trace_open(out_path, &t, &err) == 0) {
		cs_trace_get_summary(t, &sum, &err);
		cs_trace_close(t);
	}
	unlink(out_path);
	return 0;
}
