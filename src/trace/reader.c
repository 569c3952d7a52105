/*
 * reader.c - the trace reader: opens a trace read-only, checks it, and serves events, processes,
 * devices, streams, stacks and meta data to the analyzers, exporters and the viewer.
 *
 * Event tables are stored in time order (rowid order is (start, arrival) order, see schema.c), so a
 * time window is found by a binary search on rowid, bounded below by the table's longest event
 * (EVENT_TABLE_INFO). Strings are loaded once, on first use, into an array indexed by StringIds.id.
 *
 * Values outside the plausibility bounds of include/cuscope/trace.h read as unknown, one value at
 * a time (a timestamp as CS_TS_UNKNOWN, or the scan's null value; an end before its start or more
 * than CS_TS_MAX after it as unknown; a size as 0; a negative count as 0), so that what the
 * analyses get is always plausible; the rest of the row is read as it is.
 *
 * The event tables' columns, and how each is read, come from include/cuscope/columns.def.
 *
 * A cs_trace is not thread safe: open one per thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cuscope/grow.h"
#include "cuscope/strbuf.h"
#include "cuscope/trace.h"
#include "cuscope/u64map.h"
#include "trace_internal.h"

/*
 * The work limit of a query (docs/trace-format.md, "Reading hostile files"): SQLite's virtual
 * machine instructions, counted by a progress handler every WORK_STEP of them, from the start of a
 * statement that runs while no other is (what runs while it does, string and stack lookups in an
 * iteration, counts towards it) to the start of the next such statement. The most allowed is
 * WORK_PER_BYTE instructions per byte of the file, and at least WORK_FLOOR: a real trace's largest
 * query, a scan of its largest table with the lookups of every row, takes far less, while a view
 * that recursion makes endless, or a join that makes it quadratic, goes past it in seconds.
 */
#define WORK_STEP     1000
#define WORK_PER_BYTE 64
#define WORK_FLOOR    (50 * 1000 * 1000)

/* Above this many ids (and much sparser than the row count) strings are looked up one by one. */
#define STRINGS_ARRAY_MAX (64 * 1024 * 1024)

struct table_info {
	int64_t rows;				  /* rows as written */
	int64_t last_rowid;			  /* largest rowid: rows are numbered 1..rows */
	int64_t min_start, max_end, max_duration; /* CS_TS_UNKNOWN when unknown */
};

/* A string looked up one by one (sparse ids only). */
struct loose_string {
	struct loose_string *next;
	int64_t id;
	char *s;
};

struct cs_trace {
	sqlite3 *db;
	char *path;
	int version;
	int opened; /* open finished: errors say "cannot read" rather than "cannot open" */

	int nmeta;
	char **meta_keys, **meta_values;

	int strings_loaded;  /* 0 not yet, 1 array, 2 one by one */
	char **strings;	     /* indexed by id */
	int64_t nstrings;    /* slots in strings */
	int64_t string_rows; /* rows of StringIds */
	sqlite3_stmt *string_stmt;
	struct loose_string *loose;

	struct table_info info[CS_EV_COUNT];
	sqlite3_stmt *probe[CS_EV_COUNT]; /* SELECT start FROM <table> WHERE rowid = ? */
	/* bit i: the file's table lacks column i of columns.def (written before it was added) */
	uint32_t absent[CS_EV_COUNT];

	cs_frame *frames;
	size_t frames_cap;

	/* the work limit: progress handler calls (WORK_STEP instructions each) of the statement now
	 * running with what it runs in between, and the most allowed */
	int64_t work, work_limit;
	int over_limit;		   /* the limit interrupted the last statement */
	struct cs_sql_guard guard; /* the connection's authorizer's */
};

struct cs_iter {
	cs_trace *t;
	enum cs_event_kind kind;
	sqlite3_stmt *st;
	int done;
};

/* ---- column helpers: NULL reads as the "none" value of each kind of column ---- */

static int64_t col_int(sqlite3_stmt *st, int i)
{
	return sqlite3_column_int64(st, i); /* NULL reads as 0 */
}

/* A timestamp as stored; NULL reads as CS_TS_UNKNOWN. */
static int64_t col_ts_raw(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? CS_TS_UNKNOWN
							 : sqlite3_column_int64(st, i);
}

/* A timestamp; implausible ones read as unknown. */
static int64_t col_ts(sqlite3_stmt *st, int i)
{
	return cs_ts_clean(col_ts_raw(st, i));
}

/* The end of a span that starts at start (already read). */
static int64_t col_end(sqlite3_stmt *st, int i, int64_t start)
{
	return cs_ts_end_clean(start, col_ts(st, i));
}

/* A size in bytes; implausible ones read as 0. */
static int64_t col_bytes(sqlite3_stmt *st, int i)
{
	return cs_bytes_clean(sqlite3_column_int64(st, i));
}

/* A count: negative ones read as 0. */
static int64_t col_count(sqlite3_stmt *st, int i)
{
	int64_t v = sqlite3_column_int64(st, i);

	return v < 0 ? 0 : v;
}

/* The longest event of a table: at most CS_TS_MAX, the longest plausible one. */
static int64_t clean_duration(int64_t d)
{
	return d == CS_TS_UNKNOWN || d < 0 ? CS_TS_UNKNOWN : d > CS_TS_MAX ? CS_TS_MAX : d;
}

static int64_t col_id(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? CS_ID_NONE : sqlite3_column_int64(st, i);
}

static uint64_t col_u64(sqlite3_stmt *st, int i)
{
	return (uint64_t)sqlite3_column_int64(st, i);
}

static const char *col_text(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i); /* NULL for NULL */
}

/* The one-line error of a query stopped by the work limit. */
static int limit_error(cs_trace *t, cs_error *err)
{
	return cs_error_set(err, CS_ERR_NOT_TRACE,
			    "cannot %s '%s': not a valid cuscope trace (a query exceeded its work "
			    "limit)",
			    t->opened ? "read" : "open", t->path);
}

static int sql_error(cs_trace *t, int rc, cs_error *err)
{
	int code = cs_sql_code(rc);

	if ((rc & 0xff) == SQLITE_INTERRUPT && t->over_limit)
		return limit_error(t, err);

	if (!code)
		code = CS_ERR_SQL;
	if (code == CS_ERR_CORRUPT)
		return cs_error_set(err, code, "cannot %s '%s': truncated or damaged file",
				    t->opened ? "read" : "open", t->path);
	return cs_error_set(err, code, "cannot %s '%s': %s", t->opened ? "read" : "open", t->path,
			    sqlite3_errmsg(t->db));
}

/* ---- the work limit ---- */

static int work_progress(void *arg)
{
	cs_trace *t = arg;

	if (++t->work <= t->work_limit)
		return 0;
	t->over_limit = 1; /* until the next statement starts */
	return 1;
}

/* A statement starts: when no other one is running, its count starts from 0. */
static int work_statement(unsigned type, void *arg, void *stmt, void *sql)
{
	cs_trace *t = arg;
	sqlite3_stmt *s;

	(void)type;
	(void)sql;
	for (s = sqlite3_next_stmt(t->db, NULL); s; s = sqlite3_next_stmt(t->db, s))
		if (s != stmt && sqlite3_stmt_busy(s))
			return 0;
	t->work = 0;
	t->over_limit = 0;
	return 0;
}

static void work_limit_set(cs_trace *t)
{
	struct stat st;
	int64_t limit = WORK_FLOOR;

	int64_t bytes;

	/* the bytes the file holds on disk: a sparse file's apparent size does not lift the limit
	 */
	if (!stat(t->path, &st) && st.st_size > 0) {
		bytes = st.st_blocks < INT64_MAX / 512 ? (int64_t)st.st_blocks * 512 : INT64_MAX;
		if (bytes > st.st_size)
			bytes = st.st_size;
		if (bytes < INT64_MAX / WORK_PER_BYTE && bytes * WORK_PER_BYTE > limit)
			limit = bytes * WORK_PER_BYTE;
	}
	t->work_limit = limit / WORK_STEP;
	sqlite3_progress_handler(t->db, WORK_STEP, work_progress, t);
	sqlite3_trace_v2(t->db, SQLITE_TRACE_STMT, work_statement, t);
}

/* ---- open, close ---- */

static int load_meta(cs_trace *t, cs_error *err)
{
	sqlite3_stmt *st = NULL;
	int rc, n = 0;
	size_t kcap = 0, vcap = 0;

	rc = sqlite3_prepare_v2(t->db, "SELECT key, value FROM META ORDER BY rowid", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sql_error(t, rc, err);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *k = col_text(st, 0), *v = col_text(st, 1);

		if (!k)
			continue;
		if (cs_grow((void **)&t->meta_keys, &kcap, (size_t)n + 1, sizeof(char *)) ||
		    cs_grow((void **)&t->meta_values, &vcap, (size_t)n + 1, sizeof(char *))) {
			rc = SQLITE_NOMEM;
			break;
		}
		t->meta_keys[n] = strdup(k);
		t->meta_values[n] = v ? strdup(v) : NULL;
		if (!t->meta_keys[n] || (v && !t->meta_values[n])) {
			free(t->meta_keys[n]);
			free(t->meta_values[n]);
			rc = SQLITE_NOMEM;
			break;
		}
		t->nmeta = ++n;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sql_error(t, rc, err);
	return CS_OK;
}

/* Row count, time bounds and longest event of a table missing from EVENT_TABLE_INFO (a scan). */
static int compute_table_info(cs_trace *t, enum cs_event_kind kind, struct table_info *ti)
{
	int has_end = cs_event_column_find(kind, "end") >= 0;
	sqlite3_stmt *st = NULL;
	char sql[256];
	int rc;

	snprintf(sql, sizeof(sql), "SELECT count(*), min(start), %s, %s FROM %s",
		 has_end ? "max(coalesce(end, start))" : "max(start)",
		 has_end ? "max(CASE WHEN end >= start THEN end - start END)" : "NULL",
		 cs_event_kind_table(kind));
	rc = sqlite3_prepare_v2(t->db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		ti->rows = col_int(st, 0);
		ti->min_start = col_ts(st, 1);
		ti->max_end = col_ts(st, 2);
		ti->max_duration = clean_duration(col_ts_raw(st, 3));
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc;
}

/*
 * Per event table: what EVENT_TABLE_INFO says, and the last rowid, which must match the row count
 * (the lookup also walks the right edge of each table, a cheap check that the file is whole).
 */
static int load_table_info(cs_trace *t, cs_error *err)
{
	sqlite3_stmt *st = NULL, *last = NULL;
	char sql[160];
	int rc, found[CS_EV_COUNT] = {0};

	rc = sqlite3_prepare_v2(
		t->db,
		"SELECT tableName, rowCount, minStart, maxEnd, maxDuration FROM " CS_TABLE_INFO, -1,
		&st, NULL);
	if (rc != SQLITE_OK)
		return sql_error(t, rc, err);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = col_text(st, 0);

		for (int k = 0; name && k < CS_EV_COUNT; k++) {
			if (strcmp(name, cs_event_kind_table(k)))
				continue;
			t->info[k].rows = col_int(st, 1);
			t->info[k].min_start = col_ts(st, 2);
			t->info[k].max_end = col_ts(st, 3);
			t->info[k].max_duration = clean_duration(col_ts_raw(st, 4));
			found[k] = 1;
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sql_error(t, rc, err);

	for (int k = 0; k < CS_EV_COUNT; k++) {
		if (!found[k] && (rc = compute_table_info(t, k, &t->info[k])) != SQLITE_OK)
			return sql_error(t, rc, err);
		snprintf(sql, sizeof(sql), "SELECT coalesce(max(rowid), 0) FROM %s",
			 cs_event_kind_table(k));
		rc = sqlite3_prepare_v2(t->db, sql, -1, &last, NULL);
		if (rc == SQLITE_OK && (rc = sqlite3_step(last)) == SQLITE_ROW) {
			t->info[k].last_rowid = col_int(last, 0);
			rc = SQLITE_OK;
		}
		sqlite3_finalize(last);
		if (rc != SQLITE_OK)
			return sql_error(t, rc, err);
		if (t->info[k].last_rowid != t->info[k].rows)
			return cs_error_set(
				err, CS_ERR_CORRUPT,
				"cannot open '%s': damaged file (%s has %lld rows, expected %lld)",
				t->path, cs_event_kind_table(k), (long long)t->info[k].last_rowid,
				(long long)t->info[k].rows);
	}
	return CS_OK;
}

/*
 * Which columns of columns.def each event table of the file lacks: a column added to a table after
 * a file was written reads as NULL (its missing value) there, as a later version of the schema
 * promises (docs/trace-format.md, "Versioning").
 */
static int load_columns(cs_trace *t, cs_error *err)
{
	for (int k = 0; k < CS_EV_COUNT; k++) {
		const struct cs_event_table_def *d = &cs_event_table_defs[k];
		sqlite3_stmt *st = NULL;
		char sql[128];
		int rc, n;

		snprintf(sql, sizeof(sql), "SELECT * FROM %s", cs_event_kind_table(k));
		rc = sqlite3_prepare_v2(t->db, sql, -1, &st, NULL);
		if (rc != SQLITE_OK)
			return sql_error(t, rc, err);
		n = sqlite3_column_count(st);
		for (int i = 0; i < d->ncolumns; i++) {
			int found = 0;

			for (int j = 0; j < n && !found; j++) {
				const char *name = sqlite3_column_name(st, j);

				found = name && !strcmp(name, d->col[i].name);
			}
			if (!found)
				t->absent[k] |= UINT32_C(1) << i;
		}
		sqlite3_finalize(st);
	}
	return CS_OK;
}

/* "a, NULL, c": the columns cols[0..n) of a kind's table as the file has them. */
static void select_list(cs_strbuf *sb, const cs_trace *t, enum cs_event_kind kind, const int *cols,
			int n)
{
	const struct cs_event_table_def *d = &cs_event_table_defs[kind];

	for (int i = 0; i < n; i++) {
		if (i)
			cs_strbuf_puts(sb, ", ");
		if (t->absent[kind] & UINT32_C(1) << cols[i])
			cs_strbuf_puts(sb, "NULL");
		else
			cs_strbuf_printf(sb, "\"%s\"", d->col[cols[i]].name);
	}
}

/* cs_scan(), the aggregate of the bulk scans */
static int scan_register(sqlite3 *db);

int cs_trace_open(const char *path, cs_trace **out, cs_error *err)
{
	return cs_trace_open_flags(path, 0, out, err);
}

int cs_trace_open_flags(const char *path, int flags, cs_trace **out, cs_error *err)
{
	cs_trace *t;
	char *uri;
	int rc;

	if (out)
		*out = NULL;
	if (!path || !out)
		return cs_error_set(err, CS_ERR_INVALID, "cs_trace_open: no path");
	rc = cs_schema_check_file(path, err);
	if (rc)
		return rc;

	t = calloc(1, sizeof(*t));
	if (!t || !(t->path = strdup(path))) {
		free(t);
		return cs_error_set(err, CS_ERR_NOMEM, "cannot open '%s': out of memory", path);
	}
	uri = cs_sql_ro_uri(path);
	if (!uri) {
		rc = cs_error_set(err, CS_ERR_NOMEM, "cannot open '%s': out of memory", path);
		goto fail;
	}
	/* immutable: no lock, and no -wal, -shm or -journal file read or made beside the trace */
	rc = sqlite3_open_v2(uri, &t->db,
			     SQLITE_OPEN_READONLY | SQLITE_OPEN_URI |
				     (flags & CS_TRACE_ONE_THREAD ? SQLITE_OPEN_NOMUTEX : 0),
			     NULL);
	free(uri);
	if (rc != SQLITE_OK) {
		int code = cs_sql_code(rc);

		if (code == CS_ERR_CORRUPT)
			rc = cs_error_set(err, code, "cannot open '%s': truncated or damaged file",
					  path);
		else
			rc = cs_error_set(err, code ? code : CS_ERR_IO, "cannot open '%s': %s",
					  path, t->db ? sqlite3_errmsg(t->db) : sqlite3_errstr(rc));
		goto fail;
	}
	cs_sql_harden(t->db, 0);
	scan_register(t->db);
	sqlite3_busy_timeout(t->db, 2000);
	sqlite3_exec(t->db, "PRAGMA cache_size = -16384", NULL, NULL, NULL);
	work_limit_set(t);

	rc = cs_schema_check_db(t->db, path, &t->version, &t->guard, err);
	if (!rc)
		rc = load_meta(t, err);
	if (!rc)
		rc = load_table_info(t, err);
	if (!rc)
		rc = load_columns(t, err);
	if (rc && t->over_limit)
		rc = limit_error(t, err);
	if (rc)
		goto fail;
	t->opened = 1;
	*out = t;
	return CS_OK;
fail:
	cs_trace_close(t);
	return rc;
}

void cs_trace_close(cs_trace *t)
{
	if (!t)
		return;
	for (int k = 0; k < CS_EV_COUNT; k++)
		sqlite3_finalize(t->probe[k]);
	sqlite3_finalize(t->string_stmt);
	if (t->db)
		sqlite3_close(t->db);
	for (int i = 0; i < t->nmeta; i++) {
		free(t->meta_keys[i]);
		free(t->meta_values[i]);
	}
	free(t->meta_keys);
	free(t->meta_values);
	for (int64_t i = 0; i < t->nstrings; i++)
		free(t->strings[i]);
	free(t->strings);
	while (t->loose) {
		struct loose_string *next = t->loose->next;

		free(t->loose->s);
		free(t->loose);
		t->loose = next;
	}
	free(t->frames);
	free(t->path);
	free(t);
}

const char *cs_trace_path(const cs_trace *t)
{
	return t ? t->path : NULL;
}

int cs_trace_schema_version(const cs_trace *t)
{
	return t ? t->version : 0;
}

const char *cs_trace_meta(cs_trace *t, const char *key)
{
	if (!t || !key)
		return NULL;
	for (int i = 0; i < t->nmeta; i++)
		if (strcmp(t->meta_keys[i], key) == 0)
			return t->meta_values[i];
	return NULL;
}

/* ---- strings ---- */

static void load_strings(cs_trace *t)
{
	sqlite3_stmt *st = NULL;
	int64_t count = 0, max_id = 0;
	int rc;

	t->strings_loaded = 2; /* one by one, unless the array below loads */
	rc = sqlite3_prepare_v2(t->db, "SELECT count(*), coalesce(max(id), 0) FROM StringIds", -1,
				&st, NULL);
	if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
		count = col_int(st, 0);
		max_id = col_int(st, 1);
	}
	sqlite3_finalize(st);
	t->string_rows = count > 0 ? count : 0;
	if (max_id < 0 || (max_id > STRINGS_ARRAY_MAX && max_id > 4 * count))
		return;
	t->strings = calloc((size_t)max_id + 1, sizeof(char *));
	if (!t->strings)
		return;
	t->nstrings = max_id + 1;
	rc = sqlite3_prepare_v2(t->db, "SELECT id, value FROM StringIds", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = col_int(st, 0);
		const char *s = col_text(st, 1);

		if (id >= 0 && id < t->nstrings && s && !t->strings[id])
			t->strings[id] = strdup(s);
	}
	sqlite3_finalize(st);
	t->strings_loaded = 1;
}

/* A string by id, queried and kept (sparse ids only). */
static const char *lookup_string(cs_trace *t, int64_t id)
{
	struct loose_string *ls;
	const char *s;

	for (ls = t->loose; ls; ls = ls->next)
		if (ls->id == id)
			return ls->s;
	if (!t->string_stmt && sqlite3_prepare_v2(t->db, "SELECT value FROM StringIds WHERE id = ?",
						  -1, &t->string_stmt, NULL))
		return NULL;
	sqlite3_reset(t->string_stmt);
	sqlite3_bind_int64(t->string_stmt, 1, id);
	if (sqlite3_step(t->string_stmt) != SQLITE_ROW || !(s = col_text(t->string_stmt, 0)))
		return NULL;
	ls = calloc(1, sizeof(*ls));
	if (!ls || !(ls->s = strdup(s))) {
		free(ls);
		sqlite3_reset(t->string_stmt);
		return NULL;
	}
	sqlite3_reset(t->string_stmt); /* not left running (the work limit's count) */
	ls->id = id;
	ls->next = t->loose;
	t->loose = ls;
	return ls->s;
}

const char *cs_trace_string(cs_trace *t, int64_t id)
{
	if (!t || id < 0)
		return NULL;
	if (!t->strings_loaded)
		load_strings(t);
	if (t->strings_loaded == 1)
		return id < t->nstrings ? t->strings[id] : NULL;
	return lookup_string(t, id);
}

int64_t cs_trace_string_rows(cs_trace *t)
{
	if (!t)
		return 0;
	if (!t->strings_loaded)
		load_strings(t);
	return t->string_rows;
}

/* ---- summary, processes, devices, streams ---- */

/*
 * The rows of the FINDINGS table, 0 when the file has none (docs/trace-format.md): cuscope creates
 * it empty, for the readers that require it, and nothing reads its rows.
 */
static int count_findings(cs_trace *t, int64_t *n)
{
	sqlite3_stmt *st = NULL;
	int rc, found = 0;

	*n = 0;
	rc = sqlite3_prepare_v2(
		t->db,
		"SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = "
		"'FINDINGS'",
		-1, &st, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		found = sqlite3_column_int(st, 0) > 0;
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_OK || !found)
		return rc;
	rc = sqlite3_prepare_v2(t->db, "SELECT count(*) FROM FINDINGS", -1, &st, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		*n = col_int(st, 0);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc;
}

int cs_trace_get_summary(cs_trace *t, cs_trace_summary *out, cs_error *err)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (!t || !out)
		return cs_error_set(err, CS_ERR_INVALID, "cs_trace_get_summary: no trace");
	memset(out, 0, sizeof(*out));
	out->start = out->end = CS_TS_UNKNOWN;
	for (int k = 0; k < CS_EV_COUNT; k++) {
		const struct table_info *ti = &t->info[k];

		out->counts[k] = ti->rows;
		if (ti->min_start != CS_TS_UNKNOWN &&
		    (out->start == CS_TS_UNKNOWN || ti->min_start < out->start))
			out->start = ti->min_start;
		if (ti->max_end != CS_TS_UNKNOWN &&
		    (out->end == CS_TS_UNKNOWN || ti->max_end > out->end))
			out->end = ti->max_end;
	}
	rc = sqlite3_prepare_v2(
		t->db,
		"SELECT (SELECT count(*) FROM PROCESSES), (SELECT count(*) FROM TARGET_INFO_GPU), "
		"(SELECT count(*) FROM TARGET_INFO_CUDA_STREAM), (SELECT count(*) FROM StringIds), "
		"(SELECT coalesce(max(id), 0) FROM STACKS), "
		"(SELECT total(max(droppedRecords, 0)) FROM PROCESSES)",
		-1, &st, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		out->processes = col_int(st, 0);
		out->devices = col_int(st, 1);
		out->streams = col_int(st, 2);
		out->strings = col_int(st, 3);
		out->stacks = col_int(st, 4);
		out->dropped_records = sqlite3_column_double(st, 5) < 9.2e18
					       ? (int64_t)sqlite3_column_double(st, 5)
					       : INT64_MAX;
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	if (rc == SQLITE_OK)
		rc = count_findings(t, &out->findings);
	return rc == SQLITE_OK ? CS_OK : sql_error(t, rc, err);
}

/*
 * Run a query and call row() on each row until it returns non-zero. A negative value from the
 * callback is returned (an error to pass on); a positive one only stops.
 */
static int each_row(cs_trace *t, const char *sql, int (*row)(sqlite3_stmt *st, void *ctx),
		    void *ctx, cs_error *err)
{
	sqlite3_stmt *st = NULL;
	int rc, stop = 0;

	rc = sqlite3_prepare_v2(t->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sql_error(t, rc, err);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		stop = row(st, ctx);
		if (stop)
			break;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		rc = sql_error(t, rc, err);
		sqlite3_finalize(st);
		return rc;
	}
	sqlite3_finalize(st);
	return stop < 0 ? stop : CS_OK;
}

struct each_ctx {
	cs_trace *t;
	void *cb;
	void *arg;
};

static int process_row(sqlite3_stmt *st, void *ctx)
{
	struct each_ctx *c = ctx;
	int (*cb)(const cs_process *, void *) = (int (*)(const cs_process *, void *))c->cb;
	cs_process p = {0};

	p.pid = (uint32_t)col_int(st, 0);
	p.ppid = (uint32_t)col_int(st, 1);
	p.start = col_ts(st, 2);
	p.end = col_end(st, 3, p.start);
	p.command_line = col_text(st, 4);
	p.rank = (int32_t)col_id(st, 5);
	p.local_rank = (int32_t)col_id(st, 6);
	p.world_size = (int32_t)col_id(st, 7);
	p.exit_code = (int32_t)col_id(st, 8);
	p.used_cuda = (int32_t)col_int(st, 9);
	p.dropped_records = col_count(st, 10);
	p.cupti_device_bytes = col_bytes(st, 11);
	return cb(&p, c->arg);
}

int cs_trace_each_process(cs_trace *t, int (*cb)(const cs_process *p, void *arg), void *arg,
			  cs_error *err)
{
	struct each_ctx c = {t, (void *)cb, arg};

	if (!t || !cb)
		return cs_error_set(err, CS_ERR_INVALID,
				    "cs_trace_each_process: no trace or callback");
	return each_row(
		t,
		"SELECT pid, ppid, start, end, commandLine, rank, localRank, worldSize, exitCode, "
		"usedCuda, droppedRecords, cuptiDeviceBytes FROM PROCESSES ORDER BY rowid",
		process_row, &c, err);
}

/*
 * The time of the last event of each process of u (n of them, each with last = CS_TS_UNKNOWN): one
 * query per event table, grouped by pid (a trace may list tens of thousands of processes).
 */
static int processes_last_time(cs_trace *t, cs_unended *u, int n, cs_error *err)
{
	struct u64map index;				     /* pid -> int: its first place in u */
	int *next = malloc(((size_t)n + 1) * sizeof(*next)); /* the next place of the same pid */
	int rc = CS_OK;

	u64map_init(&index, sizeof(int));
	if (!next)
		return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
	for (int i = n - 1; i >= 0; i--) {
		int created, *slot = u64map_put(&index, u[i].pid, &created);

		if (!slot) {
			u64map_free(&index);
			free(next);
			return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
		}
		next[i] = created ? -1 : *slot;
		*slot = i;
	}
	for (int k = 0; k < CS_EV_COUNT && rc == CS_OK; k++) {
		char sql[256];
		sqlite3_stmt *st = NULL;

		if (t->info[k].rows == 0)
			continue;
		/* memory operations are instants: no end column */
		snprintf(sql, sizeof(sql), "SELECT pid, MAX(%s) FROM %s GROUP BY pid",
			 k == CS_EV_MEMORY ? "start" : "MAX(start, COALESCE(\"end\", start))",
			 cs_event_kind_table((enum cs_event_kind)k));
		rc = sqlite3_prepare_v2(t->db, sql, -1, &st, NULL);
		if (rc != SQLITE_OK) {
			rc = sql_error(t, rc, err);
			break;
		}
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			const int *slot;
			int64_t v;

			if (sqlite3_column_type(st, 0) != SQLITE_INTEGER)
				continue;
			slot = u64map_get(&index, (uint64_t)sqlite3_column_int64(st, 0));
			if (!slot)
				continue;
			v = col_ts(st, 1);
			/* every process listed under that pid, as a query per pid gave */
			for (int i = *slot; i >= 0; i = next[i])
				if (v != CS_TS_UNKNOWN &&
				    (u[i].last == CS_TS_UNKNOWN || v > u[i].last))
					u[i].last = v;
		}
		rc = rc == SQLITE_DONE ? CS_OK : sql_error(t, rc, err);
		sqlite3_finalize(st);
	}
	u64map_free(&index);
	free(next);
	return rc;
}

struct unended_list {
	cs_unended *v;
	int n;
	size_t cap;
};

static int unended_add(const cs_process *p, void *arg)
{
	struct unended_list *u = arg;

	if (p->end != CS_TS_UNKNOWN)
		return 0;
	if (cs_grow((void **)&u->v, &u->cap, (size_t)u->n + 1, sizeof(*u->v)))
		return CS_ERR_NOMEM;
	u->v[u->n].pid = p->pid;
	u->v[u->n].last = CS_TS_UNKNOWN;
	u->n++;
	return 0;
}

static int unended(cs_trace *t, cs_unended **out, int *n, int last, cs_error *err)
{
	struct unended_list u = {NULL, 0, 0};
	int rc;

	*out = NULL;
	*n = 0;
	if (!t)
		return cs_error_set(err, CS_ERR_INVALID, "cs_trace_unended: no trace");
	rc = cs_trace_each_process(t, unended_add, &u, err);
	if (rc == CS_ERR_NOMEM)
		rc = cs_error_set(err, rc, "out of memory");
	if (last && rc >= 0)
		rc = processes_last_time(t, u.v, u.n, err);
	if (rc < 0) {
		free(u.v);
		return rc;
	}
	*out = u.v;
	*n = u.n;
	return CS_OK;
}

int cs_trace_unended(cs_trace *t, cs_unended **out, int *n, cs_error *err)
{
	return unended(t, out, n, 1, err);
}

int cs_trace_unended_pids(cs_trace *t, cs_unended **out, int *n, cs_error *err)
{
	return unended(t, out, n, 0, err);
}

static int device_row(sqlite3_stmt *st, void *ctx)
{
	struct each_ctx *c = ctx;
	int (*cb)(const cs_device *, void *) = (int (*)(const cs_device *, void *))c->cb;
	cs_device d = {0};

	d.pid = (uint32_t)col_int(st, 0);
	d.device_id = (int32_t)col_id(st, 1);
	d.uuid = col_text(st, 2);
	d.name = col_text(st, 3);
	d.total_memory = col_bytes(st, 4);
	d.sm_count = (int32_t)col_int(st, 5);
	d.compute_major = (int32_t)col_int(st, 6);
	d.compute_minor = (int32_t)col_int(st, 7);
	d.core_clock_khz = col_int(st, 8);
	d.memory_bandwidth = col_bytes(st, 9);
	return cb(&d, c->arg);
}

int cs_trace_each_device(cs_trace *t, int (*cb)(const cs_device *d, void *arg), void *arg,
			 cs_error *err)
{
	struct each_ctx c = {t, (void *)cb, arg};

	if (!t || !cb)
		return cs_error_set(err, CS_ERR_INVALID,
				    "cs_trace_each_device: no trace or callback");
	return each_row(
		t,
		"SELECT pid, deviceId, uuid, name, totalMemory, smCount, computeMajor, "
		"computeMinor, "
		"clockRate, memoryBandwidth FROM TARGET_INFO_GPU ORDER BY pid, deviceId, rowid",
		device_row, &c, err);
}

static int stream_row(sqlite3_stmt *st, void *ctx)
{
	struct each_ctx *c = ctx;
	int (*cb)(const cs_stream *, void *) = (int (*)(const cs_stream *, void *))c->cb;
	cs_stream s = {0};

	s.pid = (uint32_t)col_int(st, 0);
	s.device_id = (int32_t)col_id(st, 1);
	s.context_id = (uint32_t)col_int(st, 2);
	s.stream_id = (uint32_t)col_int(st, 3);
	s.is_default = (int32_t)col_int(st, 4);
	s.priority = (int32_t)col_int(st, 5);
	return cb(&s, c->arg);
}

int cs_trace_each_stream(cs_trace *t, int (*cb)(const cs_stream *s, void *arg), void *arg,
			 cs_error *err)
{
	struct each_ctx c = {t, (void *)cb, arg};

	if (!t || !cb)
		return cs_error_set(err, CS_ERR_INVALID,
				    "cs_trace_each_stream: no trace or callback");
	return each_row(t,
			"SELECT pid, deviceId, contextId, streamId, isDefault, priority "
			"FROM TARGET_INFO_CUDA_STREAM ORDER BY pid, deviceId, streamId, rowid",
			stream_row, &c, err);
}

/* ---- stacks ---- */

int cs_trace_get_stack(cs_trace *t, int64_t stack_id, const cs_frame **frames, int *n,
		       cs_error *err)
{
	sqlite3_stmt *st = NULL;
	int rc, count = 0;

	if (frames)
		*frames = NULL;
	if (n)
		*n = 0;
	if (!t || !frames || !n)
		return cs_error_set(err, CS_ERR_INVALID, "cs_trace_get_stack: no trace");
	if (stack_id < 0)
		return CS_OK;
	rc = sqlite3_prepare_v2(
		t->db,
		"SELECT f.kind, f.pc, f.moduleId, f.symbolId, f.offset, f.fileId, f.line "
		"FROM STACKS s JOIN STACK_FRAMES f ON f.id = s.frameId "
		"WHERE s.id = ? ORDER BY s.depth",
		-1, &st, NULL);
	if (rc != SQLITE_OK)
		return sql_error(t, rc, err);
	sqlite3_bind_int64(st, 1, stack_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		cs_frame *f;

		if (cs_grow((void **)&t->frames, &t->frames_cap, (size_t)count + 1,
			    sizeof(*t->frames))) {
			sqlite3_finalize(st);
			return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
		}
		f = &t->frames[count++];
		f->kind = (int32_t)col_int(st, 0);
		f->pc = col_u64(st, 1);
		f->module = cs_trace_string(t, col_id(st, 2));
		f->symbol = cs_trace_string(t, col_id(st, 3));
		f->offset = col_u64(st, 4);
		f->file = cs_trace_string(t, col_id(st, 5));
		f->line = (int32_t)col_int(st, 6);
	}
	if (rc != SQLITE_DONE) {
		rc = sql_error(t, rc, err);
		sqlite3_finalize(st);
		return rc;
	}
	sqlite3_finalize(st);
	*frames = count ? t->frames : NULL;
	*n = count;
	return CS_OK;
}

/* ---- iterators ---- */

cs_filter cs_filter_all(void)
{
	cs_filter f = {CS_TS_UNKNOWN, CS_TS_UNKNOWN, -1, -1, -1};

	return f;
}

/* Start of the event at rowid; NULL and missing rows read as the smallest value. */
static int probe_start(cs_trace *t, enum cs_event_kind kind, int64_t rowid, int64_t *start)
{
	sqlite3_stmt *st = t->probe[kind];
	int rc;

	if (!st) {
		char sql[128];

		snprintf(sql, sizeof(sql), "SELECT start FROM %s WHERE rowid = ?",
			 cs_event_kind_table(kind));
		rc = sqlite3_prepare_v2(t->db, sql, -1, &t->probe[kind], NULL);
		if (rc != SQLITE_OK)
			return rc;
		st = t->probe[kind];
	}
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, rowid);
	rc = sqlite3_step(st);
	/* as stored: rows are sorted by the stored start, plausible or not */
	*start = rc == SQLITE_ROW ? col_ts_raw(st, 0) : CS_TS_UNKNOWN;
	sqlite3_reset(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* 0, 1, 2, ...: every column of a table */
static const int all_columns[CS_SCAN_MAX_COLUMNS] = {
	0,  1,	2,  3,	4,  5,	6,  7,	8,  9,	10, 11, 12, 13, 14, 15,
	16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
};

/* The first rowid whose start is >= x (rows are in start order), or last_rowid + 1. */
static int lower_bound(cs_trace *t, enum cs_event_kind kind, int64_t x, int64_t *out)
{
	int64_t lo = 1, hi = t->info[kind].last_rowid + 1;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2, start;
		int rc = probe_start(t, kind, mid, &start);

		if (rc != SQLITE_OK)
			return rc;
		if (start == CS_TS_UNKNOWN || start < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	*out = lo;
	return SQLITE_OK;
}

int cs_trace_row_at(cs_trace *t, enum cs_event_kind kind, int64_t ts, int64_t *row, cs_error *err)
{
	int64_t rowid;
	int rc;

	if (!t || (int)kind < 0 || kind >= CS_EV_COUNT || !row)
		return cs_error_set(err, CS_ERR_INVALID, "cs_trace_row_at: bad argument");
	rc = lower_bound(t, kind, ts, &rowid);
	if (rc != SQLITE_OK)
		return sql_error(t, rc, err);
	*row = rowid - 1; /* rowid n + 1 is the n-th row from 0 */
	return CS_OK;
}

int cs_iter_open(cs_trace *t, enum cs_event_kind kind, const cs_filter *filter, cs_iter **out,
		 cs_error *err)
{
	const struct cs_event_table_def *d;
	int has_end;
	cs_filter f = filter ? *filter : cs_filter_all();
	cs_strbuf sql = CS_STRBUF_INIT;
	int64_t lo = 1, hi, min_start = CS_TS_UNKNOWN;
	cs_iter *it = NULL;
	int rc;

	if (out)
		*out = NULL;
	if (!t || !out || (int)kind < 0 || kind >= CS_EV_COUNT)
		return cs_error_set(err, CS_ERR_INVALID, "cs_iter_open: bad argument");
	d = &cs_event_table_defs[kind];
	has_end = cs_event_column_find(kind, "end") >= 0;
	hi = t->info[kind].last_rowid;

	if (f.t0 != CS_TS_UNKNOWN) {
		int64_t longest =
			has_end && t->info[kind].max_duration > 0 ? t->info[kind].max_duration : 0;

		/* Events that overlap [t0, ...) start at t0 - longest or later. */
		min_start = f.t0 > INT64_MIN + 1 + longest ? f.t0 - longest : INT64_MIN + 1;
		rc = lower_bound(t, kind, min_start, &lo);
		if (rc != SQLITE_OK)
			return sql_error(t, rc, err);
	}
	if (f.t1 != CS_TS_UNKNOWN) {
		rc = lower_bound(t, kind, f.t1, &hi);
		if (rc != SQLITE_OK)
			return sql_error(t, rc, err);
		hi--;
	}

	cs_strbuf_puts(&sql, "SELECT ");
	select_list(&sql, t, kind, all_columns, d->ncolumns);
	cs_strbuf_printf(&sql, " FROM %s WHERE rowid BETWEEN :lo AND :hi",
			 cs_event_kind_table(kind));
	if (f.t0 != CS_TS_UNKNOWN) {
		cs_strbuf_puts(&sql, " AND start >= :minstart");
		/* an end read as unknown (implausible) makes the event an instant at its start */
		cs_strbuf_puts(&sql, has_end ? " AND ((end > :t0 AND end <= :tsmax AND end >= start"
					       " AND end - start <= :tsmax) OR start >= :t0)"
					     : " AND start >= :t0");
	}
	if (f.t1 != CS_TS_UNKNOWN)
		cs_strbuf_puts(&sql, " AND start < :t1");
	/* a window holds plausible starts only: others read as unknown */
	if (f.t0 != CS_TS_UNKNOWN || f.t1 != CS_TS_UNKNOWN)
		cs_strbuf_puts(&sql, " AND start BETWEEN -:tsmax AND :tsmax");
	if (f.pid >= 0)
		cs_strbuf_puts(&sql, " AND pid = :pid");
	if (f.device_id >= 0 && cs_event_column_find(kind, "deviceId") >= 0)
		cs_strbuf_puts(&sql, " AND deviceId = :dev");
	if (f.stream_id >= 0 && cs_event_column_find(kind, "streamId") >= 0)
		cs_strbuf_puts(&sql, " AND streamId = :stream");
	cs_strbuf_puts(&sql, " ORDER BY rowid");
	if (sql.failed) {
		cs_strbuf_free(&sql);
		return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
	}

	it = calloc(1, sizeof(*it));
	if (!it) {
		cs_strbuf_free(&sql);
		return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
	}
	it->t = t;
	it->kind = kind;
	rc = sqlite3_prepare_v2(t->db, cs_strbuf_str(&sql), -1, &it->st, NULL);
	cs_strbuf_free(&sql);
	if (rc != SQLITE_OK) {
		rc = sql_error(t, rc, err);
		free(it);
		return rc;
	}
#define BIND(name, v)                                                \
	do {                                                         \
		int i_ = sqlite3_bind_parameter_index(it->st, name); \
		if (i_)                                              \
			sqlite3_bind_int64(it->st, i_, v);           \
	} while (0)
	BIND(":lo", lo);
	BIND(":hi", hi);
	BIND(":minstart", min_start);
	BIND(":t0", f.t0);
	BIND(":t1", f.t1);
	BIND(":tsmax", CS_TS_MAX);
	BIND(":pid", f.pid);
	BIND(":dev", f.device_id);
	BIND(":stream", f.stream_id);
#undef BIND
	*out = it;
	return CS_OK;
}

/* clang-format off */
/* Each column read as columns.def's TYPE says; an END is the end of a span from its base. */
#define READ_TS(st, i, base)    col_ts(st, i)
#define READ_END(st, i, base)   col_end(st, i, r->base)
#define READ_INT(st, i, base)   col_int(st, i)
#define READ_ID(st, i, base)    col_id(st, i)
#define READ_U64(st, i, base)   col_u64(st, i)
#define READ_BYTES(st, i, base) col_bytes(st, i)

/* read_kernel(), read_memcpy(), ...: a row of the iterator's statement into its struct. */
#define CS_EVENT_TABLE(KIND, name) \
	static void read_##name(sqlite3_stmt *st, cs_##name *r) \
	{
#define CS_COLUMN(KIND, column, field, ctype, TYPE, base, late, label, UNIT) \
		r->field = READ_##TYPE(st, CS_COL_##KIND##_##column, base);
#define CS_EVENT_TABLE_END(KIND, name) }
#include "cuscope/columns.def"
/* clang-format on */

int cs_iter_next(cs_iter *it, cs_event *ev)
{
	int rc;

	if (!it || !ev)
		return CS_ERR_INVALID;
	if (it->done)
		return 0;
	rc = sqlite3_step(it->st);
	if (rc == SQLITE_DONE) {
		it->done = 1;
		return 0;
	}
	if (rc != SQLITE_ROW) {
		it->done = 1;
		if ((rc & 0xff) == SQLITE_INTERRUPT && it->t->over_limit)
			return CS_ERR_NOT_TRACE; /* a query exceeded its work limit */
		return cs_sql_code(rc) ? cs_sql_code(rc) : CS_ERR_SQL;
	}
	memset(ev, 0, sizeof(*ev));
	ev->kind = it->kind;
	switch (it->kind) {
		/* clang-format off */
#define CS_EVENT_TABLE(KIND, name) \
	case CS_EV_##KIND: \
		read_##name(it->st, &ev->u.name); \
		break;
#include "cuscope/columns.def"
		/* clang-format on */
	case CS_EV_COUNT:
		break;
	}
	/* the strings the ids name */
	if (it->kind == CS_EV_KERNEL) {
		ev->u.kernel.name = cs_trace_string(it->t, ev->u.kernel.name_id);
	} else if (it->kind == CS_EV_API) {
		ev->u.api.name = cs_trace_string(it->t, ev->u.api.name_id);
	} else if (it->kind == CS_EV_NVTX) {
		ev->u.nvtx.text = cs_trace_string(it->t, ev->u.nvtx.text_id);
		ev->u.nvtx.domain = cs_trace_string(it->t, ev->u.nvtx.domain_id);
		ev->u.nvtx.payload = cs_trace_string(it->t, ev->u.nvtx.payload_id);
	}
	return 1;
}

void cs_iter_close(cs_iter *it)
{
	if (!it)
		return;
	sqlite3_finalize(it->st);
	free(it);
}

/* ---- bulk scans ---- */

int cs_trace_scan(cs_trace *t, enum cs_event_kind kind, const int *columns, int ncolumns,
		  int (*row)(const int64_t *values, void *arg), void *arg, cs_error *err)
{
	return cs_trace_scan_rows(t, kind, 0, INT64_MAX, columns, ncolumns, row, arg, err);
}

/* What a NULL in a column reads as. */
static int64_t null_value(const struct cs_column_def *c)
{
	switch (c->type) {
	case CS_COLTYPE_TS:
	case CS_COLTYPE_END:
		return CS_TS_UNKNOWN;
	case CS_COLTYPE_ID:
		return CS_ID_NONE;
	default:
		return 0;
	}
}

/* A scan under way: the columns asked for, how each is read, and where its rows go. */
struct scan {
	const struct cs_event_table_def *d;
	const int *columns;
	int ncolumns;
	unsigned char type[CS_SCAN_MAX_COLUMNS];
	int64_t values[CS_SCAN_MAX_COLUMNS], nulls[CS_SCAN_MAX_COLUMNS];
	int known[CS_SCAN_MAX_COLUMNS];
	int ends[CS_SCAN_MAX_COLUMNS], nends; /* listed ENDs whose start is listed too */
	int (*row)(const int64_t *values, void *arg);
	void *arg;
	int stop; /* row()'s last value */
};

/* One row's values (v[i]: the column columns[i]) as cs_trace_scan() hands them over; row()'s
 * value. */
static int scan_row(struct scan *s, sqlite3_value **v)
{
	int64_t *values = s->values;
	int *known = s->known;

	for (int i = 0; i < s->ncolumns; i++) {
		int c = s->columns[i];

		known[c] = sqlite3_value_type(v[i]) != SQLITE_NULL;
		values[c] = known[c] ? sqlite3_value_int64(v[i]) : s->nulls[c];
		if (!known[c])
			continue;
		if ((s->type[i] == CS_COLTYPE_TS || s->type[i] == CS_COLTYPE_END) &&
		    !cs_ts_plausible(values[c])) {
			values[c] = s->nulls[c];
			known[c] = 0;
		} else if (s->type[i] == CS_COLTYPE_BYTES && !cs_bytes_plausible(values[c])) {
			values[c] = 0;
		}
	}
	/* an end whose start is known (both stored and plausible) reads as null when implausible */
	for (int i = 0; i < s->nends; i++) {
		int e = s->ends[i], b = s->d->col[e].base;

		if (known[b] && known[e] && cs_ts_end_clean(values[b], values[e]) == CS_TS_UNKNOWN)
			values[e] = s->nulls[e];
	}
	return s->row(values, s->arg);
}

/*
 * The aggregate cs_scan(scan, columns...) hands each row it steps over to the scan (a pointer
 * bound to its first argument): one statement step reads the whole range, and the values come as
 * the arguments of the call, without a sqlite3_column_*() call (and the connection's mutex) per
 * column. A row() that stops the scan ends the statement with an error the scan recognizes.
 */
#define SCAN_POINTER "cuscope-scan"

static void scan_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	struct scan *s = argc > 0 ? sqlite3_value_pointer(argv[0], SCAN_POINTER) : NULL;

	if (!s || argc - 1 != s->ncolumns) {
		sqlite3_result_error(ctx, "cs_scan: bad arguments", -1);
		return;
	}
	s->stop = scan_row(s, argv + 1);
	if (s->stop)
		sqlite3_result_error(ctx, "cs_scan: stopped", -1);
}

static void scan_final(sqlite3_context *ctx)
{
	sqlite3_result_null(ctx);
}

static int scan_register(sqlite3 *db)
{
	return sqlite3_create_function_v2(db, "cs_scan", -1, SQLITE_UTF8 | SQLITE_DIRECTONLY, NULL,
					  NULL, scan_step, scan_final, NULL);
}

/*
 * The plan of the statement sql when SQLite reads its rows by one walk of one table, no sort and no
 * subquery (EXPLAIN QUERY PLAN: a single SCAN or SEARCH, no temporary b-tree): its one line, which
 * names the table and how it is walked, into plan (of len bytes); 0 when the plan is another.
 */
static int plain_plan(cs_trace *t, const char *sql, char *plan, size_t len)
{
	cs_strbuf q = CS_STRBUF_INIT;
	sqlite3_stmt *st = NULL;
	int rc, rows = 0, plain = 1, args;

	cs_strbuf_printf(&q, "EXPLAIN QUERY PLAN %s", sql);
	if (q.failed) {
		cs_strbuf_free(&q);
		return 0;
	}
	args = sqlite3_limit(t->db, SQLITE_LIMIT_FUNCTION_ARG, CS_SCAN_MAX_COLUMNS + 1);
	rc = sqlite3_prepare_v2(t->db, cs_strbuf_str(&q), -1, &st, NULL);
	sqlite3_limit(t->db, SQLITE_LIMIT_FUNCTION_ARG, args);
	cs_strbuf_free(&q);
	if (rc != SQLITE_OK) {
		sqlite3_finalize(st);
		return 0;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *detail = (const char *)sqlite3_column_text(st, 3);

		if (++rows > 1 || !detail ||
		    (strncmp(detail, "SCAN ", 5) && strncmp(detail, "SEARCH ", 7)) ||
		    strstr(detail, "TEMP B-TREE") || strlen(detail) >= len)
			plain = 0;
		else
			strcpy(plan, detail);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE && rows == 1 && plain;
}

/*
 * 1 when the aggregate statement (cs_scan() of the rows of one event table) sees the rows in the
 * order of the ordered one (the same SELECT ... ORDER BY rowid): both walk the same table the same
 * way, and the ordered one needs no sort. So on a trace cuscope wrote (a view that SQLite flattens
 * into a walk of its _DATA table, or a table); not on a view that sorts its rows itself (not
 * flattened into the aggregate) or numbers them in another order (the ordered one sorts).
 */
static int scan_in_order(cs_trace *t, const char *ordered, const char *aggregate)
{
	char a[256], b[256];

	return plain_plan(t, ordered, a, sizeof(a)) && plain_plan(t, aggregate, b, sizeof(b)) &&
	       !strcmp(a, b);
}

/* The scan by stepping the ordered statement sql row by row. */
static int scan_stepped(cs_trace *t, struct scan *s, const char *sql, int64_t first, int64_t end,
			cs_error *err)
{
	sqlite3_value *v[CS_SCAN_MAX_COLUMNS];
	sqlite3_stmt *st = NULL;
	int rc;

	rc = sqlite3_prepare_v2(t->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return sql_error(t, rc, err);
	sqlite3_bind_int64(st, 1, first < 0 ? 0 : first);
	sqlite3_bind_int64(st, 2, end);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		for (int i = 0; i < s->ncolumns; i++)
			v[i] = sqlite3_column_value(st, i);
		s->stop = scan_row(s, v);
		if (s->stop)
			break;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		rc = sql_error(t, rc, err);
		sqlite3_finalize(st);
		return rc;
	}
	sqlite3_finalize(st);
	return s->stop < 0 ? s->stop : CS_OK;
}

/* The scan by one step of the aggregate statement sql (cs_scan(?3, columns...)). */
static int scan_aggregate(cs_trace *t, struct scan *s, const char *sql, int64_t first,
			  int64_t end, cs_error *err)
{
	sqlite3_stmt *st = NULL;
	int rc, args;

	/* the hardened limit of 8 arguments, lifted for this statement (its view's expressions
	 * included) only */
	args = sqlite3_limit(t->db, SQLITE_LIMIT_FUNCTION_ARG, CS_SCAN_MAX_COLUMNS + 1);
	rc = sqlite3_prepare_v2(t->db, sql, -1, &st, NULL);
	sqlite3_limit(t->db, SQLITE_LIMIT_FUNCTION_ARG, args);
	if (rc != SQLITE_OK)
		return sql_error(t, rc, err);
	sqlite3_bind_int64(st, 1, first < 0 ? 0 : first);
	sqlite3_bind_int64(st, 2, end);
	sqlite3_bind_pointer(st, 3, s, SCAN_POINTER, NULL);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	if (rc != SQLITE_DONE && !s->stop) {
		rc = sql_error(t, rc, err);
		sqlite3_finalize(st);
		return rc;
	}
	sqlite3_finalize(st);
	return s->stop < 0 ? s->stop : CS_OK;
}

int cs_trace_scan_rows(cs_trace *t, enum cs_event_kind kind, int64_t first, int64_t end,
		       const int *columns, int ncolumns,
		       int (*row)(const int64_t *values, void *arg), void *arg, cs_error *err)
{
	cs_strbuf list = CS_STRBUF_INIT, sql = CS_STRBUF_INIT, agg = CS_STRBUF_INIT;
	struct scan *s;
	int rc;

	if (!t || (int)kind < 0 || kind >= CS_EV_COUNT || !columns || !row || ncolumns < 1 ||
	    ncolumns > CS_SCAN_MAX_COLUMNS)
		return cs_error_set(err, CS_ERR_INVALID, "cs_trace_scan: bad argument");
	s = calloc(1, sizeof(*s));
	if (!s)
		return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
	s->d = &cs_event_table_defs[kind];
	s->columns = columns;
	s->ncolumns = ncolumns;
	s->row = row;
	s->arg = arg;
	for (int i = 0; i < s->d->ncolumns; i++)
		s->values[i] = s->nulls[i] = null_value(&s->d->col[i]);
	for (int i = 0; i < ncolumns; i++) {
		if (columns[i] < 0 || columns[i] >= s->d->ncolumns) {
			free(s);
			return cs_error_set(err, CS_ERR_INVALID,
					    "cs_trace_scan: %s has no column %d",
					    cs_event_kind_table(kind), columns[i]);
		}
		s->type[i] = (unsigned char)s->d->col[columns[i]].type;
	}
	for (int i = 0; i < ncolumns; i++) {
		const struct cs_column_def *c = &s->d->col[columns[i]];

		for (int j = 0; c->type == CS_COLTYPE_END && j < ncolumns; j++)
			if (columns[j] == c->base) {
				s->ends[s->nends++] = columns[i];
				break;
			}
	}
	select_list(&list, t, kind, columns, ncolumns);
	/* rows are numbered 1..N in time order: the n-th event (from 0) has rowid n + 1 */
	cs_strbuf_printf(&sql, "SELECT %s FROM %s WHERE rowid > ?1 AND rowid <= ?2 ORDER BY rowid",
			 cs_strbuf_str(&list), cs_event_kind_table(kind));
	if (list.failed || sql.failed) {
		rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory");
	} else {
		cs_strbuf_printf(&agg,
				 "SELECT cs_scan(?3, %s) FROM %s WHERE rowid > ?1 AND rowid <= ?2",
				 cs_strbuf_str(&list), cs_event_kind_table(kind));
		if (agg.failed)
			rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory");
		else if (scan_in_order(t, cs_strbuf_str(&sql), cs_strbuf_str(&agg)))
			rc = scan_aggregate(t, s, cs_strbuf_str(&agg), first, end, err);
		else
			rc = scan_stepped(t, s, cs_strbuf_str(&sql), first, end, err);
	}
	cs_strbuf_free(&agg);
	cs_strbuf_free(&list);
	cs_strbuf_free(&sql);
	free(s);
	return rc;
}

/* ---- the timeline overview ---- */

static int64_t meta_int(cs_trace *t, const char *key, int64_t none)
{
	const char *s = cs_trace_meta(t, key);
	char *end;
	long long v;

	if (!s || !*s)
		return none;
	v = strtoll(s, &end, 10);
	return *end ? none : (int64_t)v;
}

void cs_overview_free(cs_overview *o)
{
	if (!o)
		return;
	for (int32_t i = 0; i < o->ntracks; i++)
		free(o->tracks[i].bins);
	free(o->tracks);
	free(o);
}

/*
 * What the reader allows of the overview's rows: integer track ids 0..n-1 in order, per track at
 * most nbins bins, each an integer 0..nbins-1 given once in increasing order, with 0..bin_ns busy
 * ns and 0..(events in the trace) events, and a last bin that ends before INT64_MAX. A file
 * that breaks any of that has no usable overview.
 */
static int overview_bad(cs_trace *t, cs_error *err)
{
	return cs_error_set(err, CS_ERR_CORRUPT,
			    "cannot read '%s': damaged file (inconsistent timeline overview)",
			    t->path);
}

int cs_trace_read_overview(cs_trace *t, cs_overview **out, cs_error *err)
{
	static const char *const kinds[] = {"", "stream", "waits", "api", "nvtx"};
	sqlite3_stmt *st = NULL;
	cs_overview *o;
	int32_t *cap = NULL; /* bins allocated per track */
	int64_t start, bin_ns, nbins, last, events = 0;
	int rc, found = 0, bad = 0;

	if (!t || !out)
		return cs_error_set(err, CS_ERR_INVALID, "cs_trace_read_overview: no trace");
	*out = NULL;
	start = meta_int(t, "overview_start_ns", CS_TS_UNKNOWN);
	bin_ns = meta_int(t, "overview_bin_ns", 0);
	nbins = meta_int(t, "overview_bins", 0);
	if (start == CS_TS_UNKNOWN || bin_ns <= 0 || nbins <= 0 || nbins > INT32_MAX)
		return 0;
	if (__builtin_mul_overflow(nbins, bin_ns, &last) ||
	    __builtin_add_overflow(start, last, &last))
		return overview_bad(t, err);
	for (int k = 0; k < CS_EV_COUNT; k++)
		events += t->info[k].rows > 0 ? t->info[k].rows : 0;
	rc = sqlite3_prepare_v2(
		t->db,
		"SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
		"('TIMELINE_OVERVIEW', 'TIMELINE_OVERVIEW_TRACKS')",
		-1, &st, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		found = sqlite3_column_int(st, 0) == 2;
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_OK)
		return sql_error(t, rc, err);
	if (!found)
		return 0;
	o = calloc(1, sizeof(*o));
	if (!o)
		return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
	o->start = start;
	o->bin_ns = bin_ns;
	o->nbins = (int32_t)nbins;
	/* the tracks, then their bins in (track, bin) order */
	rc = sqlite3_prepare_v2(
		t->db,
		"SELECT kind, pid, deviceId, streamId, tid, depth, events, busy, "
		"(SELECT count(*) FROM TIMELINE_OVERVIEW AS b WHERE b.trackId = "
		"tr.trackId), trackId FROM TIMELINE_OVERVIEW_TRACKS AS tr ORDER BY trackId",
		-1, &st, NULL);
	while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		cs_overview_track *tr, *nt;
		int32_t *ncap;
		const char *kind = col_text(st, 0);
		int64_t n = col_int(st, 8);
		int k = 0;

		rc = SQLITE_OK;
		if (sqlite3_column_type(st, 9) != SQLITE_INTEGER || col_int(st, 9) != o->ntracks ||
		    o->ntracks == INT32_MAX || n < 0 || n > nbins) {
			bad = 1; /* track ids run 0..n-1, with at most nbins bins each */
			break;
		}
		for (int i = 1; i < 5; i++)
			if (kind && !strcmp(kind, kinds[i]))
				k = i;
		nt = realloc(o->tracks, (size_t)(o->ntracks + 1) * sizeof(*nt));
		if (nt)
			o->tracks = nt;
		ncap = nt ? realloc(cap, (size_t)(o->ntracks + 1) * sizeof(*cap)) : NULL;
		if (!ncap) {
			rc = SQLITE_NOMEM;
			break;
		}
		cap = ncap;
		tr = &o->tracks[o->ntracks];
		memset(tr, 0, sizeof(*tr));
		tr->kind = k;
		tr->pid = (uint32_t)col_int(st, 1);
		tr->device_id = (int32_t)col_id(st, 2);
		tr->stream_id = col_id(st, 3);
		tr->tid = (uint32_t)col_int(st, 4);
		tr->depth = (int32_t)col_int(st, 5);
		tr->events = col_int(st, 6);
		tr->busy = col_int(st, 7);
		tr->bins = calloc((size_t)n + 1, sizeof(*tr->bins));
		cap[o->ntracks++] = (int32_t)n;
		if (!tr->bins) {
			rc = SQLITE_NOMEM;
			break;
		}
	}
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
	sqlite3_finalize(st);
	st = NULL;
	if (rc == SQLITE_OK && !bad)
		rc = sqlite3_prepare_v2(t->db,
					"SELECT trackId, bin, busy, events FROM TIMELINE_OVERVIEW "
					"ORDER BY trackId, bin",
					-1, &st, NULL);
	while (rc == SQLITE_OK && !bad && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = col_int(st, 0), bin = col_int(st, 1);
		int64_t busy = col_int(st, 2), ev = col_int(st, 3);
		cs_overview_track *tr;

		rc = SQLITE_OK;
		/* every row one of the counted bins of a track: the fill stays within cap[] */
		if (sqlite3_column_type(st, 0) != SQLITE_INTEGER ||
		    sqlite3_column_type(st, 1) != SQLITE_INTEGER || id < 0 || id >= o->ntracks ||
		    bin < 0 || bin >= nbins || busy < 0 || busy > bin_ns || ev < 0 || ev > events) {
			bad = 1;
			break;
		}
		tr = &o->tracks[id];
		if (tr->nbins >= cap[id] || (tr->nbins && tr->bins[tr->nbins - 1].bin >= bin)) {
			bad = 1;
			break;
		}
		tr->bins[tr->nbins].bin = (int32_t)bin;
		tr->bins[tr->nbins].busy = busy;
		tr->bins[tr->nbins].events = ev;
		tr->nbins++;
	}
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
	sqlite3_finalize(st);
	free(cap);
	if (rc != SQLITE_OK || bad) {
		cs_overview_free(o);
		if (bad)
			return overview_bad(t, err);
		return rc == SQLITE_NOMEM ? cs_error_set(err, CS_ERR_NOMEM, "out of memory")
					  : sql_error(t, rc, err);
	}
	*out = o;
	return 0;
}
