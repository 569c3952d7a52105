/*
 * nsys_compat.c - a copy of a trace with the names of the Nsight Systems SQLite export added
 * (include/cuscope/nsys_compat.h, docs/trace-format.md "Nsight Systems names").
 *
 * The trace is copied with SQLite's backup API, then, in one transaction on the copy:
 *   - CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY, _MEMSET, _SYNCHRONIZATION, _RUNTIME,
 *     CUDA_GPU_MEMORY_USAGE_EVENTS and NVTX_EVENTS become plain tables (as in schema version 1,
 *     which readers of version 2 read too) with nsys's columns added at the end: globalPid,
 *     shortName, demangledName, mangledName, launchType (kernels), globalPid (copies, sets,
 *     waits, memory), globalTid, callchainId (API calls), text, eventType, globalTid,
 *     endGlobalTid (NVTX);
 *   - CUPTI_ACTIVITY_KIND_RUNTIME gets a row for each launch that the trace folded into its GPU
 *     work (record's default), named as CUPTI names the call, so that the join on correlationId
 *     finds the launch, and EVENT_TABLE_INFO counts them;
 *   - PROCESSES gets globalPid and name, TARGET_INFO_GPU id, chipName and busLocation,
 *     TARGET_INFO_CUDA_STREAM processId; the tables ThreadNames, CUDA_CALLCHAINS,
 *     META_DATA_EXPORT and the ENUM_ tables are added; META says nsys_compat = 1.
 * Demangled names are new strings in StringIds. Only SQL of this file touches the copy; every
 * value goes in as a bound parameter.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cuscope/demangle.h"
#include "cuscope/files.h"
#include "cuscope/nsys_compat.h"
#include "cuscope/trace.h"
#include "trace_internal.h"

struct nsys {
	sqlite3 *db;
	cs_error *err;
	const char *src;
	sqlite3_stmt *find, *add; /* StringIds by value; a new string */
	struct cs_sql_guard guard; /* of the reading rules of copy_authorizer() */
	int denied;		   /* copy_authorizer() refused something */
	int internal;		   /* exec_internal() runs */
};

static int sql_fail(struct nsys *n, const char *what)
{
	return cs_error_set(n->err, CS_ERR_SQL, "cannot write the nsys copy of '%s': %s: %s",
			    n->src, what, sqlite3_errmsg(n->db));
}

static int exec(struct nsys *n, const char *sql)
{
	if (sqlite3_exec(n->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return sql_fail(n, "query failed");
	return 0;
}

/*
 * An ALTER TABLE or the VACUUM of this file (its text is ours alone): SQLite runs SQL of its own for
 * them (functions on sqlite_master; VACUUM attaches a temporary database), which copy_authorizer()
 * lets run while it does, and the one attached database VACUUM needs.
 */
static int exec_internal(struct nsys *n, const char *sql)
{
	int rc;

	n->internal = 1;
	sqlite3_limit(n->db, SQLITE_LIMIT_ATTACHED, 1);
	rc = exec(n, sql);
	sqlite3_limit(n->db, SQLITE_LIMIT_ATTACHED, 0);
	n->internal = 0;
	return rc;
}

/* The StringIds id of s, added when the copy does not have it; < 0 on failure. */
static int64_t intern(struct nsys *n, const char *s)
{
	int64_t id = -1;

	sqlite3_bind_text(n->find, 1, s, -1, SQLITE_STATIC);
	if (sqlite3_step(n->find) == SQLITE_ROW)
		id = sqlite3_column_int64(n->find, 0);
	/* reset before anything else runs: a statement left running locks StringIds, whose
	 * insert below, or a later DROP of its index, then fails ("database table is locked") */
	sqlite3_reset(n->find);
	if (id >= 0)
		return id;
	sqlite3_bind_text(n->add, 1, s, -1, SQLITE_STATIC);
	if (sqlite3_step(n->add) == SQLITE_DONE)
		id = sqlite3_last_insert_rowid(n->db);
	sqlite3_reset(n->add);
	return id;
}

/* kind of object name is in the copy: 'view', 'table' or NULL (a static string). */
static const char *object_type(struct nsys *n, const char *name)
{
	sqlite3_stmt *st = NULL;
	const char *type = NULL;

	if (sqlite3_prepare_v2(n->db, "SELECT type FROM sqlite_master WHERE name = ?", -1, &st,
			       NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(st, 0);

		type = t && !strcmp(t, "view") ? "view" : "table";
	}
	sqlite3_finalize(st);
	return type;
}

/* The columns of columns.def the file's event table of kind has: bit CS_COL_<KIND>_<column>. */
static int stored_columns(struct nsys *n, enum cs_event_kind kind, uint64_t *have)
{
	const struct cs_event_table_def *d = &cs_event_table_defs[kind];
	sqlite3_stmt *st = NULL;
	char sql[128];

	*have = 0;
	snprintf(sql, sizeof(sql), "PRAGMA table_xinfo(\"%s\")", cs_event_kind_table(kind));
	if (sqlite3_prepare_v2(n->db, sql, -1, &st, NULL) != SQLITE_OK)
		return sql_fail(n, "columns");
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *c = (const char *)sqlite3_column_text(st, 1);

		for (int i = 0; c && i < d->ncolumns && i < 64; i++)
			if (!strcmp(c, d->col[i].name))
				*have |= UINT64_C(1) << i;
	}
	sqlite3_finalize(st);
	if (!*have)
		return cs_error_set(n->err, CS_ERR_NOT_TRACE, "'%s' has no %s", n->src,
				    cs_event_kind_table(kind));
	return 0;
}

/*
 * x."a", x."b", ...: the columns of the event table of kind as columns.def names them, each one
 * the file's table lacks (written before it was added) as NULL AS "a". The names put into SQL are
 * cuscope's own: a name read from the file is only compared, never pasted (a column called
 * 'a" FROM x; ATTACH ...' is a column the copy does not have). Columns the file has beyond
 * columns.def (a later cuscope's) are not copied.
 */
static int columns_of(struct nsys *n, enum cs_event_kind kind, char *out, size_t size)
{
	const struct cs_event_table_def *d = &cs_event_table_defs[kind];
	uint64_t have = 0;
	size_t len = 0;
	int rc = stored_columns(n, kind, &have);

	out[0] = '\0';
	if (rc)
		return rc;
	for (int i = 0; i < d->ncolumns && i < 64; i++) {
		int k = snprintf(out + len, size - len,
				 have & UINT64_C(1) << i ? "%sx.\"%s\"" : "%sNULL AS \"%s\"",
				 len ? ", " : "", d->col[i].name);

		if (k < 0 || (size_t)k >= size - len)
			return cs_error_set(n->err, CS_ERR_NOT_TRACE, "'%s': too many columns",
					    n->src);
		len += (size_t)k;
	}
	return 0;
}

/*
 * Replace event table `table` by a plain table of select, a format with one %s for the table's
 * columns (as x.name; select reads it as "x" and keeps its rows in rowid order): its view and
 * _DATA table (version 2) or its table (version 1) go.
 */
static int rebuild(struct nsys *n, enum cs_event_kind kind, const char *select)
{
	char sql[8192], cols[4096], body[6144];
	const char *table = cs_event_kind_table(kind);
	const char *type = object_type(n, table);
	int rc;

	if (!type)
		return cs_error_set(n->err, CS_ERR_NOT_TRACE, "'%s' has no %s", n->src, table);
	rc = columns_of(n, kind, cols, sizeof(cols));
	if (rc)
		return rc;
	snprintf(body, sizeof(body), select, cols);
	snprintf(sql, sizeof(sql), "CREATE TABLE nsys_new AS %s", body);
	rc = exec(n, sql);
	if (!rc && !strcmp(type, "view")) {
		snprintf(sql, sizeof(sql), "DROP VIEW %s; DROP TABLE %s_DATA", table, table);
		rc = exec(n, sql);
	} else if (!rc) {
		snprintf(sql, sizeof(sql), "DROP TABLE %s", table);
		rc = exec(n, sql);
	}
	if (!rc) {
		snprintf(sql, sizeof(sql), "ALTER TABLE nsys_new RENAME TO %s", table);
		rc = exec_internal(n, sql);
	}
	return rc;
}

/* shortName and demangledName of every kernel name, in temp.nsys_names. */
static int kernel_names(struct nsys *n)
{
	sqlite3_stmt *sel = NULL, *ins = NULL;
	int rc = exec(n, "CREATE TEMP TABLE nsys_names(nameId INTEGER PRIMARY KEY, shortName, "
			 "demangledName)");

	if (rc)
		return rc;
	if (sqlite3_prepare_v2(n->db,
			       "SELECT s.id, s.value FROM StringIds s WHERE s.id IN "
			       "(SELECT DISTINCT nameId FROM CUPTI_ACTIVITY_KIND_KERNEL)",
			       -1, &sel, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(n->db, "INSERT INTO temp.nsys_names VALUES (?, ?, ?)", -1, &ins,
			       NULL) != SQLITE_OK) {
		rc = sql_fail(n, "kernel names");
		goto out;
	}
	while (!rc && sqlite3_step(sel) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(sel, 0), short_id, full_id;
		const char *text = (const char *)sqlite3_column_text(sel, 1);
		/* a NULL string (a damaged trace) is an empty name */
		char *name = strdup(text ? text : "");

		if (!name) {
			rc = cs_error_set(n->err, CS_ERR_NOMEM, "out of memory");
			break;
		}
		short_id = intern(n, cs_demangle_short(name));
		full_id = intern(n, cs_demangle(name));
		free(name);
		if (short_id < 0 || full_id < 0) {
			rc = sql_fail(n, "kernel names");
			break;
		}
		sqlite3_reset(ins);
		sqlite3_bind_int64(ins, 1, id);
		sqlite3_bind_int64(ins, 2, short_id);
		sqlite3_bind_int64(ins, 3, full_id);
		if (sqlite3_step(ins) != SQLITE_DONE)
			rc = sql_fail(n, "kernel names");
	}
out:
	sqlite3_finalize(sel);
	sqlite3_finalize(ins);
	return rc;
}

/*
 * The calls that start GPU work, by CUPTI callback id, named as CUPTI names the callback
 * (cudaLaunchKernel_v7000, cuLaunchKernel): what a recorded API row of the same call holds
 * (`record --api=all`), and what Nsight Systems writes.
 */
static const char *launch_name(int api_kind, int cls, int cbid, int is_async)
{
	static const struct {
		int api, cls, cbid;
		const char *name;
	} names[] = {
		{1, 0, 211, "cudaLaunchKernel_v7000"},
		{1, 0, 214, "cudaLaunchKernel_ptsz_v7000"},
		{1, 0, 430, "cudaLaunchKernelExC_v11060"},
		{1, 0, 311, "cudaGraphLaunch_v10000"},
		{1, 0, 312, "cudaGraphLaunch_ptsz_v10000"},
		{1, 0, 269, "cudaLaunchCooperativeKernel_v9000"},
		{1, 0, 270, "cudaLaunchCooperativeKernel_ptsz_v9000"},
		{2, 0, 307, "cuLaunchKernel"},
		{2, 0, 652, "cuLaunchKernelEx"},
		{2, 0, 514, "cuGraphLaunch"},
		{2, 0, 477, "cuLaunchCooperativeKernel"},
		{1, 1, 31, "cudaMemcpy_v3020"},
		{1, 1, 41, "cudaMemcpyAsync_v3020"},
		{1, 1, 225, "cudaMemcpyAsync_ptsz_v7000"},
		{2, 1, 277, "cuMemcpyHtoDAsync_v2"},
		{2, 1, 279, "cuMemcpyDtoHAsync_v2"},
		{2, 1, 281, "cuMemcpyDtoDAsync_v2"},
		{2, 1, 306, "cuMemcpyAsync"},
		{1, 2, 49, "cudaMemset_v3020"},
		{1, 2, 51, "cudaMemsetAsync_v3020"},
		{2, 2, 220, "cuMemsetD32Async"},
		{2, 2, 216, "cuMemsetD8Async"},
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].cls == cls && names[i].cbid == cbid &&
		    (!api_kind || names[i].api == api_kind))
			return names[i].name;
	if (cls == 1)
		return is_async ? "cudaMemcpyAsync_v3020" : "cudaMemcpy_v3020";
	if (cls == 2)
		return is_async ? "cudaMemsetAsync_v3020" : "cudaMemset_v3020";
	return api_kind == 2 ? "cuLaunchKernel" : "cudaLaunchKernel_v7000";
}

/*
 * temp.nsys_launch(pid, correlationId, ...): the launch of each piece of GPU work that has no API
 * row, the first GPU row of each (pid, correlationId) giving it (the kernels of a graph launch
 * share one), named in temp.nsys_launch_names.
 */
static int launches(struct nsys *n)
{
	static const char *const gpu[] = {"CUPTI_ACTIVITY_KIND_KERNEL",
					  "CUPTI_ACTIVITY_KIND_MEMCPY",
					  "CUPTI_ACTIVITY_KIND_MEMSET"};
	sqlite3_stmt *sel = NULL, *ins = NULL;
	char sql[1024];
	int rc;

	rc = exec(n,
		  "CREATE TEMP TABLE nsys_launch(pid INTEGER, correlationId INTEGER, api INTEGER, "
		  "start INTEGER, \"end\" INTEGER, tid INTEGER, apiKind INTEGER, cbid INTEGER, "
		  "cls INTEGER, isAsync INTEGER, stackId INTEGER, ord INTEGER, "
		  "PRIMARY KEY (pid, correlationId));"
		  "INSERT OR IGNORE INTO temp.nsys_launch (pid, correlationId, api) "
		  "SELECT pid, correlationId, 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME "
		  "WHERE correlationId != 0;"
		  "CREATE TEMP TABLE nsys_launch_names(cls INTEGER, apiKind INTEGER, "
		  "cbid INTEGER, isAsync INTEGER, nameId INTEGER)");
	for (int c = 0; !rc && c < 3; c++) {
		snprintf(sql, sizeof(sql),
			 "INSERT OR IGNORE INTO temp.nsys_launch SELECT pid, correlationId, 0, "
			 "launchStart, launchEnd, launchTid, %s, launchCbid, %d, %s, stackId, "
			 "%d * 4294967296 + rowid FROM %s WHERE launchStart IS NOT NULL AND "
			 "launchEnd IS NOT NULL AND launchEnd >= launchStart AND launchTid != 0 "
			 "AND correlationId != 0 ORDER BY rowid",
			 c == 0 ? "launchApiKind" : "0", c, c == 0 ? "1" : "isAsync", c, gpu[c]);
		rc = exec(n, sql);
	}
	if (rc)
		return rc;
	if (sqlite3_prepare_v2(n->db,
			       "SELECT DISTINCT cls, apiKind, cbid, isAsync FROM temp.nsys_launch "
			       "WHERE api = 0",
			       -1, &sel, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(n->db, "INSERT INTO temp.nsys_launch_names VALUES (?, ?, ?, ?, ?)",
			       -1, &ins, NULL) != SQLITE_OK) {
		rc = sql_fail(n, "launch names");
		goto out;
	}
	while (!rc && sqlite3_step(sel) == SQLITE_ROW) {
		int cls = sqlite3_column_int(sel, 0), kind = sqlite3_column_int(sel, 1);
		int cbid = sqlite3_column_type(sel, 2) == SQLITE_NULL ? -1
								      : sqlite3_column_int(sel, 2);
		int async = sqlite3_column_int(sel, 3);
		int64_t id = intern(n, launch_name(kind, cls, cbid, async));

		if (id < 0) {
			rc = sql_fail(n, "launch names");
			break;
		}
		sqlite3_reset(ins);
		for (int i = 0; i < 4; i++)
			sqlite3_bind_value(ins, i + 1, sqlite3_column_value(sel, i));
		sqlite3_bind_int64(ins, 5, id);
		if (sqlite3_step(ins) != SQLITE_DONE)
			rc = sql_fail(n, "launch names");
	}
out:
	sqlite3_finalize(sel);
	sqlite3_finalize(ins);
	return rc;
}

/*
 * ThreadNames: every thread of the trace, named after its process's program (cuscope does not
 * record thread names; Linux names a thread so unless it renames itself); and nsys's
 * PROCESSES.globalPid and name (the program: the last part of the first word of the command line).
 */
static int process_names(struct nsys *n)
{
	sqlite3_stmt *sel = NULL, *ins = NULL, *upd = NULL;
	int rc = exec(n, "CREATE TABLE ThreadNames(nameId INTEGER, priority INTEGER, "
			 "globalTid INTEGER);"
			 "CREATE TEMP TABLE nsys_proc(pid INTEGER PRIMARY KEY, nameId INTEGER)");

	if (!rc)
		rc = exec_internal(n, "ALTER TABLE PROCESSES ADD COLUMN globalPid INTEGER;"
				      "ALTER TABLE PROCESSES ADD COLUMN name TEXT");
	if (!rc)
		rc = exec(n, "UPDATE PROCESSES SET globalPid = pid << 24");
	if (rc)
		return rc;
	if (sqlite3_prepare_v2(n->db, "SELECT pid, commandLine FROM PROCESSES", -1, &sel, NULL) !=
		    SQLITE_OK ||
	    sqlite3_prepare_v2(n->db, "INSERT OR IGNORE INTO temp.nsys_proc VALUES (?, ?)", -1,
			       &ins, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(n->db, "UPDATE PROCESSES SET name = ? WHERE pid = ?", -1, &upd,
			       NULL) != SQLITE_OK) {
		rc = sql_fail(n, "process names");
		goto out;
	}
	while (!rc && sqlite3_step(sel) == SQLITE_ROW) {
		const char *cmd = (const char *)sqlite3_column_text(sel, 1), *p, *slash;
		int64_t pid = sqlite3_column_int64(sel, 0);
		char name[16];
		size_t len;
		int64_t id;

		cmd = cmd ? cmd : "";
		len = strcspn(cmd, " ");
		for (p = slash = cmd; p < cmd + len; p++)
			if (*p == '/')
				slash = p + 1;
		len -= (size_t)(slash - cmd);
		sqlite3_reset(upd);
		if (len)
			sqlite3_bind_text(upd, 1, slash, (int)len, SQLITE_TRANSIENT);
		else
			sqlite3_bind_null(upd, 1);
		sqlite3_bind_int64(upd, 2, pid);
		if (sqlite3_step(upd) != SQLITE_DONE) {
			rc = sql_fail(n, "process names");
			break;
		}
		if (len > 15) /* a thread's name holds 15 bytes */
			len = 15;
		memcpy(name, slash, len);
		name[len] = '\0';
		id = intern(n, name[0] ? name : "(unknown)");
		if (id < 0) {
			rc = sql_fail(n, "thread names");
			break;
		}
		sqlite3_reset(ins);
		sqlite3_bind_int64(ins, 1, pid);
		sqlite3_bind_int64(ins, 2, id);
		if (sqlite3_step(ins) != SQLITE_DONE)
			rc = sql_fail(n, "thread names");
	}
	if (!rc)
		rc = exec(n, "INSERT INTO ThreadNames SELECT p.nameId, 0, "
			     "(t.pid << 24) | (t.tid & 16777215) FROM (SELECT pid, tid FROM "
			     "CUPTI_ACTIVITY_KIND_RUNTIME UNION SELECT pid, tid FROM NVTX_EVENTS "
			     "UNION SELECT pid, tid FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION UNION "
			     "SELECT pid, tid FROM CUDA_GPU_MEMORY_USAGE_EVENTS) t "
			     "JOIN temp.nsys_proc p ON p.pid = t.pid WHERE t.tid != 0 "
			     "ORDER BY t.pid, t.tid");
out:
	sqlite3_finalize(sel);
	sqlite3_finalize(ins);
	sqlite3_finalize(upd);
	return rc;
}

/*
 * nsys's chipName for the GPUs of a compute capability that only one chip has (GH100 for 9.0);
 * the others (8.6: GA102 to GA107, ...) stay NULL, as cuscope does not record the chip.
 */
static int chip_names(struct nsys *n)
{
	static const struct {
		int major, minor;
		const char *chip;
	} chips[] = {
		{6, 0, "GP100"}, {7, 0, "GV100"}, {7, 2, "GV10B"},  {8, 0, "GA100"},
		{8, 7, "GA10B"}, {9, 0, "GH100"}, {10, 0, "GB100"},
	};
	sqlite3_stmt *upd = NULL;
	int rc = exec_internal(n, "ALTER TABLE TARGET_INFO_GPU ADD COLUMN id INTEGER;"
				  "ALTER TABLE TARGET_INFO_GPU ADD COLUMN chipName TEXT;"
				  "ALTER TABLE TARGET_INFO_GPU ADD COLUMN busLocation TEXT");

	if (!rc)
		rc = exec(n, "UPDATE TARGET_INFO_GPU SET id = deviceId");
	if (rc)
		return rc;
	if (sqlite3_prepare_v2(n->db,
			       "UPDATE TARGET_INFO_GPU SET chipName = ? WHERE computeMajor = ? AND "
			       "computeMinor = ?",
			       -1, &upd, NULL) != SQLITE_OK)
		return sql_fail(n, "chip names");
	for (size_t i = 0; !rc && i < sizeof(chips) / sizeof(chips[0]); i++) {
		sqlite3_reset(upd);
		sqlite3_bind_text(upd, 1, chips[i].chip, -1, SQLITE_STATIC);
		sqlite3_bind_int(upd, 2, chips[i].major);
		sqlite3_bind_int(upd, 3, chips[i].minor);
		if (sqlite3_step(upd) != SQLITE_DONE)
			rc = sql_fail(n, "chip names");
	}
	sqlite3_finalize(upd);
	return rc;
}

/* META_DATA_EXPORT: what wrote the copy, and the nsys export schema whose names it follows. */
static int export_meta(struct nsys *n)
{
	static const char *const rows[][2] = {
		{"EXPORT_PRODUCT", "cuscope"},
		{"EXPORT_PRODUCT_VERSION", CUSCOPE_VERSION},
		{"EXPORT_SCHEMA_VERSION", "3.16.1"},
	};
	sqlite3_stmt *ins = NULL;
	int rc = exec(n, "CREATE TABLE META_DATA_EXPORT(name TEXT NOT NULL, value TEXT)");

	if (rc)
		return rc;
	if (sqlite3_prepare_v2(n->db, "INSERT INTO META_DATA_EXPORT VALUES (?, ?)", -1, &ins,
			       NULL) != SQLITE_OK)
		return sql_fail(n, "META_DATA_EXPORT");
	for (size_t i = 0; !rc && i < sizeof(rows) / sizeof(rows[0]); i++) {
		sqlite3_reset(ins);
		sqlite3_bind_text(ins, 1, rows[i][0], -1, SQLITE_STATIC);
		sqlite3_bind_text(ins, 2, rows[i][1], -1, SQLITE_STATIC);
		if (sqlite3_step(ins) != SQLITE_DONE)
			rc = sql_fail(n, "META_DATA_EXPORT");
	}
	sqlite3_finalize(ins);
	return rc;
}

static const char enum_sql[] =
	"CREATE TABLE ENUM_CUDA_MEMCPY_OPER(id INTEGER PRIMARY KEY, name TEXT, label TEXT);"
	"INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES"
	" (0, 'CUDA_MEMCPY_KIND_UNKNOWN', 'Unknown'),"
	" (1, 'CUDA_MEMCPY_KIND_HTOD', 'Host-to-Device'),"
	" (2, 'CUDA_MEMCPY_KIND_DTOH', 'Device-to-Host'),"
	" (3, 'CUDA_MEMCPY_KIND_HTOA', 'Host-to-Array'),"
	" (4, 'CUDA_MEMCPY_KIND_ATOH', 'Array-to-Host'),"
	" (5, 'CUDA_MEMCPY_KIND_ATOA', 'Array-to-Array'),"
	" (6, 'CUDA_MEMCPY_KIND_ATOD', 'Array-to-Device'),"
	" (7, 'CUDA_MEMCPY_KIND_DTOA', 'Device-to-Array'),"
	" (8, 'CUDA_MEMCPY_KIND_DTOD', 'Device-to-Device'),"
	" (9, 'CUDA_MEMCPY_KIND_HTOH', 'Host-to-Host'),"
	" (10, 'CUDA_MEMCPY_KIND_PTOP', 'Peer-to-Peer');"
	"CREATE TABLE ENUM_CUDA_MEM_KIND(id INTEGER PRIMARY KEY, name TEXT, label TEXT);"
	"INSERT INTO ENUM_CUDA_MEM_KIND VALUES"
	" (0, 'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN', 'Unknown'),"
	" (1, 'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE', 'Pageable'),"
	" (2, 'CUDA_MEMOPR_MEMORY_KIND_PINNED', 'Pinned'),"
	" (3, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE', 'Device'),"
	" (4, 'CUDA_MEMOPR_MEMORY_KIND_ARRAY', 'Array'),"
	" (5, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED', 'Managed'),"
	" (6, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC', 'Device Static'),"
	" (7, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC', 'Managed Static');"
	"CREATE TABLE ENUM_NSYS_EVENT_TYPE(id INTEGER PRIMARY KEY, name TEXT, label TEXT);"
	"INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES"
	" (34, 'NvtxMark', 'NVTX Mark'),"
	" (59, 'NvtxPushPopRange', 'NVTX PushPop Range'),"
	" (60, 'NvtxStartEndRange', 'NVTX StartEnd Range');"
	/* CUPTI's synchronization types, then cuscope's own (trace-format.md) */
	"CREATE TABLE ENUM_CUPTI_SYNC_TYPE(id INTEGER PRIMARY KEY, name TEXT, label TEXT);"
	"INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES"
	" (0, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN', 'Unknown'),"
	" (1, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE', 'Event sync'),"
	" (2, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT', 'Stream wait sync'),"
	" (3, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE', 'Stream sync'),"
	" (4, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE', 'Context sync'),"
	" (100, 'CUSCOPE_SYNCHRONIZATION_TYPE_MEMCPY', 'Memcpy sync'),"
	" (101, 'CUSCOPE_SYNCHRONIZATION_TYPE_EVENT_QUERY', 'Event query'),"
	" (102, 'CUSCOPE_SYNCHRONIZATION_TYPE_STREAM_QUERY', 'Stream query');"
	"CREATE TABLE ENUM_CUDA_KERNEL_LAUNCH_TYPE(id INTEGER PRIMARY KEY, name TEXT, label TEXT);"
	"INSERT INTO ENUM_CUDA_KERNEL_LAUNCH_TYPE VALUES"
	" (0, 'CUDA_KERNEL_LAUNCH_TYPE_UNKNOWN', 'Unknown'),"
	" (1, 'CUDA_KERNEL_LAUNCH_TYPE_REGULAR', 'Regular'),"
	" (2, 'CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE', 'Coop Single Device'),"
	" (3, 'CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE', 'Coop Multi Device');"
	/* the call stacks of the API rows (callchainId), innermost frame at depth 0 */
	"CREATE TABLE CUDA_CALLCHAINS(id INTEGER NOT NULL, symbol INTEGER, module INTEGER, "
	"unresolved INTEGER, originalIP INTEGER, stackDepth INTEGER NOT NULL, "
	"PRIMARY KEY (id, stackDepth));"
	"INSERT INTO CUDA_CALLCHAINS SELECT s.id, f.symbolId, coalesce(f.moduleId, f.fileId), "
	"f.symbolId IS NULL, f.pc, s.depth FROM STACKS s JOIN STACK_FRAMES f ON f.id = s.frameId "
	"ORDER BY s.id, s.depth;";

/* Everything the copy gets, in one transaction. */
static int add_names(struct nsys *n)
{
	int rc = exec(n, "BEGIN; CREATE INDEX nsys_string_value ON StringIds(value)");

	if (!rc && (sqlite3_prepare_v2(n->db, "SELECT id FROM StringIds WHERE value = ?", -1,
				       &n->find, NULL) != SQLITE_OK ||
		    sqlite3_prepare_v2(n->db, "INSERT INTO StringIds(value) VALUES (?)", -1,
				       &n->add, NULL) != SQLITE_OK))
		rc = sql_fail(n, "StringIds");
	if (!rc)
		rc = kernel_names(n);
	if (!rc)
		rc = launches(n);
	if (!rc)
		rc = process_names(n);
	if (!rc)
		rc = rebuild(
			n, CS_EV_KERNEL,
			"SELECT %s, x.pid << 24 AS globalPid, nm.shortName AS shortName, "
			"nm.demangledName AS demangledName, x.nameId AS mangledName, "
			"CASE WHEN x.launchCbid IS NULL THEN 0 WHEN x.launchApiKind IN (0, 1) "
			"AND x.launchCbid IN (269, 270) OR x.launchApiKind IN (0, 2) AND "
			"x.launchCbid IN (477, 478) THEN 2 WHEN x.launchApiKind IN (0, 1) AND "
			"x.launchCbid = 272 OR x.launchApiKind IN (0, 2) AND x.launchCbid = 480 "
			"THEN 3 ELSE 1 END AS launchType "
			"FROM CUPTI_ACTIVITY_KIND_KERNEL x LEFT JOIN temp.nsys_names nm "
			"ON nm.nameId = x.nameId ORDER BY x.rowid");
	if (!rc)
		rc = rebuild(
			n, CS_EV_MEMCPY,
			"SELECT %s, x.pid << 24 AS globalPid FROM CUPTI_ACTIVITY_KIND_MEMCPY x "
			"ORDER BY x.rowid");
	if (!rc)
		rc = rebuild(
			n, CS_EV_MEMSET,
			"SELECT %s, x.pid << 24 AS globalPid FROM CUPTI_ACTIVITY_KIND_MEMSET x "
			"ORDER BY x.rowid");
	/* the API rows and the launches without one, in time order (unknown starts first) */
	if (!rc)
		rc = rebuild(n, CS_EV_API,
			     "SELECT start, \"end\", pid, tid, apiKind, cbid, correlationId, "
			     "returnValue, nameId, stackId, (pid << 24) | (tid & 16777215) AS "
			     "globalTid, fromLaunch, stackId AS callchainId FROM (SELECT %s, 0 AS "
			     "fromLaunch, x.rowid AS "
			     "ord FROM CUPTI_ACTIVITY_KIND_RUNTIME x UNION ALL SELECT l.start, "
			     "l.\"end\", l.pid, l.tid, CASE WHEN l.apiKind = 2 THEN 2 ELSE 1 END, "
			     "l.cbid, l.correlationId, 0, nm.nameId, l.stackId, 1, l.ord FROM "
			     "temp.nsys_launch l JOIN temp.nsys_launch_names nm ON nm.cls = l.cls "
			     "AND nm.apiKind IS l.apiKind AND nm.cbid IS l.cbid AND nm.isAsync IS "
			     "l.isAsync WHERE l.api = 0) ORDER BY start IS NOT NULL, start, "
			     "fromLaunch, ord");
	if (!rc)
		rc = rebuild(n, CS_EV_SYNC,
			     "SELECT %s, x.pid << 24 AS globalPid FROM "
			     "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION x ORDER BY x.rowid");
	if (!rc)
		rc = rebuild(
			n, CS_EV_MEMORY,
			"SELECT %s, x.pid << 24 AS globalPid FROM CUDA_GPU_MEMORY_USAGE_EVENTS "
			"x ORDER BY x.rowid");
	if (!rc) {
		/* a trace written before NVTX payloads were recorded has no payloadId */
		uint64_t have = 0;
		const char *payload;
		char select[1024];

		rc = stored_columns(n, CS_EV_NVTX, &have);
		payload = have & UINT64_C(1) << CS_COL_NVTX_payloadId ? "x.payloadId" : "NULL";
		snprintf(select, sizeof(select),
			 "SELECT %%s, s.value AS text, CASE x.nvtxType WHEN 1 THEN 59 WHEN 2 THEN "
			 "60 WHEN 3 THEN 34 END AS eventType, (x.pid << 24) | (x.tid & 16777215) AS "
			 "globalTid, CASE WHEN x.endTid != 0 THEN (x.pid << 24) | (x.endTid & "
			 "16777215) END AS endGlobalTid, %s AS jsonTextId, p.value AS jsonText FROM "
			 "NVTX_EVENTS x LEFT JOIN StringIds s ON s.id = x.textId LEFT JOIN StringIds "
			 "p ON p.id = %s ORDER BY x.rowid",
			 payload, payload);
		if (!rc)
			rc = rebuild(n, CS_EV_NVTX, select);
	}
	if (!rc)
		rc = exec(n, "INSERT OR REPLACE INTO EVENT_TABLE_INFO SELECT "
			     "'CUPTI_ACTIVITY_KIND_RUNTIME', count(*), min(start), "
			     "max(coalesce(\"end\", start)), max(\"end\" - start) FROM "
			     "CUPTI_ACTIVITY_KIND_RUNTIME");
	if (!rc)
		rc = chip_names(n);
	if (!rc)
		rc = exec(n, "INSERT OR REPLACE INTO META VALUES ('nsys_compat', '1')");
	if (!rc)
		rc = export_meta(n);
	if (!rc)
		rc = exec(n, enum_sql);
	if (!rc)
		rc = exec_internal(n, "ALTER TABLE TARGET_INFO_CUDA_STREAM ADD COLUMN processId "
				      "INTEGER");
	if (!rc)
		rc = exec(n, "UPDATE TARGET_INFO_CUDA_STREAM SET processId = pid");
	sqlite3_finalize(n->find);
	sqlite3_finalize(n->add);
	n->find = n->add = NULL;
	if (!rc)
		rc = exec(n, "DROP INDEX nsys_string_value; COMMIT");
	if (!rc)
		rc = exec_internal(n, "VACUUM");
	else
		sqlite3_exec(n->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/*
 * What SQL may do on the copy: this file's statements, and nothing a file could add. Reading goes
 * through the same rules as a reader's (guard.c: inside a view, only an event table's view reading
 * its _DATA table); writing is creating, filling, altering and dropping the tables and the index
 * that add_names() makes, at top level (no trigger: the copy has none, and they are off). No
 * ATTACH, DETACH, view, trigger or virtual table, no function beyond the aggregates and coalesce().
 */
static int copy_authorizer(void *arg, int action, const char *a1, const char *a2, const char *db,
			   const char *inner)
{
	struct nsys *n = arg;

	(void)db;
	/* what SQLite runs for an ALTER TABLE or VACUUM of ours: an ATTACH only of a temporary */
	if (n->internal && !inner && (action != SQLITE_ATTACH || (a1 && !a1[0])))
		return SQLITE_OK;
	switch (action) {
	case SQLITE_FUNCTION:
	case SQLITE_SELECT:
	case SQLITE_READ:
		/* the reader's rules, which know the event views */
		return cs_sql_read_authorizer(&n->guard, action, a1, a2, db, inner);
	case SQLITE_INSERT:
	case SQLITE_UPDATE:
	case SQLITE_DELETE:
	case SQLITE_CREATE_TABLE:
	case SQLITE_CREATE_TEMP_TABLE:
	case SQLITE_CREATE_INDEX:
	case SQLITE_CREATE_TEMP_INDEX:
	case SQLITE_DROP_TABLE:
	case SQLITE_DROP_VIEW:
	case SQLITE_DROP_INDEX:
	case SQLITE_ALTER_TABLE:
	case SQLITE_REINDEX: /* of the index made on StringIds */
	case SQLITE_TRANSACTION:
		if (!inner)
			return SQLITE_OK;
		break;
	case SQLITE_PRAGMA:
		if (!inner && a1 &&
		    (!sqlite3_stricmp(a1, "table_xinfo") || !sqlite3_stricmp(a1, "journal_mode")))
			return SQLITE_OK;
		break;
	default:
		break;
	}
	n->denied = 1;
	return SQLITE_DENY;
}

/*
 * Copy the database at src into the new file tmp, and check the copy as a reader checks a trace
 * (cs_schema_check_db(): what is checked is what the copy holds, whatever src became since the
 * trace was opened); the copy's connection is hardened like a reader's, with copy_authorizer().
 */
static int copy_db(struct nsys *n, const char *tmp)
{
	sqlite3 *from = NULL;
	sqlite3_backup *b;
	char *uri = cs_sql_ro_uri(n->src);
	int rc;

	if (!uri)
		return cs_error_set(n->err, CS_ERR_NOMEM, "out of memory");
	rc = sqlite3_open_v2(uri, &from, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
	free(uri);
	if (rc != SQLITE_OK) {
		sqlite3_close(from);
		return cs_error_set(n->err, CS_ERR_NOT_FOUND, "cannot open '%s'", n->src);
	}
	rc = sqlite3_open_v2(tmp, &n->db, SQLITE_OPEN_READWRITE, NULL);
	if (rc == SQLITE_OK) {
		cs_sql_harden(n->db, 1);
		b = sqlite3_backup_init(n->db, "main", from, "main");
		rc = b ? sqlite3_backup_step(b, -1) : SQLITE_ERROR;
		if (b)
			sqlite3_backup_finish(b);
	}
	sqlite3_close(from);
	if (rc != SQLITE_DONE)
		return sql_fail(n, "copy");
	rc = cs_schema_check_db(n->db, n->src, NULL, &n->guard, n->err);
	if (rc)
		return rc;
	sqlite3_set_authorizer(n->db, copy_authorizer, n);
	/* a trace in WAL mode gives a copy in WAL mode: the copy is one file */
	return exec(n, "PRAGMA journal_mode = DELETE");
}

int cs_nsys_compat_write(const char *src, const char *out, int64_t *bytes, cs_error *err)
{
	struct nsys n = {NULL, err, src, NULL, NULL, {0}, 0, 0};
	struct stat sb;
	char *tmp;
	int rc;

	if (bytes)
		*bytes = 0;
	/* a new file (nothing already there is opened) with the mode every output gets: 0666
	 * less the umask, not mkstemp's 0600 */
	tmp = cs_make_temp_beside(out, ".tmp.");
	if (!tmp)
		return errno == ENOMEM ? cs_error_set(err, CS_ERR_NOMEM, "out of memory")
				       : cs_error_set(err, CS_ERR_IO, "cannot create '%s': %s", out,
						      strerror(errno));
	rc = copy_db(&n, tmp);
	if (!rc)
		rc = add_names(&n);
	if (n.db && sqlite3_close(n.db) != SQLITE_OK && !rc)
		rc = cs_error_set(err, CS_ERR_IO, "cannot write '%s'", out);
	if (!rc && rename(tmp, out))
		rc = cs_error_set(err, CS_ERR_IO, "cannot write '%s': %s", out, strerror(errno));
	if (rc) {
		unlink(tmp);
		free(tmp);
		return rc;
	}
	if (bytes && !stat(out, &sb))
		*bytes = sb.st_size;
	free(tmp);
	return 0;
}
