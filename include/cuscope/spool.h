/*
 * spool.h - the compact binary records the injection library hands to `cuscope record`.
 *
 * Each profiled process appends records to its own spool file, "<dir>/<pid>.cuspool", with plain
 * write(2) calls: what was written is safe in the kernel's page cache when the process is killed, a
 * child made by fork() opens a file of its own, and the writer never blocks on a reader. `cuscope
 * record` (or `cuscope import` when the library was loaded by hand) decodes every spool file of the
 * job into one trace (src/spool/import.c).
 *
 * A file is a cs_spool_header followed by records. Each record starts with a cs_rec header; size
 * counts the header and is a multiple of 8. Variable-length text follows the fixed part of the
 * record it belongs to. The byte order and layout are those of the host: the file is read on the
 * machine that wrote it.
 *
 * Timestamps are raw CUPTI timestamps (ns); 0 means unknown. Strings (kernel names, NVTX text,
 * domains) are interned in the process: a CS_REC_STRING record defines a process-local id before
 * its first use.
 */
#ifndef CUSCOPE_SPOOL_H
#define CUSCOPE_SPOOL_H

#include <stdint.h>

#define CS_SPOOL_MAGIC	 "CUSPOOL\0"
#define CS_SPOOL_VERSION 1
/* The version of the files of a ring (`record --ring`): the process's main file, which holds the
 * definitions and never loses a record, and its segments "<stem>.<n>.cuseg", which hold the events
 * of the last window (docs/spool-format.md, "Ring files"). Files without a ring stay version 1. */
#define CS_SPOOL_VERSION_RING 2
#define CS_SPOOL_SUFFIX	      ".cuspool"
#define CS_SPOOL_SEG_SUFFIX   ".cuseg"
/* Environment the library reads. */
#define CS_ENV_SPOOL_DIR \
	"CUSCOPE_SPOOL_DIR" /* where to write; default: $TMPDIR or /tmp, "cuscope-spool-UID" */
#define CS_ENV_OPTIONS "CUSCOPE_OPTIONS" /* comma-separated options set by `cuscope record` */
#define CS_ENV_RECORD_PID \
	"CUSCOPE_RECORD_PID" /* pid of the `cuscope record` that owns the spool dir */
/* A dump of a running recording (`cuscope dump`, docs/recording.md): the requester makes the
 * directory "<spool dir>/dump-<n>", then writes n to "<spool dir>/dump.req" (by rename); each
 * process's flush thread checks that file every flush period and, for a number it has not served,
 * puts its files into the directory (cs_out_snapshot) and writes "<its spool file's name>.done"
 * there, holding the main file's length and the snapshot's status. "session" holds what the
 * recording is (the output it will write, its command, its options), for the dump's trace. */
#define CS_DUMP_REQUEST	    "dump.req"
#define CS_DUMP_DIR_PREFIX  "dump-"
#define CS_DUMP_DONE_SUFFIX ".done"
#define CS_SESSION_FILE	    "session"

struct cs_spool_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size; /* sizeof(struct cs_spool_header) */
	uint32_t pid;
	uint32_t ppid;
	uint64_t realtime_ns; /* CLOCK_REALTIME when the file was made */
	uint64_t cupti_ns;    /* cuptiGetTimestamp() at the same moment */
};

enum cs_rec_type {
	CS_REC_STRING = 1,
	CS_REC_PROCESS = 2,
	CS_REC_DEVICE = 3,
	CS_REC_CLOCK = 4,
	CS_REC_KERNEL = 5,
	CS_REC_MEMCPY = 6,
	CS_REC_MEMSET = 7,
	CS_REC_MEMORY = 8, /* from CUPTI's MEMORY2 activity */
	CS_REC_SYNC = 9,   /* from CUPTI's SYNCHRONIZATION activity */
	CS_REC_API = 10,   /* from a runtime or driver API callback */
	CS_REC_NVTX = 11,
	CS_REC_DROPPED = 12,
	CS_REC_STACK = 13,
	CS_REC_END = 14,	/* the process shut the library down cleanly */
	CS_REC_MODULE = 15,	/* a mapped file, for symbolizing native pcs */
	CS_REC_CALL_TAILS = 16, /* the library's own time after recorded calls, before CS_REC_END */
	CS_REC_RING = 17,	/* a ring's budget and what it deleted (main file of a ring only) */
	CS_REC_TYPE_MAX
};

struct cs_rec {
	uint16_t type; /* enum cs_rec_type */
	uint16_t size; /* bytes, this header included, multiple of 8 */
	uint32_t tid;  /* Linux thread id of the thread the record is about, 0 when none */
};

/* A string: len bytes of text (no terminating NUL) follow the fixed part. */
struct cs_rec_string {
	struct cs_rec h;
	uint32_t id; /* process-local string id, > 0 */
	uint32_t len;
};

struct cs_rec_process {
	struct cs_rec h;
	uint32_t pid, ppid;
	int32_t rank, local_rank, world_size; /* -1 when not set */
	uint32_t cmdline_len;		      /* bytes that follow: argv joined by single spaces */
};

struct cs_rec_device {
	struct cs_rec h;
	uint32_t device_id;
	int32_t sm_count;
	int32_t compute_major, compute_minor;
	int32_t core_clock_khz;
	uint32_t name_len; /* bytes of the name that follow the fixed part */
	uint64_t total_memory;
	uint64_t memory_bandwidth; /* bytes/s, 0 when unknown */
	uint8_t uuid[16];
	/* char name[name_len]; */
};

struct cs_rec_clock {
	struct cs_rec h;
	uint64_t cupti_ns;
	uint64_t realtime_ns;
	uint64_t monotonic_raw_ns;
};

struct cs_rec_kernel {
	struct cs_rec h;
	uint64_t start, end, queued, submitted;
	uint64_t graph_node_id;
	uint32_t graph_id; /* 0 when not from a graph */
	uint32_t correlation_id;
	uint32_t device_id, context_id, stream_id;
	uint32_t name_sid; /* string id of the mangled name */
	int32_t grid[3], block[3];
	int32_t static_shared, dynamic_shared;
	uint16_t registers;
	uint8_t launch_type;
	uint8_t pad;
	uint32_t pad2;
};

struct cs_rec_memcpy {
	struct cs_rec h;
	uint64_t start, end, bytes;
	uint64_t graph_node_id;
	uint32_t graph_id;
	uint32_t correlation_id;
	uint32_t device_id, context_id, stream_id;
	uint8_t copy_kind, src_kind, dst_kind, flags; /* flags: CUpti_ActivityFlag (bit 0: async) */
	uint32_t src_device, dst_device;	      /* peer copies; UINT32_MAX otherwise */
	uint32_t pad;
};

struct cs_rec_memset {
	struct cs_rec h;
	uint64_t start, end, bytes;
	uint64_t graph_node_id;
	uint32_t graph_id;
	uint32_t correlation_id;
	uint32_t device_id, context_id, stream_id;
	uint32_t value;
	uint16_t flags, mem_kind;
	uint32_t pad;
};

struct cs_rec_memory {
	struct cs_rec h;
	uint64_t timestamp;
	uint64_t address, bytes;
	uint64_t stream_id; /* UINT64_MAX when none */
	uint32_t correlation_id;
	uint32_t device_id, context_id;
	uint8_t op; /* CUpti_ActivityMemoryOperationType: 1 allocation, 2 release */
	uint8_t mem_kind;
	uint8_t is_async;
	uint8_t pad;
};

struct cs_rec_sync {
	struct cs_rec h;
	uint64_t start, end;
	uint32_t type; /* CUpti_ActivitySynchronizationType */
	uint32_t correlation_id;
	uint32_t context_id;
	uint32_t stream_id;	/* UINT32_MAX when none */
	uint32_t cuda_event_id; /* UINT32_MAX when none */
	uint32_t pad;
};

/*
 * What an API call does, decided in the library from its callback id, so that the importer needs no
 * CUDA headers. The importer turns calls into events: LAUNCH and GRAPH_LAUNCH give the host time of
 * the GPU work with the same correlation id; WAIT_* become host waits (CS_EV_SYNC); MEMCPY_SYNC
 * becomes a host wait when the copy touched host memory; ALLOC/FREE with a failed result and the
 * VMM_* calls become CS_EV_MEMORY rows.
 */
enum cs_api_class {
	CS_APICLASS_OTHER = 0,
	CS_APICLASS_LAUNCH = 1,	      /* kernel launch (any API) */
	CS_APICLASS_GRAPH_LAUNCH = 2, /* cudaGraphLaunch / cuGraphLaunch */
	CS_APICLASS_MEMCPY_SYNC = 3,  /* cudaMemcpy & co: the host waits for the copy */
	CS_APICLASS_MEMCPY_ASYNC = 4, /* cudaMemcpyAsync & co */
	CS_APICLASS_MEMSET = 5,
	CS_APICLASS_WAIT_STREAM = 6,	    /* cudaStreamSynchronize, cuStreamSynchronize */
	CS_APICLASS_WAIT_EVENT = 7,	    /* cudaEventSynchronize, cuEventSynchronize */
	CS_APICLASS_WAIT_DEVICE = 8,	    /* cudaDeviceSynchronize, cuCtxSynchronize */
	CS_APICLASS_QUERY_STREAM = 9,	    /* not a wait */
	CS_APICLASS_QUERY_EVENT = 10,	    /* not a wait */
	CS_APICLASS_STREAM_WAIT_EVENT = 11, /* GPU-side wait */
	CS_APICLASS_ALLOC =
		12, /* cudaMalloc, cuMemAlloc, cudaMallocAsync, ...: arg_address, arg_bytes */
	CS_APICLASS_FREE = 13,	      /* cudaFree, cuMemFree, cudaFreeAsync: arg_address */
	CS_APICLASS_VMM_CREATE = 14,  /* cuMemCreate: arg_address = handle, arg_bytes = size */
	CS_APICLASS_VMM_RELEASE = 15, /* cuMemRelease: arg_address = handle */
	CS_APICLASS_VMM_MAP = 16,     /* cuMemMap: arg_address = va, arg_bytes = size */
	CS_APICLASS_VMM_UNMAP = 17,   /* cuMemUnmap: arg_address = va, arg_bytes = size */
	CS_APICLASS_VMM_RESERVE = 18, /* cuMemAddressReserve: arg_address = va, arg_bytes = size */
	CS_APICLASS_VMM_ADDRESS_FREE =
		19,			 /* cuMemAddressFree: arg_address = va, arg_bytes = size */
	CS_APICLASS_PROFILER_START = 20, /* cudaProfilerStart / cuProfilerStart */
	CS_APICLASS_PROFILER_STOP = 21,
	CS_APICLASS_HOST_FUNC = 22, /* cudaLaunchHostFunc, cuLaunchHostFunc, stream callbacks: a
				       host function the stream runs when it gets there */
	CS_APICLASS_MAX
};

/* An API call seen by a callback: launches (their host time), waits, memory and copy calls. */
struct cs_rec_api {
	struct cs_rec h;
	uint64_t start, end;  /* cuptiGetTimestamp() at enter and exit */
	uint64_t arg_address; /* see enum cs_api_class */
	uint64_t arg_bytes;   /* see enum cs_api_class */
	uint32_t correlation_id;
	uint32_t cbid;	   /* CUPTI callback id in its domain */
	int32_t result;	   /* return code (cudaError_t or CUresult), 0 = success */
	uint32_t stack_id; /* 0 when no stack */
	uint32_t name_sid; /* string id of the function name ("cudaStreamSynchronize") */
	uint8_t domain;	   /* 1 runtime, 2 driver (enum cs_api_kind) */
	uint8_t api_class; /* enum cs_api_class */
	uint8_t pad[2];
};

enum cs_rec_nvtx_op {
	CS_NVTX_OP_PUSH = 1,
	CS_NVTX_OP_POP = 2,
	CS_NVTX_OP_START = 3,
	CS_NVTX_OP_END = 4,
	CS_NVTX_OP_MARK = 5,
};

struct cs_rec_nvtx {
	struct cs_rec h;
	uint64_t timestamp;
	uint64_t range_id;   /* start/end ranges */
	uint32_t text_sid;   /* 0 for pop/end */
	uint32_t domain_sid; /* 0 for the default domain */
	uint32_t color;	     /* ARGB, 0 when none */
	int32_t category;
	uint8_t op; /* enum cs_rec_nvtx_op */
	uint8_t pad[3];
	uint32_t payload_sid; /* the payload as a JSON object (string id), 0 when none */
};

struct cs_rec_dropped {
	struct cs_rec h;
	uint64_t count; /* records lost since the last CS_REC_DROPPED (CUPTI or cuscope) */
	uint64_t cupti_device_bytes; /* device memory CUPTI holds for its buffers, as last measured
				      */
};

/*
 * A host call stack, captured at an API call that analyzers blame (waits, copies, allocations,
 * frees): depth native return addresses (innermost first), then py_depth Python frames (innermost
 * first). Stacks are deduplicated in the process: the API record refers to the stack by id.
 */
struct cs_rec_stack {
	struct cs_rec h;
	uint32_t id;	   /* process-local stack id, > 0 */
	uint32_t depth;	   /* number of uint64_t pcs that follow */
	uint32_t py_depth; /* number of struct cs_rec_pyframe that follow the pcs */
	/* enum cs_rec_stack_flags; 0 in files written before it existed (it was padding) */
	uint32_t flags;
	/* uint64_t pc[depth]; struct cs_rec_pyframe py[py_depth]; */
};

enum cs_rec_stack_flags {
	/* The Python frames are not the calling thread's (it had none: an autograd engine thread)
	 * but the main thread's, read while it was blocked in torch's autograd engine call
	 * (backward()); docs/backtraces.md. */
	CS_STACK_PY_BORROWED = 1,
};

struct cs_rec_pyframe {
	uint32_t file_sid; /* string id of co_filename */
	uint32_t func_sid; /* string id of co_qualname (co_name before 3.11) */
	int32_t line;	   /* -1 when unknown */
	uint32_t pad;
};

/*
 * A mapped file of the process (from /proc/PID/maps): the library writes it before the first
 * CS_REC_STACK with a pc inside it, so that native pcs can be symbolized on the recording host
 * after the process ended. A later record for the same range replaces an earlier one.
 */
struct cs_rec_module {
	struct cs_rec h;
	uint64_t start, end; /* address range of the mapping */
	uint64_t offset;     /* file offset of start */
	uint32_t path_sid;   /* string id of the file path */
	uint32_t pad;
};

/* Kinds of recorded calls, by what the library does after the call's end on its thread. */
enum cs_tail_kind {
	CS_TAIL_LAUNCH = 0, /* kernel and graph launches: the call site's key, sometimes a stack */
	CS_TAIL_STACK = 1,  /* the calls whose stack is captured at every call (waits, copies,
			     * allocations, frees; see docs/backtraces.md), and a flush after a wait */
	CS_TAIL_OTHER = 2,  /* the other recorded calls */
	CS_TAIL_KINDS = 3,
};

/*
 * What the library spent on the program's threads after the end of the calls it recorded (the
 * call's end is read at the top of its exit callback; what follows - the stack, the record, a
 * flush after a wait - lies between the call and the thread's next one): per kind, the calls and
 * the nanoseconds. Written once, just before CS_REC_END; a process without it (killed, older
 * library) has no such figures.
 */
struct cs_rec_call_tails {
	struct cs_rec h;
	uint64_t calls[CS_TAIL_KINDS];
	uint64_t ns[CS_TAIL_KINDS];
};

/*
 * A ring (`record --ring`): its budget, and what the segments deleted so far held. Written right
 * after the main file's header when the ring starts, and rewritten there before each segment is
 * deleted (a reader takes the last one it finds), so that it says what the trace lacks: every event that started before window_start may be missing, every
 * later one is in a segment that is still there; GPU work of a call whose correlation id is not
 * after last_corr may have lost its call.
 */
struct cs_rec_ring {
	struct cs_rec h;
	uint64_t budget_bytes;	  /* the ring's size, 0 when it is a duration */
	uint64_t budget_ns;	  /* the ring's duration, 0 when it is a size */
	uint64_t window_start;	  /* CUPTI ns: when the newest deleted segment was closed; 0 none */
	uint64_t records_dropped; /* records of the deleted segments */
	uint64_t bytes_dropped;	  /* bytes of the deleted segments */
	uint32_t segments_dropped;
	uint32_t first_segment; /* number of the oldest segment still there */
	uint32_t last_corr;	/* the latest correlation id of an API call in them; 0 none */
	uint32_t pad;
};

/*
 * The records of events (API calls, GPU work, memory, waits, NVTX), whose first field after the
 * header is the event's start (or its one timestamp): a ring's window is cut by it.
 */
static inline int cs_rec_is_event(uint16_t type)
{
	return type == CS_REC_KERNEL || type == CS_REC_MEMCPY || type == CS_REC_MEMSET ||
	       type == CS_REC_MEMORY || type == CS_REC_SYNC || type == CS_REC_API ||
	       type == CS_REC_NVTX;
}

struct cs_rec_end {
	struct cs_rec h;
	uint64_t timestamp;
	int32_t exit_code; /* -1 when unknown */
	uint32_t pad;
	uint64_t records; /* records written by this process */
	uint64_t dropped; /* total dropped */
};

#endif
