/*
 * export.h - what the exporter's files share (src/export/ only): the output buffer and the sinks
 * behind it, the tracks the driver lays out, the events it hands to a format, and the operations a
 * format implements.
 *
 * export.c reads the trace, every event kind merged in time order, and decides where each event
 * goes: a process per host process with a thread per host thread, a process per GPU with a track
 * per stream (and overlap lanes for kernels that overlap on one stream), launch slices and the
 * flows from them to the GPU work, the device memory counter, NVTX lanes. It then hands finished
 * events to a backend, which only formats them: chrome.c (Chrome JSON) or perfetto.c (Perfetto
 * protobuf). A new format is one new file with a struct export_ops, as uftrace's dump formats.
 */
#ifndef CUSCOPE_EXPORT_INTERNAL_H
#define CUSCOPE_EXPORT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cuscope/error.h"
#include "cuscope/utf8.h"
#include "cuscope/export.h"
#include "cuscope/trace.h"

/* ---- output: a buffer in front of a sink ---- */

struct ex_sink {
	int (*write)(struct ex_sink *s, const void *p, size_t n, cs_error *err);
	/* Flush, close, and move the output into place; *bytes: the size written. Frees the sink in
	 * every case. */
	int (*finish)(struct ex_sink *s, int64_t *bytes, cs_error *err);
	/* Close and remove whatever was written. Frees the sink. */
	void (*abort)(struct ex_sink *s);
};

/* A sink for path ("-": standard output), gzip-compressed when gzip is set. */
int ex_sink_open(const char *path, int gzip, struct ex_sink **out, cs_error *err);

#define EX_OUT_CAP   (1 << 20)
#define EX_OUT_CHUNK 4096 /* the most one ex_out_space() call may ask for */

struct ex_writer;

struct ex_out {
	char *buf;
	size_t len;
	struct ex_sink *sink;
	struct ex_writer *writer; /* the thread that writes full buffers; NULL: written in place */
	int error; /* the first failure (a cs_err code); output after it is dropped */
	cs_error err;
};

/*
 * Put a buffer in front of sink. Full buffers go to the sink on a thread of their own (gzip
 * compression included), while the next one fills. 0 or CS_ERR_NOMEM.
 */
int ex_out_open(struct ex_out *o, struct ex_sink *sink);
/* Hand the buffered bytes to the sink. After a failure the buffer is emptied all the same. */
void ex_out_flush(struct ex_out *o);
/* Write what is left, stop the writer thread and free the buffers; returns o->error. */
int ex_out_close(struct ex_out *o);

/* Room for n <= EX_OUT_CHUNK bytes at the end of the buffer; advance o->len by what was used. */
static inline char *ex_out_space(struct ex_out *o, size_t n)
{
	if (EX_OUT_CAP - o->len < n)
		ex_out_flush(o);
	return o->buf + o->len;
}

static inline void ex_out_write(struct ex_out *o, const void *p, size_t n)
{
	const char *s = p;

	while (n) {
		size_t room = EX_OUT_CAP - o->len, k;

		if (!room) {
			ex_out_flush(o);
			room = EX_OUT_CAP;
		}
		k = n < room ? n : room;
		memcpy(o->buf + o->len, s, k);
		o->len += k;
		s += k;
		n -= k;
	}
}

static inline void ex_out_puts(struct ex_out *o, const char *s)
{
	ex_out_write(o, s, strlen(s));
}

/* Decimal digits of v at p; returns the number of bytes (at most 20). */
size_t ex_fmt_u64(char *p, uint64_t v);
size_t ex_fmt_i64(char *p, int64_t v);
/* ns as microseconds with three decimals ("-1.250", "12.000"): never an exponent. */
size_t ex_fmt_us(char *p, int64_t ns);

/* ---- tracks ---- */

enum ex_track_kind {
	EX_TRACK_PROCESS = 1, /* a host process */
	EX_TRACK_THREAD,      /* a thread of a host process */
	EX_TRACK_GPU,	   /* one device of one process: a process of its own in Chrome's format */
	EX_TRACK_STREAM,   /* a lane of a CUDA stream on a GPU track */
	EX_TRACK_COUNTER,  /* device memory in use on a GPU track */
	EX_TRACK_ASYNC,	   /* a lane of NVTX start/end ranges of a host process */
	EX_TRACK_FINDINGS, /* the findings, trace-wide */
	EX_TRACK_STEPS,	   /* a host process's ProfilerStep slices when they cannot share the
			      launching thread (ex_steps_place) */
};

struct ex_track {
	enum ex_track_kind kind;
	struct ex_track *parent; /* the process or GPU track of a thread, stream, counter, lane */
	uint64_t uuid;		 /* unique in the output, from 1 (Perfetto's track uuid) */
	int64_t pid, tid;	 /* Chrome's pid and tid */
	uint32_t os_pid, os_tid; /* the process and thread (host tracks) */
	int32_t device_id;
	uint32_t stream_id;
	int lane;		    /* stream and async lanes: 0 first, 1.. overlap lanes */
	int64_t sort_index;	    /* order among siblings, small first */
	int64_t lane_end;	    /* stream and async lanes: end of the last slice placed on it */
	int declared;		    /* the backend has seen it */
	char *name;		    /* display name */
	char *labels;		    /* processes: "rank 0" when known, else NULL */
	struct ex_track *next_lane; /* streams and async lanes: the next lane */
	/* GPU tracks: device memory */
	struct ex_track *counter;
	int mem_seen, mem_sampled;
	/* host threads: their recent NVTX push/pop ranges (Chrome's gpu_user_annotation) */
	struct ex_annos *annos;
};

/* ---- events ---- */

/* Categories: Kineto's where it has one. */
enum ex_cat {
	EX_CAT_KERNEL = 0,
	EX_CAT_MEMCPY,
	EX_CAT_MEMSET,
	EX_CAT_RUNTIME,
	EX_CAT_DRIVER,
	EX_CAT_SYNC,
	EX_CAT_NVTX,
	EX_CAT_FINDING,
	EX_CAT_GPU_ANNOTATION,
	EX_CAT_COUNT
};
extern const char *const ex_cat_names[EX_CAT_COUNT];

/* Argument names, shared so that a backend can intern them (ex_key_names). */
enum ex_key {
	EX_KEY_DEVICE = 0,
	EX_KEY_CONTEXT,
	EX_KEY_STREAM,
	EX_KEY_CORRELATION,
	EX_KEY_REGISTERS,
	EX_KEY_SHARED_MEMORY,
	EX_KEY_BLOCKS_PER_SM,
	EX_KEY_WARPS_PER_SM,
	EX_KEY_GRID,
	EX_KEY_BLOCK,
	EX_KEY_GRAPH,
	EX_KEY_GRAPH_NODE,
	EX_KEY_BYTES,
	EX_KEY_BANDWIDTH,
	EX_KEY_VALUE,
	EX_KEY_CBID,
	EX_KEY_RESULT,
	EX_KEY_EVENT,
	EX_KEY_SYNC_TYPE,
	EX_KEY_DOMAIN,
	EX_KEY_COLOR,
	EX_KEY_CATEGORY,
	EX_KEY_RULE,
	EX_KEY_SEVERITY,
	EX_KEY_MESSAGE,
	EX_KEY_FIX,
	EX_KEY_LOST,
	EX_KEY_SHARE,
	EX_KEY_STEPS,
	EX_KEY_EVIDENCE,
	EX_KEY_END,
	EX_KEY_ALLOCATED,
	EX_KEY_KERNEL_NAME,
	EX_KEY_MANGLED_NAME,
	EX_KEY_PAYLOAD,
	EX_KEY_COUNT
};
/* The name of each, set by ex_key_names_init(): an argument that shows a column is named by the
 * column's label in include/cuscope/columns.def (export.c's key_columns). */
extern const char *ex_key_names[EX_KEY_COUNT];
/* Fill in ex_key_names from columns.def (once; cs_export() calls it before any output). */
void ex_key_names_init(void);

enum ex_arg_type {
	EX_ARG_INT = 0,
	EX_ARG_MILLI, /* int64 thousandths, written with three decimals */
	EX_ARG_STR,   /* any bytes: backends escape and repair */
	EX_ARG_DIM3,
	EX_ARG_JSON, /* JSON text known to be valid (Chrome embeds it, Perfetto keeps it as text) */
};

struct ex_arg {
	uint8_t key;  /* enum ex_key */
	uint8_t type; /* enum ex_arg_type */
	union {
		int64_t i;
		const char *s;
		int32_t dim[3];
	} v;
};

#define EX_MAX_ARGS 16

/*
 * Interned names for Perfetto: a nonzero name_iid names the same string wherever it appears, so a
 * backend may send the string once. 0: not interned.
 */
#define EX_IID_STATIC  1       /* fixed names: "(unnamed)", ... */
#define EX_IID_LAUNCH  0x1000  /* + index in the launch name table */
#define EX_IID_SYNC    0x2000  /* + sync type (0..255) */
#define EX_IID_MEMCPY  0x3000  /* + (copy kind * 16 + src kind) * 16 + dst kind */
#define EX_IID_MEMSET  0x4000  /* + memory kind (0..15) */
#define EX_IID_STRINGS 0x10000 /* + 2 * StringIds id (+ 1: an API name without its version) */

struct ex_event {
	struct ex_track *track; /* slices and instants: the track; ranges: the async lane; NULL:
				   trace-wide */
	struct ex_track *thread, *end_thread; /* ranges: where they began and ended */
	int64_t ts, dur;		      /* ns since trace start; dur 0 for instants */
	const char *name;
	uint64_t name_iid;
	enum ex_cat cat;
	uint64_t flow_id; /* Perfetto: flows this slice takes part in; 0 = none */
	int nargs;
	struct ex_arg args[EX_MAX_ARGS];
};

static inline void ex_arg_int(struct ex_event *e, enum ex_key key, int64_t v)
{
	struct ex_arg *a = &e->args[e->nargs++];

	a->key = (uint8_t)key;
	a->type = EX_ARG_INT;
	a->v.i = v;
}

static inline void ex_arg_milli(struct ex_event *e, enum ex_key key, int64_t v)
{
	struct ex_arg *a = &e->args[e->nargs++];

	a->key = (uint8_t)key;
	a->type = EX_ARG_MILLI;
	a->v.i = v;
}

static inline void ex_arg_str(struct ex_event *e, enum ex_key key, enum ex_arg_type type,
			      const char *s)
{
	struct ex_arg *a = &e->args[e->nargs++];

	a->key = (uint8_t)key;
	a->type = (uint8_t)type;
	a->v.s = s;
}

static inline void ex_arg_dim3(struct ex_event *e, enum ex_key key, int32_t x, int32_t y, int32_t z)
{
	struct ex_arg *a = &e->args[e->nargs++];

	a->key = (uint8_t)key;
	a->type = EX_ARG_DIM3;
	a->v.dim[0] = x;
	a->v.dim[1] = y;
	a->v.dim[2] = z;
}

/* ---- the exporter and its formats ---- */

struct ex_process {
	uint32_t pid;
	int32_t rank, local_rank, world_size; /* CS_ID_NONE when not set */
	char *command_line;		      /* NULL when unknown */
};

struct ex_device {
	uint32_t pid;
	int32_t device_id;
	char *name, *uuid;
	int64_t total_memory;
	int32_t sm_count, compute_major, compute_minor;
	int64_t core_clock_khz, memory_bandwidth;
};

/*
 * What CUDA reports for every GPU of one compute capability (cudaDeviceProp), which a trace does
 * not store but its compute capability determines: Kineto writes them in deviceProperties.
 * Returns NULL for a compute capability not in the table.
 */
struct ex_arch {
	int major, minor;
	int max_threads_per_block, max_threads_per_sm, regs_per_block, regs_per_sm, warp_size;
	int shared_per_block, shared_per_sm, shared_per_block_optin;
};
const struct ex_arch *ex_arch_of(int major, int minor);

/* A training step as a ProfilerStep#N slice on the host thread that launched its work. */
struct ex_step {
	uint32_t pid, tid;
	int64_t start, end; /* ns since trace start */
	int32_t index;	    /* N: the step's index, as `cuscope report` numbers it */
	int own_lane;	    /* 1: on a lane of its own (it would cut a slice of the thread) */
};

/*
 * The steps of every process (only process pid when pid >= 0) that launched GPU work, found as
 * `cuscope report` finds them (step_range: --step-range, or NULL), each placed on its launching
 * thread with bounds moved out of the slices they would cut. *out (malloc'd; NULL when none), *n.
 * The trace's model may need at most max_bytes (0: any): a larger trace gets the steps of the
 * export's time range [t0, t1) (CS_TS_UNKNOWN: open), or of its middle, as much as fits, numbered
 * from the first step there, and window (wsize bytes) says which; "" when the whole was used.
 */
int ex_steps_find(cs_trace *t, const char *step_range, int64_t pid, int64_t t0, int64_t t1,
		  int64_t max_bytes, struct ex_step **out, int *n, char *window, size_t wsize,
		  cs_error *err);

struct cs_export_steps {
	struct ex_step *v;
	int n;
	char window[400]; /* cs_load_window_text() of the window the steps were found on; "" */
};

struct exporter;

struct export_ops {
	const char *name;
	/* The start of the output; the processes and devices are known. */
	int (*begin)(struct exporter *ex);
	/* A track before its first event (its parent was declared before it). */
	int (*declare)(struct exporter *ex, struct ex_track *t);
	/* A complete slice on e->track. */
	int (*slice)(struct exporter *ex, const struct ex_event *e);
	/* A flow from a point in one slice to the start of another; NULL when flows travel on
	 * slices (ex_event.flow_id). */
	int (*flow)(struct exporter *ex, const struct ex_track *from, int64_t from_ts,
		    const struct ex_track *to, int64_t to_ts);
	/* A range that may begin and end on different threads (NVTX start/end). */
	int (*range)(struct exporter *ex, const struct ex_event *e);
	/* An instant on e->track, or trace-wide when e->track is a findings track. */
	int (*instant)(struct exporter *ex, const struct ex_event *e);
	/* A new value of a counter track. */
	int (*counter)(struct exporter *ex, const struct ex_track *t, int64_t ts, int64_t value);
	/* A device allocation (bytes > 0) or free (bytes < 0) on a host thread, with the memory in
	 * use on its GPU after it (Kineto's "[memory]" instants); NULL: the counter is enough. */
	int (*memory)(struct exporter *ex, const struct ex_track *thread, int64_t ts,
		      int32_t device, uint64_t address, int64_t bytes, int64_t in_use);
	/* The end of the output. */
	int (*end)(struct exporter *ex);
	/* Free the backend's state (also after a failure). */
	void (*free)(struct exporter *ex);
};

extern const struct export_ops ex_chrome_ops;
extern const struct export_ops ex_perfetto_ops;

struct exporter {
	cs_trace *t;
	const cs_export_opts *opts;
	const struct export_ops *ops;
	void *priv;    /* the backend's state */
	cs_error *err; /* where a backend explains its own failures */
	struct ex_out out;
	int64_t base_ns; /* wall-clock ns (Unix epoch) of time 0 of the trace; 0 when unknown */
	struct ex_process *procs;
	int nprocs;
	struct ex_device *devs; /* the devices of the processes in the output */
	int ndevs;
	struct ex_device *props; /* deviceProperties: every device id of the trace, by id */
	int nprops;
	int64_t events; /* written: backends count what they write */
};

#endif
