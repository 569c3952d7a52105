/*
 * guard.c - reading a file that someone else wrote (docs/security.md): how a connection to it is
 * opened (read-only and immutable: no lock, no -wal or -shm beside it), hardened (defensive mode,
 * no trusted schema, no triggers, tight limits), what SQL may do on it (an authorizer on every
 * connection that reads it), which schema objects a trace may hold, with which columns of which
 * declared types, and the checks of a file before and after SQLite opens it (its header, its
 * schema version, its objects and event tables).
 *
 * SQLite's guidance for databases from untrusted sources ("Defense Against The Dark Arts",
 * sqlite.org/security.html) is followed item by item; what each check refuses is in
 * docs/trace-format.md, "Reading hostile files".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuscope/files.h"
#include "cuscope/trace.h"
#include "trace_internal.h"

#define SQLITE_MAGIC "SQLite format 3"

char *cs_sql_ro_uri(const char *path)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(path);
	char *uri = malloc(3 * n + 40), *p;

	if (!uri)
		return NULL;
	/* "file:rel" or "file://" "/abs": an empty authority, so "//x" stays a path */
	p = uri + sprintf(uri, path[0] == '/' ? "file://" : "file:");
	for (const unsigned char *s = (const unsigned char *)path; *s; s++) {
		if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		    strchr("/-._~", *s)) {
			*p++ = (char)*s;
		} else {
			*p++ = '%';
			*p++ = hex[*s >> 4];
			*p++ = hex[*s & 15];
		}
	}
	strcpy(p, "?mode=ro&immutable=1");
	return uri;
}

void cs_sql_harden(sqlite3 *db, int copy)
{
	static const struct {
		int id, value;
	} limits[] = {
		{SQLITE_LIMIT_LENGTH, CS_SQL_MAX_LENGTH},
		{SQLITE_LIMIT_SQL_LENGTH, 100000},
		{SQLITE_LIMIT_COLUMN, 256},
		{SQLITE_LIMIT_EXPR_DEPTH, 64},
		{SQLITE_LIMIT_VDBE_OP, 100000},
		{SQLITE_LIMIT_FUNCTION_ARG, 8},
		{SQLITE_LIMIT_ATTACHED, 0},
		{SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 64},
		{SQLITE_LIMIT_VARIABLE_NUMBER, 32},
		{SQLITE_LIMIT_TRIGGER_DEPTH, 1},
		{SQLITE_LIMIT_WORKER_THREADS, 0},
	};

	sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
	sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
	sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL);
	sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++)
		sqlite3_limit(db, limits[i].id, limits[i].value);
	/* the nsys copy unites the API rows and the launches, and the thread ids of four tables */
	sqlite3_limit(db, SQLITE_LIMIT_COMPOUND_SELECT, copy ? 8 : 2);
}

/* 1 when name is one of the event tables' names (the views of version 2, the tables of 1). */
static int event_table(const char *name)
{
	for (int k = 0; name && k < CS_EV_COUNT; k++)
		if (!sqlite3_stricmp(name, cs_event_kind_table(k)))
			return 1;
	return 0;
}

/* 1 when table is view's _DATA table ("X_DATA" for the view X). */
static int data_of(const char *table, const char *view)
{
	size_t n = strlen(view);

	return table && !sqlite3_strnicmp(table, view, (int)n) && !sqlite3_stricmp(table + n, "_DATA");
}

/*
 * What SQL may do on a connection that reads a trace: read tables and call the aggregates
 * (cuscope's own cs_scan() of the bulk scans among them) and coalesce() that the reader's queries
 * call; inside a view, only an event table's view reading
 * its _DATA table through coalesce() (build_kind()'s views in schema.c). No recursion, no attached
 * database, no pragma but the table listing of the open checks, no writing.
 */
int cs_sql_read_authorizer(void *arg, int action, const char *a1, const char *a2, const char *db,
			   const char *inner)
{
	static const char *const functions[] = {"coalesce", "count", "min", "max", "total",
						 "cs_scan"};
	struct cs_sql_guard *g = arg;

	(void)db;
	switch (action) {
	case SQLITE_SELECT:
		if (!inner || event_table(inner))
			return SQLITE_OK;
		break;
	case SQLITE_READ:
		if (!inner || (event_table(inner) && data_of(a1, inner)))
			return SQLITE_OK;
		break;
	case SQLITE_FUNCTION:
		for (size_t i = 0; a2 && i < sizeof(functions) / sizeof(functions[0]); i++)
			if (!sqlite3_stricmp(a2, functions[i]) && (!inner || i == 0))
				return SQLITE_OK;
		break;
	case SQLITE_PRAGMA:
		if (!inner && a1 && !sqlite3_stricmp(a1, "table_xinfo"))
			return SQLITE_OK;
		break;
	default:
		break;
	}
	if (g)
		g->denied = 1;
	return SQLITE_DENY;
}

void cs_sql_guard_reader(sqlite3 *db, struct cs_sql_guard *g)
{
	sqlite3_set_authorizer(db, cs_sql_read_authorizer, g);
}

/* ---- the schema objects a trace may hold ---- */

/*
 * The tables other than the event tables that a reader reads, the columns it reads of each, and
 * how it reads them (types: one letter per column, I an integer, T text).
 */
static const struct {
	const char *name;
	int required;
	const char *types;
	const char *columns[13];
} side_tables[] = {
	{"META", 1, "TT", {"key", "value"}},
	{"StringIds", 1, "IT", {"id", "value"}},
	{CS_TABLE_INFO, 1, "TIIII", {"tableName", "rowCount", "minStart", "maxEnd", "maxDuration"}},
	{"PROCESSES",
	 1,
	 "IIIITIIIIIII",
	 {"pid", "ppid", "start", "end", "commandLine", "rank", "localRank", "worldSize",
	  "exitCode", "usedCuda", "droppedRecords", "cuptiDeviceBytes"}},
	{"TARGET_INFO_GPU",
	 1,
	 "IITTIIIIII",
	 {"pid", "deviceId", "uuid", "name", "totalMemory", "smCount", "computeMajor",
	  "computeMinor", "clockRate", "memoryBandwidth"}},
	{"TARGET_INFO_CUDA_STREAM",
	 1,
	 "IIIIII",
	 {"pid", "deviceId", "contextId", "streamId", "isDefault", "priority"}},
	{"STACK_FRAMES",
	 1,
	 "IIIIIIII",
	 {"id", "kind", "pc", "moduleId", "symbolId", "offset", "fileId", "line"}},
	{"STACKS", 1, "III", {"id", "depth", "frameId"}},
	{"FINDINGS", 0, "", {NULL}},
	{"TIMELINE_OVERVIEW_TRACKS",
	 0,
	 "ITIIIIIII",
	 {"trackId", "kind", "pid", "deviceId", "streamId", "tid", "depth", "events", "busy"}},
	{"TIMELINE_OVERVIEW", 0, "IIII", {"trackId", "bin", "busy", "events"}},
};
#define NSIDE ((int)(sizeof(side_tables) / sizeof(side_tables[0])))

static int refuse(const char *path, cs_error *err, const char *what, const char *name)
{
	char why[160];

	snprintf(why, sizeof(why), what, name);
	return cs_error_set(err, CS_ERR_NOT_TRACE, "cannot open '%s': not a cuscope trace (%s)",
			    path, why);
}

static int sql_failed(sqlite3 *db, int rc, const char *path, cs_error *err)
{
	int code = cs_sql_code(rc);

	if (code == CS_ERR_CORRUPT)
		return cs_error_set(err, code, "cannot open '%s': truncated or damaged file", path);
	return cs_error_set(err, code ? code : CS_ERR_SQL, "cannot open '%s': %s", path,
			    sqlite3_errmsg(db));
}

/*
 * The type a column declared as decl is read as, by SQLite's affinity rules (sqlite.org/
 * datatype3.html, 3.1): 'I' INTEGER, 'T' TEXT, 'B' BLOB, 'R' REAL, 'N' NUMERIC; 0 for no
 * declared type (values are kept as they were stored: what CREATE TABLE ... AS SELECT gives a
 * column computed by an expression, as the nsys copy's event tables have).
 */
static char affinity(const char *decl)
{
	static const struct {
		const char *word;
		char type;
	} words[] = {{"INT", 'I'},  {"CHAR", 'T'}, {"CLOB", 'T'}, {"TEXT", 'T'},
		     {"BLOB", 'B'}, {"REAL", 'R'}, {"FLOA", 'R'}, {"DOUB", 'R'}};
	size_t n = decl ? strlen(decl) : 0;

	if (n == 0)
		return 0;
	for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
		size_t len = strlen(words[w].word);

		for (size_t i = 0; i + len <= n; i++)
			if (!sqlite3_strnicmp(decl + i, words[w].word, (int)len))
				return words[w].type;
	}
	return 'N';
}

/* A name from the file, for a message: at most size - 1 bytes, printable ASCII ('?' for the
 * rest). */
static void clean_name(char *out, size_t size, const char *name)
{
	size_t n = 0;

	for (; name && *name && n + 1 < size; name++)
		out[n++] = *name >= 0x20 && *name < 0x7f ? *name : '?';
	out[n] = '\0';
}

/* The type an event table's stored column is read as: 'I' for a column of columns.def (or its
 * nameRel form, stored relative to its base), 0 for a column the reader does not read. */
static char event_column_type(int kind, const char *column)
{
	const struct cs_event_table_def *d = &cs_event_table_defs[kind];

	for (int i = 0; column && i < d->ncolumns; i++) {
		size_t n = strlen(d->col[i].name);

		if (!sqlite3_strnicmp(column, d->col[i].name, (int)n) &&
		    (!column[n] || (d->col[i].base >= 0 && !sqlite3_stricmp(column + n, "Rel"))))
			return 'I';
	}
	return 0;
}

/*
 * Table name (one of ours) exists: no generated column, every column of columns (NULL-ended,
 * may be NULL) there, and each declared with the type the reader reads it as (types[i], or for
 * event table kind >= 0 every column of columns.def), or with none.
 */
static int check_table_columns(sqlite3 *db, const char *path, const char *name,
			       const char *const *columns, const char *types, int kind,
			       cs_error *err)
{
	sqlite3_stmt *st = NULL;
	uint32_t found = 0;
	int rc, i;

	char sql[128];

	/* name is one of cuscope's own (side_tables[], an event table), never one from the file */
	snprintf(sql, sizeof(sql), "PRAGMA table_xinfo(\"%s\")", name);
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sql_failed(db, rc, path, err);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *c = (const char *)sqlite3_column_text(st, 1);
		const char *decl = (const char *)sqlite3_column_text(st, 2);
		char want = kind >= 0 ? event_column_type(kind, c) : 0, got;

		if (sqlite3_column_int(st, 6) != 0) { /* 2, 3: generated; 1: of a virtual table */
			sqlite3_finalize(st);
			return refuse(path, err, "%s has a generated column", name);
		}
		for (i = 0; columns && columns[i] && i < 32; i++)
			if (c && !sqlite3_stricmp(c, columns[i])) {
				found |= UINT32_C(1) << i;
				want = types[i];
			}
		got = affinity(decl);
		if (want && got && got != want) {
			char col[40], type[40];

			clean_name(col, sizeof(col), c);
			clean_name(type, sizeof(type), decl);
			sqlite3_finalize(st);
			return cs_error_set(
				err, CS_ERR_NOT_TRACE,
				"cannot open '%s': not a cuscope trace (%s.%s is declared "
				"%s, not %s)",
				path, name, col, type, want == 'I' ? "INTEGER" : "TEXT");
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sql_failed(db, rc, path, err);
	for (i = 0; columns && columns[i] && i < 32; i++)
		if (!(found & UINT32_C(1) << i)) {
			char what[96];

			snprintf(what, sizeof(what), "%%s has no column %s", columns[i]);
			return refuse(path, err, what, name);
		}
	return CS_OK;
}

int cs_schema_check_objects(sqlite3 *db, const char *path, cs_error *err)
{
	/* per side table and event table: 0 absent, 1 a table, 2 a view; and the _DATA tables */
	int side[NSIDE] = {0}, ev[CS_EV_COUNT] = {0}, data[CS_EV_COUNT] = {0};
	sqlite3_stmt *st = NULL;
	int rc;

	rc = sqlite3_prepare_v2(db, "SELECT type, name, sql FROM sqlite_master", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sql_failed(db, rc, path, err);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *type = (const char *)sqlite3_column_text(st, 0);
		const char *name = (const char *)sqlite3_column_text(st, 1);
		const char *sql = (const char *)sqlite3_column_text(st, 2);
		int is_table = type && !strcmp(type, "table"), is_view = type && !strcmp(type, "view");
		const char *why = NULL, *what = NULL;

		if (!type || !name)
			continue;
		if (!strcmp(type, "trigger"))
			why = "it holds a trigger";
		else if (is_table && sql && !sqlite3_strnicmp(sql, "CREATE VIRTUAL", 14))
			why = "it holds a virtual table";
		for (int i = 0; !why && i < NSIDE; i++)
			if (!sqlite3_stricmp(name, side_tables[i].name)) {
				side[i] = is_table ? 1 : 2;
				if (!is_table)
					why = "%s is not a table", what = side_tables[i].name;
			}
		for (int k = 0; !why && k < CS_EV_COUNT; k++) {
			const char *t = cs_event_kind_table(k);

			if (!sqlite3_stricmp(name, t)) {
				ev[k] = is_table ? 1 : is_view ? 2 : 0;
				if (!is_table && !is_view)
					why = "%s is not a table or view", what = t;
			} else if (data_of(name, t)) {
				data[k] = 1;
				if (!is_table)
					why = "%s_DATA is not a table", what = t;
			}
		}
		if (why) {
			sqlite3_finalize(st);
			return refuse(path, err, why, what);
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sql_failed(db, rc, path, err);

	for (int i = 0; i < NSIDE; i++) {
		if (!side[i] && side_tables[i].required)
			return cs_error_set(err, CS_ERR_CORRUPT,
					    "cannot open '%s': damaged file (table %s is missing)",
					    path, side_tables[i].name);
		if (side[i] &&
		    (rc = check_table_columns(db, path, side_tables[i].name, side_tables[i].columns,
					      side_tables[i].types, -1, err)))
			return rc;
	}
	for (int k = 0; k < CS_EV_COUNT; k++) {
		const char *t = cs_event_kind_table(k);
		char name[96];

		if (!ev[k])
			return cs_error_set(err, CS_ERR_CORRUPT,
					    "cannot open '%s': damaged file (table %s is missing)",
					    path, t);
		if (ev[k] == 2 && !data[k])
			return cs_error_set(err, CS_ERR_CORRUPT,
					    "cannot open '%s': damaged file (table %s_DATA is "
					    "missing)",
					    path, t);
		snprintf(name, sizeof(name), ev[k] == 1 ? "%s" : "%s_DATA", t);
		if ((rc = check_table_columns(db, path, name, NULL, NULL, k, err)))
			return rc;
	}
	return CS_OK;
}

/* ---- the checks of a file the reader opens ---- */

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* strerror() in the lower case of cuscope's messages. */
static const char *errno_text(int e, char *buf, size_t len)
{
	snprintf(buf, len, "%s", strerror(e));
	if (buf[0] >= 'A' && buf[0] <= 'Z' && !(buf[1] >= 'A' && buf[1] <= 'Z'))
		buf[0] = (char)(buf[0] - 'A' + 'a');
	return buf;
}

int cs_schema_check_file(const char *path, cs_error *err)
{
	unsigned char h[100];
	char ebuf[128];
	struct stat st;
	size_t got;
	ssize_t n;
	uint32_t page_size, pages;
	int fd;

	if (stat(path, &st)) {
		if (errno == ENOENT || errno == ENOTDIR)
			return cs_error_set(err, CS_ERR_NOT_FOUND, "cannot open '%s': no such file",
					    path);
		return cs_error_set(err, CS_ERR_IO, "cannot open '%s': %s", path,
				    errno_text(errno, ebuf, sizeof(ebuf)));
	}
	if (S_ISDIR(st.st_mode))
		return cs_error_set(err, CS_ERR_IO, "cannot open '%s': is a directory", path);
	if (!S_ISREG(st.st_mode))
		return cs_error_set(err, CS_ERR_NOT_SQLITE, "cannot open '%s': not a regular file",
				    path);
	if (st.st_size == 0)
		return cs_error_set(err, CS_ERR_NOT_SQLITE,
				    "cannot open '%s': not a cuscope trace (empty file)", path);

	/* without blocking: a FIFO put there since the stat above is refused, not waited on */
	fd = cs_open_regular(path, 0);
	if (fd < 0 && errno == CS_ENOTREG)
		return cs_error_set(err, CS_ERR_NOT_SQLITE, "cannot open '%s': not a regular file",
				    path);
	if (fd < 0)
		return cs_error_set(err, CS_ERR_IO, "cannot open '%s': %s", path,
				    errno_text(errno, ebuf, sizeof(ebuf)));
	n = cs_read_full(fd, h, sizeof(h));
	if (n < 0) {
		int e = errno;

		close(fd);
		return cs_error_set(err, CS_ERR_IO, "cannot open '%s': %s", path,
				    errno_text(e, ebuf, sizeof(ebuf)));
	}
	got = (size_t)n;
	close(fd);

	if (memcmp(h, SQLITE_MAGIC, got < 16 ? got : 16) != 0)
		return cs_error_set(
			err, CS_ERR_NOT_SQLITE,
			"cannot open '%s': not a cuscope trace (not an SQLite database)", path);
	if (got < sizeof(h))
		goto corrupt;
	page_size = (uint32_t)h[16] << 8 | h[17];
	if (page_size == 1)
		page_size = 65536;
	if (page_size < 512 || (page_size & (page_size - 1)))
		goto corrupt;
	if ((uint64_t)st.st_size % page_size)
		goto corrupt;
	/* The header's page count is valid when "version-valid-for" equals the change counter. */
	pages = be32(h + 28);
	if (pages && be32(h + 92) == be32(h + 24) &&
	    (uint64_t)st.st_size < (uint64_t)pages * page_size)
		goto corrupt;
	return CS_OK;
corrupt:
	return cs_error_set(err, CS_ERR_CORRUPT, "cannot open '%s': truncated or damaged file",
			    path);
}

/* Map an SQLite failure while checking an opened file to a one-line error. */
static int check_failed(sqlite3 *db, int rc, const char *path, cs_error *err)
{
	int code = cs_sql_code(rc);

	if (code == CS_ERR_CORRUPT)
		return cs_error_set(err, code, "cannot open '%s': truncated or damaged file", path);
	return cs_error_set(err, code ? code : CS_ERR_SQL, "cannot open '%s': %s", path,
			    sqlite3_errmsg(db));
}

/*
 * What reading an event table may do: read that table or, behind its view, its _DATA table, and
 * call coalesce() (build_kind()'s views); no other table, function or recursion. A file whose event
 * table does more was not written by cuscope. The connection's authorizer (guard.c) decides.
 */
static int check_event_tables(sqlite3 *db, const char *path, struct cs_sql_guard *g, cs_error *err)
{
	for (int k = 0; k < CS_EV_COUNT; k++) {
		const char *table = cs_event_kind_table(k);
		sqlite3_stmt *st = NULL;
		char sql[128];
		int rc;

		snprintf(sql, sizeof(sql), "SELECT * FROM %s", table);
		g->denied = 0;
		rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
		sqlite3_finalize(st);
		if (g->denied)
			return cs_error_set(
				err, CS_ERR_NOT_TRACE,
				"cannot open '%s': not a cuscope trace (%s is not a table "
				"or view that cuscope writes)",
				path, table);
		if (rc != SQLITE_OK)
			return check_failed(db, rc, path, err);
	}
	return CS_OK;
}

int cs_schema_check_db(sqlite3 *db, const char *path, int *version, struct cs_sql_guard *g,
		       cs_error *err)
{
	sqlite3_stmt *st = NULL;
	const char *text;
	char *end;
	long v;
	int rc;

	cs_sql_guard_reader(db, g);

	/* sqlite_master first: reading it fails on a damaged header or first page. */
	rc = sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return check_failed(db, rc, path, err);
	sqlite3_bind_text(st, 1, "META", -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	st = NULL;
	if (rc == SQLITE_DONE)
		return cs_error_set(err, CS_ERR_NOT_TRACE,
				    "cannot open '%s': not a cuscope trace (no META table)", path);
	if (rc != SQLITE_ROW)
		return check_failed(db, rc, path, err);

	rc = sqlite3_prepare_v2(db, "SELECT value FROM META WHERE key = 'schema_version'", -1, &st,
				NULL);
	if (rc != SQLITE_OK)
		return check_failed(db, rc, path, err);
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE) {
		sqlite3_finalize(st);
		return cs_error_set(err, CS_ERR_NOT_TRACE,
				    "cannot open '%s': not a cuscope trace (no schema_version)",
				    path);
	}
	if (rc != SQLITE_ROW) {
		sqlite3_finalize(st);
		return check_failed(db, rc, path, err);
	}
	text = (const char *)sqlite3_column_text(st, 0);
	errno = 0;
	v = text ? strtol(text, &end, 10) : 0;
	if (!text || end == text || *end || errno || v < 1) {
		cs_error_set(err, CS_ERR_NOT_TRACE,
			     "cannot open '%s': not a cuscope trace (bad schema_version '%.32s')",
			     path, text ? text : "");
		sqlite3_finalize(st);
		return CS_ERR_NOT_TRACE;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (v > CS_SCHEMA_VERSION)
		return cs_error_set(err, CS_ERR_NEWER_SCHEMA,
				    "cannot open '%s': written by a newer cuscope (schema %ld, "
				    "this build reads %d)",
				    path, v, CS_SCHEMA_VERSION);
	if (version)
		*version = (int)v;

	/* event tables are views over _DATA tables from version 2 on, tables before */
	rc = cs_schema_check_objects(db, path, err);
	if (rc)
		return rc;
	return check_event_tables(db, path, g, err);
}
