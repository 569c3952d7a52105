/*
 * export.c - the exporter's driver: reads a trace with every event kind merged in time order and
 * decides where each event goes, then hands it to a format backend (chrome.c, perfetto.c).
 *
 * A reader thread merges the event tables into batches while the calling thread places and
 * formats them, and sink.c writes (and compresses) full buffers on a third: an export takes little
 * more than reading the trace. What it keeps while streaming is bounded by the shape of the trace,
 * never by its length: the tracks (processes, threads, streams and their overlap lanes), a
 * fixed-size cache of recent launches (so that an API row or a launch slice is written once and
 * reused by every kernel it started, as the kernels of a CUDA graph), and the allocations alive at
 * the moment (for the device memory counter).
 *
 * Placement, following the PyTorch profiler's Chrome traces (Kineto):
 *   kernels, memcpys, memsets  a process per GPU (pid = device id when that is unambiguous), a
 *                              thread per stream (tid = stream id); kernels that overlap an
 *                              earlier one on their stream (programmatic dependent launch) go on
 *                              an overlap lane of the stream
 *   the launch of GPU work     the API row when the trace has one (CUPTI_ACTIVITY_KIND_RUNTIME),
 *                              else a slice made from launchStart/launchEnd named after launchCbid,
 *                              on the host thread; an ac2g flow from it to the GPU work
 *   API rows, host waits       slices on the host thread (pid, tid)
 *   NVTX                       push/pop: slices on their thread; start/end: async ranges;
 *                              marks: instants; Chrome JSON: a gpu_user_annotation span of each
 *                              push/pop range on each stream running work launched inside it
 *   device memory              a counter per GPU: the running sum of live allocations
 *                              (cs_mem_count_of says which rows count)
 * An event whose start or end is unknown is left out, never written at 0.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cuscope/demangle.h"
#include "cuscope/grow.h"
#include "cuscope/nsys_compat.h"
#include "cuscope/progress.h"
#include "export.h"
#include "cuscope/checked.h"
#include "cuscope/timeline.h"

const char *const ex_cat_names[EX_CAT_COUNT] = {
	[EX_CAT_KERNEL] = "kernel",
	[EX_CAT_MEMCPY] = "gpu_memcpy",
	[EX_CAT_MEMSET] = "gpu_memset",
	[EX_CAT_RUNTIME] = "cuda_runtime",
	[EX_CAT_DRIVER] = "cuda_driver",
	[EX_CAT_SYNC] = "cuda_sync",
	[EX_CAT_NVTX] = "user_annotation",
	[EX_CAT_FINDING] = "finding",
	[EX_CAT_GPU_ANNOTATION] = "gpu_user_annotation",
};

/*
 * The arguments that show a column, and which: they are named by the column's label in
 * include/cuscope/columns.def (ex_key_names_init()), so that the viewer's details and the exports
 * name a column alike. Which columns an event's args show, in which order and beside which derived
 * values, stays in the on_*() functions below: Kineto's order (device, context, stream,
 * correlation, registers per thread, shared memory, blocks per SM, warps per SM, grid, block) is
 * not the tables' order.
 */
#define KEY_COLUMN(KIND, column) {CS_EV_##KIND + 1, CS_COL_##KIND##_##column}
static const struct {
	uint8_t kind; /* enum cs_event_kind + 1; 0: the argument shows no column */
	uint8_t col;  /* CS_COL_<KIND>_<column> */
} key_columns[EX_KEY_COUNT] = {
	[EX_KEY_DEVICE] = KEY_COLUMN(KERNEL, deviceId),
	[EX_KEY_CONTEXT] = KEY_COLUMN(KERNEL, contextId),
	[EX_KEY_STREAM] = KEY_COLUMN(KERNEL, streamId),
	[EX_KEY_CORRELATION] = KEY_COLUMN(KERNEL, correlationId),
	[EX_KEY_REGISTERS] = KEY_COLUMN(KERNEL, registersPerThread),
	[EX_KEY_GRID] = KEY_COLUMN(KERNEL, gridX),
	[EX_KEY_BLOCK] = KEY_COLUMN(KERNEL, blockX),
	[EX_KEY_GRAPH] = KEY_COLUMN(KERNEL, graphId),
	[EX_KEY_GRAPH_NODE] = KEY_COLUMN(KERNEL, graphNodeId),
	[EX_KEY_BYTES] = KEY_COLUMN(MEMCPY, bytes),
	[EX_KEY_VALUE] = KEY_COLUMN(MEMSET, value),
	[EX_KEY_CBID] = KEY_COLUMN(API, cbid),
	[EX_KEY_RESULT] = KEY_COLUMN(API, returnValue),
	[EX_KEY_EVENT] = KEY_COLUMN(SYNC, eventId),
	[EX_KEY_SYNC_TYPE] = KEY_COLUMN(SYNC, syncType),
	[EX_KEY_DOMAIN] = KEY_COLUMN(NVTX, domainId),
	[EX_KEY_COLOR] = KEY_COLUMN(NVTX, color),
	[EX_KEY_CATEGORY] = KEY_COLUMN(NVTX, category),
	[EX_KEY_PAYLOAD] = KEY_COLUMN(NVTX, payloadId),
};
#undef KEY_COLUMN

/* The names of the arguments that show no column: values the exporter derives, and findings'. */
const char *ex_key_names[EX_KEY_COUNT] = {
	[EX_KEY_SHARED_MEMORY] = "shared memory", /* static + dynamic */
	[EX_KEY_BLOCKS_PER_SM] = "blocks per SM",
	[EX_KEY_WARPS_PER_SM] = "warps per SM",
	[EX_KEY_BANDWIDTH] = "memory bandwidth (GB/s)",
	[EX_KEY_RULE] = "rule",
	[EX_KEY_SEVERITY] = "severity",
	[EX_KEY_MESSAGE] = "message",
	[EX_KEY_FIX] = "fix",
	[EX_KEY_LOST] = "lost ns per step",
	[EX_KEY_SHARE] = "step share",
	[EX_KEY_STEPS] = "steps",
	[EX_KEY_EVIDENCE] = "evidence",
	[EX_KEY_END] = "end",
	[EX_KEY_ALLOCATED] = "allocated",
	[EX_KEY_KERNEL_NAME] = "kernel",
	[EX_KEY_MANGLED_NAME] = "mangled name",
};

static void key_names_fill(void)
{
	for (int k = 0; k < EX_KEY_COUNT; k++) {
		int n;
		const cs_column_info *c;

		if (!key_columns[k].kind)
			continue;
		c = cs_event_columns((enum cs_event_kind)(key_columns[k].kind - 1), &n);
		ex_key_names[k] = c && key_columns[k].col < n ? c[key_columns[k].col].label : "?";
	}
}

void ex_key_names_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, key_names_fill);
}

/* ---- formatting helpers shared by the backends ---- */

static const char digit_pairs[201] = "00010203040506070809"
				     "10111213141516171819"
				     "20212223242526272829"
				     "30313233343536373839"
				     "40414243444546474849"
				     "50515253545556575859"
				     "60616263646566676869"
				     "70717273747576777879"
				     "80818283848586878889"
				     "90919293949596979899";

size_t ex_fmt_u64(char *p, uint64_t v)
{
	char tmp[20], *w = tmp + sizeof(tmp);
	size_t n;

	while (v >= 100) {
		unsigned r = (unsigned)(v % 100);

		v /= 100;
		w -= 2;
		memcpy(w, digit_pairs + 2 * r, 2);
	}
	if (v >= 10) {
		w -= 2;
		memcpy(w, digit_pairs + 2 * v, 2);
	} else {
		*--w = (char)('0' + v);
	}
	n = (size_t)(tmp + sizeof(tmp) - w);
	memcpy(p, w, n);
	return n;
}

size_t ex_fmt_i64(char *p, int64_t v)
{
	if (v < 0) {
		*p = '-';
		return 1 + ex_fmt_u64(p + 1, (uint64_t)0 - (uint64_t)v);
	}
	return ex_fmt_u64(p, (uint64_t)v);
}

size_t ex_fmt_us(char *p, int64_t ns)
{
	uint64_t a;
	size_t n = 0;
	unsigned frac;

	if (ns < 0) {
		p[n++] = '-';
		a = (uint64_t)0 - (uint64_t)ns;
	} else {
		a = (uint64_t)ns;
	}
	n += ex_fmt_u64(p + n, a / 1000);
	frac = (unsigned)(a % 1000);
	p[n++] = '.';
	p[n++] = (char)('0' + frac / 100);
	memcpy(p + n, digit_pairs + 2 * (frac % 100), 2);
	return n + 2;
}

/* ---- names ---- */

enum launch_class {
	LAUNCH_KERNEL = 1,
	LAUNCH_MEMCPY,
	LAUNCH_MEMSET,
};

struct launch_name {
	int32_t api_kind; /* enum cs_api_kind */
	int32_t cls;	  /* enum launch_class */
	int32_t cbid;	  /* -1: the name when the callback id is not in this table */
	const char *name;
};

/* CUPTI callback ids (cupti_runtime_cbid.h, cupti_driver_cbid.h) of the calls that start GPU work.
 */
static const struct launch_name launch_names[] = {
	{CS_API_RUNTIME, LAUNCH_KERNEL, 211, "cudaLaunchKernel"},
	{CS_API_RUNTIME, LAUNCH_KERNEL, 214, "cudaLaunchKernel_ptsz"},
	{CS_API_RUNTIME, LAUNCH_KERNEL, 430, "cudaLaunchKernelExC"},
	{CS_API_RUNTIME, LAUNCH_KERNEL, 431, "cudaLaunchKernelExC_ptsz"},
	{CS_API_RUNTIME, LAUNCH_KERNEL, 505, "__cudaLaunchKernel"},
	{CS_API_RUNTIME, LAUNCH_KERNEL, 506, "__cudaLaunchKernel_ptsz"},
	{CS_API_RUNTIME, LAUNCH_KERNEL, 13, "cudaLaunch"},
	{CS_API_RUNTIME, LAUNCH_KERNEL, 213, "cudaLaunch_ptsz"},
	{CS_API_RUNTIME, LAUNCH_KERNEL, 269, "cudaLaunchCooperativeKernel"},
	{CS_API_RUNTIME, LAUNCH_KERNEL, 270, "cudaLaunchCooperativeKernel_ptsz"},
	{CS_API_RUNTIME, LAUNCH_KERNEL, 272, "cudaLaunchCooperativeKernelMultiDevice"},
	{CS_API_RUNTIME, LAUNCH_KERNEL, 311, "cudaGraphLaunch"},
	{CS_API_RUNTIME, LAUNCH_KERNEL, 312, "cudaGraphLaunch_ptsz"},
	{CS_API_RUNTIME, LAUNCH_KERNEL, -1, "cudaLaunchKernel"},
	{CS_API_DRIVER, LAUNCH_KERNEL, 307, "cuLaunchKernel"},
	{CS_API_DRIVER, LAUNCH_KERNEL, 442, "cuLaunchKernel_ptsz"},
	{CS_API_DRIVER, LAUNCH_KERNEL, 652, "cuLaunchKernelEx"},
	{CS_API_DRIVER, LAUNCH_KERNEL, 653, "cuLaunchKernelEx_ptsz"},
	{CS_API_DRIVER, LAUNCH_KERNEL, 477, "cuLaunchCooperativeKernel"},
	{CS_API_DRIVER, LAUNCH_KERNEL, 478, "cuLaunchCooperativeKernel_ptsz"},
	{CS_API_DRIVER, LAUNCH_KERNEL, 480, "cuLaunchCooperativeKernelMultiDevice"},
	{CS_API_DRIVER, LAUNCH_KERNEL, 115, "cuLaunch"},
	{CS_API_DRIVER, LAUNCH_KERNEL, 116, "cuLaunchGrid"},
	{CS_API_DRIVER, LAUNCH_KERNEL, 117, "cuLaunchGridAsync"},
	{CS_API_DRIVER, LAUNCH_KERNEL, 514, "cuGraphLaunch"},
	{CS_API_DRIVER, LAUNCH_KERNEL, 515, "cuGraphLaunch_ptsz"},
	{CS_API_DRIVER, LAUNCH_KERNEL, -1, "cuLaunchKernel"},
	{CS_API_RUNTIME, LAUNCH_MEMCPY, 31, "cudaMemcpy"},
	{CS_API_RUNTIME, LAUNCH_MEMCPY, 41, "cudaMemcpyAsync"},
	{CS_API_RUNTIME, LAUNCH_MEMCPY, 215, "cudaMemcpy_ptds"},
	{CS_API_RUNTIME, LAUNCH_MEMCPY, 225, "cudaMemcpyAsync_ptsz"},
	{CS_API_RUNTIME, LAUNCH_MEMCPY, 482, "cudaMemcpyBatchAsync"},
	{CS_API_RUNTIME, LAUNCH_MEMCPY, 483, "cudaMemcpyBatchAsync_ptsz"},
	{CS_API_RUNTIME, LAUNCH_MEMCPY, 509, "cudaMemcpyBatchAsync"},
	{CS_API_RUNTIME, LAUNCH_MEMCPY, 510, "cudaMemcpyBatchAsync_ptsz"},
	{CS_API_DRIVER, LAUNCH_MEMCPY, 276, "cuMemcpyHtoD_v2"},
	{CS_API_DRIVER, LAUNCH_MEMCPY, 277, "cuMemcpyHtoDAsync_v2"},
	{CS_API_DRIVER, LAUNCH_MEMCPY, 278, "cuMemcpyDtoH_v2"},
	{CS_API_DRIVER, LAUNCH_MEMCPY, 279, "cuMemcpyDtoHAsync_v2"},
	{CS_API_DRIVER, LAUNCH_MEMCPY, 280, "cuMemcpyDtoD_v2"},
	{CS_API_DRIVER, LAUNCH_MEMCPY, 281, "cuMemcpyDtoDAsync_v2"},
	{CS_API_DRIVER, LAUNCH_MEMCPY, 305, "cuMemcpy"},
	{CS_API_DRIVER, LAUNCH_MEMCPY, 306, "cuMemcpyAsync"},
	{CS_API_DRIVER, LAUNCH_MEMCPY, 318, "cuMemcpyPeer"},
	{CS_API_DRIVER, LAUNCH_MEMCPY, 319, "cuMemcpyPeerAsync"},
	{CS_API_DRIVER, LAUNCH_MEMCPY, 418, "cuMemcpyAsync_ptsz"},
	{CS_API_DRIVER, LAUNCH_MEMCPY, 776, "cuMemcpyBatchAsync"},
	{CS_API_RUNTIME, LAUNCH_MEMSET, 49, "cudaMemset"},
	{CS_API_RUNTIME, LAUNCH_MEMSET, 51, "cudaMemsetAsync"},
	{CS_API_RUNTIME, LAUNCH_MEMSET, 233, "cudaMemset_ptds"},
	{CS_API_RUNTIME, LAUNCH_MEMSET, 235, "cudaMemsetAsync_ptsz"},
	{CS_API_DRIVER, LAUNCH_MEMSET, 249, "cuMemsetD8_v2"},
	{CS_API_DRIVER, LAUNCH_MEMSET, 250, "cuMemsetD16_v2"},
	{CS_API_DRIVER, LAUNCH_MEMSET, 251, "cuMemsetD32_v2"},
	{CS_API_DRIVER, LAUNCH_MEMSET, 216, "cuMemsetD8Async"},
	{CS_API_DRIVER, LAUNCH_MEMSET, 218, "cuMemsetD16Async"},
	{CS_API_DRIVER, LAUNCH_MEMSET, 220, "cuMemsetD32Async"},
};

#define NLAUNCH_NAMES ((int)(sizeof(launch_names) / sizeof(launch_names[0])))

/* Index in launch_names of an exact match, or -1. */
static int launch_name_find(int api_kind, int cls, int32_t cbid)
{
	for (int i = 0; i < NLAUNCH_NAMES; i++)
		if (launch_names[i].api_kind == api_kind && launch_names[i].cls == cls &&
		    launch_names[i].cbid == cbid)
			return i;
	return -1;
}

/*
 * The launch call of GPU work, by its callback id. api_kind 0 (unknown: memcpy and memset rows do
 * not say) tries the runtime ids, then the driver's; a miss falls back to a generic name.
 */
static int launch_name_index(int api_kind, int cls, int32_t cbid, int is_async)
{
	int i = -1;

	if (cbid >= 0) {
		if (api_kind != CS_API_DRIVER)
			i = launch_name_find(CS_API_RUNTIME, cls, cbid);
		if (i < 0 && api_kind != CS_API_RUNTIME)
			i = launch_name_find(CS_API_DRIVER, cls, cbid);
	}
	if (i >= 0)
		return i;
	switch (cls) {
	case LAUNCH_MEMCPY:
		return launch_name_find(CS_API_RUNTIME, cls, is_async ? 41 : 31);
	case LAUNCH_MEMSET:
		return launch_name_find(CS_API_RUNTIME, cls, is_async ? 51 : 49);
	default:
		return launch_name_find(api_kind == CS_API_DRIVER ? CS_API_DRIVER : CS_API_RUNTIME,
					cls, -1);
	}
}

/* Host waits, named after the call that waited (Kineto names its sync events by kind). */
static const char *sync_name(int type, int api_kind)
{
	int drv = api_kind == CS_API_DRIVER;

	switch (type) {
	case CS_SYNC_EVENT_SYNCHRONIZE:
		return drv ? "cuEventSynchronize wait" : "cudaEventSynchronize wait";
	case CS_SYNC_STREAM_SYNCHRONIZE:
		return drv ? "cuStreamSynchronize wait" : "cudaStreamSynchronize wait";
	case CS_SYNC_CONTEXT_SYNCHRONIZE:
		return drv ? "cuCtxSynchronize wait" : "cudaDeviceSynchronize wait";
	case CS_SYNC_MEMCPY:
		return drv ? "cuMemcpy wait" : "cudaMemcpy wait";
	}
	return "synchronize wait";
}

/* Memory kinds as Kineto names them in memcpy names ("Memcpy HtoD (Pageable -> Device)"). */
static const char *mem_kind_title(int kind)
{
	switch (kind) {
	case CS_MEM_PAGEABLE:
		return "Pageable";
	case CS_MEM_PINNED:
		return "Pinned";
	case CS_MEM_DEVICE:
		return "Device";
	case CS_MEM_ARRAY:
		return "Array";
	case CS_MEM_MANAGED:
		return "Managed";
	case CS_MEM_DEVICE_STATIC:
		return "Device Static";
	case CS_MEM_MANAGED_STATIC:
		return "Managed Static";
	}
	return "Unknown";
}

static int clamp15(int v)
{
	return v < 0 || v > 15 ? 0 : v;
}

/* ---- tracks ---- */

struct tslot {
	uint64_t k1, k2;
	struct ex_track *t;
};

#define LAUNCH_CACHE_SIZE (1 << 16) /* launches remembered: API rows and launch slices written */

struct launch_slot {
	uint64_t corr;
	uint32_t pid;
	uint32_t used;
};

struct driver {
	struct exporter ex;
	cs_error *err;
	int64_t t0, t1;
	/* tracks */
	struct tslot *slots;
	size_t cap, n;
	struct ex_track **all;
	size_t nall, capall;
	uint64_t next_uuid;
	int64_t next_gpu_pid; /* chrome pids for GPUs whose device id is taken */
	int multi_gpu_proc;   /* devices of more than one process: say whose */
	/* launches */
	struct launch_slot *launches;
	/* device memory in use (the timeline's counter) */
	cs_tl_mem mem;
	/* names */
	struct name_memo *kernel_names; /* KERNEL_NAMES slots by name id, made on first use */
	char *memcpy_names[4096];
	char api_name[256];
	cs_export_stats st;
	int failed; /* a cs_err code */
	struct ex_step *steps;
	int nsteps;
	int64_t rows_total;  /* rows of the trace, for the progress line (0: unknown) */
	int gpu_annotations; /* write gpu_user_annotation spans (Chrome JSON) */
};

#define GPU_PID_BASE (1 << 30) /* above any Linux pid (pid_max is at most 2^22) */

/*
 * A kernel name's demangled forms, by its name id: a kernel's slice asks for them once per kernel,
 * and the demangler's cache hashes the whole (often long) name each time. The forms are those of
 * cs_demangle_short() and cs_demangle(), which give a name the same strings every time.
 */
#define KERNEL_NAMES (1 << 16)
struct name_memo {
	const char *name; /* the recorded name; NULL: an empty slot */
	int64_t id;
	const char *shrt, *full;
	int shrt_differs, full_differs; /* from the recorded name */
};

static uint64_t mix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

static int fail(struct driver *d, int code, const char *what)
{
	if (!d->failed) {
		d->failed = code;
		cs_error_set(d->err, code, "%s", what);
	}
	return code;
}

static struct ex_track *track_find(struct driver *d, uint64_t k1, uint64_t k2)
{
	size_t i;

	if (!d->n)
		return NULL;
	for (i = mix64(k1 * 31 + k2) & (d->cap - 1); d->slots[i].t; i = (i + 1) & (d->cap - 1))
		if (d->slots[i].k1 == k1 && d->slots[i].k2 == k2)
			return d->slots[i].t;
	return NULL;
}

static int track_put(struct driver *d, uint64_t k1, uint64_t k2, struct ex_track *t)
{
	size_t i;

	if ((d->n + 1) * 2 > d->cap) {
		size_t ncap = d->cap ? d->cap * 2 : 64;
		struct tslot *ns = calloc(ncap, sizeof(*ns));

		if (!ns)
			return CS_ERR_NOMEM;
		for (size_t j = 0; j < d->cap; j++) {
			if (!d->slots[j].t)
				continue;
			i = mix64(d->slots[j].k1 * 31 + d->slots[j].k2) & (ncap - 1);
			while (ns[i].t)
				i = (i + 1) & (ncap - 1);
			ns[i] = d->slots[j];
		}
		free(d->slots);
		d->slots = ns;
		d->cap = ncap;
	}
	i = mix64(k1 * 31 + k2) & (d->cap - 1);
	while (d->slots[i].t)
		i = (i + 1) & (d->cap - 1);
	d->slots[i].k1 = k1;
	d->slots[i].k2 = k2;
	d->slots[i].t = t;
	d->n++;
	return 0;
}

/* A new track (not in the lookup table); NULL without memory. name is copied. */
static struct ex_track *track_new(struct driver *d, enum ex_track_kind kind,
				  struct ex_track *parent, const char *name)
{
	struct ex_track *t;

	if (cs_grow((void **)&d->all, &d->capall, d->nall + 1, sizeof(*d->all)))
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->name = strdup(name);
	if (!t->name) {
		free(t);
		return NULL;
	}
	t->kind = kind;
	t->parent = parent;
	t->uuid = d->next_uuid++;
	t->lane_end = INT64_MIN;
	d->all[d->nall++] = t;
	return t;
}

/* Declare t (and its parents first) to the backend before its first event. */
static int track_use(struct driver *d, struct ex_track *t)
{
	int rc;

	if (t->declared)
		return 0;
	if (t->parent) {
		rc = track_use(d, t->parent);
		if (rc)
			return rc;
	}
	t->declared = 1;
	return d->ex.ops->declare(&d->ex, t);
}

static const struct ex_process *process_info(const struct driver *d, uint32_t pid, int *index)
{
	for (int i = 0; i < d->ex.nprocs; i++) {
		if (d->ex.procs[i].pid == pid) {
			if (index)
				*index = i;
			return &d->ex.procs[i];
		}
	}
	if (index)
		*index = d->ex.nprocs;
	return NULL;
}

/* Copy at most max bytes of s into out (size max + 1), cut at a character boundary. */
static void copy_cut(char *out, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;

	while (p[n]) {
		size_t k = cs_utf8_seq_len(p + n);

		if (!k)
			k = 1;
		if (n + k > max)
			break;
		n += k;
	}
	memcpy(out, s, n);
	out[n] = '\0';
}

static struct ex_track *process_track(struct driver *d, uint32_t pid)
{
	struct ex_track *t = track_find(d, EX_TRACK_PROCESS, pid);
	const struct ex_process *p;
	char name[160], labels[64];
	int index;

	if (t)
		return t;
	p = process_info(d, pid, &index);
	if (p && p->command_line && p->command_line[0])
		copy_cut(name, p->command_line, 120);
	else
		snprintf(name, sizeof(name), "process %u", pid);
	t = track_new(d, EX_TRACK_PROCESS, NULL, name);
	if (!t || track_put(d, EX_TRACK_PROCESS, pid, t)) {
		fail(d, CS_ERR_NOMEM, "out of memory");
		return NULL;
	}
	t->pid = pid;
	t->os_pid = pid;
	t->sort_index = index;
	if (p && p->rank != CS_ID_NONE) {
		if (p->world_size != CS_ID_NONE)
			snprintf(labels, sizeof(labels), "rank %d of %d", p->rank, p->world_size);
		else
			snprintf(labels, sizeof(labels), "rank %d", p->rank);
		t->labels = strdup(labels);
	}
	return t;
}

static struct ex_track *thread_track(struct driver *d, uint32_t pid, uint32_t tid)
{
	uint64_t k1 = ((uint64_t)EX_TRACK_THREAD << 32) | pid;
	struct ex_track *t = track_find(d, k1, tid), *proc;
	char name[64];

	if (t)
		return t;
	proc = process_track(d, pid);
	if (!proc)
		return NULL;
	cs_tl_thread_name(pid, tid, name, sizeof(name));
	t = track_new(d, EX_TRACK_THREAD, proc, name);
	if (!t || track_put(d, k1, tid, t)) {
		fail(d, CS_ERR_NOMEM, "out of memory");
		return NULL;
	}
	t->pid = pid;
	t->tid = tid;
	t->os_pid = pid;
	t->os_tid = tid;
	t->sort_index = cs_tl_thread_order(pid, tid);
	return t;
}

static const struct ex_device *device_info(const struct driver *d, uint32_t pid, int32_t dev,
					   int *index)
{
	for (int i = 0; i < d->ex.ndevs; i++) {
		if (d->ex.devs[i].pid == pid && d->ex.devs[i].device_id == dev) {
			*index = i;
			return &d->ex.devs[i];
		}
	}
	*index = d->ex.ndevs;
	return NULL;
}

/* Whether Chrome pid v is free for a GPU: no host process has it, no GPU track took it. */
static int gpu_pid_free(const struct driver *d, int64_t v, uint32_t pid, int32_t dev)
{
	for (int i = 0; i < d->ex.nprocs; i++)
		if (d->ex.procs[i].pid == v)
			return 0;
	for (int i = 0; i < d->ex.ndevs; i++)
		if (d->ex.devs[i].device_id == v &&
		    (d->ex.devs[i].pid != pid || d->ex.devs[i].device_id != dev))
			return 0;
	for (size_t i = 0; i < d->nall; i++)
		if (d->all[i]->kind == EX_TRACK_GPU && d->all[i]->pid == v)
			return 0;
	return 1;
}

static struct ex_track *gpu_track(struct driver *d, uint32_t pid, int32_t dev)
{
	uint64_t k1 = ((uint64_t)EX_TRACK_GPU << 32) | pid;
	struct ex_track *t = track_find(d, k1, (uint32_t)dev);
	const struct ex_device *info;
	const struct ex_process *p;
	char name[200], who[48] = "";
	int64_t chrome_pid;
	int index, pindex;

	if (t)
		return t;
	info = device_info(d, pid, dev, &index);
	p = process_info(d, pid, &pindex);
	if (d->multi_gpu_proc) {
		if (p && p->rank != CS_ID_NONE)
			snprintf(who, sizeof(who), ", rank %d", p->rank);
		else
			snprintf(who, sizeof(who), ", pid %u", pid);
	}
	if (dev < 0)
		snprintf(name, sizeof(name), "GPU ?%s", who);
	else if (info && info->name)
		snprintf(name, sizeof(name), "GPU %d (%.120s)%s", dev, info->name, who);
	else
		snprintf(name, sizeof(name), "GPU %d%s", dev, who);
	/* Kineto's pid for a GPU is its device id: keep it when no other process or GPU has it */
	chrome_pid = dev >= 0 && gpu_pid_free(d, dev, pid, dev) ? dev : d->next_gpu_pid++;
	t = track_new(d, EX_TRACK_GPU, NULL, name);
	if (!t || track_put(d, k1, (uint32_t)dev, t)) {
		fail(d, CS_ERR_NOMEM, "out of memory");
		return NULL;
	}
	t->pid = chrome_pid;
	t->os_pid = pid;
	t->device_id = dev;
	/* host processes first, then the GPUs in process order */
	t->sort_index = (1 << 20) + (int64_t)pindex * 1024 + (dev >= 0 && dev < 1024 ? dev : 1023);
	return t;
}

/* The lane of stream s on GPU g for a slice [start, end]: the first whose last slice has ended. */
/* Lanes of one stream at most: an overlap lane each time a slice starts before the stream's last one
 * ended (only CUDA graphs and damaged files overlap). */
#define MAX_STREAM_LANES 32

static struct ex_track *stream_lane(struct driver *d, struct ex_track *g, uint32_t stream,
				    int64_t start, int64_t end)
{
	uint64_t k1 = ((uint64_t)EX_TRACK_STREAM << 48) | g->uuid;
	struct ex_track *t = track_find(d, k1, stream), *last = NULL;
	char name[64];
	int lane = 0;

	if (!t) {
		snprintf(name, sizeof(name), "stream %u", stream);
		t = track_new(d, EX_TRACK_STREAM, g, name);
		if (!t || track_put(d, k1, stream, t)) {
			fail(d, CS_ERR_NOMEM, "out of memory");
			return NULL;
		}
		goto init;
	}
	for (; t; last = t, t = t->next_lane, lane++) {
		if (t->lane_end <= start) {
			if (end > t->lane_end)
				t->lane_end = end;
			return t;
		}
	}
	if (lane >= MAX_STREAM_LANES) {
		/* A stream's work does not overlap itself: this many lanes only come from a damaged
		 * file, where more lanes would only make the search quadratic. The last one takes it. */
		if (end > last->lane_end)
			last->lane_end = end;
		return last;
	}
	if (lane == 1)
		snprintf(name, sizeof(name), "stream %u (overlap)", stream);
	else
		snprintf(name, sizeof(name), "stream %u (overlap %d)", stream, lane);
	t = track_new(d, EX_TRACK_STREAM, g, name);
	if (!t) {
		fail(d, CS_ERR_NOMEM, "out of memory");
		return NULL;
	}
	last->next_lane = t;
init:
	t->pid = g->pid;
	t->tid = (int64_t)stream | ((int64_t)lane << 32);
	t->device_id = g->device_id;
	t->stream_id = stream;
	t->lane = lane;
	t->sort_index = (int64_t)stream * 8 + (lane < 7 ? lane : 7);
	if (t->sort_index > INT32_MAX)
		t->sort_index = INT32_MAX;
	t->lane_end = end;
	return t;
}

/* A lane for an NVTX start/end range [start, end] of a process. */
static struct ex_track *async_lane(struct driver *d, struct ex_track *proc, int64_t start,
				   int64_t end)
{
	uint64_t k1 = ((uint64_t)EX_TRACK_ASYNC << 32) | proc->os_pid;
	struct ex_track *t = track_find(d, k1, 0), *last = NULL;
	int lane = 0;

	if (t) {
		for (; t; last = t, t = t->next_lane, lane++) {
			if (t->lane_end <= start) {
				t->lane_end = end;
				return t;
			}
		}
	}
	t = track_new(d, EX_TRACK_ASYNC, proc, "NVTX ranges");
	if (!t || (!last && track_put(d, k1, 0, t))) {
		fail(d, CS_ERR_NOMEM, "out of memory");
		return NULL;
	}
	if (last)
		last->next_lane = t;
	t->pid = proc->pid;
	t->os_pid = proc->os_pid;
	t->lane = lane;
	t->sort_index = -2;
	t->lane_end = end;
	return t;
}

static struct ex_track *counter_track(struct driver *d, struct ex_track *g)
{
	if (g->counter)
		return g->counter;
	g->counter = track_new(d, EX_TRACK_COUNTER, g, "Device memory");
	if (!g->counter) {
		fail(d, CS_ERR_NOMEM, "out of memory");
		return NULL;
	}
	g->counter->pid = g->pid;
	g->counter->device_id = g->device_id;
	g->counter->sort_index = -1;
	return g->counter;
}

/* ---- launches ---- */

/* Whether the launch (pid, corr) was written already; remembers it when not. */
static int launch_seen(struct driver *d, uint32_t pid, uint64_t corr)
{
	struct launch_slot *s;

	if (!corr)
		return 0;
	/* correlation ids count up: consecutive ones share cache lines and never collide */
	s = &d->launches[(corr + (uint64_t)pid * 40503u) & (LAUNCH_CACHE_SIZE - 1)];
	if (s->used && s->corr == corr && s->pid == pid)
		return 1;
	s->used = 1;
	s->corr = corr;
	s->pid = pid;
	return 0;
}

/* Perfetto's flow id linking a launch with its GPU work: unique per (process, correlation). */
static uint64_t flow_id_of(uint32_t pid, uint64_t corr)
{
	uint64_t id = mix64(mix64(corr) ^ ((uint64_t)pid * 0x9e3779b97f4a7c15ull));

	return id ? id : 1;
}

/* What a kernel, memcpy and memset share: where they ran and where they were launched. */
struct gpu_op {
	int64_t start, end, launch_start, launch_end;
	uint32_t pid, launch_tid, context, stream;
	int32_t device, launch_cbid, launch_api_kind;
	uint64_t correlation;
	int cls, is_async;
};

/* ---- GPU spans of NVTX ranges (Kineto's gpu_user_annotation) ---- */

/*
 * Each host thread remembers its last ANNO_RANGES push/pop ranges; the GPU work launched inside
 * a range (its launch call starts within the range, on the range's thread) widens the range's
 * span on the stream lane the work went to. A range's spans are written when it is forgotten
 * (ANNO_RANGES newer ranges began on its thread) or at the end: GPU work launched inside a range
 * that ran after that many newer ranges began on its thread is left out of the span. Ranges come
 * in the order of their starts, and push/pop ranges nest: the ranges that hold a launch are the
 * last one that began before it and its enclosing ones (parent), a walk as deep as the nesting.
 */
#define ANNO_RANGES 1024 /* a power of two: cs_grow() doubles from 64 */
#define ANNO_LANES  8	 /* streams (lanes) a range's span is kept on; further ones are left out */

struct anno_span {
	struct ex_track *lane;
	int64_t start, end;
};

struct anno_range {
	int64_t start, end;
	uint64_t seq, parent; /* parent: the seq of the enclosing range + 1, 0 for none */
	char *name;
	uint64_t name_iid;
	int nspans;
	struct anno_span spans[ANNO_LANES];
};

struct ex_annos {
	struct anno_range *v; /* a ring: the oldest at head, seq first_seq */
	size_t cap, head, n;
	uint64_t first_seq;
};

/* The remembered range of sequence number seq + 1 (0: none), or NULL. */
static struct anno_range *anno_get(struct ex_annos *a, uint64_t seq1)
{
	if (!seq1 || seq1 - 1 < a->first_seq || seq1 - 1 >= a->first_seq + a->n)
		return NULL;
	return &a->v[(a->head + (seq1 - 1 - a->first_seq)) % a->cap];
}

static int anno_flush(struct driver *d, struct anno_range *r)
{
	int rc = 0;

	for (int i = 0; i < r->nspans && !rc; i++) {
		struct ex_event e;

		memset(&e, 0, offsetof(struct ex_event, args));
		e.track = r->spans[i].lane;
		e.ts = r->spans[i].start;
		e.dur = r->spans[i].end - r->spans[i].start;
		e.name = r->name ? r->name : "(unnamed)";
		e.name_iid = r->name ? r->name_iid : EX_IID_STATIC + 2;
		e.cat = EX_CAT_GPU_ANNOTATION;
		ex_arg_int(&e, EX_KEY_DEVICE, e.track->device_id);
		ex_arg_int(&e, EX_KEY_STREAM, e.track->stream_id);
		rc = d->ex.ops->slice(&d->ex, &e);
	}
	free(r->name);
	r->name = NULL;
	r->nspans = 0;
	return rc;
}

/* Remember push/pop range n of thread t, named name. */
static int anno_add(struct driver *d, struct ex_track *t, const cs_nvtx *n, const char *name)
{
	struct ex_annos *a = t->annos;
	struct anno_range *r, *p;
	uint64_t seq;
	int rc = 0;

	if (!a) {
		a = t->annos = calloc(1, sizeof(*a));
		if (!a)
			return fail(d, CS_ERR_NOMEM, "out of memory");
	}
	if (a->n == ANNO_RANGES) {
		rc = anno_flush(d, &a->v[a->head]);
		a->head = (a->head + 1) % a->cap;
		a->first_seq++;
		a->n--;
	} else if (a->n == a->cap && cs_grow((void **)&a->v, &a->cap, a->n + 1, sizeof(*a->v))) {
		/* it grows only before it is full, while head is 0 */
		return fail(d, CS_ERR_NOMEM, "out of memory");
	}
	seq = a->first_seq + a->n;
	/* the enclosing range: the previous one or one of its enclosing ones */
	p = anno_get(a, seq);
	while (p && p->end < n->end)
		p = anno_get(a, p->parent);
	r = &a->v[(a->head + a->n) % a->cap];
	memset(r, 0, sizeof(*r));
	r->start = n->start;
	r->end = n->end;
	r->seq = seq;
	r->parent = p ? p->seq + 1 : 0;
	r->name_iid = EX_IID_STRINGS + 2 * (uint64_t)n->text_id;
	a->n++;
	if (name && !(r->name = strdup(name)))
		return fail(d, CS_ERR_NOMEM, "out of memory");
	return rc;
}

/* GPU work [start, end] on lane, launched at launch on host thread t: widen the spans of the
 * ranges of t that hold the launch. */
static void anno_widen(struct ex_track *t, int64_t launch, struct ex_track *lane, int64_t start,
		       int64_t end)
{
	struct ex_annos *a = t->annos;
	struct anno_range *r;
	size_t lo = 0, hi;

	if (!a || !a->n)
		return;
	/* the last range that began at or before the launch */
	hi = a->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a->v[(a->head + mid) % a->cap].start <= launch)
			lo = mid + 1;
		else
			hi = mid;
	}
	r = lo ? &a->v[(a->head + lo - 1) % a->cap] : NULL;
	for (; r; r = anno_get(a, r->parent)) {
		int j;

		if (launch > r->end)
			continue;
		for (j = 0; j < r->nspans && r->spans[j].lane != lane; j++)
			;
		if (j == r->nspans) {
			if (j == ANNO_LANES)
				continue;
			r->spans[j].lane = lane;
			r->spans[j].start = start;
			r->spans[j].end = end;
			r->nspans++;
			continue;
		}
		if (start < r->spans[j].start)
			r->spans[j].start = start;
		if (end > r->spans[j].end)
			r->spans[j].end = end;
	}
}

/* Write the spans of every range still remembered, thread by thread, oldest first. */
static int anno_flush_all(struct driver *d)
{
	int rc = 0;

	for (size_t i = 0; i < d->nall && !rc; i++) {
		struct ex_annos *a = d->all[i]->annos;

		for (; a && a->n && !rc; a->n--, a->first_seq++, a->head = (a->head + 1) % a->cap)
			rc = anno_flush(d, &a->v[a->head]);
	}
	return rc;
}

/* The gpu_op of a cs_kernel, cs_memcpy or cs_memset x (the fields they share), of class cls. */
#define GPU_OP_OF(x, api_kind, cls, is_async)                                                \
	{                                                                                    \
		(x)->start, (x)->end, (x)->launch_start, (x)->launch_end, (x)->pid,          \
			(x)->launch_tid, (x)->context_id, (x)->stream_id, (x)->device_id,    \
			(x)->launch_cbid, (api_kind), (x)->correlation_id, (cls), (is_async) \
	}

static int emit_gpu_op(struct driver *d, const struct gpu_op *op, struct ex_event *e)
{
	struct ex_track *g, *lane, *host = NULL;
	int launch = op->launch_start != CS_TS_UNKNOWN && op->launch_end != CS_TS_UNKNOWN &&
		     op->launch_end >= op->launch_start && op->launch_tid;
	int rc;

	g = gpu_track(d, op->pid, op->device);
	lane = g ? stream_lane(d, g, op->stream, op->start, op->end) : NULL;
	if (!lane)
		return d->failed;
	e->track = lane;
	e->ts = op->start;
	e->dur = op->end - op->start;
	if (launch) {
		host = thread_track(d, op->pid, op->launch_tid);
		if (!host)
			return d->failed;
		e->flow_id = op->correlation ? flow_id_of(op->pid, op->correlation) : 0;
	}
	rc = track_use(d, lane);
	if (!rc)
		rc = d->ex.ops->slice(&d->ex, e);
	if (rc || !launch)
		return rc;
	anno_widen(host, op->launch_start, lane, op->start, op->end);
	if (!launch_seen(d, op->pid, op->correlation)) {
		/* no API row for it (the default: launches are folded into the GPU rows) */
		struct ex_event l;
		int i = launch_name_index(op->launch_api_kind, op->cls, op->launch_cbid,
					  op->is_async);

		memset(&l, 0, sizeof(l));
		l.track = host;
		l.ts = op->launch_start;
		l.dur = op->launch_end - op->launch_start;
		l.name = launch_names[i].name;
		l.name_iid = EX_IID_LAUNCH + (uint64_t)i;
		l.cat = launch_names[i].api_kind == CS_API_DRIVER ? EX_CAT_DRIVER : EX_CAT_RUNTIME;
		l.flow_id = e->flow_id;
		if (op->launch_cbid >= 0)
			ex_arg_int(&l, EX_KEY_CBID, op->launch_cbid);
		ex_arg_int(&l, EX_KEY_CORRELATION, (int64_t)op->correlation);
		rc = track_use(d, host);
		if (!rc)
			rc = d->ex.ops->slice(&d->ex, &l);
		if (rc)
			return rc;
	}
	if (d->ex.ops->flow)
		return d->ex.ops->flow(&d->ex, host, op->launch_start, lane, op->start);
	return 0;
}

static int known_span(int64_t start, int64_t end)
{
	return start != CS_TS_UNKNOWN && end != CS_TS_UNKNOWN && end >= start;
}

/* The demangled forms of k's name (k->name is set), from the memo of its name id. */
static const struct name_memo *kernel_name(struct driver *d, const cs_kernel *k)
{
	static struct name_memo one; /* no memo (out of memory): the forms of this kernel */
	struct name_memo *m = &one;

	if (!d->kernel_names)
		d->kernel_names = calloc(KERNEL_NAMES, sizeof(*d->kernel_names));
	if (d->kernel_names) {
		m = &d->kernel_names[(uint64_t)k->name_id & (KERNEL_NAMES - 1)];
		if (m->name == k->name && m->id == k->name_id)
			return m;
	}
	m->name = k->name;
	m->id = k->name_id;
	m->shrt = cs_demangle_short(k->name);
	m->full = cs_demangle(k->name);
	m->shrt_differs = strcmp(m->shrt, k->name) != 0;
	m->full_differs = strcmp(m->full, k->name) != 0;
	return m;
}

static int on_kernel(struct driver *d, const cs_kernel *k)
{
	struct ex_event e;
	struct gpu_op op = GPU_OP_OF(k, k->launch_api_kind, LAUNCH_KERNEL, 1);
	const struct ex_device *info = NULL;
	int index;

	if (!known_span(k->start, k->end)) {
		d->st.skipped++;
		return 0;
	}
	e.nargs = 0;
	e.thread = e.end_thread = NULL;
	e.flow_id = 0;
	e.cat = EX_CAT_KERNEL;
	if (k->name) {
		/* the short demangled name on the slice; the whole one and the recorded one in its
		 * args (docs/commands/export.md) */
		const struct name_memo *m = kernel_name(d, k);

		e.name = m->shrt;
		e.name_iid = EX_IID_STRINGS + 2 * (uint64_t)k->name_id;
		if (m->shrt_differs) {
			ex_arg_str(&e, EX_KEY_KERNEL_NAME, EX_ARG_STR, m->full);
			if (m->full_differs)
				ex_arg_str(&e, EX_KEY_MANGLED_NAME, EX_ARG_STR, k->name);
		}
	} else {
		e.name = "(unknown kernel)";
		e.name_iid = EX_IID_STATIC;
	}
	ex_arg_int(&e, EX_KEY_DEVICE, k->device_id);
	ex_arg_int(&e, EX_KEY_CONTEXT, k->context_id);
	ex_arg_int(&e, EX_KEY_STREAM, k->stream_id);
	ex_arg_int(&e, EX_KEY_CORRELATION, (int64_t)k->correlation_id);
	ex_arg_int(&e, EX_KEY_REGISTERS, k->registers_per_thread);
	ex_arg_int(&e, EX_KEY_SHARED_MEMORY,
		   (int64_t)k->static_shared_memory + k->dynamic_shared_memory);
	if (d->ex.ndevs)
		info = device_info(d, k->pid, k->device_id, &index);
	if (info && info->sm_count > 0) {
		int64_t blocks = cs_sat_mul3(k->grid_x, k->grid_y, k->grid_z);
		int64_t threads = cs_sat_mul3(k->block_x, k->block_y, k->block_z);
		int64_t warps = cs_sat_mul(blocks, cs_sat_add(threads, 31) / 32);

		ex_arg_milli(&e, EX_KEY_BLOCKS_PER_SM,
			     cs_sat_add(cs_sat_mul(blocks, 1000), info->sm_count / 2) /
				     info->sm_count);
		ex_arg_milli(&e, EX_KEY_WARPS_PER_SM,
			     cs_sat_add(cs_sat_mul(warps, 1000), info->sm_count / 2) /
				     info->sm_count);
	}
	ex_arg_dim3(&e, EX_KEY_GRID, k->grid_x, k->grid_y, k->grid_z);
	ex_arg_dim3(&e, EX_KEY_BLOCK, k->block_x, k->block_y, k->block_z);
	if (k->graph_id != CS_ID_NONE)
		ex_arg_int(&e, EX_KEY_GRAPH, k->graph_id);
	if (k->graph_node_id != CS_ID_NONE)
		ex_arg_int(&e, EX_KEY_GRAPH_NODE, k->graph_node_id);
	return emit_gpu_op(d, &op, &e);
}

static void copy_args(struct ex_event *e, int32_t device, uint32_t context, uint32_t stream,
		      uint64_t corr, int64_t bytes, int64_t dur)
{
	ex_arg_int(e, EX_KEY_DEVICE, device);
	ex_arg_int(e, EX_KEY_CONTEXT, context);
	ex_arg_int(e, EX_KEY_STREAM, stream);
	ex_arg_int(e, EX_KEY_CORRELATION, (int64_t)corr);
	ex_arg_int(e, EX_KEY_BYTES, bytes);
	/* bytes per ns are GB/s; thousandths of them, rounded */
	if (dur > 0 && bytes >= 0 && bytes < INT64_MAX / 1000)
		ex_arg_milli(e, EX_KEY_BANDWIDTH, (bytes * 1000 + dur / 2) / dur);
}

static int on_memcpy(struct driver *d, const cs_memcpy *m)
{
	struct ex_event e;
	struct gpu_op op = GPU_OP_OF(m, 0, LAUNCH_MEMCPY, m->is_async);
	int idx = (clamp15(m->copy_kind) * 16 + clamp15(m->src_kind)) * 16 + clamp15(m->dst_kind);

	if (!known_span(m->start, m->end)) {
		d->st.skipped++;
		return 0;
	}
	if (!d->memcpy_names[idx]) {
		char name[96];

		snprintf(name, sizeof(name), "Memcpy %s (%s -> %s)",
			 cs_copy_kind_name(m->copy_kind), mem_kind_title(m->src_kind),
			 mem_kind_title(m->dst_kind));
		d->memcpy_names[idx] = strdup(name);
		if (!d->memcpy_names[idx])
			return fail(d, CS_ERR_NOMEM, "out of memory");
	}
	memset(&e, 0, offsetof(struct ex_event, args));
	e.cat = EX_CAT_MEMCPY;
	e.name = d->memcpy_names[idx];
	e.name_iid = EX_IID_MEMCPY + (uint64_t)idx;
	copy_args(&e, m->device_id, m->context_id, m->stream_id, m->correlation_id, m->bytes,
		  m->end - m->start);
	return emit_gpu_op(d, &op, &e);
}

static int on_memset(struct driver *d, const cs_memset *m)
{
	static const char *const names[] = {
		"Memset (Unknown)",	  "Memset (Pageable)",	     "Memset (Pinned)",
		"Memset (Device)",	  "Memset (Array)",	     "Memset (Managed)",
		"Memset (Device Static)", "Memset (Managed Static)",
	};
	struct ex_event e;
	struct gpu_op op = GPU_OP_OF(m, 0, LAUNCH_MEMSET, m->is_async);
	int kind = m->mem_kind >= 0 && m->mem_kind <= 7 ? m->mem_kind : 0;

	if (!known_span(m->start, m->end)) {
		d->st.skipped++;
		return 0;
	}
	memset(&e, 0, offsetof(struct ex_event, args));
	e.cat = EX_CAT_MEMSET;
	e.name = names[kind];
	e.name_iid = EX_IID_MEMSET + (uint64_t)kind;
	copy_args(&e, m->device_id, m->context_id, m->stream_id, m->correlation_id, m->bytes,
		  m->end - m->start);
	ex_arg_int(&e, EX_KEY_VALUE, m->value);
	return emit_gpu_op(d, &op, &e);
}

/* The name of an API call without CUPTI's version suffix ("cudaMalloc_v3020" -> "cudaMalloc"). */
static const char *api_display_name(struct driver *d, const char *name)
{
	size_t n = strlen(name), i = n;

	while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
		i--;
	if (n - i < 4 || i < 3 || name[i - 1] != 'v' || name[i - 2] != '_' ||
	    i - 2 >= sizeof(d->api_name))
		return name;
	memcpy(d->api_name, name, i - 2);
	d->api_name[i - 2] = '\0';
	return d->api_name;
}

static int on_api(struct driver *d, const cs_api *a)
{
	struct ex_event e;
	int rc;

	if (!known_span(a->start, a->end)) {
		d->st.skipped++;
		return 0;
	}
	memset(&e, 0, offsetof(struct ex_event, args));
	e.track = thread_track(d, a->pid, a->tid);
	if (!e.track)
		return d->failed;
	e.ts = a->start;
	e.dur = a->end - a->start;
	if (a->name) {
		e.name = api_display_name(d, a->name);
		e.name_iid = EX_IID_STRINGS + 2 * (uint64_t)a->name_id + (e.name != a->name);
	} else {
		e.name = "(unknown API call)";
		e.name_iid = EX_IID_STATIC + 1;
	}
	e.cat = a->api_kind == CS_API_DRIVER ? EX_CAT_DRIVER : EX_CAT_RUNTIME;
	if (a->cbid >= 0)
		ex_arg_int(&e, EX_KEY_CBID, a->cbid);
	ex_arg_int(&e, EX_KEY_CORRELATION, (int64_t)a->correlation_id);
	if (a->result)
		ex_arg_int(&e, EX_KEY_RESULT, a->result);
	if (a->correlation_id) {
		/* GPU work it started reuses this slice as its launch */
		launch_seen(d, a->pid, a->correlation_id);
		e.flow_id = flow_id_of(a->pid, a->correlation_id);
	}
	rc = track_use(d, e.track);
	return rc ? rc : d->ex.ops->slice(&d->ex, &e);
}

static int on_sync(struct driver *d, const cs_sync *s)
{
	struct ex_event e;
	int rc;

	if (!cs_sync_type_is_host_wait(s->type))
		return 0; /* queries and GPU-side waits: the API rows show them */
	if (!known_span(s->start, s->end)) {
		d->st.skipped++;
		return 0;
	}
	memset(&e, 0, offsetof(struct ex_event, args));
	e.track = thread_track(d, s->pid, s->tid);
	if (!e.track)
		return d->failed;
	e.ts = s->start;
	e.dur = s->end - s->start;
	e.name = sync_name(s->type, s->api_kind);
	e.name_iid =
		EX_IID_SYNC + (uint64_t)(s->type & 0x7f) + (s->api_kind == CS_API_DRIVER) * 128;
	e.cat = EX_CAT_SYNC;
	ex_arg_int(&e, EX_KEY_DEVICE, s->device_id);
	if (s->stream_id != CS_ID_NONE)
		ex_arg_int(&e, EX_KEY_STREAM, s->stream_id);
	if (s->event_id != CS_ID_NONE)
		ex_arg_int(&e, EX_KEY_EVENT, s->event_id);
	ex_arg_int(&e, EX_KEY_CORRELATION, (int64_t)s->correlation_id);
	/* the trace's own names of the types (a switch: a crafted type can be any integer) */
	ex_arg_str(&e, EX_KEY_SYNC_TYPE, EX_ARG_STR, cs_sync_type_name(s->type));
	rc = track_use(d, e.track);
	return rc ? rc : d->ex.ops->slice(&d->ex, &e);
}

static void nvtx_args(struct ex_event *e, const cs_nvtx *n, char *color)
{
	if (n->domain)
		ex_arg_str(e, EX_KEY_DOMAIN, EX_ARG_STR, n->domain);
	if (n->color) {
		snprintf(color, 8, "#%06x", n->color & 0xffffff);
		ex_arg_str(e, EX_KEY_COLOR, EX_ARG_STR, color);
	}
	if (n->category)
		ex_arg_int(e, EX_KEY_CATEGORY, n->category);
	/* the trace's text, not trusted to be JSON: a string, escaped like any other */
	if (n->payload)
		ex_arg_str(e, EX_KEY_PAYLOAD, EX_ARG_STR, n->payload);
}

static int on_nvtx(struct driver *d, const cs_nvtx *n)
{
	struct ex_event e;
	char color[8];
	int rc;

	if (n->start == CS_TS_UNKNOWN ||
	    (n->type != CS_NVTX_MARK && !known_span(n->start, n->end))) {
		d->st.skipped++;
		return 0;
	}
	memset(&e, 0, offsetof(struct ex_event, args));
	e.ts = n->start;
	e.cat = EX_CAT_NVTX;
	if (n->text) {
		e.name = n->text;
		e.name_iid = EX_IID_STRINGS + 2 * (uint64_t)n->text_id;
	} else {
		e.name = "(unnamed)";
		e.name_iid = EX_IID_STATIC + 2;
	}
	nvtx_args(&e, n, color);
	e.thread = thread_track(d, n->pid, n->tid);
	if (!e.thread)
		return d->failed;
	switch (n->type) {
	case CS_NVTX_PUSHPOP:
		e.track = e.thread;
		e.dur = n->end - n->start;
		rc = track_use(d, e.track);
		if (!rc && d->gpu_annotations)
			rc = anno_add(d, e.thread, n, n->text);
		return rc ? rc : d->ex.ops->slice(&d->ex, &e);
	case CS_NVTX_MARK:
		e.track = e.thread;
		rc = track_use(d, e.track);
		return rc ? rc : d->ex.ops->instant(&d->ex, &e);
	case CS_NVTX_STARTEND:
		e.dur = n->end - n->start;
		e.end_thread = n->end_tid ? thread_track(d, n->pid, n->end_tid) : e.thread;
		e.track = e.end_thread ? async_lane(d, e.thread->parent, n->start, n->end) : NULL;
		if (!e.track)
			return d->failed;
		rc = track_use(d, e.thread);
		if (!rc)
			rc = track_use(d, e.end_thread);
		if (!rc)
			rc = track_use(d, e.track);
		return rc ? rc : d->ex.ops->range(&d->ex, &e);
	}
	d->st.skipped++;
	return 0;
}

/* ---- device memory ---- */

static int in_window(const struct driver *d, int64_t ts)
{
	return d->t0 == CS_TS_UNKNOWN || ts >= d->t0;
}

/* Write value as the memory in use of GPU g at ts. */
static int memory_sample(struct driver *d, struct ex_track *g, int64_t ts, int64_t value)
{
	struct ex_track *c = counter_track(d, g);
	int rc;

	if (!c)
		return d->failed;
	rc = track_use(d, c);
	g->mem_sampled = 1;
	return rc ? rc : d->ex.ops->counter(&d->ex, c, ts, value);
}

static int on_memory(struct driver *d, const cs_memory *m)
{
	struct cs_tl_mem_row row = {m->start,	m->pid,	    m->device_id, m->op,
				    m->mem_kind, m->result, m->address,	  m->bytes};
	struct cs_tl_mem_level *l = cs_tl_mem_level_of(&d->mem, m->pid, m->device_id);
	struct cs_tl_mem_change c;
	struct ex_track *g, *thread;
	int64_t before = l ? l->level : 0, level;
	int rc;

	if (m->start == CS_TS_UNKNOWN) {
		d->st.skipped++;
		return 0;
	}
	rc = cs_tl_mem_apply(&d->mem, &row, &c);
	if (rc <= 0)
		return rc ? fail(d, CS_ERR_NOMEM, "out of memory") : 0;
	level = d->mem.v[c.level].level;
	g = gpu_track(d, m->pid, m->device_id);
	if (!g)
		return d->failed;
	if (in_window(d, m->start) && !g->mem_sampled && g->mem_seen && m->start > d->t0) {
		/* the first change inside the window: the level at its start first */
		rc = memory_sample(d, g, d->t0, before);
		if (rc)
			return rc;
	}
	g->mem_seen = 1;
	if (!in_window(d, m->start))
		return 0;
	rc = memory_sample(d, g, m->start, level);
	if (rc || !d->ex.ops->memory)
		return rc;
	thread = thread_track(d, m->pid, m->tid);
	if (!thread)
		return d->failed;
	rc = track_use(d, thread);
	return rc ? rc
		  : d->ex.ops->memory(&d->ex, thread, m->start, m->device_id, m->address, c.bytes,
				      level);
}

/* ---- steps ---- */

/* The lane of a process's ProfilerStep slices next to its thread tid. */
static struct ex_track *steps_lane(struct driver *d, uint32_t pid, uint32_t tid)
{
	uint64_t k1 = ((uint64_t)EX_TRACK_STEPS << 32) | pid;
	struct ex_track *t = track_find(d, k1, tid), *proc;
	char name[64];

	if (t)
		return t;
	proc = process_track(d, pid);
	if (!proc)
		return NULL;
	snprintf(name, sizeof(name), "thread %u (steps)", tid);
	t = track_new(d, EX_TRACK_STEPS, proc, name);
	if (!t || track_put(d, k1, tid, t)) {
		fail(d, CS_ERR_NOMEM, "out of memory");
		return NULL;
	}
	t->pid = pid;
	t->tid = (int64_t)tid | ((int64_t)1 << 32);
	t->os_pid = pid;
	t->os_tid = tid;
	t->sort_index = (tid == pid ? 0 : (int64_t)tid) + 1;
	return t;
}

/* ProfilerStep#N slices of the steps that overlap the window. */
static int emit_steps(struct driver *d)
{
	for (int i = 0; i < d->nsteps; i++) {
		const struct ex_step *st = &d->steps[i];
		struct ex_event e;
		char name[48];
		int rc;

		if ((d->t1 != CS_TS_UNKNOWN && st->start >= d->t1) ||
		    (d->t0 != CS_TS_UNKNOWN && st->end <= d->t0))
			continue;
		memset(&e, 0, offsetof(struct ex_event, args));
		e.track = st->own_lane ? steps_lane(d, st->pid, st->tid)
				       : thread_track(d, st->pid, st->tid);
		if (!e.track)
			return d->failed;
		snprintf(name, sizeof(name), "ProfilerStep#%d", st->index);
		e.name = name;
		e.ts = st->start;
		e.dur = st->end - st->start;
		/* A step ends where the next one on its row starts; in microseconds with three
		 * decimals, a reader's ts + dur in floating point can land past the next ts, and
		 * TensorBoard's profiler plugin drops steps that intersect: end 1 ns before it. */
		for (int j = i + 1; j < d->nsteps && d->steps[j].pid == st->pid; j++) {
			const struct ex_step *nx = &d->steps[j];

			if (nx->tid != st->tid || nx->own_lane != st->own_lane)
				continue;
			if (nx->start <= st->end && nx->start - st->start > 1)
				e.dur = nx->start - 1 - st->start;
			break;
		}
		e.cat = EX_CAT_NVTX; /* user_annotation, as torch.profiler writes its steps */
		rc = track_use(d, e.track);
		if (!rc)
			rc = d->ex.ops->slice(&d->ex, &e);
		if (rc)
			return rc;
	}
	return 0;
}

/* GPUs whose memory changed only before the window: their level at its start. */
static int memory_window_start(struct driver *d)
{
	size_t n = d->nall;
	int rc;

	if (d->t0 == CS_TS_UNKNOWN)
		return 0;
	for (size_t i = 0; i < n; i++) {
		struct ex_track *g = d->all[i];

		const struct cs_tl_mem_level *l;

		if (g->kind != EX_TRACK_GPU || !g->mem_seen || g->mem_sampled)
			continue;
		l = cs_tl_mem_level_of(&d->mem, (uint32_t)g->os_pid, g->device_id);
		rc = memory_sample(d, g, d->t0, l ? l->level : 0);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- reading the trace ---- */

struct source {
	cs_iter *it;
	cs_event ev;
	int has;
	int64_t start, end;
};

static int source_next(struct driver *d, struct source *s, cs_error *err)
{
	int rc = cs_iter_next(s->it, &s->ev);

	if (rc < 0)
		return cs_error_set(err, rc, "cannot read '%s': %s", cs_trace_path(d->ex.t),
				    cs_err_str(rc));
	s->has = rc;
	if (!rc)
		return 0;
	if (!(++d->st.rows & 4095))
		cs_progress_set(d->ex.opts->progress, d->st.rows, d->rows_total);
	switch (s->ev.kind) {
	case CS_EV_KERNEL:
		s->start = s->ev.u.kernel.start;
		s->end = s->ev.u.kernel.end;
		break;
	case CS_EV_MEMCPY:
		s->start = s->ev.u.memcpy.start;
		s->end = s->ev.u.memcpy.end;
		break;
	case CS_EV_MEMSET:
		s->start = s->ev.u.memset.start;
		s->end = s->ev.u.memset.end;
		break;
	case CS_EV_MEMORY:
		s->start = s->end = s->ev.u.memory.start;
		break;
	case CS_EV_SYNC:
		s->start = s->ev.u.sync.start;
		s->end = s->ev.u.sync.end;
		break;
	case CS_EV_API:
		s->start = s->ev.u.api.start;
		s->end = s->ev.u.api.end;
		break;
	case CS_EV_NVTX:
		s->start = s->ev.u.nvtx.start;
		s->end = s->ev.u.nvtx.end;
		break;
	default:
		s->start = s->end = CS_TS_UNKNOWN;
	}
	return 0;
}

/*
 * Whether a goes before b: by start, the longer first (parents before their children), and for the
 * same span NVTX ranges, then API calls, then the waits inside them.
 */
static int source_before(const struct source *a, const struct source *b)
{
	static const int rank[CS_EV_COUNT] = {
		[CS_EV_NVTX] = 0,   [CS_EV_API] = 1,	[CS_EV_SYNC] = 2,   [CS_EV_MEMORY] = 3,
		[CS_EV_KERNEL] = 4, [CS_EV_MEMCPY] = 5, [CS_EV_MEMSET] = 6,
	};

	if (a->start != b->start)
		return a->start < b->start;
	if (a->end != b->end)
		return a->end > b->end;
	return rank[a->ev.kind] < rank[b->ev.kind];
}

static int dispatch(struct driver *d, const cs_event *ev)
{
	switch (ev->kind) {
	case CS_EV_KERNEL:
		return on_kernel(d, &ev->u.kernel);
	case CS_EV_MEMCPY:
		return on_memcpy(d, &ev->u.memcpy);
	case CS_EV_MEMSET:
		return on_memset(d, &ev->u.memset);
	case CS_EV_MEMORY:
		return on_memory(d, &ev->u.memory);
	case CS_EV_SYNC:
		return on_sync(d, &ev->u.sync);
	case CS_EV_API:
		return on_api(d, &ev->u.api);
	case CS_EV_NVTX:
		return on_nvtx(d, &ev->u.nvtx);
	default:
		return 0;
	}
}

/* Open an iterator per event kind, each on its first event. */
static int merge_open(struct driver *d, struct source *src, cs_error *err)
{
	cs_filter f = cs_filter_all();
	int rc;

	f.t0 = d->t0;
	f.t1 = d->t1;
	f.pid = d->ex.opts->pid;
	for (int k = 0; k < CS_EV_COUNT; k++) {
		cs_filter fk = f;

		/* the memory counter needs every allocation before the window too */
		if (k == CS_EV_MEMORY)
			fk.t0 = CS_TS_UNKNOWN;
		rc = cs_iter_open(d->ex.t, (enum cs_event_kind)k, &fk, &src[k].it, err);
		if (!rc)
			rc = source_next(d, &src[k], err);
		if (rc)
			return rc;
	}
	return 0;
}

/* The next event of any kind in time order into ev: 1, 0 at the end, or a cs_err code. */
static int merge_next(struct driver *d, struct source *src, cs_event *ev, cs_error *err)
{
	struct source *best = NULL;
	int rc;

	for (int k = 0; k < CS_EV_COUNT; k++)
		if (src[k].has && (!best || source_before(&src[k], best)))
			best = &src[k];
	if (!best)
		return 0;
	*ev = best->ev;
	rc = source_next(d, best, err);
	return rc ? rc : 1;
}

static void merge_close(struct source *src)
{
	for (int k = 0; k < CS_EV_COUNT; k++)
		cs_iter_close(src[k].it);
}

/*
 * Reading and writing overlap: a reader thread merges the event kinds into batches, the calling
 * thread places and writes them. The trace is used by the reader thread alone; the strings in the
 * events it hands over live as long as the trace.
 */
#define PIPE_BATCH   256
#define PIPE_BATCHES 16

struct pipe {
	struct driver *d;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	cs_event *ev;		 /* PIPE_BATCHES batches of PIPE_BATCH events */
	int count[PIPE_BATCHES]; /* events in each batch */
	unsigned head, tail;	 /* batches tail..head-1 are full */
	int done, stop;		 /* the reader finished; the writer failed */
	int rc;			 /* the reader's result */
	cs_error err;		 /* and its message */
	struct source src[CS_EV_COUNT];
};

static void *pipe_reader(void *arg)
{
	struct pipe *p = arg;
	int rc = 0, more = 1;

	while (more) {
		unsigned b;
		int n = 0;

		pthread_mutex_lock(&p->mu);
		while (p->head - p->tail == PIPE_BATCHES && !p->stop)
			pthread_cond_wait(&p->cv, &p->mu);
		more = !p->stop;
		b = p->head % PIPE_BATCHES;
		pthread_mutex_unlock(&p->mu);
		while (more && n < PIPE_BATCH) {
			rc = merge_next(p->d, p->src, &p->ev[b * PIPE_BATCH + n], &p->err);
			if (rc <= 0)
				more = 0;
			else
				n++;
		}
		pthread_mutex_lock(&p->mu);
		if (n) {
			p->count[b] = n;
			p->head++;
		}
		if (!more) {
			p->done = 1;
			p->rc = rc < 0 ? rc : 0;
		}
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
	return NULL;
}

static int export_events(struct driver *d)
{
	struct pipe *p = calloc(1, sizeof(*p));
	pthread_t reader;
	int rc = 0;

	if (!p)
		return fail(d, CS_ERR_NOMEM, "out of memory");
	p->d = d;
	p->ev = malloc(sizeof(*p->ev) * PIPE_BATCH * PIPE_BATCHES);
	if (!p->ev) {
		free(p);
		return fail(d, CS_ERR_NOMEM, "out of memory");
	}
	rc = merge_open(d, p->src, d->err);
	if (rc)
		goto out;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if (pthread_create(&reader, NULL, pipe_reader, p)) {
		/* no thread: read here */
		p->done = 1;
		p->stop = 1;
		for (cs_event ev; !rc && (rc = merge_next(d, p->src, &ev, d->err)) > 0;) {
			rc = dispatch(d, &ev);
			if (!rc)
				rc = d->ex.out.error;
		}
	} else {
		for (;;) {
			unsigned b;
			int n;

			pthread_mutex_lock(&p->mu);
			while (p->head == p->tail && !p->done)
				pthread_cond_wait(&p->cv, &p->mu);
			if (p->head == p->tail) {
				pthread_mutex_unlock(&p->mu);
				break;
			}
			b = p->tail % PIPE_BATCHES;
			n = p->count[b];
			pthread_mutex_unlock(&p->mu);
			for (int i = 0; i < n && !rc; i++) {
				rc = dispatch(d, &p->ev[b * PIPE_BATCH + i]);
				if (!rc)
					rc = d->ex.out.error;
			}
			pthread_mutex_lock(&p->mu);
			p->tail++;
			if (rc)
				p->stop = 1;
			pthread_cond_broadcast(&p->cv);
			pthread_mutex_unlock(&p->mu);
			if (rc)
				break;
		}
		pthread_join(reader, NULL);
		if (!rc && p->rc) {
			rc = p->rc;
			cs_error_set(d->err, rc, "%s", p->err.msg);
		}
	}
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	if (!rc)
		rc = memory_window_start(d);
	if (!rc)
		rc = anno_flush_all(d);
out:
	merge_close(p->src);
	free(p->ev);
	free(p);
	return rc;
}

/* ---- processes and devices ---- */

static int add_process(const cs_process *p, void *arg)
{
	struct driver *d = arg;
	struct ex_process *np;

	if (d->ex.opts->pid >= 0 && p->pid != d->ex.opts->pid)
		return 0; /* --pid: the other processes are not in the output */
	np = realloc(d->ex.procs, sizeof(*np) * (size_t)(d->ex.nprocs + 1));
	if (!np)
		return CS_ERR_NOMEM;
	d->ex.procs = np;
	np += d->ex.nprocs;
	np->pid = p->pid;
	np->rank = p->rank;
	np->local_rank = p->local_rank;
	np->world_size = p->world_size;
	np->command_line = p->command_line ? strdup(p->command_line) : NULL;
	d->ex.nprocs++;
	return p->command_line && !np->command_line ? CS_ERR_NOMEM : 0;
}

/* deviceProperties: one entry per device id, from every process of the trace (Kineto lists every
 * device, and readers index the list by device id). */
static int add_device_props(struct driver *d, const cs_device *dv)
{
	struct ex_device *nd;

	if (dv->device_id < 0)
		return 0;
	for (int i = 0; i < d->ex.nprops; i++)
		if (d->ex.props[i].device_id == dv->device_id)
			return 0;
	nd = realloc(d->ex.props, sizeof(*nd) * (size_t)(d->ex.nprops + 1));
	if (!nd)
		return CS_ERR_NOMEM;
	d->ex.props = nd;
	nd += d->ex.nprops;
	memset(nd, 0, sizeof(*nd));
	nd->pid = dv->pid;
	nd->device_id = dv->device_id;
	nd->name = dv->name ? strdup(dv->name) : NULL;
	nd->total_memory = dv->total_memory;
	nd->sm_count = dv->sm_count;
	nd->compute_major = dv->compute_major;
	nd->compute_minor = dv->compute_minor;
	nd->core_clock_khz = dv->core_clock_khz;
	nd->memory_bandwidth = dv->memory_bandwidth;
	d->ex.nprops++;
	return dv->name && !nd->name ? CS_ERR_NOMEM : 0;
}

static int device_props_cmp(const void *a, const void *b)
{
	const struct ex_device *x = a, *y = b;

	return x->device_id < y->device_id ? -1 : x->device_id > y->device_id;
}

static int add_device(const cs_device *dv, void *arg)
{
	struct driver *d = arg;
	struct ex_device *nd;

	if (add_device_props(d, dv))
		return CS_ERR_NOMEM;

	if (d->ex.opts->pid >= 0 && dv->pid != d->ex.opts->pid)
		return 0;
	nd = realloc(d->ex.devs, sizeof(*nd) * (size_t)(d->ex.ndevs + 1));
	if (!nd)
		return CS_ERR_NOMEM;
	d->ex.devs = nd;
	nd += d->ex.ndevs;
	memset(nd, 0, sizeof(*nd));
	nd->pid = dv->pid;
	nd->device_id = dv->device_id;
	nd->name = dv->name ? strdup(dv->name) : NULL;
	nd->uuid = dv->uuid ? strdup(dv->uuid) : NULL;
	nd->total_memory = dv->total_memory;
	nd->sm_count = dv->sm_count;
	nd->compute_major = dv->compute_major;
	nd->compute_minor = dv->compute_minor;
	nd->core_clock_khz = dv->core_clock_khz;
	nd->memory_bandwidth = dv->memory_bandwidth;
	d->ex.ndevs++;
	return (dv->name && !nd->name) || (dv->uuid && !nd->uuid) ? CS_ERR_NOMEM : 0;
}

/* Ranked processes first, by rank, then the others by pid. */
static int process_cmp(const void *a, const void *b)
{
	const struct ex_process *x = a, *y = b;
	int rx = x->rank != CS_ID_NONE, ry = y->rank != CS_ID_NONE;

	if (rx != ry)
		return ry - rx;
	if (rx && x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int load_info(struct driver *d)
{
	const char *base;
	int rc;

	rc = cs_trace_each_process(d->ex.t, add_process, d, d->err);
	if (!rc)
		rc = cs_trace_each_device(d->ex.t, add_device, d, d->err);
	if (rc == CS_ERR_NOMEM)
		return fail(d, rc, "out of memory");
	if (rc)
		return rc;
	cs_sort(d->ex.procs, (size_t)d->ex.nprocs, sizeof(*d->ex.procs), process_cmp);
	cs_sort(d->ex.props, (size_t)d->ex.nprops, sizeof(*d->ex.props), device_props_cmp);
	for (int i = 1; i < d->ex.ndevs; i++)
		if (d->ex.devs[i].pid != d->ex.devs[0].pid)
			d->multi_gpu_proc = 1;
	base = cs_trace_meta(d->ex.t, "realtime_base_ns");
	d->ex.base_ns = base ? strtoll(base, NULL, 10) : 0;
	return 0;
}

static void driver_free(struct driver *d)
{
	free(d->kernel_names);
	for (int i = 0; i < d->ex.nprocs; i++)
		free(d->ex.procs[i].command_line);
	free(d->ex.procs);
	for (int i = 0; i < d->ex.ndevs; i++) {
		free(d->ex.devs[i].name);
		free(d->ex.devs[i].uuid);
	}
	free(d->ex.devs);
	for (int i = 0; i < d->ex.nprops; i++)
		free(d->ex.props[i].name);
	free(d->ex.props);
	free(d->steps);
	for (size_t i = 0; i < d->nall; i++) {
		struct ex_annos *a = d->all[i]->annos;

		for (size_t k = 0; a && k < a->n; k++)
			free(a->v[(a->head + k) % a->cap].name);
		if (a)
			free(a->v);
		free(a);
		free(d->all[i]->name);
		free(d->all[i]->labels);
		free(d->all[i]);
	}
	free(d->all);
	free(d->slots);
	free(d->launches);
	cs_tl_mem_free(&d->mem);
	for (int i = 0; i < 4096; i++)
		free(d->memcpy_names[i]);
	free(d);
}

/* ---- entry points ---- */

void cs_export_opts_init(cs_export_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->format = CS_EXPORT_CHROME;
	o->t0 = o->t1 = CS_TS_UNKNOWN;
	o->pid = -1;
	o->profiler_steps = 1;
}

int cs_export_estimate(cs_trace *t, const cs_export_opts *o, int64_t *bytes, cs_error *err)
{
	/* bytes per row, measured on recorded traces: a kernel is its slice, its launch and a flow;
	 * a memory row a counter sample and a [memory] event */
	static const int chrome[CS_EV_COUNT] = {
		[CS_EV_KERNEL] = 600, [CS_EV_MEMCPY] = 560, [CS_EV_MEMSET] = 560,
		[CS_EV_MEMORY] = 330, [CS_EV_SYNC] = 260,   [CS_EV_API] = 200,
		[CS_EV_NVTX] = 180,
	};
	cs_trace_summary sum;
	double share = 1.0, total = 0;
	int rc;

	*bytes = 0;
	rc = cs_trace_get_summary(t, &sum, err);
	if (rc)
		return rc;
	if (sum.start != CS_TS_UNKNOWN && sum.end > sum.start &&
	    (o->t0 != CS_TS_UNKNOWN || o->t1 != CS_TS_UNKNOWN)) {
		int64_t a = o->t0 != CS_TS_UNKNOWN && o->t0 > sum.start ? o->t0 : sum.start;
		int64_t b = o->t1 != CS_TS_UNKNOWN && o->t1 < sum.end ? o->t1 : sum.end;

		share = b > a ? (double)(b - a) / (double)(sum.end - sum.start) : 0;
	}
	for (int k = 0; k < CS_EV_COUNT; k++)
		total +=
			(double)sum.counts[k] * (o->format == CS_EXPORT_PERFETTO ? 220 : chrome[k]);
	total *= share;
	*bytes = total > 9e18 ? INT64_MAX : (int64_t)total;
	return 0;
}

const char *cs_export_format_name(enum cs_export_format f)
{
	switch (f) {
	case CS_EXPORT_CHROME:
		return "chrome";
	case CS_EXPORT_PERFETTO:
		return "perfetto";
	case CS_EXPORT_NSYS_SQLITE:
		return "nsys-sqlite";
	}
	return "unknown";
}

int cs_export_format_parse(const char *name)
{
	if (!strcmp(name, "chrome"))
		return CS_EXPORT_CHROME;
	if (!strcmp(name, "perfetto"))
		return CS_EXPORT_PERFETTO;
	if (!strcmp(name, "nsys-sqlite"))
		return CS_EXPORT_NSYS_SQLITE;
	return -1;
}

int cs_export(cs_trace *t, const cs_export_opts *o, const char *path, cs_export_stats *stats,
	      cs_error *err)
{
	struct driver *d;
	struct ex_sink *sink = NULL;
	int rc, out_rc;

	if (stats)
		memset(stats, 0, sizeof(*stats));
	if (!t || !o || !path)
		return cs_error_set(err, CS_ERR_INVALID, "cs_export: bad argument");
	if (o->t0 != CS_TS_UNKNOWN && o->t1 != CS_TS_UNKNOWN && o->t1 <= o->t0)
		return cs_error_set(err, CS_ERR_INVALID, "empty time range");
	if (o->format == CS_EXPORT_NSYS_SQLITE) { /* the whole trace, copied: no window, no pid */
		int64_t bytes = 0;
		int r;

		if (o->t0 != CS_TS_UNKNOWN || o->t1 != CS_TS_UNKNOWN || o->pid >= 0 || o->gzip ||
		    !strcmp(path, "-"))
			return cs_error_set(err, CS_ERR_INVALID,
					    "nsys-sqlite is a copy of the whole trace into a file");
		r = cs_nsys_compat_write(cs_trace_path(t), path, &bytes, err);
		if (stats)
			stats->bytes = bytes;
		return r;
	}
	ex_key_names_init();
	d = calloc(1, sizeof(*d));
	if (!d)
		return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
	cs_tl_mem_init(&d->mem);
	d->err = err;
	d->ex.err = err;
	d->ex.t = t;
	d->ex.opts = o;
	d->t0 = o->t0;
	d->t1 = o->t1;
	d->next_uuid = 1;
	d->next_gpu_pid = GPU_PID_BASE;
	switch (o->format) {
	case CS_EXPORT_CHROME:
		d->ex.ops = &ex_chrome_ops;
		d->gpu_annotations = 1;
		break;
	case CS_EXPORT_PERFETTO:
		d->ex.ops = &ex_perfetto_ops;
		break;
	default:
		free(d);
		return cs_error_set(err, CS_ERR_INVALID, "unknown export format");
	}
	d->launches = calloc(LAUNCH_CACHE_SIZE, sizeof(*d->launches));
	if (!d->launches) {
		rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory");
		goto out;
	}
	rc = load_info(d);
	if (!rc && o->profiler_steps && o->steps) {
		d->steps = malloc(sizeof(*d->steps) * (size_t)(o->steps->n ? o->steps->n : 1));
		if (!d->steps)
			rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory");
		for (int i = 0; !rc && i < o->steps->n; i++)
			if (o->pid < 0 || o->steps->v[i].pid == o->pid)
				d->steps[d->nsteps++] = o->steps->v[i];
		snprintf(d->st.steps_window, sizeof(d->st.steps_window), "%s", o->steps->window);
	} else if (!rc && o->profiler_steps) {
		rc = ex_steps_find(t, o->step_range, o->pid, o->t0, o->t1, o->max_bytes, &d->steps,
				   &d->nsteps, d->st.steps_window, sizeof(d->st.steps_window), err);
	}
	if (rc)
		goto out;
	/* the input is good: only now create the output */
	rc = ex_sink_open(path, o->gzip, &sink, err);
	if (rc)
		goto out;
	if (ex_out_open(&d->ex.out, sink)) {
		ex_out_close(&d->ex.out);
		sink->abort(sink);
		rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (o->progress) {
		cs_trace_summary sum;
		cs_error ignored = {0, ""};

		if (!cs_trace_get_summary(t, &sum, &ignored) && o->t0 == CS_TS_UNKNOWN &&
		    o->t1 == CS_TS_UNKNOWN)
			for (int k = 0; k < CS_EV_COUNT; k++)
				d->rows_total += sum.counts[k];
	}
	rc = d->ex.ops->begin(&d->ex);
	if (!rc)
		rc = emit_steps(d);
	if (!rc)
		rc = export_events(d);
	if (!rc && d->failed)
		rc = d->failed;
	if (!rc)
		rc = d->ex.ops->end(&d->ex);
	out_rc = ex_out_close(&d->ex.out); /* after a failure too: stops the writer thread */
	if (!rc)
		rc = out_rc;
	if (rc && out_rc && err && !err->msg[0])
		cs_error_set(err, rc, "%s", d->ex.out.err.msg);
	if (rc)
		sink->abort(sink);
	else
		rc = sink->finish(sink, &d->st.bytes, err);
out:
	if (d->ex.ops->free)
		d->ex.ops->free(&d->ex);
	d->st.events = d->ex.events;
	if (stats)
		*stats = d->st;
	driver_free(d);
	return rc;
}
