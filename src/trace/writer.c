/*
 * writer.c - the trace writer: turns events, strings, stacks and meta data into a trace file.
 *
 * The file is built as "<path>.tmp.RANDOM" and renamed onto path by cs_writer_finish(), so a trace
 * at path is always complete. Events go first to a staging database beside it
 * ("<path>.tmp.RANDOM.stage.RANDOM"), in arrival order; finish copies them into the final tables
 * sorted by start (see schema.c) and removes the stage. SQLite runs with an in-memory journal and
 * no syncs while writing: crash safety comes from the rename. Prepared statements live as long as
 * the writer; rows are committed every COMMIT_ROWS. Strings, frames and stacks are deduplicated in
 * memory hash tables, never by querying SQLite. The event rows are bound column by column as
 * include/cuscope/columns.def lists them.
 *
 * Not thread safe: one writer is fed from one thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cuscope/files.h"
#include "cuscope/grow.h"
#include "cuscope/trace.h"
#include "cuscope/u64map.h"
#include "trace_internal.h"
#include "cuscope/timeline.h"

#define COMMIT_ROWS   100000
#define PAGE_SIZE_SQL "PRAGMA main.page_size = 8192"

/* Open addressing hash index: slot i holds (entry index + 1) and the entry's hash; 0 = empty. */
struct hindex {
	int64_t *ent;
	uint64_t *hash;
	size_t cap; /* a power of two, or 0 */
	size_t used;
};

struct str_ent {
	char *s;
	size_t len;
};

struct frame_ent {
	int32_t kind, line;
	uint64_t pc, offset;
	int64_t module_id, symbol_id, file_id;
};

struct stack_ent {
	size_t off; /* first frame id in stack_fids */
	int n;
};

/* What the writer knows of each event table, for EVENT_TABLE_INFO and the final sort. */
struct ev_stats {
	int64_t rows;
	int64_t min_start, max_end, max_duration; /* CS_TS_UNKNOWN until known */
	int64_t last_start; /* start of the last row, CS_TS_UNKNOWN (the smallest value) for NULL */
	int sorted;	    /* rows so far arrived in start order */
};

struct cs_trace_writer {
	sqlite3 *db;
	char *path, *tmp_path, *stage_path;
	int overwrite;
	int failed;		     /* first error; every later call returns it */
	int64_t overview_min_events; /* fewer events: no overview */
	int64_t pending;	     /* rows since the last commit */

	sqlite3_stmt *ev[CS_EV_COUNT];
	sqlite3_stmt *meta, *meta_default, *string, *process, *device, *stream, *frame, *stack;
	struct ev_stats stats[CS_EV_COUNT];

	struct hindex strings_idx;
	struct str_ent *strings; /* id = index + 1 */
	size_t nstrings, strings_cap;

	struct hindex frames_idx;
	struct frame_ent *frames; /* id = index + 1 */
	size_t nframes, frames_cap;

	struct hindex stacks_idx;
	struct stack_ent *stacks; /* id = index + 1 */
	size_t nstacks, stacks_cap;
	int64_t *stack_fids;
	size_t nfids, fids_cap;

	char errmsg[CS_ERROR_MSG_MAX];
};

/* ---- small helpers ---- */

static uint64_t hash_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h ^ (h >> 29);
}

static uint64_t hash_mix(uint64_t h, uint64_t v)
{
	v += 0x9e3779b97f4a7c15ULL + h;
	v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ULL;
	v = (v ^ (v >> 27)) * 0x94d049bb133111ebULL;
	return v ^ (v >> 31);
}

/*
 * Find the entry with this hash for which eq(arg, index) is true. Returns its index, or -1 and sets
 * *slot to the free slot where it belongs.
 */
static int64_t hindex_find(const struct hindex *h, uint64_t hash,
			   int (*eq)(const void *arg, int64_t i), const void *arg, size_t *slot)
{
	size_t mask = h->cap - 1;

	for (size_t i = hash & mask;; i = (i + 1) & mask) {
		if (!h->ent[i]) {
			*slot = i;
			return -1;
		}
		if (h->hash[i] == hash && eq(arg, h->ent[i] - 1))
			return h->ent[i] - 1;
	}
}

/* Make room for one more entry; keeps the load at most one half. */
static int hindex_reserve(struct hindex *h)
{
	struct hindex n;

	if (h->cap && (h->used + 1) * 2 <= h->cap)
		return 0;
	n.cap = h->cap ? h->cap * 2 : 1024;
	n.used = h->used;
	n.ent = calloc(n.cap, sizeof(*n.ent));
	n.hash = calloc(n.cap, sizeof(*n.hash));
	if (!n.ent || !n.hash) {
		free(n.ent);
		free(n.hash);
		return CS_ERR_NOMEM;
	}
	for (size_t i = 0; i < h->cap; i++) {
		size_t j;

		if (!h->ent[i])
			continue;
		for (j = h->hash[i] & (n.cap - 1); n.ent[j]; j = (j + 1) & (n.cap - 1))
			;
		n.ent[j] = h->ent[i];
		n.hash[j] = h->hash[i];
	}
	free(h->ent);
	free(h->hash);
	*h = n;
	return 0;
}

static void hindex_set(struct hindex *h, size_t slot, uint64_t hash, int64_t index)
{
	h->ent[slot] = index + 1;
	h->hash[slot] = hash;
	h->used++;
}

static void hindex_free(struct hindex *h)
{
	free(h->ent);
	free(h->hash);
	memset(h, 0, sizeof(*h));
}

/* Record the first failure: its code and message. Returns the code. */
static int fail(cs_trace_writer *w, int code, const char *what)
{
	if (!w->failed) {
		w->failed = code;
		snprintf(w->errmsg, sizeof(w->errmsg), "cannot write '%s': %s", w->path, what);
	}
	return w->failed;
}

static int fail_sql(cs_trace_writer *w, int rc)
{
	int code = cs_sql_code(rc);

	return fail(w, code ? code : CS_ERR_SQL, sqlite3_errmsg(w->db));
}

static void bind_int(sqlite3_stmt *st, int i, int64_t v)
{
	sqlite3_bind_int64(st, i, v);
}

/* Unknown timestamps are NULL. */
static void bind_ts(sqlite3_stmt *st, int i, int64_t v)
{
	if (v == CS_TS_UNKNOWN)
		sqlite3_bind_null(st, i);
	else
		sqlite3_bind_int64(st, i, v);
}

/* Absent ids are NULL. */
static void bind_id(sqlite3_stmt *st, int i, int64_t v)
{
	if (v == CS_ID_NONE)
		sqlite3_bind_null(st, i);
	else
		sqlite3_bind_int64(st, i, v);
}

/* Unsigned 64-bit values (addresses, correlation ids) are stored with the same bits as int64. */
static void bind_u64(sqlite3_stmt *st, int i, uint64_t v)
{
	sqlite3_bind_int64(st, i, (int64_t)v);
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

static int commit_now(cs_trace_writer *w)
{
	char msg[256];
	int rc = cs_sql_exec(w->db, "COMMIT; BEGIN", msg, sizeof(msg));

	w->pending = 0;
	return rc ? fail(w, rc, msg) : 0;
}

/* Count rows written; commit every COMMIT_ROWS. */
static int count_rows(cs_trace_writer *w, int64_t n)
{
	w->pending += n;
	if (w->pending >= COMMIT_ROWS)
		return commit_now(w);
	return 0;
}

/* Run a statement whose parameters are bound, without counting the row. */
static int step_only(cs_trace_writer *w, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : fail_sql(w, rc);
}

/* Run a statement whose parameters are bound, count the row, commit now and then. */
static int step_row(cs_trace_writer *w, sqlite3_stmt *st)
{
	int rc = step_only(w, st);

	return rc ? rc : count_rows(w, 1);
}

/*
 * Step an event statement and update the table's statistics. end is CS_TS_UNKNOWN for instants.
 * The row is stored as given; the statistics (EVENT_TABLE_INFO, the overview's span) count only
 * plausible times, as the reader returns them (include/cuscope/trace.h).
 */
static int step_event(cs_trace_writer *w, enum cs_event_kind kind, int64_t start, int64_t end)
{
	struct ev_stats *s = &w->stats[kind];
	int rc = step_row(w, w->ev[kind]);
	int64_t last;

	if (rc)
		return rc;
	if (s->rows && start < s->last_start)
		s->sorted = 0;
	s->rows++;
	s->last_start = start;
	start = cs_ts_clean(start);
	end = cs_ts_end_clean(start, end);
	if (start != CS_TS_UNKNOWN && (s->min_start == CS_TS_UNKNOWN || start < s->min_start))
		s->min_start = start;
	last = end != CS_TS_UNKNOWN ? end : start;
	if (last != CS_TS_UNKNOWN && (s->max_end == CS_TS_UNKNOWN || last > s->max_end))
		s->max_end = last;
	if (start != CS_TS_UNKNOWN && end != CS_TS_UNKNOWN && end >= start &&
	    (s->max_duration == CS_TS_UNKNOWN || end - start > s->max_duration))
		s->max_duration = end - start;
	return 0;
}

static int prepare(cs_trace_writer *w, const char *sql, sqlite3_stmt **st)
{
	int rc = sqlite3_prepare_v3(w->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);

	return rc == SQLITE_OK ? 0 : fail_sql(w, rc);
}

static int prepare_all(cs_trace_writer *w)
{
	char sql[1024];
	int rc;

	for (int k = 0; k < CS_EV_COUNT; k++) {
		const struct cs_event_table_def *d = &cs_event_table_defs[k];
		int n = snprintf(sql, sizeof(sql), "INSERT INTO %s.%s(%s) VALUES(?",
				 CS_STAGE_SCHEMA, cs_event_kind_table(k), d->columns);

		for (int i = 1; i < d->ncolumns; i++)
			n += snprintf(sql + n, sizeof(sql) - (size_t)n, ",?");
		snprintf(sql + n, sizeof(sql) - (size_t)n, ")");
		rc = prepare(w, sql, &w->ev[k]);
		if (rc)
			return rc;
	}
	if ((rc = prepare(w, "INSERT OR REPLACE INTO META(key, value) VALUES(?, ?)", &w->meta)) ||
	    (rc = prepare(w, "INSERT OR IGNORE INTO META(key, value) VALUES(?, ?)",
			  &w->meta_default)) ||
	    (rc = prepare(w, "INSERT INTO StringIds(id, value) VALUES(?, ?)", &w->string)) ||
	    (rc = prepare(
		     w,
		     "INSERT INTO PROCESSES(pid, ppid, start, end, commandLine, rank, localRank, "
		     "worldSize, exitCode, usedCuda, droppedRecords, cuptiDeviceBytes) "
		     "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		     &w->process)) ||
	    (rc = prepare(
		     w,
		     "INSERT INTO TARGET_INFO_GPU(pid, deviceId, uuid, name, totalMemory, smCount, "
		     "computeMajor, computeMinor, clockRate, memoryBandwidth) "
		     "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		     &w->device)) ||
	    (rc = prepare(w,
			  "INSERT INTO TARGET_INFO_CUDA_STREAM(pid, deviceId, contextId, streamId, "
			  "isDefault, "
			  "priority) VALUES(?, ?, ?, ?, ?, ?)",
			  &w->stream)) ||
	    (rc = prepare(w,
			  "INSERT INTO STACK_FRAMES(id, kind, pc, moduleId, symbolId, offset, "
			  "fileId, line) "
			  "VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
			  &w->frame)) ||
	    (rc = prepare(w, "INSERT INTO STACKS(id, depth, frameId) VALUES(?, ?, ?)", &w->stack)))
		return rc;
	return 0;
}

static void finalize_all(cs_trace_writer *w)
{
	sqlite3_stmt **all[] = {&w->meta,   &w->meta_default, &w->string, &w->process,
				&w->device, &w->stream,	      &w->frame,  &w->stack};

	for (int k = 0; k < CS_EV_COUNT; k++) {
		sqlite3_finalize(w->ev[k]);
		w->ev[k] = NULL;
	}
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		sqlite3_finalize(*all[i]);
		*all[i] = NULL;
	}
}

static void writer_free(cs_trace_writer *w)
{
	finalize_all(w);
	if (w->db)
		sqlite3_close(w->db);
	for (size_t i = 0; i < w->nstrings; i++)
		free(w->strings[i].s);
	free(w->strings);
	free(w->frames);
	free(w->stacks);
	free(w->stack_fids);
	hindex_free(&w->strings_idx);
	hindex_free(&w->frames_idx);
	hindex_free(&w->stacks_idx);
	free(w->path);
	free(w->tmp_path);
	free(w->stage_path);
	free(w);
}

/* ---- open ---- */

#ifdef SQLITE_OPEN_NOFOLLOW
#define OPEN_NOFOLLOW SQLITE_OPEN_NOFOLLOW
#else
#define OPEN_NOFOLLOW 0
#endif

int cs_writer_open(const char *path, int overwrite, cs_trace_writer **out, cs_error *err)
{
	static const char *const setup[] = {
		PAGE_SIZE_SQL,
		"PRAGMA main.journal_mode = MEMORY",
		"PRAGMA main.synchronous = OFF",
		"PRAGMA main.cache_size = -32768",
		"PRAGMA locking_mode = EXCLUSIVE",
		"PRAGMA stage.journal_mode = MEMORY",
		"PRAGMA stage.synchronous = OFF",
		"PRAGMA stage.cache_size = -65536",
		"BEGIN",
	};
	cs_trace_writer *w;
	sqlite3_stmt *st = NULL;
	struct stat sb;
	char msg[256];
	int rc, code;

	if (out)
		*out = NULL;
	if (!path || !*path || !out)
		return cs_error_set(err, CS_ERR_INVALID, "cs_writer_open: no path");
	if (lstat(path, &sb) == 0) {
		if (S_ISLNK(sb.st_mode) && stat(path, &sb)) /* a dangling link: replaced */
			sb.st_mode = S_IFREG;
		if (S_ISDIR(sb.st_mode))
			return cs_error_set(err, CS_ERR_INVALID,
					    "cannot write '%s': is a directory", path);
		/* the trace is renamed onto path: a device, a FIFO or a socket would be replaced */
		if (!S_ISREG(sb.st_mode))
			return cs_error_set(err, CS_ERR_INVALID,
					    "cannot write '%s': not a regular file", path);
		if (!overwrite)
			return cs_error_set(err, CS_ERR_EXISTS,
					    "'%s' exists (use --force to overwrite)", path);
	}

	w = calloc(1, sizeof(*w));
	if (!w)
		return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
	w->overwrite = overwrite;
	w->overview_min_events = CS_OVERVIEW_MIN_EVENTS;
	w->path = strdup(path);
	if (!w->path) {
		writer_free(w);
		return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
	}
	/*
	 * Both files are made here, new (O_EXCL) under names nobody can guess, before SQLite opens
	 * them by name: a link planted beside path is never followed.
	 */
	w->tmp_path = cs_make_temp_beside(path, ".tmp.");
	if (w->tmp_path)
		w->stage_path = cs_make_temp_beside(w->tmp_path, ".stage.");
	if (!w->stage_path) {
		int e = errno;

		code = cs_error_set(err, e == ENOMEM ? CS_ERR_NOMEM : CS_ERR_IO,
				    "cannot create '%s': %s", path, strerror(e));
		cs_writer_abort(w);
		return code;
	}
	for (int k = 0; k < CS_EV_COUNT; k++) {
		w->stats[k].sorted = 1;
		w->stats[k].min_start = w->stats[k].max_end = w->stats[k].max_duration =
			CS_TS_UNKNOWN;
		w->stats[k].last_start = CS_TS_UNKNOWN;
	}
	rc = sqlite3_open_v2(w->tmp_path, &w->db, SQLITE_OPEN_READWRITE | OPEN_NOFOLLOW, NULL);
	if (rc != SQLITE_OK) {
		code = cs_error_set(err, cs_sql_code(rc) ? cs_sql_code(rc) : CS_ERR_IO,
				    "cannot create '%s': %s", path,
				    w->db ? sqlite3_errmsg(w->db) : sqlite3_errstr(rc));
		goto fail;
	}
	rc = sqlite3_prepare_v2(w->db, "ATTACH DATABASE ? AS " CS_STAGE_SCHEMA, -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, w->stage_path, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_OK) {
		code = cs_error_set(err, cs_sql_code(rc) ? cs_sql_code(rc) : CS_ERR_IO,
				    "cannot create '%s': %s", path, sqlite3_errmsg(w->db));
		goto fail;
	}
	for (size_t i = 0; i < sizeof(setup) / sizeof(setup[0]); i++) {
		rc = cs_sql_exec(w->db, setup[i], msg, sizeof(msg));
		if (rc) {
			code = cs_error_set(err, rc, "cannot create '%s': %s", path, msg);
			goto fail;
		}
	}
	rc = cs_schema_create(w->db, msg, sizeof(msg));
	if (rc) {
		code = cs_error_set(err, rc, "cannot create '%s': %s", path, msg);
		goto fail;
	}
	rc = prepare_all(w);
	if (rc) {
		code = cs_error_set(err, rc, "%s", w->errmsg);
		goto fail;
	}
	*out = w;
	return CS_OK;
fail:
	cs_writer_abort(w);
	return code;
}

/* ---- meta, strings ---- */

int cs_writer_set_meta(cs_trace_writer *w, const char *key, const char *value)
{
	if (!w || !key)
		return CS_ERR_INVALID;
	if (w->failed)
		return w->failed;
	bind_text(w->meta, 1, key);
	bind_text(w->meta, 2, value);
	return step_row(w, w->meta);
}

int cs_writer_set_meta_int(cs_trace_writer *w, const char *key, int64_t value)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRId64, value);
	return cs_writer_set_meta(w, key, buf);
}

struct str_key {
	const cs_trace_writer *w;
	const char *s;
	size_t len;
};

static int str_eq(const void *arg, int64_t i)
{
	const struct str_key *k = arg;
	const struct str_ent *e = &k->w->strings[i];

	return e->len == k->len && memcmp(e->s, k->s, k->len) == 0;
}

int64_t cs_writer_intern_len(cs_trace_writer *w, const char *s, size_t len)
{
	struct str_key key = {w, s, len};
	uint64_t hash;
	size_t slot = 0;
	int64_t i, id;
	char *copy;
	int rc;

	if (!w || !s || len > INT32_MAX / 2)
		return CS_ERR_INVALID;
	if (w->failed)
		return w->failed;
	if ((rc = hindex_reserve(&w->strings_idx)) ||
	    (rc = cs_grow((void **)&w->strings, &w->strings_cap, w->nstrings + 1,
			  sizeof(*w->strings))))
		return fail(w, rc, "out of memory");
	hash = hash_bytes(s, len);
	i = hindex_find(&w->strings_idx, hash, str_eq, &key, &slot);
	if (i >= 0)
		return i + 1;

	copy = malloc(len + 1);
	if (!copy)
		return fail(w, CS_ERR_NOMEM, "out of memory");
	memcpy(copy, s, len);
	copy[len] = '\0';
	id = (int64_t)w->nstrings + 1;
	bind_int(w->string, 1, id);
	sqlite3_bind_text(w->string, 2, copy, (int)len, SQLITE_STATIC);
	rc = step_only(w, w->string);
	if (rc) {
		free(copy);
		return rc;
	}
	w->strings[w->nstrings].s = copy;
	w->strings[w->nstrings].len = len;
	hindex_set(&w->strings_idx, slot, hash, (int64_t)w->nstrings);
	w->nstrings++;
	rc = count_rows(w, 1);
	return rc ? rc : id;
}

int64_t cs_writer_intern(cs_trace_writer *w, const char *s)
{
	if (!s)
		return CS_ERR_INVALID;
	return cs_writer_intern_len(w, s, strlen(s));
}

const char *cs_writer_string(const cs_trace_writer *w, int64_t id)
{
	if (!w || id < 1 || id > (int64_t)w->nstrings)
		return NULL;
	return w->strings[id - 1].s;
}

/* ---- processes, devices, streams ---- */

int cs_writer_add_process(cs_trace_writer *w, const cs_process *p)
{
	sqlite3_stmt *st;

	if (!w || !p)
		return CS_ERR_INVALID;
	if (w->failed)
		return w->failed;
	st = w->process;
	bind_int(st, 1, p->pid);
	bind_int(st, 2, p->ppid);
	bind_ts(st, 3, p->start);
	bind_ts(st, 4, p->end);
	bind_text(st, 5, p->command_line);
	bind_id(st, 6, p->rank);
	bind_id(st, 7, p->local_rank);
	bind_id(st, 8, p->world_size);
	bind_id(st, 9, p->exit_code);
	bind_int(st, 10, p->used_cuda);
	bind_int(st, 11, p->dropped_records);
	bind_int(st, 12, p->cupti_device_bytes);
	return step_row(w, st);
}

int cs_writer_add_device(cs_trace_writer *w, const cs_device *d)
{
	sqlite3_stmt *st;

	if (!w || !d)
		return CS_ERR_INVALID;
	if (w->failed)
		return w->failed;
	st = w->device;
	bind_int(st, 1, d->pid);
	bind_id(st, 2, d->device_id);
	bind_text(st, 3, d->uuid);
	bind_text(st, 4, d->name);
	bind_int(st, 5, d->total_memory);
	bind_int(st, 6, d->sm_count);
	bind_int(st, 7, d->compute_major);
	bind_int(st, 8, d->compute_minor);
	bind_int(st, 9, d->core_clock_khz);
	bind_int(st, 10, d->memory_bandwidth);
	return step_row(w, st);
}

int cs_writer_add_stream(cs_trace_writer *w, const cs_stream *s)
{
	sqlite3_stmt *st;

	if (!w || !s)
		return CS_ERR_INVALID;
	if (w->failed)
		return w->failed;
	st = w->stream;
	bind_int(st, 1, s->pid);
	bind_id(st, 2, s->device_id);
	bind_int(st, 3, s->context_id);
	bind_int(st, 4, s->stream_id);
	bind_int(st, 5, s->is_default);
	bind_int(st, 6, s->priority);
	return step_row(w, st);
}

/* ---- events ---- */

/* clang-format off */
/* Each column bound as columns.def's TYPE says. */
#define BIND_TS    bind_ts
#define BIND_END   bind_ts
#define BIND_INT   bind_int
#define BIND_ID    bind_id
#define BIND_U64   bind_u64
#define BIND_BYTES bind_int

/* bind_kernel(), bind_memcpy(), ...: a row's values into its kind's INSERT statement. */
#define CS_EVENT_TABLE(KIND, name) \
	static void bind_##name(sqlite3_stmt *st, const void *row) \
	{ \
		const cs_##name *r = row;
#define CS_COLUMN(KIND, column, field, ctype, TYPE, base, late, label, UNIT) \
		BIND_##TYPE(st, CS_COL_##KIND##_##column + 1, r->field);
#define CS_EVENT_TABLE_END(KIND, name) }
#include "cuscope/columns.def"

#define CS_EVENT_TABLE(KIND, name) [CS_EV_##KIND] = bind_##name,
static void (*const bind_row[CS_EV_COUNT])(sqlite3_stmt *st, const void *row) = {
#include "cuscope/columns.def"
};
/* clang-format on */

/* Write one event: start and end (CS_TS_UNKNOWN for instants) feed the table's statistics. */
static int add_event(cs_trace_writer *w, enum cs_event_kind kind, const void *row, int64_t start,
		     int64_t end)
{
	if (!w)
		return CS_ERR_INVALID;
	if (w->failed)
		return w->failed;
	bind_row[kind](w->ev[kind], row);
	return step_event(w, kind, start, end);
}

int cs_writer_add_kernel(cs_trace_writer *w, const cs_kernel *k)
{
	return k ? add_event(w, CS_EV_KERNEL, k, k->start, k->end) : CS_ERR_INVALID;
}

int cs_writer_add_memcpy(cs_trace_writer *w, const cs_memcpy *m)
{
	return m ? add_event(w, CS_EV_MEMCPY, m, m->start, m->end) : CS_ERR_INVALID;
}

int cs_writer_add_memset(cs_trace_writer *w, const cs_memset *m)
{
	return m ? add_event(w, CS_EV_MEMSET, m, m->start, m->end) : CS_ERR_INVALID;
}

int cs_writer_add_memory(cs_trace_writer *w, const cs_memory *m)
{
	return m ? add_event(w, CS_EV_MEMORY, m, m->start, CS_TS_UNKNOWN) : CS_ERR_INVALID;
}

int cs_writer_add_sync(cs_trace_writer *w, const cs_sync *s)
{
	return s ? add_event(w, CS_EV_SYNC, s, s->start, s->end) : CS_ERR_INVALID;
}

int cs_writer_add_api(cs_trace_writer *w, const cs_api *a)
{
	return a ? add_event(w, CS_EV_API, a, a->start, a->end) : CS_ERR_INVALID;
}

int cs_writer_add_nvtx(cs_trace_writer *w, const cs_nvtx *n)
{
	return n ? add_event(w, CS_EV_NVTX, n, n->start, n->end) : CS_ERR_INVALID;
}

/* ---- stacks ---- */

struct frame_key {
	const cs_trace_writer *w;
	const struct frame_ent *e;
};

static int frame_eq(const void *arg, int64_t i)
{
	const struct frame_key *k = arg;
	const struct frame_ent *a = k->e;
	const struct frame_ent *b = &k->w->frames[i];

	return a->kind == b->kind && a->line == b->line && a->pc == b->pc &&
	       a->offset == b->offset && a->module_id == b->module_id &&
	       a->symbol_id == b->symbol_id && a->file_id == b->file_id;
}

static int64_t intern_or_none(cs_trace_writer *w, const char *s)
{
	return s ? cs_writer_intern(w, s) : CS_ID_NONE;
}

/* The id of a frame, stored the first time it is seen. Returns it, or a negative cs_err code. */
static int64_t frame_id(cs_trace_writer *w, const cs_frame *f)
{
	struct frame_ent e = {0};
	struct frame_key key = {w, &e};
	uint64_t hash;
	size_t slot = 0;
	int64_t i, id;
	int rc;

	e.kind = f->kind;
	e.line = f->line;
	e.pc = f->pc;
	e.offset = f->offset;
	e.module_id = intern_or_none(w, f->module);
	e.symbol_id = intern_or_none(w, f->symbol);
	e.file_id = intern_or_none(w, f->file);
	if (w->failed)
		return w->failed;

	hash = hash_mix(hash_mix(hash_mix(0, (uint64_t)e.kind << 32 | (uint32_t)e.line), e.pc),
			e.offset);
	hash = hash_mix(hash_mix(hash_mix(hash, (uint64_t)e.module_id), (uint64_t)e.symbol_id),
			(uint64_t)e.file_id);
	if ((rc = hindex_reserve(&w->frames_idx)) ||
	    (rc = cs_grow((void **)&w->frames, &w->frames_cap, w->nframes + 1, sizeof(*w->frames))))
		return fail(w, rc, "out of memory");
	i = hindex_find(&w->frames_idx, hash, frame_eq, &key, &slot);
	if (i >= 0)
		return i + 1;

	id = (int64_t)w->nframes + 1;
	bind_int(w->frame, 1, id);
	bind_int(w->frame, 2, e.kind);
	bind_u64(w->frame, 3, e.pc);
	bind_id(w->frame, 4, e.module_id);
	bind_id(w->frame, 5, e.symbol_id);
	bind_u64(w->frame, 6, e.offset);
	bind_id(w->frame, 7, e.file_id);
	bind_int(w->frame, 8, e.line);
	rc = step_only(w, w->frame);
	if (rc)
		return rc;
	w->pending++; /* committed by the caller, once the whole stack is in */
	w->frames[w->nframes] = e;
	hindex_set(&w->frames_idx, slot, hash, (int64_t)w->nframes);
	w->nframes++;
	return id;
}

struct stack_key {
	const cs_trace_writer *w;
	const int64_t *fids;
	int n;
};

static int stack_eq(const void *arg, int64_t i)
{
	const struct stack_key *k = arg;
	const struct stack_ent *e = &k->w->stacks[i];

	return e->n == k->n &&
	       memcmp(k->w->stack_fids + e->off, k->fids, sizeof(int64_t) * (size_t)k->n) == 0;
}

int64_t cs_writer_add_stack(cs_trace_writer *w, const cs_frame *frames, int n)
{
	struct stack_key key;
	uint64_t hash = 0x5eed;
	size_t slot = 0, off;
	int64_t i, id;
	int rc;

	if (!w || !frames || n <= 0)
		return CS_ERR_INVALID;
	if (w->failed)
		return w->failed;
	/* The frame ids go at the end of stack_fids; they stay there only when the stack is new. */
	off = w->nfids;
	if (cs_grow((void **)&w->stack_fids, &w->fids_cap, off + (size_t)n, sizeof(*w->stack_fids)))
		return fail(w, CS_ERR_NOMEM, "out of memory");
	for (int d = 0; d < n; d++) {
		int64_t fid = frame_id(w, &frames[d]);

		if (fid < 0)
			return fid;
		w->stack_fids[off + (size_t)d] = fid;
		hash = hash_mix(hash, (uint64_t)fid);
	}
	if ((rc = hindex_reserve(&w->stacks_idx)) ||
	    (rc = cs_grow((void **)&w->stacks, &w->stacks_cap, w->nstacks + 1, sizeof(*w->stacks))))
		return fail(w, rc, "out of memory");
	key.w = w;
	key.fids = w->stack_fids + off;
	key.n = n;
	i = hindex_find(&w->stacks_idx, hash, stack_eq, &key, &slot);
	if (i >= 0)
		return i + 1;

	id = (int64_t)w->nstacks + 1;
	for (int d = 0; d < n; d++) {
		bind_int(w->stack, 1, id);
		bind_int(w->stack, 2, d);
		bind_int(w->stack, 3, w->stack_fids[off + (size_t)d]);
		rc = step_only(w, w->stack);
		if (rc)
			return rc;
	}
	w->nfids = off + (size_t)n;
	w->stacks[w->nstacks].off = off;
	w->stacks[w->nstacks].n = n;
	hindex_set(&w->stacks_idx, slot, hash, (int64_t)w->nstacks);
	w->nstacks++;
	rc = count_rows(w, n);
	return rc ? rc : id;
}

/* ---- the timeline overview ---- */

/*
 * What `cuscope view` draws before it has read the events: per track, OVERVIEW_BINS equal bins
 * over the trace's time span, each with the busy time of the track (the union of its events,
 * clipped to the bin) and the events that start in it. Computed from the sorted tables once they
 * are built; only non-empty bins are stored (docs/trace-format.md, TIMELINE_OVERVIEW).
 */
#define OVERVIEW_BINS 4096

struct ov_track {
	int kind; /* enum cs_overview_kind */
	uint32_t pid;
	int64_t a, b; /* (device, stream) or (tid, depth) */
	int64_t cov;  /* the union of the events so far ends here */
	int64_t events, busy;
	int64_t *bins; /* busy, events per bin: 2 * OVERVIEW_BINS */
};

/*
 * A track's key (kind, pid, a, b) is wider than 64 bits, so it is looked up in two steps: (pid, a)
 * gets a number of its own, then (that number, kind, b) gives the track. a and b are 32-bit values
 * (device or tid; stream, depth or 0), kind is 1 to 4. A pair's number fits in 30 bits: each
 * pair has a track, with 64 KiB of bins, so that 2^30 of them could not be held in memory.
 */
#define OV_PAIRS_MAX (1u << 30)

struct ov_state {
	int64_t start, bin_ns;
	struct ov_track *tracks;
	size_t n, cap;
	struct u64map pairs; /* pid << 32 | a -> uint32_t: the pair's number, in order of arrival */
	struct u64map lookup; /* number << 34 | (kind - 1) << 32 | b -> size_t: index in tracks */
};

/* One sorted table read for the overview: start, end, pid, then the track's key columns. */
struct ov_source {
	sqlite3_stmt *st;
	int kind, has;
	int64_t v[6];
	size_t last; /* index of the track of the last row + 1; 0: none */
};

static struct ov_track *ov_track_get(struct ov_state *o, struct ov_source *src, int kind,
				     uint32_t pid, int64_t a, int64_t b)
{
	struct ov_track *t = src->last ? &o->tracks[src->last - 1] : NULL;
	uint32_t *pair;
	size_t *idx;
	uint64_t key;
	int created;

	if (t && t->kind == kind && t->pid == pid && t->a == a && t->b == b)
		return t;
	pair = u64map_put(&o->pairs, (uint64_t)pid << 32 | (uint32_t)a, &created);
	if (!pair)
		return NULL;
	if (created)
		*pair = (uint32_t)(o->pairs.n - 1);
	if (*pair >= OV_PAIRS_MAX)
		return NULL;
	key = (uint64_t)*pair << 34 | (uint64_t)(kind - 1) << 32 | (uint32_t)b;
	idx = u64map_get(&o->lookup, key);
	if (idx) {
		src->last = *idx + 1;
		return &o->tracks[*idx];
	}
	if (cs_grow((void **)&o->tracks, &o->cap, o->n + 1, sizeof(*o->tracks)))
		return NULL;
	t = &o->tracks[o->n];
	memset(t, 0, sizeof(*t));
	t->bins = calloc(2 * OVERVIEW_BINS, sizeof(*t->bins));
	if (!t->bins)
		return NULL;
	o->n++;
	t->kind = kind;
	t->pid = pid;
	t->a = a;
	t->b = b;
	t->cov = INT64_MIN;
	idx = u64map_put(&o->lookup, key, &created);
	if (!idx)
		return NULL;
	*idx = o->n - 1;
	src->last = o->n;
	return t;
}

static int64_t ov_bin(const struct ov_state *o, int64_t ts)
{
	int64_t i = (ts - o->start) / o->bin_ns;

	return i < 0 ? 0 : i >= OVERVIEW_BINS ? OVERVIEW_BINS - 1 : i;
}

/* Add one event, its track's events arriving in start order. */
static void ov_add(struct ov_state *o, struct ov_track *t, int64_t s, int64_t e)
{
	int64_t from;

	if (e < s)
		e = s;
	t->events++;
	t->bins[2 * ov_bin(o, s) + 1]++;
	if (e <= t->cov)
		return;
	from = s > t->cov ? s : t->cov;
	t->cov = e;
	t->busy += e - from;
	for (int64_t i = ov_bin(o, from); from < e; i++) {
		int64_t bin_end = i >= OVERVIEW_BINS - 1 ? e : o->start + (i + 1) * o->bin_ns;
		int64_t to = bin_end < e ? bin_end : e;

		t->bins[2 * i] += to - from;
		from = to;
	}
}

static int ov_next(cs_trace_writer *w, struct ov_source *src)
{
	int rc = sqlite3_step(src->st);

	if (rc == SQLITE_DONE) {
		src->has = 0;
		return 0;
	}
	if (rc != SQLITE_ROW)
		return fail_sql(w, rc);
	for (int i = 0; i < sqlite3_column_count(src->st) && i < 6; i++)
		src->v[i] = sqlite3_column_type(src->st, i) != SQLITE_NULL
				    ? sqlite3_column_int64(src->st, i)
			    : i == 1				  ? CS_TS_UNKNOWN
			    : i == 3 && src->kind == CS_OV_STREAM ? CS_ID_NONE
								  : 0;
	/* implausible times are unknown, as the reader returns them: such a start sorts first */
	src->v[0] = cs_ts_clean(src->v[0]);
	src->v[1] = cs_ts_end_clean(src->v[0], src->v[1]);
	src->has = 1;
	return 0;
}

/* Add the row src holds to its track; the next one is read by the caller. */
static int ov_row(struct ov_state *o, struct ov_source *src)
{
	const int64_t *v = src->v;
	int64_t end = v[1] == CS_TS_UNKNOWN ? v[0] : v[1];
	struct ov_track *t;

	if (v[0] == CS_TS_UNKNOWN)
		return 0;
	switch (src->kind) {
	case CS_OV_STREAM:
		t = ov_track_get(o, src, CS_OV_STREAM, (uint32_t)v[2], (int32_t)v[3],
				 (uint32_t)v[4]);
		break;
	case CS_OV_WAITS:
		if (!cs_sync_type_is_host_wait((int)v[4]))
			return 0;
		t = ov_track_get(o, src, CS_OV_WAITS, (uint32_t)v[2], (uint32_t)v[3], 0);
		break;
	case CS_OV_NVTX:
		t = ov_track_get(o, src, CS_OV_NVTX, (uint32_t)v[2], (uint32_t)v[3],
				 cs_tl_nvtx_depth(v[4]));
		break;
	default:
		t = ov_track_get(o, src, CS_OV_API, (uint32_t)v[2], (uint32_t)v[3], 0);
		break;
	}
	if (!t)
		return CS_ERR_NOMEM;
	ov_add(o, t, v[0], end);
	return 0;
}

/* Read n sources, each in start order, merged by start. */
static int ov_merge(cs_trace_writer *w, struct ov_state *o, struct ov_source *src, int n)
{
	int rc = 0;

	for (int i = 0; i < n && !rc; i++)
		rc = ov_next(w, &src[i]);
	while (!rc) {
		int m = -1;

		for (int i = 0; i < n; i++)
			if (src[i].has && (m < 0 || src[i].v[0] < src[m].v[0]))
				m = i;
		if (m < 0)
			break;
		rc = ov_row(o, &src[m]);
		if (rc)
			return fail(w, rc, "out of memory");
		rc = ov_next(w, &src[m]);
	}
	return rc;
}

static int ov_write(cs_trace_writer *w, const struct ov_state *o)
{
	static const char *const kinds[] = {"", "stream", "waits", "api", "nvtx"};
	sqlite3_stmt *tr = NULL, *bin = NULL;
	char msg[256];
	int rc = cs_sql_exec(
		w->db,
		"CREATE TABLE main.TIMELINE_OVERVIEW_TRACKS(trackId INTEGER PRIMARY KEY, "
		"kind TEXT NOT NULL, pid INTEGER, deviceId INTEGER, streamId INTEGER, "
		"tid INTEGER, depth INTEGER, events INTEGER, busy INTEGER);"
		"CREATE TABLE main.TIMELINE_OVERVIEW(trackId INTEGER, bin INTEGER, "
		"busy INTEGER, events INTEGER, PRIMARY KEY(trackId, bin)) WITHOUT ROWID",
		msg, sizeof(msg));

	if (rc)
		return fail(w, rc, msg);
	if ((rc = prepare(w,
			  "INSERT INTO main.TIMELINE_OVERVIEW_TRACKS(trackId, kind, pid, deviceId, "
			  "streamId, tid, depth, events, busy) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)",
			  &tr)) ||
	    (rc = prepare(w,
			  "INSERT INTO main.TIMELINE_OVERVIEW(trackId, bin, busy, events) "
			  "VALUES(?, ?, ?, ?)",
			  &bin)))
		goto out;
	for (size_t i = 0; i < o->n && !rc; i++) {
		const struct ov_track *t = &o->tracks[i];
		int gpu = t->kind == CS_OV_STREAM;

		bind_int(tr, 1, (int64_t)i);
		bind_text(tr, 2, kinds[t->kind]);
		bind_int(tr, 3, t->pid);
		bind_id(tr, 4, gpu ? t->a : CS_ID_NONE);
		bind_id(tr, 5, gpu ? t->b : CS_ID_NONE);
		bind_id(tr, 6, gpu ? CS_ID_NONE : t->a);
		bind_id(tr, 7, t->kind == CS_OV_NVTX ? t->b : CS_ID_NONE);
		bind_int(tr, 8, t->events);
		bind_int(tr, 9, t->busy);
		rc = step_only(w, tr);
		for (int64_t b = 0; b < OVERVIEW_BINS && !rc; b++) {
			if (!t->bins[2 * b] && !t->bins[2 * b + 1])
				continue;
			bind_int(bin, 1, (int64_t)i);
			bind_int(bin, 2, b);
			bind_int(bin, 3, t->bins[2 * b]);
			bind_int(bin, 4, t->bins[2 * b + 1]);
			rc = step_only(w, bin);
		}
	}
	if (!rc && !(rc = cs_writer_set_meta_int(w, "overview_start_ns", o->start)) &&
	    !(rc = cs_writer_set_meta_int(w, "overview_bin_ns", o->bin_ns)))
		rc = cs_writer_set_meta_int(w, "overview_bins", OVERVIEW_BINS);
out:
	sqlite3_finalize(tr);
	sqlite3_finalize(bin);
	return rc;
}

void cs_writer_set_overview_min_events(cs_trace_writer *w, int64_t events)
{
	w->overview_min_events = events > 0 ? events : 0;
}

/* Build and store the overview from the sorted event tables; nothing when there is no event, or
 * fewer than w->overview_min_events. */
static int write_overview(cs_trace_writer *w)
{
	static const char *const sql[] = {
		"SELECT start, end, pid, deviceId, streamId FROM main.CUPTI_ACTIVITY_KIND_KERNEL "
		"WHERE start IS NOT NULL ORDER BY rowid",
		"SELECT start, end, pid, deviceId, streamId FROM main.CUPTI_ACTIVITY_KIND_MEMCPY "
		"WHERE start IS NOT NULL ORDER BY rowid",
		"SELECT start, end, pid, deviceId, streamId FROM main.CUPTI_ACTIVITY_KIND_MEMSET "
		"WHERE start IS NOT NULL ORDER BY rowid",
		"SELECT start, end, pid, tid, syncType FROM "
		"main.CUPTI_ACTIVITY_KIND_SYNCHRONIZATION WHERE start IS NOT NULL ORDER BY rowid",
		"SELECT start, end, pid, tid FROM main.CUPTI_ACTIVITY_KIND_RUNTIME WHERE start IS "
		"NOT NULL ORDER BY rowid",
		"SELECT start, end, pid, tid, depth FROM main.NVTX_EVENTS WHERE start IS NOT NULL "
		"ORDER BY rowid",
	};
	static const int kinds[] = {CS_OV_STREAM, CS_OV_STREAM, CS_OV_STREAM,
				    CS_OV_WAITS,  CS_OV_API,	CS_OV_NVTX};
	struct ov_source src[6];
	struct ov_state o = {0};
	int64_t start = CS_TS_UNKNOWN, end = CS_TS_UNKNOWN, events = 0;
	int rc = 0;

	for (int k = 0; k < CS_EV_COUNT; k++)
		events += w->stats[k].rows;
	if (events < w->overview_min_events)
		return 0;
	for (int k = 0; k < CS_EV_COUNT; k++) {
		const struct ev_stats *s = &w->stats[k];

		if (s->min_start != CS_TS_UNKNOWN &&
		    (start == CS_TS_UNKNOWN || s->min_start < start))
			start = s->min_start;
		if (s->max_end != CS_TS_UNKNOWN && (end == CS_TS_UNKNOWN || s->max_end > end))
			end = s->max_end;
	}
	if (start == CS_TS_UNKNOWN || end == CS_TS_UNKNOWN)
		return 0;
	o.start = start;
	o.bin_ns = (end - start) / OVERVIEW_BINS + 1;
	u64map_init(&o.pairs, sizeof(uint32_t));
	u64map_init(&o.lookup, sizeof(size_t));
	memset(src, 0, sizeof(src));
	for (int i = 0; i < 6 && !rc; i++) {
		src[i].kind = kinds[i];
		rc = prepare(w, sql[i], &src[i].st);
	}
	/* a stream's kernels, copies and memsets merged by start; each other track is one table */
	if (!rc)
		rc = ov_merge(w, &o, src, 3);
	for (int i = 3; i < 6 && !rc; i++)
		rc = ov_merge(w, &o, &src[i], 1);
	for (int i = 0; i < 6; i++)
		sqlite3_finalize(src[i].st);
	if (!rc)
		rc = ov_write(w, &o);
	for (size_t i = 0; i < o.n; i++)
		free(o.tracks[i].bins);
	free(o.tracks);
	u64map_free(&o.pairs);
	u64map_free(&o.lookup);
	return rc;
}

/*
 * The overview only lets `cuscope view` draw sooner: when it cannot be built (out of memory, a full
 * disk that may yet take the smaller commit) the trace is written without it, as older versions
 * wrote it, rather than not at all. Nonzero only when the rollback itself fails.
 */
static int write_overview_or_skip(cs_trace_writer *w)
{
	char msg[256];

	if (cs_sql_exec(w->db, "SAVEPOINT overview", msg, sizeof(msg)))
		return 0; /* nothing written: go on without it */
	if (write_overview(w)) {
		w->failed = 0;
		w->errmsg[0] = '\0';
		if (cs_sql_exec(w->db, "ROLLBACK TO overview", msg, sizeof(msg)))
			return fail(w, CS_ERR_SQL, msg);
	}
	if (cs_sql_exec(w->db, "RELEASE overview", msg, sizeof(msg)))
		return fail(w, CS_ERR_SQL, msg);
	return 0;
}

/* ---- finish, abort ---- */

static int write_table_info(cs_trace_writer *w)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(
		w->db,
		"INSERT OR REPLACE INTO " CS_TABLE_INFO
		"(tableName, rowCount, minStart, maxEnd, maxDuration) VALUES(?, ?, ?, ?, ?)",
		-1, &st, NULL);

	if (rc != SQLITE_OK)
		return fail_sql(w, rc);
	for (int k = 0; k < CS_EV_COUNT; k++) {
		const struct ev_stats *s = &w->stats[k];

		bind_text(st, 1, cs_event_kind_table(k));
		bind_int(st, 2, s->rows);
		bind_ts(st, 3, s->min_start);
		bind_ts(st, 4, s->max_end);
		bind_ts(st, 5, s->max_duration);
		rc = sqlite3_step(st);
		sqlite3_reset(st);
		if (rc != SQLITE_DONE) {
			rc = fail_sql(w, rc);
			break;
		}
		rc = 0;
	}
	sqlite3_finalize(st);
	return rc;
}

static int write_final_meta(cs_trace_writer *w)
{
	char created[32];
	struct tm tm;
	time_t now = time(NULL);
	int rc;

	gmtime_r(&now, &tm);
	strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if ((rc = cs_writer_set_meta_int(w, "schema_version", CS_SCHEMA_VERSION)) ||
	    (rc = cs_writer_set_meta(w, "cuscope_version", CUSCOPE_VERSION)))
		return rc;
	/* "created" may come from the caller (the time of the recording). */
	bind_text(w->meta_default, 1, "created");
	bind_text(w->meta_default, 2, created);
	return step_row(w, w->meta_default);
}

/* Flush the file to disk: the rename must never expose a file whose blocks are not written. */
static int sync_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return -1;
	if (fsync(fd))
		rc = -1;
	close(fd);
	return rc;
}

static int rename_into_place(cs_trace_writer *w, cs_error *err)
{
	struct stat sb;

	if (!w->overwrite) {
		if (renameat2(AT_FDCWD, w->tmp_path, AT_FDCWD, w->path, RENAME_NOREPLACE) == 0)
			return 0;
		if (errno == EEXIST)
			return cs_error_set(err, CS_ERR_EXISTS,
					    "'%s' exists (use --force to overwrite)", w->path);
		if (errno != EINVAL && errno != ENOSYS)
			goto failed;
		if (access(w->path, F_OK) == 0)
			return cs_error_set(err, CS_ERR_EXISTS,
					    "'%s' exists (use --force to overwrite)", w->path);
	}
	/* never renamed over what is not a file (a device or a FIFO put there since the open) */
	if (lstat(w->path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISLNK(sb.st_mode))
		return cs_error_set(err, CS_ERR_INVALID, "cannot write '%s': not a regular file",
				    w->path);
	if (rename(w->tmp_path, w->path) == 0)
		return 0;
failed:
	return cs_error_set(err, CS_ERR_IO, "cannot write '%s': rename: %s", w->path,
			    strerror(errno));
}

int cs_writer_finish(cs_trace_writer *w, cs_error *err)
{
	int sorted[CS_EV_COUNT];
	char msg[256];
	int rc;

	if (!w)
		return cs_error_set(err, CS_ERR_INVALID, "cs_writer_finish: no writer");
	if (w->failed)
		goto failed;
	if (write_final_meta(w) || write_table_info(w))
		goto failed;
	for (int k = 0; k < CS_EV_COUNT; k++)
		sorted[k] = w->stats[k].sorted;
	rc = cs_schema_build(w->db, sorted, msg, sizeof(msg));
	if (rc) {
		fail(w, rc, msg);
		goto failed;
	}
	if (write_overview_or_skip(w))
		goto failed;
	rc = cs_sql_exec(w->db, "COMMIT", msg, sizeof(msg));
	if (rc) {
		fail(w, rc, msg);
		goto failed;
	}
	finalize_all(w);
	rc = sqlite3_close(w->db);
	if (rc != SQLITE_OK) {
		fail(w, cs_sql_code(rc) ? cs_sql_code(rc) : CS_ERR_SQL, sqlite3_errstr(rc));
		goto failed;
	}
	w->db = NULL;
	unlink(w->stage_path);
	if (sync_file(w->tmp_path)) {
		fail(w, CS_ERR_IO, strerror(errno));
		goto failed;
	}
	rc = rename_into_place(w, err);
	if (rc) {
		unlink(w->tmp_path);
		writer_free(w);
		return rc;
	}
	writer_free(w);
	return CS_OK;
failed:
	rc = cs_error_set(err, w->failed, "%s", w->errmsg);
	cs_writer_abort(w);
	return rc;
}

void cs_writer_abort(cs_trace_writer *w)
{
	if (!w)
		return;
	finalize_all(w);
	if (w->db) {
		sqlite3_close(w->db);
		w->db = NULL;
	}
	if (w->tmp_path)
		unlink(w->tmp_path);
	if (w->stage_path)
		unlink(w->stage_path);
	writer_free(w);
}

const char *cs_writer_errmsg(const cs_trace_writer *w)
{
	return w ? w->errmsg : "no writer";
}
