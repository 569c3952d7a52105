/*
 * test_import.c - the spool importer (src/spool/import.c) and `cuscope import`.
 *
 * Spool files are built by hand from the structs of include/cuscope/spool.h, imported, and the
 * trace is read back through the reader: counts, the launch join in both orders, graph launches,
 * timestamps made unknown, NVTX nesting, waits, memory rows, stacks (native frames symbolized
 * against this test binary's own mappings, Python frames, their order), truncated files, several
 * processes, a million kernels in bounded memory, 400,000 module mappings in under a second, and
 * no output left behind on failure.
 */
#include <check.h>
#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cuscope/import.h"
#include "cuscope/launch_cost.h"
#include "cuscope/spool.h"
#include "cuscope/trace.h"
#include "testutil.h"

/* AddressSanitizer's shadow memory and quarantine grow the resident set: no bound on it there. */
#ifdef __SANITIZE_ADDRESS__
#define RSS_CHECKED 0
#else
#define RSS_CHECKED 1
#endif

#define BASE_CUPTI 1000000000ull /* cupti_ns of the first header: time zero of the traces */
#define BASE_REAL  1700000000000000000ull
#define T(ns)	   (BASE_CUPTI + (ns)) /* a raw timestamp ns after time zero */

#define PID_A 4242
#define PID_B 5353
#define TID   77

/* ---- building spool files ---- */

struct spool {
	unsigned char *buf;
	size_t len, cap;
	FILE *f; /* streaming: the buffer goes to f whenever it grows past 1 MiB */
};

static void sp_raw(struct spool *s, const void *p, size_t n)
{
	if (s->len + n > s->cap) {
		s->cap = (s->len + n) * 2 + 4096;
		s->buf = realloc(s->buf, s->cap);
		ck_assert_ptr_nonnull(s->buf);
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
	if (s->f && s->len > (1u << 20)) {
		ck_assert_uint_eq(fwrite(s->buf, 1, s->len, s->f), s->len);
		s->len = 0;
	}
}

/* Append a record: its fixed part (size fixed, header filled here), then tail, padded to 8 bytes.
 */
static void sp_rec(struct spool *s, uint16_t type, uint32_t tid, void *rec, size_t fixed,
		   const void *tail, size_t tail_len)
{
	static const char zeros[8];
	struct cs_rec *h = rec;
	size_t size = (fixed + tail_len + 7) & ~(size_t)7;

	h->type = type;
	h->size = (uint16_t)size;
	h->tid = tid;
	sp_raw(s, rec, fixed);
	if (tail_len)
		sp_raw(s, tail, tail_len);
	if (size > fixed + tail_len)
		sp_raw(s, zeros, size - fixed - tail_len);
}

static void sp_header(struct spool *s, uint32_t pid, uint64_t cupti_ns, uint64_t realtime_ns)
{
	struct cs_spool_header h;

	memset(&h, 0, sizeof(h));
	memcpy(h.magic, CS_SPOOL_MAGIC, sizeof(h.magic));
	h.version = CS_SPOOL_VERSION;
	h.header_size = sizeof(h);
	h.pid = pid;
	h.ppid = 1;
	h.realtime_ns = realtime_ns;
	h.cupti_ns = cupti_ns;
	sp_raw(s, &h, sizeof(h));
}

static void sp_string(struct spool *s, uint32_t id, const char *text)
{
	struct cs_rec_string r;

	memset(&r, 0, sizeof(r));
	r.id = id;
	r.len = (uint32_t)strlen(text);
	sp_rec(s, CS_REC_STRING, 0, &r, sizeof(r), text, r.len);
}

static void sp_process(struct spool *s, uint32_t pid, int rank, const char *cmd)
{
	struct cs_rec_process r;

	memset(&r, 0, sizeof(r));
	r.pid = pid;
	r.ppid = 1;
	r.rank = rank;
	r.local_rank = rank;
	r.world_size = rank < 0 ? -1 : 2;
	r.cmdline_len = (uint32_t)strlen(cmd);
	sp_rec(s, CS_REC_PROCESS, TID, &r, sizeof(r), cmd, r.cmdline_len);
}

static void sp_device(struct spool *s, uint32_t id, const char *name)
{
	struct cs_rec_device r;

	memset(&r, 0, sizeof(r));
	r.device_id = id;
	r.sm_count = 132;
	r.compute_major = 9;
	r.compute_minor = 0;
	r.core_clock_khz = 1980000;
	r.total_memory = 150ull << 30;
	r.memory_bandwidth = 4800000000000ull;
	for (int i = 0; i < 16; i++)
		r.uuid[i] = (uint8_t)(0xa0 + i);
	r.name_len = (uint32_t)strlen(name);
	sp_rec(s, CS_REC_DEVICE, 0, &r, sizeof(r), name, r.name_len);
}

static void sp_clock(struct spool *s, uint64_t cupti_ns, uint64_t realtime_ns)
{
	struct cs_rec_clock r;

	memset(&r, 0, sizeof(r));
	r.cupti_ns = cupti_ns;
	r.realtime_ns = realtime_ns;
	r.monotonic_raw_ns = 12345;
	sp_rec(s, CS_REC_CLOCK, 0, &r, sizeof(r), NULL, 0);
}

static void sp_kernel_full(struct spool *s, uint32_t corr, uint64_t start, uint64_t end,
			   uint32_t name_sid, uint32_t stream, uint32_t graph_id, uint64_t node)
{
	struct cs_rec_kernel r;

	memset(&r, 0, sizeof(r));
	r.start = start;
	r.end = end;
	r.correlation_id = corr;
	r.device_id = 0;
	r.context_id = 1;
	r.stream_id = stream;
	r.name_sid = name_sid;
	r.graph_id = graph_id;
	r.graph_node_id = node;
	r.grid[0] = 128;
	r.grid[1] = r.grid[2] = 1;
	r.block[0] = 256;
	r.block[1] = r.block[2] = 1;
	r.registers = 32;
	r.static_shared = 1024;
	sp_rec(s, CS_REC_KERNEL, 0, &r, sizeof(r), NULL, 0);
}

static void sp_kernel(struct spool *s, uint32_t corr, uint64_t start, uint64_t end,
		      uint32_t name_sid)
{
	sp_kernel_full(s, corr, start, end, name_sid, 7, 0, 0);
}

struct api_args {
	uint32_t tid, corr, cls, cbid, name_sid, stack_id;
	uint64_t start, end, address, bytes;
	int32_t result;
	uint8_t domain;
};

static void sp_api(struct spool *s, const struct api_args *a)
{
	struct cs_rec_api r;

	memset(&r, 0, sizeof(r));
	r.start = a->start;
	r.end = a->end;
	r.arg_address = a->address;
	r.arg_bytes = a->bytes;
	r.correlation_id = a->corr;
	r.cbid = a->cbid;
	r.result = a->result;
	r.stack_id = a->stack_id;
	r.name_sid = a->name_sid;
	r.domain = a->domain ? a->domain : CS_API_RUNTIME;
	r.api_class = (uint8_t)a->cls;
	sp_rec(s, CS_REC_API, a->tid ? a->tid : TID, &r, sizeof(r), NULL, 0);
}

/* A runtime API call of class cls, [start, end], with correlation id corr. */
static void sp_call(struct spool *s, uint32_t corr, uint32_t cls, uint64_t start, uint64_t end,
		    uint32_t cbid)
{
	struct api_args a = {.corr = corr, .cls = cls, .start = start, .end = end, .cbid = cbid};

	sp_api(s, &a);
}

static void sp_memcpy(struct spool *s, uint32_t corr, uint64_t start, uint64_t end, int kind,
		      int flags, uint64_t bytes)
{
	struct cs_rec_memcpy r;

	memset(&r, 0, sizeof(r));
	r.start = start;
	r.end = end;
	r.bytes = bytes;
	r.correlation_id = corr;
	r.context_id = 1;
	r.stream_id = 7;
	r.copy_kind = (uint8_t)kind;
	r.src_kind = kind == CS_COPY_HTOD ? CS_MEM_PINNED : CS_MEM_DEVICE;
	r.dst_kind = kind == CS_COPY_DTOH ? CS_MEM_PAGEABLE : CS_MEM_DEVICE;
	r.flags = (uint8_t)flags;
	r.src_device = UINT32_MAX;
	r.dst_device = UINT32_MAX;
	sp_rec(s, CS_REC_MEMCPY, 0, &r, sizeof(r), NULL, 0);
}

static void sp_memset(struct spool *s, uint32_t corr, uint64_t start, uint64_t end, uint32_t stream)
{
	struct cs_rec_memset r;

	memset(&r, 0, sizeof(r));
	r.start = start;
	r.end = end;
	r.bytes = 4096;
	r.correlation_id = corr;
	r.context_id = 1;
	r.stream_id = stream;
	r.value = 0;
	r.flags = 1;
	r.mem_kind = CS_MEM_DEVICE;
	sp_rec(s, CS_REC_MEMSET, 0, &r, sizeof(r), NULL, 0);
}

static void sp_memory(struct spool *s, uint32_t corr, int op, uint64_t ts, uint64_t address,
		      uint64_t bytes)
{
	struct cs_rec_memory r;

	memset(&r, 0, sizeof(r));
	r.timestamp = ts;
	r.address = address;
	r.bytes = bytes;
	r.stream_id = UINT64_MAX;
	r.correlation_id = corr;
	r.context_id = 1;
	r.op = (uint8_t)op;
	r.mem_kind = CS_MEM_DEVICE;
	sp_rec(s, CS_REC_MEMORY, 0, &r, sizeof(r), NULL, 0);
}

static void sp_sync(struct spool *s, uint32_t corr, uint32_t type, uint64_t start, uint64_t end,
		    uint32_t stream, uint32_t event)
{
	struct cs_rec_sync r;

	memset(&r, 0, sizeof(r));
	r.start = start;
	r.end = end;
	r.type = type;
	r.correlation_id = corr;
	r.context_id = 1;
	r.stream_id = stream;
	r.cuda_event_id = event;
	sp_rec(s, CS_REC_SYNC, 0, &r, sizeof(r), NULL, 0);
}

static void sp_nvtx(struct spool *s, uint32_t tid, int op, uint64_t ts, uint64_t range_id,
		    uint32_t text_sid)
{
	struct cs_rec_nvtx r;

	memset(&r, 0, sizeof(r));
	r.timestamp = ts;
	r.range_id = range_id;
	r.text_sid = text_sid;
	r.color = 0xff00ff00u;
	r.op = (uint8_t)op;
	sp_rec(s, CS_REC_NVTX, tid, &r, sizeof(r), NULL, 0);
}

/* A stack of depth native pcs, then npy Python frames, with flags (enum cs_rec_stack_flags). */
static void sp_stack_flags(struct spool *s, uint32_t id, const uint64_t *pcs, uint32_t depth,
			   const struct cs_rec_pyframe *py, uint32_t npy, uint32_t flags)
{
	size_t tail = depth * sizeof(*pcs) + npy * sizeof(*py);
	unsigned char *buf = malloc(tail + 1);
	struct cs_rec_stack r;

	ck_assert_ptr_nonnull(buf);
	if (depth)
		memcpy(buf, pcs, depth * sizeof(*pcs));
	if (npy)
		memcpy(buf + depth * sizeof(*pcs), py, npy * sizeof(*py));
	memset(&r, 0, sizeof(r));
	r.id = id;
	r.depth = depth;
	r.py_depth = npy;
	r.flags = flags;
	sp_rec(s, CS_REC_STACK, TID, &r, sizeof(r), buf, tail);
	free(buf);
}

/* A stack of depth native pcs, then npy Python frames. */
static void sp_stack_py(struct spool *s, uint32_t id, const uint64_t *pcs, uint32_t depth,
			const struct cs_rec_pyframe *py, uint32_t npy)
{
	sp_stack_flags(s, id, pcs, depth, py, npy, 0);
}

static void sp_stack(struct spool *s, uint32_t id, const uint64_t *pcs, uint32_t depth)
{
	sp_stack_py(s, id, pcs, depth, NULL, 0);
}

static void sp_module(struct spool *s, uint64_t start, uint64_t end, uint64_t offset,
		      uint32_t path_sid)
{
	struct cs_rec_module r;

	memset(&r, 0, sizeof(r));
	r.start = start;
	r.end = end;
	r.offset = offset;
	r.path_sid = path_sid;
	sp_rec(s, CS_REC_MODULE, 0, &r, sizeof(r), NULL, 0);
}

static void sp_dropped(struct spool *s, uint64_t count, uint64_t cupti_bytes)
{
	struct cs_rec_dropped r;

	memset(&r, 0, sizeof(r));
	r.count = count;
	r.cupti_device_bytes = cupti_bytes;
	sp_rec(s, CS_REC_DROPPED, 0, &r, sizeof(r), NULL, 0);
}

static void sp_end(struct spool *s, uint64_t ts, int exit_code, uint64_t dropped)
{
	struct cs_rec_end r;

	memset(&r, 0, sizeof(r));
	r.timestamp = ts;
	r.exit_code = exit_code;
	r.dropped = dropped;
	sp_rec(s, CS_REC_END, TID, &r, sizeof(r), NULL, 0);
}

static void sp_call_tails(struct spool *s, const uint64_t *calls, const uint64_t *ns)
{
	struct cs_rec_call_tails r;

	memset(&r, 0, sizeof(r));
	for (int k = 0; k < CS_TAIL_KINDS; k++) {
		r.calls[k] = calls[k];
		r.ns[k] = ns[k];
	}
	sp_rec(s, CS_REC_CALL_TAILS, TID, &r, sizeof(r), NULL, 0);
}

/* Write the spool to dir/name and free it; returns the path. */
static char *sp_save(struct spool *s, const char *dir, const char *name)
{
	char *path = tu_path(dir, name);

	ck_assert_int_eq(tu_write_file(path, s->buf, s->len), 0);
	free(s->buf);
	memset(s, 0, sizeof(*s));
	return path;
}

/* A spool of process pid, opened at time zero (offset ns later), with a process and a device
 * record. */
static void sp_begin(struct spool *s, uint32_t pid, uint64_t offset)
{
	memset(s, 0, sizeof(*s));
	sp_header(s, pid, BASE_CUPTI + offset, BASE_REAL + offset);
	sp_clock(s, BASE_CUPTI + offset + 10, BASE_REAL + offset + 10);
	sp_process(s, pid, -1, "python train.py --epochs 1");
}

/* ---- reading traces back ---- */

struct events {
	cs_event *v;
	int n;
};

static struct events read_events(cs_trace *t, enum cs_event_kind kind)
{
	struct events l = {NULL, 0};
	cs_filter f = cs_filter_all();
	cs_error err = {0, ""};
	cs_iter *it;
	cs_event ev;
	int rc;

	ck_assert_msg(cs_iter_open(t, kind, &f, &it, &err) == 0, "iter: %s", err.msg);
	while ((rc = cs_iter_next(it, &ev)) == 1) {
		l.v = realloc(l.v, (size_t)(l.n + 1) * sizeof(*l.v));
		/* strings live until the next call: keep copies */
		if (kind == CS_EV_KERNEL && ev.u.kernel.name)
			ev.u.kernel.name = strdup(ev.u.kernel.name);
		if (kind == CS_EV_API && ev.u.api.name)
			ev.u.api.name = strdup(ev.u.api.name);
		if (kind == CS_EV_NVTX) {
			if (ev.u.nvtx.text)
				ev.u.nvtx.text = strdup(ev.u.nvtx.text);
			if (ev.u.nvtx.domain)
				ev.u.nvtx.domain = strdup(ev.u.nvtx.domain);
		}
		l.v[l.n++] = ev;
	}
	ck_assert_int_eq(rc, 0);
	cs_iter_close(it);
	return l;
}

static uint64_t ev_corr(const cs_event *e)
{
	switch (e->kind) {
	case CS_EV_KERNEL:
		return e->u.kernel.correlation_id;
	case CS_EV_MEMCPY:
		return e->u.memcpy.correlation_id;
	case CS_EV_MEMSET:
		return e->u.memset.correlation_id;
	case CS_EV_MEMORY:
		return e->u.memory.correlation_id;
	case CS_EV_SYNC:
		return e->u.sync.correlation_id;
	case CS_EV_API:
		return e->u.api.correlation_id;
	default:
		return 0;
	}
}

static uint32_t ev_pid(const cs_event *e)
{
	switch (e->kind) {
	case CS_EV_KERNEL:
		return e->u.kernel.pid;
	case CS_EV_MEMCPY:
		return e->u.memcpy.pid;
	case CS_EV_MEMSET:
		return e->u.memset.pid;
	case CS_EV_MEMORY:
		return e->u.memory.pid;
	case CS_EV_SYNC:
		return e->u.sync.pid;
	case CS_EV_API:
		return e->u.api.pid;
	default:
		return e->u.nvtx.pid;
	}
}

/* The one event of the list with this pid (0: any) and correlation id; fails when there is not one.
 */
static const cs_event *find_one(const struct events *l, uint32_t pid, uint64_t corr)
{
	const cs_event *found = NULL;

	for (int i = 0; i < l->n; i++) {
		if (ev_corr(&l->v[i]) != corr || (pid && ev_pid(&l->v[i]) != pid))
			continue;
		ck_assert_msg(!found, "two events with correlation id %llu",
			      (unsigned long long)corr);
		found = &l->v[i];
	}
	ck_assert_msg(found != NULL, "no event with correlation id %llu", (unsigned long long)corr);
	return found;
}

struct imported {
	char *dir, *out;
	cs_import_stats st;
	cs_error err;
	cs_trace *t;
};

/* Import every spool file of dir into dir/out.db with meta (may be NULL), and open the result. */
static void import_dir(struct imported *im, const char *dir, const char *const *meta)
{
	cs_import_opts opts;
	cs_error err = {0, ""};
	int rc;

	memset(&opts, 0, sizeof(opts));
	opts.meta = meta;
	im->dir = strdup(dir);
	im->out = tu_path(dir, "out.db");
	memset(&im->err, 0, sizeof(im->err));
	rc = cs_import_dir(dir, im->out, &opts, &im->st, &im->err);
	ck_assert_msg(rc == 0, "import: %d %s", rc, im->err.msg);
	ck_assert_msg(cs_trace_open(im->out, &im->t, &err) == 0, "open: %s", err.msg);
}

static void imported_close(struct imported *im)
{
	cs_trace_close(im->t);
	free(im->dir);
	free(im->out);
}

/* ---- tests ---- */

struct proc_rows {
	cs_process p[4];
	char *cmd[4];
	int n;
};

static int collect_process(const cs_process *p, void *arg)
{
	struct proc_rows *r = arg;

	ck_assert_int_lt(r->n, 4);
	r->p[r->n] = *p;
	r->cmd[r->n] = p->command_line ? strdup(p->command_line) : NULL;
	r->p[r->n].command_line = r->cmd[r->n];
	r->n++;
	return 0;
}

struct device_rows {
	int n;
	char uuid[64], name[64];
	cs_device d;
};

static int collect_device(const cs_device *d, void *arg)
{
	struct device_rows *r = arg;

	r->d = *d;
	snprintf(r->uuid, sizeof(r->uuid), "%s", d->uuid ? d->uuid : "");
	snprintf(r->name, sizeof(r->name), "%s", d->name ? d->name : "");
	r->n++;
	return 0;
}

static int count_stream(const cs_stream *s, void *arg)
{
	(void)s;
	(*(int *)arg)++;
	return 0;
}

START_TEST(test_counts_and_rows)
{
	char *dir = tu_tmpdir();
	struct spool s;
	struct imported im;
	struct events k, a, m, ms;
	struct proc_rows procs = {0};
	struct device_rows devs = {0};
	cs_trace_summary sum;
	cs_error err = {0, ""};
	int streams = 0;

	sp_begin(&s, PID_A, 0);
	sp_device(&s, 0, "NVIDIA H200");
	sp_string(&s, 1, "_Z6kernelPf");
	sp_string(&s, 2, "cudaGetDevice");
	sp_string(&s, 3, "cudaProfilerStart");
	/* launch + kernel, async copy + memcpy, memset (its call folded away) */
	sp_call(&s, 10, CS_APICLASS_LAUNCH, T(1000), T(1500), 211);
	sp_kernel(&s, 10, T(2000), T(5000), 1);
	sp_call(&s, 11, CS_APICLASS_MEMCPY_ASYNC, T(6000), T(6400), 41);
	sp_memcpy(&s, 11, T(7000), T(9000), CS_COPY_HTOD, 1, 1 << 20);
	sp_call(&s, 12, CS_APICLASS_MEMSET, T(9100), T(9200), 52);
	sp_memset(&s, 12, T(9300), T(9400), 9);
	/* two API rows of their own */
	{
		struct api_args x = {.corr = 13,
				     .cls = CS_APICLASS_OTHER,
				     .start = T(9500),
				     .end = T(9510),
				     .cbid = 17,
				     .name_sid = 2};
		struct api_args y = {.corr = 14,
				     .cls = CS_APICLASS_PROFILER_START,
				     .start = T(9600),
				     .end = T(9700),
				     .cbid = 180,
				     .name_sid = 3};

		sp_api(&s, &x);
		sp_api(&s, &y);
	}
	sp_dropped(&s, 3, 9600000);
	sp_dropped(&s, 2, 9600000);
	sp_end(&s, T(20000), 0, 5);
	free(sp_save(&s, dir, "4242.cuspool"));

	import_dir(&im, dir, NULL);
	ck_assert_int_eq(im.st.files, 1);
	ck_assert_int_eq(im.st.processes, 1);
	ck_assert_int_eq(im.st.counts[CS_EV_KERNEL], 1);
	ck_assert_int_eq(im.st.counts[CS_EV_MEMCPY], 1);
	ck_assert_int_eq(im.st.counts[CS_EV_MEMSET], 1);
	ck_assert_int_eq(im.st.counts[CS_EV_MEMORY], 0);
	ck_assert_int_eq(im.st.counts[CS_EV_SYNC], 0);
	ck_assert_int_eq(im.st.counts[CS_EV_API], 2);
	ck_assert_int_eq(im.st.counts[CS_EV_NVTX], 0);
	ck_assert_int_eq(im.st.dropped, 5);
	ck_assert_int_eq(im.st.unknown_timestamps, 0);
	ck_assert_int_eq(im.st.truncated_files, 0);
	ck_assert_int_gt(im.st.bytes_read, 0);
	ck_assert_str_eq(im.err.msg, "");

	ck_assert_int_eq(cs_trace_get_summary(im.t, &sum, &err), 0);
	ck_assert_int_eq(sum.counts[CS_EV_KERNEL], 1);
	ck_assert_int_eq(sum.counts[CS_EV_API], 2);
	ck_assert_int_eq(sum.processes, 1);
	ck_assert_int_eq(sum.devices, 1);
	ck_assert_int_eq(sum.streams, 2);
	ck_assert_int_eq(sum.dropped_records, 5);
	ck_assert_int_eq(sum.strings,
			 3); /* the three defined: no placeholder when none is needed */

	ck_assert_str_eq(cs_trace_meta(im.t, "time_base_ns"), "1000000000");
	ck_assert_str_eq(cs_trace_meta(im.t, "realtime_base_ns"), "1700000000000000000");
	ck_assert_str_eq(cs_trace_meta(im.t, "pids"), "4242");
	ck_assert_ptr_nonnull(cs_trace_meta(im.t, "import_stats"));

	k = read_events(im.t, CS_EV_KERNEL);
	ck_assert_int_eq(k.n, 1);
	ck_assert_int_eq(k.v[0].u.kernel.start, 2000);
	ck_assert_int_eq(k.v[0].u.kernel.end, 5000);
	ck_assert_int_eq(k.v[0].u.kernel.queued, CS_TS_UNKNOWN);
	ck_assert_int_eq(k.v[0].u.kernel.pid, PID_A);
	ck_assert_int_eq(k.v[0].u.kernel.stream_id, 7);
	ck_assert_int_eq(k.v[0].u.kernel.grid_x, 128);
	ck_assert_int_eq(k.v[0].u.kernel.block_x, 256);
	ck_assert_int_eq(k.v[0].u.kernel.registers_per_thread, 32);
	ck_assert_int_eq(k.v[0].u.kernel.static_shared_memory, 1024);
	ck_assert_int_eq(k.v[0].u.kernel.graph_id, CS_ID_NONE);
	ck_assert_int_eq(k.v[0].u.kernel.stack_id, CS_ID_NONE);
	ck_assert_str_eq(k.v[0].u.kernel.name, "_Z6kernelPf");

	m = read_events(im.t, CS_EV_MEMCPY);
	ck_assert_int_eq(m.n, 1);
	ck_assert_int_eq(m.v[0].u.memcpy.is_async, 1);
	ck_assert_int_eq(m.v[0].u.memcpy.copy_kind, CS_COPY_HTOD);
	ck_assert_int_eq(m.v[0].u.memcpy.bytes, 1 << 20);
	ck_assert_int_eq(m.v[0].u.memcpy.src_device_id, CS_ID_NONE);
	ck_assert_int_eq(m.v[0].u.memcpy.launch_start, 6000);
	ck_assert_int_eq(m.v[0].u.memcpy.launch_cbid, 41);

	ms = read_events(im.t, CS_EV_MEMSET);
	ck_assert_int_eq(ms.n, 1);
	ck_assert_int_eq(ms.v[0].u.memset.launch_end, 9200);
	ck_assert_int_eq(ms.v[0].u.memset.stream_id, 9);

	a = read_events(im.t, CS_EV_API);
	ck_assert_int_eq(a.n, 2);
	ck_assert_str_eq(find_one(&a, 0, 13)->u.api.name, "cudaGetDevice");
	ck_assert_int_eq(find_one(&a, 0, 13)->u.api.cbid, 17);
	ck_assert_int_eq(find_one(&a, 0, 13)->u.api.tid, TID);
	ck_assert_int_eq(find_one(&a, 0, 13)->u.api.api_kind, CS_API_RUNTIME);
	ck_assert_str_eq(find_one(&a, 0, 14)->u.api.name, "cudaProfilerStart");
	ck_assert_int_eq(find_one(&a, 0, 14)->u.api.start, 9600);

	ck_assert_int_eq(cs_trace_each_process(im.t, collect_process, &procs, &err), 0);
	ck_assert_int_eq(procs.n, 1);
	ck_assert_int_eq(procs.p[0].pid, PID_A);
	ck_assert_int_eq(procs.p[0].ppid, 1);
	ck_assert_int_eq(procs.p[0].start, 0);
	ck_assert_int_eq(procs.p[0].end, 20000);
	ck_assert_int_eq(procs.p[0].exit_code, 0);
	ck_assert_int_eq(procs.p[0].used_cuda, 1);
	ck_assert_int_eq(procs.p[0].rank, CS_ID_NONE);
	ck_assert_int_eq(procs.p[0].dropped_records, 5);
	ck_assert_int_eq(procs.p[0].cupti_device_bytes, 9600000);
	ck_assert_str_eq(procs.p[0].command_line, "python train.py --epochs 1");

	ck_assert_int_eq(cs_trace_each_device(im.t, collect_device, &devs, &err), 0);
	ck_assert_int_eq(devs.n, 1);
	ck_assert_str_eq(devs.uuid, "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");
	ck_assert_str_eq(devs.name, "NVIDIA H200");
	ck_assert_int_eq(devs.d.pid, PID_A);
	ck_assert_int_eq(devs.d.sm_count, 132);
	ck_assert_int_eq(devs.d.compute_major, 9);
	ck_assert_int_eq(devs.d.total_memory, (int64_t)(150ull << 30));

	ck_assert_int_eq(cs_trace_each_stream(im.t, count_stream, &streams, &err), 0);
	ck_assert_int_eq(streams, 2);
	imported_close(&im);
}
END_TEST

START_TEST(test_launch_join_both_orders)
{
	char *dir = tu_tmpdir();
	struct spool s;
	struct imported im;
	struct events k, a;
	const cs_kernel *x;

	sp_begin(&s, PID_A, 0);
	sp_string(&s, 1, "k");
	/* the usual order: the callback's record first */
	sp_call(&s, 100, CS_APICLASS_LAUNCH, T(1000), T(1200), 211);
	sp_kernel(&s, 100, T(1100), T(3000), 1);
	/* the activity buffer first, the callback's record later */
	sp_kernel(&s, 101, T(5000), T(6000), 1);
	{
		struct api_args c = {.tid = 99,
				     .corr = 101,
				     .cls = CS_APICLASS_LAUNCH,
				     .start = T(4000),
				     .end = T(4100),
				     .cbid = 307,
				     .domain = CS_API_DRIVER};

		sp_api(&s, &c);
	}
	/* no launch record at all */
	sp_kernel(&s, 102, T(7000), T(8000), 1);
	free(sp_save(&s, dir, "4242.cuspool"));

	import_dir(&im, dir, NULL);
	ck_assert_int_eq(im.st.counts[CS_EV_KERNEL], 3);
	ck_assert_int_eq(im.st.counts[CS_EV_API], 0); /* launches are folded into the kernels */
	ck_assert_int_eq(im.st.unknown_timestamps, 0);
	k = read_events(im.t, CS_EV_KERNEL);
	ck_assert_int_eq(k.n, 3);

	x = &find_one(&k, 0, 100)->u.kernel;
	ck_assert_int_eq(x->launch_start, 1000);
	ck_assert_int_eq(x->launch_end, 1200);
	ck_assert_int_eq(x->launch_tid, TID);
	ck_assert_int_eq(x->launch_cbid, 211);
	ck_assert_int_eq(x->launch_api_kind, CS_API_RUNTIME);

	x = &find_one(&k, 0, 101)->u.kernel;
	ck_assert_int_eq(x->start, 5000);
	ck_assert_int_eq(x->launch_start, 4000);
	ck_assert_int_eq(x->launch_end, 4100);
	ck_assert_int_eq(x->launch_tid, 99);
	ck_assert_int_eq(x->launch_cbid, 307);
	ck_assert_int_eq(x->launch_api_kind, CS_API_DRIVER);

	x = &find_one(&k, 0, 102)->u.kernel;
	ck_assert_int_eq(x->launch_start, CS_TS_UNKNOWN);
	ck_assert_int_eq(x->launch_end, CS_TS_UNKNOWN);
	ck_assert_int_eq(x->launch_tid, 0);
	ck_assert_int_eq(x->launch_cbid, CS_ID_NONE);
	imported_close(&im);

	/* with api=all the launch calls are rows too */
	dir = tu_tmpdir();
	sp_begin(&s, PID_A, 0);
	sp_call(&s, 100, CS_APICLASS_LAUNCH, T(1000), T(1200), 211);
	sp_kernel(&s, 100, T(1100), T(3000), 0);
	free(sp_save(&s, dir, "4242.cuspool"));
	{
		const char *meta[] = {"api", "all", "label", "nightly", NULL};

		import_dir(&im, dir, meta);
	}
	ck_assert_int_eq(im.st.counts[CS_EV_API], 1);
	a = read_events(im.t, CS_EV_API);
	ck_assert_int_eq(a.n, 1);
	ck_assert_int_eq(a.v[0].u.api.cbid, 211);
	ck_assert_str_eq(a.v[0].u.api.name, "<unknown>");
	ck_assert_str_eq(cs_trace_meta(im.t, "label"), "nightly");
	k = read_events(im.t, CS_EV_KERNEL);
	ck_assert_int_eq(k.v[0].u.kernel.launch_start, 1000);
	ck_assert_str_eq(k.v[0].u.kernel.name, "<unknown>");
	imported_close(&im);
}
END_TEST

START_TEST(test_graph_launch)
{
	char *dir = tu_tmpdir();
	struct spool s;
	struct imported im;
	struct events k;

	sp_begin(&s, PID_A, 0);
	sp_string(&s, 1, "graph_kernel");
	/* one node's record before the call's, two after, one launch after that */
	sp_kernel_full(&s, 50, T(3000), T(3100), 1, 7, 4, 1001);
	sp_call(&s, 50, CS_APICLASS_GRAPH_LAUNCH, T(1000), T(2000), 311);
	sp_kernel_full(&s, 50, T(3200), T(3300), 1, 7, 4, 1002);
	sp_kernel_full(&s, 50, T(3400), T(3500), 1, 8, 4, 1003);
	sp_call(&s, 51, CS_APICLASS_LAUNCH, T(4000), T(4100), 211);
	sp_kernel(&s, 51, T(4200), T(4300), 1);
	free(sp_save(&s, dir, "4242.cuspool"));

	import_dir(&im, dir, NULL);
	ck_assert_int_eq(im.st.counts[CS_EV_KERNEL], 4);
	k = read_events(im.t, CS_EV_KERNEL);
	ck_assert_int_eq(k.n, 4);
	for (int i = 0; i < k.n; i++) {
		const cs_kernel *x = &k.v[i].u.kernel;

		if (x->correlation_id == 51) {
			ck_assert_int_eq(x->graph_id, CS_ID_NONE);
			ck_assert_int_eq(x->graph_node_id, CS_ID_NONE);
			ck_assert_int_eq(x->launch_start, 4000);
			continue;
		}
		ck_assert_int_eq(x->correlation_id, 50);
		ck_assert_int_eq(x->graph_id, 4);
		ck_assert_int_ge(x->graph_node_id, 1001);
		ck_assert_int_le(x->graph_node_id, 1003);
		ck_assert_int_eq(x->launch_start, 1000);
		ck_assert_int_eq(x->launch_end, 2000);
		ck_assert_int_eq(x->launch_cbid, 311);
		ck_assert_int_eq(x->launch_tid, TID);
	}
	imported_close(&im);
}
END_TEST

START_TEST(test_unknown_timestamps)
{
	char *dir = tu_tmpdir();
	struct spool s;
	struct imported im;
	struct events k;
	const cs_kernel *x;
	struct cs_rec_kernel r;

	sp_begin(&s, PID_A, 0);
	sp_kernel(&s, 1, 0, T(500), 0);	     /* start unknown: 1 */
	sp_kernel(&s, 2, T(900), T(800), 0); /* end before start: 1 */
	sp_call(&s, 3, CS_APICLASS_LAUNCH, T(1500), T(1600), 211);
	sp_kernel(&s, 3, T(1000), T(1100), 0); /* launch after the kernel started: 2 */
	/* latency timestamps: queued after submitted: 2; absent ones are not counted */
	memset(&r, 0, sizeof(r));
	r.start = T(3000);
	r.end = T(3100);
	r.queued = T(2900);
	r.submitted = T(2800);
	r.correlation_id = 4;
	sp_rec(&s, CS_REC_KERNEL, 0, &r, sizeof(r), NULL, 0);
	r.queued = T(2700);
	r.submitted = T(2800);
	r.correlation_id = 5;
	sp_rec(&s, CS_REC_KERNEL, 0, &r, sizeof(r), NULL, 0);
	free(sp_save(&s, dir, "4242.cuspool"));

	import_dir(&im, dir, NULL);
	ck_assert_int_eq(im.st.counts[CS_EV_KERNEL], 5);
	ck_assert_int_eq(im.st.unknown_timestamps, 6);
	k = read_events(im.t, CS_EV_KERNEL);
	x = &find_one(&k, 0, 1)->u.kernel;
	ck_assert_int_eq(x->start, CS_TS_UNKNOWN);
	ck_assert_int_eq(x->end, 500);
	x = &find_one(&k, 0, 2)->u.kernel;
	ck_assert_int_eq(x->start, 900);
	ck_assert_int_eq(x->end, CS_TS_UNKNOWN);
	x = &find_one(&k, 0, 3)->u.kernel;
	ck_assert_int_eq(x->launch_start, CS_TS_UNKNOWN);
	ck_assert_int_eq(x->launch_end, CS_TS_UNKNOWN);
	ck_assert_int_eq(x->launch_cbid, 211); /* the call is still the launch */
	x = &find_one(&k, 0, 4)->u.kernel;
	ck_assert_int_eq(x->queued, CS_TS_UNKNOWN);
	ck_assert_int_eq(x->submitted, CS_TS_UNKNOWN);
	x = &find_one(&k, 0, 5)->u.kernel;
	ck_assert_int_eq(x->queued, 2700);
	ck_assert_int_eq(x->submitted, 2800);
	imported_close(&im);
}
END_TEST

START_TEST(test_nvtx)
{
	char *dir = tu_tmpdir();
	struct spool s;
	struct imported im;
	struct events n;
	int seen = 0;

	sp_begin(&s, PID_A, 0);
	sp_string(&s, 1, "step");
	sp_string(&s, 2, "forward");
	sp_string(&s, 3, "loader");
	sp_string(&s, 4, "io");
	sp_string(&s, 5, "checkpoint");
	sp_nvtx(&s, 10, CS_NVTX_OP_PUSH, T(100), 0, 1);
	sp_nvtx(&s, 11, CS_NVTX_OP_PUSH, T(110), 0, 3); /* never popped */
	sp_nvtx(&s, 10, CS_NVTX_OP_PUSH, T(200), 0, 2);
	sp_nvtx(&s, 10, CS_NVTX_OP_START, T(250), 99, 4);
	sp_nvtx(&s, 10, CS_NVTX_OP_POP, T(300), 0, 0);
	sp_nvtx(&s, 10, CS_NVTX_OP_MARK, T(350), 0, 5);
	sp_nvtx(&s, 10, CS_NVTX_OP_POP, T(400), 0, 0);
	sp_nvtx(&s, 10, CS_NVTX_OP_POP, T(410), 0, 0);	/* nothing open: ignored */
	sp_nvtx(&s, 12, CS_NVTX_OP_END, T(500), 99, 0); /* ends on another thread */
	free(sp_save(&s, dir, "4242.cuspool"));

	import_dir(&im, dir, NULL);
	ck_assert_int_eq(im.st.counts[CS_EV_NVTX], 5);
	ck_assert_int_eq(im.st.unknown_timestamps, 1); /* the range still open */
	n = read_events(im.t, CS_EV_NVTX);
	ck_assert_int_eq(n.n, 5);
	for (int i = 0; i < n.n; i++) {
		const cs_nvtx *x = &n.v[i].u.nvtx;

		ck_assert_int_eq(x->pid, PID_A);
		ck_assert_ptr_null(x->domain);
		ck_assert_int_eq(x->domain_id, CS_ID_NONE);
		if (!strcmp(x->text, "step")) {
			ck_assert_int_eq(x->type, CS_NVTX_PUSHPOP);
			ck_assert_int_eq(x->depth, 0);
			ck_assert_int_eq(x->start, 100);
			ck_assert_int_eq(x->end, 400);
			ck_assert_int_eq(x->tid, 10);
			ck_assert_uint_eq(x->color, 0xff00ff00u);
		} else if (!strcmp(x->text, "forward")) {
			ck_assert_int_eq(x->type, CS_NVTX_PUSHPOP);
			ck_assert_int_eq(x->depth, 1);
			ck_assert_int_eq(x->start, 200);
			ck_assert_int_eq(x->end, 300);
		} else if (!strcmp(x->text, "loader")) {
			ck_assert_int_eq(x->type, CS_NVTX_PUSHPOP);
			ck_assert_int_eq(x->depth, 0);
			ck_assert_int_eq(x->tid, 11);
			ck_assert_int_eq(x->start, 110);
			ck_assert_int_eq(x->end, CS_TS_UNKNOWN);
		} else if (!strcmp(x->text, "io")) {
			ck_assert_int_eq(x->type, CS_NVTX_STARTEND);
			ck_assert_int_eq(x->start, 250);
			ck_assert_int_eq(x->end, 500);
			ck_assert_int_eq(x->tid, 10);
			ck_assert_int_eq(x->end_tid, 12);
			ck_assert_int_eq(x->range_id, 99);
		} else {
			ck_assert_str_eq(x->text, "checkpoint");
			ck_assert_int_eq(x->type, CS_NVTX_MARK);
			ck_assert_int_eq(x->start, 350);
			ck_assert_int_eq(x->end, 350);
		}
		seen++;
	}
	ck_assert_int_eq(seen, 5);
	imported_close(&im);
}
END_TEST

START_TEST(test_sync_record_and_api_waits)
{
	char *dir = tu_tmpdir();
	struct spool s;
	struct imported im;
	struct events y, a;
	const cs_sync *x;

	sp_begin(&s, PID_A, 0);
	sp_string(&s, 1, "cudaStreamSynchronize");
	sp_kernel(&s, 5, T(100), T(200), 0); /* gives context 1 its device */
	/* a wait with its CUPTI record: one row, with the call's id and the record's stream */
	{
		struct api_args w = {.tid = 31,
				     .corr = 20,
				     .cls = CS_APICLASS_WAIT_STREAM,
				     .start = T(1000),
				     .end = T(5000),
				     .cbid = 131,
				     .name_sid = 1};

		sp_api(&s, &w);
	}
	sp_sync(&s, 20, CS_SYNC_STREAM_SYNCHRONIZE, T(1010), T(4990), 7, UINT32_MAX);
	/* the CUPTI record before the call's */
	sp_sync(&s, 21, CS_SYNC_EVENT_SYNCHRONIZE, T(6010), T(6990), UINT32_MAX, 3);
	sp_call(&s, 21, CS_APICLASS_WAIT_EVENT, T(6000), T(7000), 133);
	/* waits with no CUPTI record: rows from the calls */
	sp_call(&s, 22, CS_APICLASS_WAIT_DEVICE, T(8000), T(9000), 165);
	sp_call(&s, 23, CS_APICLASS_QUERY_EVENT, T(9100), T(9110), 134);
	sp_call(&s, 24, CS_APICLASS_STREAM_WAIT_EVENT, T(9200), T(9210), 147);
	/* a CUPTI record with no call */
	sp_sync(&s, 25, CS_SYNC_CONTEXT_SYNCHRONIZE, T(9300), T(9400), UINT32_MAX, UINT32_MAX);
	free(sp_save(&s, dir, "4242.cuspool"));

	import_dir(&im, dir, NULL);
	ck_assert_int_eq(im.st.counts[CS_EV_SYNC], 6);
	ck_assert_int_eq(im.st.counts[CS_EV_API], 5); /* waits are rows of their own too */
	y = read_events(im.t, CS_EV_SYNC);
	ck_assert_int_eq(y.n, 6);

	x = &find_one(&y, 0, 20)->u.sync;
	ck_assert_int_eq(x->type, CS_SYNC_STREAM_SYNCHRONIZE);
	ck_assert_int_eq(x->start, 1010);
	ck_assert_int_eq(x->end, 4990);
	ck_assert_int_eq(x->stream_id, 7);
	ck_assert_int_eq(x->event_id, CS_ID_NONE);
	ck_assert_int_eq(x->cbid, 131);
	ck_assert_int_eq(x->api_kind, CS_API_RUNTIME);
	ck_assert_int_eq(x->tid, 31);
	ck_assert_int_eq(x->device_id, 0);
	ck_assert_int_eq(x->context_id, 1);

	x = &find_one(&y, 0, 21)->u.sync;
	ck_assert_int_eq(x->type, CS_SYNC_EVENT_SYNCHRONIZE);
	ck_assert_int_eq(x->event_id, 3);
	ck_assert_int_eq(x->stream_id, CS_ID_NONE);
	ck_assert_int_eq(x->cbid, 133);

	x = &find_one(&y, 0, 22)->u.sync;
	ck_assert_int_eq(x->type, CS_SYNC_CONTEXT_SYNCHRONIZE);
	ck_assert_int_eq(x->start, 8000);
	ck_assert_int_eq(x->end, 9000);
	ck_assert_int_eq(x->cbid, 165);
	ck_assert_int_eq(x->tid, TID);
	ck_assert(cs_sync_type_is_host_wait(x->type));

	x = &find_one(&y, 0, 23)->u.sync;
	ck_assert_int_eq(x->type, CS_SYNC_EVENT_QUERY);
	ck_assert(!cs_sync_type_is_host_wait(x->type));
	x = &find_one(&y, 0, 24)->u.sync;
	ck_assert_int_eq(x->type, CS_SYNC_STREAM_WAIT_EVENT);
	ck_assert(!cs_sync_type_is_host_wait(x->type));

	x = &find_one(&y, 0, 25)->u.sync;
	ck_assert_int_eq(x->type, CS_SYNC_CONTEXT_SYNCHRONIZE);
	ck_assert_int_eq(x->cbid, CS_ID_NONE);

	a = read_events(im.t, CS_EV_API);
	ck_assert_str_eq(find_one(&a, 0, 20)->u.api.name, "cudaStreamSynchronize");
	imported_close(&im);
}
END_TEST

START_TEST(test_sync_memcpy)
{
	char *dir = tu_tmpdir();
	struct spool s;
	struct imported im;
	struct events y, m;
	const cs_sync *x;
	const cs_memcpy *c;

	sp_begin(&s, PID_A, 0);
	sp_call(&s, 40, CS_APICLASS_MEMCPY_SYNC, T(1000), T(9000), 31);
	sp_memcpy(&s, 40, T(8000), T(8900), CS_COPY_DTOH, 0, 4096);
	/* the copy's record first this time */
	sp_memcpy(&s, 41, T(10500), T(10900), CS_COPY_HTOD, 0, 4096);
	sp_call(&s, 41, CS_APICLASS_MEMCPY_SYNC, T(10000), T(11000), 31);
	/* a device-to-device copy makes no host wait */
	sp_call(&s, 42, CS_APICLASS_MEMCPY_SYNC, T(12000), T(12100), 31);
	sp_memcpy(&s, 42, T(12050), T(12090), CS_COPY_DTOD, 0, 4096);
	free(sp_save(&s, dir, "4242.cuspool"));

	import_dir(&im, dir, NULL);
	ck_assert_int_eq(im.st.counts[CS_EV_MEMCPY], 3);
	ck_assert_int_eq(im.st.counts[CS_EV_SYNC], 2);
	ck_assert_int_eq(im.st.counts[CS_EV_API], 3);
	y = read_events(im.t, CS_EV_SYNC);
	x = &find_one(&y, 0, 40)->u.sync;
	ck_assert_int_eq(x->type, CS_SYNC_MEMCPY);
	ck_assert(cs_sync_type_is_host_wait(x->type));
	ck_assert_int_eq(x->start, 1000);
	ck_assert_int_eq(x->end, 9000);
	ck_assert_int_eq(x->cbid, 31);
	ck_assert_int_eq(x->tid, TID);
	ck_assert_int_eq(x->stream_id, 7);
	x = &find_one(&y, 0, 41)->u.sync;
	ck_assert_int_eq(x->type, CS_SYNC_MEMCPY);
	ck_assert_int_eq(x->start, 10000);

	m = read_events(im.t, CS_EV_MEMCPY);
	c = &find_one(&m, 0, 40)->u.memcpy;
	ck_assert_int_eq(c->is_async, 0);
	ck_assert_int_eq(c->launch_start, 1000);
	ck_assert_int_eq(c->launch_end, 9000);
	ck_assert_int_eq(c->launch_tid, TID);
	imported_close(&im);
}
END_TEST

START_TEST(test_memory_rows)
{
	char *dir = tu_tmpdir();
	struct spool s;
	struct imported im;
	struct events mem;
	const cs_memory *x;
	int vmm = 0;

	sp_begin(&s, PID_A, 0);
	/* a failed cudaMalloc: only the call shows it */
	{
		struct api_args f = {.corr = 60,
				     .cls = CS_APICLASS_ALLOC,
				     .start = T(100),
				     .end = T(200),
				     .cbid = 20,
				     .result = 2,
				     .bytes = 1ull << 40};

		sp_api(&s, &f);
	}
	/* a successful one: the MEMORY2 record, with the call's id */
	{
		struct api_args ok = {.tid = 44,
				      .corr = 61,
				      .cls = CS_APICLASS_ALLOC,
				      .start = T(300),
				      .end = T(400),
				      .cbid = 20,
				      .address = 0x7f0000000000ull,
				      .bytes = 1 << 20};

		sp_api(&s, &ok);
	}
	sp_memory(&s, 61, 1, T(350), 0x7f0000000000ull, 1 << 20);
	sp_memory(&s, 62, 2, T(500), 0x7f0000000000ull, 1 << 20); /* a free with no call */
	/* VMM: create, map, unmap, release */
	{
		struct api_args c = {.corr = 70,
				     .cls = CS_APICLASS_VMM_CREATE,
				     .start = T(600),
				     .end = T(610),
				     .cbid = 500,
				     .domain = CS_API_DRIVER,
				     .address = 0xabc,
				     .bytes = 2 << 20};
		struct api_args mp = {.corr = 71,
				      .cls = CS_APICLASS_VMM_MAP,
				      .start = T(620),
				      .end = T(630),
				      .cbid = 501,
				      .domain = CS_API_DRIVER,
				      .address = 0x7e0000000000ull,
				      .bytes = 2 << 20};
		struct api_args um = {.corr = 72,
				      .cls = CS_APICLASS_VMM_UNMAP,
				      .start = T(640),
				      .end = T(650),
				      .cbid = 502,
				      .domain = CS_API_DRIVER,
				      .address = 0x7e0000000000ull,
				      .bytes = 2 << 20};
		struct api_args rl = {.corr = 73,
				      .cls = CS_APICLASS_VMM_RELEASE,
				      .start = T(660),
				      .end = T(670),
				      .cbid = 503,
				      .domain = CS_API_DRIVER,
				      .address = 0xabc};

		sp_api(&s, &c);
		sp_api(&s, &mp);
		sp_api(&s, &um);
		sp_api(&s, &rl);
	}
	free(sp_save(&s, dir, "4242.cuspool"));

	import_dir(&im, dir, NULL);
	ck_assert_int_eq(im.st.counts[CS_EV_MEMORY], 7);
	ck_assert_int_eq(im.st.counts[CS_EV_API], 6);
	mem = read_events(im.t, CS_EV_MEMORY);
	ck_assert_int_eq(mem.n, 7);

	x = &find_one(&mem, 0, 60)->u.memory;
	ck_assert_int_eq(x->op, CS_MEMOP_ALLOC);
	ck_assert_int_eq(x->result, 2);
	ck_assert_int_eq(x->bytes, (int64_t)(1ull << 40));
	ck_assert_int_eq(x->cbid, 20);
	ck_assert_int_eq(x->is_vmm, 0);
	ck_assert_int_eq(x->start, 100);

	x = &find_one(&mem, 0, 61)->u.memory;
	ck_assert_int_eq(x->op, CS_MEMOP_ALLOC);
	ck_assert_int_eq(x->result, 0);
	ck_assert_int_eq(x->cbid, 20);
	ck_assert_int_eq(x->tid, 44);
	ck_assert_int_eq(x->start, 350);
	ck_assert_int_eq(x->bytes, 1 << 20);
	ck_assert_int_eq(x->device_id, 0);
	ck_assert_int_eq(x->stream_id, CS_ID_NONE);

	x = &find_one(&mem, 0, 62)->u.memory;
	ck_assert_int_eq(x->op, CS_MEMOP_FREE);
	ck_assert_int_eq(x->cbid, CS_ID_NONE);

	for (int i = 0; i < mem.n; i++) {
		x = &mem.v[i].u.memory;
		if (!x->is_vmm)
			continue;
		vmm++;
		switch (x->correlation_id) {
		case 70:
			ck_assert_int_eq(x->op, CS_MEMOP_VMM_CREATE);
			ck_assert_uint_eq(x->address, 0xabc);
			ck_assert_int_eq(x->bytes, 2 << 20);
			break;
		case 71:
			ck_assert_int_eq(x->op, CS_MEMOP_VMM_MAP);
			ck_assert_int_eq(x->bytes, 2 << 20);
			break;
		case 72:
			ck_assert_int_eq(x->op, CS_MEMOP_VMM_UNMAP);
			ck_assert_uint_eq(x->address, 0x7e0000000000ull);
			ck_assert_int_eq(x->bytes, 2 << 20);
			break;
		case 73:
			ck_assert_int_eq(x->op, CS_MEMOP_VMM_RELEASE);
			ck_assert_uint_eq(x->address, 0xabc);
			ck_assert_int_eq(x->bytes, 2 << 20); /* from the create of the handle */
			ck_assert_int_eq(x->cbid, 503);
			break;
		default:
			ck_abort_msg("unexpected vmm row %llu",
				     (unsigned long long)x->correlation_id);
		}
	}
	ck_assert_int_eq(vmm, 4);
	imported_close(&im);
}
END_TEST

START_TEST(test_stacks)
{
	char *dir = tu_tmpdir();
	struct spool s;
	struct imported im;
	struct events k, y;
	static const uint64_t pcs[] = {0x401000, 0x402000, 0x403000};
	const cs_frame *frames;
	cs_error err = {0, ""};
	int64_t sid;
	int n;

	sp_begin(&s, PID_A, 0);
	sp_stack(&s, 3, pcs, 3);
	{
		struct api_args l = {.corr = 80,
				     .cls = CS_APICLASS_LAUNCH,
				     .start = T(100),
				     .end = T(200),
				     .cbid = 211,
				     .stack_id = 3};
		struct api_args w = {.corr = 81,
				     .cls = CS_APICLASS_WAIT_STREAM,
				     .start = T(400),
				     .end = T(600),
				     .cbid = 131,
				     .stack_id = 3};

		sp_api(&s, &l);
		sp_kernel(&s, 80, T(300), T(350), 0);
		sp_api(&s, &w);
		sp_sync(&s, 81, CS_SYNC_STREAM_SYNCHRONIZE, T(410), T(590), 7, UINT32_MAX);
	}
	free(sp_save(&s, dir, "4242.cuspool"));

	import_dir(&im, dir, NULL);
	k = read_events(im.t, CS_EV_KERNEL);
	y = read_events(im.t, CS_EV_SYNC);
	sid = k.v[0].u.kernel.stack_id;
	ck_assert_int_ge(sid, 0);
	ck_assert_int_eq(y.v[0].u.sync.stack_id, sid);
	ck_assert_int_eq(cs_trace_get_stack(im.t, sid, &frames, &n, &err), 0);
	ck_assert_int_eq(n, 3);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(frames[i].kind, 1);
		ck_assert_uint_eq(frames[i].pc, pcs[i]);
		ck_assert_ptr_null(frames[i].symbol);
	}
	imported_close(&im);
}
END_TEST

/* A function of this binary for the stacks to point into. */
/* The lines of import_marker_function, for the file and line of a frame in it (with libdw). */
static const int marker_first_line = __LINE__ + 1;
__attribute__((noinline)) static int import_marker_function(int x)
{
	static volatile int sink;

	sink += x;
	return sink * 7;
}
static const int marker_last_line = __LINE__ - 1;

/* A mapping of this process, as /proc/self/maps lists it. */
struct self_map {
	uint64_t start, end, offset;
	char path[PATH_MAX];
};

/*
 * The file mappings of this process, each as a STRING and a MODULE record (string ids from
 * *next_sid on), as the injection library writes them; *hit gets the one that holds pc.
 */
static void sp_self_modules(struct spool *s, uint32_t *next_sid, uint64_t pc, struct self_map *hit)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[PATH_MAX + 256];

	ck_assert_ptr_nonnull(f);
	memset(hit, 0, sizeof(*hit));
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off;
		char *path;
		int n = 0;

		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &start, &end, &off, &n) < 3 || !n)
			continue;
		path = line + n;
		path[strcspn(path, "\n")] = '\0';
		if (path[0] != '/')
			continue;
		sp_string(s, *next_sid, path);
		sp_module(s, start, end, off, (*next_sid)++);
		if (pc >= start && pc < end) {
			hit->start = start;
			hit->end = end;
			hit->offset = off;
			snprintf(hit->path, sizeof(hit->path), "%s", path);
		}
	}
	fclose(f);
	ck_assert_msg(hit->path[0], "no mapping holds %#llx", (unsigned long long)pc);
}

static void check_native(const cs_frame *f, uint64_t pc, const char *module, const char *symbol,
			 uint64_t offset)
{
	ck_assert_int_eq(f->kind, 1);
	ck_assert_uint_eq(f->pc, pc);
	if (module)
		ck_assert_str_eq(f->module, module);
	else
		ck_assert_ptr_null(f->module);
	if (symbol)
		ck_assert_str_eq(f->symbol, symbol);
	else
		ck_assert_ptr_null(f->symbol);
	ck_assert_uint_eq(f->offset, offset);
#ifdef CUSCOPE_HAVE_LIBDW
	/* this test is built with -g: a frame in its marker function has its file and line */
	if (symbol && !strcmp(symbol, "import_marker_function")) {
		ck_assert_msg(f->file && strstr(f->file, "test_import.c"), "%s",
			      f->file ? f->file : "(no file)");
		ck_assert_msg(f->line >= marker_first_line && f->line <= marker_last_line,
			      "line %d not in %d..%d", f->line, marker_first_line,
			      marker_last_line);
		return;
	}
#endif
	ck_assert_ptr_null(f->file);
	ck_assert_int_eq(f->line, 0);
}

static void check_python(const cs_frame *f, const char *file, const char *function, int line)
{
	ck_assert_int_eq(f->kind, 2);
	ck_assert_uint_eq(f->pc, 0);
	ck_assert_ptr_null(f->module);
	ck_assert_str_eq(f->file, file);
	ck_assert_str_eq(f->symbol, function);
	ck_assert_int_eq(f->line, line);
}

START_TEST(test_stack_symbols)
{
	char *dir = tu_tmpdir();
	char exe[PATH_MAX];
	struct spool s;
	struct imported im;
	struct events k, y, m, a;
	struct self_map hit;
	const cs_frame *frames;
	cs_error err = {0, ""};
	uint64_t pcs[2];
	struct cs_rec_pyframe py[2];
	int64_t sid_a, sid_b1, sid_b2;
	uint32_t next_sid = 100;
	ssize_t len;
	int n;

	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ck_assert_int_gt(len, 0);
	exe[len] = '\0';
	ck_assert_int_ne(import_marker_function(1), -1);
	/* a return address 5 bytes into the marker, and one in no mapping */
	pcs[0] = (uint64_t)(uintptr_t)&import_marker_function + 5;
	pcs[1] = 0x10;
	memset(py, 0, sizeof(py));
	py[0].file_sid = 1;
	py[0].func_sid = 2;
	py[0].line = 42;
	py[1].file_sid = 1;
	py[1].func_sid = 3;
	py[1].line = -1;

	/* process A: its real mappings, one stack used by a launch, a wait and an allocation */
	sp_begin(&s, PID_A, 0);
	sp_string(&s, 1, "train.py");
	sp_string(&s, 2, "Trainer.step");
	sp_string(&s, 3, "<module>");
	sp_self_modules(&s, &next_sid, pcs[0], &hit);
	ck_assert_str_eq(hit.path, exe);
	sp_stack_py(&s, 5, pcs, 2, py, 2);
	{
		struct api_args l = {.corr = 90,
				     .cls = CS_APICLASS_LAUNCH,
				     .start = T(100),
				     .end = T(200),
				     .cbid = 211,
				     .stack_id = 5};
		struct api_args w = {.corr = 91,
				     .cls = CS_APICLASS_WAIT_STREAM,
				     .start = T(400),
				     .end = T(600),
				     .cbid = 131,
				     .stack_id = 5};
		struct api_args al = {.corr = 92,
				      .cls = CS_APICLASS_ALLOC,
				      .start = T(700),
				      .end = T(800),
				      .cbid = 20,
				      .address = 0x7000000,
				      .bytes = 4096,
				      .stack_id = 5};

		sp_api(&s, &l);
		sp_kernel(&s, 90, T(300), T(350), 0);
		sp_api(&s, &w);
		sp_sync(&s, 91, CS_SYNC_STREAM_SYNCHRONIZE, T(410), T(590), 7, UINT32_MAX);
		sp_memory(&s, 92, 1, T(750), 0x7000000, 4096);
		sp_api(&s, &al);
	}
	free(sp_save(&s, dir, "4242.cuspool"));

	/*
	 * process B: the same pcs, first in a library that is not on this host, then (the range
	 * mapped again) in this binary
	 */
	sp_begin(&s, PID_B, 0);
	sp_string(&s, 1, "train.py");
	sp_string(&s, 2, "Trainer.step");
	sp_string(&s, 3, "<module>");
	sp_string(&s, 4, "/nonexistent/libother.so");
	sp_string(&s, 6, exe);
	sp_module(&s, hit.start, hit.end, hit.offset, 4);
	sp_stack_py(&s, 1, pcs, 2, py, 2);
	sp_module(&s, hit.start, hit.end, hit.offset, 6);
	sp_stack_py(&s, 2, pcs, 2, py, 2);
	{
		struct api_args w1 = {.corr = 10,
				      .cls = CS_APICLASS_WAIT_DEVICE,
				      .start = T(100),
				      .end = T(200),
				      .cbid = 165,
				      .stack_id = 1};
		struct api_args w2 = {.corr = 11,
				      .cls = CS_APICLASS_WAIT_DEVICE,
				      .start = T(300),
				      .end = T(400),
				      .cbid = 165,
				      .stack_id = 2};

		sp_api(&s, &w1);
		sp_api(&s, &w2);
	}
	free(sp_save(&s, dir, "5353.cuspool"));

	import_dir(&im, dir, NULL);
	k = read_events(im.t, CS_EV_KERNEL);
	y = read_events(im.t, CS_EV_SYNC);
	m = read_events(im.t, CS_EV_MEMORY);
	a = read_events(im.t, CS_EV_API);
	/* every row made from a call with the stack carries it */
	sid_a = find_one(&k, PID_A, 90)->u.kernel.stack_id;
	ck_assert_int_ge(sid_a, 0);
	ck_assert_int_eq(find_one(&y, PID_A, 91)->u.sync.stack_id, sid_a);
	ck_assert_int_eq(find_one(&a, PID_A, 91)->u.api.stack_id, sid_a);
	ck_assert_int_eq(find_one(&m, PID_A, 92)->u.memory.stack_id, sid_a);
	ck_assert_int_eq(find_one(&a, PID_A, 92)->u.api.stack_id, sid_a);

	/* native frames innermost first, then Python frames innermost first */
	ck_assert_int_eq(cs_trace_get_stack(im.t, sid_a, &frames, &n, &err), 0);
	ck_assert_int_eq(n, 4);
	check_native(&frames[0], pcs[0], exe, "import_marker_function", 5);
	check_native(&frames[1], pcs[1], NULL, NULL, 0);
	check_python(&frames[2], "train.py", "Trainer.step", 42);
	check_python(&frames[3], "train.py", "<module>", 0);

	/* the same pcs in another file are other frames; mapped again, the same as in A */
	sid_b1 = find_one(&y, PID_B, 10)->u.sync.stack_id;
	sid_b2 = find_one(&y, PID_B, 11)->u.sync.stack_id;
	ck_assert_int_ne(sid_b1, sid_a);
	ck_assert_int_eq(sid_b2, sid_a);
	ck_assert_int_eq(cs_trace_get_stack(im.t, sid_b1, &frames, &n, &err), 0);
	ck_assert_int_eq(n, 4);
	check_native(&frames[0], pcs[0], "/nonexistent/libother.so", NULL,
		     pcs[0] - hit.start + hit.offset);
	check_python(&frames[3], "train.py", "<module>", 0);
	ck_assert_ptr_nonnull(strstr(cs_trace_meta(im.t, "import_stats"), "\"native_pcs\":6,"));
	ck_assert_ptr_nonnull(
		strstr(cs_trace_meta(im.t, "import_stats"), "\"unsymbolized_pcs\":4,"));
	ck_assert_ptr_nonnull(
		strstr(cs_trace_meta(im.t, "import_stats"), "\"unreadable_module_files\":1}"));
	imported_close(&im);
}
END_TEST

/* Stack records that do not add up are skipped; Python names never defined are left empty. */
/*
 * Python frames borrowed from the main thread waiting in backward(): a note frame (kind 3) between
 * the native and the Python frames, and a stack apart from the same frames not borrowed. A flag
 * without Python frames adds no note.
 */
START_TEST(test_stack_borrowed)
{
	char *dir = tu_tmpdir();
	struct spool s;
	struct imported im;
	struct events y;
	static const uint64_t pcs[] = {0x10, 0x20};
	struct cs_rec_pyframe py[2];
	const cs_frame *frames;
	cs_error err = {0, ""};
	int64_t sid[3];
	int n;

	memset(py, 0, sizeof(py));
	py[0].file_sid = 1;
	py[0].func_sid = 2;
	py[0].line = 5;
	py[1].file_sid = 3;
	py[1].func_sid = 4;
	py[1].line = 88;
	sp_begin(&s, PID_A, 0);
	sp_string(&s, 1, "/venv/lib/python3.12/site-packages/torch/autograd/graph.py");
	sp_string(&s, 2, "_engine_run_backward");
	sp_string(&s, 3, "/home/user/train.py");
	sp_string(&s, 4, "train_step");
	sp_stack_flags(&s, 1, pcs, 2, py, 2, CS_STACK_PY_BORROWED);
	sp_stack_flags(&s, 2, pcs, 2, py, 2, 0);
	sp_stack_flags(&s, 3, pcs, 2, NULL, 0, CS_STACK_PY_BORROWED);
	for (uint32_t i = 0; i < 3; i++) {
		struct api_args w = {.corr = 100 + i,
				     .cls = CS_APICLASS_WAIT_STREAM,
				     .start = T(100 + 1000 * i),
				     .end = T(600 + 1000 * i),
				     .cbid = 131,
				     .stack_id = 1 + i};

		sp_api(&s, &w);
	}
	free(sp_save(&s, dir, "4242.cuspool"));

	import_dir(&im, dir, NULL);
	y = read_events(im.t, CS_EV_SYNC);
	ck_assert_int_eq(y.n, 3);
	for (int i = 0; i < 3; i++) {
		sid[i] = y.v[i].u.sync.stack_id;
		ck_assert_int_ge(sid[i], 0);
	}
	ck_assert_int_ne(sid[0], sid[1]);

	ck_assert_int_eq(cs_trace_get_stack(im.t, sid[0], &frames, &n, &err), 0);
	ck_assert_int_eq(n, 5);
	ck_assert_int_eq(frames[0].kind, 1);
	ck_assert_int_eq(frames[1].kind, 1);
	ck_assert_int_eq(frames[2].kind, 3);
	ck_assert_uint_eq(frames[2].pc, 0);
	ck_assert_ptr_null(frames[2].module);
	ck_assert_ptr_null(frames[2].file);
	ck_assert_ptr_nonnull(strstr(frames[2].symbol, "autograd engine thread"));
	check_python(&frames[3], "/venv/lib/python3.12/site-packages/torch/autograd/graph.py",
		     "_engine_run_backward", 5);
	check_python(&frames[4], "/home/user/train.py", "train_step", 88);

	ck_assert_int_eq(cs_trace_get_stack(im.t, sid[1], &frames, &n, &err), 0);
	ck_assert_int_eq(n, 4);
	check_python(&frames[2], "/venv/lib/python3.12/site-packages/torch/autograd/graph.py",
		     "_engine_run_backward", 5);

	ck_assert_int_eq(cs_trace_get_stack(im.t, sid[2], &frames, &n, &err), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(frames[0].kind, 1);
	ck_assert_int_eq(frames[1].kind, 1);
	imported_close(&im);
}
END_TEST

START_TEST(test_stack_bad_records)
{
	char *dir = tu_tmpdir();
	struct spool s;
	struct imported im;
	struct events y;
	const cs_frame *frames;
	cs_error err = {0, ""};
	static const uint64_t pcs[] = {0x401000};
	struct cs_rec_pyframe py = {.file_sid = 77, .func_sid = 78, .line = 3};
	int n;

	sp_begin(&s, PID_A, 0);
	{
		/* py_depth says one Python frame, but the record holds only the pc */
		struct cs_rec_stack r;

		memset(&r, 0, sizeof(r));
		r.id = 1;
		r.depth = 1;
		r.py_depth = 1;
		sp_rec(&s, CS_REC_STACK, TID, &r, sizeof(r), pcs, sizeof(pcs));
	}
	sp_stack_py(&s, 2, pcs, 0, &py, 1);
	sp_module(&s, 0x400000, 0x500000, 0, 99); /* a path never defined */
	{
		struct api_args w1 = {.corr = 10,
				      .cls = CS_APICLASS_WAIT_DEVICE,
				      .start = T(100),
				      .end = T(200),
				      .stack_id = 1};
		struct api_args w2 = {.corr = 11,
				      .cls = CS_APICLASS_WAIT_DEVICE,
				      .start = T(300),
				      .end = T(400),
				      .stack_id = 2};

		sp_api(&s, &w1);
		sp_api(&s, &w2);
	}
	free(sp_save(&s, dir, "4242.cuspool"));
	import_dir(&im, dir, NULL);
	y = read_events(im.t, CS_EV_SYNC);
	ck_assert_int_eq(find_one(&y, PID_A, 10)->u.sync.stack_id, CS_ID_NONE);
	ck_assert_int_eq(cs_trace_get_stack(im.t, find_one(&y, PID_A, 11)->u.sync.stack_id, &frames,
					    &n, &err),
			 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(frames[0].kind, 2);
	ck_assert_ptr_null(frames[0].file);
	ck_assert_ptr_null(frames[0].symbol);
	ck_assert_int_eq(frames[0].line, 3);
	ck_assert_ptr_nonnull(strstr(cs_trace_meta(im.t, "import_stats"), "\"bad_records\":1,"));
	/* stack 1 (never defined), the two Python names, the module path */
	ck_assert_ptr_nonnull(strstr(cs_trace_meta(im.t, "import_stats"), "\"bad_references\":4,"));
	imported_close(&im);
}
END_TEST

/* Ten kernels (each with its launch) of process pid, string id name_sid for "shared_kernel". */
static void build_small(struct spool *s, uint32_t pid, uint32_t name_sid, uint64_t offset)
{
	sp_begin(s, pid, offset);
	sp_string(s, name_sid, "shared_kernel");
	for (uint32_t i = 1; i <= 10; i++) {
		sp_call(s, i, CS_APICLASS_LAUNCH, T(offset + i * 1000), T(offset + i * 1000 + 10),
			211);
		sp_kernel(s, i, T(offset + i * 1000 + 20), T(offset + i * 1000 + 30), name_sid);
	}
}

START_TEST(test_truncated_file)
{
	char *dir = tu_tmpdir();
	struct spool s;
	struct imported im;
	size_t cut;

	/* cut in the middle of the last kernel record */
	build_small(&s, PID_A, 1, 0);
	cut = s.len - sizeof(struct cs_rec_kernel) / 2;
	s.len = cut;
	free(sp_save(&s, dir, "4242.cuspool"));
	import_dir(&im, dir, NULL);
	ck_assert_int_eq(im.st.truncated_files, 1);
	ck_assert_int_eq(im.st.counts[CS_EV_KERNEL], 9);
	ck_assert_int_eq(im.st.processes, 1);
	imported_close(&im);

	/* zeros where records should be (a file cut short by a crash) */
	dir = tu_tmpdir();
	build_small(&s, PID_A, 1, 0);
	{
		static const char zeros[64];

		sp_raw(&s, zeros, sizeof(zeros));
	}
	free(sp_save(&s, dir, "4242.cuspool"));
	import_dir(&im, dir, NULL);
	ck_assert_int_eq(im.st.truncated_files, 1);
	ck_assert_int_eq(im.st.counts[CS_EV_KERNEL], 10);
	imported_close(&im);

	/* a record of a newer version is skipped by its size; a whole file is not truncated */
	dir = tu_tmpdir();
	sp_begin(&s, PID_A, 0);
	{
		unsigned char rec[40];

		memset(rec, 0xee, sizeof(rec));
		sp_rec(&s, 99, 0, rec, sizeof(rec), NULL, 0);
	}
	sp_kernel(&s, 1, T(10), T(20), 0);
	free(sp_save(&s, dir, "4242.cuspool"));
	import_dir(&im, dir, NULL);
	ck_assert_int_eq(im.st.truncated_files, 0);
	ck_assert_int_eq(im.st.counts[CS_EV_KERNEL], 1);
	imported_close(&im);
}
END_TEST

START_TEST(test_two_processes)
{
	char *dir = tu_tmpdir();
	struct spool s;
	struct imported im;
	struct events k;
	struct proc_rows procs = {0};
	cs_error err = {0, ""};
	int64_t name_id = -1;

	/* same correlation ids, different string ids for the same name; B starts 1 ms after A */
	build_small(&s, PID_A, 1, 0);
	free(sp_save(&s, dir, "4242.cuspool"));
	build_small(&s, PID_B, 7, 1000000);
	free(sp_save(&s, dir, "5353.cuspool"));

	import_dir(&im, dir, NULL);
	ck_assert_int_eq(im.st.files, 2);
	ck_assert_int_eq(im.st.processes, 2);
	ck_assert_int_eq(im.st.counts[CS_EV_KERNEL], 20);
	ck_assert_str_eq(cs_trace_meta(im.t, "pids"), "4242,5353");
	ck_assert_str_eq(cs_trace_meta(im.t, "time_base_ns"), "1000000000");
	k = read_events(im.t, CS_EV_KERNEL);
	ck_assert_int_eq(k.n, 20);
	for (int i = 0; i < k.n; i++) {
		const cs_kernel *x = &k.v[i].u.kernel;
		int64_t offset = x->pid == PID_B ? 1000000 : 0;

		ck_assert(x->pid == PID_A || x->pid == PID_B);
		ck_assert_int_eq(x->launch_start, offset + (int64_t)x->correlation_id * 1000);
		ck_assert_int_eq(x->start, offset + (int64_t)x->correlation_id * 1000 + 20);
		ck_assert_str_eq(x->name, "shared_kernel");
		if (name_id < 0)
			name_id = x->name_id;
		ck_assert_int_eq(x->name_id, name_id);
	}
	ck_assert_int_eq(cs_trace_each_process(im.t, collect_process, &procs, &err), 0);
	ck_assert_int_eq(procs.n, 2);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(procs.p[i].start, procs.p[i].pid == PID_B ? 1000000 : 0);
	imported_close(&im);
}
END_TEST

/* Each process's CS_REC_CALL_TAILS becomes its entry of META call_tails, which
 * cs_call_tails_mean() reads back as the mean per call; a process without one has no entry, and a
 * trace without any has no key. */
START_TEST(test_call_tails)
{
	static const uint64_t calls[CS_TAIL_KINDS] = {10, 4, 0},
			      ns[CS_TAIL_KINDS] = {25000, 36000, 7};
	char *dir = tu_tmpdir();
	struct spool s;
	struct imported im;
	double mean[CS_CALL_TAIL_KINDS];

	build_small(&s, PID_A, 1, 0);
	sp_call_tails(&s, calls, ns);
	sp_end(&s, T(20000), 0, 0);
	free(sp_save(&s, dir, "4242.cuspool"));
	build_small(&s, PID_B, 7, 1000000);
	free(sp_save(&s, dir, "5353.cuspool"));
	import_dir(&im, dir, NULL);
	ck_assert_str_eq(cs_trace_meta(im.t, CS_META_CALL_TAILS),
			 "{\"4242\":{\"launch\":{\"calls\":10,\"ns\":25000},\"stack\":{\"calls\":4,"
			 "\"ns\":36000},\"other\":{\"calls\":0,\"ns\":7}}}");
	ck_assert_int_eq(cs_call_tails_mean(cs_trace_meta(im.t, CS_META_CALL_TAILS), PID_A, mean),
			 1);
	ck_assert_double_eq_tol(mean[CS_TAIL_LAUNCH], 2500, 1e-9);
	ck_assert_double_eq_tol(mean[CS_TAIL_STACK], 9000, 1e-9);
	ck_assert_double_eq_tol(mean[CS_TAIL_OTHER], 0, 1e-9); /* no calls: no mean */
	ck_assert_int_eq(cs_call_tails_mean(cs_trace_meta(im.t, CS_META_CALL_TAILS), PID_B, mean),
			 0);
	ck_assert_double_eq_tol(mean[CS_TAIL_LAUNCH], 0, 1e-9);
	imported_close(&im);

	dir = tu_tmpdir();
	build_small(&s, PID_A, 1, 0);
	free(sp_save(&s, dir, "4242.cuspool"));
	import_dir(&im, dir, NULL);
	ck_assert_ptr_null(cs_trace_meta(im.t, CS_META_CALL_TAILS));
	imported_close(&im);

	/* what the reader makes of values it did not write */
	ck_assert_int_eq(cs_call_tails_mean(NULL, 1, mean), 0);
	ck_assert_int_eq(cs_call_tails_mean("not json", 1, mean), 0);
	ck_assert_int_eq(cs_call_tails_mean("{\"1\":{\"launch\":{\"calls\":-2,\"ns\":5},"
					    "\"stack\":{\"calls\":2,\"ns\":\"x\"},"
					    "\"other\":{\"calls\":4,\"ns\":10}}}",
					    1, mean),
			 1);
	ck_assert_double_eq_tol(mean[0], 0, 1e-9);
	ck_assert_double_eq_tol(mean[1], 0, 1e-9);
	ck_assert_double_eq_tol(mean[2], 2.5, 1e-9);
	ck_assert_double_eq_tol(
		cs_launch_cost_own_code_ns(
			"{\"ns_per_launch\":900,\"added_wall_ns\":{\"cuscope_code\":118}}"),
		118, 1e-9);
	ck_assert_double_eq_tol(cs_launch_cost_own_code_ns("{\"ns_per_launch\":900}"), 0, 1e-9);
	/* what CUPTI adds to a wait: absent (older values), malformed or negative reads as 0 */
	{
		double copy = -1, sync = -1;

		cs_launch_cost_wait_ns("{\"ns_per_launch\":900,\"waits\":{\"copy\":{\"added_ns\":"
				       "4200.5},\"sync\":{\"added_ns\":-30}}}",
				       &copy, &sync);
		ck_assert_double_eq_tol(copy, 4200.5, 1e-9);
		ck_assert_double_eq_tol(sync, 0, 1e-9);
		cs_launch_cost_wait_ns("{\"ns_per_launch\":900}", &copy, &sync);
		ck_assert(copy == 0 && sync == 0);
		cs_launch_cost_wait_ns("[", &copy, &sync);
		ck_assert(copy == 0 && sync == 0);
		cs_launch_cost_wait_ns(NULL, &copy, &sync);
		ck_assert(copy == 0 && sync == 0);
	}
}
END_TEST

START_TEST(test_same_pid_merged_and_no_process_record)
{
	char *dir = tu_tmpdir();
	struct spool s;
	struct imported im;
	struct proc_rows procs = {0};
	cs_error err = {0, ""};

	/* a pid reused by the job: two files, one process row */
	build_small(&s, PID_A, 1, 0);
	free(sp_save(&s, dir, "4242.cuspool"));
	build_small(&s, PID_A, 1, 5000000);
	free(sp_save(&s, dir, "4242-1.cuspool"));
	/* a file with nothing but its header */
	sp_header(&s, PID_B, T(100), BASE_REAL + 100);
	free(sp_save(&s, dir, "5353.cuspool"));

	import_dir(&im, dir, NULL);
	ck_assert_int_eq(im.st.files, 3);
	ck_assert_int_eq(im.st.processes, 2);
	ck_assert_int_eq(im.st.counts[CS_EV_KERNEL], 20);
	ck_assert_int_eq(cs_trace_each_process(im.t, collect_process, &procs, &err), 0);
	ck_assert_int_eq(procs.n, 2);
	for (int i = 0; i < 2; i++) {
		if (procs.p[i].pid == PID_B) {
			ck_assert_int_eq(procs.p[i].used_cuda, 0);
			ck_assert_int_eq(procs.p[i].start, 100);
			ck_assert_int_eq(procs.p[i].end, CS_TS_UNKNOWN);
			ck_assert_int_eq(procs.p[i].exit_code, CS_ID_NONE);
		} else {
			ck_assert_int_eq(procs.p[i].pid, PID_A);
			ck_assert_int_eq(procs.p[i].used_cuda, 1);
			ck_assert_int_eq(procs.p[i].start, 0);
		}
	}
	imported_close(&im);
}
END_TEST

/* The header of a ring's file (main or segment): version CS_SPOOL_VERSION_RING. */
static void sp_ring_header(struct spool *s, uint64_t cupti_ns)
{
	memset(s, 0, sizeof(*s));
	sp_header(s, PID_A, cupti_ns, BASE_REAL + cupti_ns - BASE_CUPTI);
	((struct cs_spool_header *)s->buf)->version = CS_SPOOL_VERSION_RING;
}

/*
 * A ring's files, written by hand: the main file (definitions, a RING record that deleted segment
 * 1 and cut at T(5000) and correlation id 5), a segment 1 left behind (the process was killed
 * between the RING record and the unlink), segments 2 and 3, a link to segment 3 and names that
 * are not segments. One process, its segments from 2 on in order, as one stream: the events that
 * started before the window, those whose call did and the records that waited for such a call are
 * left out; the rest are joined to their calls across segments; time zero is the window's start.
 */
START_TEST(test_ring_files_read_as_one_stream)
{
	char *dir = tu_tmpdir(), *seg2, *seg3, *link3, *main_path, *out;
	const char *one[1];
	struct cs_rec_ring ring;
	struct imported im;
	struct events k;
	cs_import_stats st;
	cs_error err = {0, ""};
	struct spool s;
	const char *meta;

	sp_ring_header(&s, T(0));
	sp_string(&s, 1, "ring_kernel");
	sp_process(&s, PID_A, -1, "python train.py");
	sp_device(&s, 0, "NVIDIA H100");
	memset(&ring, 0, sizeof(ring));
	ring.budget_bytes = 1 << 20;
	ring.window_start = T(5000);
	ring.records_dropped = 10;
	ring.bytes_dropped = 1000;
	ring.segments_dropped = 1;
	ring.first_segment = 2;
	ring.last_corr = 5;
	sp_rec(&s, CS_REC_RING, 0, &ring, sizeof(ring), NULL, 0);
	main_path = sp_save(&s, dir, "4242.cuspool");

	sp_ring_header(&s, T(100)); /* deleted by the ring: not read */
	for (uint32_t c = 1; c <= 3; c++) {
		sp_call(&s, c, CS_APICLASS_LAUNCH, T(100 * c), T(100 * c + 50), 211);
		sp_kernel(&s, c, T(100 * c + 60), T(100 * c + 90), 1);
	}
	free(sp_save(&s, dir, "4242.1.cuseg"));

	sp_ring_header(&s, T(6000));
	sp_kernel(&s, 4, T(5500), T(5600), 1);			   /* its call was deleted */
	sp_call(&s, 6, CS_APICLASS_LAUNCH, T(4000), T(4100), 211); /* before the window */
	sp_kernel(&s, 6, T(6100), T(6200), 1);			   /* its call was left out */
	sp_kernel(&s, 10, T(6200), T(6300), 1);			   /* waits for a call left out */
	sp_call(&s, 10, CS_APICLASS_LAUNCH, T(4500), T(4600), 211);
	sp_kernel(&s, 8, T(7100), T(7200), 1); /* before its call: joined when it comes */
	sp_call(&s, 8, CS_APICLASS_LAUNCH, T(7000), T(7050), 211);
	sp_call(&s, 7, CS_APICLASS_LAUNCH, T(6500), T(6550), 211);
	seg2 = sp_save(&s, dir, "4242.2.cuseg");

	sp_ring_header(&s, T(8000));
	sp_kernel(&s, 7, T(8100), T(8200), 1); /* its call in the segment before */
	sp_call(&s, 9, CS_APICLASS_LAUNCH, T(8300), T(8350), 211);
	sp_kernel(&s, 9, T(8400), T(8500), 1);
	sp_end(&s, T(9000), 0, 0);
	seg3 = sp_save(&s, dir, "4242.3.cuseg");
	link3 = tu_path(dir, "4242.4.cuseg");
	ck_assert_int_eq(symlink(seg3, link3), 0);
	free(sp_save(&s, dir, "4242.x.cuseg"));	  /* not a segment's name */
	free(sp_save(&s, dir, "4242-1.5.cuseg")); /* a segment of a main file that is not there */

	import_dir(&im, dir, NULL);
	ck_assert_int_eq(im.st.files, 1);
	ck_assert_int_eq(im.st.processes, 1);
	k = read_events(im.t, CS_EV_KERNEL);
	ck_assert_int_eq(k.n, 3);
	for (uint32_t c = 7; c <= 9; c++)
		ck_assert_int_ne(find_one(&k, PID_A, c)->u.kernel.launch_start, CS_TS_UNKNOWN);
	ck_assert_int_eq(find_one(&k, PID_A, 8)->u.kernel.launch_start, 2000);
	ck_assert_str_eq(find_one(&k, PID_A, 9)->u.kernel.name, "ring_kernel");
	for (int i = 0; i < k.n; i++)
		free((char *)k.v[i].u.kernel.name);
	free(k.v);
	/* time zero is the window's start */
	ck_assert_str_eq(cs_trace_meta(im.t, "time_base_ns"), "1000005000");
	meta = cs_trace_meta(im.t, CS_META_RING);
	ck_assert_ptr_nonnull(meta);
	ck_assert_msg(strstr(meta,
			     "\"size_bytes\":1048576,\"duration_ns\":0,\"window_start_ns\":0,"
			     "\"window_end_ns\":3400,\"segments_dropped\":1,\"records_dropped\":10,"
			     "\"bytes_dropped\":1000,\"records_cut\":5,\"processes\":{\"4242\":{"),
		      "%s", meta);
	imported_close(&im);

	/* a segment named on its own means nothing without its main file */
	one[0] = seg2;
	out = tu_path(dir, "seg.db");
	ck_assert_int_eq(cs_import_files(one, 1, out, NULL, &st, &err), CS_ERR_INVALID);
	ck_assert_msg(strstr(err.msg, "a segment of a ring"), "%s", err.msg);
	ck_assert(!tu_file_exists(out));
	/* the main file named on its own brings its segments */
	one[0] = main_path;
	ck_assert_int_eq(cs_import_files(one, 1, out, NULL, &st, &err), 0);
	ck_assert_int_eq(st.counts[CS_EV_KERNEL], 3);
	free(out);
	free(main_path);
	free(seg2);
	free(seg3);
	free(link3);
}
END_TEST

START_TEST(test_bad_headers)
{
	char *dir = tu_tmpdir(), *bad, *out;
	struct spool s;
	struct imported im;
	cs_import_stats st;
	cs_error err = {0, ""};
	const char *one[1];
	int rc;

	build_small(&s, PID_A, 1, 0);
	free(sp_save(&s, dir, "4242.cuspool"));
	bad = tu_path(dir, "5353.cuspool");
	ck_assert_int_eq(tu_write_file(bad, "GARBAGE!GARBAGE!GARBAGE!GARBAGE!GARBAGE!", 40), 0);

	/* one good, one bad: imported with a warning */
	import_dir(&im, dir, NULL);
	ck_assert_int_eq(im.st.files, 1);
	ck_assert_int_eq(im.st.counts[CS_EV_KERNEL], 10);
	ck_assert_int_eq(im.err.code, 0);
	ck_assert_msg(strstr(im.err.msg, "5353.cuspool") &&
			      strstr(im.err.msg, "not a cuscope spool"),
		      "warning: %s", im.err.msg);
	ck_assert_ptr_nonnull(strstr(cs_trace_meta(im.t, "import_stats"), "\"skipped_files\":1"));
	imported_close(&im);

	/* the bad one alone: an error, and no output */
	out = tu_path(dir, "bad.db");
	one[0] = bad;
	rc = cs_import_files(one, 1, out, NULL, &st, &err);
	ck_assert_int_eq(rc, CS_ERR_CORRUPT);
	ck_assert_msg(strstr(err.msg, "5353.cuspool") && strstr(err.msg, "not a cuscope spool"),
		      "error: %s", err.msg);
	ck_assert(!tu_file_exists(out));

	/* a newer version */
	memset(&s, 0, sizeof(s));
	sp_header(&s, PID_A, T(0), BASE_REAL);
	((struct cs_spool_header *)s.buf)->version = CS_SPOOL_VERSION_RING + 1;
	free(bad);
	bad = sp_save(&s, dir, "newer.cuspool");
	one[0] = bad;
	rc = cs_import_files(one, 1, out, NULL, &st, &err);
	ck_assert_int_eq(rc, CS_ERR_NEWER_SCHEMA);
	ck_assert_msg(strstr(err.msg, "newer"), "error: %s", err.msg);

	/* an empty file (killed before its header was written) */
	free(bad);
	bad = tu_path(dir, "empty.cuspool");
	ck_assert_int_eq(tu_write_file(bad, "", 0), 0);
	one[0] = bad;
	ck_assert_int_eq(cs_import_files(one, 1, out, NULL, &st, &err), CS_ERR_CORRUPT);
	ck_assert(!tu_file_exists(out));

	/* nothing to import */
	free(dir);
	dir = tu_tmpdir();
	rc = cs_import_dir(dir, out, NULL, &st, &err);
	ck_assert_int_eq(rc, CS_ERR_NOT_FOUND);
	{
		char want[4200];

		snprintf(want, sizeof(want), "no spool files in '%s'", dir);
		ck_assert_str_eq(err.msg, want);
	}
	ck_assert_int_eq(cs_import_files(one, 0, out, NULL, &st, &err), CS_ERR_NOT_FOUND);

	/* an existing output is kept unless overwriting was asked for */
	build_small(&s, PID_A, 1, 0);
	free(sp_save(&s, dir, "4242.cuspool"));
	ck_assert_int_eq(tu_write_file(out, "keep", 4), 0);
	rc = cs_import_dir(dir, out, NULL, &st, &err);
	ck_assert_int_eq(rc, CS_ERR_EXISTS);
	{
		char *text = tu_read_file(out, NULL);

		ck_assert_str_eq(text, "keep");
		free(text);
	}
	{
		cs_import_opts o;

		memset(&o, 0, sizeof(o));
		o.overwrite = 1;
		ck_assert_int_eq(cs_import_dir(dir, out, &o, &st, &err), 0);
		ck_assert_int_eq(st.counts[CS_EV_KERNEL], 10);
	}
}
END_TEST

static void count_progress(uint64_t done, uint64_t total, void *arg)
{
	uint64_t *calls = arg;

	ck_assert_uint_le(done, total);
	calls[0]++;
	calls[1] = done;
	calls[2] = total;
}

START_TEST(test_progress)
{
	char *dir = tu_tmpdir(), *out = tu_path(dir, "out.db");
	struct spool s;
	cs_import_opts opts;
	cs_import_stats st;
	cs_error err = {0, ""};
	uint64_t calls[3] = {0, 0, 0};

	build_small(&s, PID_A, 1, 0);
	free(sp_save(&s, dir, "4242.cuspool"));
	memset(&opts, 0, sizeof(opts));
	opts.progress = count_progress;
	opts.progress_arg = calls;
	ck_assert_int_eq(cs_import_dir(dir, out, &opts, &st, &err), 0);
	ck_assert_uint_ge(calls[0], 1);
	ck_assert_uint_eq(calls[1], calls[2]);
	ck_assert_uint_eq(calls[2], (uint64_t)st.bytes_read);
}
END_TEST

/* The peak resident set of this process, in bytes. */
static long long maxrss_bytes(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (long long)ru.ru_maxrss * 1024;
}

#define LOAD_KERNELS 1000000

START_TEST(test_load_million_kernels)
{
	char *dir = tu_tmpdir(), *path = tu_path(dir, "4242.cuspool");
	struct spool s;
	struct imported im;
	cs_filter f = cs_filter_all();
	cs_error err = {0, ""};
	cs_iter *it;
	cs_event ev;
	long long before, grown;
	int64_t joined = 0, rows = 0;
	uint32_t corr = 1;
	int rc;

	/*
	 * A million kernels, each with its launch call: most calls come first, one in a hundred
	 * after its kernel; and a call every fourth launch that no GPU record ever joins (it must
	 * not pile up).
	 */
	sp_begin(&s, PID_A, 0);
	s.f = fopen(path, "wb");
	ck_assert_ptr_nonnull(s.f);
	sp_string(&s, 1, "_Z4loadv");
	for (uint32_t i = 0; i < LOAD_KERNELS; i++, corr += 2) {
		uint64_t t = T((uint64_t)i * 1000);

		if (i % 4 == 0)
			sp_call(&s, corr + 1, CS_APICLASS_LAUNCH, t, t + 5, 211);
		if (i % 100 == 7) {
			sp_kernel(&s, corr, t + 500, t + 900, 1);
			sp_call(&s, corr, CS_APICLASS_LAUNCH, t + 10, t + 20, 211);
		} else {
			sp_call(&s, corr, CS_APICLASS_LAUNCH, t + 10, t + 20, 211);
			sp_kernel(&s, corr, t + 500, t + 900, 1);
		}
	}
	ck_assert_uint_eq(fwrite(s.buf, 1, s.len, s.f), s.len);
	ck_assert_int_eq(fclose(s.f), 0);
	free(s.buf);

	before = maxrss_bytes();
	import_dir(&im, dir, NULL);
	grown = maxrss_bytes() - before;
	ck_assert_msg(!RSS_CHECKED || grown < 200ll << 20,
		      "the import grew the resident set by %lld MiB", grown >> 20);
	ck_assert_int_eq(im.st.counts[CS_EV_KERNEL], LOAD_KERNELS);
	ck_assert_int_eq(im.st.counts[CS_EV_API], 0);
	ck_assert_int_eq(im.st.unknown_timestamps, 0);
	ck_assert_int_eq(im.st.truncated_files, 0);

	ck_assert_msg(cs_iter_open(im.t, CS_EV_KERNEL, &f, &it, &err) == 0, "iter: %s", err.msg);
	while ((rc = cs_iter_next(it, &ev)) == 1) {
		const cs_kernel *x = &ev.u.kernel;

		rows++;
		if (x->launch_start != CS_TS_UNKNOWN && x->launch_start + 490 == x->start &&
		    x->launch_cbid == 211)
			joined++;
	}
	ck_assert_int_eq(rc, 0);
	cs_iter_close(it);
	ck_assert_int_eq(rows, LOAD_KERNELS);
	ck_assert_int_eq(joined, LOAD_KERNELS);
	imported_close(&im);
}
END_TEST

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define MANY_MODULES 400000
#define MODULE_BASE  0x10000000ull
#define MODULE_AT(i) (MODULE_BASE + (uint64_t)(i)*0x2000) /* each 0x1000 long, then a gap */

/*
 * A spool declaring 400,000 mappings from the highest address down (each one lands before all the
 * others: a sorted array moved them all, 35 s), then a stack with pcs in the lowest, the highest
 * and a middle mapping and in a gap: it imports in well under a second, and the pcs resolve.
 */
START_TEST(test_many_modules)
{
	char *dir = tu_tmpdir(), *path = tu_path(dir, "4242.cuspool");
	static const uint32_t at[] = {0, MANY_MODULES - 1, 12345};
	uint64_t pcs[4];
	struct spool s;
	struct imported im;
	struct events y;
	const cs_frame *frames;
	cs_error err = {0, ""};
	char name[64];
	double t0, took;
	int n;

	sp_begin(&s, PID_A, 0);
	s.f = fopen(path, "wb");
	ck_assert_ptr_nonnull(s.f);
	for (uint32_t k = 0; k < 8; k++) {
		snprintf(name, sizeof(name), "/nonexistent/libm%u.so", k);
		sp_string(&s, k + 1, name);
	}
	for (uint32_t i = MANY_MODULES; i-- > 0;)
		sp_module(&s, MODULE_AT(i), MODULE_AT(i) + 0x1000, (uint64_t)i * 0x1000, 1 + i % 8);
	for (int k = 0; k < 3; k++)
		pcs[k] = MODULE_AT(at[k]) + 0x801;
	pcs[3] = MODULE_AT(7) + 0x1801; /* in the gap after mapping 7 */
	sp_stack(&s, 1, pcs, 4);
	{
		struct api_args w = {.corr = 10,
				     .cls = CS_APICLASS_WAIT_DEVICE,
				     .start = T(100),
				     .end = T(200),
				     .stack_id = 1};

		sp_api(&s, &w);
	}
	ck_assert_uint_eq(fwrite(s.buf, 1, s.len, s.f), s.len);
	ck_assert_int_eq(fclose(s.f), 0);
	free(s.buf);

	t0 = now_s();
	import_dir(&im, dir, NULL);
	took = now_s() - t0;
	printf("import of %d mappings, highest first: %.2f s\n", MANY_MODULES, took);
	ck_assert_msg(took < 10.0, "the import took %.1f s", took);
	y = read_events(im.t, CS_EV_SYNC);
	ck_assert_int_eq(y.n, 1);
	ck_assert_int_eq(cs_trace_get_stack(im.t, y.v[0].u.sync.stack_id, &frames, &n, &err), 0);
	ck_assert_int_eq(n, 4);
	for (int k = 0; k < 3; k++) {
		snprintf(name, sizeof(name), "/nonexistent/libm%u.so", at[k] % 8);
		ck_assert_str_eq(frames[k].module, name);
		/* unreadable: the pc's offset in the file */
		ck_assert_uint_eq(frames[k].offset, (uint64_t)at[k] * 0x1000 + 0x801);
	}
	ck_assert_ptr_null(frames[3].module);
	imported_close(&im);
}
END_TEST

#define UNJOINED 600000

START_TEST(test_load_unjoined)
{
	char *dir = tu_tmpdir(), *path = tu_path(dir, "4242.cuspool");
	struct spool s;
	struct imported im;
	long long before, grown;

	/*
	 * What waits in the correlation map and is never joined: kernels whose launch calls were
	 * not recorded, and waits whose CUPTI records never come. Each must still become its row,
	 * in bounded memory.
	 */
	sp_begin(&s, PID_A, 0);
	s.f = fopen(path, "wb");
	ck_assert_ptr_nonnull(s.f);
	for (uint32_t i = 1; i <= UNJOINED; i++)
		sp_kernel(&s, i, T((uint64_t)i * 100), T((uint64_t)i * 100 + 50), 0);
	for (uint32_t i = 1; i <= UNJOINED; i++)
		sp_call(&s, UNJOINED + i, CS_APICLASS_WAIT_STREAM, T((uint64_t)i * 100 + 60),
			T((uint64_t)i * 100 + 90), 131);
	ck_assert_uint_eq(fwrite(s.buf, 1, s.len, s.f), s.len);
	ck_assert_int_eq(fclose(s.f), 0);
	free(s.buf);

	before = maxrss_bytes();
	import_dir(&im, dir, NULL);
	grown = maxrss_bytes() - before;
	ck_assert_msg(!RSS_CHECKED || grown < 200ll << 20,
		      "the import grew the resident set by %lld MiB", grown >> 20);
	ck_assert_int_eq(im.st.counts[CS_EV_KERNEL], UNJOINED);
	ck_assert_int_eq(im.st.counts[CS_EV_SYNC], UNJOINED);
	ck_assert_int_eq(im.st.counts[CS_EV_API], UNJOINED);
	ck_assert_int_eq(im.st.unknown_timestamps, 0);
	imported_close(&im);
}
END_TEST

/* Entries of dir other than "." and "..", and other than keep. */
static int dir_entries_except(const char *dir, const char *keep)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    (!keep || strcmp(de->d_name, keep)))
			n++;
	closedir(d);
	return n;
}

START_TEST(test_no_output_left_behind)
{
	char *dir = tu_tmpdir(), *outdir = tu_tmpdir(), *out = tu_path(outdir, "run.db");
	char *missing = tu_path(outdir, "no/such/dir/run.db");
	struct spool s;
	cs_import_stats st;
	cs_error err = {0, ""};
	struct rlimit rl, saved;
	int rc;

	build_small(&s, PID_A, 1, 0);
	for (uint32_t i = 100; i < 200000; i++)
		sp_kernel(&s, i, T((uint64_t)i * 100), T((uint64_t)i * 100 + 50), 1);
	free(sp_save(&s, dir, "4242.cuspool"));

	/* a directory that does not exist */
	rc = cs_import_dir(dir, missing, NULL, &st, &err);
	ck_assert_int_lt(rc, 0);
	ck_assert_msg(strstr(err.msg, "run.db"), "error: %s", err.msg);

	/* a directory this user cannot write (root can: then this part proves nothing) */
	ck_assert_int_eq(chmod(outdir, 0555), 0);
	if (access(outdir, W_OK) != 0) {
		rc = cs_import_dir(dir, out, NULL, &st, &err);
		ck_assert_int_lt(rc, 0);
		ck_assert_int_eq(dir_entries_except(outdir, NULL), 0);
	}
	ck_assert_int_eq(chmod(outdir, 0755), 0);

	/* the disk fills up while the trace is written: the writer fails, nothing stays */
	signal(SIGXFSZ, SIG_IGN);
	getrlimit(RLIMIT_FSIZE, &saved);
	rl = saved;
	rl.rlim_cur = 256 << 10;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	rc = cs_import_dir(dir, out, NULL, &st, &err);
	setrlimit(RLIMIT_FSIZE, &saved);
	signal(SIGXFSZ, SIG_DFL);
	ck_assert_msg(rc < 0, "import into a full disk succeeded");
	ck_assert_msg(strstr(err.msg, "run.db"), "error: %s", err.msg);
	ck_assert(!tu_file_exists(out));
	ck_assert_int_eq(dir_entries_except(outdir, NULL), 0);
	ck_assert_int_eq(dir_entries_except(dir, "4242.cuspool"), 0);
}
END_TEST

/* ---- the command ---- */

START_TEST(test_cli_import)
{
	char *dir = tu_tmpdir(), *out = tu_path(dir, "run.db"), *o = NULL, *e = NULL;
	struct spool s;
	int rc;

	build_small(&s, PID_A, 1, 0);
	free(sp_save(&s, dir, "4242.cuspool"));
	{
		const char *argv[] = {tu_cuscope_bin(), "import", "-o", out, dir, NULL};

		rc = tu_run(argv, NULL, &o, &e);
		ck_assert_msg(rc == 0, "rc %d: %s", rc, e);
		ck_assert_str_eq(o, "");
		ck_assert_int_eq(tu_count_lines(e), 1);
		ck_assert_msg(
			!strncmp(e, "cuscope: wrote ", 15) && strstr(e, "run.db (") &&
				strstr(e, "): 1 process, 10 kernels, 0 memcpy, 0 memset, 0 memory, "
					  "0 sync, 0 api, 0 nvtx; 0 dropped\n"),
			"summary: %s", e);
		free(o);
		free(e);
	}
	{
		/* the output exists: refused without --force */
		const char *argv[] = {tu_cuscope_bin(), "import", "-o", out, dir, NULL};

		rc = tu_run(argv, NULL, &o, &e);
		ck_assert_int_eq(rc, 2);
		ck_assert_int_eq(tu_count_lines(e), 1);
		ck_assert_msg(!strncmp(e, "cuscope: ", 9) && strstr(e, "--force"), "error: %s", e);
		free(o);
		free(e);
	}
	{
		const char *argv[] = {
			tu_cuscope_bin(), "import", "--force", "--api=all", "-o", out, dir, NULL};

		rc = tu_run(argv, NULL, &o, &e);
		ck_assert_msg(rc == 0, "rc %d: %s", rc, e);
		ck_assert_msg(strstr(e, ", 10 api,"), "summary: %s", e);
		free(o);
		free(e);
	}
	{
		char *file = tu_path(dir, "4242.cuspool");
		const char *argv[] = {
			tu_cuscope_bin(), "import", "-f", "-o", out, file, file, NULL};

		/* files by name (the same twice: one process, twice the kernels) */
		rc = tu_run(argv, NULL, &o, &e);
		ck_assert_msg(rc == 0, "rc %d: %s", rc, e);
		ck_assert_msg(strstr(e, ", 20 kernels,"), "summary: %s", e);
		free(o);
		free(e);
	}
	{
		char *empty = tu_tmpdir();
		const char *argv[] = {
			tu_cuscope_bin(), "import", "--force", "-o", out, empty, NULL};

		rc = tu_run(argv, NULL, &o, &e);
		ck_assert_int_eq(rc, 2);
		ck_assert_int_eq(tu_count_lines(e), 1);
		ck_assert_msg(strstr(e, "cuscope: no spool files in '"), "error: %s", e);
		free(o);
		free(e);
	}
	{
		/* no operand: the default spool directory, missing here */
		char *tmp = tu_tmpdir(), env_tmp[4200];
		const char *argv[] = {tu_cuscope_bin(), "import", "-o", out, NULL};
		const char *env[] = {env_tmp, NULL};

		snprintf(env_tmp, sizeof(env_tmp), "TMPDIR=%s", tmp);
		ck_assert_int_eq(tu_run(argv, env, &o, &e), 2);
		ck_assert_int_eq(tu_count_lines(e), 1);
		ck_assert_msg(strstr(e, "cuscope-spool-") && strstr(e, "does not exist"),
			      "error: %s", e);
		free(o);
		free(e);
		free(tmp);
	}
	{
		const char *argv[] = {tu_cuscope_bin(), "import", "--api=some", dir, NULL};

		ck_assert_int_eq(tu_run(argv, NULL, &o, &e), 2);
		ck_assert_msg(strstr(e, "--api"), "error: %s", e);
		free(o);
		free(e);
	}
	{
		const char *argv[] = {tu_cuscope_bin(), "import", "--help", NULL};

		ck_assert_int_eq(tu_run(argv, NULL, &o, &e), 0);
		ck_assert_ptr_nonnull(strstr(o, "usage: cuscope import"));
		ck_assert_str_eq(e, "");
		free(o);
		free(e);
	}
}
END_TEST

/* --launch-cost: a calibration's JSON kept in META launch_cost, shown by the summary and by info;
 * a file that is not one is refused before anything is written. */
START_TEST(test_cli_import_launch_cost)
{
	char *dir = tu_tmpdir(), *cal = tu_tmpdir(), *out = tu_path(cal, "run.db");
	char *cost = tu_path(cal, "cost.json"), *bad = tu_path(cal, "bad.json");
	static const char calibration[] =
		"{\"version\":2,\"ns_per_launch\":1840.5,\"ns_per_launch_range\":[1200,2600],"
		"\"device\":\"NVIDIA H200\",\"added_wall_ns\":{\"attached\":600.2,"
		"\"kernel_records\":410.0,\"other_kinds_and_callbacks\":80.1,"
		"\"cuscope_code\":430.9}}\n";
	static const struct {
		const char *text, *says;
	} refused[] = {
		{"not json at all", "is not JSON"},
		{"[1, 2]", "is not JSON"},
		{"{\"version\": 2, \"device\": \"x\"}", "has no ns_per_launch"},
		{"{\"version\": 2, \"ns_per_launch\": -3}", "has no ns_per_launch"},
		{"{\"version\": 3, \"ns_per_launch\": 1000}", "newer cuscope (version 3"},
	};
	struct spool s;

	build_small(&s, PID_A, 1, 0);
	free(sp_save(&s, dir, "4242.cuspool"));
	ck_assert_int_eq(tu_write_file(cost, calibration, strlen(calibration)), 0);
	{
		const char *argv[] = {NULL, "import", "--launch-cost", cost, "-o", out, dir, NULL};
		struct tu_result r = tu_cuscope(argv);

		ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
		ck_assert_int_eq(tu_count_lines(r.err), 1);
		ck_assert_msg(strstr(r.err, "0 dropped; recording cost 1.84 us per launch\n"),
			      "summary: %s", r.err);
		tu_result_free(&r);
	}
	{
		const char *argv[] = {NULL, "info", "--format", "json", out, NULL};
		struct tu_result r = tu_cuscope(argv);

		ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
		ck_assert_msg(strstr(r.out, "\"launch_cost\":") && strstr(r.out, "1840.5"),
			      "info: %s", r.out);
		ck_assert_msg(strstr(r.out, "\"cuscope_code\""), "info: %s", r.out);
		tu_result_free(&r);
	}
	{
		const char *argv[] = {NULL, "info", out, NULL};
		struct tu_result r = tu_cuscope(argv);

		ck_assert_msg(strstr(r.out, "recording cost") && strstr(r.out, "1.84 us"),
			      "info: %s", r.out);
		tu_result_free(&r);
	}
	ck_assert_int_eq(unlink(out), 0);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		const char *argv[] = {NULL, "import", "--launch-cost", bad, "-o", out, dir, NULL};
		struct tu_result r;

		ck_assert_int_eq(tu_write_file(bad, refused[i].text, strlen(refused[i].text)), 0);
		r = tu_cuscope(argv);
		tu_assert_one_line_error(&r, refused[i].says);
		ck_assert_msg(strstr(r.err, "bad.json"), "names the file: %s", r.err);
		ck_assert(!tu_file_exists(out));
		tu_result_free(&r);
	}
	{
		const char *missing = "/nonexistent/cost.json", *dev = "/dev/null";
		const char *argv[] = {NULL, "import", "--launch-cost", missing, "-o", out,
				      dir,  NULL};
		struct tu_result r = tu_cuscope(argv);

		tu_assert_one_line_error(&r, "cannot read '/nonexistent/cost.json'");
		tu_result_free(&r);
		argv[3] = dev;
		r = tu_cuscope(argv);
		tu_assert_one_line_error(&r, "not a regular file");
		tu_result_free(&r);
		ck_assert(!tu_file_exists(out));
	}
	{
		/* a valid calibration padded past 64 KiB is not one */
		const char *argv[] = {NULL, "import", "--launch-cost", bad, "-o", out, dir, NULL};
		size_t n = 64 * 1024 + 1;
		char *big = malloc(n);
		struct tu_result r;

		ck_assert_ptr_nonnull(big);
		memset(big, ' ', n);
		memcpy(big, "{\"ns_per_launch\": 1}", 20);
		ck_assert_int_eq(tu_write_file(bad, big, n), 0);
		r = tu_cuscope(argv);
		tu_assert_one_line_error(&r, "is larger than a calibration (64 KiB)");
		tu_result_free(&r);
		ck_assert(!tu_file_exists(out));
		free(big);
	}
	free(out);
	free(cost);
	free(bad);
}
END_TEST

/* -o naming a spool file being read (by its name, a link, or as a file of the directory read):
 * refused with --force too, the spool file untouched. */
START_TEST(test_cli_import_output_is_input)
{
	char *dir = tu_tmpdir(), *file, *lnk = tu_path(dir, "link.cuspool"), *before, *after;
	size_t len, len2;
	struct spool s;
	struct tu_result r;

	build_small(&s, PID_A, 1, 0);
	file = sp_save(&s, dir, "4242.cuspool");
	before = tu_read_file(file, &len);
	ck_assert_int_eq(symlink(file, lnk), 0);
	{
		const char *argv[][7] = {
			{NULL, "import", "-f", "-o", file, file, NULL},
			{NULL, "import", "-f", "-o", lnk, file, NULL},
			{NULL, "import", "-f", "-o", file, dir, NULL},
		};

		for (size_t i = 0; i < sizeof(argv) / sizeof(argv[0]); i++) {
			r = tu_cuscope(argv[i]);
			tu_assert_one_line_error(&r, "import onto a spool file it reads");
			ck_assert_msg(strstr(r.err, "is an input"), "stderr: %s", r.err);
			tu_result_free(&r);
			after = tu_read_file(file, &len2);
			ck_assert(after && len2 == len && !memcmp(before, after, len));
			free(after);
		}
	}
	free(before);
	free(file);
	free(lnk);
	free(dir);
}
END_TEST

/* Run cuscope with argv[1..] and extra environment entries (NULL-terminated). */
static struct tu_result run_env(const char **argv, const char *const *env)
{
	struct tu_result r;

	argv[0] = tu_cuscope_bin();
	r.rc = tu_run(argv, env, &r.out, &r.err);
	ck_assert_msg(r.rc >= 0, "cannot run %s", argv[0]);
	return r;
}

/*
 * A FIFO where a spool file or a trace is expected: refused at once (an open without O_NONBLOCK
 * would wait forever for a writer, and the test would time out). In a directory, a FIFO and a
 * symbolic link are skipped like foreign files; named on their own, a FIFO is an error.
 */
START_TEST(test_cli_import_not_regular)
{
	char *dir = tu_tmpdir(), *alone = tu_tmpdir(), *outdir = tu_tmpdir();
	char *out = tu_path(outdir, "run.db"), *out2 = tu_path(outdir, "other.db");
	char *fifo = tu_path(dir, "4243.cuspool"), *link = tu_path(dir, "4244.cuspool");
	char *fifo2 = tu_path(alone, "7.cuspool"), *trace = tu_path(outdir, "fifo.db");
	struct spool s;
	struct tu_result r;

	build_small(&s, PID_A, 1, 0);
	free(sp_save(&s, dir, "4242.cuspool"));
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	ck_assert_int_eq(symlink("4242.cuspool", link), 0);
	ck_assert_int_eq(mkfifo(fifo2, 0600), 0);
	ck_assert_int_eq(mkfifo(trace, 0600), 0);
	{
		const char *argv[] = {NULL, "import", "-o", out, dir, NULL};

		r = tu_cuscope(argv);
		ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
		ck_assert_int_eq(tu_count_lines(r.err), 2);
		ck_assert_msg(strstr(r.err, "cuscope: warning: skipped 2 spool files: '"),
			      "stderr: %s", r.err);
		/* the link was not followed: the kernels of 4242.cuspool once */
		ck_assert_msg(strstr(r.err, ", 10 kernels,"), "stderr: %s", r.err);
		tu_result_free(&r);
	}
	{
		const char *argv[] = {NULL, "import", "-o", out2, alone, NULL};

		r = tu_cuscope(argv);
		tu_assert_one_line_error(&r, "a directory of one FIFO");
		ck_assert_msg(strstr(r.err, "not a regular file"), "stderr: %s", r.err);
		ck_assert(!tu_file_exists(out2));
		tu_result_free(&r);
	}
	{
		const char *argv[] = {NULL, "import", "-o", out2, fifo2, NULL};

		r = tu_cuscope(argv);
		tu_assert_one_line_error(&r, "a FIFO named as a spool file");
		ck_assert_msg(strstr(r.err, "not a regular file"), "stderr: %s", r.err);
		ck_assert(!tu_file_exists(out2));
		tu_result_free(&r);
	}
	{
		static const char *const cmds[][3] = {
			{"info", NULL}, {"report", NULL}, {"stats", NULL}, {"export", "-o", "-"}};

		for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
			const char *argv[6] = {NULL};
			int n = 1;

			for (int k = 0; k < 3 && cmds[i][k]; k++)
				argv[n++] = cmds[i][k];
			argv[n] = trace;
			r = tu_cuscope(argv);
			tu_assert_one_line_error(&r, cmds[i][0]);
			ck_assert_msg(strstr(r.err, "not a regular file"), "%s: %s", cmds[i][0],
				      r.err);
			tu_result_free(&r);
		}
	}
	free(dir);
	free(alone);
	free(outdir);
	free(out);
	free(out2);
	free(fifo);
	free(link);
	free(fifo2);
	free(trace);
}
END_TEST

/*
 * Load the injection library by hand into a python3 process with TMPDIR=tmp and no
 * CUSCOPE_SPOOL_DIR, as a program run with CUDA_INJECTION64_PATH set by hand, and start it through
 * its NVTX entry point (no GPU needed). Returns the exit code; *err gets stderr.
 */
static int run_injected(const char *lib, const char *tmp, char **err)
{
	static const char script[] =
		"import ctypes, os, sys\n"
		"os.environ.pop('CUSCOPE_SPOOL_DIR', None)\n"
		"lib = ctypes.CDLL(sys.argv[1])\n"
		"get_table = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint)(lambda i: None)\n"
		"lib.InitializeInjectionNvtx2(get_table)\n";
	const char *argv[] = {"python3", "-c", script, lib, NULL};
	char env_tmp[4200];
	const char *env[] = {env_tmp, "CUSCOPE_SPOOL_DIR=", NULL};
	char *out = NULL;
	int rc;

	snprintf(env_tmp, sizeof(env_tmp), "TMPDIR=%s", tmp);
	rc = tu_run(argv, env, &out, err);
	free(out);
	return rc;
}

static char *default_spool(const char *tmp)
{
	char name[64];

	snprintf(name, sizeof(name), "cuscope-spool-%lu", (unsigned long)geteuid());
	return tu_path(tmp, name);
}

/*
 * The default spool directory ($TMPDIR/cuscope-spool-UID) is made private (0700); one that is a
 * symbolic link, writable by others or (as root) another user's is refused, by the library (one
 * line; the process runs unprofiled and writes nothing) and by `cuscope import` without operands.
 */
START_TEST(test_default_spool_dir)
{
	const char *lib = getenv("CUSCOPE_INJECT_LIB");
	char *tmp = tu_tmpdir(), *spool = default_spool(tmp), *outdir = tu_tmpdir();
	char *out = tu_path(outdir, "run.db"), *e = NULL, env_tmp[4200];
	const char *env[] = {env_tmp, NULL};
	struct tu_result r;
	struct stat st;

	if (!lib) {
		fprintf(stderr, "test_default_spool_dir: no injection library in this build\n");
		return;
	}
	/* made 0700 and used */
	ck_assert_int_eq(run_injected(lib, tmp, &e), 0);
	ck_assert_msg(e[0] == '\0', "stderr: %s", e);
	free(e);
	ck_assert_int_eq(lstat(spool, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(st.st_mode & 0777, 0700);
	ck_assert_int_eq(dir_entries_except(spool, NULL), 1);
	/* cuscope import without operands reads it */
	snprintf(env_tmp, sizeof(env_tmp), "TMPDIR=%s", tmp);
	{
		const char *argv[] = {NULL, "import", "-o", out, NULL};

		r = run_env(argv, env);
		ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
		ck_assert(tu_file_exists(out));
		tu_result_free(&r);
	}
	/* writable by others: refused by both */
	ck_assert_int_eq(chmod(spool, 0777), 0);
	ck_assert_int_eq(run_injected(lib, tmp, &e), 0);
	ck_assert_msg(tu_count_lines(e) == 1 && strstr(e, "refusing the spool directory") &&
			      strstr(e, "others can write") && strstr(e, "unprofiled"),
		      "stderr: %s", e);
	free(e);
	ck_assert_int_eq(dir_entries_except(spool, NULL), 1);
	{
		const char *argv[] = {NULL, "import", "-f", "-o", out, NULL};

		r = run_env(argv, env);
		tu_assert_one_line_error(&r, "import from a spool directory others can write");
		ck_assert_msg(strstr(r.err, "others can write"), "stderr: %s", r.err);
		tu_result_free(&r);
	}
	/* another user's (root can make one) */
	ck_assert_int_eq(chmod(spool, 0700), 0);
	if (geteuid() == 0) {
		ck_assert_int_eq(chown(spool, 65534, 65534), 0);
		ck_assert_int_eq(run_injected(lib, tmp, &e), 0);
		ck_assert_msg(tu_count_lines(e) == 1 && strstr(e, "belongs to uid 65534"),
			      "stderr: %s", e);
		free(e);
		ck_assert_int_eq(dir_entries_except(spool, NULL), 1);
		ck_assert_int_eq(chown(spool, 0, 0), 0);
	}
	/* a symbolic link planted at the name: not followed, nothing written where it points */
	{
		char *moved = tu_path(tmp, "elsewhere");

		ck_assert_int_eq(rename(spool, moved), 0);
		ck_assert_int_eq(symlink(moved, spool), 0);
		ck_assert_int_eq(run_injected(lib, tmp, &e), 0);
		ck_assert_msg(tu_count_lines(e) == 1 && strstr(e, "symbolic link"), "stderr: %s",
			      e);
		free(e);
		ck_assert_int_eq(dir_entries_except(moved, NULL), 1);
		{
			const char *argv[] = {NULL, "import", "-f", "-o", out, NULL};

			r = run_env(argv, env);
			tu_assert_one_line_error(&r, "import from a linked spool directory");
			ck_assert_msg(strstr(r.err, "symbolic link"), "stderr: %s", r.err);
			tu_result_free(&r);
		}
		free(moved);
	}
	free(tmp);
	free(spool);
	free(outdir);
	free(out);
}
END_TEST

/*
 * CUPTI values that no trace can hold (a timestamp 2^62 ns or 2^64 - 1 ns from the time base, an
 * end 2^62 ns after its start, sizes and counts at 2^63 and 2^64 - 1): stored as unknown,
 * counted in "implausible", and no command then prints a negative or absurd duration.
 */
START_TEST(test_implausible_values)
{
	char *dir = tu_tmpdir(), *out, *o = NULL, *e = NULL;
	struct spool s;
	struct imported im;
	struct events k, c, m;
	const cs_kernel *x;
	int64_t implausible = 0;
	int rc;

	sp_begin(&s, PID_A, 0);
	sp_string(&s, 1, "k");
	sp_kernel(&s, 1, UINT64_MAX, T(100), 1);		 /* start: 1 */
	sp_kernel(&s, 2, T(100), T(100) + (1ull << 62), 1);	 /* end past the bound: 1 */
	sp_kernel(&s, 3, T(1ull << 62), T((1ull << 62) + 1), 1); /* start and end: 2 */
	sp_kernel(&s, 4, (1ull << 63) - 1024, UINT64_MAX, 1);	 /* start and end: 2 */
	sp_kernel(&s, 5, T(200), T(300), 1);			 /* plausible */
	implausible += 6;
	sp_memcpy(&s, 6, T(400), T(500), CS_COPY_DTOH, 0, UINT64_MAX);	 /* bytes: 1 */
	sp_memcpy(&s, 7, T(600), T(700), CS_COPY_HTOD, 0, 1ull << 62);	 /* bytes: 1 */
	sp_memcpy(&s, 8, T(800), T(900), CS_COPY_HTOD, 0, 1ull << 20);	 /* plausible */
	sp_memory(&s, 9, 1, T(1000), 0x7f0000000000ull, (1ull << 63));	 /* bytes: 1 */
	sp_memory(&s, 10, 1, (1ull << 63) + 1, 0x7f0000100000ull, 4096); /* time: 1 */
	sp_dropped(&s, UINT64_MAX, UINT64_MAX);				 /* count, bytes: 2 */
	sp_end(&s, UINT64_MAX, 0, 1ull << 63);				 /* time, count: 2 */
	implausible += 8;
	free(sp_save(&s, dir, "4242.cuspool"));

	import_dir(&im, dir, NULL);
	ck_assert_int_eq(im.st.implausible, implausible);
	ck_assert_int_eq(im.st.unknown_timestamps, 8); /* the 6 kernel times, 2 memory and end */
	ck_assert_int_eq(im.st.dropped, 0);
	ck_assert_ptr_nonnull(
		strstr(cs_trace_meta(im.t, "import_stats"), "\"implausible_values\":14"));
	k = read_events(im.t, CS_EV_KERNEL);
	ck_assert_int_eq(k.n, 5);
	x = &find_one(&k, 0, 1)->u.kernel;
	ck_assert_int_eq(x->start, CS_TS_UNKNOWN);
	ck_assert_int_eq(x->end, 100);
	x = &find_one(&k, 0, 2)->u.kernel;
	ck_assert_int_eq(x->start, 100);
	ck_assert_int_eq(x->end, CS_TS_UNKNOWN);
	for (int i = 3; i <= 4; i++) {
		x = &find_one(&k, 0, (uint64_t)i)->u.kernel;
		ck_assert_int_eq(x->start, CS_TS_UNKNOWN);
		ck_assert_int_eq(x->end, CS_TS_UNKNOWN);
	}
	x = &find_one(&k, 0, 5)->u.kernel;
	ck_assert_int_eq(x->start, 200);
	ck_assert_int_eq(x->end, 300);
	c = read_events(im.t, CS_EV_MEMCPY);
	ck_assert_int_eq(find_one(&c, 0, 6)->u.memcpy.bytes, 0);
	ck_assert_int_eq(find_one(&c, 0, 7)->u.memcpy.bytes, 0);
	ck_assert_int_eq(find_one(&c, 0, 8)->u.memcpy.bytes, 1 << 20);
	m = read_events(im.t, CS_EV_MEMORY);
	ck_assert_int_eq(m.n, 2);
	ck_assert_int_eq(find_one(&m, 0, 9)->u.memory.bytes, 0);
	ck_assert_int_eq(find_one(&m, 0, 10)->u.memory.start, CS_TS_UNKNOWN);
	out = strdup(im.out);
	imported_close(&im);

	/* the commands on it: a plausible duration */
	{
		const char *argv[] = {tu_cuscope_bin(), "info", out, NULL};

		rc = tu_run(argv, NULL, &o, &e);
		ck_assert_msg(rc == 0, "rc %d: %s", rc, e);
		ck_assert_msg(strstr(o, "duration          1 us\n") ||
				      strstr(o, "duration          1.0 us\n") ||
				      (strstr(o, "duration") && !strstr(o, "duration          -")),
			      "info: %s", o);
		ck_assert_msg(!strstr(o, "-9223") && !strstr(e, "runtime error"), "info: %s%s", o,
			      e);
		/* and says how many values the import took for implausible */
		ck_assert_msg(
			strstr(o, "implausible       14  WARNING: values outside the plausible"),
			"info: %s", o);
		free(o);
		free(e);
	}
	{
		const char *argv[] = {tu_cuscope_bin(), "import", "-f", "-o", out, dir, NULL};

		/* the summary line says how many values were implausible */
		rc = tu_run(argv, NULL, &o, &e);
		ck_assert_msg(rc == 0, "rc %d: %s", rc, e);
		ck_assert_int_eq(tu_count_lines(e), 1);
		ck_assert_msg(strstr(e, ", 14 implausible values\n"), "summary: %s", e);
		free(o);
		free(e);
	}
	free(out);
}
END_TEST

/*
 * A header clock at or past 2^63 ns (beyond any CUPTI or wall clock until the year 2262): the file
 * is implausible as a whole. Alone it is refused in one line and nothing is written; beside a good
 * file it is skipped with a warning.
 */
START_TEST(test_implausible_header_clock)
{
	char *dir = tu_tmpdir(), *out = tu_path(dir, "run.db"), *o = NULL, *e = NULL, *bad;
	struct spool s;
	int rc;

	memset(&s, 0, sizeof(s));
	sp_header(&s, PID_B, 1ull << 63, BASE_REAL);
	sp_kernel(&s, 1, (1ull << 63) + 100, (1ull << 63) + 200, 0);
	bad = sp_save(&s, dir, "5353.cuspool");
	{
		const char *argv[] = {tu_cuscope_bin(), "import", "-o", out, bad, NULL};

		rc = tu_run(argv, NULL, &o, &e);
		ck_assert_int_eq(rc, 2);
		ck_assert_str_eq(o, "");
		ck_assert_int_eq(tu_count_lines(e), 1);
		ck_assert_msg(strstr(e, "cuscope: cannot import '") &&
				      strstr(e, "implausible clock in the spool file header"),
			      "error: %s", e);
		ck_assert(!tu_file_exists(out));
		free(o);
		free(e);
	}
	build_small(&s, PID_A, 1, 0);
	free(sp_save(&s, dir, "4242.cuspool"));
	{
		const char *argv[] = {tu_cuscope_bin(), "import", "-o", out, dir, NULL};

		rc = tu_run(argv, NULL, &o, &e);
		ck_assert_msg(rc == 0, "rc %d: %s", rc, e);
		ck_assert_msg(strstr(e, "warning: skipped 1 spool file: '") &&
				      strstr(e, "implausible clock"),
			      "warning: %s", e);
		ck_assert(tu_file_exists(out));
		free(o);
		free(e);
	}
	free(bad);
	free(out);
}
END_TEST

/*
 * Clocks 2^60 ns apart cannot be one job: the largest group of files within 2^53 ns of each other
 * makes the time base (the earliest on a tie), and the others are skipped with a warning.
 */
START_TEST(test_clocks_far_apart)
{
	char *dir = tu_tmpdir(), *out = tu_path(dir, "out.db"), *third;
	struct spool s;
	struct imported im;
	struct events k;
	char base[32];

	/* the earliest file is the outlier: two files 2^60 ns later make the base */
	build_small(&s, PID_A, 1, 0);
	free(sp_save(&s, dir, "4242.cuspool"));
	build_small(&s, PID_B, 1, 1ull << 60);
	free(sp_save(&s, dir, "5353.cuspool"));
	build_small(&s, PID_B + 1, 1, (1ull << 60) + 500);
	third = sp_save(&s, dir, "5354.cuspool");
	import_dir(&im, dir, NULL);
	ck_assert_msg(strstr(im.err.msg, "skipped 1 spool file: '") &&
			      strstr(im.err.msg, "4242.cuspool': implausible clock"),
		      "warning: %s", im.err.msg);
	snprintf(base, sizeof(base), "%llu", (unsigned long long)(BASE_CUPTI + (1ull << 60)));
	ck_assert_str_eq(cs_trace_meta(im.t, "time_base_ns"), base);
	ck_assert_int_eq(im.st.implausible, 0);
	k = read_events(im.t, CS_EV_KERNEL);
	ck_assert_int_eq(k.n, 20);
	for (int i = 0; i < k.n; i++) {
		ck_assert(k.v[i].u.kernel.start >= 1020 && k.v[i].u.kernel.start <= 10520);
		ck_assert_int_eq(k.v[i].u.kernel.end - k.v[i].u.kernel.start, 10);
	}
	imported_close(&im);

	/* a tie: the earlier file makes the base */
	unlink(third);
	unlink(out); /* the import's output, dir/out.db */
	free(third);
	import_dir(&im, dir, NULL);
	ck_assert_msg(strstr(im.err.msg, "5353.cuspool': implausible clock"), "warning: %s",
		      im.err.msg);
	ck_assert_str_eq(cs_trace_meta(im.t, "time_base_ns"), "1000000000");
	imported_close(&im);
	free(out);
}
END_TEST

/*
 * A spool file recorded on the H200 from samples/cuda/counts.cu with the library loaded by hand
 * (CUDA_INJECTION64_PATH and CUSCOPE_SPOOL_DIR, no `record`). The program printed what it did; the
 * import holds exactly that, with no value taken for implausible: its cudaMalloc of 1 PiB, which
 * fails, keeps its size.
 */
START_TEST(test_recorded_spool)
{
	char *src = tu_source_file("tests/data/spool-counts/3381.cuspool"), *dir = tu_tmpdir(),
	     *dst;
	size_t len;
	char *data = tu_read_file(src, &len);
	struct imported im;
	int64_t bytes[CS_COPY_PTOP + 1] = {0}, copies[CS_COPY_PTOP + 1] = {0}, set_bytes = 0;
	int64_t failed_pib = 0, ok_allocs = 0, n = 0;
	cs_filter all = cs_filter_all();
	cs_iter *it;
	cs_event ev;
	cs_error err = {0, ""};

	ck_assert_msg(data && dir, "cannot read %s", src);
	dst = tu_path(dir, "3381.cuspool");
	ck_assert(tu_write_file(dst, data, len) == 0);
	import_dir(&im, dir, NULL);
	ck_assert_int_eq(im.st.implausible, 0);
	ck_assert_int_eq(im.st.dropped, 0);
	ck_assert_int_eq(im.st.counts[CS_EV_KERNEL], 17);
	ck_assert_int_eq(im.st.counts[CS_EV_MEMCPY], 11);
	ck_assert_int_eq(im.st.counts[CS_EV_MEMSET], 2);
	ck_assert_int_eq(im.st.counts[CS_EV_NVTX], 15); /* 10 ranges, 2 start/end, 3 marks */

	ck_assert(cs_iter_open(im.t, CS_EV_MEMCPY, &all, &it, &err) == 0);
	while (cs_iter_next(it, &ev) > 0) {
		ck_assert(ev.u.memcpy.copy_kind >= 0 && ev.u.memcpy.copy_kind <= CS_COPY_PTOP);
		copies[ev.u.memcpy.copy_kind]++;
		bytes[ev.u.memcpy.copy_kind] += ev.u.memcpy.bytes;
	}
	cs_iter_close(it);
	ck_assert_int_eq(copies[CS_COPY_HTOD], 4);
	ck_assert_int_eq(copies[CS_COPY_DTOH], 4);
	ck_assert_int_eq(copies[CS_COPY_DTOD], 3);
	ck_assert_int_eq(bytes[CS_COPY_HTOD], 786432);
	ck_assert_int_eq(bytes[CS_COPY_DTOH], 917504);
	ck_assert_int_eq(bytes[CS_COPY_DTOD], 589824);

	ck_assert(cs_iter_open(im.t, CS_EV_MEMSET, &all, &it, &err) == 0);
	while (cs_iter_next(it, &ev) > 0)
		set_bytes += ev.u.memset.bytes;
	cs_iter_close(it);
	ck_assert_int_eq(set_bytes, 262144);

	ck_assert(cs_iter_open(im.t, CS_EV_MEMORY, &all, &it, &err) == 0);
	while (cs_iter_next(it, &ev) > 0) {
		n++;
		if (ev.u.memory.result != 0 && ev.u.memory.bytes == INT64_C(1) << 50)
			failed_pib++;
		if (ev.u.memory.result == 0 && ev.u.memory.op == CS_MEMOP_ALLOC &&
		    ev.u.memory.mem_kind == CS_MEM_DEVICE)
			ok_allocs++;
	}
	cs_iter_close(it);
	ck_assert_int_eq(failed_pib, 1);
	ck_assert_msg(ok_allocs >= 4, "%lld device allocations", (long long)ok_allocs);
	imported_close(&im);
	free(data);
	free(dst);
	free(dir);
	free(src);
}
END_TEST

static Suite *import_suite(void)
{
	Suite *s = suite_create("import");
	TCase *tc = tcase_create("import");
	TCase *load = tcase_create("load");
	TCase *cli = tcase_create("cli");

	tcase_add_test(tc, test_counts_and_rows);
	tcase_add_test(tc, test_launch_join_both_orders);
	tcase_add_test(tc, test_graph_launch);
	tcase_add_test(tc, test_unknown_timestamps);
	tcase_add_test(tc, test_implausible_values);
	tcase_add_test(tc, test_implausible_header_clock);
	tcase_add_test(tc, test_clocks_far_apart);
	tcase_add_test(tc, test_recorded_spool);
	tcase_add_test(tc, test_nvtx);
	tcase_add_test(tc, test_sync_record_and_api_waits);
	tcase_add_test(tc, test_sync_memcpy);
	tcase_add_test(tc, test_memory_rows);
	tcase_add_test(tc, test_stacks);
	tcase_add_test(tc, test_stack_symbols);
	tcase_add_test(tc, test_stack_borrowed);
	tcase_add_test(tc, test_stack_bad_records);
	tcase_add_test(tc, test_truncated_file);
	tcase_add_test(tc, test_two_processes);
	tcase_add_test(tc, test_call_tails);
	tcase_add_test(tc, test_same_pid_merged_and_no_process_record);
	tcase_add_test(tc, test_bad_headers);
	tcase_add_test(tc, test_ring_files_read_as_one_stream);
	tcase_add_test(tc, test_progress);
	tcase_add_test(tc, test_no_output_left_behind);
	suite_add_tcase(s, tc);
	tcase_add_test(load, test_load_million_kernels);
	tcase_add_test(load, test_load_unjoined);
	tcase_add_test(load, test_many_modules);
	tcase_set_timeout(load, 240);
	suite_add_tcase(s, load);
	tcase_add_test(cli, test_cli_import);
	tcase_add_test(cli, test_cli_import_launch_cost);
	tcase_add_test(cli, test_cli_import_not_regular);
	tcase_add_test(cli, test_cli_import_output_is_input);
	tcase_add_test(cli, test_default_spool_dir);
	suite_add_tcase(s, cli);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(import_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
