/* testutil.h - helpers shared by the unit tests. */
#ifndef CUSCOPE_TESTUTIL_H
#define CUSCOPE_TESTUTIL_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "cuscope/trace.h"

/* Run every test of suite (freed after); EXIT_SUCCESS when none failed, for main's return. */
int tu_run_suite(Suite *suite);

/* A fresh directory under $TMPDIR (or /tmp); removed with everything in it at exit. */
char *tu_tmpdir(void);
/* dir/name, malloc'd. */
char *tu_path(const char *dir, const char *name);
/* Write len bytes to path; 0 on success. */
int tu_write_file(const char *path, const void *data, size_t len);
/* Read a whole file (NUL-terminated, malloc'd); NULL when missing. *len may be NULL. */
char *tu_read_file(const char *path, size_t *len);
int tu_file_exists(const char *path);
/*
 * Run argv (argv[0] looked up in PATH unless it has a slash) with stdin from /dev/null and extra
 * environment entries env ("NAME=value", NULL-terminated, may be NULL). Captures stdout and stderr
 * (malloc'd, NUL-terminated; pass NULL to discard). Returns the exit code, 128+signal when killed,
 * or -1 when it could not run.
 */
int tu_run(const char *const argv[], const char *const env[], char **out, char **err);
/* The cuscope binary under test ($CUSCOPE_BIN). */
const char *tu_cuscope_bin(void);
/* The project's source root ($CUSCOPE_SOURCE_ROOT), for committed data under tests/data and
 * samples/. */
const char *tu_source_root(void);
/* What running cuscope gave: its exit code, stdout and stderr (malloc'd, NUL-terminated). */
struct tu_result {
	int rc;
	char *out, *err;
};
/* Run cuscope with argv[1..] (argv[0], which must be there, is filled in) and TZ=UTC for stable
 * wall-clock times; fails the test when it cannot run. */
struct tu_result tu_cuscope(const char **argv);
void tu_result_free(struct tu_result *r);
/* A usage or input error: exit code 2, nothing on stdout, one line on stderr starting "cuscope: ".
 */
void tu_assert_one_line_error(const struct tu_result *r, const char *what);
/* tu_source_root()/rel, malloc'd. */
char *tu_source_file(const char *rel);
/* Setting up test data in main(), where ck_assert cannot be used: when !ok, print "TEST: cannot
 * write the test data: WHAT" and exit 1. */
void tu_need(int ok, const char *test, const char *what);
/* Add to a trace being written the process PID that ran command_line, used CUDA, started at 0 and
 * has no rank; test names the test for tu_need when the writer refuses. */
void tu_add_process(cs_trace_writer *w, uint32_t pid, const char *command_line, const char *test);
/*
 * The values at and near the int64 limits that tu_write_extreme_trace() puts in times, durations
 * and sizes: INT64_MIN, INT64_MIN + 1, INT64_MAX, INT64_MAX - 1, -1, 2^62, -2^62, 2^63 - 2^10,
 * 0, 1000.
 */
#define TU_NEXTREME 10
extern const int64_t tu_extreme[TU_NEXTREME];
/*
 * Write at path a trace of process pid whose rows have every pair of tu_extreme values as their
 * start and end (kernels, copies, sets, waits, API calls, NVTX ranges), such values as sizes,
 * memory times and process times, grid and block sizes at the int32 limits, and a few plausible
 * rows (over 1000 .. 5000 ns) so that the trace has a plausible span. Then the largest plausible
 * values, enough of them that their sums pass INT64_MAX: TU_NLONG kernels, waits, API calls and
 * NVTX ranges of CS_TS_MAX ns, TU_NSTEPS NVTX "step" ranges that split [-CS_TS_MAX, CS_TS_MAX],
 * each with a kernel, a device-to-host copy of CS_BYTES_MAX bytes and its wait, and an allocation
 * and free of CS_BYTES_MAX bytes, and TU_NBIG copies and allocations of CS_BYTES_MAX bytes. The
 * trace has the timeline overview (TIMELINE_OVERVIEW), whatever its size.
 */
#define TU_NLONG  1100
#define TU_NSTEPS 8
#define TU_NBIG	  33000
void tu_write_extreme_trace(const char *path, uint32_t pid, const char *test);
/* Number of lines in s. */
int tu_count_lines(const char *s);

#endif
