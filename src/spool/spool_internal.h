/*
 * spool_internal.h - what the importer's files share (src/spool/): the state of an import and of
 * the file being read, the limits of the correlation join, and the functions one file calls in
 * another. import.c drives (files, passes, the time base, meta); framing.c cuts a spool file into
 * records; decode.c turns records into rows; correlate.c joins GPU records with their API calls
 * and writes the rows.
 */
#ifndef CUSCOPE_SPOOL_INTERNAL_H
#define CUSCOPE_SPOOL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/import.h"
#include "cuscope/spool.h"
#include "cuscope/trace.h"
#include "symbolize.h"
#include "cuscope/u64map.h"

#define READ_BUF_SIZE (1u << 20)  /* more than the largest record (64 KiB) */
#define PROBE_BYTES   (64u << 10) /* how far the first pass looks for a CLOCK record */
#define PROGRESS_STEP (64ull << 20)
/* Correlation ids an API entry waits for its GPU records. */
#define API_WINDOW (2u << 20)
/* Correlation ids an activity record waits for its API record. */
#define PENDING_WINDOW (1u << 16)
/* Correlation map size at which stale entries are first looked for. */
#define SWEEP_MIN 65536
/* Past this many waiting entries, the windows shrink until half of them are gone. */
#define CORR_MAX (1u << 18)

/* spool_file_next(): the file ends inside a record, or at a record with an impossible size. */
#define SF_TRUNCATED 2

/* Buffered sequential reader of one spool file. */
struct spool_file {
	int fd;
	unsigned char *buf;
	size_t len, pos; /* bytes in buf, and where the next record starts */
	int eof;
	uint64_t bytes_read;
};

/* A segment of a ring, "<stem>.<n>.cuseg". */
struct spool_seg {
	char *path;
	uint32_t n, header_size;
};

/* What the first pass learnt about a file. */
struct file_info {
	const char *path;
	uint64_t size; /* a ring's: its segments' too */
	int ring;      /* the main file of a ring: segs[0..nsegs) follow it, by n */
	struct spool_seg *segs;
	size_t nsegs;
	struct cs_spool_header h;
	uint64_t base_cupti, base_real; /* earliest clock pair of the file; cupti 0 when none */
	int bad_code; /* 0 when the file is read, else why it is skipped (bad_msg) */
	char bad_msg[160];
};

/* One process of the trace; several files with the same pid share it. */
struct proc_info {
	uint32_t pid, ppid;
	int32_t rank, local_rank, world_size, exit_code;
	int64_t start, end;
	char *cmdline;
	int used_cuda;
	int64_t dropped, cupti_bytes;
	/* CS_REC_CALL_TAILS: the library's time after recorded calls, per enum cs_tail_kind */
	int has_tails;
	int64_t tail_calls[CS_TAIL_KINDS], tail_ns[CS_TAIL_KINDS];
	/* a ring (CS_REC_RING): the last record of its main file, the latest event start of its
	 * segments (raw CUPTI ns) and the events left out because they started before its window */
	int has_ring;
	struct cs_rec_ring ring;
	uint64_t ring_last;
	int64_t ring_cut;
	struct u64map devices;	/* device id -> (set) */
	struct u64map streams;	/* context << 32 | stream -> (set) */
	struct u64map contexts; /* context id -> int32_t device id */
};

/* An activity record waiting for its API record. */
struct pending {
	struct pending *next;
	cs_event ev;
};

/* Correlation map value: the API call of an id (has_api), or the records waiting for it. */
struct corr_entry {
	int64_t start, end; /* the call, ns since trace start */
	int64_t stack_id;   /* trace stack id or CS_ID_NONE */
	struct pending *pending;
	uint32_t tid;
	int32_t cbid;
	int32_t result;
	uint8_t has_api, api_class, api_kind, pad;
};

/* An NVTX range not closed yet. */
struct nvtx_open {
	int64_t start, text_id, domain_id, payload_id;
	uint32_t tid, color;
	int32_t category;
};

struct nvtx_stack {
	struct nvtx_open *v;
	uint32_t n;
	size_t cap;
};

struct importer {
	cs_trace_writer *w;
	const char *out_path;
	cs_error *err;
	cs_import_stats *st;
	int keep_all_api; /* meta api=all: every API record is a row */
	int from_dir;	  /* the files were found in a directory, not named one by one */
	uint64_t base_cupti, base_real;
	uint64_t total, done, next_progress;
	void (*progress)(uint64_t done, uint64_t total, void *arg);
	void *progress_arg;
	struct proc_info **procs;
	size_t nprocs;
	int64_t default_ids[2]; /* StringIds of "" and "<unknown>", once used; -1 before */
	int sticky_rc;		/* a failure where no code could be returned (string_ref) */
	cs_frame *frames;
	size_t frames_cap;
	struct cs_symbolizer *sym; /* module files read so far, shared by the files */
	unsigned char *buf;	   /* the read buffer, shared by the files */
	/* for meta "import_stats" */
	int64_t skipped_files, bad_records, unknown_records, bad_refs, nvtx_unmatched;
	int64_t native_pcs, unsymbolized_pcs;
};

/* State of the file being read (one process). */
struct proc_file {
	struct importer *im;
	struct proc_info *proc;
	struct u64map strings;	   /* local string id -> int64_t trace string id */
	struct cs_modmap modules;  /* the process's mappings, from MODULE records */
	struct u64map stacks;	   /* local stack id -> int64_t trace stack id */
	struct u64map corr;	   /* correlation id -> struct corr_entry */
	struct u64map nvtx_stacks; /* tid << 32 | domain string id -> struct nvtx_stack */
	struct u64map nvtx_ranges; /* range id -> struct nvtx_open */
	struct u64map vmm;	   /* cuMemCreate handle -> int64_t bytes */
	uint32_t newest_corr;
	int have_corr;
	size_t npending, next_sweep;
	int64_t dropped, end_dropped;
	/* a ring: its last CS_REC_RING; in_segment once the segments are read; the correlation ids
	 * of the calls left out (decode.c) */
	int has_ring, in_segment;
	struct cs_rec_ring ring;
	struct u64map ring_cut_corr;
};

/* What a string reference without a defined string stands for. */
enum string_default {
	STR_EMPTY = 0,	 /* "": an NVTX range without a message */
	STR_UNKNOWN = 1, /* "<unknown>": a kernel or API name */
	STR_NONE = 2,	 /* CS_ID_NONE: the default NVTX domain */
};

/* The import's error for memory that could not be had; returns it. */
static inline int import_nomem(struct importer *im)
{
	return cs_error_set(im->err, CS_ERR_NOMEM, "out of memory");
}

/* ---- framing.c: a spool file, record by record ---- */

/* Make need bytes available at buf + pos: 1 when they are, 0 at the end, -1 (errno) on error. */
int spool_file_fill(struct spool_file *f, size_t need);
/* Next record: 1 (*p, *h filled), 0 at a clean end, SF_TRUNCATED, or -1 (errno) on a read error. */
int spool_file_next(struct spool_file *f, const unsigned char **p, struct cs_rec *h);
/* Copy the fixed part of a record; 0 when the record is too short for it. */
int spool_rec_load(void *dst, size_t dsize, const void *p, size_t size);
/* Check a file's header, find its earliest clock pair. Errors only when the file cannot be read. */
int spool_file_probe(struct importer *im, struct file_info *fi);

/* ---- decode.c: records into rows ---- */

/* The process of a file's header, made on first sight (NULL without memory). */
struct proc_info *import_proc_get(struct importer *im, const struct cs_spool_header *h);
void import_proc_free(struct proc_info *p);
/* Decode one record of the file. */
int import_record(struct proc_file *pf, const struct cs_rec *h, const unsigned char *p);
/* The end of a file: what still waits is written as it is. */
int import_finish_file(struct proc_file *pf);
void proc_file_free(struct proc_file *pf);

/* ---- correlate.c: the correlation join, and writing rows ---- */

/* The writer's message is a whole line that names the file ("cannot write 'run.db': ..."). */
int import_writer_error(struct importer *im, int64_t rc);
/* The device of a context of the file's process, from its GPU records; CS_ID_NONE when unknown. */
int32_t proc_context_device(struct proc_file *pf, uint32_t context);
/* Write one row through the trace writer, counted by kind. */
int import_write_event(struct importer *im, const cs_event *ev);
/* Classes whose API row is folded into the GPU rows they feed (kept as rows only with api=all). */
int api_class_is_folded(int cls);
/* An activity record with a correlation id: joined now, or kept until its API record comes. */
int corr_join_activity(struct proc_file *pf, cs_event *ev, uint32_t corr);
/* A call left out (a ring's cut): drop the records waiting for it; returns how many. */
int64_t corr_drop_pending(struct proc_file *pf, uint32_t corr);
/* An API call that GPU rows, a CUPTI sync record or a memory record may join. */
int corr_join_api(struct proc_file *pf, uint32_t corr, const struct corr_entry *api);
/*
 * Let go of the entries that waited longer than their window (API entries api_window correlation
 * ids, activity records pending_window); all of them when all is set (the end of the file).
 */
int corr_sweep(struct proc_file *pf, int all, uint32_t api_window, uint32_t pending_window);

#endif
