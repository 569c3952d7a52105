/*
 * trace_internal.h - what the trace store's files (schema.c, guard.c, writer.c, reader.c) share
 * and nothing else sees: the event tables' columns as a table (from include/cuscope/columns.def),
 * schema creation and the checks of an opened file.
 */
#ifndef CUSCOPE_TRACE_INTERNAL_H
#define CUSCOPE_TRACE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "cuscope/error.h"
#include "cuscope/trace.h"

/* The table that holds, per event table, its row count, time bounds and longest event. */
#define CS_TABLE_INFO "EVENT_TABLE_INFO"
/* Name under which the writer attaches its staging database. */
#define CS_STAGE_SCHEMA "stage"

/* How a column is bound and read (columns.def's TYPE). */
enum cs_column_type {
	CS_COLTYPE_TS,
	CS_COLTYPE_END,
	CS_COLTYPE_INT,
	CS_COLTYPE_ID,
	CS_COLTYPE_U64,
	CS_COLTYPE_BYTES
};

/* One column of an event table, as columns.def gives it. */
struct cs_column_def {
	const char *name;  /* SQL name */
	const char *field; /* the C struct's member */
	enum cs_column_type type;
	int base; /* index of the column it is stored relative to (an END's start), or -1 */
	int late; /* added to the stored table after its rows (schema.c) */
};

/* One event table: its columns, in the order the writer binds and the reader reads them. */
struct cs_event_table_def {
	const char *columns; /* comma-separated, no spaces; every column is INTEGER */
	const struct cs_column_def *col;
	int ncolumns;
};

/* Indexed by enum cs_event_kind: columns.def as a table (schema.c). */
extern const struct cs_event_table_def cs_event_table_defs[CS_EV_COUNT];

/* The index of the column called name in a kind's table, or -1. */
int cs_event_column_find(enum cs_event_kind kind, const char *name);

/* Run SQL without parameters; on failure copy SQLite's message into msg. Returns 0 or a cs_err
 * code. */
int cs_sql_exec(sqlite3 *db, const char *sql, char *msg, size_t msglen);
/* The cs_err code for an SQLite result code. */
int cs_sql_code(int sqlite_rc);

/* Create every table in main and the event tables in the attached staging database. */
int cs_schema_create(sqlite3 *db, char *msg, size_t msglen);
/*
 * Move the staged events into the main tables in (start, arrival) order, so that rowid order is
 * time order, then build the indices. sorted[kind] says the staged rows already arrived in that
 * order.
 */
int cs_schema_build(sqlite3 *db, const int sorted[CS_EV_COUNT], char *msg, size_t msglen);

/* ---- guard.c: connections to files from elsewhere (docs/security.md) ---- */

/* The longest string, blob or row a connection to a trace reads (SQLITE_LIMIT_LENGTH). */
#define CS_SQL_MAX_LENGTH (8 * 1024 * 1024)

/* What the authorizer of a reading connection saw: denied is set when it refused something. */
struct cs_sql_guard {
	int denied;
};

/* "file:PATH?mode=ro&immutable=1", PATH percent-encoded: open with SQLITE_OPEN_URI. Read-only and
 * without locks, so that no -wal, -shm or -journal file is made or read beside a trace. Malloc'd. */
char *cs_sql_ro_uri(const char *path);
/* Defensive mode, no trusted schema, no triggers, no extensions, and tight sqlite3_limit()s
 * (copy: the nsys copy, whose queries unite a few selects). */
void cs_sql_harden(sqlite3 *db, int copy);
/* The authorizer of a connection that reads a trace (guard.c says what it lets through); g's
 * denied is set when it refuses. */
void cs_sql_guard_reader(sqlite3 *db, struct cs_sql_guard *g);
/* That authorizer (arg: a struct cs_sql_guard *), for one that adds to it (the nsys copy's). */
int cs_sql_read_authorizer(void *arg, int action, const char *a1, const char *a2, const char *db,
			   const char *inner);
/* Checks of a file before SQLite opens it: exists, is not empty, is SQLite, is as long as its
 * header says. */
int cs_schema_check_file(const char *path, cs_error *err);

/* The schema objects of the file: no trigger, no virtual table, the side tables tables with the
 * columns a reader reads, the event tables tables or views over tables, no generated column in
 * any of them. A one-line error otherwise. */
int cs_schema_check_objects(sqlite3 *db, const char *path, cs_error *err);
/* All the checks of an opened file (schema version, objects, event tables); installs the reading
 * authorizer with g, which stays. *version gets the schema version. */
int cs_schema_check_db(sqlite3 *db, const char *path, int *version, struct cs_sql_guard *g,
		       cs_error *err);

#endif
