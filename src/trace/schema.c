/*
 * schema.c - the trace file's schema, version 2 (docs/trace-format.md): the CREATE TABLE
 * statements, the step that lays the event tables out in time order when the writer finishes (and
 * stores them compactly, behind views with version 1's tables' names and columns). The checks the
 * reader runs on a file it opens (of version 1 or 2: readers query the same names) are guard.c's.
 *
 * Event tables have no secondary index: the writer stages events in a separate database and copies
 * them into the final tables sorted by (start, arrival), so that rowid order is time order and the
 * reader finds a time window by a binary search on rowid. That keeps a kernel under 80 bytes on
 * disk.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/strbuf.h"
#include "trace_internal.h"

/*
 * Each event table's columns, from columns.def: as readers see them (the view, in version 1's
 * order) and how they are stored (the _DATA table): a column with a base is stored as column -
 * base when base is known and as column when it is not (column nameRel); late columns are added
 * to the table after its rows are in, so that a row that has none of them stores none of them
 * (most rows).
 */

/* clang-format off */
/* Per kind, each field's place in its table: the base of a column names a field (or none). */
#define CS_EVENT_TABLE(KIND, name) enum { FIELD_##KIND##_none = -1,
#define CS_COLUMN(KIND, column, field, ctype, TYPE, base, late, label, UNIT) FIELD_##KIND##_##field,
#define CS_EVENT_TABLE_END(KIND, name) };
#include "cuscope/columns.def"

#define CS_EVENT_TABLE(KIND, name) static const struct cs_column_def KIND##_columns[] = {
#define CS_COLUMN(KIND, column, field, ctype, TYPE, base, late, label, UNIT) \
	{#column, #field, CS_COLTYPE_##TYPE, FIELD_##KIND##_##base, late},
#define CS_EVENT_TABLE_END(KIND, name) };
#include "cuscope/columns.def"

/* the comma-separated names: ",a,b,c" + 1 */
#define CS_EVENT_TABLE(KIND, name) [CS_EV_##KIND] = {(""
#define CS_COLUMN(KIND, column, field, ctype, TYPE, base, late, label, UNIT) "," #column
#define CS_EVENT_TABLE_END(KIND, name) ) + 1, KIND##_columns, CS_COL_##KIND##_COUNT},
const struct cs_event_table_def cs_event_table_defs[CS_EV_COUNT] = {
#include "cuscope/columns.def"
};

/* The scans hand a row over as an array of CS_SCAN_MAX_COLUMNS values. */
#define CS_EVENT_TABLE_END(KIND, name) \
	_Static_assert(CS_COL_##KIND##_COUNT <= CS_SCAN_MAX_COLUMNS, #KIND " has too many columns");
#include "cuscope/columns.def"
/* clang-format on */

/* clang-format off */
#define MISSING_TS    CS_TS_UNKNOWN
#define MISSING_END   CS_TS_UNKNOWN
#define MISSING_INT   0
#define MISSING_ID    CS_ID_NONE
#define MISSING_U64   0
#define MISSING_BYTES 0
void cs_event_clear(cs_event *ev, enum cs_event_kind kind)
{
	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	switch (kind) {
#define CS_EVENT_TABLE(KIND, name) \
	case CS_EV_##KIND: { \
		cs_##name *r = &ev->u.name;
#define CS_COLUMN(KIND, column, field, ctype, TYPE, base, late, label, UNIT) \
		r->field = MISSING_##TYPE;
#define CS_EVENT_TABLE_END(KIND, name) \
		break; \
	}
#include "cuscope/columns.def"
	case CS_EV_COUNT:
		break;
	}
}
/* clang-format on */

int cs_event_column_find(enum cs_event_kind kind, const char *name)
{
	const struct cs_event_table_def *d = &cs_event_table_defs[kind];

	for (int i = 0; i < d->ncolumns; i++)
		if (!strcmp(d->col[i].name, name))
			return i;
	return -1;
}

/* Tables other than the event tables, created in main only. */
static const char *const main_tables_sql[] = {
	"CREATE TABLE META(key TEXT PRIMARY KEY, value TEXT)",
	"CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL)",
	"CREATE TABLE " CS_TABLE_INFO "(tableName TEXT PRIMARY KEY, rowCount INTEGER NOT NULL, "
	"minStart INTEGER, maxEnd INTEGER, maxDuration INTEGER)",
	"CREATE TABLE PROCESSES(pid INTEGER NOT NULL, ppid INTEGER, start INTEGER, end INTEGER, "
	"commandLine TEXT, rank INTEGER, localRank INTEGER, worldSize INTEGER, exitCode INTEGER, "
	"usedCuda INTEGER, droppedRecords INTEGER, cuptiDeviceBytes INTEGER)",
	"CREATE TABLE TARGET_INFO_GPU(pid INTEGER NOT NULL, deviceId INTEGER NOT NULL, uuid TEXT, "
	"name TEXT, "
	"totalMemory INTEGER, smCount INTEGER, computeMajor INTEGER, computeMinor INTEGER, "
	"clockRate INTEGER, memoryBandwidth INTEGER)",
	"CREATE TABLE TARGET_INFO_CUDA_STREAM(pid INTEGER NOT NULL, deviceId INTEGER, contextId "
	"INTEGER, "
	"streamId INTEGER NOT NULL, isDefault INTEGER, priority INTEGER)",
	"CREATE TABLE STACK_FRAMES(id INTEGER PRIMARY KEY, kind INTEGER NOT NULL, pc INTEGER, "
	"moduleId INTEGER, symbolId INTEGER, offset INTEGER, fileId INTEGER, line INTEGER)",
	"CREATE TABLE STACKS(id INTEGER NOT NULL, depth INTEGER NOT NULL, frameId INTEGER NOT "
	"NULL, "
	"PRIMARY KEY(id, depth)) WITHOUT ROWID",
	/* empty: nothing writes findings, but readers before 2026-12 require the table */
	"CREATE TABLE FINDINGS(id INTEGER PRIMARY KEY, rule TEXT NOT NULL, severity INTEGER, start "
	"INTEGER, "
	"end INTEGER, steps TEXT, evidence TEXT, lostNsPerStep INTEGER, stepShare REAL, message "
	"TEXT, "
	"fix TEXT, stackId INTEGER)",
};

/*
 * Secondary indices built once the data is in place. Deliberately empty: event tables
 * are clustered by start (rowid order), StringIds, META and STACKS are keyed by what the reader
 * looks up, and a per-stream index on kernels, (deviceId, streamId, start), would cost about 18
 * bytes a kernel for queries that a scan of the time window serves.
 */
static const char *const index_sql[] = {
	NULL,
};

int cs_sql_code(int sqlite_rc)
{
	switch (sqlite_rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_ROW:
	case SQLITE_DONE:
		return CS_OK;
	case SQLITE_NOMEM:
		return CS_ERR_NOMEM;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return CS_ERR_CORRUPT;
	case SQLITE_IOERR:
	case SQLITE_FULL:
	case SQLITE_CANTOPEN:
	case SQLITE_READONLY:
	case SQLITE_PERM:
		return CS_ERR_IO;
	}
	return CS_ERR_SQL;
}

int cs_sql_exec(sqlite3 *db, const char *sql, char *msg, size_t msglen)
{
	char *emsg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &emsg);

	if (rc != SQLITE_OK) {
		if (msg && msglen)
			snprintf(msg, msglen, "%s", emsg ? emsg : sqlite3_errstr(rc));
		sqlite3_free(emsg);
		return cs_sql_code(rc) ? cs_sql_code(rc) : CS_ERR_SQL;
	}
	return CS_OK;
}

/* Run the SQL built in sb, then empty it. */
static int exec_built(sqlite3 *db, cs_strbuf *sb, char *msg, size_t msglen)
{
	int rc;

	if (sb->failed)
		return CS_ERR_NOMEM;
	rc = cs_sql_exec(db, cs_strbuf_str(sb), msg, msglen);
	cs_strbuf_reset(sb);
	return rc;
}

/* "CREATE TABLE stage.table(c1 INTEGER, c2 INTEGER, ...)": an event table as the writer binds it.
 */
static void stage_table_ddl(cs_strbuf *sb, enum cs_event_kind kind)
{
	const char *c = cs_event_table_defs[kind].columns;

	cs_strbuf_printf(sb, "CREATE TABLE %s.%s(", CS_STAGE_SCHEMA, cs_event_kind_table(kind));
	while (*c) {
		size_t n = strcspn(c, ",");

		cs_strbuf_add(sb, c, n);
		cs_strbuf_puts(sb, " INTEGER");
		c += n;
		if (*c == ',') {
			cs_strbuf_puts(sb, ", ");
			c++;
		}
	}
	cs_strbuf_puts(sb, ")");
}

int cs_schema_create(sqlite3 *db, char *msg, size_t msglen)
{
	cs_strbuf sb = CS_STRBUF_INIT;
	int rc = CS_OK;

	for (size_t i = 0; i < sizeof(main_tables_sql) / sizeof(main_tables_sql[0]); i++) {
		rc = cs_sql_exec(db, main_tables_sql[i], msg, msglen);
		if (rc)
			goto out;
	}
	/* The event tables of main and their views are made by cs_schema_build. */
	for (int k = 0; k < CS_EV_COUNT && !rc; k++) {
		stage_table_ddl(&sb, k);
		rc = exec_built(db, &sb, msg, msglen);
	}
out:
	cs_strbuf_free(&sb);
	return rc;
}

/* ---- the stored layout of an event table (version 2) ---- */

#define STORED_MAX 32

struct stored_col {
	char name[32]; /* as readers see it */
	char base[32]; /* "" or the column it is stored relative to */
	int late;      /* added after the rows: absent from a row that has no value for it */
};

struct stored_layout {
	struct stored_col col[STORED_MAX];
	int n;
};

/* The stored layout of a kind's table, from its columns. */
static void stored_layout(enum cs_event_kind kind, struct stored_layout *l)
{
	const struct cs_event_table_def *d = &cs_event_table_defs[kind];

	l->n = 0;
	for (int i = 0; i < d->ncolumns && l->n < STORED_MAX; i++) {
		const struct cs_column_def *c = &d->col[i];
		struct stored_col *sc = &l->col[l->n++];

		snprintf(sc->name, sizeof(sc->name), "%s", c->name);
		snprintf(sc->base, sizeof(sc->base), "%s",
			 c->base >= 0 ? d->col[c->base].name : "");
		sc->late = c->late;
	}
}

static const struct stored_col *stored_find(const struct stored_layout *l, const char *name)
{
	for (int i = 0; i < l->n; i++)
		if (strcmp(l->col[i].name, name) == 0)
			return &l->col[i];
	return NULL;
}

/* The name of a column in the _DATA table. */
static void stored_name(cs_strbuf *sb, const struct stored_col *c)
{
	cs_strbuf_printf(sb, "%s%s", c->name, c->base[0] ? "Rel" : "");
}

/* The value a reader sees, from the _DATA table: base + nameRel, or nameRel when base is unknown.
 */
static void view_expr(cs_strbuf *sb, const struct stored_layout *l, const struct stored_col *c)
{
	const struct stored_col *b = c->base[0] ? stored_find(l, c->base) : NULL;

	if (!b) {
		stored_name(sb, c);
		return;
	}
	cs_strbuf_puts(sb, "coalesce(");
	view_expr(sb, l, b);
	cs_strbuf_puts(sb, " + ");
	stored_name(sb, c);
	cs_strbuf_puts(sb, ", ");
	stored_name(sb, c);
	cs_strbuf_puts(sb, ")");
}

/* The stored value, from a staged row s. */
static void stored_expr(cs_strbuf *sb, const struct stored_col *c)
{
	if (c->base[0])
		cs_strbuf_printf(sb, "coalesce(s.%s - s.%s, s.%s)", c->name, c->base, c->name);
	else
		cs_strbuf_printf(sb, "s.%s", c->name);
}

/* Which columns a list holds, and as what. */
enum { COLS_EARLY = 1, COLS_LATE = 2, COLS_ALL = 3 };
enum { AS_NAMES, AS_DECLS, AS_VALUES };

/* "a, b, ...": the stored names, declarations or values (from a staged row s) of some columns. */
static void stored_list(cs_strbuf *sb, const struct stored_layout *l, int cols, int as)
{
	const char *sep = "";

	for (int pass = COLS_EARLY; pass <= COLS_LATE; pass <<= 1) {
		for (int i = 0; (cols & pass) && i < l->n; i++) {
			if (l->col[i].late != (pass == COLS_LATE))
				continue;
			cs_strbuf_puts(sb, sep);
			if (as == AS_VALUES)
				stored_expr(sb, &l->col[i]);
			else
				stored_name(sb, &l->col[i]);
			if (as == AS_DECLS)
				cs_strbuf_puts(sb, " INTEGER");
			sep = ", ";
		}
	}
}

/* "s.a IS NOT NULL OR s.b IS NOT NULL ...": a staged row with a value for a late column. */
static void late_condition(cs_strbuf *sb, const struct stored_layout *l)
{
	const char *sep = "";

	for (int i = 0; i < l->n; i++) {
		if (!l->col[i].late)
			continue;
		cs_strbuf_printf(sb, "%ss.%s IS NOT NULL", sep, l->col[i].name);
		sep = " OR ";
	}
}

/* The integer the SQL in sb answers (*out), then empty sb. */
static int query_int(sqlite3 *db, cs_strbuf *sb, int64_t *out, char *msg, size_t msglen)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (sb->failed)
		return CS_ERR_NOMEM;
	rc = sqlite3_prepare_v2(db, cs_strbuf_str(sb), -1, &st, NULL);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		*out = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	}
	if (rc != SQLITE_ROW && msg && msglen)
		snprintf(msg, msglen, "%s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	cs_strbuf_reset(sb);
	return rc == SQLITE_ROW ? CS_OK : (cs_sql_code(rc) ? cs_sql_code(rc) : CS_ERR_SQL);
}

/* How a kind's late columns are stored, by how many staged rows have a value for one. */
enum late_mode {
	LATE_NONE,   /* no row: the columns are added, no row stores them */
	LATE_UPDATE, /* a few: added after the rows, those rows rewritten with them */
	LATE_INLINE, /* many (with --backtrace, every row): in the table from the start */
};

static int late_mode_of(sqlite3 *db, const char *table, const struct stored_layout *l,
			cs_strbuf *sb, enum late_mode *mode, char *msg, size_t msglen)
{
	int64_t rows, with, many;
	int rc, nlate = 0;

	*mode = LATE_NONE;
	for (int i = 0; i < l->n; i++)
		nlate += l->col[i].late;
	if (!nlate)
		return CS_OK;
	cs_strbuf_printf(sb, "SELECT coalesce(max(rowid), 0) FROM %s.%s", CS_STAGE_SCHEMA, table);
	if ((rc = query_int(db, sb, &rows, msg, msglen)))
		return rc;
	/* rewriting more than an eighth of the rows costs more than storing the columns inline */
	many = rows / 8 + 1;
	cs_strbuf_printf(sb, "SELECT count(*) FROM (SELECT 1 FROM %s.%s s WHERE ", CS_STAGE_SCHEMA,
			 table);
	late_condition(sb, l);
	cs_strbuf_printf(sb, " LIMIT %lld)", (long long)many);
	if ((rc = query_int(db, sb, &with, msg, msglen)))
		return rc;
	*mode = with == 0 ? LATE_NONE : with < many ? LATE_UPDATE : LATE_INLINE;
	return CS_OK;
}

/*
 * Copy one kind's staged rows into main.<table>_DATA in time order and make the view <table>
 * over it. Rows are inserted while the table has only the early columns; the late ones are added
 * afterwards (ALTER TABLE ADD COLUMN leaves the rows as they are, and SQLite reads a column a row
 * lacks as NULL), and only rows that have a value for one are rewritten with it: the few kernels of
 * a CUDA graph among eager ones. When many rows have one (every row with --backtrace), the late
 * columns are in the table from the start instead, in the same place.
 */
static int build_kind(sqlite3 *db, enum cs_event_kind k, int sorted, cs_strbuf *sb, char *msg,
		      size_t msglen)
{
	const char *table = cs_event_kind_table(k), *order = sorted ? "rowid" : "start, rowid";
	const char *c = cs_event_table_defs[k].columns;
	struct stored_layout l;
	enum late_mode mode;
	int rc, cols;

	stored_layout(k, &l);
	if (!sorted) {
		/*
		 * An index on the staged start times turns the ORDER BY below into a walk of the
		 * index (events arrive nearly in order, so it reads the staged rows nearly
		 * sequentially), and sorts 16-byte keys instead of whole rows.
		 */
		cs_strbuf_printf(sb, "CREATE INDEX %s.%s_start ON %s(start)", CS_STAGE_SCHEMA,
				 table, table);
		if ((rc = exec_built(db, sb, msg, msglen)))
			return rc;
	}
	if ((rc = late_mode_of(db, table, &l, sb, &mode, msg, msglen)))
		return rc;
	cols = mode == LATE_INLINE ? COLS_ALL : COLS_EARLY;
	cs_strbuf_printf(sb, "CREATE TABLE main.%s_DATA(", table);
	stored_list(sb, &l, cols, AS_DECLS);
	cs_strbuf_puts(sb, ")");
	if ((rc = exec_built(db, sb, msg, msglen)))
		return rc;

	if (mode != LATE_UPDATE) {
		cs_strbuf_printf(sb, "INSERT INTO main.%s_DATA(", table);
		stored_list(sb, &l, cols, AS_NAMES);
		cs_strbuf_puts(sb, ") SELECT ");
		stored_list(sb, &l, cols, AS_VALUES);
		cs_strbuf_printf(sb, " FROM %s.%s s ORDER BY %s", CS_STAGE_SCHEMA, table, order);
		if ((rc = exec_built(db, sb, msg, msglen)))
			return rc;
	} else {
		/* temp.cs_order: the staged rowid of each final row, in final rowid order */
		cs_strbuf_printf(sb,
				 "CREATE TEMP TABLE cs_order(src INTEGER); "
				 "INSERT INTO temp.cs_order(src) SELECT rowid FROM %s.%s "
				 "ORDER BY %s; INSERT INTO main.%s_DATA(rowid, ",
				 CS_STAGE_SCHEMA, table, order, table);
		stored_list(sb, &l, COLS_EARLY, AS_NAMES);
		cs_strbuf_puts(sb, ") SELECT o.rowid, ");
		stored_list(sb, &l, COLS_EARLY, AS_VALUES);
		cs_strbuf_printf(sb,
				 " FROM temp.cs_order o JOIN %s.%s s ON s.rowid = o.src "
				 "ORDER BY o.rowid",
				 CS_STAGE_SCHEMA, table);
		if ((rc = exec_built(db, sb, msg, msglen)))
			return rc;
	}
	for (int i = 0; mode != LATE_INLINE && i < l.n; i++)
		if (l.col[i].late) {
			cs_strbuf_printf(sb, "ALTER TABLE main.%s_DATA ADD COLUMN ", table);
			stored_name(sb, &l.col[i]);
			cs_strbuf_puts(sb, " INTEGER");
			if ((rc = exec_built(db, sb, msg, msglen)))
				return rc;
		}
	if (mode == LATE_UPDATE) {
		cs_strbuf_printf(sb, "UPDATE main.%s_DATA AS d SET (", table);
		stored_list(sb, &l, COLS_LATE, AS_NAMES);
		cs_strbuf_puts(sb, ") = (SELECT ");
		stored_list(sb, &l, COLS_LATE, AS_VALUES);
		cs_strbuf_printf(sb,
				 " FROM temp.cs_order o JOIN %s.%s s ON s.rowid = o.src "
				 "WHERE o.rowid = d.rowid) WHERE d.rowid IN (SELECT o.rowid FROM "
				 "temp.cs_order o JOIN %s.%s s ON s.rowid = o.src WHERE ",
				 CS_STAGE_SCHEMA, table, CS_STAGE_SCHEMA, table);
		late_condition(sb, &l);
		cs_strbuf_puts(sb, "); DROP TABLE temp.cs_order");
		if ((rc = exec_built(db, sb, msg, msglen)))
			return rc;
	}

	/* The view: version 1's columns, in its order, and the rowid (time order). */
	cs_strbuf_printf(sb, "CREATE VIEW main.%s AS SELECT rowid AS rowid", table);
	while (*c) {
		size_t n = strcspn(c, ",");
		char name[32];
		const struct stored_col *sc;

		snprintf(name, sizeof(name), "%.*s", (int)n, c);
		sc = stored_find(&l, name);
		if (!sc) {
			snprintf(msg, msglen, "column %s of %s has no stored layout", name, table);
			return CS_ERR_INVALID;
		}
		cs_strbuf_puts(sb, ", ");
		view_expr(sb, &l, sc);
		cs_strbuf_printf(sb, " AS %s", name);
		c += n + (c[n] == ',');
	}
	cs_strbuf_printf(sb, " FROM %s_DATA",
			 table); /* unqualified: the view works attached under any name */
	return exec_built(db, sb, msg, msglen);
}

int cs_schema_build(sqlite3 *db, const int sorted[CS_EV_COUNT], char *msg, size_t msglen)
{
	cs_strbuf sb = CS_STRBUF_INIT;
	int rc = CS_OK;

	for (int k = 0; k < CS_EV_COUNT && !rc; k++)
		rc = build_kind(db, k, sorted[k], &sb, msg, msglen);
	for (size_t i = 0; !rc && index_sql[i]; i++)
		rc = cs_sql_exec(db, index_sql[i], msg, msglen);
	cs_strbuf_free(&sb);
	return rc;
}
