/*
 * load.c - the trace loaded once into the compact, start-sorted arrays every analyzer works on
 * (cs_analysis), and the lookups on them: binary searches by time, the first element that may
 * overlap a time, and the GPU busy time of a window.
 *
 * Event tables are stored in start order, so each array is filled by one pass of the reader in
 * that order and needs no sort; memcpys and memsets are merged into one array. The sizes come from
 * the trace summary, so a large trace is read into arrays allocated once, at their final size.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuscope/sort.h"
#include "cuscope/grow.h"
#include "cuscope/model.h"
#include "cuscope/checked.h"
#include "cuscope/u64map.h"
#include "cuscope/units.h"

/* Elements per block of the "reach" tables (the largest end among all elements up to a block). */
#define REACH_BLOCK 64
/* Kernel tables at least this long are read by two threads. */
#define PARALLEL_MIN_KERNELS 200000

struct cs_analysis_index {
	int64_t *kernel_reach; /* [b] = largest end of kernels[0 .. (b + 1) * REACH_BLOCK) */
	int64_t nkernel_reach;
	int64_t *copy_reach;
	int64_t ncopy_reach;
	int64_t kernel_names; /* cs_analysis_kernel_names() */
};

/* ---- growing arrays ---- */

/*
 * Allocate room for n elements (at least one, so that an empty array is not NULL by accident).
 * Large arrays ask for transparent huge pages: filled row by row, they would otherwise take a page
 * fault every 4 KiB, a good part of the time a 10-million-event trace takes to load.
 */
static int reserve(void **v, int64_t n, int64_t *cap, size_t size)
{
	size_t bytes;

	if (n < 1)
		n = 1;
	bytes = (size_t)n * size;
	*v = cs_big_alloc(bytes);
	if (!*v)
		return CS_ERR_NOMEM;
	*cap = n;
	return 0;
}

static int64_t duration(int64_t start, int64_t end)
{
	if (start == CS_TS_UNKNOWN || end == CS_TS_UNKNOWN || end < start)
		return 0;
	return end - start;
}

/* ---- one pass per table ---- */

struct load_ctx {
	cs_analysis *a;
	cs_trace_summary sum;
	cs_a_copy *memsets; /* loaded apart, then merged into a->copies */
	int64_t nmemsets;
	int64_t caps[CS_EV_COUNT]; /* allocated elements of each array */
	/* the rows of each table to load, first .. end - 1 (0 .. INT64_MAX: all), and how many */
	int64_t first[CS_EV_COUNT], end[CS_EV_COUNT], rows[CS_EV_COUNT];
};

/* The columns each array is filled from (include/cuscope/columns.def). */
static const int kernel_cols[] = {
	CS_COL_KERNEL_start,	 CS_COL_KERNEL_end,	  CS_COL_KERNEL_launchStart,
	CS_COL_KERNEL_launchEnd, CS_COL_KERNEL_nameId,	  CS_COL_KERNEL_stackId,
	CS_COL_KERNEL_pid,	 CS_COL_KERNEL_launchTid, CS_COL_KERNEL_streamId,
	CS_COL_KERNEL_deviceId,	 CS_COL_KERNEL_graphId,	  CS_COL_KERNEL_gridX,
	CS_COL_KERNEL_gridY,	 CS_COL_KERNEL_gridZ};
#define NKERNEL_COLS ((int)(sizeof(kernel_cols) / sizeof(kernel_cols[0])))

static const int memcpy_cols[] = {
	CS_COL_MEMCPY_start,	 CS_COL_MEMCPY_end,	  CS_COL_MEMCPY_launchStart,
	CS_COL_MEMCPY_launchEnd, CS_COL_MEMCPY_bytes,	  CS_COL_MEMCPY_stackId,
	CS_COL_MEMCPY_pid,	 CS_COL_MEMCPY_launchTid, CS_COL_MEMCPY_streamId,
	CS_COL_MEMCPY_deviceId,	 CS_COL_MEMCPY_copyKind,  CS_COL_MEMCPY_srcKind,
	CS_COL_MEMCPY_dstKind,	 CS_COL_MEMCPY_isAsync};

static const int memset_cols[] = {
	CS_COL_MEMSET_start,	 CS_COL_MEMSET_end,	  CS_COL_MEMSET_launchStart,
	CS_COL_MEMSET_launchEnd, CS_COL_MEMSET_bytes,	  CS_COL_MEMSET_stackId,
	CS_COL_MEMSET_pid,	 CS_COL_MEMSET_launchTid, CS_COL_MEMSET_streamId,
	CS_COL_MEMSET_deviceId,	 CS_COL_MEMSET_memKind,	  CS_COL_MEMSET_isAsync};

static const int memory_cols[] = {CS_COL_MEMORY_start,	 CS_COL_MEMORY_bytes,
				  CS_COL_MEMORY_address, CS_COL_MEMORY_stackId,
				  CS_COL_MEMORY_pid,	 CS_COL_MEMORY_deviceId,
				  CS_COL_MEMORY_isVmm,	 CS_COL_MEMORY_returnValue,
				  CS_COL_MEMORY_memKind, CS_COL_MEMORY_memoryOperationType};

static const int sync_cols[] = {CS_COL_SYNC_start,    CS_COL_SYNC_end,	CS_COL_SYNC_stackId,
				CS_COL_SYNC_pid,      CS_COL_SYNC_tid,	CS_COL_SYNC_streamId,
				CS_COL_SYNC_syncType, CS_COL_SYNC_cbid, CS_COL_SYNC_returnValue};

static const int api_cols[] = {CS_COL_API_start,   CS_COL_API_end,	  CS_COL_API_nameId,
			       CS_COL_API_stackId, CS_COL_API_pid,	  CS_COL_API_tid,
			       CS_COL_API_cbid,	   CS_COL_API_returnValue};

static const int nvtx_cols[] = {CS_COL_NVTX_start, CS_COL_NVTX_end, CS_COL_NVTX_textId,
				CS_COL_NVTX_pid,   CS_COL_NVTX_tid, CS_COL_NVTX_nvtxType,
				CS_COL_NVTX_depth};

/* A pointer to the next free element of an array, grown when full; NULL without memory. */
static void *next_slot(void **v, int64_t *n, int64_t *cap, size_t size)
{
	size_t room = (size_t)*cap;

	if (cs_grow(v, &room, (size_t)*n + 1, size))
		return NULL;
	*cap = (int64_t)room;
	return (char *)*v + (size_t)(*n)++ * size;
}

static void fill_kernel(cs_a_kernel *d, const int64_t *v)
{
	int64_t blocks =
		cs_sat_mul3(v[CS_COL_KERNEL_gridX], v[CS_COL_KERNEL_gridY], v[CS_COL_KERNEL_gridZ]);

	d->start = v[CS_COL_KERNEL_start];
	d->end = v[CS_COL_KERNEL_end];
	d->launch_start = v[CS_COL_KERNEL_launchStart];
	d->launch_end = v[CS_COL_KERNEL_launchEnd];
	d->name_id = v[CS_COL_KERNEL_nameId];
	d->stack_id = v[CS_COL_KERNEL_stackId];
	d->pid = (uint32_t)v[CS_COL_KERNEL_pid];
	d->launch_tid = (uint32_t)v[CS_COL_KERNEL_launchTid];
	d->stream_id = (uint32_t)v[CS_COL_KERNEL_streamId];
	d->device_id = (int32_t)v[CS_COL_KERNEL_deviceId];
	d->graph = v[CS_COL_KERNEL_graphId] != CS_ID_NONE;
	d->grid_blocks = blocks > INT32_MAX ? INT32_MAX : blocks < 0 ? 0 : (int32_t)blocks;
}

/*
 * Kernels are most of a trace: two threads read them, each a part of the table into its own slice
 * of the array (allocated at its final size, so that neither moves it), each through its own
 * connection (a cs_trace is not shared between threads).
 */
struct kernel_part {
	const char *path;
	cs_trace *t;	    /* the caller's trace, or NULL: open path */
	int64_t first, end; /* rows of the table */
	cs_a_kernel *dst;   /* end - first slots */
	int64_t n;
	int rc;
	cs_error err;
};

static int row_kernel(const int64_t *v, void *arg)
{
	struct kernel_part *kp = arg;

	if (kp->n >= kp->end - kp->first)
		return CS_ERR_CORRUPT; /* more rows than the table said it has */
	fill_kernel(&kp->dst[kp->n++], v);
	return 0;
}

static void *kernel_part_run(void *arg)
{
	struct kernel_part *kp = arg;
	cs_trace *t = kp->t;

	if (!t) {
		kp->rc = cs_trace_open_flags(kp->path, CS_TRACE_ONE_THREAD, &t, &kp->err);
		if (kp->rc < 0)
			return NULL;
	}
	kp->rc = cs_trace_scan_rows(t, CS_EV_KERNEL, kp->first, kp->end, kernel_cols, NKERNEL_COLS,
				    row_kernel, kp, &kp->err);
	if (kp->rc == CS_ERR_CORRUPT && !kp->err.msg[0])
		cs_error_set(&kp->err, kp->rc, "cannot read '%s': damaged file (%s)", kp->path,
			     cs_event_kind_table(CS_EV_KERNEL));
	if (t != kp->t)
		cs_trace_close(t);
	return NULL;
}

/* The columns memcpys and memsets share, at the same place in both tables; bytes and the stack
 * are at places of their own. */
#define SAME_PLACE(column)                                                         \
	_Static_assert((int)CS_COL_MEMCPY_##column == (int)CS_COL_MEMSET_##column, \
		       #column " of memcpys and memsets")
SAME_PLACE(start);
SAME_PLACE(end);
SAME_PLACE(launchStart);
SAME_PLACE(launchEnd);
SAME_PLACE(pid);
SAME_PLACE(launchTid);
SAME_PLACE(streamId);
SAME_PLACE(deviceId);
#undef SAME_PLACE

static void fill_copy(cs_a_copy *d, const int64_t *v, int64_t bytes, int64_t stack_id)
{
	d->start = v[CS_COL_MEMCPY_start];
	d->end = v[CS_COL_MEMCPY_end];
	d->launch_start = v[CS_COL_MEMCPY_launchStart];
	d->launch_end = v[CS_COL_MEMCPY_launchEnd];
	d->bytes = bytes;
	d->stack_id = stack_id;
	d->pid = (uint32_t)v[CS_COL_MEMCPY_pid];
	d->launch_tid = (uint32_t)v[CS_COL_MEMCPY_launchTid];
	d->stream_id = (uint32_t)v[CS_COL_MEMCPY_streamId];
	d->device_id = (int32_t)v[CS_COL_MEMCPY_deviceId];
}

static int row_memcpy(const int64_t *v, void *arg)
{
	struct load_ctx *c = arg;
	cs_analysis *a = c->a;
	cs_a_copy *d =
		next_slot((void **)&a->copies, &a->ncopies, &c->caps[CS_EV_MEMCPY], sizeof(*d));

	if (!d)
		return CS_ERR_NOMEM;
	fill_copy(d, v, v[CS_COL_MEMCPY_bytes], v[CS_COL_MEMCPY_stackId]);
	d->copy_kind = (int32_t)v[CS_COL_MEMCPY_copyKind];
	d->src_kind = (int32_t)v[CS_COL_MEMCPY_srcKind];
	d->dst_kind = (int32_t)v[CS_COL_MEMCPY_dstKind];
	d->is_async = (int32_t)v[CS_COL_MEMCPY_isAsync];
	d->is_memset = 0;
	return 0;
}

static int row_memset(const int64_t *v, void *arg)
{
	struct load_ctx *c = arg;
	cs_a_copy *d =
		next_slot((void **)&c->memsets, &c->nmemsets, &c->caps[CS_EV_MEMSET], sizeof(*d));

	if (!d)
		return CS_ERR_NOMEM;
	fill_copy(d, v, v[CS_COL_MEMSET_bytes], v[CS_COL_MEMSET_stackId]);
	d->copy_kind = CS_COPY_UNKNOWN;
	d->src_kind = CS_MEM_UNKNOWN;
	d->dst_kind = (int32_t)v[CS_COL_MEMSET_memKind];
	d->is_async = (int32_t)v[CS_COL_MEMSET_isAsync];
	d->is_memset = 1;
	return 0;
}

static int row_memory(const int64_t *v, void *arg)
{
	struct load_ctx *c = arg;
	cs_analysis *a = c->a;
	cs_a_memory *d =
		next_slot((void **)&a->memory, &a->nmemory, &c->caps[CS_EV_MEMORY], sizeof(*d));

	if (!d)
		return CS_ERR_NOMEM;
	d->start = v[CS_COL_MEMORY_start];
	d->bytes = v[CS_COL_MEMORY_bytes];
	d->address = (uint64_t)v[CS_COL_MEMORY_address];
	d->stack_id = v[CS_COL_MEMORY_stackId];
	d->pid = (uint32_t)v[CS_COL_MEMORY_pid];
	d->device_id = (int32_t)v[CS_COL_MEMORY_deviceId];
	d->is_vmm = (int32_t)v[CS_COL_MEMORY_isVmm];
	d->result = (int32_t)v[CS_COL_MEMORY_returnValue];
	d->mem_kind = (int32_t)v[CS_COL_MEMORY_memKind];
	d->op = (int32_t)v[CS_COL_MEMORY_memoryOperationType];
	return 0;
}

int cs_a_memory_is_device(const cs_a_memory *r)
{
	if (r->is_vmm)
		return 1;
	switch (r->mem_kind) {
	case CS_MEM_PAGEABLE:
	case CS_MEM_PINNED:
	case CS_MEM_DEVICE_STATIC:
	case CS_MEM_MANAGED_STATIC:
		return 0;
	default:
		return 1;
	}
}

static int row_sync(const int64_t *v, void *arg)
{
	struct load_ctx *c = arg;
	cs_analysis *a = c->a;
	cs_a_sync *d = next_slot((void **)&a->syncs, &a->nsyncs, &c->caps[CS_EV_SYNC], sizeof(*d));

	if (!d)
		return CS_ERR_NOMEM;
	d->start = v[CS_COL_SYNC_start];
	d->end = v[CS_COL_SYNC_end];
	d->stack_id = v[CS_COL_SYNC_stackId];
	d->pid = (uint32_t)v[CS_COL_SYNC_pid];
	d->tid = (uint32_t)v[CS_COL_SYNC_tid];
	d->stream_id = v[CS_COL_SYNC_streamId];
	d->type = (int32_t)v[CS_COL_SYNC_syncType];
	d->host_wait = cs_sync_type_is_host_wait(d->type);
	d->cbid = (int32_t)v[CS_COL_SYNC_cbid];
	d->result = (int32_t)v[CS_COL_SYNC_returnValue];
	return 0;
}

/*
 * A host that polls (cudaEventQuery or cudaStreamQuery in a loop until it succeeds) waits as
 * surely as one that synchronizes: a successful query right after a not-ready one of the same
 * kind, on the same stream, by the same thread (no other wait or query of that thread between)
 * ends a wait, and is marked as a host wait. 0, or CS_ERR_NOMEM.
 */
static int mark_polling_waits(cs_analysis *a)
{
	struct u64map last; /* (pid, tid) -> index of that thread's previous sync row */

	u64map_init(&last, sizeof(int64_t));
	for (int64_t i = 0; i < a->nsyncs; i++) {
		cs_a_sync *y = &a->syncs[i];
		uint64_t key = (uint64_t)y->pid << 32 | y->tid;
		int created;
		int64_t *prev = u64map_put(&last, key, &created);

		if (!prev) {
			u64map_free(&last);
			return CS_ERR_NOMEM;
		}
		if (!created && y->result == 0 &&
		    (y->type == CS_SYNC_EVENT_QUERY || y->type == CS_SYNC_STREAM_QUERY)) {
			const cs_a_sync *p = &a->syncs[*prev];

			if (p->type == y->type && p->result != 0 && p->stream_id == y->stream_id)
				y->host_wait = 1;
		}
		*prev = i;
	}
	u64map_free(&last);
	return 0;
}

/* A launch of GPU work by a thread, for finding what a thread launched last. */
struct thread_launch {
	uint64_t thread; /* pid << 32 | tid */
	int64_t t;	 /* launch time */
	int64_t copy;	 /* index in a->copies, or -1 for a kernel */
};

static int cmp_sync_start(const void *pa, const void *pb)
{
	const cs_a_sync *x = pa, *y = pb;

	return x->start < y->start ? -1 : x->start > y->start;
}

int cs_api_is_host_func(const char *name)
{
	static const char *const names[] = {"cudaLaunchHostFunc", "cuLaunchHostFunc",
					    "cudaStreamAddCallback", "cuStreamAddCallback"};

	for (size_t i = 0; name && i < sizeof(names) / sizeof(names[0]); i++)
		if (strncmp(name, names[i], strlen(names[i])) == 0)
			return 1;
	return 0;
}

/* The host function call h as a host wait when the last GPU work its thread launched before it
 * is a device-to-host copy; 1 when it is, 0 when not. */
static int host_func_wait(const cs_analysis *a, const struct thread_launch *v, int64_t n,
			  const cs_a_api *h, cs_a_sync *out, int64_t *copy_end)
{
	uint64_t key = (uint64_t)h->pid << 32 | h->tid;
	int64_t lo = 0, hi = n;
	const cs_a_copy *c;

	while (lo < hi) { /* first launch of a later thread, or of this thread at or after h */
		int64_t mid = lo + (hi - lo) / 2;

		if (v[mid].thread < key || (v[mid].thread == key && v[mid].t < h->start))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || v[lo - 1].thread != key || v[lo - 1].copy < 0)
		return 0;
	c = &a->copies[v[lo - 1].copy];
	if (c->is_memset || (c->copy_kind != CS_COPY_DTOH && c->copy_kind != CS_COPY_ATOH) ||
	    c->end == CS_TS_UNKNOWN)
		return 0;
	memset(out, 0, sizeof(*out));
	out->start = h->start;
	out->end = h->end != CS_TS_UNKNOWN && h->end > c->end ? h->end : c->end;
	out->stack_id = h->stack_id;
	out->pid = h->pid;
	out->tid = h->tid;
	out->stream_id = c->stream_id;
	out->type = CS_SYNC_HOST_FUNC;
	out->host_wait = 1;
	out->cbid = h->cbid;
	*copy_end = c->end;
	return 1;
}

/* A call of a host thread (a launch, a wait, any recorded API call), for wake_threads(). */
struct thread_call {
	uint64_t thread; /* pid << 32 | tid; first, then start: cs_lower_bound_key_i64() */
	int64_t start, end;
};

static int add_thread_call(struct thread_call **v, int64_t *n, int64_t *cap, uint32_t pid,
			   uint32_t tid, int64_t start, int64_t end)
{
	if (start == CS_TS_UNKNOWN || end == CS_TS_UNKNOWN)
		return 0;
	if (*n == *cap) {
		int64_t nc = *cap ? *cap * 2 : 1024;
		struct thread_call *nv = realloc(*v, (size_t)nc * sizeof(*nv));

		if (!nv)
			return CS_ERR_NOMEM;
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = (struct thread_call){(uint64_t)pid << 32 | tid, start, end};
	return 0;
}

/*
 * The thread a host function's notification woke. The thread that enqueues the copy and the host
 * function need not be the one that waits for it: XLA's transfer thread does both while the
 * Python thread that asked for the value blocks, in no CUDA call, until the host function has
 * run. The woken thread is taken to be the one that launches the process's next GPU work after
 * the host function could run (w: the copy's end, and the call that enqueued it returned), when
 * that thread was in no CUDA call from before the copy's end until w. Its wait then runs from the
 * end of its last call before w to the copy's end (what the host function's own dispatch takes
 * after that stays host time of the thread); otherwise it stays on the enqueuing thread. The part
 * of that time the thread spent working before it blocked is not in the trace: it is counted as
 * the wait.
 * 0, or CS_ERR_NOMEM.
 */
static int wake_threads(const cs_analysis *a, cs_a_sync *add, const int64_t *copy_end,
			int64_t nadd)
{
	struct thread_call *calls = NULL, *launches = NULL;
	int64_t nc = 0, cc = 0, nl = 0, cl = 0;
	int rc = CS_ERR_NOMEM;

	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];

		if (add_thread_call(&calls, &nc, &cc, k->pid, k->launch_tid, k->launch_start,
				    k->launch_end) ||
		    add_thread_call(&launches, &nl, &cl, k->pid, k->launch_tid, k->launch_start,
				    k->launch_end))
			goto out;
	}
	for (int64_t i = 0; i < a->ncopies; i++) {
		const cs_a_copy *c = &a->copies[i];

		if (add_thread_call(&calls, &nc, &cc, c->pid, c->launch_tid, c->launch_start,
				    c->launch_end) ||
		    add_thread_call(&launches, &nl, &cl, c->pid, c->launch_tid, c->launch_start,
				    c->launch_end))
			goto out;
	}
	for (int64_t i = 0; i < a->napis; i++)
		if (add_thread_call(&calls, &nc, &cc, a->apis[i].pid, a->apis[i].tid,
				    a->apis[i].start, a->apis[i].end))
			goto out;
	for (int64_t i = 0; i < a->nsyncs; i++)
		if (add_thread_call(&calls, &nc, &cc, a->syncs[i].pid, a->syncs[i].tid,
				    a->syncs[i].start, a->syncs[i].end))
			goto out;
	{
		static const cs_sort_key by_thread[] = {
			{offsetof(struct thread_call, thread), CS_KEY_U64},
			{offsetof(struct thread_call, start), CS_KEY_I64},
		};
		static const cs_sort_key by_start[] = {
			{offsetof(struct thread_call, start), CS_KEY_I64},
		};

		cs_sort_records(calls, (size_t)nc, sizeof(*calls), by_thread, 2);
		cs_sort_records(launches, (size_t)nl, sizeof(*launches), by_start, 1);
	}
	for (int64_t j = 0; j < nadd; j++) {
		cs_a_sync *y = &add[j];
		uint64_t mine = (uint64_t)y->pid << 32 | y->tid, key = 0;
		int64_t w = y->end, lo = 0, hi = nl, p;

		while (lo < hi) { /* the first launch at or after w */
			int64_t mid = lo + (hi - lo) / 2;

			if (launches[mid].start < w)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < nl; lo++)
			if (launches[lo].thread >> 32 == y->pid) {
				key = launches[lo].thread;
				break;
			}
		if (lo == nl || key == mine)
			continue;
		/* its last call before w: p - 1 */
		p = cs_lower_bound_key_i64(calls, sizeof(*calls), nc, key, w);
		if (p == 0 || calls[p - 1].thread != key || calls[p - 1].end >= copy_end[j])
			continue;
		y->tid = (uint32_t)key;
		y->start = calls[p - 1].end;
		y->end = copy_end[j];
	}
	rc = 0;
out:
	free(calls);
	free(launches);
	return rc;
}

/*
 * A host that has the stream call it back after a device-to-host copy (cudaLaunchHostFunc,
 * cuLaunchHostFunc or a stream callback, enqueued by the thread that launched the copy with no
 * other GPU work of that thread between: how XLA learns that a transfer is done) can wait for
 * the copy without any CUDA wait call: its thread blocks on its own notification. Each such call
 * becomes a host wait (CS_SYNC_HOST_FUNC) from the call to the later of its end and the copy's
 * end, merged into a->syncs by start. Whether the host really waited shows as for any other wait:
 * d2h-sync charges it only when the GPU ran out of work before the host launched again. 0, or
 * CS_ERR_NOMEM.
 */
static int add_host_func_waits(cs_analysis *a)
{
	struct thread_launch *v = NULL;
	struct u64map callers; /* the threads that enqueued a host function */
	cs_a_sync *add = NULL, *merged = NULL;
	int64_t *copy_end = NULL, nfunc = 0, n = 0, nadd = 0, nv = 0;
	int rc = CS_ERR_NOMEM, created;

	u64map_init(&callers, 1);
	for (int64_t i = 0; i < a->napis; i++)
		if (cs_api_is_host_func(cs_analysis_string(a, a->apis[i].name_id))) {
			if (!u64map_put(&callers, (uint64_t)a->apis[i].pid << 32 | a->apis[i].tid,
					&created))
				goto out;
			nfunc++;
		}
	if (nfunc == 0) {
		u64map_free(&callers);
		return 0;
	}
	/* the launches of those threads only */
	for (int64_t i = 0; i < a->nkernels; i++)
		nv += u64map_get(&callers, (uint64_t)a->kernels[i].pid << 32 |
						   a->kernels[i].launch_tid) != NULL;
	for (int64_t i = 0; i < a->ncopies; i++)
		nv += u64map_get(&callers, (uint64_t)a->copies[i].pid << 32 |
						   a->copies[i].launch_tid) != NULL;
	v = malloc(((size_t)nv + 1) * sizeof(*v));
	add = malloc((size_t)nfunc * sizeof(*add));
	copy_end = malloc((size_t)nfunc * sizeof(*copy_end));
	if (!v || !add || !copy_end)
		goto out;
	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];
		int64_t t = cs_launch_time(k->launch_start, k->start);

		if (!u64map_get(&callers, (uint64_t)k->pid << 32 | k->launch_tid))
			continue;
		if (k->launch_start != CS_TS_UNKNOWN && t != CS_TS_UNKNOWN)
			v[n++] = (struct thread_launch){(uint64_t)k->pid << 32 | k->launch_tid, t,
							-1};
	}
	for (int64_t i = 0; i < a->ncopies; i++) {
		const cs_a_copy *c = &a->copies[i];
		int64_t t = cs_launch_time(c->launch_start, c->start);

		if (!u64map_get(&callers, (uint64_t)c->pid << 32 | c->launch_tid))
			continue;
		if (c->launch_start != CS_TS_UNKNOWN && t != CS_TS_UNKNOWN)
			v[n++] = (struct thread_launch){(uint64_t)c->pid << 32 | c->launch_tid, t,
							i};
	}
	{
		static const cs_sort_key keys[] = {
			{offsetof(struct thread_launch, thread), CS_KEY_U64},
			{offsetof(struct thread_launch, t), CS_KEY_I64},
		};

		cs_sort_records(v, (size_t)n, sizeof(*v), keys, 2);
	}
	for (int64_t i = 0; i < a->napis; i++) {
		const cs_a_api *h = &a->apis[i];

		if (h->start != CS_TS_UNKNOWN &&
		    cs_api_is_host_func(cs_analysis_string(a, h->name_id)) &&
		    host_func_wait(a, v, n, h, &add[nadd], &copy_end[nadd]))
			nadd++;
	}
	rc = 0;
	if (nadd == 0)
		goto out;
	rc = wake_threads(a, add, copy_end, nadd);
	if (rc)
		goto out;
	cs_sort(add, (size_t)nadd, sizeof(*add), cmp_sync_start);
	rc = CS_ERR_NOMEM;
	merged = malloc((size_t)(a->nsyncs + nadd) * sizeof(*merged));
	if (!merged)
		goto out;
	/* the recorded waits first on equal starts */
	for (int64_t i = 0, j = 0, w = 0; i < a->nsyncs || j < nadd; w++)
		merged[w] = j >= nadd || (i < a->nsyncs && a->syncs[i].start <= add[j].start)
				    ? a->syncs[i++]
				    : add[j++];
	free(a->syncs);
	a->syncs = merged;
	a->nsyncs += nadd;
	rc = 0;
out:
	u64map_free(&callers);
	free(v);
	free(add);
	free(copy_end);
	return rc;
}

static int row_api(const int64_t *v, void *arg)
{
	struct load_ctx *c = arg;
	cs_analysis *a = c->a;
	cs_a_api *d = next_slot((void **)&a->apis, &a->napis, &c->caps[CS_EV_API], sizeof(*d));

	if (!d)
		return CS_ERR_NOMEM;
	d->start = v[CS_COL_API_start];
	d->end = v[CS_COL_API_end];
	d->name_id = v[CS_COL_API_nameId];
	d->stack_id = v[CS_COL_API_stackId];
	d->pid = (uint32_t)v[CS_COL_API_pid];
	d->tid = (uint32_t)v[CS_COL_API_tid];
	d->cbid = (int32_t)v[CS_COL_API_cbid];
	d->result = (int32_t)v[CS_COL_API_returnValue];
	return 0;
}

static int row_nvtx(const int64_t *v, void *arg)
{
	struct load_ctx *c = arg;
	cs_analysis *a = c->a;
	cs_a_nvtx *d = next_slot((void **)&a->nvtx, &a->nnvtx, &c->caps[CS_EV_NVTX], sizeof(*d));

	if (!d)
		return CS_ERR_NOMEM;
	d->start = v[CS_COL_NVTX_start];
	d->end = v[CS_COL_NVTX_end];
	d->text_id = v[CS_COL_NVTX_textId];
	d->pid = (uint32_t)v[CS_COL_NVTX_pid];
	d->tid = (uint32_t)v[CS_COL_NVTX_tid];
	d->type = (int32_t)v[CS_COL_NVTX_nvtxType];
	d->depth = (int32_t)v[CS_COL_NVTX_depth];
	return 0;
}

struct table_load {
	enum cs_event_kind kind;
	const int *cols;
	int ncols;
	int (*row)(const int64_t *v, void *arg);
};

#define TABLE(kind, name)                                                                          \
	{                                                                                          \
		kind, name##_cols, (int)(sizeof(name##_cols) / sizeof(name##_cols[0])), row_##name \
	}

static const struct table_load tables[] = {
	TABLE(CS_EV_MEMCPY, memcpy), TABLE(CS_EV_MEMSET, memset), TABLE(CS_EV_MEMORY, memory),
	TABLE(CS_EV_SYNC, sync),     TABLE(CS_EV_API, api),	  TABLE(CS_EV_NVTX, nvtx),
};

#undef TABLE

/*
 * Merge the memsets into the copies by start (memcpys first on equal starts). The memcpys are
 * moved to the end of the array first, so that the merge can write from the front without
 * overwriting a memcpy it has not read.
 */
static int merge_memsets(struct load_ctx *c)
{
	cs_analysis *a = c->a;
	int64_t ncpy = a->ncopies, nset = c->nmemsets, i = 0, j = 0, w = 0;

	if (nset == 0)
		return 0;
	if (ncpy + nset > c->caps[CS_EV_MEMCPY]) {
		cs_a_copy *nv = realloc(a->copies, (size_t)(ncpy + nset) * sizeof(*nv));

		if (!nv)
			return CS_ERR_NOMEM;
		a->copies = nv;
		c->caps[CS_EV_MEMCPY] = ncpy + nset;
	}
	memmove(a->copies + nset, a->copies, (size_t)ncpy * sizeof(*a->copies));
	while (i < ncpy || j < nset) {
		const cs_a_copy *cp = i < ncpy ? &a->copies[nset + i] : NULL;
		const cs_a_copy *ms = j < nset ? &c->memsets[j] : NULL;

		if (cp && (!ms || cp->start <= ms->start)) {
			if (w != nset + i)
				a->copies[w] = *cp;
			i++;
		} else {
			a->copies[w] = *ms;
			j++;
		}
		w++;
	}
	a->ncopies = ncpy + nset;
	return 0;
}

/* ---- derived tables ---- */

/*
 * The stream group of (pid, device, stream), numbered in order of first appearance; -1 without
 * memory. The key is wider than 64 bits, so it is looked up in two steps: (pid, device) gets a
 * number of its own, then (that number, stream) gives the group. last caches the previous kernel's
 * answer: a stream's kernels mostly come one after another.
 */
struct stream_groups {
	struct u64map pairs;   /* pid << 32 | device -> int32_t: the pair's number */
	struct u64map streams; /* pair << 32 | stream -> int32_t: the group */
	int32_t ngroups;
	int has_last;
	uint32_t last_pid, last_stream;
	int32_t last_device, last_group;
};

static int32_t stream_group(struct stream_groups *sg, const cs_a_kernel *k)
{
	int32_t *pair, *group;
	int created;

	if (sg->has_last && sg->last_pid == k->pid && sg->last_device == k->device_id &&
	    sg->last_stream == k->stream_id)
		return sg->last_group;
	pair = u64map_put(&sg->pairs, (uint64_t)k->pid << 32 | (uint32_t)k->device_id, &created);
	if (!pair)
		return -1;
	if (created)
		*pair = (int32_t)(sg->pairs.n - 1);
	group = u64map_put(&sg->streams, (uint64_t)(uint32_t)*pair << 32 | k->stream_id, &created);
	if (!group)
		return -1;
	if (created)
		*group = sg->ngroups++;
	sg->has_last = 1;
	sg->last_pid = k->pid;
	sg->last_device = k->device_id;
	sg->last_stream = k->stream_id;
	sg->last_group = *group;
	return *group;
}

/*
 * Kernel indices grouped by stream: each kernel gets the group of its (pid, device, stream), in
 * order of first appearance; a counting sort keeps the start order inside each group.
 */
static int build_stream_order(cs_analysis *a)
{
	struct stream_groups sg;
	int32_t *group = NULL, *first = NULL;
	int rc = CS_ERR_NOMEM;

	if (a->nkernels > INT32_MAX)
		return CS_ERR_INVALID;
	memset(&sg, 0, sizeof(sg));
	u64map_init(&sg.pairs, sizeof(int32_t));
	u64map_init(&sg.streams, sizeof(int32_t));
	a->kernel_stream_order = malloc(((size_t)a->nkernels + 1) * sizeof(int32_t));
	group = malloc(((size_t)a->nkernels + 1) * sizeof(*group));
	if (!a->kernel_stream_order || !group)
		goto out;
	for (int64_t i = 0; i < a->nkernels; i++) {
		group[i] = stream_group(&sg, &a->kernels[i]);
		if (group[i] < 0)
			goto out;
	}
	first = calloc((size_t)sg.ngroups + 1, sizeof(*first));
	if (!first)
		goto out;
	for (int64_t i = 0; i < a->nkernels; i++)
		first[group[i] + 1]++;
	for (int32_t g = 0; g < sg.ngroups; g++)
		first[g + 1] += first[g];
	for (int64_t i = 0; i < a->nkernels; i++)
		a->kernel_stream_order[first[group[i]]++] = (int32_t)i;
	rc = 0;
out:
	u64map_free(&sg.pairs);
	u64map_free(&sg.streams);
	free(group);
	free(first);
	return rc;
}

/* The reach table of a start-sorted array: end of element i is ends(base, i). */
static int64_t *build_reach(const void *base, size_t size, int64_t n, int64_t *nblocks,
			    int64_t *longest)
{
	int64_t nb = (n + REACH_BLOCK - 1) / REACH_BLOCK, reach = INT64_MIN;
	int64_t *r = malloc(((size_t)nb + 1) * sizeof(*r));

	*longest = 0;
	if (!r)
		return NULL;
	for (int64_t i = 0; i < n; i++) {
		/* start and end are the first two members of every array's element */
		const int64_t *se = (const int64_t *)((const char *)base + (size_t)i * size);
		int64_t end = se[1] != CS_TS_UNKNOWN ? se[1] : se[0];
		int64_t d = duration(se[0], se[1]);

		if (end > reach)
			reach = end;
		if (d > *longest)
			*longest = d;
		if (i % REACH_BLOCK == REACH_BLOCK - 1 || i == n - 1)
			r[i / REACH_BLOCK] = reach;
	}
	*nblocks = nb;
	return r;
}

static int device_cb(const cs_device *d, void *arg)
{
	cs_analysis *a = arg;

	a->device_memory_total = d->total_memory;
	return 1; /* the first device is enough */
}

/* The other tables, one pass each. */
static int load_other_tables(cs_trace *t, struct load_ctx *c, cs_error *err)
{
	for (size_t k = 0; k < sizeof(tables) / sizeof(tables[0]); k++) {
		const struct table_load *tl = &tables[k];
		cs_error serr = {0, ""};
		int rc = cs_trace_scan_rows(t, tl->kind, c->first[tl->kind], c->end[tl->kind],
					    tl->cols, tl->ncols, tl->row, c, &serr);

		if (rc == CS_ERR_NOMEM)
			return cs_error_set(err, rc, "out of memory loading '%s'",
					    cs_trace_path(t));
		if (rc < 0)
			return cs_error_set(err, rc, "%s", serr.msg);
	}
	return 0;
}

/*
 * Every table. With many kernels a second thread reads the last part of the kernel table while
 * this one reads the first part and then the other tables, the split chosen so that both read
 * about as many rows.
 */
static int load_tables(cs_trace *t, struct load_ctx *c, cs_error *err)
{
	cs_analysis *a = c->a;
	int64_t nk = c->rows[CS_EV_KERNEL], other = 0, split = nk, half;
	int64_t kfirst = c->first[CS_EV_KERNEL];
	struct kernel_part mine, theirs;
	pthread_t thread;
	int threaded = 0, rc;

	for (int k = 0; k < CS_EV_COUNT; k++)
		if (k != CS_EV_KERNEL)
			other += c->rows[k];
	half = (nk + other) / 2;
	if (nk >= PARALLEL_MIN_KERNELS)
		split = half > other ? half - other : 0;
	memset(&mine, 0, sizeof(mine));
	memset(&theirs, 0, sizeof(theirs));
	mine.path = theirs.path = cs_trace_path(t);
	mine.t = t;
	mine.first = kfirst;
	mine.end = kfirst + split;
	mine.dst = a->kernels;
	theirs.first = kfirst + split;
	theirs.end = kfirst + nk;
	theirs.dst = a->kernels + split;
	if (split < nk)
		threaded = pthread_create(&thread, NULL, kernel_part_run, &theirs) == 0;
	if (!threaded)
		mine.end = kfirst + nk; /* this thread reads the whole table */
	kernel_part_run(&mine);
	rc = mine.rc < 0 ? mine.rc : load_other_tables(t, c, err);
	if (threaded)
		pthread_join(thread, NULL);
	if (mine.rc < 0)
		return cs_error_set(err, mine.rc, "%s",
				    mine.err.msg[0] ? mine.err.msg : "cannot read");
	if (rc < 0)
		return rc;
	if (threaded && theirs.rc < 0)
		return cs_error_set(err, theirs.rc, "%s",
				    theirs.err.msg[0] ? theirs.err.msg : "cannot read");
	if (threaded && mine.n < split)
		memmove(a->kernels + mine.n, theirs.dst, (size_t)theirs.n * sizeof(*a->kernels));
	a->nkernels = mine.n + theirs.n;
	return 0;
}

/*
 * A name id without a string (only in a damaged file), or above CS_NAME_ID_MAX(strings), reads as
 * no name: the rules keep arrays indexed by name id (of max id + 1 entries), which such an id (up
 * to 2^63) would make huge or overflow. cuscope numbers strings from 1 without gaps, so only a
 * crafted file has an id beyond four times its strings.
 */
#define CS_NAME_ID_MAX(rows) cs_sat_add(cs_sat_mul((rows), 4), 1024)

static int name_kept(cs_analysis *a, int64_t id, int64_t max)
{
	return id >= 0 && id <= max && cs_trace_string(a->trace, id);
}

static void drop_dangling_names(cs_analysis *a)
{
	int64_t max = CS_NAME_ID_MAX(cs_trace_string_rows(a->trace)), end = 0;

	for (int64_t i = 0; i < a->nkernels; i++) {
		if (a->kernels[i].name_id >= 0 && !name_kept(a, a->kernels[i].name_id, max))
			a->kernels[i].name_id = CS_ID_NONE;
		if (a->kernels[i].name_id >= end)
			end = cs_sat_add(a->kernels[i].name_id, 1);
	}
	if (a->index)
		a->index->kernel_names = end;
	for (int64_t i = 0; i < a->napis; i++)
		if (a->apis[i].name_id >= 0 && !name_kept(a, a->apis[i].name_id, max))
			a->apis[i].name_id = CS_ID_NONE;
}

/* ---- a window of a large trace ---- */

/*
 * What the rules and their facts build from the model, per event, beyond the model's arrays: the
 * peak memory of `report` less the model's arrays, over the events, on the generated traces of
 * tests/bench/gen_trace (docs/performance.md, "Report on 100 million events").
 */
#define RULES_BYTES_PER_EVENT 28
/* The default limit: a quarter of the physical memory, at most this. */
#define DEFAULT_MAX_BYTES (INT64_C(4) << 30)

int64_t cs_analysis_estimate(const int64_t counts[CS_EV_COUNT])
{
	/* each table's element; memsets are loaded apart before they join the copies (twice), and
	 * kernels have their stream order and its groups (build_stream_order()) */
	static const int64_t row[CS_EV_COUNT] = {
		[CS_EV_KERNEL] = sizeof(cs_a_kernel) + 2 * sizeof(int32_t),
		[CS_EV_MEMCPY] = sizeof(cs_a_copy),
		[CS_EV_MEMSET] = 2 * sizeof(cs_a_copy),
		[CS_EV_MEMORY] = sizeof(cs_a_memory),
		[CS_EV_SYNC] = sizeof(cs_a_sync),
		[CS_EV_API] = sizeof(cs_a_api),
		[CS_EV_NVTX] = sizeof(cs_a_nvtx),
	};
	int64_t bytes = 0;

	for (int k = 0; k < CS_EV_COUNT; k++)
		if (counts[k] > 0)
			bytes = cs_sat_add(bytes,
					   cs_sat_mul(counts[k], row[k] + RULES_BYTES_PER_EVENT));
	return bytes;
}

int64_t cs_analysis_default_max_bytes(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
	int64_t max = DEFAULT_MAX_BYTES;

	if (pages > 0 && size > 0 && (int64_t)pages / 4 < max / size)
		max = (int64_t)pages / 4 * size;
	return max;
}

/* The rows of each table whose events start in [t0, t1), and their estimated model's bytes. */
static int window_rows(cs_trace *t, const struct load_ctx *c, int64_t t0, int64_t t1,
		       int64_t *first, int64_t *end, int64_t *bytes, cs_error *err)
{
	int64_t n[CS_EV_COUNT];

	for (int k = 0; k < CS_EV_COUNT; k++) {
		int rc;

		first[k] = end[k] = n[k] = 0;
		if (c->sum.counts[k] <= 0)
			continue;
		rc = cs_trace_row_at(t, (enum cs_event_kind)k, t0, &first[k], err);
		if (rc >= 0)
			rc = cs_trace_row_at(t, (enum cs_event_kind)k, t1, &end[k], err);
		if (rc < 0)
			return rc;
		if (end[k] < first[k])
			end[k] = first[k];
		n[k] = end[k] - first[k];
	}
	*bytes = cs_analysis_estimate(n);
	return 0;
}

/*
 * Which rows to load (c->first, c->end, c->rows) and a->window: every row when the whole trace
 * fits in o->max_bytes and no window is asked; else the rows of the window asked, or of the whole
 * trace's time, narrowed to the widest range around its middle that fits. A time range's rows
 * come from binary searches on the tables' time order (cs_trace_row_at()), without reading them.
 */
static int choose_window(cs_trace *t, struct load_ctx *c, const cs_load_opts *o, cs_error *err)
{
	cs_load_window *w = &c->a->window;
	int asked = o && (o->from != CS_TS_UNKNOWN || o->to != CS_TS_UNKNOWN);
	int64_t lo, hi, first[CS_EV_COUNT], end[CS_EV_COUNT], bytes;
	char a[CS_FMT_MAX], b[CS_FMT_MAX], x[CS_FMT_MAX], y[CS_FMT_MAX];
	int rc;

	memset(w, 0, sizeof(*w));
	w->trace_start = c->a->trace_start;
	w->trace_end = c->a->trace_end;
	w->max_bytes = o && o->max_bytes > 0 ? o->max_bytes : 0;
	w->trace_bytes = cs_analysis_estimate(c->sum.counts);
	for (int k = 0; k < CS_EV_COUNT; k++) {
		c->first[k] = 0;
		c->end[k] = k == CS_EV_KERNEL ? c->sum.counts[k] : INT64_MAX;
		c->rows[k] = c->sum.counts[k];
		w->trace_events = cs_sat_add(w->trace_events, c->sum.counts[k]);
	}
	w->events = w->trace_events;
	w->bytes = w->trace_bytes;
	if (!asked && (!w->max_bytes || w->trace_bytes <= w->max_bytes))
		return 0;
	lo = c->sum.start;
	hi = c->sum.end != CS_TS_UNKNOWN ? c->sum.end + 1 : CS_TS_UNKNOWN;
	if (asked && (lo == CS_TS_UNKNOWN || hi == CS_TS_UNKNOWN ||
		      (o->from != CS_TS_UNKNOWN && o->from >= hi) ||
		      (o->to != CS_TS_UNKNOWN && o->to <= lo)))
		return cs_error_set(
			err, CS_ERR_INVALID,
			"the window %s to %s is outside '%s' (events from %s to %s)",
			o->from != CS_TS_UNKNOWN ? cs_fmt_duration(a, sizeof(a), o->from)
						 : "its start",
			o->to != CS_TS_UNKNOWN ? cs_fmt_duration(b, sizeof(b), o->to) : "the end",
			cs_trace_path(t), cs_fmt_duration(x, sizeof(x), w->trace_start),
			cs_fmt_duration(y, sizeof(y), w->trace_end));
	if (lo == CS_TS_UNKNOWN || hi == CS_TS_UNKNOWN)
		return 0; /* no event has a known start: nothing to cut */
	if (asked && o->from != CS_TS_UNKNOWN && o->from > lo)
		lo = o->from;
	if (asked && o->to != CS_TS_UNKNOWN && o->to < hi)
		hi = o->to;
	rc = window_rows(t, c, lo, hi, first, end, &bytes, err);
	if (rc < 0)
		return rc;
	w->asked = asked;
	w->asked_bytes = bytes;
	if (w->max_bytes && bytes > w->max_bytes) {
		/* the widest [mid - half, mid + half) that fits: a binary search on half */
		int64_t mid = lo + (hi - lo) / 2, hlo = 0, hhi = (hi - lo) / 2 + 1;

		while (hlo < hhi) {
			int64_t half = hlo + (hhi - hlo + 1) / 2;

			rc = window_rows(t, c, mid - half > lo ? mid - half : lo,
					 mid + half < hi ? mid + half : hi, first, end, &bytes,
					 err);
			if (rc < 0)
				return rc;
			if (bytes <= w->max_bytes)
				hlo = half;
			else
				hhi = half - 1;
		}
		lo = mid - hlo > lo ? mid - hlo : lo;
		hi = mid + hlo < hi ? mid + hlo : hi;
		rc = window_rows(t, c, lo, hi, first, end, &bytes, err);
		if (rc < 0)
			return rc;
		w->by_limit = 1;
	}
	w->on = 1;
	w->start = lo;
	w->end = hi;
	w->bytes = bytes;
	w->events = 0;
	for (int k = 0; k < CS_EV_COUNT; k++) {
		c->first[k] = first[k];
		c->end[k] = end[k];
		c->rows[k] = end[k] - first[k];
		w->events += c->rows[k];
	}
	if (w->events == 0 && w->by_limit)
		return cs_error_set(err, CS_ERR_INVALID,
				    "a memory limit of %s holds no event of '%s' (the whole trace "
				    "needs %s)",
				    cs_fmt_bytes(a, sizeof(a), w->max_bytes), cs_trace_path(t),
				    cs_fmt_bytes(b, sizeof(b), w->trace_bytes));
	if (w->events == 0)
		return cs_error_set(err, CS_ERR_INVALID, "no event of '%s' starts from %s to %s",
				    cs_trace_path(t), cs_fmt_duration(a, sizeof(a), lo),
				    cs_fmt_duration(b, sizeof(b), hi));
	return 0;
}

/* A count of events in words: "18.3 million", "2.10 billion", "987,654". */
static char *fmt_events(char *buf, size_t size, int64_t n)
{
	if (n >= 1000000000)
		snprintf(buf, size, "%.3g billion", (double)n / 1e9);
	else if (n >= 1000000)
		snprintf(buf, size, "%.3g million", (double)n / 1e6);
	else
		cs_fmt_count(buf, size, n);
	return buf;
}

char *cs_load_window_text(char *buf, size_t size, const cs_load_window *w)
{
	return cs_load_window_text_as(buf, size, w, "--window");
}

char *cs_load_window_text_as(char *buf, size_t size, const cs_load_window *w, const char *asked_as)
{
	char t0[CS_FMT_MAX], t1[CS_FMT_MAX], te[CS_FMT_MAX], n[CS_FMT_MAX], nt[CS_FMT_MAX];
	char need[CS_FMT_MAX], max[CS_FMT_MAX];
	int len;

	if (!size)
		return buf;
	buf[0] = '\0';
	if (!w || !w->on)
		return buf;
	cs_fmt_duration(t0, sizeof(t0), w->start);
	cs_fmt_duration(t1, sizeof(t1), w->end);
	cs_fmt_duration(te, sizeof(te), w->trace_end);
	fmt_events(n, sizeof(n), w->events);
	fmt_events(nt, sizeof(nt), w->trace_events);
	len = snprintf(buf, size, "%s to %s of %s%s%s%s: %s%s of %s events", t0, t1, te,
		       w->asked ? " (" : "", w->asked ? asked_as : "", w->asked ? ")" : "",
		       w->by_limit ? "the middle " : "", n, nt);
	if (w->by_limit && len >= 0 && (size_t)len < size)
		snprintf(buf + len, size - (size_t)len,
			 "; %s would need %s, over the memory limit of %s (--max-memory)",
			 w->asked ? "the window asked" : "the whole",
			 cs_fmt_bytes(need, sizeof(need),
				      w->asked ? w->asked_bytes : w->trace_bytes),
			 cs_fmt_bytes(max, sizeof(max), w->max_bytes));
	return buf;
}

int cs_analysis_load(cs_trace *t, cs_analysis *a, cs_error *err)
{
	return cs_analysis_load_opts(t, a, NULL, err);
}

int cs_analysis_load_opts(cs_trace *t, cs_analysis *a, const cs_load_opts *o, cs_error *err)
{
	struct load_ctx c;
	int64_t *caps, *rows;
	int rc;

	if (!t || !a)
		return cs_error_set(err, CS_ERR_INVALID, "cs_analysis_load: no trace");
	memset(a, 0, sizeof(*a));
	memset(&c, 0, sizeof(c));
	a->trace = t;
	c.a = a;
	caps = c.caps;
	rows = c.rows;
	rc = cs_trace_get_summary(t, &c.sum, err);
	if (rc < 0)
		return rc;
	a->trace_start = c.sum.start != CS_TS_UNKNOWN ? c.sum.start : 0;
	a->trace_end = c.sum.end != CS_TS_UNKNOWN ? c.sum.end : a->trace_start;
	rc = choose_window(t, &c, o, err);
	if (rc < 0)
		return rc;
	if (a->window.on) {
		a->trace_start = a->window.start;
		a->trace_end = a->window.end;
	}
	a->index = calloc(1, sizeof(*a->index));
	/* The summary has each table's row count: the arrays get their final size at once. */
	if (!a->index ||
	    reserve((void **)&a->kernels, rows[CS_EV_KERNEL], &caps[CS_EV_KERNEL],
		    sizeof(*a->kernels)) ||
	    reserve((void **)&a->copies, rows[CS_EV_MEMCPY] + rows[CS_EV_MEMSET],
		    &caps[CS_EV_MEMCPY], sizeof(*a->copies)) ||
	    reserve((void **)&c.memsets, rows[CS_EV_MEMSET], &caps[CS_EV_MEMSET],
		    sizeof(*c.memsets)) ||
	    reserve((void **)&a->memory, rows[CS_EV_MEMORY], &caps[CS_EV_MEMORY],
		    sizeof(*a->memory)) ||
	    reserve((void **)&a->syncs, rows[CS_EV_SYNC], &caps[CS_EV_SYNC], sizeof(*a->syncs)) ||
	    reserve((void **)&a->apis, rows[CS_EV_API], &caps[CS_EV_API], sizeof(*a->apis)) ||
	    reserve((void **)&a->nvtx, rows[CS_EV_NVTX], &caps[CS_EV_NVTX], sizeof(*a->nvtx))) {
		rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory loading '%s'",
				  cs_trace_path(t));
		goto fail;
	}
	rc = load_tables(t, &c, err);
	if (rc < 0)
		goto fail;
	if (merge_memsets(&c)) {
		rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory loading '%s'",
				  cs_trace_path(t));
		goto fail;
	}
	free(c.memsets);
	c.memsets = NULL;
	drop_dangling_names(a);
	if (mark_polling_waits(a) || add_host_func_waits(a)) {
		rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory loading '%s'",
				  cs_trace_path(t));
		goto fail;
	}

	rc = build_stream_order(a);
	if (rc == CS_ERR_INVALID) {
		rc = cs_error_set(err, rc, "cannot load '%s': too many kernels (%lld)",
				  cs_trace_path(t), (long long)a->nkernels);
		goto fail;
	}
	a->index->kernel_reach = build_reach(a->kernels, sizeof(*a->kernels), a->nkernels,
					     &a->index->nkernel_reach, &a->kernel_longest);
	a->index->copy_reach = build_reach(a->copies, sizeof(*a->copies), a->ncopies,
					   &a->index->ncopy_reach, &a->copy_longest);
	if (rc || !a->index->kernel_reach || !a->index->copy_reach) {
		rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory loading '%s'",
				  cs_trace_path(t));
		goto fail;
	}
	for (int64_t i = 0; i < a->nsyncs; i++) {
		int64_t d = duration(a->syncs[i].start, a->syncs[i].end);

		if (d > a->sync_longest)
			a->sync_longest = d;
	}
	/* Device memory is optional: a trace without devices reads as "unknown". */
	cs_trace_each_device(t, device_cb, a, NULL);
	return 0;
fail:
	free(c.memsets);
	cs_analysis_free(a);
	return rc;
}

void cs_analysis_free(cs_analysis *a)
{
	if (!a)
		return;
	free(a->kernels);
	free(a->copies);
	free(a->memory);
	free(a->syncs);
	free(a->apis);
	free(a->nvtx);
	free(a->kernel_stream_order);
	if (a->index) {
		free(a->index->kernel_reach);
		free(a->index->copy_reach);
		free(a->index);
	}
	memset(a, 0, sizeof(*a));
}

const char *cs_analysis_string(const cs_analysis *a, int64_t id)
{
	const char *s = a && id >= 0 ? cs_trace_string(a->trace, id) : NULL;

	return s ? s : "";
}

/* ---- lookups ---- */

int64_t cs_analysis_kernel_at(const cs_analysis *a, int64_t t)
{
	return cs_lower_bound_i64(a->kernels, sizeof(*a->kernels), a->nkernels, t);
}

int64_t cs_analysis_copy_at(const cs_analysis *a, int64_t t)
{
	return cs_lower_bound_i64(a->copies, sizeof(*a->copies), a->ncopies, t);
}

int64_t cs_analysis_sync_at(const cs_analysis *a, int64_t t)
{
	return cs_lower_bound_i64(a->syncs, sizeof(*a->syncs), a->nsyncs, t);
}

int64_t cs_analysis_memory_at(const cs_analysis *a, int64_t t)
{
	return cs_lower_bound_i64(a->memory, sizeof(*a->memory), a->nmemory, t);
}

int64_t cs_analysis_api_at(const cs_analysis *a, int64_t t)
{
	return cs_lower_bound_i64(a->apis, sizeof(*a->apis), a->napis, t);
}

int64_t cs_analysis_nvtx_at(const cs_analysis *a, int64_t t)
{
	return cs_lower_bound_i64(a->nvtx, sizeof(*a->nvtx), a->nnvtx, t);
}

/* First block whose reach is beyond t, as an element index (n when none). */
static int64_t reach_search(const int64_t *reach, int64_t nblocks, int64_t n, int64_t t)
{
	int64_t lo = 0, hi = nblocks;

	if (!reach)
		return n;
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (reach[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo * REACH_BLOCK < n ? lo * REACH_BLOCK : n;
}

int64_t cs_analysis_kernel_overlapping(const cs_analysis *a, int64_t t)
{
	if (!a->index)
		return 0;
	return reach_search(a->index->kernel_reach, a->index->nkernel_reach, a->nkernels, t);
}

int64_t cs_analysis_kernel_names(const cs_analysis *a)
{
	int64_t end = 0;

	if (a->index)
		return a->index->kernel_names;
	for (int64_t i = 0; i < a->nkernels; i++)
		if (a->kernels[i].name_id >= end)
			end = cs_sat_add(a->kernels[i].name_id, 1);
	return end;
}

int64_t cs_analysis_copy_overlapping(const cs_analysis *a, int64_t t)
{
	if (!a->index)
		return 0;
	return reach_search(a->index->copy_reach, a->index->ncopy_reach, a->ncopies, t);
}

/* later of *last and the event [start, end] (end unknown: start; start unknown: nothing) */
static void last_of(int64_t *last, int64_t start, int64_t end)
{
	int64_t t = end != CS_TS_UNKNOWN && end > start ? end : start;

	if (start != CS_TS_UNKNOWN && (*last == CS_TS_UNKNOWN || t > *last))
		*last = t;
}

int64_t cs_analysis_last_time(const cs_analysis *a, uint32_t pid)
{
	int64_t last = CS_TS_UNKNOWN;

	for (int64_t i = 0; i < a->nkernels; i++)
		if (a->kernels[i].pid == pid)
			last_of(&last, a->kernels[i].start, a->kernels[i].end);
	for (int64_t i = 0; i < a->ncopies; i++)
		if (a->copies[i].pid == pid)
			last_of(&last, a->copies[i].start, a->copies[i].end);
	for (int64_t i = 0; i < a->nmemory; i++)
		if (a->memory[i].pid == pid)
			last_of(&last, a->memory[i].start, CS_TS_UNKNOWN);
	for (int64_t i = 0; i < a->nsyncs; i++)
		if (a->syncs[i].pid == pid)
			last_of(&last, a->syncs[i].start, a->syncs[i].end);
	for (int64_t i = 0; i < a->napis; i++)
		if (a->apis[i].pid == pid)
			last_of(&last, a->apis[i].start, a->apis[i].end);
	for (int64_t i = 0; i < a->nnvtx; i++)
		if (a->nvtx[i].pid == pid)
			last_of(&last, a->nvtx[i].start, a->nvtx[i].end);
	return last;
}

int64_t cs_analysis_gpu_busy(const cs_analysis *a, uint32_t pid, int64_t t0, int64_t t1)
{
	int64_t i = cs_analysis_kernel_overlapping(a, t0), j = cs_analysis_copy_overlapping(a, t0);
	int64_t busy = 0, cur_s = 0, cur_e = INT64_MIN;

	if (t1 <= t0)
		return 0;
	for (;;) {
		int64_t s, e;
		int have_kernel, have_copy, take_kernel;

		while (i < a->nkernels && a->kernels[i].start < t1 &&
		       ((pid && a->kernels[i].pid != pid) || a->kernels[i].start == CS_TS_UNKNOWN ||
			a->kernels[i].end == CS_TS_UNKNOWN || a->kernels[i].end <= t0))
			i++;
		while (j < a->ncopies && a->copies[j].start < t1 &&
		       ((pid && a->copies[j].pid != pid) || a->copies[j].start == CS_TS_UNKNOWN ||
			a->copies[j].end == CS_TS_UNKNOWN || a->copies[j].end <= t0))
			j++;
		have_kernel = i < a->nkernels && a->kernels[i].start < t1;
		have_copy = j < a->ncopies && a->copies[j].start < t1;
		if (!have_kernel && !have_copy)
			break;
		take_kernel =
			have_kernel && (!have_copy || a->kernels[i].start <= a->copies[j].start);
		if (take_kernel) {
			s = a->kernels[i].start;
			e = a->kernels[i].end;
			i++;
		} else {
			s = a->copies[j].start;
			e = a->copies[j].end;
			j++;
		}
		if (s < t0)
			s = t0;
		if (e > t1)
			e = t1;
		if (e <= s)
			continue;
		if (s > cur_e) {
			if (cur_e > cur_s)
				busy += cur_e - cur_s;
			cur_s = s;
			cur_e = e;
		} else if (e > cur_e) {
			cur_e = e;
		}
	}
	if (cur_e > cur_s)
		busy += cur_e - cur_s;
	return busy;
}
