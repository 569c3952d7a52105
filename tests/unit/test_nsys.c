/*
 * test_nsys.c - `cuscope export --format nsys-sqlite`: typical Nsight Systems SQL (top kernels by
 * name, copies by kind, NVTX ranges, a kernel and its launch, devices, threads, waits by type,
 * calls by process, call stacks) run on the copy of recorded traces, each answer checked against
 * the trace read through cuscope's own reader or its own tables;
 * the copy is still a cuscope trace of the same schema version; bad input.
 */
#include <check.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cuscope/demangle.h"
#include "cuscope/trace.h"
#include "testutil.h"

static char *tmp_dir;
static char *train_db, *d2h_db; /* version 2 and version 1 recordings */

/* Export path to an nsys-sqlite copy in the temporary directory; the copy's path (malloc'd). */
static char *nsys_copy(const char *path, const char *name)
{
	char *out = tu_path(tmp_dir, name);
	const char *argv[] = {NULL, "export", "--force", "--format", "nsys-sqlite",
			      "-o", out,      path,	 NULL};
	struct tu_result r = tu_cuscope(argv);

	ck_assert_msg(r.rc == 0, "export failed: %s", r.err);
	ck_assert_msg(strstr(r.err, "Nsight Systems") != NULL, "summary: %s", r.err);
	tu_result_free(&r);
	return out;
}

static sqlite3 *open_db(const char *path)
{
	sqlite3 *db = NULL;

	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	return db;
}

static int64_t query_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int64_t v;

	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql,
		      sqlite3_errmsg(db));
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Kernel count and GPU time per short name, from the trace through cuscope's reader. */
struct by_name {
	char *name;
	int64_t count, total;
};

static int by_name_find(struct by_name *v, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return i;
	return -1;
}

START_TEST(test_top_kernels)
{
	const char *files[] = {train_db, d2h_db};

	for (int f = 0; f < 2; f++) {
		char *copy = nsys_copy(files[f], f ? "d2h.sqlite" : "train.sqlite");
		struct by_name want[512];
		int nw = 0, rows = 0;
		cs_trace *t = NULL;
		cs_error err = {0, ""};
		cs_iter *it = NULL;
		cs_event ev;
		sqlite3 *db;
		sqlite3_stmt *st = NULL;

		ck_assert_int_eq(cs_trace_open(files[f], &t, &err), CS_OK);
		ck_assert_int_eq(cs_iter_open(t, CS_EV_KERNEL, NULL, &it, &err), CS_OK);
		while (cs_iter_next(it, &ev) > 0) {
			const cs_kernel *k = &ev.u.kernel;
			const char *s;
			int i;

			if (k->start == CS_TS_UNKNOWN || k->end == CS_TS_UNKNOWN || !k->name)
				continue;
			s = cs_demangle_short(k->name);
			i = by_name_find(want, nw, s);
			if (i < 0) {
				ck_assert_int_lt(nw, 512);
				want[nw].name = strdup(s);
				want[nw].count = want[nw].total = 0;
				i = nw++;
			}
			want[i].count++;
			want[i].total += k->end - k->start;
		}
		cs_iter_close(it);
		cs_trace_close(t);
		ck_assert_int_gt(nw, 3);

		/* the query nsys users run: kernels by shortName, most GPU time first */
		db = open_db(copy);
		ck_assert_int_eq(
			sqlite3_prepare_v2(db,
					   "SELECT s.value, count(*), sum(k.end - k.start) "
					   "FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN "
					   "StringIds AS s ON s.id = k.shortName WHERE "
					   "k.end IS NOT NULL GROUP BY s.value ORDER BY 3 "
					   "DESC",
					   -1, &st, NULL),
			SQLITE_OK);
		while (sqlite3_step(st) == SQLITE_ROW) {
			int i = by_name_find(want, nw, (const char *)sqlite3_column_text(st, 0));

			ck_assert_msg(i >= 0, "unknown kernel %s", sqlite3_column_text(st, 0));
			ck_assert_int_eq(sqlite3_column_int64(st, 1), want[i].count);
			ck_assert_int_eq(sqlite3_column_int64(st, 2), want[i].total);
			rows++;
		}
		sqlite3_finalize(st);
		ck_assert_int_eq(rows, nw);
		/* demangledName: the whole demangled name, one per mangled name */
		ck_assert_int_eq(query_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
					       "JOIN StringIds s ON s.id = k.demangledName "
					       "WHERE s.value LIKE '%(%'"),
				 query_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
					       "JOIN StringIds s ON s.id = k.mangledName "
					       "WHERE s.value LIKE '\\_Z%' ESCAPE '\\'"));
		sqlite3_close(db);
		for (int i = 0; i < nw; i++)
			free(want[i].name);
		free(copy);
	}
}
END_TEST

START_TEST(test_copies_by_kind)
{
	char *copy = nsys_copy(d2h_db, "copies.sqlite");
	int64_t count[16] = {0}, bytes[16] = {0};
	cs_trace *t = NULL;
	cs_error err = {0, ""};
	cs_iter *it = NULL;
	cs_event ev;
	sqlite3 *db = open_db(copy);
	sqlite3_stmt *st = NULL;
	int kinds = 0;

	ck_assert_int_eq(cs_trace_open(d2h_db, &t, &err), CS_OK);
	ck_assert_int_eq(cs_iter_open(t, CS_EV_MEMCPY, NULL, &it, &err), CS_OK);
	while (cs_iter_next(it, &ev) > 0) {
		count[ev.u.memcpy.copy_kind & 15]++;
		bytes[ev.u.memcpy.copy_kind & 15] += ev.u.memcpy.bytes;
	}
	cs_iter_close(it);
	cs_trace_close(t);
	ck_assert_int_gt(count[CS_COPY_DTOH], 0);
	ck_assert_int_eq(
		sqlite3_prepare_v2(db,
				   "SELECT e.id, e.label, count(*), sum(m.bytes) FROM "
				   "CUPTI_ACTIVITY_KIND_MEMCPY m JOIN ENUM_CUDA_MEMCPY_OPER "
				   "e ON e.id = m.copyKind GROUP BY e.id",
				   -1, &st, NULL),
		SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		int kind = sqlite3_column_int(st, 0);
		const char *label = (const char *)sqlite3_column_text(st, 1);

		ck_assert_int_eq(sqlite3_column_int64(st, 2), count[kind]);
		ck_assert_int_eq(sqlite3_column_int64(st, 3), bytes[kind]);
		if (kind == CS_COPY_DTOH)
			ck_assert_str_eq(label, "Device-to-Host");
		if (kind == CS_COPY_HTOD)
			ck_assert_str_eq(label, "Host-to-Device");
		kinds++;
	}
	sqlite3_finalize(st);
	for (int k = 0; k < 16; k++)
		kinds -= count[k] > 0; /* every kind of the trace, once */
	ck_assert_int_eq(kinds, 0);
	sqlite3_close(db);
	free(copy);
}
END_TEST

START_TEST(test_nvtx_ranges)
{
	char *copy = nsys_copy(train_db, "nvtx.sqlite");
	cs_trace *t = NULL;
	cs_error err = {0, ""};
	cs_iter *it = NULL;
	cs_event ev;
	sqlite3 *db = open_db(copy);
	sqlite3_stmt *st = NULL;
	int n = 0;

	ck_assert_int_eq(cs_trace_open(train_db, &t, &err), CS_OK);
	ck_assert_int_eq(cs_iter_open(t, CS_EV_NVTX, NULL, &it, &err), CS_OK);
	/* nsys: push/pop ranges are eventType 59, their text in text (or StringIds by textId) */
	ck_assert_int_eq(sqlite3_prepare_v2(db,
					    "SELECT coalesce(n.text, s.value), n.start, n.end, "
					    "n.globalTid FROM NVTX_EVENTS n LEFT JOIN StringIds s "
					    "ON s.id = n.textId WHERE n.eventType = 59 ORDER BY "
					    "n.start, n.rowid",
					    -1, &st, NULL),
			 SQLITE_OK);
	while (cs_iter_next(it, &ev) > 0) {
		const cs_nvtx *x = &ev.u.nvtx;

		if (x->type != CS_NVTX_PUSHPOP)
			continue;
		ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
		ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), x->text);
		ck_assert_int_eq(sqlite3_column_int64(st, 1), x->start);
		ck_assert_int_eq(sqlite3_column_int64(st, 2), x->end);
		/* nsys's serialized ids: pid and tid in 24 bits each */
		ck_assert_int_eq((sqlite3_column_int64(st, 3) >> 24) & 0xffffff, x->pid);
		ck_assert_int_eq(sqlite3_column_int64(st, 3) & 0xffffff, x->tid);
		n++;
	}
	ck_assert_int_ne(sqlite3_step(st), SQLITE_ROW);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(query_int(db,
				   "SELECT count(*) FROM ENUM_NSYS_EVENT_TYPE WHERE id = 59 AND "
				   "name = 'NvtxPushPopRange'"),
			 1);
	sqlite3_finalize(st);
	cs_iter_close(it);
	cs_trace_close(t);
	sqlite3_close(db);
	free(copy);
}
END_TEST

/* An NVTX payload (NCCL's, docs/recording.md) is nsys's jsonText; an older trace has none. */
START_TEST(test_nvtx_payload_json)
{
	static const char payload[] = "{\"NCCL communicator ID\":7,\"Message size [bytes]\":4096}";
	char *path = tu_path(tmp_dir, "payload.db"), *copy, *old;
	cs_trace_writer *w = tu_open_trace(path, "python3 train.py", "test_nsys");
	cs_nvtx x;
	sqlite3 *db;

	tu_add_process(w, 4242, "python3 train.py", "test_nsys");
	x = tu_nvtx(4242, cs_writer_intern(w, "ncclAllReduce"), 1000, 2000);
	x.payload_id = cs_writer_intern(w, payload);
	tu_need(cs_writer_add_nvtx(w, &x) == 0, "test_nsys", "a range");
	x = tu_nvtx(4242, cs_writer_intern(w, "step"), 3000, 4000);
	tu_need(cs_writer_add_nvtx(w, &x) == 0, "test_nsys", "a range");
	tu_finish_trace(w, "test_nsys");
	copy = nsys_copy(path, "payload.sqlite");
	db = open_db(copy);
	ck_assert_int_eq(query_int(db, "SELECT count(*) FROM NVTX_EVENTS n JOIN StringIds s ON "
				       "s.id = n.jsonTextId WHERE n.jsonText = s.value AND "
				       "json_extract(n.jsonText, '$.\"Message size [bytes]\"') = 4096"),
			 1);
	ck_assert_int_eq(query_int(db, "SELECT count(*) FROM NVTX_EVENTS WHERE jsonText IS NULL"), 1);
	sqlite3_close(db);
	old = nsys_copy(train_db, "payload-old.sqlite");
	db = open_db(old);
	ck_assert_int_eq(query_int(db, "SELECT count(*) FROM NVTX_EVENTS WHERE jsonText IS NOT NULL "
				       "OR jsonTextId IS NOT NULL"),
			 0);
	sqlite3_close(db);
	free(old);
	free(copy);
	free(path);
}
END_TEST

START_TEST(test_kernel_launch_join)
{
	char *copy = nsys_copy(train_db, "launch.sqlite");
	cs_trace *t = NULL;
	cs_error err = {0, ""};
	cs_iter *it = NULL;
	cs_event ev;
	sqlite3 *db = open_db(copy);
	int64_t launched = 0;

	ck_assert_int_eq(cs_trace_open(train_db, &t, &err), CS_OK);
	ck_assert_int_eq(cs_iter_open(t, CS_EV_KERNEL, NULL, &it, &err), CS_OK);
	while (cs_iter_next(it, &ev) > 0)
		if (ev.u.kernel.launch_start != CS_TS_UNKNOWN && ev.u.kernel.launch_tid &&
		    ev.u.kernel.correlation_id)
			launched++;
	cs_iter_close(it);
	/* the original has no API rows for launches (record folds them into the kernels) */
	ck_assert_int_eq(query_int(db,
				   "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME "
				   "WHERE fromLaunch = 0 AND nameId IN (SELECT id FROM StringIds "
				   "WHERE value LIKE 'cudaLaunchKernel%')"),
			 0);
	ck_assert_int_gt(launched, 1000);
	/* every launched kernel finds its launch through the correlation id, at its launch time,
	 * on its launching thread, named */
	ck_assert_int_eq(query_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN "
				       "CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = "
				       "k.correlationId AND r.globalTid >> 24 = k.globalPid >> 24 "
				       "JOIN StringIds s ON s.id = r.nameId WHERE r.start = "
				       "k.launchStart AND r.end = k.launchEnd AND "
				       "(r.globalTid & 16777215) = k.launchTid AND s.value LIKE "
				       "'cu%'"),
			 launched);
	/* and the copy is still a cuscope trace: same schema version, same kernels, its API
	 * count in EVENT_TABLE_INFO matches the table */
	{
		cs_trace *c = NULL;
		cs_trace_summary a, b;

		ck_assert_int_eq(cs_trace_open(copy, &c, &err), CS_OK);
		ck_assert_int_eq(cs_trace_schema_version(c), cs_trace_schema_version(t));
		ck_assert_int_eq(cs_trace_get_summary(t, &a, &err), CS_OK);
		ck_assert_int_eq(cs_trace_get_summary(c, &b, &err), CS_OK);
		ck_assert_int_eq(a.counts[CS_EV_KERNEL], b.counts[CS_EV_KERNEL]);
		ck_assert_int_eq(b.counts[CS_EV_API],
				 query_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME"));
		ck_assert_str_eq(cs_trace_meta(c, "nsys_compat"), "1");
		cs_trace_close(c);
	}
	/* devices by nsys's id, threads with names */
	ck_assert_int_eq(query_int(db, "SELECT count(*) FROM TARGET_INFO_GPU WHERE id = deviceId"),
			 query_int(db, "SELECT count(*) FROM TARGET_INFO_GPU"));
	ck_assert_int_gt(query_int(db, "SELECT count(*) FROM ThreadNames t JOIN StringIds s ON "
				       "s.id = t.nameId WHERE s.value = 'python3' AND "
				       "(t.globalTid >> 24) = (SELECT pid FROM PROCESSES)"),
			 0);
	cs_trace_close(t);
	sqlite3_close(db);
	free(copy);
}
END_TEST

/* query_int() on the trace itself (read-only), for the numbers a query on the copy must give. */
static int64_t trace_int(const char *path, const char *sql)
{
	sqlite3 *db = open_db(path);
	int64_t v = query_int(db, sql);

	sqlite3_close(db);
	return v;
}

/*
 * The queries nsys users run, each joined the way nsys's own tables are joined, on the copies of
 * recorded traces (runtime and driver API, stacks, a version 1 trace): none loses a row to a
 * missing table, column or enum value, and each answer matches the trace.
 */
START_TEST(test_nsys_queries)
{
	static const char *const files[] = {
		"samples/traces/counts.db",
		"samples/traces/train_small.db",
		"tests/data/corpus/jax_float_every_step.db",
		"samples/rules/traces/allocator-churn-alloc_per_iter_bad.db",
		"tests/data/v1/counts.db",
	};

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		char *src = tu_source_file(files[f]), name[32], *copy;
		sqlite3 *db;
		sqlite3_stmt *st = NULL;
		int rows = 0;

		snprintf(name, sizeof(name), "queries%zu.sqlite", f);
		copy = nsys_copy(src, name);
		db = open_db(copy);

		/* kernel time by name: every kernel of the trace, each name with GPU time */
		ck_assert_int_eq(sqlite3_prepare_v2(
					 db,
					 "SELECT s.value, count(*), sum(k.end - k.start) FROM "
					 "CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = "
					 "k.shortName GROUP BY s.value ORDER BY 3 DESC",
					 -1, &st, NULL),
				 SQLITE_OK);
		while (sqlite3_step(st) == SQLITE_ROW) {
			ck_assert_int_gt(strlen((const char *)sqlite3_column_text(st, 0)), 0);
			ck_assert_int_gt(sqlite3_column_int64(st, 2), 0);
			rows++;
		}
		sqlite3_finalize(st);
		ck_assert_int_gt(rows, 0);
		ck_assert_int_eq(query_int(db, "SELECT sum(k.end - k.start) FROM "
					       "CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON "
					       "s.id = k.shortName"),
				 trace_int(src, "SELECT sum(end - start) FROM "
						"CUPTI_ACTIVITY_KIND_KERNEL"));

		/* launch types: every kernel has one; a cooperative launch is one */
		ck_assert_int_eq(query_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
					       "JOIN ENUM_CUDA_KERNEL_LAUNCH_TYPE e ON e.id = "
					       "k.launchType"),
				 trace_int(src, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"));
		ck_assert_int_eq(query_int(db,
					   "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
					   "JOIN ENUM_CUDA_KERNEL_LAUNCH_TYPE e ON e.id = "
					   "k.launchType WHERE e.name = "
					   "'CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE'"),
				 trace_int(src, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL "
						"WHERE launchCbid = 269"));

		/* waits by type: no row lost to the enum; stream syncs counted as in the trace */
		ck_assert_int_gt(query_int(db, "SELECT count(*) FROM "
					       "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"),
				 0);
		ck_assert_int_eq(query_int(db, "SELECT count(*) FROM "
					       "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION y JOIN "
					       "ENUM_CUPTI_SYNC_TYPE e ON e.id = y.syncType JOIN "
					       "PROCESSES p ON p.globalPid = y.globalPid"),
				 trace_int(src, "SELECT count(*) FROM "
						"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"));
		ck_assert_int_eq(query_int(db, "SELECT count(*) FROM "
					       "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION y JOIN "
					       "ENUM_CUPTI_SYNC_TYPE e ON e.id = y.syncType WHERE "
					       "e.label = 'Stream sync'"),
				 trace_int(src,
					   "SELECT count(*) FROM "
					   "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION WHERE syncType "
					   "= 3"));

		/* API calls by process: every call finds its process, named after its program */
		ck_assert_int_eq(query_int(db,
					   "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
					   "JOIN PROCESSES p ON p.globalPid = (r.globalTid >> 24) "
					   "<< 24 WHERE p.name IS NOT NULL AND p.name != '' AND "
					   "instr(p.name, '/') = 0"),
				 query_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME"));
		ck_assert_int_gt(
			query_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME"),
			trace_int(src, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME"));
		ck_assert_int_eq(query_int(db, "SELECT count(*) FROM PROCESSES p WHERE "
					       "instr(p.commandLine, p.name) = 0"),
				 0);
		/* one naming: CUPTI's names, a version suffix on every runtime call, the calls
		 * made from the GPU work's launch ones too */
		ck_assert_int_eq(query_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
					       "JOIN StringIds s ON s.id = r.nameId WHERE s.value "
					       "LIKE 'cuda%' AND s.value NOT GLOB '*_v[0-9]*'"),
				 0);
		ck_assert_int_gt(query_int(db,
					   "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
					   "JOIN StringIds s ON s.id = r.nameId WHERE fromLaunch = "
					   "1 AND s.value IN ('cudaLaunchKernel_v7000', "
					   "'cuLaunchKernel', 'cuGraphLaunch')"),
				 0);
		/* call stacks: callchainId is the call's stack, innermost frame at depth 0 */
		ck_assert_int_eq(query_int(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
					       "JOIN CUDA_CALLCHAINS c ON c.id = r.callchainId AND "
					       "c.stackDepth = 0"),
				 query_int(db, "SELECT count(callchainId) FROM "
					       "CUPTI_ACTIVITY_KIND_RUNTIME"));
		ck_assert_int_eq(query_int(db, "SELECT count(*) FROM CUDA_CALLCHAINS"),
				 trace_int(src, "SELECT count(*) FROM STACKS"));

		/* device memory and streams by process */
		ck_assert_int_eq(
			query_int(db, "SELECT count(*) FROM CUDA_GPU_MEMORY_USAGE_EVENTS m "
				      "JOIN PROCESSES p ON p.globalPid = m.globalPid"),
			trace_int(src, "SELECT count(*) FROM CUDA_GPU_MEMORY_USAGE_EVENTS"));
		ck_assert_int_eq(query_int(db,
					   "SELECT count(*) FROM TARGET_INFO_CUDA_STREAM s JOIN "
					   "PROCESSES p ON p.pid = s.processId"),
				 trace_int(src, "SELECT count(*) FROM TARGET_INFO_CUDA_STREAM"));
		ck_assert_int_gt(query_int(db, "SELECT count(*) FROM TARGET_INFO_CUDA_STREAM"), 0);

		/* GPUs: the H100/H200 of these recordings are GH100; no bus location recorded */
		ck_assert_int_gt(query_int(db, "SELECT count(*) FROM TARGET_INFO_GPU"), 0);
		ck_assert_int_eq(query_int(db,
					   "SELECT count(*) FROM TARGET_INFO_GPU WHERE name LIKE "
					   "'NVIDIA H%' AND computeMajor = 9 AND chipName = "
					   "'GH100' AND busLocation IS NULL AND id = deviceId"),
				 query_int(db, "SELECT count(*) FROM TARGET_INFO_GPU"));
		ck_assert_int_eq(query_int(db, "SELECT count(*) FROM META_DATA_EXPORT WHERE name = "
					       "'EXPORT_SCHEMA_VERSION' AND value GLOB '3.*'"),
				 1);
		sqlite3_close(db);
		free(copy);
		free(src);
	}
}
END_TEST

START_TEST(test_bad_input)
{
	char *out = tu_path(tmp_dir, "bad.sqlite");
	const char *with_pid[] = {NULL, "export", "--format", "nsys-sqlite", "--pid",
				  "1",	"-o",	  out,	      train_db,	     NULL};
	const char *to_stdout[] = {NULL, "export", "--format", "nsys-sqlite",
				   "-o", "-",	   train_db,   NULL};
	const char *window[] = {NULL,  "export", "--format", "nsys-sqlite", "--time-range",
				"0:1", "-o",	 out,	     train_db,	    NULL};
	struct tu_result r;

	r = tu_cuscope(with_pid);
	tu_assert_one_line_error(&r, "nsys-sqlite --pid");
	tu_result_free(&r);
	r = tu_cuscope(to_stdout);
	tu_assert_one_line_error(&r, "nsys-sqlite -o -");
	tu_result_free(&r);
	r = tu_cuscope(window);
	tu_assert_one_line_error(&r, "nsys-sqlite --time-range");
	tu_result_free(&r);
	ck_assert(!tu_file_exists(out));
	free(out);
}
END_TEST

/* The copy gets the mode every output of cuscope gets, 0666 less the umask (mkstemp's 0600
 * before), and no temporary is left beside it. */
START_TEST(test_output_mode)
{
	mode_t old = umask(022);
	char *out = nsys_copy(train_db, "mode.sqlite");
	struct stat sb;
	DIR *d;
	struct dirent *de;

	umask(old);
	ck_assert_int_eq(stat(out, &sb), 0);
	ck_assert_msg((sb.st_mode & 0777) == 0644, "mode %o", (unsigned)(sb.st_mode & 0777));
	d = opendir(tmp_dir);
	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		ck_assert_msg(!strstr(de->d_name, "mode.sqlite.tmp"), "left: %s", de->d_name);
	closedir(d);
	free(out);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nsys");
	TCase *tc = tcase_create("nsys");
	SRunner *sr;
	int failed;

	tmp_dir = tu_tmpdir();
	if (!tmp_dir) {
		fprintf(stderr, "test_nsys: cannot make a temporary directory\n");
		return 1;
	}
	train_db = tu_source_file("samples/traces/train_small.db");
	d2h_db = tu_source_file("samples/rules/traces/d2h-sync-bad.db");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_top_kernels);
	tcase_add_test(tc, test_output_mode);
	tcase_add_test(tc, test_copies_by_kind);
	tcase_add_test(tc, test_nvtx_ranges);
	tcase_add_test(tc, test_nvtx_payload_json);
	tcase_add_test(tc, test_kernel_launch_join);
	tcase_add_test(tc, test_nsys_queries);
	tcase_add_test(tc, test_bad_input);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
