/*
 * trace_internal.h - what the trace store's files (schema.c, writer.c, reader.c) share and nothing
 * else sees: the event tables' columns as a table (from include/cuscope/columns.def), schema
 * creation and the checks of an opened file.
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

/* Checks of a file before SQLite opens it: exists, is not empty, is SQLite, is as long as its
 * header says. */
int cs_schema_check_file(const char *path, cs_error *err);
/* Checks of an opened file: a cuscope trace, of a schema this build reads, with every table. */
int cs_schema_check_db(sqlite3 *db, const char *path, int *version, cs_error *err);

#endif
