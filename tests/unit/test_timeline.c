/*
 * test_timeline.c - the timeline model (src/timeline/timeline.c) on a committed trace, against
 * numbers worked out with SQL on the same file: the device memory levels and peaks, and the order
 * of the tracks of its GPU work and host threads; and `cuscope gate`'s peak device memory against
 * the highest point of `cuscope export`'s memory counter on every committed trace.
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/export.h"
#include "cuscope/gate.h"
#include "cuscope/trace.h"
#include "testutil.h"
#include "cuscope/timeline.h"

static sqlite3 *open_db(const char *rel)
{
	char *path = tu_source_file(rel);
	sqlite3 *db = NULL;

	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	free(path);
	return db;
}

/*
 * Per (pid, device): the highest and the last running sum of the counted rows, where a free takes
 * back the newest allocation of its (pid, device, address, VMM or not) with no free between them.
 */
static const char *const expected_sql =
	"WITH r AS (SELECT rowid id, pid, deviceId dev, memoryOperationType op, memKind kind, "
	"address, bytes, memoryOperationType IN (3, 4) vmm FROM CUDA_GPU_MEMORY_USAGE_EVENTS "
	"WHERE returnValue = 0 AND deviceId >= 0 AND start IS NOT NULL), "
	"a AS (SELECT * FROM r WHERE ((op = 1 AND kind IN (3, 5)) OR op = 3) AND bytes > 0), "
	"f AS (SELECT * FROM r WHERE op IN (2, 4)), "
	"d AS (SELECT id, pid, dev, bytes delta FROM a UNION ALL "
	"SELECT f.id, f.pid, f.dev, -(SELECT a.bytes FROM a WHERE a.pid = f.pid AND a.dev = f.dev "
	"AND a.address = f.address AND a.vmm = f.vmm AND a.id < f.id AND NOT EXISTS (SELECT 1 FROM "
	"f f2 WHERE f2.pid = f.pid AND f2.dev = f.dev AND f2.address = f.address AND f2.vmm = f.vmm "
	"AND f2.id > a.id AND f2.id < f.id) ORDER BY a.id DESC LIMIT 1) FROM f), "
	"s AS (SELECT pid, dev, id, sum(coalesce(delta, 0)) OVER (PARTITION BY pid, dev ORDER BY id) "
	"lvl FROM d) "
	"SELECT pid, dev, max(lvl), (SELECT s2.lvl FROM s s2 WHERE s2.pid = s.pid AND s2.dev = s.dev "
	"ORDER BY id DESC LIMIT 1), count(*) FROM s GROUP BY pid, dev ORDER BY pid, dev";

START_TEST(memory_levels_match_sql)
{
	sqlite3 *db = open_db("samples/traces/train_small.db");
	sqlite3_stmt *st;
	cs_tl_mem m;
	int changes = 0, groups = 0, rc;

	cs_tl_mem_init(&m);
	ck_assert_int_eq(sqlite3_prepare_v2(db,
					    "SELECT start, pid, deviceId, memoryOperationType, memKind, "
					    "returnValue, address, bytes FROM "
					    "CUDA_GPU_MEMORY_USAGE_EVENTS ORDER BY rowid",
					    -1, &st, NULL),
			 SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct cs_tl_mem_row r = {
			sqlite3_column_type(st, 0) == SQLITE_NULL ? CS_TS_UNKNOWN
								  : sqlite3_column_int64(st, 0),
			(uint32_t)sqlite3_column_int64(st, 1),
			sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 2),
			sqlite3_column_int(st, 3),
			sqlite3_column_int(st, 4),
			sqlite3_column_int(st, 5),
			(uint64_t)sqlite3_column_int64(st, 6),
			sqlite3_column_int64(st, 7)};
		struct cs_tl_mem_change c;

		rc = cs_tl_mem_apply(&m, &r, &c);
		ck_assert_int_ge(rc, 0);
		changes += rc;
		if (rc)
			ck_assert(c.kind == CS_MEMCOUNT_ALLOC ? c.bytes > 0 : c.bytes < 0);
	}
	sqlite3_finalize(st);
	ck_assert_int_eq(sqlite3_prepare_v2(db, expected_sql, -1, &st, NULL), SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct cs_tl_mem_level *l = cs_tl_mem_level_of(
			&m, (uint32_t)sqlite3_column_int64(st, 0), sqlite3_column_int(st, 1));

		ck_assert_ptr_nonnull(l);
		ck_assert_int_eq(l->peak, sqlite3_column_int64(st, 2));
		ck_assert_int_eq(l->level, sqlite3_column_int64(st, 3));
		ck_assert_int_gt(l->peak, 0);
		groups++;
	}
	sqlite3_finalize(st);
	/* a level for each (pid, device) with a counted row, and no other */
	ck_assert_int_eq((int)m.n, groups);
	ck_assert_int_gt(changes, 0);
	cs_tl_mem_free(&m);
	sqlite3_close(db);
}
END_TEST

/* A free without its allocation counts for nothing; an address allocated again replaces the old. */
START_TEST(memory_replace_and_unknown_free)
{
	cs_tl_mem m;
	struct cs_tl_mem_change c;
	struct cs_tl_mem_row r = {10, 7, 0, CS_MEMOP_FREE, CS_MEM_DEVICE, 0, 0x1000, 64};

	cs_tl_mem_init(&m);
	ck_assert_int_eq(cs_tl_mem_apply(&m, &r, &c), 0);
	r.op = CS_MEMOP_ALLOC;
	ck_assert_int_eq(cs_tl_mem_apply(&m, &r, &c), 1);
	r.bytes = 100;
	ck_assert_int_eq(cs_tl_mem_apply(&m, &r, &c), 1);
	ck_assert_int_eq(c.delta, 36);
	ck_assert_int_eq(m.v[c.level].level, 100);
	r.op = CS_MEMOP_FREE;
	r.bytes = 0;
	ck_assert_int_eq(cs_tl_mem_apply(&m, &r, &c), 1);
	ck_assert_int_eq(c.bytes, -100);
	ck_assert_int_eq(m.v[c.level].level, 0);
	ck_assert_int_eq(m.v[c.level].peak, 100);
	cs_tl_mem_free(&m);
}
END_TEST

/* The tracks of a trace's GPU work and host threads, sorted, are in SQL's (pid, device, stream) and
 * (pid, tid) order, GPUs first; on one thread NVTX above the API calls. */
START_TEST(track_order_matches_sql)
{
	sqlite3 *db = open_db("samples/traces/train_small.db");
	sqlite3_stmt *st;
	struct cs_tl_key prev = {0}, k;
	int n = 0;

	ck_assert_int_eq(
		sqlite3_prepare_v2(
			db,
			"SELECT * FROM (SELECT DISTINCT 0 host, pid, deviceId a, streamId b, 1 kind "
			"FROM CUPTI_ACTIVITY_KIND_KERNEL UNION SELECT DISTINCT 1, pid, tid, 0, 3 "
			"FROM CUPTI_ACTIVITY_KIND_RUNTIME UNION SELECT DISTINCT 1, pid, tid, 0, 4 FROM "
			"NVTX_EVENTS) ORDER BY host, pid, a, kind DESC, b",
			-1, &st, NULL),
		SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		char name[64], want[64];

		k.pid = (uint32_t)sqlite3_column_int64(st, 1);
		k.a = sqlite3_column_int64(st, 2);
		k.b = sqlite3_column_int64(st, 3);
		k.kind = sqlite3_column_int(st, 4);
		if (n)
			ck_assert_int_lt(cs_tl_key_cmp(&prev, &k), 0);
		ck_assert_int_eq(cs_tl_key_cmp(&k, &k), 0);
		ck_assert(cs_tl_key_hash(&k) != 0);
		cs_tl_track_name(&k, name, sizeof(name));
		if (k.kind == CS_TL_STREAM)
			snprintf(want, sizeof(want), "GPU %lld stream %lld", (long long)k.a,
				 (long long)k.b);
		else if (k.kind == CS_TL_API)
			snprintf(want, sizeof(want), "thread %lld CUDA API", (long long)k.a);
		else
			snprintf(want, sizeof(want), "thread %lld NVTX %lld", (long long)k.a,
				 (long long)k.b);
		ck_assert_str_eq(name, want);
		prev = k;
		n++;
	}
	sqlite3_finalize(st);
	ck_assert_int_gt(n, 2);
	sqlite3_close(db);
}
END_TEST

/* One value of a query on the trace at path (0 when it has no row or fails: a table it lacks). */
static int64_t sql_int(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int64_t v = 0;

	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/* The highest "Device memory" counter value in the Chrome export of path; -1: none. */
static int64_t export_counter_max(const char *path, const char *out)
{
	cs_trace *t = NULL;
	cs_export_opts o;
	cs_error err = {0};
	char *text;
	cJSON *root, *ev, *e;
	int64_t max = -1;

	ck_assert_int_eq(cs_trace_open(path, &t, &err), 0);
	cs_export_opts_init(&o);
	ck_assert_msg(cs_export(t, &o, out, NULL, &err) == 0, "%s: %s", path, err.msg);
	cs_trace_close(t);
	text = tu_read_file(out, NULL);
	ck_assert_ptr_nonnull(text);
	root = cJSON_Parse(text);
	ck_assert_ptr_nonnull(root);
	ev = cJSON_IsArray(root) ? root : cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
	cJSON_ArrayForEach(e, ev)
	{
		const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(e, "args"), "allocated");

		if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "C") || !cJSON_IsString(name) ||
		    strcmp(name->valuestring, "Device memory"))
			continue;
		ck_assert(cJSON_IsNumber(v));
		if ((int64_t)v->valuedouble > max)
			max = (int64_t)v->valuedouble;
	}
	cJSON_Delete(root);
	free(text);
	return max;
}

/*
 * On every committed trace with memory rows, the gate's peak device memory (cs_run_load, as `gate`
 * and `diff` have it) is the highest point of the export's memory counter, which is drawn per
 * (pid, device), and it fits in the largest GPU of the trace (TARGET_INFO_GPU.totalMemory).
 */
START_TEST(gate_peak_is_export_counter_max)
{
	static const char *const dirs[] = {"samples/traces", "samples/rules/traces", "tests/data/corpus",
					   "tests/data/abrupt", "tests/data/v1"};
	char *tmp = tu_tmpdir(), *out = tu_path(tmp, "export.json");
	int traces = 0, with_memory = 0;

	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
		char *dir = tu_source_file(dirs[d]);
		DIR *dh = opendir(dir);
		struct dirent *de;

		ck_assert_ptr_nonnull(dh);
		while ((de = readdir(dh))) {
			size_t len = strlen(de->d_name);
			char *path;
			cs_run run;
			cs_run_opts ro = {.warmup = -1};
			cs_error err = {0};
			int64_t counted, total, max;

			if (len < 4 || strcmp(de->d_name + len - 3, ".db"))
				continue;
			path = tu_path(dir, de->d_name);
			traces++;
			counted = sql_int(path, "SELECT count(*) FROM CUDA_GPU_MEMORY_USAGE_EVENTS WHERE "
						"returnValue = 0 AND deviceId >= 0 AND bytes > 0 AND "
						"memoryOperationType = 1 AND memKind IN (3, 5)");
			memset(&run, 0, sizeof(run));
			ck_assert_msg(cs_run_load(path, &ro, &run, &err) == 0, "%s: %s", path, err.msg);
			/* a trace without counted rows has no counter to export */
			max = counted > 0 ? export_counter_max(path, out) : -1;
			ck_assert_msg(run.peak_memory == (max < 0 ? 0 : max),
				      "%s: gate peak %lld, export counter max %lld", path,
				      (long long)run.peak_memory, (long long)max);
			ck_assert_msg((counted > 0) == (run.peak_memory > 0), "%s", path);
			total = sql_int(path, "SELECT max(totalMemory) FROM TARGET_INFO_GPU");
			if (total > 0)
				ck_assert_msg(run.peak_memory <= total, "%s: peak %lld > GPU memory %lld",
					      path, (long long)run.peak_memory, (long long)total);
			with_memory += counted > 0;
			cs_run_free(&run);
			free(path);
		}
		closedir(dh);
		free(dir);
	}
	ck_assert_int_gt(traces, 40);
	ck_assert_int_gt(with_memory, 30);
	remove(out);
	free(out);
	free(tmp);
}
END_TEST

/*
 * PyTorch's expandable segments: physical memory made with cuMemCreate (rows without a device) and
 * mapped with cuMemMap, whose pages CUPTI records again as allocations on the device (and their
 * unmaps as frees). The counter counts the pages and not the handles: worked out here in SQL on
 * the trace, where every free carries the size of its page and no address is allocated twice
 * without a free between, as the running sum of the page and cudaMalloc rows. The sum of the
 * handles as well would be twice the memory, more than the GPU has.
 */
static const char *const expandable_sql =
	"WITH r AS (SELECT start, correlationId c, CASE "
	"WHEN memoryOperationType = 1 AND memKind IN (3, 5) THEN bytes "
	"WHEN memoryOperationType = 2 THEN -bytes ELSE 0 END dm, CASE "
	"WHEN memoryOperationType = 3 THEN bytes WHEN memoryOperationType = 4 THEN -bytes ELSE 0 END dv "
	"FROM CUDA_GPU_MEMORY_USAGE_EVENTS WHERE returnValue = 0), "
	"s AS (SELECT sum(dm) OVER w m, sum(dm + dv) OVER w both_ FROM r WINDOW w AS (ORDER BY start, c)) "
	"SELECT max(m), max(both_) FROM s";

START_TEST(expandable_peak_matches_sql)
{
	char *path = tu_source_file("samples/rules/traces/memory-ceiling-thrash-bad_expandable.db");
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	cs_run run;
	cs_run_opts ro = {.warmup = -1};
	cs_error err = {0};
	int64_t pages, both, total;

	/* the trace's frees and releases each carry their size; no free is of an unknown address */
	ck_assert_int_eq(sql_int(path, "SELECT count(*) FROM CUDA_GPU_MEMORY_USAGE_EVENTS f WHERE "
				       "memoryOperationType = 2 AND returnValue = 0 AND NOT EXISTS "
				       "(SELECT 1 FROM CUDA_GPU_MEMORY_USAGE_EVENTS a WHERE "
				       "a.memoryOperationType = 1 AND a.address = f.address AND "
				       "a.bytes = f.bytes AND a.start <= f.start)"),
			 0);
	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, expandable_sql, -1, &st, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	pages = sqlite3_column_int64(st, 0);
	both = sqlite3_column_int64(st, 1);
	sqlite3_finalize(st);
	sqlite3_close(db);
	total = sql_int(path, "SELECT max(totalMemory) FROM TARGET_INFO_GPU");

	memset(&run, 0, sizeof(run));
	ck_assert_int_eq(cs_run_load(path, &ro, &run, &err), 0);
	ck_assert_int_eq(run.peak_memory, pages);
	ck_assert_int_le(pages, total);
	ck_assert_int_gt(pages, total / 10 * 9); /* the program fills the GPU */
	ck_assert_int_gt(both, total);		 /* counting the handles too double counts */
	cs_run_free(&run);
	free(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("timeline");
	TCase *tc = tcase_create("timeline");

	tcase_add_test(tc, memory_levels_match_sql);
	tcase_add_test(tc, memory_replace_and_unknown_free);
	tcase_add_test(tc, track_order_matches_sql);
	tcase_add_test(tc, gate_peak_is_export_counter_max);
	tcase_add_test(tc, expandable_peak_matches_sql);
	tcase_set_timeout(tc, 280);
	SRunner *sr;
	int failed;

	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
