/*
 * test_hostile.c - crafted files from someone else (docs/security.md): SQL in a file's names never
 * runs, schema objects a trace may not hold are refused at open with one line, a WAL-mode trace
 * is read without a file made beside it, values near the int64 limits and ids outside the enums
 * neither crash nor overflow, outputs never replace what is not a regular file, and text from a
 * trace is escaped on a terminal.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <sqlite3.h>

#include "testutil.h"

static char *tmp_dir;
static char *counts_db, *train_db;

static void exec_sql(const char *path, const char *sql)
{
	sqlite3 *db;
	char *msg = NULL;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK, "%s: %s", sql, msg);
	sqlite3_close(db);
}

/* A copy of from named name in the temporary directory (malloc'd path). */
static char *copy_file(const char *from, const char *name)
{
	char *to = tu_path(tmp_dir, name);
	size_t len;
	char *data = tu_read_file(from, &len);

	ck_assert(data != NULL);
	ck_assert_int_eq(tu_write_file(to, data, len), 0);
	free(data);
	return to;
}

/* The CREATE statement of object name in the file at path (malloc'd). */
static char *schema_sql(const char *path, const char *name)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	char *sql;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(
		sqlite3_prepare_v2(db, "SELECT sql FROM sqlite_master WHERE name = ?", -1, &st, NULL),
		SQLITE_OK);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	sql = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return sql;
}

/* s with the first `from` replaced by `to` (malloc'd; from must be there). */
static char *replace(const char *s, const char *from, const char *to)
{
	const char *at = strstr(s, from);
	char *out;

	ck_assert_msg(at != NULL, "'%s' not in '%s'", from, s);
	out = malloc(strlen(s) + strlen(to) + 1);
	memcpy(out, s, (size_t)(at - s));
	strcpy(out + (at - s), to);
	strcat(out, at + strlen(from));
	return out;
}

/* Each of the reading commands on path: exit 2 with one line on stderr that contains reason. */
static void assert_every_command_refuses(const char *path, const char *reason)
{
	char *out = tu_path(tmp_dir, "refused.json"), *nsys = tu_path(tmp_dir, "refused.sqlite");
	const char *info[] = {NULL, "info", path, NULL};
	const char *stats[] = {NULL, "stats", path, NULL};
	const char *report[] = {NULL, "report", path, NULL};
	const char *exp[] = {NULL, "export", "-o", out, path, NULL};
	const char *ns[] = {NULL, "export", "--format", "nsys-sqlite", "-o", nsys, path, NULL};
	const char *diff[] = {NULL, "diff", counts_db, path, NULL};
	const char *gate[] = {NULL, "gate", "--baseline", counts_db, path, NULL};
	const char **cmds[] = {info, stats, report, exp, ns, diff, gate};

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		struct tu_result r = tu_cuscope(cmds[i]);

		tu_assert_one_line_error(&r, cmds[i][1]);
		ck_assert_msg(strstr(r.err, reason), "%s: %s", cmds[i][1], r.err);
		tu_result_free(&r);
	}
	ck_assert(!tu_file_exists(out));
	ck_assert(!tu_file_exists(nsys));
	free(out);
	free(nsys);
}

/*
 * A column name of an event view that closes the quotes of the nsys copy's SQL: before, the copy
 * ran the COMMIT and ATTACH that follow it, and dropped the META table of another trace; now the
 * names in the copy's SQL are cuscope's own, and the copy is made without that column.
 */
START_TEST(test_nsys_column_injection)
{
	char *path = copy_file(train_db, "inject.db"), *victim = copy_file(counts_db, "victim.db");
	char *out = tu_path(tmp_dir, "inject.sqlite"), *view, *evil, *alias, *sql, *before, *after;
	const char *argv[] = {NULL, "export", "--format", "nsys-sqlite", "-o", out, path, NULL};
	size_t nbefore, nafter;
	struct tu_result r;

	view = schema_sql(path, "CUPTI_ACTIVITY_KIND_MEMSET");
	evil = malloc(strlen(victim) + 256);
	sprintf(evil,
		"graphNodeId AS \"value\"\" FROM CUPTI_ACTIVITY_KIND_MEMSET x; COMMIT; ATTACH '%s' "
		"AS v; DROP TABLE v.META; --\"",
		victim);
	alias = replace(view, "graphNodeId AS graphNodeId", evil);
	sql = malloc(strlen(alias) + 64);
	sprintf(sql, "DROP VIEW CUPTI_ACTIVITY_KIND_MEMSET; %s", alias);
	exec_sql(path, sql);
	before = tu_read_file(victim, &nbefore);

	r = tu_cuscope(argv);
	after = tu_read_file(victim, &nafter);
	ck_assert_msg(nbefore == nafter && !memcmp(before, after, nbefore),
		      "the copy ran SQL from the file: %s", r.err);
	ck_assert_msg(!strstr(r.err, "victim"), "the copy ran SQL from the file: %s", r.err);
	ck_assert_msg(r.rc == 0, "export: %s", r.err);
	tu_result_free(&r);
	free(before);
	free(after);
	free(view);
	free(evil);
	free(alias);
	free(sql);
	free(out);
	free(victim);
	free(path);
}
END_TEST

/* A run on a crafted file: no crash, no sanitizer report, exit 0, 1 or 2, one line on exit 2. */
static void assert_survives(const char **argv, const char *what)
{
	struct tu_result r = tu_cuscope(argv);

	ck_assert_msg(r.rc >= 0 && r.rc <= 2, "%s: exit %d: %s", what, r.rc, r.err);
	ck_assert_msg(!strstr(r.err, "runtime error:") && !strstr(r.err, "Sanitizer"), "%s: %s",
		      what, r.err);
	if (r.rc == 2)
		tu_assert_one_line_error(&r, what);
	tu_result_free(&r);
}

/* Host waits of a type that the exporter's table of names did not hold (CS_SYNC_HOST_FUNC, 103,
 * and others): chrome and perfetto crashed (SIGSEGV) on an index out of a char *[5]. */
START_TEST(test_export_unknown_sync_type)
{
	static const int types[] = {103, 100, 5, 99, 1000000};
	char *path = copy_file(train_db, "sync.db"), *out = tu_path(tmp_dir, "sync.out");
	char sql[160];

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		const char *chrome[] = {NULL, "export", "--force", "-o", out, path, NULL};
		const char *pf[] = {NULL, "export", "--force", "--format", "perfetto",
				    "-o", out,	    path,      NULL};
		struct tu_result r;

		snprintf(sql, sizeof(sql),
			 "UPDATE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION_DATA SET syncType = %d",
			 types[i]);
		exec_sql(path, sql);
		r = tu_cuscope(chrome);
		ck_assert_msg(r.rc == 0, "chrome, type %d: exit %d: %s", types[i], r.rc, r.err);
		tu_result_free(&r);
		r = tu_cuscope(pf);
		ck_assert_msg(r.rc == 0, "perfetto, type %d: exit %d: %s", types[i], r.rc, r.err);
		tu_result_free(&r);
	}
	free(out);
	free(path);
}
END_TEST

/*
 * Kernel and API names whose string ids are near INT64_MAX (the strings exist): report, diff and
 * gate failed with "out of memory" (arrays sized by the largest name id; id + 1 overflowed).
 */
START_TEST(test_string_ids_near_limit)
{
	char *path = copy_file(train_db, "ids.db");
	const char *report[] = {NULL, "report", path, NULL};
	const char *gate[] = {NULL, "gate", "--baseline", train_db, path, NULL};
	const char *diff[] = {NULL, "diff", train_db, path, NULL};
	const char *stats[] = {NULL, "stats", path, NULL};
	const char **cmds[] = {report, gate, diff, stats};

	exec_sql(path, "INSERT INTO StringIds VALUES (9223372036854775807, 'huge_kernel'), "
		       "(9223372036854775806, 'cudaMalloc'), (40000000000, 'cudaFree');"
		       "UPDATE CUPTI_ACTIVITY_KIND_KERNEL_DATA SET nameId = 9223372036854775807 "
		       "WHERE rowid % 3 = 0;"
		       "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME_DATA SET nameId = 9223372036854775806 "
		       "WHERE rowid % 3 = 0;"
		       "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME_DATA SET nameId = 40000000000 "
		       "WHERE rowid % 3 = 1");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		struct tu_result r = tu_cuscope(cmds[i]);

		ck_assert_msg(r.rc == 0 || r.rc == 1, "%s: exit %d: %s", cmds[i][1], r.rc, r.err);
		tu_result_free(&r);
	}
	free(path);
}
END_TEST

/*
 * Values at the int64 limits where cuscope adds them (the sanitizer build reports an overflow):
 * perfetto's timestamps from a realtime base near INT64_MAX, stats' time of the kernels beyond
 * --limit, the steps' spans.
 */
START_TEST(test_extreme_arithmetic)
{
	char *path = tu_path(tmp_dir, "extreme.db"), *out = tu_path(tmp_dir, "extreme.pftrace");
	const char *pf[] = {NULL, "export", "--force", "--format", "perfetto", "-o", out, path, NULL};
	const char *stats[] = {NULL, "stats", "--limit", "1", path, NULL};
	const char *report[] = {NULL, "report", path, NULL};

	tu_write_extreme_trace(path, 4242, "test_hostile");
	exec_sql(path, "INSERT OR REPLACE INTO META VALUES ('realtime_base_ns', "
		       "'9223372036854775807')");
	assert_survives(pf, "export --format perfetto");
	assert_survives(stats, "stats --limit 1");
	assert_survives(report, "report");
	free(out);
	free(path);
}
END_TEST

/* `export --format nsys-sqlite` of counts.db failed: "database table is locked". */
START_TEST(test_nsys_counts)
{
	char *out = tu_path(tmp_dir, "counts.sqlite");
	const char *argv[] = {NULL, "export", "--format", "nsys-sqlite", "-o", out, counts_db, NULL};
	const char *info[] = {NULL, "info", out, NULL};
	struct tu_result r = tu_cuscope(argv);

	ck_assert_msg(r.rc == 0, "export: %s", r.err);
	tu_result_free(&r);
	r = tu_cuscope(info);
	ck_assert_msg(r.rc == 0, "info of the copy: %s", r.err);
	tu_result_free(&r);
	free(out);
}
END_TEST

/* Schema objects a trace may not hold: each refused by every command at open, on one line. */
START_TEST(test_schema_objects)
{
	static const struct {
		const char *sql, *reason;
	} cases[] = {
		{"CREATE TRIGGER t AFTER INSERT ON StringIds BEGIN DELETE FROM META; END",
		 "it holds a trigger"},
		{"CREATE TRIGGER t2 BEFORE DELETE ON META BEGIN SELECT 1; END", "it holds a trigger"},
		/* a strings view that calls printf for every string */
		{"ALTER TABLE StringIds RENAME TO s0; CREATE VIEW StringIds AS SELECT id, "
		 "printf('%.*c', 100000000, 'x') AS value FROM s0",
		 "StringIds is not a table"},
		/* recursive views on the side tables */
		{"ALTER TABLE STACK_FRAMES RENAME TO f0; CREATE VIEW STACK_FRAMES AS WITH RECURSIVE "
		 "r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT f0.* FROM r, f0",
		 "STACK_FRAMES is not a table"},
		{"ALTER TABLE PROCESSES RENAME TO p0; CREATE VIEW PROCESSES AS SELECT * FROM p0",
		 "PROCESSES is not a table"},
		/* a generated column that calls printf */
		{"DROP TABLE TARGET_INFO_GPU; CREATE TABLE TARGET_INFO_GPU(pid INTEGER NOT NULL, "
		 "deviceId INTEGER NOT NULL, uuid TEXT, name TEXT AS (printf('%.*c', 100000000, "
		 "'x')), totalMemory INTEGER, smCount INTEGER, computeMajor INTEGER, computeMinor "
		 "INTEGER, clockRate INTEGER, memoryBandwidth INTEGER)",
		 "TARGET_INFO_GPU has a generated column"},
		{"ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL_DATA ADD COLUMN g INTEGER AS (abs(pid))",
		 "CUPTI_ACTIVITY_KIND_KERNEL_DATA has a generated column"},
		/* a side table without the columns the reader reads */
		{"DROP TABLE STACKS; CREATE TABLE STACKS(id INTEGER, depth INTEGER)",
		 "STACKS has no column frameId"},
		{"CREATE VIRTUAL TABLE fts USING fts5(a)", "it holds a virtual table"},
		/* columns declared with another type than the reader reads them as */
		{"DROP TABLE STACKS; CREATE TABLE STACKS(id INTEGER, depth TEXT, frameId INTEGER)",
		 "(STACKS.depth is declared TEXT, not INTEGER)"},
		{"DROP TABLE StringIds; CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value "
		 "INTEGER)",
		 "(StringIds.value is declared INTEGER, not TEXT)"},
		{"DROP TABLE PROCESSES; CREATE TABLE PROCESSES(pid INTEGER, ppid INTEGER, start "
		 "INTEGER, end INTEGER, commandLine BLOB, rank INTEGER, localRank INTEGER, "
		 "worldSize INTEGER, exitCode INTEGER, usedCuda INTEGER, droppedRecords INTEGER, "
		 "cuptiDeviceBytes INTEGER)",
		 "(PROCESSES.commandLine is declared BLOB, not TEXT)"},
		{"DROP TABLE TARGET_INFO_CUDA_STREAM; CREATE TABLE TARGET_INFO_CUDA_STREAM(pid "
		 "INTEGER, deviceId INTEGER, contextId INTEGER, streamId FLOAT, isDefault INTEGER, "
		 "priority INTEGER)",
		 "(TARGET_INFO_CUDA_STREAM.streamId is declared FLOAT, not INTEGER)"},
		/* an event table's stored column, and one stored relative to its base */
		{"ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL_DATA RENAME COLUMN nameId TO n0; "
		 "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL_DATA ADD COLUMN nameId TEXT",
		 "(CUPTI_ACTIVITY_KIND_KERNEL_DATA.nameId is declared TEXT, not INTEGER)"},
		{"ALTER TABLE CUPTI_ACTIVITY_KIND_MEMCPY_DATA RENAME COLUMN endRel TO e0; "
		 "ALTER TABLE CUPTI_ACTIVITY_KIND_MEMCPY_DATA ADD COLUMN endRel NUMERIC",
		 "(CUPTI_ACTIVITY_KIND_MEMCPY_DATA.endRel is declared NUMERIC, not INTEGER)"},
		/* a declared type that would move the cursor and fill the message: shown cut and
		 * escaped */
		{"DROP TABLE STACKS; CREATE TABLE STACKS(id INTEGER, depth "
		 "\"\x1b[2J%s%n\x1b]0;t\x07TEXTTEXTTEXTTEXTTEXTTEXTTEXTTEXTTEXTTEXTTEXTTEXTTEXT\", "
		 "frameId INTEGER)",
		 "(STACKS.depth is declared ?[2J%s%n?]0;t?TEXTTEXTTEXTTEXTTEXTTEXTT, not INTEGER)"},
	};
	char name[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *path;

		snprintf(name, sizeof(name), "objects-%zu.db", i);
		path = copy_file(counts_db, name);
		exec_sql(path, cases[i].sql);
		assert_every_command_refuses(path, cases[i].reason);
		free(path);
	}
}
END_TEST

/* A trace in WAL mode is read without a -wal or -shm file made beside it. */
START_TEST(test_wal_leaves_nothing)
{
	char *path = copy_file(counts_db, "wal.db"), *wal, *shm;
	const char *info[] = {NULL, "info", path, NULL};
	const char *report[] = {NULL, "report", path, NULL};
	struct tu_result r;

	exec_sql(path, "PRAGMA journal_mode = WAL");
	wal = malloc(strlen(path) + 8);
	shm = malloc(strlen(path) + 8);
	sprintf(wal, "%s-wal", path);
	sprintf(shm, "%s-shm", path);
	ck_assert(!tu_file_exists(wal) && !tu_file_exists(shm));
	r = tu_cuscope(info);
	ck_assert_msg(r.rc == 0, "info: %s", r.err);
	tu_result_free(&r);
	r = tu_cuscope(report);
	ck_assert_msg(r.rc <= 1, "report: %s", r.err);
	tu_result_free(&r);
	ck_assert_msg(!tu_file_exists(wal) && !tu_file_exists(shm), "a file beside %s", path);
	free(wal);
	free(shm);
	free(path);
}
END_TEST

/* One line, exit 2, containing what; nothing on stdout. */
static void assert_refused_with(const char **argv, const char *what)
{
	struct tu_result r = tu_cuscope(argv);

	tu_assert_one_line_error(&r, argv[1]);
	ck_assert_msg(strstr(r.err, what), "%s: %s", argv[1], r.err);
	tu_result_free(&r);
}

/*
 * The one rule of every command that writes: an existing file is replaced only with --force
 * (gate's --junit and --markdown replaced it without); what is not a regular file is never
 * replaced (import --force renamed the trace over a FIFO), nor written through a link (report -o
 * and gate --junit wrote through a link to a device).
 */
START_TEST(test_outputs)
{
	char *file = tu_path(tmp_dir, "out-file"), *fifo = tu_path(tmp_dir, "out-fifo");
	char *lnull = tu_path(tmp_dir, "out-link-null"), *lfifo = tu_path(tmp_dir, "out-link-fifo");
	char *blk = tu_path(tmp_dir, "out-blk"), *spool = tu_source_file("tests/data/spool");
	const char *const targets[] = {lnull, lfifo, fifo, blk};
	struct stat st;
	int have_blk;

	ck_assert_int_eq(tu_write_file(file, "old\n", 4), 0);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	ck_assert_int_eq(symlink("/dev/null", lnull), 0);
	ck_assert_int_eq(symlink(fifo, lfifo), 0);
	/* a block device node (of a loop device that is not there): only as root */
	have_blk = mknod(blk, S_IFBLK | 0600, makedev(7, 250)) == 0;

	/* an existing file: refused without --force by every command, and left as it was */
	{
		const char *gj[] = {NULL, "gate", "--baseline", counts_db, "--junit", file,
				    counts_db, NULL};
		const char *gm[] = {NULL, "gate", "--baseline", counts_db, "--markdown", file,
				    counts_db, NULL};
		const char *rep[] = {NULL, "report", "-o", file, counts_db, NULL};
		const char *exp[] = {NULL, "export", "-o", file, counts_db, NULL};
		const char *imp[] = {NULL, "import", "-o", file, spool, NULL};
		const char *gjf[] = {NULL, "gate", "--force", "--baseline", counts_db,
				     "--junit", file, counts_db, NULL};
		const char **cmds[] = {gj, gm, rep, exp, imp};
		struct tu_result r;
		char *data;

		for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
			assert_refused_with(cmds[i], "exists; use --force to replace it");
		data = tu_read_file(file, NULL);
		ck_assert_str_eq(data, "old\n");
		free(data);
		r = tu_cuscope(gjf);
		ck_assert_msg(r.rc == 0, "gate --force --junit: %s", r.err);
		tu_result_free(&r);
		data = tu_read_file(file, NULL);
		ck_assert_msg(strstr(data, "<testsuite"), "%s", data);
		free(data);
	}
	/* links to a device or a FIFO, a FIFO for a trace, a block device: refused, even with
	 * --force, and left as they were */
	for (size_t t = 0; t < sizeof(targets) / sizeof(targets[0]); t++) {
		const char *out = targets[t];
		const char *rep[] = {NULL, "report", "--force", "-o", out, counts_db, NULL};
		const char *gj[] = {NULL, "gate", "--force", "--baseline", counts_db, "--junit",
				    out, counts_db, NULL};
		const char *exp[] = {NULL, "export", "--force", "-o", out, counts_db, NULL};
		const char *ns[] = {NULL, "export", "--force", "--format", "nsys-sqlite", "-o",
				    out, counts_db, NULL};
		const char *imp[] = {NULL, "import", "--force", "-o", out, spool, NULL};
		const char **cmds[] = {rep, gj, exp, ns, imp};

		if (out == blk && !have_blk)
			continue;
		for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
			/* a FIFO named directly is written in place by all but a trace's writers */
			if (out == fifo && cmds[i] != ns && cmds[i] != imp)
				continue;
			assert_refused_with(cmds[i], "not a regular file");
		}
	}
	ck_assert(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
	ck_assert(lstat(lnull, &st) == 0 && S_ISLNK(st.st_mode));
	ck_assert(lstat(lfifo, &st) == 0 && S_ISLNK(st.st_mode));
	ck_assert(!have_blk || (lstat(blk, &st) == 0 && S_ISBLK(st.st_mode)));
	unlink(blk);
	free(file);
	free(fifo);
	free(lnull);
	free(lfifo);
	free(blk);
	free(spool);
}
END_TEST

/* 1 when s holds a control character other than a newline: C0, DEL or C1 (U+0080..U+009F). */
static int has_control(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if ((*p < 0x20 && *p != '\n') || *p == 0x7f ||
		    (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
			return 1;
	return 0;
}

/*
 * Kernel names, a command line, a host and a GPU name holding terminal escapes (clear the screen,
 * set the title, colours, C1 CSI): info, stats, diff, gate and report print them escaped (ESC as
 * ^[), never raw; info, stats, diff and gate printed them raw before.
 */
START_TEST(test_terminal_escapes)
{
	char *path = copy_file(train_db, "escapes.db");
	const char *info[] = {NULL, "info", path, NULL};
	const char *stats[] = {NULL, "stats", path, NULL};
	const char *diff[] = {NULL, "diff", train_db, path, NULL};
	const char *gate[] = {NULL, "gate", "--baseline", train_db, path, NULL};
	const char *report[] = {NULL, "report", "-v", path, NULL};
	const char **cmds[] = {info, stats, diff, gate, report};

	exec_sql(path, "UPDATE StringIds SET value = char(27) || ']0;title' || char(7) || char(27) "
		       "|| '[2J' || value || char(155) || char(127) || char(9) WHERE id IN "
		       "(SELECT nameId FROM CUPTI_ACTIVITY_KIND_KERNEL_DATA);"
		       "UPDATE PROCESSES SET commandLine = char(27) || '[31mpython3 ' || "
		       "commandLine;"
		       "UPDATE TARGET_INFO_GPU SET name = name || char(27) || '[5m';"
		       "UPDATE META SET value = value || char(27) || '[1m' WHERE key IN "
		       "('command', 'host')");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		struct tu_result r = tu_cuscope(cmds[i]);

		ck_assert_msg(r.rc == 0 || r.rc == 1, "%s: exit %d: %s", cmds[i][1], r.rc, r.err);
		ck_assert_msg(!has_control(r.out), "%s printed a control character: %.2000s",
			      cmds[i][1], r.out);
		ck_assert_msg(!has_control(r.err), "%s: %s", cmds[i][1], r.err);
		tu_result_free(&r);
	}
	{
		struct tu_result r = tu_cuscope(stats);

		ck_assert_msg(strstr(r.out, "^[]0;title^G^[[2J"), "stats: %.2000s", r.out);
		tu_result_free(&r);
	}
	free(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hostile");
	TCase *tc = tcase_create("hostile");

	tmp_dir = tu_tmpdir();
	tu_need(tmp_dir != NULL, "test_hostile", "a temporary directory");
	counts_db = tu_source_file("samples/traces/counts.db");
	train_db = tu_source_file("samples/traces/train_small.db");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_nsys_column_injection);
	tcase_add_test(tc, test_nsys_counts);
	tcase_add_test(tc, test_schema_objects);
	tcase_add_test(tc, test_wal_leaves_nothing);
	tcase_add_test(tc, test_export_unknown_sync_type);
	tcase_add_test(tc, test_string_ids_near_limit);
	tcase_add_test(tc, test_extreme_arithmetic);
	tcase_add_test(tc, test_outputs);
	tcase_add_test(tc, test_terminal_escapes);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
