/*
 * timeline.c - the one timeline model (timeline.h), which every drawing of a trace shares.
 *
 * Tracks. An event goes on the track of its key (kind, pid, a, b):
 *   stream  kernels, memcpys and memsets of one CUDA stream: (pid, device, stream)
 *   waits   host waits (cudaStreamSynchronize, ...) of one host thread: (pid, tid)
 *   api     CUDA API calls of one host thread: (pid, tid)
 *   nvtx    NVTX ranges of one host thread, a track per nesting depth 0-15: (pid, tid, depth)
 *   memory  device memory in use of one process on one GPU: (pid, device)
 *   launch  the launch calls of GPU work, from the launch times of the kernel, memcpy and memset
 *           rows: (pid, launch tid)
 * `cuscope view` draws these tracks as they are, named by cs_tl_track_name and ordered by
 * cs_tl_key_cmp; the trace writer's overview bins the first four (the kinds stored in the trace);
 * `cuscope export` nests them as Chrome's processes and threads: a process per GPU with a thread
 * per stream, and the host rows on the thread (pid, tid) named and ordered by cs_tl_thread_name
 * and cs_tl_thread_order (the exporter adds its own rows: overlap lanes of a stream, NVTX
 * start/end lanes, the steps).
 *
 * Device memory in use. A counter per (pid, device): the running sum of the live allocations,
 * where a row counts as cs_mem_count_of says (a successful allocation of device or managed memory
 * or of VMM physical memory, on a device, with a size; a successful free or release), with the
 * state that rule needs kept here: the allocation alive at each (address, VMM or not) of the
 * counter, so that a free takes back what was allocated, a free of memory allocated before the
 * trace counts for nothing (a level never goes below zero), and an address allocated again
 * replaces the allocation whose free was not seen. Export draws it as its counter track and
 * [memory] events, the view as its memory tracks, the HTML report as its memory chart
 * (src/report/charts.c), and `cuscope gate` and `cuscope diff` take
 * their peak device memory and their allocations and frees per step from it (src/gate/metrics.c).
 *
 * Which rows measure the memory a process holds. Physical memory is held from cudaMalloc (and
 * friends) to cudaFree, and from cuMemCreate to cuMemRelease (and the unmap of its last mapping).
 * A trace of PyTorch's expandable segments has each page twice: the cuMemCreate/cuMemRelease rows
 * of its handle, recorded without a device (CUPTI's callback does not say where the memory is),
 * and the allocation/free rows CUPTI's memory activity writes for the page mapped with cuMemMap
 * and unmapped with cuMemUnmap, on the device; the pages are views of the created memory, so
 * counting both counts it twice. The counter counts the mapped pages, which carry their device,
 * and leaves the device-less VMM rows out (cs_mem_count_of: no device, no count). The two
 * differ by the handles created and not mapped yet (or never: released after a failed growth),
 * at most one segment's growth. Measured with SQL on the committed traces (one process,
 * one H200 of 150,109,880,320 bytes), the peak of the pages (+ cudaMalloc) and of the handles
 * (+ cudaMalloc), bytes:
 *   memory-ceiling-thrash-bad_expandable    149,292,320,768   149,357,332,480
 *   memory-ceiling-thrash-fixed_expandable  147,740,428,288   147,740,428,288
 * and counting both would be 298.5 and 295.3 GB, twice the GPU. On the traces without VMM rows
 * every allocation row is a cudaMalloc of the caching allocator and there is nothing to choose.
 * tests/unit/test_timeline.c checks the gate's peak against the export's counter on every
 * committed trace and against SQL on the expandable one.
 */
#include "cuscope/timeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/error.h"
#include "cuscope/trace.h"
#include "cuscope/checked.h"

/* ---- tracks ---- */

int cs_tl_nvtx_depth(int64_t depth)
{
	return depth < 0 ? 0 : depth > 15 ? 15 : (int)depth;
}

const char *cs_tl_kind_name(int kind)
{
	static const char *const names[CS_TL_KINDS] = {
		[CS_TL_STREAM] = "stream", [CS_TL_WAITS] = "thread",  [CS_TL_API] = "api",
		[CS_TL_NVTX] = "nvtx",	   [CS_TL_MEMORY] = "memory", [CS_TL_LAUNCH] = "launch",
	};

	return kind > 0 && kind < CS_TL_KINDS ? names[kind] : "unknown";
}

void cs_tl_track_name(const struct cs_tl_key *k, char *out, size_t size)
{
	switch (k->kind) {
	case CS_TL_STREAM:
		snprintf(out, size, "GPU %d stream %lld", (int32_t)k->a, (long long)k->b);
		break;
	case CS_TL_MEMORY:
		snprintf(out, size, "GPU %d device memory", (int32_t)k->a);
		break;
	case CS_TL_WAITS:
		snprintf(out, size, "thread %u waits", (uint32_t)k->a);
		break;
	case CS_TL_API:
		snprintf(out, size, "thread %u CUDA API", (uint32_t)k->a);
		break;
	case CS_TL_LAUNCH:
		snprintf(out, size, "thread %u launches", (uint32_t)k->a);
		break;
	case CS_TL_NVTX:
		snprintf(out, size, "thread %u NVTX %d", (uint32_t)k->a, (int32_t)k->b);
		break;
	default:
		snprintf(out, size, "track");
		break;
	}
}

static int is_gpu(int kind)
{
	return kind == CS_TL_STREAM || kind == CS_TL_MEMORY;
}

int cs_tl_key_cmp(const struct cs_tl_key *x, const struct cs_tl_key *y)
{
	/* a host thread's tracks: NVTX, API calls, launches, waits */
	static const int host_rank[CS_TL_KINDS] = {
		[CS_TL_NVTX] = 0, [CS_TL_API] = 1, [CS_TL_LAUNCH] = 2, [CS_TL_WAITS] = 3};
	int gx = is_gpu(x->kind), gy = is_gpu(y->kind);

	if (gx != gy)
		return gx ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (gx) {
		if ((int32_t)x->a != (int32_t)y->a)
			return (int32_t)x->a < (int32_t)y->a ? -1 : 1;
		if (x->kind != y->kind)
			return x->kind == CS_TL_MEMORY ? 1 : -1;
		return (x->b > y->b) - (x->b < y->b);
	}
	if ((uint32_t)x->a != (uint32_t)y->a)
		return (uint32_t)x->a < (uint32_t)y->a ? -1 : 1;
	if (x->kind != y->kind)
		return host_rank[x->kind] - host_rank[y->kind];
	return (int32_t)x->b - (int32_t)y->b;
}

uint64_t cs_tl_key_hash(const struct cs_tl_key *k)
{
	uint64_t h = 1469598103934665603ull;
	uint64_t parts[4] = {(uint64_t)k->kind, k->pid, (uint64_t)k->a, (uint64_t)k->b};

	for (int i = 0; i < 4; i++) {
		h ^= parts[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
		h *= 1099511628211ull;
	}
	return h ? h : 1;
}

void cs_tl_thread_name(uint32_t pid, uint32_t tid, char *out, size_t size)
{
	if (!tid)
		snprintf(out, size, "unknown thread");
	else if (tid == pid)
		snprintf(out, size, "thread %u (main)", tid);
	else
		snprintf(out, size, "thread %u", tid);
}

int64_t cs_tl_thread_order(uint32_t pid, uint32_t tid)
{
	return tid == pid ? 0 : tid ? (int64_t)tid : INT32_MAX;
}

/* ---- device memory in use ---- */

/* Which memory rows move the counter (declared in cuscope/trace.h, where the kinds are). */
int cs_mem_count_of(int op, int mem_kind, int result, int device_id, int64_t bytes, int *vmm)
{
	*vmm = op == CS_MEMOP_VMM_CREATE || op == CS_MEMOP_VMM_RELEASE;
	if (result != 0 || device_id < 0)
		return CS_MEMCOUNT_NONE;
	switch (op) {
	case CS_MEMOP_ALLOC:
		if (mem_kind != CS_MEM_DEVICE && mem_kind != CS_MEM_MANAGED)
			return CS_MEMCOUNT_NONE;
		/* fall through */
	case CS_MEMOP_VMM_CREATE:
		return bytes > 0 ? CS_MEMCOUNT_ALLOC : CS_MEMCOUNT_NONE;
	case CS_MEMOP_FREE:
	case CS_MEMOP_VMM_RELEASE:
		return CS_MEMCOUNT_FREE;
	}
	return CS_MEMCOUNT_NONE;
}

void cs_tl_mem_init(cs_tl_mem *m)
{
	memset(m, 0, sizeof(*m));
}

void cs_tl_mem_free(cs_tl_mem *m)
{
	for (size_t i = 0; i < m->n; i++) {
		u64map_free(&m->v[i].live[0]);
		u64map_free(&m->v[i].live[1]);
	}
	free(m->v);
	memset(m, 0, sizeof(*m));
}

struct cs_tl_mem_level *cs_tl_mem_level_of(cs_tl_mem *m, uint32_t pid, int32_t device)
{
	/* a counter per process and GPU: a few; the newest is the likeliest */
	for (size_t i = m->n; i > 0; i--)
		if (m->v[i - 1].pid == pid && m->v[i - 1].device == device)
			return &m->v[i - 1];
	return NULL;
}

static struct cs_tl_mem_level *level_get(cs_tl_mem *m, uint32_t pid, int32_t device)
{
	struct cs_tl_mem_level *l = cs_tl_mem_level_of(m, pid, device);

	if (l)
		return l;
	if (m->n == m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 8;
		struct cs_tl_mem_level *nv = realloc(m->v, ncap * sizeof(*nv));

		if (!nv)
			return NULL;
		m->v = nv;
		m->cap = ncap;
	}
	l = &m->v[m->n++];
	memset(l, 0, sizeof(*l));
	l->pid = pid;
	l->device = device;
	u64map_init(&l->live[0], sizeof(int64_t));
	u64map_init(&l->live[1], sizeof(int64_t));
	return l;
}

int cs_tl_mem_apply(cs_tl_mem *m, const struct cs_tl_mem_row *r, struct cs_tl_mem_change *out)
{
	struct cs_tl_mem_level *l;
	int64_t *b;
	int vmm, kind, created;

	if (r->start == CS_TS_UNKNOWN)
		return 0;
	kind = cs_mem_count_of(r->op, r->mem_kind, r->result, r->device, r->bytes, &vmm);
	if (kind == CS_MEMCOUNT_NONE)
		return 0;
	if (kind == CS_MEMCOUNT_ALLOC) {
		l = level_get(m, r->pid, r->device);
		if (!l)
			return CS_ERR_NOMEM;
		b = u64map_put(&l->live[vmm], r->address, &created);
		if (!b)
			return CS_ERR_NOMEM;
		/* the same address again: its free was not seen; the old size goes */
		out->delta = r->bytes - (created ? 0 : *b);
		out->bytes = r->bytes;
		*b = r->bytes;
	} else {
		l = cs_tl_mem_level_of(m, r->pid, r->device);
		b = l ? u64map_get(&l->live[vmm], r->address) : NULL;
		if (!b)
			return 0;
		out->delta = out->bytes = -*b;
		u64map_del_at(&l->live[vmm], (size_t)((unsigned char *)b - l->live[vmm].vals) /
						     l->live[vmm].vsize);
	}
	cs_sat_accum(&l->level, out->delta);
	if (l->level > l->peak)
		l->peak = l->level;
	out->kind = kind;
	out->level = (size_t)(l - m->v);
	return 1;
}
