/* testutil.h - helpers shared by the unit tests. */
#ifndef CUSCOPE_TESTUTIL_H
#define CUSCOPE_TESTUTIL_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

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
/* The number under key in JSON object o; the test fails when there is none. */
double tu_json_num(const cJSON *o, const char *key);
/* The same, as an integer. */
int64_t tu_json_i64(const cJSON *o, const char *key);
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
/* The same for the process of a job that ran from 0 to end and exited with code 0: rank (its
 * local rank too) of world_size processes, or CS_ID_NONE for both when it has no rank. */
void tu_add_rank(cs_trace_writer *w, uint32_t pid, const char *command_line, int32_t rank,
		 int32_t world_size, int64_t end, const char *test);

/*
 * Traces written by the tests, in main() where ck_assert cannot be used: every step that fails
 * ends the program through tu_need(), with test as the test's name.
 */
/* A new trace at path (over an existing file), with META "command" when command is not NULL. */
cs_trace_writer *tu_open_trace(const char *path, const char *command, const char *test);
/* Finish the trace. */
void tu_finish_trace(cs_trace_writer *w, const char *test);
/* Intern the n names: ids[i] for names[i]. */
void tu_intern_names(cs_trace_writer *w, const char *const *names, int n, int64_t *ids,
		     const char *test);

/*
 * Events with what the tests leave alone filled in, for cs_writer_add_*(): each is on device 0 in
 * process pid, made or waited for by its thread pid, on stream 7 when it has a stream; it has no
 * correlation id, API call id (cbid), graph or stack. The caller changes what it needs before
 * adding it (device_id, stack_id, ...).
 */
/* The kernel name_id run over [start, end) and launched over [launch, launch + 2 us] (launch_start
 * and launch_end; both unknown when launch is CS_TS_UNKNOWN), one block of 256 threads, with no
 * queued or submitted time. */
cs_kernel tu_kernel(uint32_t pid, int64_t name_id, int64_t launch, int64_t start, int64_t end);
/*
 * A copy of bytes of kind (CS_COPY_*) run over [start, end) by a call over [launch_start,
 * launch_end]: a host-to-device copy from pinned memory is asynchronous, any other kind copies
 * from device memory into pageable memory and is synchronous; no device ids for its two ends.
 */
cs_memcpy tu_memcpy(uint32_t pid, int kind, int64_t bytes, int64_t launch_start, int64_t launch_end,
		    int64_t start, int64_t end);
/* A host wait over [start, end] in a stream synchronization (a runtime call), for no event. */
cs_sync tu_sync(uint32_t pid, int64_t start, int64_t end);
/* The memory operation op (CS_MEMOP_*) at t on device memory at address, of bytes, on no stream.
 */
cs_memory tu_memory(uint32_t pid, int op, uint64_t address, int64_t bytes, int64_t t);
/* An NVTX push/pop range over [start, end] of message text_id, in the default domain, pushed and
 * popped by the thread pid. */
cs_nvtx tu_nvtx(uint32_t pid, int64_t text_id, int64_t start, int64_t end);
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
