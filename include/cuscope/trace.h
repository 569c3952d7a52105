/*
 * trace.h - the cuscope trace store: one SQLite file per recording.
 *
 * The schema is documented in docs/trace-format.md. Only src/trace/ writes SQL for the schema;
 * everything else (the importer, analyzers, exporters, the viewer) goes through the writer and
 * reader declared here.
 *
 * Timestamps are integer nanoseconds on CUPTI's clock, stored relative to the trace start (meta key
 * "time_base_ns" holds the absolute base). A timestamp that is unknown (CUPTI left it zero, or it
 * was implausible) is CS_TS_UNKNOWN in memory and NULL in the file.
 */
#ifndef CUSCOPE_TRACE_H
#define CUSCOPE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CS_SCHEMA_VERSION 2
#define CS_TS_UNKNOWN	  INT64_MIN
/* No value for an optional id column (stream, graph, stack, ...): stored as NULL. */
#define CS_ID_NONE (-1)
/* Meta key of a trace recorded with `record --ring`: the window kept and what was cut before it
 * (docs/trace-format.md). */
#define CS_META_RING "ring"
/* META key of a dump of a running recording (`cuscope dump`): JSON {"n", "realtime_ns",
 * "processes", "running", "answered", "late"}: the dump's number in its recording, when it was taken,
 * the processes with spool files, those still running, those that put their files aside in time
 * and those taken as their files were. */
#define CS_META_DUMP "dump"

/*
 * Plausibility bounds (docs/trace-format.md, "Plausible values"), the same for the importer, the
 * writer's statistics and the reader.
 *
 * CS_TS_MAX: a timestamp (ns since the trace start) lies in [-CS_TS_MAX, CS_TS_MAX], and a duration
 * (end - start) in [0, CS_TS_MAX]. 2^53 - 1 ns is about 104 days, longer than any recording, and
 * the largest integer a double holds exactly: the exports and the viewer carry times as doubles
 * (JSON numbers), which then never round. A span of two plausible times fits in 2^54, far from
 * int64 overflow, so that differences of times need no checks.
 *
 * CS_BYTES_MAX: a size in bytes lies in [0, CS_BYTES_MAX]. 2^53 (8 PiB) is far above the memory of
 * the largest GPUs (under 2^38), yet a size is also what a program asked for: a failed cudaMalloc
 * of 1 PiB (2^50) or a reservation of GPU virtual address space (49 bits on current GPUs) is real
 * data, not damage. 2^53 is also the largest integer a double holds exactly (the JSON exports).
 * Sums of 2^10 such sizes fit in int64; longer sums saturate (cuscope/checked.h).
 *
 * A value outside the bounds is unknown: a timestamp reads as CS_TS_UNKNOWN (NULL), a size as 0
 * (what the schema stores for a size that is not known).
 */
#define CS_TS_MAX    ((INT64_C(1) << 53) - 1)
#define CS_BYTES_MAX (INT64_C(1) << 53)

static inline int cs_ts_plausible(int64_t t)
{
	return t >= -CS_TS_MAX && t <= CS_TS_MAX;
}

/* t when plausible, else CS_TS_UNKNOWN. */
static inline int64_t cs_ts_clean(int64_t t)
{
	return cs_ts_plausible(t) ? t : CS_TS_UNKNOWN;
}

/*
 * The end of a span whose start is start (both as cs_ts_clean() left them): unknown when it is
 * unknown, before the start, or more than CS_TS_MAX after it.
 */
static inline int64_t cs_ts_end_clean(int64_t start, int64_t end)
{
	if (!cs_ts_plausible(end))
		return CS_TS_UNKNOWN;
	if (start != CS_TS_UNKNOWN && (end < start || end - start > CS_TS_MAX))
		return CS_TS_UNKNOWN;
	return end;
}

static inline int cs_bytes_plausible(int64_t b)
{
	return b >= 0 && b <= CS_BYTES_MAX;
}

/* b when plausible, else 0 (unknown size). */
static inline int64_t cs_bytes_clean(int64_t b)
{
	return cs_bytes_plausible(b) ? b : 0;
}

/* Event kinds, one table each. */
enum cs_event_kind {
	CS_EV_KERNEL = 0,
	CS_EV_MEMCPY,
	CS_EV_MEMSET,
	CS_EV_MEMORY, /* device memory allocation / free / VMM operation */
	CS_EV_SYNC,   /* host synchronization and GPU-side waits */
	CS_EV_API,    /* CUDA runtime / driver API calls (selected ids, or all with --api=all) */
	CS_EV_NVTX,   /* NVTX ranges and marks */
	CS_EV_COUNT
};

/*
 * The columns of each event table (include/cuscope/columns.def): CS_COL_<KIND>_<column> is the
 * column's place in its table, 0-based (CS_COL_KERNEL_gridX), and CS_COL_<KIND>_COUNT the number
 * of columns; the bulk scans (cs_trace_scan) hand each row over as values indexed by them.
 */
/* clang-format off */
#define CS_EVENT_TABLE(KIND, name) enum {
#define CS_COLUMN(KIND, column, field, ctype, TYPE, base, late, label, UNIT) CS_COL_##KIND##_##column,
#define CS_EVENT_TABLE_END(KIND, name) CS_COL_##KIND##_COUNT };
#include "cuscope/columns.def"
/* clang-format on */

/* What a column's number is, and so how it is shown (columns.def's UNIT says what each holds). */
enum cs_column_unit {
	CS_COLUNIT_NONE = 0,
	CS_COLUNIT_NS,
	CS_COLUNIT_BYTES,
	CS_COLUNIT_COUNT,
	CS_COLUNIT_DIM,
	CS_COLUNIT_ID,
	CS_COLUNIT_STRING,
	CS_COLUNIT_FLAG,
	CS_COLUNIT_CODE,
	CS_COLUNIT_COPY_KIND,
	CS_COLUNIT_MEM_KIND,
	CS_COLUNIT_MEM_OP,
	CS_COLUNIT_SYNC_TYPE,
	CS_COLUNIT_ADDRESS,
	CS_COLUNIT_COLOR,
};

struct cs_event;

/* One column of an event table as people see it (columns.def). */
typedef struct cs_column_info {
	const char *name;  /* the SQL name (docs/trace-format.md): CS_COL_<KIND>_<name> */
	const char *label; /* the name for people ("registers per thread") */
	enum cs_column_unit unit;
	int has_none; /* 1: the value none stands for a missing one (TS, END and ID columns) */
	int64_t none; /* CS_TS_UNKNOWN or CS_ID_NONE */
} cs_column_info;

/* The columns of kind's table in their order, indexed by CS_COL_<KIND>_<column>; *n: how many
 * (0 and NULL for a kind out of range). */
const cs_column_info *cs_event_columns(enum cs_event_kind kind, int *n);
/* The value of column col (CS_COL_<KIND>_<column>) of ev; a U64 column with the same bits, a
 * column out of range 0. */
int64_t cs_event_value(const struct cs_event *ev, int col);
/* The unit's name: "ns", "bytes", "count", "dim", "id", "copy_kind", ... (enum cs_column_unit) */
const char *cs_column_unit_name(enum cs_column_unit unit);
/* The name of value v of a unit whose values have names (COPY_KIND, MEM_KIND, MEM_OP,
 * SYNC_TYPE); NULL for the other units. */
const char *cs_column_value_name(enum cs_column_unit unit, int64_t v);

/* Name of the table that holds events of a kind, and a short human name ("kernels", "memcpy", ...).
 */
const char *cs_event_kind_table(enum cs_event_kind kind);
const char *cs_event_kind_name(enum cs_event_kind kind);

/* Memcpy direction; values follow CUpti_ActivityMemcpyKind. */
enum cs_copy_kind {
	CS_COPY_UNKNOWN = 0,
	CS_COPY_HTOD = 1,
	CS_COPY_DTOH = 2,
	CS_COPY_HTOA = 3,
	CS_COPY_ATOH = 4,
	CS_COPY_ATOA = 5,
	CS_COPY_ATOD = 6,
	CS_COPY_DTOA = 7,
	CS_COPY_DTOD = 8,
	CS_COPY_HTOH = 9,
	CS_COPY_PTOP = 10,
};
const char *cs_copy_kind_name(int kind); /* "HtoD", "DtoH", ... */

/* Memory kinds; values follow CUpti_ActivityMemoryKind. */
enum cs_mem_kind {
	CS_MEM_UNKNOWN = 0,
	CS_MEM_PAGEABLE = 1,
	CS_MEM_PINNED = 2,
	CS_MEM_DEVICE = 3,
	CS_MEM_ARRAY = 4,
	CS_MEM_MANAGED = 5,
	CS_MEM_DEVICE_STATIC = 6,
	CS_MEM_MANAGED_STATIC = 7,
};
const char *cs_mem_kind_name(int kind);

/* Memory operations (CS_EV_MEMORY). */
enum cs_mem_op {
	CS_MEMOP_ALLOC = 1, /* cudaMalloc, cuMemAlloc, cudaMallocAsync, ... */
	CS_MEMOP_FREE = 2,
	CS_MEMOP_VMM_CREATE = 3,       /* cuMemCreate: physical memory */
	CS_MEMOP_VMM_RELEASE = 4,      /* cuMemRelease */
	CS_MEMOP_VMM_MAP = 5,	       /* cuMemMap */
	CS_MEMOP_VMM_UNMAP = 6,	       /* cuMemUnmap */
	CS_MEMOP_VMM_RESERVE = 7,      /* cuMemAddressReserve: address space only */
	CS_MEMOP_VMM_ADDRESS_FREE = 8, /* cuMemAddressFree */
};
const char *cs_mem_op_name(int op);

/*
 * How a memory row moves the counter of device memory in use on its GPU, the one `cuscope export`
 * and `cuscope view` draw. CS_MEMCOUNT_ALLOC: a successful allocation of device or managed memory
 * (CS_MEMOP_ALLOC) or of physical memory (CS_MEMOP_VMM_CREATE) with a size and a device; it adds
 * its bytes and stays live under (pid, address, *vmm). CS_MEMCOUNT_FREE: a successful free or
 * cuMemRelease on a device; it takes back the live allocation of the same (pid, address, *vmm),
 * and counts for nothing without one (memory allocated before the trace), so that the counter
 * never goes below zero. CS_MEMCOUNT_NONE: every other row. Narrower than what the rules count as
 * device memory (cs_a_memory_is_device): no arrays, no rows of unknown kind.
 */
enum cs_mem_count {
	CS_MEMCOUNT_NONE = 0,
	CS_MEMCOUNT_ALLOC = 1,
	CS_MEMCOUNT_FREE = 2,
};
int cs_mem_count_of(int op, int mem_kind, int result, int device_id, int64_t bytes, int *vmm);

/* Synchronization types; values follow CUpti_ActivitySynchronizationType, plus cuscope's own. */
enum cs_sync_type {
	CS_SYNC_UNKNOWN = 0,
	CS_SYNC_EVENT_SYNCHRONIZE = 1,
	CS_SYNC_STREAM_WAIT_EVENT = 2, /* GPU-side wait: not a host wait */
	CS_SYNC_STREAM_SYNCHRONIZE = 3,
	CS_SYNC_CONTEXT_SYNCHRONIZE = 4,
	CS_SYNC_MEMCPY =
		100, /* a synchronous memcpy that made the host wait (no CUPTI sync record) */
	CS_SYNC_EVENT_QUERY = 101, /* queries: not host waits */
	CS_SYNC_STREAM_QUERY = 102,
	/* a host function (cudaLaunchHostFunc & co) enqueued right after a device-to-host copy: the
	 * analysis takes it as a host wait for the copy (never stored in a trace) */
	CS_SYNC_HOST_FUNC = 103,
};
const char *cs_sync_type_name(int type);
/* 1 when the type is a host wait (the host thread blocked until GPU work finished). */
int cs_sync_type_is_host_wait(int type);

/* NVTX event types. */
enum cs_nvtx_type {
	CS_NVTX_PUSHPOP = 1,  /* nvtxRangePush / nvtxRangePop: nests on one thread */
	CS_NVTX_STARTEND = 2, /* nvtxRangeStart / nvtxRangeEnd: may cross threads */
	CS_NVTX_MARK = 3,     /* instant */
};

/* API kinds (CS_EV_API). */
enum cs_api_kind {
	CS_API_RUNTIME = 1,
	CS_API_DRIVER = 2,
};

/*
 * One event of each kind, as the writer takes it and the reader returns it: cs_kernel, cs_memcpy,
 * cs_memset, cs_memory, cs_sync, cs_api and cs_nvtx have one member per column of their table, in
 * its order, as include/cuscope/columns.def lists them (with what each holds), then the strings
 * below, which the reader looks up from the ids and the writer ignores (it takes the ids).
 */
#define CS_EVENT_STRINGS_KERNEL const char *name; /* the kernel name of name_id */
#define CS_EVENT_STRINGS_MEMCPY
#define CS_EVENT_STRINGS_MEMSET
#define CS_EVENT_STRINGS_MEMORY
#define CS_EVENT_STRINGS_SYNC
#define CS_EVENT_STRINGS_API const char *name; /* the function name of name_id */
#define CS_EVENT_STRINGS_NVTX                            \
	const char *text;   /* the message of text_id */ \
	const char *domain; /* the domain name of domain_id; NULL for the default one */ \
	const char *payload; /* the JSON object of payload_id; NULL when none */
/* clang-format off */
#define CS_EVENT_TABLE(KIND, name) typedef struct cs_##name {
#define CS_COLUMN(KIND, column, field, ctype, TYPE, base, late, label, UNIT) ctype field;
#define CS_EVENT_TABLE_END(KIND, name) CS_EVENT_STRINGS_##KIND } cs_##name;
#include "cuscope/columns.def"
/* clang-format on */

/* One event of any kind, as the reader returns it. */
typedef struct cs_event {
	enum cs_event_kind kind;
	union {
		cs_kernel kernel;
		cs_memcpy memcpy;
		cs_memset memset;
		cs_memory memory;
		cs_sync sync;
		cs_api api;
		cs_nvtx nvtx;
	} u;
} cs_event;

/*
 * ev made an event of kind with every column missing (CS_TS_UNKNOWN for a time, CS_ID_NONE for an
 * id, 0 for the rest) and no strings: a start for filling in what is known.
 */
void cs_event_clear(cs_event *ev, enum cs_event_kind kind);

typedef struct cs_process {
	uint32_t pid;
	uint32_t ppid;
	int64_t start, end; /* CS_TS_UNKNOWN when not known */
	const char *command_line;
	int32_t rank, local_rank, world_size; /* CS_ID_NONE when not set */
	int32_t exit_code;	    /* CS_ID_NONE when unknown (killed, still running at the end) */
	int32_t used_cuda;	    /* 0 for processes that never launched GPU work */
	int64_t dropped_records;    /* records CUPTI or cuscope lost in this process */
	int64_t cupti_device_bytes; /* device memory CUPTI used for its buffers */
} cs_process;

typedef struct cs_device {
	uint32_t pid; /* device ids are per process (CUDA_VISIBLE_DEVICES): the UUID identifies the
			 GPU */
	int32_t device_id;
	const char *uuid; /* "GPU-xxxxxxxx-..." */
	const char *name;
	int64_t total_memory;
	int32_t sm_count;
	int32_t compute_major, compute_minor;
	int64_t core_clock_khz;
	int64_t memory_bandwidth; /* bytes/s, 0 when unknown */
} cs_device;

typedef struct cs_stream {
	uint32_t pid;
	int32_t device_id;
	uint32_t context_id;
	uint32_t stream_id;
	int32_t is_default; /* the legacy or per-thread default stream */
	int32_t priority;
} cs_stream;

/* One stack frame. kind: 1 native, 2 python. */
typedef struct cs_frame {
	int32_t kind;
	uint64_t pc;	    /* native: the return address; python: 0 */
	const char *module; /* native: the module path; python: NULL */
	const char *symbol; /* native: demangled symbol; python: function name */
	uint64_t offset;    /* native: pc - symbol address */
	const char *file;   /* python (or native with debug info) source file */
	int32_t line;
} cs_frame;

/* ---- writer ---- */

typedef struct cs_trace_writer cs_trace_writer;

/*
 * Create a trace at path. The data goes to a temporary file beside it, which cs_writer_finish()
 * renames onto path; cs_writer_abort() removes it, so an interrupted writer never leaves a
 * half-written trace. With overwrite 0 an existing path is an error (CS_ERR_EXISTS). Not thread
 * safe: feed it from one thread.
 */
int cs_writer_open(const char *path, int overwrite, cs_trace_writer **out, cs_error *err);
/* Set (or replace) a meta key. Keys used by cuscope are listed in docs/trace-format.md. */
int cs_writer_set_meta(cs_trace_writer *w, const char *key, const char *value);
int cs_writer_set_meta_int(cs_trace_writer *w, const char *key, int64_t value);
/*
 * The timeline overview (TIMELINE_OVERVIEW) is written when the trace holds at least this many
 * events (default CS_OVERVIEW_MIN_EVENTS; 0: always): below it `cuscope view` reads the exact
 * tracks about as fast, and the overview's fixed size would be a good part of a small trace.
 */
#define CS_OVERVIEW_MIN_EVENTS 500000
void cs_writer_set_overview_min_events(cs_trace_writer *w, int64_t events);
/* Intern a string by content; returns its StringIds id (>= 0), or a negative cs_err code. */
int64_t cs_writer_intern(cs_trace_writer *w, const char *s);
int64_t cs_writer_intern_len(cs_trace_writer *w, const char *s, size_t len);
/* An interned string by its StringIds id, or NULL. Lives until the writer is finished. */
const char *cs_writer_string(const cs_trace_writer *w, int64_t id);

int cs_writer_add_process(cs_trace_writer *w, const cs_process *p);
int cs_writer_add_device(cs_trace_writer *w, const cs_device *d);
int cs_writer_add_stream(cs_trace_writer *w, const cs_stream *s);
int cs_writer_add_kernel(cs_trace_writer *w, const cs_kernel *k);
int cs_writer_add_memcpy(cs_trace_writer *w, const cs_memcpy *m);
int cs_writer_add_memset(cs_trace_writer *w, const cs_memset *m);
int cs_writer_add_memory(cs_trace_writer *w, const cs_memory *m);
int cs_writer_add_sync(cs_trace_writer *w, const cs_sync *s);
int cs_writer_add_api(cs_trace_writer *w, const cs_api *a);
int cs_writer_add_nvtx(cs_trace_writer *w, const cs_nvtx *n);
/*
 * Add a stack of n frames (n >= 1), innermost first; identical stacks (same frames in the same
 * order) get the same id, and identical frames are stored once. Returns the stack id (>= 0) or a
 * negative cs_err code.
 */
int64_t cs_writer_add_stack(cs_trace_writer *w, const cs_frame *frames, int n);
/* Build the indices, commit, and move the file onto its final path. Frees the writer in every case.
 */
int cs_writer_finish(cs_trace_writer *w, cs_error *err);
/* Drop everything written and free the writer. */
void cs_writer_abort(cs_trace_writer *w);
/* Error message of the last failed call on w. */
const char *cs_writer_errmsg(const cs_trace_writer *w);

/* ---- reader ---- */

typedef struct cs_trace cs_trace;

/*
 * Open a trace read-only. Errors (with a one-line message in err): CS_ERR_NOT_FOUND (missing file),
 * CS_ERR_NOT_SQLITE (not a database), CS_ERR_NOT_TRACE (SQLite but not a cuscope trace),
 * CS_ERR_NEWER_SCHEMA, CS_ERR_CORRUPT (truncated or damaged).
 */
int cs_trace_open(const char *path, cs_trace **out, cs_error *err);
/* cs_trace_open with flags: CS_TRACE_ONE_THREAD when the trace will only ever be used by one thread
 * at a time, which spares SQLite's locking on every call (SQLITE_OPEN_NOMUTEX). */
enum { CS_TRACE_ONE_THREAD = 1 };
int cs_trace_open_flags(const char *path, int flags, cs_trace **out, cs_error *err);
void cs_trace_close(cs_trace *t);
const char *cs_trace_path(const cs_trace *t);
int cs_trace_schema_version(const cs_trace *t);
/* Value of a meta key, or NULL. The string lives until the trace is closed. */
const char *cs_trace_meta(cs_trace *t, const char *key);
/* A string by its StringIds id, or NULL. Lives until the trace is closed. */
const char *cs_trace_string(cs_trace *t, int64_t id);
/* The rows of StringIds: what bounds the name ids the analyses keep (cs_analysis_load()). */
int64_t cs_trace_string_rows(cs_trace *t);

typedef struct cs_trace_summary {
	int64_t start, end; /* first and last timestamp of any event, ns since trace start;
			     * CS_TS_UNKNOWN when the trace has no event */
	int64_t counts[CS_EV_COUNT];
	int64_t processes, devices, streams, strings, stacks;
	int64_t findings; /* rows of a FINDINGS table (docs/trace-format.md): cuscope writes none */
	int64_t dropped_records;
} cs_trace_summary;
int cs_trace_get_summary(cs_trace *t, cs_trace_summary *out, cs_error *err);

/*
 * Processes and devices; the callback's pointers live only during the call. Stops when cb returns
 * non-zero. Returns 0 (also when cb stopped with a positive value), cb's value when negative, or a
 * cs_err code.
 */
int cs_trace_each_process(cs_trace *t, int (*cb)(const cs_process *p, void *arg), void *arg,
			  cs_error *err);
/* A process without its end record (killed by SIGKILL, os._exit, a signal its own handler ended
 * it with), and the time of its last event (the latest start or end of any kind; CS_TS_UNKNOWN
 * when it has none): records after it may be missing. */
typedef struct cs_unended {
	uint32_t pid;
	int64_t last;
} cs_unended;
/* The processes of t without an end record, in PROCESSES order: *out (malloc'd, NULL when none)
 * and *n. CS_OK or a cs_err code with err set. */
int cs_trace_unended(cs_trace *t, cs_unended **out, int *n, cs_error *err);
/* The same list without the time of the last event (CS_TS_UNKNOWN in each): for a caller that has
 * the events in memory already (cs_analysis_last_time() in analyze.h), which spares a scan of every
 * event table per process. */
int cs_trace_unended_pids(cs_trace *t, cs_unended **out, int *n, cs_error *err);
int cs_trace_each_device(cs_trace *t, int (*cb)(const cs_device *d, void *arg), void *arg,
			 cs_error *err);
int cs_trace_each_stream(cs_trace *t, int (*cb)(const cs_stream *s, void *arg), void *arg,
			 cs_error *err);

/* Frames of a stack, innermost first. *frames is owned by the trace and valid until the next call.
 */
int cs_trace_get_stack(cs_trace *t, int64_t stack_id, const cs_frame **frames, int *n,
		       cs_error *err);

/*
 * Which events an iterator returns. Fields left at their "any" value do not filter; device and
 * stream filters do not apply to kinds without those columns (API calls, NVTX). An event with an
 * unknown end counts as an instant at its start; one with an unknown start is returned only when
 * neither t0 nor t1 is set. Implausible values read as unknown (CS_TS_MAX, CS_BYTES_MAX above).
 */
typedef struct cs_filter {
	int64_t t0, t1;	   /* events overlapping [t0, t1); CS_TS_UNKNOWN for no bound */
	int64_t pid;	   /* -1 = any */
	int64_t device_id; /* -1 = any */
	int64_t stream_id; /* -1 = any */
} cs_filter;
/* A filter that matches everything. */
cs_filter cs_filter_all(void);

typedef struct cs_iter cs_iter;
/* Iterate events of one kind in time order (start, then insertion order) under a filter. */
int cs_iter_open(cs_trace *t, enum cs_event_kind kind, const cs_filter *f, cs_iter **out,
		 cs_error *err);
/*
 * Next event: returns 1 and fills ev, 0 at the end, or a negative cs_err code. Strings in ev live
 * until the next call on the iterator.
 */
int cs_iter_next(cs_iter *it, cs_event *ev);
void cs_iter_close(cs_iter *it);

/*
 * Bulk read of a whole event table, for analyses that load every row (cs_analysis_load): calls
 * row() for each event of kind in time order with the values of the listed columns (the
 * CS_COL_<KIND>_<column> constants above, at most CS_SCAN_MAX_COLUMNS of them) at their place in
 * the row: values[CS_COL_KERNEL_gridX]. A value reads as the iterator reads it: a NULL or
 * implausible time as CS_TS_UNKNOWN (also an end before its start or more than CS_TS_MAX after
 * it, when both are listed), a NULL id as CS_ID_NONE, an implausible size and any other NULL as 0;
 * the columns not listed hold those null values. Only the listed columns are read and no string
 * is looked up, so a scan is several times faster than an iterator. When SQLite reads the range
 * by one walk of the table in rowid order (any trace cuscope wrote), one step of an aggregate
 * statement hands every row over, row() being called from inside it. values lives during the
 * call. Stops when row() returns non-zero. Returns 0 (also when row() stopped with a positive
 * value), row()'s value when negative, CS_ERR_INVALID for a column the table does not have, or
 * another cs_err code.
 */
#define CS_SCAN_MAX_COLUMNS 32
int cs_trace_scan(cs_trace *t, enum cs_event_kind kind, const int *columns, int ncolumns,
		  int (*row)(const int64_t *values, void *arg), void *arg, cs_error *err);
/*
 * The same for the events first .. end-1 of the table in time order (0-based; end past the last
 * row reads to the end), so that threads, each with its own cs_trace, can read parts of a table.
 */
int cs_trace_scan_rows(cs_trace *t, enum cs_event_kind kind, int64_t first, int64_t end,
		       const int *columns, int ncolumns,
		       int (*row)(const int64_t *values, void *arg), void *arg, cs_error *err);

/*
 * The 0-based row of the first event of the table kind that starts at or after ts (the table's
 * row count when none does), found by a binary search on the rows' time order: rows of an unknown
 * start come first and count as before every ts. With cs_trace_scan_rows(), the rows of the events
 * that start in a window [t0, t1) are row_at(t0) .. row_at(t1) - 1.
 */
int cs_trace_row_at(cs_trace *t, enum cs_event_kind kind, int64_t ts, int64_t *row, cs_error *err);

/* ---- the timeline overview ---- */

/*
 * Tracks of the overview the writer stores (TIMELINE_OVERVIEW, docs/trace-format.md): the tracks
 * `cuscope view` draws, except device memory.
 */
enum cs_overview_kind {
	CS_OV_STREAM = 1, /* kernels, memcpys, memsets of one (pid, device, stream) */
	CS_OV_WAITS = 2,  /* host waits of one (pid, tid) */
	CS_OV_API = 3,	  /* CUDA API calls of one (pid, tid) */
	CS_OV_NVTX = 4,	  /* NVTX ranges of one (pid, tid, depth) */
};

typedef struct cs_overview_bin {
	int32_t bin;	/* 0 .. nbins-1: [start + bin * bin_ns, start + (bin + 1) * bin_ns) */
	int64_t busy;	/* ns the track was busy in the bin (the union of its events) */
	int64_t events; /* events that start in the bin */
} cs_overview_bin;

typedef struct cs_overview_track {
	int32_t kind; /* enum cs_overview_kind */
	uint32_t pid;
	int32_t device_id; /* streams; CS_ID_NONE otherwise */
	int64_t stream_id; /* streams; CS_ID_NONE otherwise */
	uint32_t tid;	   /* host tracks; 0 otherwise */
	int32_t depth;	   /* NVTX; 0 otherwise */
	int64_t events, busy;
	cs_overview_bin *bins; /* the non-empty bins, by bin */
	int32_t nbins;
} cs_overview_track;

typedef struct cs_overview {
	int64_t start, bin_ns; /* bin i covers [start + i * bin_ns, start + (i + 1) * bin_ns) */
	int32_t nbins;
	cs_overview_track *tracks;
	int32_t ntracks;
} cs_overview;

/*
 * Read the overview. Returns 0 with *out NULL when the trace has none (written by an older
 * cuscope, or without events), 0 with *out set, or a cs_err code. Free with cs_overview_free().
 */
int cs_trace_read_overview(cs_trace *t, cs_overview **out, cs_error *err);
void cs_overview_free(cs_overview *o);

#ifdef __cplusplus
}
#endif
#endif
