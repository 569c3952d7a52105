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
#include "fuzz_files.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_files_init("spool", "1.cuspool", "out.db");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *paths[] = {fuzz_in_path};
	cs_import_opts opts;
	cs_import_stats st;
	cs_error err = {0, ""};
	cs_trace *t = NULL;
	cs_trace_summary sum;

	fuzz_files_write(data, size);
	memset(&opts, 0, sizeof opts);
	opts.overwrite = 1;
	if (cs_import_files(paths, 1, fuzz_out_path, &opts, &st, &err) == 0 &&
	    cs_trace_open(fuzz_out_path, &t, &err) == 0) {
		cs_trace_get_summary(t, &sum, &err);
		cs_trace_close(t);
	}
	unlink(fuzz_out_path);
	return 0;
}
