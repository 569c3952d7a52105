/*
 * import.c - decode the spool files of a job (include/cuscope/spool.h) into one trace.
 *
 * Two passes. The first reads each file's header and its first CS_REC_CLOCK (in the first 64 KiB):
 * files with a bad header are set aside, and the trace's time zero is the smallest cupti_ns of the
 * headers and those clock records (meta "time_base_ns"; "realtime_base_ns" is the CLOCK_REALTIME
 * of the same pair), among the files whose clocks are within CS_TS_MAX of each other. The second
 * pass streams each file through a fixed read buffer, record by record, and writes rows through the
 * trace writer as it goes: memory stays flat apart from per-process maps (strings, stacks, the
 * correlation join, open NVTX ranges, live VMM handles), which are freed at the end of each file.
 *
 * Decisions worth knowing:
 * - A file with a bad header (too short, wrong magic, newer or unknown version, bad header size)
 *   is skipped, and so is one whose clock lies more than CS_TS_MAX from those of most other files
 *   (the time base is the earliest clock of the largest group within CS_TS_MAX), and, among the
 *   files of a directory, one that is not a regular file or is a symbolic link. When no file is left
 *   the import fails with the reason of the first one; otherwise it succeeds, counts the file in
 *   meta "import_stats" ("skipped_files") and leaves a one-line warning in err->msg with err->code
 *   CS_OK. A file that cannot be opened or read is an error.
 * - A record whose size is < 8, not a multiple of 8 or past the end of the file ends its file
 *   (counted in truncated_files). A known record shorter than its fixed part, or whose text runs
 *   past its size, is skipped ("bad_records"); unknown record types are skipped by their size
 *   ("unknown_records").
 * - Correlation join, per file: API records that feed GPU rows (launches, copies, sets), host
 *   waits and allocations wait in a hash map keyed by correlation id; activity records that arrive
 *   before their API record wait there too. A match removes the entry, except for a graph launch
 *   (one API call, many GPU records). API entries still unmatched API_WINDOW correlation ids later
 *   are dropped (waits first become a sync row of their own); activity records that find no API
 *   record within PENDING_WINDOW ids are written without launch information; past CORR_MAX
 *   entries the windows shrink. Ids compare in serial-number arithmetic: a 32-bit wrap is harmless.
 * - unknown_timestamps counts each raw timestamp that was expected but zero (event starts and
 *   ends, memory and NVTX times, API call times; not the optional queued/submitted), each end
 *   before its start, each queued/submitted after the start, each launch time dropped because the
 *   launch call started after its GPU work, each NVTX range still open at the end of its file, and
 *   each implausible timestamp.
 * - Plausibility (include/cuscope/trace.h): a timestamp farther than CS_TS_MAX from the time base,
 *   an end farther than CS_TS_MAX from its start, a size above CS_BYTES_MAX or a count above
 *   INT64_MAX is stored as unknown (NULL, or 0 for sizes and counts) and counted in "implausible".
 *   A file whose header clock is above INT64_MAX ns is skipped like a file with a bad header, and
 *   such a CLOCK record is ignored.
 * - Files with the same pid (a pid reused in the job: "<pid>-<n>.cuspool") make one process row;
 *   their ids (strings, stacks, correlations, mappings) stay apart.
 * - Stacks: a STACK record becomes its native frames (innermost first), then its Python frames
 *   (innermost first). Native pcs are symbolized as the record is read, against the mappings the
 *   MODULE records of the file gave so far and the module files on this host (symbolize.c); the
 *   string map keeps each string's text for the module paths and Python names. When the Python
 *   frames were borrowed from the thread waiting in backward() (CS_STACK_PY_BORROWED), a note
 *   frame (kind 3) stands between the two parts.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuscope/files.h"
#include "cuscope/grow.h"
#include "cuscope/import.h"
#include "cuscope/spool.h"
#include "cuscope/strbuf.h"
#include "spool/symbolize.h"
#include "util/checked.h"
#include "util/u64map.h"

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

/* sf_next() result: the file ends inside a record, or at a record with an impossible size. */
#define SF_TRUNCATED 2

/* Buffered sequential reader of one spool file. */
struct spool_file {
	int fd;
	unsigned char *buf;
	size_t len, pos; /* bytes in buf, and where the next record starts */
	int eof;
	uint64_t bytes_read;
};

/* What the first pass learnt about a file. */
struct file_info {
	const char *path;
	uint64_t size;
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
	int64_t start, text_id, domain_id;
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
};

/* ---- errors ---- */

static int nomem(struct importer *im)
{
	return cs_error_set(im->err, CS_ERR_NOMEM, "out of memory");
}

/* The writer's message is a whole line that names the file ("cannot write 'run.db': ..."). */
static int writer_error(struct importer *im, int64_t rc)
{
	const char *msg = cs_writer_errmsg(im->w);

	if (msg && *msg)
		return cs_error_set(im->err, (int)rc, "%s", msg);
	return cs_error_set(im->err, (int)rc, "cannot write '%s': %s", im->out_path,
			    cs_err_str((int)rc));
}

static int bad_record(struct proc_file *pf)
{
	pf->im->bad_records++;
	return 0;
}

/* ---- reading ---- */

static ssize_t read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* Make need bytes available at buf + pos: 1 when they are, 0 at the end, -1 (errno) on error. */
static int sf_fill(struct spool_file *f, size_t need)
{
	if (f->len - f->pos >= need)
		return 1;
	if (f->pos) {
		memmove(f->buf, f->buf + f->pos, f->len - f->pos);
		f->len -= f->pos;
		f->pos = 0;
	}
	while (f->len < need && !f->eof) {
		ssize_t r = read(f->fd, f->buf + f->len, READ_BUF_SIZE - f->len);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			f->eof = 1;
		f->len += (size_t)r;
		f->bytes_read += (uint64_t)r;
	}
	return f->len >= need;
}

/* Next record: 1 (*p, *h filled), 0 at a clean end, SF_TRUNCATED, or -1 (errno) on a read error. */
static int sf_next(struct spool_file *f, const unsigned char **p, struct cs_rec *h)
{
	int rc = sf_fill(f, sizeof(*h));

	if (rc <= 0)
		return rc < 0 ? rc : f->len > f->pos ? SF_TRUNCATED : 0;
	memcpy(h, f->buf + f->pos, sizeof(*h));
	if (h->size < sizeof(*h) || h->size % 8)
		return SF_TRUNCATED;
	rc = sf_fill(f, h->size);
	if (rc <= 0)
		return rc < 0 ? rc : SF_TRUNCATED;
	*p = f->buf + f->pos;
	f->pos += h->size;
	return 1;
}

/* Copy the fixed part of a record; 0 when the record is too short for it. */
static int rec_load(void *dst, size_t dsize, const void *p, size_t size)
{
	if (size < dsize)
		return 0;
	memcpy(dst, p, dsize);
	return 1;
}

/* ---- time ---- */

/* A value stored as unknown because it is outside the bounds (counted). */
static void implausible(struct importer *im, int is_timestamp)
{
	im->st->implausible++;
	if (is_timestamp)
		im->st->unknown_timestamps++;
}

/*
 * A raw CUPTI timestamp (not 0) as ns since the trace start; one farther than CS_TS_MAX from the
 * time base is unknown (counted).
 */
static int64_t ts_from(struct importer *im, uint64_t raw)
{
	uint64_t d = raw >= im->base_cupti ? raw - im->base_cupti : im->base_cupti - raw;

	if (d > (uint64_t)CS_TS_MAX) {
		implausible(im, 1);
		return CS_TS_UNKNOWN;
	}
	return raw >= im->base_cupti ? (int64_t)d : -(int64_t)d;
}

/* A raw CUPTI timestamp as ns since the trace start; 0 is unknown (counted). */
static int64_t ts_rel(struct importer *im, uint64_t raw)
{
	if (!raw) {
		im->st->unknown_timestamps++;
		return CS_TS_UNKNOWN;
	}
	return ts_from(im, raw);
}

/* A raw timestamp that may be absent without anything being wrong. */
static int64_t ts_opt(struct importer *im, uint64_t raw)
{
	return raw ? ts_from(im, raw) : CS_TS_UNKNOWN;
}

/*
 * A start/end pair: an end before its start is unknown (counted), and so is one more than
 * CS_TS_MAX after it (counted as implausible).
 */
static void ts_span(struct importer *im, uint64_t rs, uint64_t re, int64_t *s, int64_t *e)
{
	*s = ts_rel(im, rs);
	*e = ts_rel(im, re);
	if (*s == CS_TS_UNKNOWN || *e == CS_TS_UNKNOWN)
		return;
	if (*e < *s) {
		im->st->unknown_timestamps++;
		*e = CS_TS_UNKNOWN;
	} else if (*e - *s > CS_TS_MAX) {
		implausible(im, 1);
		*e = CS_TS_UNKNOWN;
	}
}

/* A size from a record: above CS_BYTES_MAX it is unknown, 0 (counted). */
static int64_t size_val(struct importer *im, uint64_t raw)
{
	if (raw > (uint64_t)CS_BYTES_MAX) {
		implausible(im, 0);
		return 0;
	}
	return (int64_t)raw;
}

/* A count from a record: above INT64_MAX it is unknown, 0 (counted). */
static int64_t count_val(struct importer *im, uint64_t raw)
{
	if (raw > (uint64_t)INT64_MAX) {
		implausible(im, 0);
		return 0;
	}
	return (int64_t)raw;
}

static void report_progress(struct importer *im, uint64_t done)
{
	im->done = done;
	if (im->progress && done >= im->next_progress) {
		im->progress(done, im->total, im->progress_arg);
		im->next_progress = done + PROGRESS_STEP;
	}
}

/* ---- ids ---- */

/* What a string reference without a defined string stands for. */
enum string_default {
	STR_EMPTY = 0,	 /* "": an NVTX range without a message */
	STR_UNKNOWN = 1, /* "<unknown>": a kernel or API name */
	STR_NONE = 2,	 /* CS_ID_NONE: the default NVTX domain */
};

static int64_t string_default(struct importer *im, enum string_default d)
{
	static const char *const text[] = {"", "<unknown>"};
	int64_t id;

	if (d == STR_NONE)
		return CS_ID_NONE;
	if (im->default_ids[d] < 0) {
		/* interned on first use, so that a trace without them does not list them */
		id = cs_writer_intern(im->w, text[d]);
		if (id < 0) {
			if (!im->sticky_rc)
				im->sticky_rc = writer_error(im, id);
			return CS_ID_NONE;
		}
		im->default_ids[d] = id;
	}
	return im->default_ids[d];
}

/* The trace string of a process-local string id; dflt for 0 or an id never defined (counted). */
static int64_t string_ref(struct proc_file *pf, uint32_t sid, enum string_default dflt)
{
	const int64_t *id;

	if (sid) {
		id = u64map_get(&pf->strings, sid);
		if (id)
			return *id;
		pf->im->bad_refs++;
	}
	return string_default(pf->im, dflt);
}

/*
 * The text of a process-local string id, or NULL for 0 or an id never defined (counted): the
 * writer's copy, valid until the trace is finished.
 */
static const char *string_text(struct proc_file *pf, uint32_t sid)
{
	const int64_t *id;

	if (!sid)
		return NULL;
	id = u64map_get(&pf->strings, sid);
	if (id)
		return cs_writer_string(pf->im->w, *id);
	pf->im->bad_refs++;
	return NULL;
}

static int64_t stack_ref(struct proc_file *pf, uint32_t sid)
{
	const int64_t *id;

	if (!sid)
		return CS_ID_NONE;
	id = u64map_get(&pf->stacks, sid);
	if (id)
		return *id;
	pf->im->bad_refs++;
	return CS_ID_NONE;
}

/* Serial-number order of 32-bit correlation ids: the newest seen bounds how long entries wait. */
static void note_corr(struct proc_file *pf, uint32_t corr)
{
	if (!pf->have_corr || (int32_t)(corr - pf->newest_corr) > 0) {
		pf->newest_corr = corr;
		pf->have_corr = 1;
	}
}

/* ---- processes, devices, streams ---- */

static struct proc_info *proc_get(struct importer *im, const struct cs_spool_header *h)
{
	struct proc_info *p, **np;

	for (size_t i = 0; i < im->nprocs; i++) {
		if (im->procs[i]->pid == h->pid) {
			p = im->procs[i];
			if (h->cupti_ns) {
				int64_t start = ts_opt(im, h->cupti_ns);

				if (p->start == CS_TS_UNKNOWN || start < p->start)
					p->start = start;
			}
			return p;
		}
	}
	np = realloc(im->procs, (im->nprocs + 1) * sizeof(*np));
	if (!np)
		return NULL;
	im->procs = np;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = h->pid;
	p->ppid = h->ppid;
	p->rank = p->local_rank = p->world_size = CS_ID_NONE;
	p->exit_code = CS_ID_NONE;
	p->start = ts_opt(im, h->cupti_ns);
	p->end = CS_TS_UNKNOWN;
	u64map_init(&p->devices, 1);
	u64map_init(&p->streams, 1);
	u64map_init(&p->contexts, sizeof(int32_t));
	im->procs[im->nprocs++] = p;
	return p;
}

static void proc_free(struct proc_info *p)
{
	free(p->cmdline);
	u64map_free(&p->devices);
	u64map_free(&p->streams);
	u64map_free(&p->contexts);
	free(p);
}

/*
 * Remember a GPU record's context and stream when it is read (a sync row written before the GPU
 * row, which may wait for its launch, takes its device from the context); the first sighting of a
 * stream writes its row.
 */
static int note_gpu_record(struct proc_file *pf, int32_t device, uint32_t context, uint32_t stream)
{
	struct proc_info *p = pf->proc;
	int32_t *dev;
	int created;

	p->used_cuda = 1;
	dev = u64map_put(&p->contexts, context, &created);
	if (!dev)
		return nomem(pf->im);
	*dev = device;
	if (!u64map_put(&p->streams, (uint64_t)context << 32 | stream, &created))
		return nomem(pf->im);
	if (created) {
		cs_stream s = {.pid = p->pid,
			       .device_id = device,
			       .context_id = context,
			       .stream_id = stream};
		int rc = cs_writer_add_stream(pf->im->w, &s);

		if (rc < 0)
			return writer_error(pf->im, rc);
	}
	return 0;
}

static int32_t context_device(struct proc_file *pf, uint32_t context)
{
	const int32_t *dev = u64map_get(&pf->proc->contexts, context);

	return dev ? *dev : CS_ID_NONE;
}

/* ---- writing events ---- */

static int write_event(struct importer *im, const cs_event *ev)
{
	int rc;

	switch (ev->kind) {
	case CS_EV_KERNEL:
		rc = cs_writer_add_kernel(im->w, &ev->u.kernel);
		break;
	case CS_EV_MEMCPY:
		rc = cs_writer_add_memcpy(im->w, &ev->u.memcpy);
		break;
	case CS_EV_MEMSET:
		rc = cs_writer_add_memset(im->w, &ev->u.memset);
		break;
	case CS_EV_MEMORY:
		rc = cs_writer_add_memory(im->w, &ev->u.memory);
		break;
	case CS_EV_SYNC:
		rc = cs_writer_add_sync(im->w, &ev->u.sync);
		break;
	case CS_EV_API:
		rc = cs_writer_add_api(im->w, &ev->u.api);
		break;
	case CS_EV_NVTX:
		rc = cs_writer_add_nvtx(im->w, &ev->u.nvtx);
		break;
	default:
		return cs_error_set(im->err, CS_ERR_INVALID, "unknown event kind %d", ev->kind);
	}
	if (rc < 0)
		return writer_error(im, rc);
	im->st->counts[ev->kind]++;
	return 0;
}

static int is_sync_class(int cls)
{
	switch (cls) {
	case CS_APICLASS_WAIT_STREAM:
	case CS_APICLASS_WAIT_EVENT:
	case CS_APICLASS_WAIT_DEVICE:
	case CS_APICLASS_QUERY_STREAM:
	case CS_APICLASS_QUERY_EVENT:
	case CS_APICLASS_STREAM_WAIT_EVENT:
		return 1;
	}
	return 0;
}

/* Classes whose API row is folded into the GPU rows they feed (kept as rows only with api=all). */
static int is_folded_class(int cls)
{
	return cls == CS_APICLASS_LAUNCH || cls == CS_APICLASS_GRAPH_LAUNCH ||
	       cls == CS_APICLASS_MEMCPY_ASYNC || cls == CS_APICLASS_MEMSET;
}

static int sync_type_of_class(int cls)
{
	switch (cls) {
	case CS_APICLASS_WAIT_STREAM:
		return CS_SYNC_STREAM_SYNCHRONIZE;
	case CS_APICLASS_WAIT_EVENT:
		return CS_SYNC_EVENT_SYNCHRONIZE;
	case CS_APICLASS_WAIT_DEVICE:
		return CS_SYNC_CONTEXT_SYNCHRONIZE;
	case CS_APICLASS_QUERY_STREAM:
		return CS_SYNC_STREAM_QUERY;
	case CS_APICLASS_QUERY_EVENT:
		return CS_SYNC_EVENT_QUERY;
	case CS_APICLASS_STREAM_WAIT_EVENT:
		return CS_SYNC_STREAM_WAIT_EVENT;
	}
	return CS_SYNC_UNKNOWN;
}

static int is_host_copy(int kind)
{
	return kind == CS_COPY_HTOD || kind == CS_COPY_DTOH || kind == CS_COPY_HTOA ||
	       kind == CS_COPY_ATOH;
}

/*
 * Fill the launch fields of a GPU row from its API call. A call that started after the GPU work
 * started is not plausible: its times are dropped (counted), the rest is kept.
 */
static void join_launch(struct importer *im, const struct corr_entry *api, int64_t gpu_start,
			int64_t *ls, int64_t *le, uint32_t *tid, int32_t *cbid, int64_t *stack_id)
{
	if (api->start != CS_TS_UNKNOWN && gpu_start != CS_TS_UNKNOWN && api->start > gpu_start) {
		im->st->unknown_timestamps += 1 + (api->end != CS_TS_UNKNOWN);
		*ls = *le = CS_TS_UNKNOWN;
	} else {
		*ls = api->start;
		*le = api->end;
	}
	*tid = api->tid;
	*cbid = api->cbid;
	*stack_id = api->stack_id;
}

/* A sync row made from an API call alone: a wait with no CUPTI record, or a synchronous copy. */
static int write_api_sync(struct proc_file *pf, uint32_t corr, const struct corr_entry *api,
			  int type, int32_t device, uint32_t context, int64_t stream)
{
	cs_event ev;
	cs_sync *s = &ev.u.sync;

	memset(&ev, 0, sizeof(ev));
	ev.kind = CS_EV_SYNC;
	s->start = api->start;
	s->end = api->end;
	s->pid = pf->proc->pid;
	s->tid = api->tid;
	s->device_id = device;
	s->context_id = context;
	s->stream_id = stream;
	s->event_id = CS_ID_NONE;
	s->correlation_id = corr;
	s->type = type;
	s->cbid = api->cbid;
	s->api_kind = api->api_kind;
	s->result = api->result;
	s->stack_id = api->stack_id;
	return write_event(pf->im, &ev);
}

/* Write an activity row, joined with its API call when api is not NULL; the map is left alone. */
static int emit_activity(struct proc_file *pf, cs_event *ev, const struct corr_entry *api)
{
	struct importer *im = pf->im;
	int rc;

	switch (ev->kind) {
	case CS_EV_KERNEL: {
		cs_kernel *k = &ev->u.kernel;

		if (api) {
			join_launch(im, api, k->start, &k->launch_start, &k->launch_end,
				    &k->launch_tid, &k->launch_cbid, &k->stack_id);
			k->launch_api_kind = api->api_kind;
		}
		return write_event(im, ev);
	}
	case CS_EV_MEMCPY: {
		cs_memcpy *m = &ev->u.memcpy;

		if (api)
			join_launch(im, api, m->start, &m->launch_start, &m->launch_end,
				    &m->launch_tid, &m->launch_cbid, &m->stack_id);
		rc = write_event(im, ev);
		if (!rc && api && api->api_class == CS_APICLASS_MEMCPY_SYNC &&
		    is_host_copy(m->copy_kind))
			rc = write_api_sync(pf, (uint32_t)m->correlation_id, api, CS_SYNC_MEMCPY,
					    m->device_id, m->context_id, m->stream_id);
		return rc;
	}
	case CS_EV_MEMSET: {
		cs_memset *m = &ev->u.memset;

		if (api)
			join_launch(im, api, m->start, &m->launch_start, &m->launch_end,
				    &m->launch_tid, &m->launch_cbid, &m->stack_id);
		return write_event(im, ev);
	}
	case CS_EV_MEMORY: {
		cs_memory *m = &ev->u.memory;

		if (api) {
			m->cbid = api->cbid;
			if (api->tid)
				m->tid = api->tid;
			m->stack_id = api->stack_id;
		}
		return write_event(im, ev);
	}
	case CS_EV_SYNC: {
		cs_sync *s = &ev->u.sync;

		s->device_id = context_device(pf, s->context_id);
		if (api) {
			int type = sync_type_of_class(api->api_class);

			/* a query comes with the type of the wait it polls: the class tells */
			if (type == CS_SYNC_STREAM_QUERY || type == CS_SYNC_EVENT_QUERY ||
			    type == CS_SYNC_STREAM_WAIT_EVENT)
				s->type = type;
			s->cbid = api->cbid;
			s->api_kind = api->api_kind;
			if (api->tid)
				s->tid = api->tid;
			s->result = api->result;
			s->stack_id = api->stack_id;
		}
		return write_event(im, ev);
	}
	default:
		return write_event(im, ev);
	}
}

/* An entry leaves the map unmatched: pending rows go out without a launch, waits on their own. */
static int finalize_entry(struct proc_file *pf, uint32_t corr, struct corr_entry *e)
{
	struct pending *pn, *next;
	int rc = 0;

	if (e->has_api && is_sync_class(e->api_class))
		rc = write_api_sync(pf, corr, e, sync_type_of_class(e->api_class), CS_ID_NONE, 0,
				    CS_ID_NONE);
	for (pn = e->pending; pn; pn = next) {
		next = pn->next;
		if (!rc)
			rc = emit_activity(pf, &pn->ev, NULL);
		free(pn);
		pf->npending--;
	}
	e->pending = NULL;
	return rc;
}

/*
 * Let go of the entries that waited longer than their window (API entries api_window correlation
 * ids, activity records pending_window); all of them at the end of the file.
 */
static int sweep_corr(struct proc_file *pf, int all, uint32_t api_window, uint32_t pending_window)
{
	struct u64map *m = &pf->corr;
	size_t i = 0;
	int rc;

	while (i < m->cap) {
		struct corr_entry *e, copy;
		uint32_t corr, age;

		if (!m->used[i]) {
			i++;
			continue;
		}
		e = u64map_val(m, i);
		corr = (uint32_t)m->keys[i];
		age = pf->newest_corr - corr;
		if (!all && age <= (e->has_api ? api_window : pending_window)) {
			i++;
			continue;
		}
		copy = *e;
		u64map_del_at(m, i); /* slot i now holds a later entry, or nothing: look again */
		rc = finalize_entry(pf, corr, &copy);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * The widest window (2^k - 1 correlation ids) that keeps at most target entries: a histogram of the
 * entries' ages by bit length.
 */
static uint32_t window_keeping(struct proc_file *pf, size_t target)
{
	const struct u64map *m = &pf->corr;
	size_t count[33] = {0}, kept = 0;
	int b;

	for (size_t i = 0; i < m->cap; i++) {
		uint32_t age;

		if (!m->used[i])
			continue;
		age = pf->newest_corr - (uint32_t)m->keys[i];
		count[age ? 32 - __builtin_clz(age) : 0]++;
	}
	for (b = 0; b < 33 && kept + count[b] <= target; b++)
		kept += count[b];
	/* buckets 0..b-1 are kept: ages up to 2^(b-1) - 1 */
	return b == 0 ? 0 : (uint32_t)((1ull << (b - 1)) - 1);
}

/*
 * Sweep now and then: when the map doubled since the last sweep, and at most every CORR_MAX
 * entries. A map still past CORR_MAX / 2 after a sweep (a program polling cudaEventQuery, say) is
 * swept again with the window that keeps half of CORR_MAX, so that memory stays bounded whatever
 * the records.
 */
static int maybe_sweep(struct proc_file *pf)
{
	int rc;

	if (pf->corr.n + pf->npending <= pf->next_sweep)
		return 0;
	rc = sweep_corr(pf, 0, API_WINDOW, PENDING_WINDOW);
	if (!rc && pf->corr.n + pf->npending > CORR_MAX / 2) {
		uint32_t w = window_keeping(pf, CORR_MAX / 2);

		rc = sweep_corr(pf, 0, w, w < PENDING_WINDOW ? w : PENDING_WINDOW);
	}
	pf->next_sweep = 2 * (pf->corr.n + pf->npending);
	if (pf->next_sweep < SWEEP_MIN)
		pf->next_sweep = SWEEP_MIN;
	if (pf->next_sweep > CORR_MAX)
		pf->next_sweep = CORR_MAX;
	return rc;
}

/* An activity record with a correlation id: joined now, or kept until its API record comes. */
static int join_activity(struct proc_file *pf, cs_event *ev, uint32_t corr)
{
	struct corr_entry *e;
	struct pending *pn;
	int created, rc;

	if (!corr)
		return emit_activity(pf, ev, NULL);
	note_corr(pf, corr);
	e = u64map_get(&pf->corr, corr);
	if (e && e->has_api) {
		rc = emit_activity(pf, ev, e);
		if (e->api_class != CS_APICLASS_GRAPH_LAUNCH)
			u64map_del(&pf->corr, corr);
		return rc;
	}
	pn = malloc(sizeof(*pn));
	if (!pn)
		return nomem(pf->im);
	pn->ev = *ev;
	e = u64map_put(&pf->corr, corr, &created);
	if (!e) {
		free(pn);
		return nomem(pf->im);
	}
	pn->next = e->pending;
	e->pending = pn;
	pf->npending++;
	return maybe_sweep(pf);
}

/* An API call that GPU rows, a CUPTI sync record or a memory record may join. */
static int join_api(struct proc_file *pf, uint32_t corr, const struct corr_entry *api)
{
	struct corr_entry *e;
	struct pending *pn, *next;
	int created, rc = 0;

	if (!corr)
		return is_sync_class(api->api_class)
			       ? write_api_sync(pf, 0, api, sync_type_of_class(api->api_class),
						CS_ID_NONE, 0, CS_ID_NONE)
			       : 0;
	note_corr(pf, corr);
	e = u64map_put(&pf->corr, corr, &created);
	if (!e)
		return nomem(pf->im);
	if (e->has_api) {
		/* the same id twice: the first call is done with */
		rc = finalize_entry(pf, corr, e);
		if (rc)
			return rc;
	}
	pn = e->pending;
	*e = *api;
	e->pending = NULL;
	if (!pn)
		return maybe_sweep(pf);
	for (; pn; pn = next) {
		next = pn->next;
		if (!rc)
			rc = emit_activity(pf, &pn->ev, api);
		free(pn);
		pf->npending--;
	}
	if (api->api_class != CS_APICLASS_GRAPH_LAUNCH)
		u64map_del(&pf->corr, corr);
	return rc;
}

/* ---- records ---- */

static int rec_string(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct cs_rec_string r;
	int64_t id, *slot;
	int created;

	if (!rec_load(&r, sizeof(r), p, size) || r.len > size - sizeof(r) || !r.id)
		return bad_record(pf);
	id = cs_writer_intern_len(pf->im->w, (const char *)p + sizeof(r), r.len);
	if (id < 0)
		return writer_error(pf->im, id);
	slot = u64map_put(&pf->strings, r.id, &created);
	if (!slot)
		return nomem(pf->im);
	*slot = id;
	return 0;
}

static int rec_process(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct cs_rec_process r;
	struct proc_info *proc = pf->proc;
	char *cmd;

	if (!rec_load(&r, sizeof(r), p, size) || r.cmdline_len > size - sizeof(r))
		return bad_record(pf);
	cmd = strndup((const char *)p + sizeof(r), r.cmdline_len);
	if (!cmd)
		return nomem(pf->im);
	free(proc->cmdline);
	proc->cmdline = cmd;
	proc->ppid = r.ppid;
	proc->rank = r.rank < 0 ? CS_ID_NONE : r.rank;
	proc->local_rank = r.local_rank < 0 ? CS_ID_NONE : r.local_rank;
	proc->world_size = r.world_size < 0 ? CS_ID_NONE : r.world_size;
	return 0;
}

static int rec_device(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct cs_rec_device r;
	char uuid[48];
	const uint8_t *u;
	cs_device d;
	int created, rc;

	if (!rec_load(&r, sizeof(r), p, size) || r.name_len > size - sizeof(r))
		return bad_record(pf);
	if (!u64map_put(&pf->proc->devices, r.device_id, &created))
		return nomem(pf->im);
	if (!created)
		return 0;
	u = r.uuid;
	snprintf(uuid, sizeof(uuid),
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
		 u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
		 u[14], u[15]);
	memset(&d, 0, sizeof(d));
	d.pid = pf->proc->pid;
	d.device_id = (int32_t)r.device_id;
	d.uuid = uuid;
	d.name = strndup((const char *)p + sizeof(r), r.name_len);
	if (!d.name)
		return nomem(pf->im);
	d.total_memory = size_val(pf->im, r.total_memory);
	d.sm_count = r.sm_count;
	d.compute_major = r.compute_major;
	d.compute_minor = r.compute_minor;
	d.core_clock_khz = r.core_clock_khz;
	d.memory_bandwidth = size_val(pf->im, r.memory_bandwidth);
	rc = cs_writer_add_device(pf->im->w, &d);
	free((char *)d.name);
	return rc < 0 ? writer_error(pf->im, rc) : 0;
}

static int rec_kernel(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct importer *im = pf->im;
	struct cs_rec_kernel r;
	cs_event ev;
	cs_kernel *k = &ev.u.kernel;
	int bad_latency, rc;

	if (!rec_load(&r, sizeof(r), p, size))
		return bad_record(pf);
	memset(&ev, 0, sizeof(ev));
	ev.kind = CS_EV_KERNEL;
	ts_span(im, r.start, r.end, &k->start, &k->end);
	/* queued <= submitted <= start, or the latency timestamps are nonsense (graphs, JAX) */
	bad_latency = r.queued && r.submitted && r.queued > r.submitted;
	k->queued = k->submitted = CS_TS_UNKNOWN;
	if (r.queued) {
		if (bad_latency || (r.start && r.queued > r.start))
			im->st->unknown_timestamps++;
		else
			k->queued = ts_opt(im, r.queued);
	}
	if (r.submitted) {
		if (bad_latency || (r.start && r.submitted > r.start))
			im->st->unknown_timestamps++;
		else
			k->submitted = ts_opt(im, r.submitted);
	}
	k->launch_start = k->launch_end = CS_TS_UNKNOWN;
	k->pid = pf->proc->pid;
	k->launch_cbid = CS_ID_NONE;
	k->device_id = (int32_t)r.device_id;
	k->context_id = r.context_id;
	k->stream_id = r.stream_id;
	k->correlation_id = r.correlation_id;
	k->grid_x = r.grid[0];
	k->grid_y = r.grid[1];
	k->grid_z = r.grid[2];
	k->block_x = r.block[0];
	k->block_y = r.block[1];
	k->block_z = r.block[2];
	k->registers_per_thread = r.registers;
	k->static_shared_memory = r.static_shared;
	k->dynamic_shared_memory = r.dynamic_shared;
	k->graph_id = r.graph_id ? (int64_t)r.graph_id : CS_ID_NONE;
	k->graph_node_id = r.graph_id ? (int64_t)r.graph_node_id : CS_ID_NONE;
	k->name_id = string_ref(pf, r.name_sid, STR_UNKNOWN);
	k->stack_id = CS_ID_NONE;
	rc = note_gpu_record(pf, k->device_id, k->context_id, k->stream_id);
	return rc ? rc : join_activity(pf, &ev, r.correlation_id);
}

static int rec_memcpy(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct cs_rec_memcpy r;
	cs_event ev;
	cs_memcpy *m = &ev.u.memcpy;
	int rc;

	if (!rec_load(&r, sizeof(r), p, size))
		return bad_record(pf);
	memset(&ev, 0, sizeof(ev));
	ev.kind = CS_EV_MEMCPY;
	ts_span(pf->im, r.start, r.end, &m->start, &m->end);
	m->launch_start = m->launch_end = CS_TS_UNKNOWN;
	m->pid = pf->proc->pid;
	m->launch_cbid = CS_ID_NONE;
	m->device_id = (int32_t)r.device_id;
	m->context_id = r.context_id;
	m->stream_id = r.stream_id;
	m->correlation_id = r.correlation_id;
	m->copy_kind = r.copy_kind;
	m->src_kind = r.src_kind;
	m->dst_kind = r.dst_kind;
	m->is_async = r.flags & 1;
	m->src_device_id = r.src_device == UINT32_MAX ? CS_ID_NONE : (int32_t)r.src_device;
	m->dst_device_id = r.dst_device == UINT32_MAX ? CS_ID_NONE : (int32_t)r.dst_device;
	m->bytes = size_val(pf->im, r.bytes);
	m->graph_id = r.graph_id ? (int64_t)r.graph_id : CS_ID_NONE;
	m->graph_node_id = r.graph_id ? (int64_t)r.graph_node_id : CS_ID_NONE;
	m->stack_id = CS_ID_NONE;
	rc = note_gpu_record(pf, m->device_id, m->context_id, m->stream_id);
	return rc ? rc : join_activity(pf, &ev, r.correlation_id);
}

static int rec_memset(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct cs_rec_memset r;
	cs_event ev;
	cs_memset *m = &ev.u.memset;
	int rc;

	if (!rec_load(&r, sizeof(r), p, size))
		return bad_record(pf);
	memset(&ev, 0, sizeof(ev));
	ev.kind = CS_EV_MEMSET;
	ts_span(pf->im, r.start, r.end, &m->start, &m->end);
	m->launch_start = m->launch_end = CS_TS_UNKNOWN;
	m->pid = pf->proc->pid;
	m->launch_cbid = CS_ID_NONE;
	m->device_id = (int32_t)r.device_id;
	m->context_id = r.context_id;
	m->stream_id = r.stream_id;
	m->correlation_id = r.correlation_id;
	m->mem_kind = r.mem_kind;
	m->is_async = r.flags & 1;
	m->value = r.value;
	m->bytes = size_val(pf->im, r.bytes);
	m->graph_id = r.graph_id ? (int64_t)r.graph_id : CS_ID_NONE;
	m->graph_node_id = r.graph_id ? (int64_t)r.graph_node_id : CS_ID_NONE;
	m->stack_id = CS_ID_NONE;
	rc = note_gpu_record(pf, m->device_id, m->context_id, m->stream_id);
	return rc ? rc : join_activity(pf, &ev, r.correlation_id);
}

static int rec_memory(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct cs_rec_memory r;
	cs_event ev;
	cs_memory *m = &ev.u.memory;
	int32_t *dev;
	int created;

	if (!rec_load(&r, sizeof(r), p, size))
		return bad_record(pf);
	if (r.op != 1 && r.op != 2)
		return bad_record(pf);
	dev = u64map_put(&pf->proc->contexts, r.context_id, &created);
	if (!dev)
		return nomem(pf->im);
	*dev = (int32_t)r.device_id;
	memset(&ev, 0, sizeof(ev));
	ev.kind = CS_EV_MEMORY;
	m->start = ts_rel(pf->im, r.timestamp);
	m->pid = pf->proc->pid;
	m->tid = r.h.tid;
	m->device_id = (int32_t)r.device_id;
	m->context_id = r.context_id;
	m->stream_id = r.stream_id == UINT64_MAX ? CS_ID_NONE : (int64_t)r.stream_id;
	m->correlation_id = r.correlation_id;
	m->op = r.op == 1 ? CS_MEMOP_ALLOC : CS_MEMOP_FREE;
	m->mem_kind = r.mem_kind;
	m->cbid = CS_ID_NONE;
	m->address = r.address;
	m->bytes = size_val(pf->im, r.bytes);
	m->stack_id = CS_ID_NONE;
	return join_activity(pf, &ev, r.correlation_id);
}

static int rec_sync(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct cs_rec_sync r;
	cs_event ev;
	cs_sync *s = &ev.u.sync;

	if (!rec_load(&r, sizeof(r), p, size))
		return bad_record(pf);
	memset(&ev, 0, sizeof(ev));
	ev.kind = CS_EV_SYNC;
	ts_span(pf->im, r.start, r.end, &s->start, &s->end);
	s->pid = pf->proc->pid;
	s->tid = r.h.tid;
	s->device_id = CS_ID_NONE; /* from the context when the row is written */
	s->context_id = r.context_id;
	s->stream_id = r.stream_id == UINT32_MAX ? CS_ID_NONE : (int64_t)r.stream_id;
	s->event_id = r.cuda_event_id == UINT32_MAX ? CS_ID_NONE : (int64_t)r.cuda_event_id;
	s->correlation_id = r.correlation_id;
	s->type = r.type >= CS_SYNC_EVENT_SYNCHRONIZE && r.type <= CS_SYNC_CONTEXT_SYNCHRONIZE
			  ? (int32_t)r.type
			  : CS_SYNC_UNKNOWN;
	s->cbid = CS_ID_NONE;
	s->stack_id = CS_ID_NONE;
	return join_activity(pf, &ev, r.correlation_id);
}

/*
 * A memory row made from an API call: a failed allocation or free (no activity record shows it),
 * or a VMM call.
 */
static int write_api_memory(struct proc_file *pf, const struct cs_rec_api *r,
			    const struct corr_entry *api, int op, int is_vmm, int64_t bytes)
{
	cs_event ev;
	cs_memory *m = &ev.u.memory;

	memset(&ev, 0, sizeof(ev));
	ev.kind = CS_EV_MEMORY;
	m->start = api->start;
	m->pid = pf->proc->pid;
	m->tid = api->tid;
	m->device_id = CS_ID_NONE;
	m->stream_id = CS_ID_NONE;
	m->correlation_id = r->correlation_id;
	m->op = op;
	m->mem_kind = CS_MEM_UNKNOWN;
	m->is_vmm = is_vmm;
	m->result = api->result;
	m->cbid = api->cbid;
	m->address = r->arg_address;
	m->bytes = bytes;
	m->stack_id = api->stack_id;
	return write_event(pf->im, &ev);
}

/* cuMemCreate & co: a memory row each; a release gets the size of the create of its handle. */
static int api_vmm(struct proc_file *pf, const struct cs_rec_api *r, const struct corr_entry *api)
{
	static const int ops[] = {
		[CS_APICLASS_VMM_CREATE] = CS_MEMOP_VMM_CREATE,
		[CS_APICLASS_VMM_RELEASE] = CS_MEMOP_VMM_RELEASE,
		[CS_APICLASS_VMM_MAP] = CS_MEMOP_VMM_MAP,
		[CS_APICLASS_VMM_UNMAP] = CS_MEMOP_VMM_UNMAP,
		[CS_APICLASS_VMM_RESERVE] = CS_MEMOP_VMM_RESERVE,
		[CS_APICLASS_VMM_ADDRESS_FREE] = CS_MEMOP_VMM_ADDRESS_FREE,
	};
	int64_t bytes = size_val(pf->im, r->arg_bytes), *slot;
	int created;

	if (r->api_class == CS_APICLASS_VMM_CREATE && r->result == 0) {
		slot = u64map_put(&pf->vmm, r->arg_address, &created);
		if (!slot)
			return nomem(pf->im);
		*slot = bytes;
	} else if (r->api_class == CS_APICLASS_VMM_RELEASE) {
		slot = u64map_get(&pf->vmm, r->arg_address);
		bytes = slot ? *slot : 0;
		if (slot && r->result == 0)
			u64map_del(&pf->vmm, r->arg_address);
	}
	return write_api_memory(pf, r, api, ops[r->api_class], 1, bytes);
}

static int rec_api(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct importer *im = pf->im;
	struct cs_rec_api r;
	struct corr_entry api;
	int rc;

	if (!rec_load(&r, sizeof(r), p, size))
		return bad_record(pf);
	memset(&api, 0, sizeof(api));
	api.has_api = 1;
	ts_span(im, r.start, r.end, &api.start, &api.end);
	api.stack_id = stack_ref(pf, r.stack_id);
	api.tid = r.h.tid;
	api.cbid = (int32_t)r.cbid;
	api.result = r.result;
	api.api_class = r.api_class;
	api.api_kind = r.domain;

	if (im->keep_all_api || !is_folded_class(r.api_class)) {
		cs_event ev;
		cs_api *a = &ev.u.api;

		memset(&ev, 0, sizeof(ev));
		ev.kind = CS_EV_API;
		a->start = api.start;
		a->end = api.end;
		a->pid = pf->proc->pid;
		a->tid = api.tid;
		a->api_kind = api.api_kind;
		a->cbid = api.cbid;
		a->correlation_id = r.correlation_id;
		a->result = r.result;
		a->name_id = string_ref(pf, r.name_sid, STR_UNKNOWN);
		a->stack_id = api.stack_id;
		rc = write_event(im, &ev);
		if (rc)
			return rc;
	}

	switch (r.api_class) {
	case CS_APICLASS_ALLOC:
	case CS_APICLASS_FREE:
		if (r.result != 0)
			return write_api_memory(pf, &r, &api,
						r.api_class == CS_APICLASS_ALLOC ? CS_MEMOP_ALLOC
										 : CS_MEMOP_FREE,
						0, size_val(im, r.arg_bytes));
		return join_api(pf, r.correlation_id, &api);
	case CS_APICLASS_VMM_CREATE:
	case CS_APICLASS_VMM_RELEASE:
	case CS_APICLASS_VMM_MAP:
	case CS_APICLASS_VMM_UNMAP:
	case CS_APICLASS_VMM_RESERVE:
	case CS_APICLASS_VMM_ADDRESS_FREE:
		return api_vmm(pf, &r, &api);
	case CS_APICLASS_LAUNCH:
	case CS_APICLASS_GRAPH_LAUNCH:
	case CS_APICLASS_MEMCPY_SYNC:
	case CS_APICLASS_MEMCPY_ASYNC:
	case CS_APICLASS_MEMSET:
	case CS_APICLASS_WAIT_STREAM:
	case CS_APICLASS_WAIT_EVENT:
	case CS_APICLASS_WAIT_DEVICE:
	case CS_APICLASS_QUERY_STREAM:
	case CS_APICLASS_QUERY_EVENT:
	case CS_APICLASS_STREAM_WAIT_EVENT:
		return join_api(pf, r.correlation_id, &api);
	}
	return 0; /* OTHER, PROFILER_START/STOP and classes of newer versions: the API row is all */
}

static int write_nvtx(struct proc_file *pf, const struct nvtx_open *o, int type, int depth,
		      int64_t end, uint32_t end_tid, int64_t range_id)
{
	cs_event ev;
	cs_nvtx *n = &ev.u.nvtx;

	memset(&ev, 0, sizeof(ev));
	ev.kind = CS_EV_NVTX;
	n->start = o->start;
	n->end = end;
	if (end != CS_TS_UNKNOWN && o->start != CS_TS_UNKNOWN && end < o->start) {
		pf->im->st->unknown_timestamps++;
		n->end = CS_TS_UNKNOWN;
	}
	n->pid = pf->proc->pid;
	n->tid = o->tid;
	n->end_tid = end_tid;
	n->type = type;
	n->depth = depth;
	n->domain_id = o->domain_id;
	n->text_id = o->text_id;
	n->range_id = range_id;
	n->color = o->color;
	n->category = o->category;
	return write_event(pf->im, &ev);
}

static int rec_nvtx(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct importer *im = pf->im;
	struct cs_rec_nvtx r;
	struct nvtx_open o, *slot;
	struct nvtx_stack *st;
	uint64_t stack_key;
	int created, rc;

	if (!rec_load(&r, sizeof(r), p, size))
		return bad_record(pf);
	/* push/pop nest per thread and domain: nvtxDomainRangePop pops its own domain's stack */
	stack_key = (uint64_t)r.h.tid << 32 | r.domain_sid;
	memset(&o, 0, sizeof(o));
	o.start = ts_rel(im, r.timestamp);
	o.tid = r.h.tid;
	o.color = r.color;
	o.category = r.category;
	if (r.op == CS_NVTX_OP_PUSH || r.op == CS_NVTX_OP_START || r.op == CS_NVTX_OP_MARK) {
		o.text_id = string_ref(pf, r.text_sid, STR_EMPTY);
		o.domain_id = string_ref(pf, r.domain_sid, STR_NONE);
	}
	switch (r.op) {
	case CS_NVTX_OP_PUSH:
		st = u64map_put(&pf->nvtx_stacks, stack_key, &created);
		if (!st)
			return nomem(im);
		if (cs_grow((void **)&st->v, &st->cap, (size_t)st->n + 1, sizeof(*st->v)))
			return nomem(im);
		st->v[st->n++] = o;
		return 0;
	case CS_NVTX_OP_POP:
		st = u64map_get(&pf->nvtx_stacks, stack_key);
		if (!st || !st->n) {
			im->nvtx_unmatched++;
			return 0;
		}
		st->n--;
		return write_nvtx(pf, &st->v[st->n], CS_NVTX_PUSHPOP, (int)st->n, o.start, r.h.tid,
				  CS_ID_NONE);
	case CS_NVTX_OP_START:
		slot = u64map_put(&pf->nvtx_ranges, r.range_id, &created);
		if (!slot)
			return nomem(im);
		if (!created) {
			/* the id came back before its end: the older range never ended */
			im->st->unknown_timestamps++;
			rc = write_nvtx(pf, slot, CS_NVTX_STARTEND, 0, CS_TS_UNKNOWN, 0,
					(int64_t)r.range_id);
			if (rc)
				return rc;
		}
		*slot = o;
		return 0;
	case CS_NVTX_OP_END:
		slot = u64map_get(&pf->nvtx_ranges, r.range_id);
		if (!slot) {
			im->nvtx_unmatched++;
			return 0;
		}
		rc = write_nvtx(pf, slot, CS_NVTX_STARTEND, 0, o.start, r.h.tid,
				(int64_t)r.range_id);
		u64map_del(&pf->nvtx_ranges, r.range_id);
		return rc;
	case CS_NVTX_OP_MARK:
		return write_nvtx(pf, &o, CS_NVTX_MARK, 0, o.start, r.h.tid, CS_ID_NONE);
	}
	im->unknown_records++; /* an op of a newer version */
	return 0;
}

/* A mapping of the process: later pcs in its range resolve to this file. */
static int rec_module(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct cs_rec_module r;
	const char *path;

	if (!rec_load(&r, sizeof(r), p, size))
		return bad_record(pf);
	path = string_text(pf, r.path_sid);
	if (!path)
		return r.path_sid ? 0 : bad_record(pf);
	if (cs_modmap_add(&pf->modules, r.start, r.end, r.offset, path, strlen(path)))
		return nomem(pf->im);
	return 0;
}

/* A native frame: the pc resolved to module, symbol and offset where the host allows. */
static void native_frame(struct proc_file *pf, uint64_t pc, cs_frame *f)
{
	struct cs_sym_result res;

	cs_symbolize(&pf->modules, pc, &res);
	f->kind = 1;
	f->pc = pc;
	f->module = res.module;
	f->symbol = res.symbol;
	f->offset = res.offset;
	pf->im->native_pcs++;
	if (!res.symbol)
		pf->im->unsymbolized_pcs++;
}

static void python_frame(struct proc_file *pf, const struct cs_rec_pyframe *py, cs_frame *f)
{
	f->kind = 2;
	f->file = string_text(pf, py->file_sid);
	f->symbol = string_text(pf, py->func_sid);
	f->line = py->line > 0 ? py->line : 0;
}

/* Kind and text of the frame that marks Python frames borrowed from the main thread, waiting in
 * backward() while an autograd engine thread made the call (docs/trace-format.md). */
#define FRAME_NOTE 3
#define BORROWED_PY_NOTE                                                                      \
	"[autograd engine thread: the Python frames below are the main thread's, waiting in " \
	"backward()]"

/* A stack: native frames then Python frames, innermost first in each part. */
static int rec_stack(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct importer *im = pf->im;
	struct cs_rec_stack r;
	int64_t id = CS_ID_NONE, *slot;
	size_t n;
	int created, note;

	if (!rec_load(&r, sizeof(r), p, size) || !r.id ||
	    (uint64_t)r.depth * 8 + (uint64_t)r.py_depth * sizeof(struct cs_rec_pyframe) >
		    size - sizeof(r))
		return bad_record(pf);
	note = (r.flags & CS_STACK_PY_BORROWED) && r.py_depth > 0;
	n = (size_t)r.depth + r.py_depth + (size_t)note;
	if (n > 0) {
		const unsigned char *py = p + sizeof(r) + 8 * (size_t)r.depth;

		if (n > im->frames_cap) {
			cs_frame *f = realloc(im->frames, n * sizeof(*f));

			if (!f)
				return nomem(im);
			im->frames = f;
			im->frames_cap = n;
		}
		memset(im->frames, 0, n * sizeof(*im->frames));
		for (uint32_t i = 0; i < r.depth; i++) {
			uint64_t pc;

			memcpy(&pc, p + sizeof(r) + 8 * (size_t)i, 8);
			native_frame(pf, pc, &im->frames[i]);
		}
		if (note) {
			im->frames[r.depth].kind = FRAME_NOTE;
			im->frames[r.depth].symbol = BORROWED_PY_NOTE;
		}
		for (uint32_t i = 0; i < r.py_depth; i++) {
			struct cs_rec_pyframe fr;

			memcpy(&fr, py + sizeof(fr) * (size_t)i, sizeof(fr));
			python_frame(pf, &fr, &im->frames[r.depth + (size_t)note + i]);
		}
		id = cs_writer_add_stack(im->w, im->frames, (int)n);
		if (id < 0)
			return writer_error(im, id);
	}
	slot = u64map_put(&pf->stacks, r.id, &created);
	if (!slot)
		return nomem(im);
	*slot = id;
	return 0;
}

static int import_record(struct proc_file *pf, const struct cs_rec *h, const unsigned char *p)
{
	struct cs_rec_dropped d;
	struct cs_rec_end e;

	switch (h->type) {
	case CS_REC_STRING:
		return rec_string(pf, p, h->size);
	case CS_REC_PROCESS:
		return rec_process(pf, p, h->size);
	case CS_REC_DEVICE:
		return rec_device(pf, p, h->size);
	case CS_REC_CLOCK:
		return 0; /* the first pass took the time base */
	case CS_REC_KERNEL:
		return rec_kernel(pf, p, h->size);
	case CS_REC_MEMCPY:
		return rec_memcpy(pf, p, h->size);
	case CS_REC_MEMSET:
		return rec_memset(pf, p, h->size);
	case CS_REC_MEMORY:
		return rec_memory(pf, p, h->size);
	case CS_REC_SYNC:
		return rec_sync(pf, p, h->size);
	case CS_REC_API:
		return rec_api(pf, p, h->size);
	case CS_REC_NVTX:
		return rec_nvtx(pf, p, h->size);
	case CS_REC_DROPPED:
		if (!rec_load(&d, sizeof(d), p, h->size))
			return bad_record(pf);
		cs_sat_accum(&pf->dropped, count_val(pf->im, d.count));
		pf->proc->cupti_bytes = size_val(pf->im, d.cupti_device_bytes);
		return 0;
	case CS_REC_STACK:
		return rec_stack(pf, p, h->size);
	case CS_REC_MODULE:
		return rec_module(pf, p, h->size);
	case CS_REC_END:
		if (!rec_load(&e, sizeof(e), p, h->size))
			return bad_record(pf);
		if (e.timestamp)
			pf->proc->end = ts_opt(pf->im, e.timestamp);
		pf->proc->exit_code = e.exit_code < 0 ? CS_ID_NONE : e.exit_code;
		pf->end_dropped = count_val(pf->im, e.dropped);
		return 0;
	}
	pf->im->unknown_records++;
	return 0;
}

/* The end of a file: what still waits is written as it is. */
static int finish_file(struct proc_file *pf)
{
	struct u64map *m;
	int rc;

	rc = sweep_corr(pf, 1, 0, 0);
	if (rc)
		return rc;
	m = &pf->nvtx_stacks;
	for (size_t i = 0; i < m->cap; i++) {
		struct nvtx_stack *st = u64map_val(m, i);

		if (!m->used[i])
			continue;
		for (uint32_t d = 0; d < st->n; d++) {
			pf->im->st->unknown_timestamps++;
			rc = write_nvtx(pf, &st->v[d], CS_NVTX_PUSHPOP, (int)d, CS_TS_UNKNOWN, 0,
					CS_ID_NONE);
			if (rc)
				return rc;
		}
		st->n = 0;
	}
	m = &pf->nvtx_ranges;
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		pf->im->st->unknown_timestamps++;
		rc = write_nvtx(pf, u64map_val(m, i), CS_NVTX_STARTEND, 0, CS_TS_UNKNOWN, 0,
				(int64_t)m->keys[i]);
		if (rc)
			return rc;
	}
	/* END repeats the total of the DROPPED records; a file cut short has only these */
	cs_sat_accum(&pf->proc->dropped,
		     pf->dropped > pf->end_dropped ? pf->dropped : pf->end_dropped);
	return 0;
}

static void proc_file_free(struct proc_file *pf)
{
	struct u64map *m = &pf->corr;

	for (size_t i = 0; i < m->cap; i++) {
		struct corr_entry *e = u64map_val(m, i);
		struct pending *pn, *next;

		if (!m->used[i])
			continue;
		for (pn = e->pending; pn; pn = next) {
			next = pn->next;
			free(pn);
		}
	}
	m = &pf->nvtx_stacks;
	for (size_t i = 0; i < m->cap; i++)
		if (m->used[i])
			free(((struct nvtx_stack *)u64map_val(m, i))->v);
	u64map_free(&pf->strings);
	cs_modmap_free(&pf->modules);
	u64map_free(&pf->stacks);
	u64map_free(&pf->corr);
	u64map_free(&pf->nvtx_stacks);
	u64map_free(&pf->nvtx_ranges);
	u64map_free(&pf->vmm);
}

static int import_file(struct importer *im, const struct file_info *fi)
{
	struct spool_file sf;
	struct proc_file pf;
	uint64_t done0 = im->done;
	int rc = 0;

	memset(&sf, 0, sizeof(sf));
	memset(&pf, 0, sizeof(pf));
	pf.im = im;
	pf.next_sweep = SWEEP_MIN;
	u64map_init(&pf.strings, sizeof(int64_t));
	cs_modmap_init(&pf.modules, im->sym);
	u64map_init(&pf.stacks, sizeof(int64_t));
	u64map_init(&pf.corr, sizeof(struct corr_entry));
	u64map_init(&pf.nvtx_stacks, sizeof(struct nvtx_stack));
	u64map_init(&pf.nvtx_ranges, sizeof(struct nvtx_open));
	u64map_init(&pf.vmm, sizeof(int64_t));
	pf.proc = proc_get(im, &fi->h);
	if (!pf.proc)
		return nomem(im);

	sf.buf = im->buf;
	/* replaced by a FIFO or a link since the first pass: refused, not waited on */
	sf.fd = cs_open_regular(fi->path, im->from_dir);
	if (sf.fd < 0)
		return cs_error_set(im->err, errno == ENOENT ? CS_ERR_NOT_FOUND : CS_ERR_IO,
				    "cannot open '%s': %s", fi->path, cs_file_strerror(errno));
#ifdef POSIX_FADV_SEQUENTIAL
	posix_fadvise(sf.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
	/* the first pass checked the header */
	rc = sf_fill(&sf, fi->h.header_size);
	if (rc <= 0) {
		rc = cs_error_set(im->err, CS_ERR_IO, "cannot read '%s': %s", fi->path,
				  rc < 0 ? strerror(errno) : "the file got shorter");
		goto out;
	}
	rc = 0;
	sf.pos = fi->h.header_size;
	for (;;) {
		const unsigned char *p;
		struct cs_rec h;
		int r = sf_next(&sf, &p, &h);

		if (r < 0) {
			rc = cs_error_set(im->err, CS_ERR_IO, "cannot read '%s': %s", fi->path,
					  strerror(errno));
			goto out;
		}
		if (r == SF_TRUNCATED)
			im->st->truncated_files++;
		if (r != 1)
			break;
		rc = import_record(&pf, &h, p);
		if (!rc)
			rc = im->sticky_rc;
		if (rc)
			goto out;
		report_progress(im, done0 + sf.bytes_read);
	}
	rc = finish_file(&pf);
out:
	im->done = done0 + sf.bytes_read;
	im->st->bytes_read += (int64_t)sf.bytes_read;
	proc_file_free(&pf);
	close(sf.fd);
	return rc;
}

/* ---- first pass ---- */

/* Check a file's header, find its earliest clock pair. Errors only when the file cannot be read. */
static int probe_file(struct importer *im, struct file_info *fi)
{
	struct cs_spool_header *h = &fi->h;
	struct stat st = {0};
	size_t off;
	ssize_t n;
	int fd;

	/*
	 * Never blocks: a FIFO or a device is refused after an O_NONBLOCK open. In a directory that
	 * others may write to, such a file or a symbolic link is skipped like a foreign file; named
	 * on its own it is an error (a link named on its own is followed).
	 */
	fd = cs_open_regular(fi->path, im->from_dir);
	if (fd < 0 && im->from_dir && (errno == CS_ENOTREG || errno == ELOOP)) {
		fi->bad_code = CS_ERR_INVALID;
		snprintf(fi->bad_msg, sizeof(fi->bad_msg), "%s", cs_file_strerror(errno));
		return 0;
	}
	if (fd < 0)
		return cs_error_set(im->err, errno == ENOENT ? CS_ERR_NOT_FOUND : CS_ERR_IO,
				    "cannot open '%s': %s", fi->path, cs_file_strerror(errno));
	if (fstat(fd, &st)) {
		int e = errno;

		close(fd);
		return cs_error_set(im->err, CS_ERR_IO, "cannot read '%s': %s", fi->path,
				    strerror(e));
	}
	fi->size = (uint64_t)st.st_size;
	n = read_full(fd, im->buf, PROBE_BYTES);
	if (n < 0) {
		int e = errno;

		close(fd);
		return cs_error_set(im->err, CS_ERR_IO, "cannot read '%s': %s", fi->path,
				    strerror(e));
	}
	close(fd);

	fi->bad_code = CS_ERR_CORRUPT;
	if ((size_t)n < sizeof(*h)) {
		snprintf(fi->bad_msg, sizeof(fi->bad_msg), "too short for a spool file header");
		return 0;
	}
	memcpy(h, im->buf, sizeof(*h));
	if (memcmp(h->magic, CS_SPOOL_MAGIC, sizeof(h->magic))) {
		snprintf(fi->bad_msg, sizeof(fi->bad_msg), "not a cuscope spool file");
		return 0;
	}
	if (h->version > CS_SPOOL_VERSION) {
		fi->bad_code = CS_ERR_NEWER_SCHEMA;
		snprintf(fi->bad_msg, sizeof(fi->bad_msg),
			 "spool format version %" PRIu32 " is newer than this cuscope reads (%d)",
			 h->version, CS_SPOOL_VERSION);
		return 0;
	}
	if (h->version == 0 || h->header_size < sizeof(*h) || h->header_size > PROBE_BYTES) {
		snprintf(fi->bad_msg, sizeof(fi->bad_msg),
			 "bad spool file header (version %" PRIu32 ", header size %" PRIu32 ")",
			 h->version, h->header_size);
		return 0;
	}
	if ((size_t)n < h->header_size) {
		snprintf(fi->bad_msg, sizeof(fi->bad_msg), "too short for a spool file header");
		return 0;
	}
	if (h->cupti_ns > (uint64_t)INT64_MAX || h->realtime_ns > (uint64_t)INT64_MAX) {
		snprintf(fi->bad_msg, sizeof(fi->bad_msg),
			 "implausible clock in the spool file header (CUPTI %" PRIu64
			 " ns, real time %" PRIu64 " ns: above 2^63)",
			 h->cupti_ns, h->realtime_ns);
		return 0;
	}
	fi->bad_code = 0;
	fi->base_cupti = h->cupti_ns;
	fi->base_real = h->realtime_ns;
	/* the first CLOCK record, in case the header has no CUPTI time or a later one */
	for (off = h->header_size; off + sizeof(struct cs_rec) <= (size_t)n;) {
		struct cs_rec rh;
		struct cs_rec_clock c;

		memcpy(&rh, im->buf + off, sizeof(rh));
		if (rh.size < sizeof(rh) || rh.size % 8 || off + rh.size > (size_t)n)
			break;
		if (rh.type == CS_REC_CLOCK && rec_load(&c, sizeof(c), im->buf + off, rh.size)) {
			if (c.cupti_ns && c.cupti_ns <= (uint64_t)INT64_MAX &&
			    c.realtime_ns <= (uint64_t)INT64_MAX &&
			    (!fi->base_cupti || c.cupti_ns < fi->base_cupti)) {
				fi->base_cupti = c.cupti_ns;
				fi->base_real = c.realtime_ns;
			}
			break;
		}
		off += rh.size;
	}
	return 0;
}

/* ---- the whole import ---- */

static int write_meta(struct importer *im, const cs_import_opts *opts)
{
	cs_import_stats *st = im->st;
	cs_strbuf sb = CS_STRBUF_INIT;
	size_t modules, unreadable;
	int rc = 0;

	for (size_t i = 0; opts->meta && opts->meta[i] && opts->meta[i + 1] && !rc; i += 2)
		rc = cs_writer_set_meta(im->w, opts->meta[i], opts->meta[i + 1]);
	for (size_t i = 0; i < im->nprocs; i++)
		cs_strbuf_printf(&sb, "%s%" PRIu32, i ? "," : "", im->procs[i]->pid);
	if (!rc)
		rc = cs_writer_set_meta(im->w, "pids", cs_strbuf_str(&sb));
	if (!rc)
		rc = cs_writer_set_meta_int(im->w, "time_base_ns", (int64_t)im->base_cupti);
	if (!rc)
		rc = cs_writer_set_meta_int(im->w, "realtime_base_ns", (int64_t)im->base_real);
	cs_strbuf_reset(&sb);
	cs_symbolizer_counts(im->sym, &modules, &unreadable);
	cs_strbuf_printf(
		&sb,
		"{\"files\":%" PRId64 ",\"skipped_files\":%" PRId64 ",\"processes\":%" PRId64
		",\"bytes_read\":%" PRId64 ",\"truncated_files\":%" PRId64
		",\"unknown_timestamps\":%" PRId64 ",\"implausible_values\":%" PRId64
		",\"dropped\":%" PRId64 ",\"bad_records\":%" PRId64 ",\"unknown_records\":%" PRId64
		",\"bad_references\":%" PRId64 ",\"nvtx_unmatched\":%" PRId64
		",\"native_pcs\":%" PRId64 ",\"unsymbolized_pcs\":%" PRId64 ",\"module_files\":%zu"
		",\"unreadable_module_files\":%zu}",
		st->files, im->skipped_files, st->processes, st->bytes_read, st->truncated_files,
		st->unknown_timestamps, st->implausible, st->dropped, im->bad_records,
		im->unknown_records, im->bad_refs, im->nvtx_unmatched, im->native_pcs,
		im->unsymbolized_pcs, modules, unreadable);
	if (sb.failed && !rc) {
		cs_strbuf_free(&sb);
		return nomem(im);
	}
	if (!rc)
		rc = cs_writer_set_meta(im->w, "import_stats", cs_strbuf_str(&sb));
	cs_strbuf_free(&sb);
	return rc < 0 ? writer_error(im, rc) : 0;
}

static int write_processes(struct importer *im)
{
	for (size_t i = 0; i < im->nprocs; i++) {
		struct proc_info *p = im->procs[i];
		cs_process row;
		int rc;

		memset(&row, 0, sizeof(row));
		row.pid = p->pid;
		row.ppid = p->ppid;
		row.start = p->start;
		row.end = p->end;
		row.command_line = p->cmdline;
		row.rank = p->rank;
		row.local_rank = p->local_rank;
		row.world_size = p->world_size;
		row.exit_code = p->exit_code;
		row.used_cuda = p->used_cuda;
		row.dropped_records = p->dropped;
		row.cupti_device_bytes = p->cupti_bytes;
		rc = cs_writer_add_process(im->w, &row);
		if (rc < 0)
			return writer_error(im, rc);
		im->st->processes++;
		cs_sat_accum(&im->st->dropped, p->dropped);
	}
	return 0;
}

/* The first pass over every file: headers, the time base, the files to skip. */
struct file_clock {
	uint64_t cupti;
	int i;
};

static int cmp_clock(const void *pa, const void *pb)
{
	const struct file_clock *a = pa, *b = pb;

	if (a->cupti != b->cupti)
		return a->cupti < b->cupti ? -1 : 1;
	return a->i - b->i;
}

/*
 * The time base: the earliest clock of the largest group of files whose clocks lie within
 * CS_TS_MAX of each other (the earliest such group on a tie). A file whose clock is outside it
 * could only give implausible times: it is skipped (bad_code set). Returns the files skipped, or
 * -1 without memory.
 */
static int choose_time_base(struct importer *im, struct file_info *fi, int n)
{
	struct file_clock *c = calloc((size_t)n + 1, sizeof(*c));
	int m = 0, best = 0, best_len = 0, skipped = 0;

	if (!c)
		return -1;
	for (int i = 0; i < n; i++)
		if (!fi[i].bad_code && fi[i].base_cupti)
			c[m++] = (struct file_clock){fi[i].base_cupti, i};
	cs_sort(c, (size_t)m, sizeof(*c), cmp_clock);
	for (int i = 0, j = 0; i < m; i++) {
		while (j < m && c[j].cupti - c[i].cupti <= (uint64_t)CS_TS_MAX)
			j++;
		if (j - i > best_len) {
			best = i;
			best_len = j - i;
		}
	}
	if (m) {
		im->base_cupti = c[best].cupti;
		im->base_real = fi[c[best].i].base_real;
	}
	for (int k = 0; k < m; k++) {
		struct file_info *f = &fi[c[k].i];

		if (k >= best && k < best + best_len)
			continue;
		f->bad_code = CS_ERR_CORRUPT;
		snprintf(f->bad_msg, sizeof(f->bad_msg),
			 "implausible clock (CUPTI %" PRIu64 " ns): more than 2^53 ns (104 days) "
			 "from the clocks of the other files",
			 f->base_cupti);
		skipped++;
	}
	free(c);
	return skipped;
}

static int probe_files(struct importer *im, struct file_info *fi, int n, cs_strbuf *warning)
{
	int good = 0, rc;

	for (int i = 0; i < n; i++) {
		rc = probe_file(im, &fi[i]);
		if (rc)
			return rc;
	}
	if (choose_time_base(im, fi, n) < 0)
		return nomem(im);
	for (int i = 0; i < n; i++) {
		if (fi[i].bad_code) {
			im->skipped_files++;
			continue;
		}
		good++;
		im->total += fi[i].size;
	}
	for (int i = 0; i < n; i++) {
		if (!fi[i].bad_code)
			continue;
		if (!good)
			return cs_error_set(
				im->err, fi[i].bad_code,
				n == 1 ? "cannot import '%s': %s"
				       : "no spool file to import: '%s': %s (and %d more)",
				fi[i].path, fi[i].bad_msg, n - 1);
		cs_strbuf_printf(warning, "skipped %" PRId64 " spool file%s: '%s': %s",
				 im->skipped_files, im->skipped_files > 1 ? "s" : "", fi[i].path,
				 fi[i].bad_msg);
		break;
	}
	return 0;
}

static int import_files(const char *const *paths, int n, const char *out_path,
			const cs_import_opts *opts, cs_import_stats *stats, cs_error *err,
			int from_dir)
{
	static const cs_import_opts no_opts;
	cs_strbuf warning = CS_STRBUF_INIT;
	cs_import_stats local_stats;
	struct importer im;
	struct file_info *fi = NULL;
	int rc;

	if (!opts)
		opts = &no_opts;
	if (!stats)
		stats = &local_stats;
	memset(stats, 0, sizeof(*stats));
	if (n <= 0 || !paths)
		return cs_error_set(err, CS_ERR_NOT_FOUND, "no spool files to import");
	if (!out_path)
		return cs_error_set(err, CS_ERR_INVALID, "no output file");

	memset(&im, 0, sizeof(im));
	im.out_path = out_path;
	im.from_dir = from_dir;
	im.err = err;
	im.st = stats;
	im.progress = opts->progress;
	im.progress_arg = opts->progress_arg;
	im.next_progress = PROGRESS_STEP;
	im.default_ids[STR_EMPTY] = im.default_ids[STR_UNKNOWN] = -1;
	for (size_t i = 0; opts->meta && opts->meta[i] && opts->meta[i + 1]; i += 2)
		if (!strcmp(opts->meta[i], "api"))
			im.keep_all_api = !strcmp(opts->meta[i + 1], "all");
	im.buf = malloc(READ_BUF_SIZE);
	im.sym = cs_symbolizer_new();
	fi = calloc((size_t)n, sizeof(*fi));
	if (!im.buf || !im.sym || !fi) {
		rc = nomem(&im);
		goto out;
	}
	for (int i = 0; i < n; i++)
		fi[i].path = paths[i];
	rc = probe_files(&im, fi, n, &warning);
	if (rc)
		goto out;

	rc = cs_writer_open(out_path, opts->overwrite, &im.w, err);
	if (rc < 0) {
		im.w = NULL;
		goto out;
	}
	for (int i = 0; i < n && !rc; i++) {
		if (fi[i].bad_code)
			continue;
		rc = import_file(&im, &fi[i]);
		stats->files++;
	}
	if (!rc)
		rc = write_processes(&im);
	if (!rc)
		rc = write_meta(&im, opts);
	if (rc)
		goto out;
	if (im.progress)
		im.progress(im.done, im.total, im.progress_arg);
	rc = cs_writer_finish(im.w, err);
	im.w = NULL;
	if (!rc && warning.len && err)
		cs_error_set(err, CS_OK, "%s", cs_strbuf_str(&warning));
out:
	if (im.w)
		cs_writer_abort(im.w);
	for (size_t i = 0; i < im.nprocs; i++)
		proc_free(im.procs[i]);
	free(im.procs);
	free(im.frames);
	cs_symbolizer_free(im.sym);
	free(im.buf);
	free(fi);
	cs_strbuf_free(&warning);
	return rc;
}

int cs_import_files(const char *const *paths, int n, const char *out_path,
		    const cs_import_opts *opts, cs_import_stats *stats, cs_error *err)
{
	return import_files(paths, n, out_path, opts, stats, err, 0);
}

/* Spool files sort by pid, then by name ("<pid>.cuspool" before "<pid>-1.cuspool"). */
static int spool_name_cmp(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	const char *bx = strrchr(x, '/'), *by = strrchr(y, '/');
	unsigned long long px = strtoull(bx ? bx + 1 : x, NULL, 10);
	unsigned long long py = strtoull(by ? by + 1 : y, NULL, 10);

	if (px != py)
		return px < py ? -1 : 1;
	return strcmp(x, y);
}

int cs_import_dir(const char *dir, const char *out_path, const cs_import_opts *opts,
		  cs_import_stats *stats, cs_error *err)
{
	size_t suffix = strlen(CS_SPOOL_SUFFIX), n = 0, cap = 0;
	char **paths = NULL;
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if (stats)
		memset(stats, 0, sizeof(*stats));
	d = opendir(dir);
	if (!d)
		return cs_error_set(err, errno == ENOENT ? CS_ERR_NOT_FOUND : CS_ERR_IO,
				    "cannot open '%s': %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char *path;

		if (len <= suffix || strcmp(de->d_name + len - suffix, CS_SPOOL_SUFFIX))
			continue;
		if (cs_grow((void **)&paths, &cap, n + 1, sizeof(*paths))) {
			rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory");
			goto out;
		}
		path = malloc(strlen(dir) + len + 2);
		if (!path) {
			rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory");
			goto out;
		}
		sprintf(path, "%s/%s", dir, de->d_name);
		paths[n++] = path;
	}
	if (!n) {
		rc = cs_error_set(err, CS_ERR_NOT_FOUND, "no spool files in '%s'", dir);
		goto out;
	}
	if (n > INT32_MAX) {
		rc = cs_error_set(err, CS_ERR_INVALID, "too many spool files in '%s'", dir);
		goto out;
	}
	cs_sort(paths, n, sizeof(*paths), spool_name_cmp);
	rc = import_files((const char *const *)paths, (int)n, out_path, opts, stats, err, 1);
out:
	closedir(d);
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	return rc;
}
