/*
 * test_timeline.c - the timeline model (src/timeline/timeline.c) on a committed trace, against
 * numbers worked out with SQL on the same file: the device memory levels and peaks, and the order
 * of the tracks of its GPU work and host threads.
 */
#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

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

int main(void)
{
	Suite *s = suite_create("timeline");
	TCase *tc = tcase_create("timeline");

	tcase_add_test(tc, memory_levels_match_sql);
	tcase_add_test(tc, memory_replace_and_unknown_free);
	tcase_add_test(tc, track_order_matches_sql);
	SRunner *sr;
	int failed;

	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
