/*
 * api.c - the data behind `cuscope view` and its JSON API (docs/commands/view.md).
 *
 * view_data_load() opens the trace and returns at once; a loader thread then reads the timeline
 * with its own column scans of the event tables (only the columns a track needs, the kernel table
 * split between two threads) and lays the events out on the timeline's tracks, keyed, named and
 * ordered by src/timeline/timeline.c:
 *   stream  kernels, memcpys and memsets of one CUDA stream (pid, device, stream)
 *   thread  host waits (cudaStreamSynchronize, ...) of one host thread (pid, tid)
 *   api     CUDA API calls of one host thread, when the trace has them
 *   launch  the launch calls of GPU work on one host thread, from the launch times stored on the
 *           kernel, memcpy and memset rows (launchStart, launchEnd, launchTid): what the host
 *           thread does during the steps when the full API trace is off
 *   nvtx    NVTX ranges of one host thread, a track per nesting depth
 *   memory  device memory in use on one GPU (pid, device): the running sum of live allocations
 * Once the timeline is published the thread loads the arrays of `cuscope report`
 * (cs_analysis_load), finds the steps and runs the rules; the findings answer says "pending" until
 * then, and the timeline is served meanwhile.
 *
 * Each track keeps its events sorted by start with the running maximum of their ends, so that the
 * first event overlapping a window is a binary search away. A window answer walks the events of
 * the window once per track and merges those shorter than one pixel column, with gaps shorter than
 * one column between them, into busy blocks; each item carries the time it adds to the union of
 * its track's events, so the busy time of a track is exact whatever the zoom.
 *
 * Strings from the trace (kernel names, NVTX text, finding titles) are user data: invalid UTF-8 is
 * repaired and cJSON escapes them.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "cuscope/analyze.h"
#include "cuscope/demangle.h"
#include "cuscope/grow.h"
#include "cuscope/json.h"
#include "cuscope/strbuf.h"
#include "cuscope/utf8.h"
#include "report.h"
#include "cuscope/checked.h"
#include "api.h"
#include "cuscope/timeline.h"

/* The kinds of track: the timeline's (include/cuscope/timeline.h). */
enum view_track_kind {
	VT_STREAM = CS_TL_STREAM,
	VT_THREAD = CS_TL_WAITS,
	VT_API = CS_TL_API,
	VT_NVTX = CS_TL_NVTX,
	VT_MEMORY = CS_TL_MEMORY,
	VT_LAUNCH = CS_TL_LAUNCH,
};

/* Event kinds of an item, as the viewer colours them. */
enum view_item_kind {
	VI_KERNEL = 0,
	VI_MEMCPY,
	VI_MEMSET,
	VI_SYNC,
	VI_API,
	VI_NVTX,
	VI_LAUNCH, /* the host call that launched a kernel, memcpy or memset */
};

/* Names that are not StringIds: name keys -1 - code. */
#define PSEUDO_MEMSET  0
#define PSEUDO_MEMCPY  1   /* + copy kind (0..10) */
#define PSEUDO_SYNC    20  /* + sync type (0..102) */
#define PSEUDO_UNNAMED 150 /* no name */
#define PSEUDO_COUNT   151

/* Kernel tables at least this long are read by two threads. */
#define PARALLEL_MIN_KERNELS 200000
/* Sorted runs of one track in one part of the load: one per table at most. */
#define MAX_RUNS 8
/* Rows between two updates of the progress count. */
#define PROGRESS_EVERY 65536

struct view_item {
	int64_t start, end;
	int32_t name; /* StringIds id, or -1 - pseudo code */
	int32_t kind; /* enum view_item_kind */
};

struct view_sample {
	int64_t t, value;
};

struct view_track {
	enum view_track_kind kind;
	uint32_t pid, tid;
	int32_t device, depth;
	int64_t stream;
	char name[96];
	struct view_item *items;
	int64_t *max_end; /* max_end[i]: the latest end among items[0..i] */
	size_t n, cap;
	struct view_sample *samples; /* memory tracks */
	size_t nsamples, samples_cap;
	int64_t peak; /* memory tracks: the highest sample, at least 0 (set by track_set_seal) */
	/* overview tracks: the index in the overview, and the events */
	int32_t ov;
	int64_t ov_events;
	/* while loading: where each table's sorted run of items ends */
	size_t run_end[MAX_RUNS];
	int nruns;
};

/* Tracks found by key (kind, pid, a, b), open addressing. */
struct track_set {
	struct view_track *tracks;
	size_t ntracks, cap;
	uint64_t *hkeys;
	uint32_t *hvals; /* track index + 1 */
	size_t hcap;
};

enum view_state {
	VS_PENDING = 0,
	VS_READY,
	VS_FAILED,
};

struct view_data {
	char *path;
	cs_trace *trace; /* the loader's until the timeline is ready, then the server's (names) */
	cs_trace_summary sum;
	int64_t total_events;
	int64_t max_memory;    /* the analysis's memory limit (cs_load_opts.max_bytes) */
	atomic_int stop;       /* view_data_free() was called: the loader stops early */
	atomic_llong loaded;   /* event rows read so far */
	struct timespec began; /* view_data_load() was called */
	/* the timeline: built by the loader thread, read-only once timeline is VS_READY */
	struct track_set ts;
	int64_t max_name; /* largest StringIds id seen */
	/* the writer's overview (NULL when the trace has none) and its tracks, read at start */
	cs_overview *ov;
	struct track_set ov_ts;
	char *summary; /* the summary answer */
	/* guarded by lock */
	pthread_mutex_t lock;
	enum view_state timeline, analysis;
	char timeline_error[CS_ERROR_MSG_MAX], analysis_error[CS_ERROR_MSG_MAX];
	char *findings; /* the findings answer, once the analysis is done */
	char *pending;	/* the findings answer while the rules run: "pending", with the steps */
	int refs;	/* the owner and the loader thread */
};

static double ms_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) * 1e3 + (double)(now.tv_nsec - t0->tv_nsec) / 1e6;
}

/* ---- tracks ---- */

static uint64_t track_key(enum view_track_kind kind, uint32_t pid, int64_t a, int64_t b)
{
	struct cs_tl_key k = {kind, pid, a, b};

	return cs_tl_key_hash(&k);
}

static int hash_grow(struct track_set *s)
{
	size_t ncap = s->hcap ? s->hcap * 2 : 256;
	uint64_t *keys = calloc(ncap, sizeof(*keys));
	uint32_t *vals = calloc(ncap, sizeof(*vals));

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return CS_ERR_NOMEM;
	}
	for (size_t i = 0; i < s->hcap; i++) {
		size_t j;

		if (!s->hkeys[i])
			continue;
		for (j = s->hkeys[i] & (ncap - 1); keys[j]; j = (j + 1) & (ncap - 1))
			;
		keys[j] = s->hkeys[i];
		vals[j] = s->hvals[i];
	}
	free(s->hkeys);
	free(s->hvals);
	s->hkeys = keys;
	s->hvals = vals;
	s->hcap = ncap;
	return 0;
}

/* The key values (a, b) of a track: (device, stream) on a GPU, (tid, depth) on a host thread. */
static void track_ab(const struct view_track *t, int64_t *a, int64_t *b)
{
	switch (t->kind) {
	case VT_STREAM:
		*a = t->device;
		*b = t->stream;
		break;
	case VT_MEMORY:
		*a = t->device;
		*b = 0;
		break;
	case VT_NVTX:
		*a = t->tid;
		*b = t->depth;
		break;
	default:
		*a = t->tid;
		*b = 0;
		break;
	}
}

/*
 * The track of (kind, pid, a, b), created on first use: a and b are (device, stream) for streams
 * and memory, (tid, depth) for host tracks. NULL without memory.
 */
static struct view_track *track_get(struct track_set *s, enum view_track_kind kind, uint32_t pid,
				    int64_t a, int64_t b)
{
	uint64_t key = track_key(kind, pid, a, b);
	struct view_track *t;
	size_t j;

	if (s->ntracks * 2 >= s->hcap && hash_grow(s))
		return NULL;
	for (j = key & (s->hcap - 1); s->hkeys[j]; j = (j + 1) & (s->hcap - 1)) {
		int64_t ta, tb;

		t = &s->tracks[s->hvals[j] - 1];
		track_ab(t, &ta, &tb);
		if (s->hkeys[j] == key && t->kind == kind && t->pid == pid && ta == a && tb == b)
			return t;
	}
	if (cs_grow((void **)&s->tracks, &s->cap, s->ntracks + 1, sizeof(*s->tracks)))
		return NULL;
	t = &s->tracks[s->ntracks++];
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->pid = pid;
	t->device = -1;
	t->stream = -1;
	if (kind == VT_STREAM || kind == VT_MEMORY) {
		t->device = (int32_t)a;
		t->stream = kind == VT_STREAM ? b : -1;
	} else {
		t->tid = (uint32_t)a;
		t->depth = kind == VT_NVTX ? (int32_t)b : 0;
	}
	{
		struct cs_tl_key k = {kind, pid, a, b};

		cs_tl_track_name(&k, t->name, sizeof(t->name));
	}
	s->hkeys[j] = key;
	s->hvals[j] = (uint32_t)s->ntracks;
	return t;
}

static void track_free(struct view_track *t)
{
	free(t->items);
	free(t->max_end);
	free(t->samples);
}

static void track_set_free(struct track_set *s)
{
	for (size_t i = 0; i < s->ntracks; i++)
		track_free(&s->tracks[i]);
	free(s->tracks);
	free(s->hkeys);
	free(s->hvals);
	memset(s, 0, sizeof(*s));
}

/* Make room for more items (at least extra more) on t; 0 or CS_ERR_NOMEM. */
static int track_reserve(struct view_track *t, size_t extra)
{
	size_t ncap = t->cap ? t->cap : 256;
	struct view_item *ni;

	if (t->n + extra <= t->cap)
		return 0;
	while (ncap < t->n + extra)
		ncap *= 2;
	if (ncap * sizeof(*ni) < CS_HUGE_ARRAY_MIN) {
		ni = realloc(t->items, ncap * sizeof(*ni));
	} else {
		ni = cs_big_alloc(ncap * sizeof(*ni));
		if (ni && t->n)
			memcpy(ni, t->items, t->n * sizeof(*ni));
		if (ni)
			free(t->items);
	}
	if (!ni)
		return CS_ERR_NOMEM;
	t->items = ni;
	t->cap = ncap;
	return 0;
}

static int track_add(struct view_track *t, int64_t start, int64_t end, int64_t name, int kind)
{
	struct view_item *it;

	if (start == CS_TS_UNKNOWN)
		return 0;
	if (end == CS_TS_UNKNOWN || end < start)
		end = start;
	if (t->n == t->cap && track_reserve(t, 1))
		return CS_ERR_NOMEM;
	it = &t->items[t->n++];
	it->start = start;
	it->end = end;
	it->name = name >= 0 && name <= INT32_MAX      ? (int32_t)name
		   : name < 0 && name >= -PSEUDO_COUNT ? (int32_t)name
						       : -1 - PSEUDO_UNNAMED;
	it->kind = kind;
	return 0;
}

static int sample_add(struct view_track *t, int64_t ts, int64_t value)
{
	if (t->nsamples && t->samples[t->nsamples - 1].t == ts) {
		t->samples[t->nsamples - 1].value = value;
		return 0;
	}
	if (cs_grow((void **)&t->samples, &t->samples_cap, t->nsamples + 1, sizeof(*t->samples)))
		return CS_ERR_NOMEM;
	t->samples[t->nsamples].t = ts;
	t->samples[t->nsamples].value = value;
	t->nsamples++;
	return 0;
}

static int item_cmp(const void *pa, const void *pb)
{
	const struct view_item *x = pa, *y = pb;

	return (x->start > y->start) - (x->start < y->start);
}

/* A sorted run of items. */
struct run {
	const struct view_item *p, *end;
};

/*
 * Merge sorted runs into out (k-way; k is small): the run with the smallest head gives all its
 * items up to the next smallest head in one copy, so that a run of kernels interleaved with a few
 * copies moves in blocks.
 */
static void merge_runs(struct run *runs, int nruns, struct view_item *out)
{
	while (nruns > 0) {
		int m = 0;
		int64_t next = INT64_MAX;
		const struct view_item *q;

		for (int r = 1; r < nruns; r++)
			if (runs[r].p->start < runs[m].p->start)
				m = r;
		for (int r = 0; r < nruns; r++)
			if (r != m && runs[r].p->start < next)
				next = runs[r].p->start;
		for (q = runs[m].p; q < runs[m].end && q->start <= next; q++)
			;
		memcpy(out, runs[m].p, (size_t)(q - runs[m].p) * sizeof(*q));
		out += q - runs[m].p;
		runs[m].p = q;
		if (q == runs[m].end)
			runs[m] = runs[--nruns];
	}
}

/*
 * Sort items by start with an insertion sort, which costs one pass and a move per inversion on
 * nearly sorted items; 1 when it gave up after budget moves (the items are then in some order,
 * none lost).
 */
static int sort_nearly_sorted(struct view_item *a, size_t n, size_t budget)
{
	size_t moves = 0;

	for (size_t i = 1; i < n; i++) {
		struct view_item x;
		size_t j = i;

		if (a[i].start >= a[i - 1].start)
			continue;
		x = a[i];
		while (j > 0 && a[j - 1].start > x.start) {
			a[j] = a[j - 1];
			j--;
			if (++moves > budget) {
				a[j] = x;
				return 1;
			}
		}
		a[j] = x;
	}
	return 0;
}

/* Fill t->max_end; 1 when the items turn out not to be sorted by start. */
static int track_max_end(struct view_track *t)
{
	int64_t m = INT64_MIN;

	for (size_t j = 0; j < t->n; j++) {
		if (j && t->items[j].start < t->items[j - 1].start)
			return 1;
		if (t->items[j].end > m)
			m = t->items[j].end;
		t->max_end[j] = m;
	}
	return 0;
}

/*
 * Make the final track dst of the same tracks of the parts (srcs[0..n), in part order): one array
 * of items sorted by start, merged from the sorted runs the parts read (each table's rows are in
 * time order), and its max_end. The parts' arrays are taken over or freed.
 */
static int track_finish(struct view_track *dst, struct view_track **srcs, int n)
{
	struct run runs[2 * MAX_RUNS];
	size_t total = 0;
	int nruns = 0;

	for (int i = 0; i < n; i++) {
		size_t begin = 0;

		total += srcs[i]->n;
		for (int r = 0; r < srcs[i]->nruns; r++) {
			if (srcs[i]->run_end[r] > begin && nruns < 2 * MAX_RUNS) {
				runs[nruns].p = srcs[i]->items + begin;
				runs[nruns].end = srcs[i]->items + srcs[i]->run_end[r];
				nruns++;
			}
			begin = srcs[i]->run_end[r];
		}
		if (srcs[i]->samples) {
			/* memory: one part reads it all */
			dst->samples = srcs[i]->samples;
			dst->nsamples = srcs[i]->nsamples;
			srcs[i]->samples = NULL;
		}
	}
	dst->n = total;
	if (nruns <= 1) {
		/* one run: take the part's array as it is */
		for (int i = 0; i < n; i++) {
			if (srcs[i]->n) {
				dst->items = srcs[i]->items;
				srcs[i]->items = NULL;
			}
		}
	} else {
		dst->items = cs_big_alloc(total * sizeof(*dst->items));
		if (!dst->items)
			return CS_ERR_NOMEM;
		merge_runs(runs, nruns, dst->items);
	}
	for (int i = 0; i < n; i++) {
		free(srcs[i]->items);
		srcs[i]->items = NULL;
	}
	dst->cap = total;
	dst->max_end = cs_big_alloc((total ? total : 1) * sizeof(*dst->max_end));
	if (!dst->max_end)
		return CS_ERR_NOMEM;
	if (track_max_end(dst)) {
		/* not in time order: launch calls (read in the order of their GPU work, which runs
		 * them out of order across streams), or a damaged file. Launches are nearly sorted:
		 * an insertion sort moves each a few places; past a budget of moves, a full sort */
		if (sort_nearly_sorted(dst->items, dst->n, 32 * dst->n + 1024))
			cs_sort(dst->items, dst->n, sizeof(*dst->items), item_cmp);
		track_max_end(dst);
	}
	return 0;
}

static int track_order(const void *pa, const void *pb)
{
	const struct view_track *x = pa, *y = pb;
	struct cs_tl_key kx = {x->kind, x->pid, 0, 0}, ky = {y->kind, y->pid, 0, 0};

	track_ab(x, &kx.a, &kx.b);
	track_ab(y, &ky.a, &ky.b);
	return cs_tl_key_cmp(&kx, &ky);
}

/* Loading is done: tracks in display order, memory peaks, and the hash let go (it points at
 * positions before the sort). */
static void track_set_seal(struct track_set *ts)
{
	cs_sort(ts->tracks, ts->ntracks, sizeof(*ts->tracks), track_order);
	for (size_t i = 0; i < ts->ntracks; i++) {
		struct view_track *t = &ts->tracks[i];

		t->peak = 0;
		for (size_t j = 0; j < t->nsamples; j++)
			if (t->samples[j].value > t->peak)
				t->peak = t->samples[j].value;
	}
	free(ts->hkeys);
	free(ts->hvals);
	ts->hkeys = NULL;
	ts->hvals = NULL;
	ts->hcap = 0;
}

/* ---- the timeline: its own scans of the event tables ---- */

/*
 * One part of the load: a range of the kernel table, and with others set every other table, read
 * through one connection into a track set of its own. Two parts run on two threads; their tracks
 * are then joined in part order, which keeps each table's rows in time order.
 */
struct part {
	struct view_data *v;
	const char *path;
	cs_trace *t; /* the caller's trace, or NULL: open path */
	int64_t kfirst, kend;
	int others;
	struct track_set ts;
	struct view_track *last;	/* the track of the previous row */
	struct view_track *last_launch; /* the launch track of the previous row */
	int64_t max_name;
	int64_t rows;
	/* device memory in use at the current row (the timeline's counter) */
	cs_tl_mem mem;
	int rc;
	cs_error err;
};

/* Count a row; non-zero when the load should stop (the server is shutting down). */
static int part_tick(struct part *p)
{
	if (++p->rows % PROGRESS_EVERY)
		return 0;
	atomic_fetch_add_explicit(&p->v->loaded, PROGRESS_EVERY, memory_order_relaxed);
	return atomic_load_explicit(&p->v->stop, memory_order_relaxed);
}

static struct view_track *part_track(struct part *p, enum view_track_kind kind, uint32_t pid,
				     int64_t a, int64_t b)
{
	struct view_track *t = p->last;
	int64_t ta, tb;

	if (t && t->kind == kind && t->pid == pid) {
		track_ab(t, &ta, &tb);
		if (ta == a && tb == b)
			return t;
	}
	t = track_get(&p->ts, kind, pid, a, b);
	p->last = t;
	p->last_launch = NULL; /* a new track may have moved the tracks */
	return t;
}

static void note_name(struct part *p, int64_t id)
{
	if (id > p->max_name && id <= INT32_MAX)
		p->max_name = id;
}

/* The columns each track kind is read from (include/cuscope/columns.def). */
static const int kernel_cols[] = {CS_COL_KERNEL_start,	  CS_COL_KERNEL_end,
				  CS_COL_KERNEL_pid,	  CS_COL_KERNEL_deviceId,
				  CS_COL_KERNEL_streamId, CS_COL_KERNEL_nameId,
				  CS_COL_KERNEL_launchStart, CS_COL_KERNEL_launchEnd,
				  CS_COL_KERNEL_launchTid};
static const int memcpy_cols[] = {CS_COL_MEMCPY_start,	  CS_COL_MEMCPY_end,
				  CS_COL_MEMCPY_pid,	  CS_COL_MEMCPY_deviceId,
				  CS_COL_MEMCPY_streamId, CS_COL_MEMCPY_copyKind,
				  CS_COL_MEMCPY_launchStart, CS_COL_MEMCPY_launchEnd,
				  CS_COL_MEMCPY_launchTid};
static const int memset_cols[] = {CS_COL_MEMSET_start, CS_COL_MEMSET_end, CS_COL_MEMSET_pid,
				  CS_COL_MEMSET_deviceId, CS_COL_MEMSET_streamId,
				  CS_COL_MEMSET_launchStart, CS_COL_MEMSET_launchEnd,
				  CS_COL_MEMSET_launchTid};
static const int sync_cols[] = {CS_COL_SYNC_start, CS_COL_SYNC_end, CS_COL_SYNC_pid,
				CS_COL_SYNC_tid, CS_COL_SYNC_syncType};
static const int api_cols[] = {CS_COL_API_start, CS_COL_API_end, CS_COL_API_pid, CS_COL_API_tid,
			       CS_COL_API_nameId};
static const int nvtx_cols[] = {CS_COL_NVTX_start, CS_COL_NVTX_end,   CS_COL_NVTX_pid,
				CS_COL_NVTX_tid,   CS_COL_NVTX_depth, CS_COL_NVTX_textId};
static const int memory_cols[] = {CS_COL_MEMORY_start,	  CS_COL_MEMORY_pid,
				  CS_COL_MEMORY_deviceId, CS_COL_MEMORY_memoryOperationType,
				  CS_COL_MEMORY_memKind,  CS_COL_MEMORY_returnValue,
				  CS_COL_MEMORY_address,  CS_COL_MEMORY_bytes};

/*
 * The launch call of GPU work (launchStart, launchEnd, launchTid at v[0..2]) on its host thread's
 * launch track, named as the work is: rows without a launch time add nothing.
 */
static int add_launch(struct part *p, uint32_t pid, int64_t start, int64_t end, int64_t tid,
		      int64_t name)
{
	struct view_track *t = p->last_launch;

	if (start == CS_TS_UNKNOWN)
		return 0;
	if (!t || t->pid != pid || t->tid != (uint32_t)tid) {
		t = track_get(&p->ts, VT_LAUNCH, pid, (uint32_t)tid, 0);
		if (!t)
			return CS_ERR_NOMEM;
		p->last_launch = t;
		p->last = NULL; /* a new track may have moved the tracks */
	}
	return track_add(t, start, end, name, VI_LAUNCH);
}

static int row_kernel(const int64_t *v, void *arg)
{
	struct part *p = arg;
	struct view_track *t =
		part_track(p, VT_STREAM, (uint32_t)v[CS_COL_KERNEL_pid],
			   (int32_t)v[CS_COL_KERNEL_deviceId], (uint32_t)v[CS_COL_KERNEL_streamId]);
	int64_t name = v[CS_COL_KERNEL_nameId] >= 0 ? v[CS_COL_KERNEL_nameId] : -1 - PSEUDO_UNNAMED;

	if (part_tick(p))
		return 1;
	note_name(p, v[CS_COL_KERNEL_nameId]);
	if (!t || track_add(t, v[CS_COL_KERNEL_start], v[CS_COL_KERNEL_end], name, VI_KERNEL))
		return CS_ERR_NOMEM;
	return add_launch(p, (uint32_t)v[CS_COL_KERNEL_pid], v[CS_COL_KERNEL_launchStart],
			  v[CS_COL_KERNEL_launchEnd], v[CS_COL_KERNEL_launchTid], name);
}

static int row_memcpy(const int64_t *v, void *arg)
{
	struct part *p = arg;
	struct view_track *t =
		part_track(p, VT_STREAM, (uint32_t)v[CS_COL_MEMCPY_pid],
			   (int32_t)v[CS_COL_MEMCPY_deviceId], (uint32_t)v[CS_COL_MEMCPY_streamId]);
	int code =
		PSEUDO_MEMCPY + (v[CS_COL_MEMCPY_copyKind] >= 0 && v[CS_COL_MEMCPY_copyKind] <= 10
					 ? (int)v[CS_COL_MEMCPY_copyKind]
					 : 0);

	if (part_tick(p))
		return 1;
	if (!t || track_add(t, v[CS_COL_MEMCPY_start], v[CS_COL_MEMCPY_end], -1 - code, VI_MEMCPY))
		return CS_ERR_NOMEM;
	return add_launch(p, (uint32_t)v[CS_COL_MEMCPY_pid], v[CS_COL_MEMCPY_launchStart],
			  v[CS_COL_MEMCPY_launchEnd], v[CS_COL_MEMCPY_launchTid], -1 - code);
}

static int row_memset(const int64_t *v, void *arg)
{
	struct part *p = arg;
	struct view_track *t =
		part_track(p, VT_STREAM, (uint32_t)v[CS_COL_MEMSET_pid],
			   (int32_t)v[CS_COL_MEMSET_deviceId], (uint32_t)v[CS_COL_MEMSET_streamId]);

	if (part_tick(p))
		return 1;
	if (!t || track_add(t, v[CS_COL_MEMSET_start], v[CS_COL_MEMSET_end], -1 - PSEUDO_MEMSET,
			    VI_MEMSET))
		return CS_ERR_NOMEM;
	return add_launch(p, (uint32_t)v[CS_COL_MEMSET_pid], v[CS_COL_MEMSET_launchStart],
			  v[CS_COL_MEMSET_launchEnd], v[CS_COL_MEMSET_launchTid], -1 - PSEUDO_MEMSET);
}

static int row_sync(const int64_t *v, void *arg)
{
	struct part *p = arg;
	int type = (int)v[CS_COL_SYNC_syncType];
	struct view_track *t;

	if (part_tick(p))
		return 1;
	if (!cs_sync_type_is_host_wait(type) || v[CS_COL_SYNC_start] == CS_TS_UNKNOWN)
		return 0;
	t = part_track(p, VT_THREAD, (uint32_t)v[CS_COL_SYNC_pid], (uint32_t)v[CS_COL_SYNC_tid], 0);
	return t ? track_add(t, v[CS_COL_SYNC_start], v[CS_COL_SYNC_end],
			     -1 - (PSEUDO_SYNC + (type >= 0 && type <= 102 ? type : 0)), VI_SYNC)
		 : CS_ERR_NOMEM;
}

static int row_api(const int64_t *v, void *arg)
{
	struct part *p = arg;
	struct view_track *t =
		part_track(p, VT_API, (uint32_t)v[CS_COL_API_pid], (uint32_t)v[CS_COL_API_tid], 0);

	if (part_tick(p))
		return 1;
	note_name(p, v[CS_COL_API_nameId]);
	return t ? track_add(t, v[CS_COL_API_start], v[CS_COL_API_end],
			     v[CS_COL_API_nameId] >= 0 ? v[CS_COL_API_nameId] : -1 - PSEUDO_UNNAMED,
			     VI_API)
		 : CS_ERR_NOMEM;
}

static int row_nvtx(const int64_t *v, void *arg)
{
	struct part *p = arg;
	int depth = cs_tl_nvtx_depth(v[CS_COL_NVTX_depth]);
	struct view_track *t = part_track(p, VT_NVTX, (uint32_t)v[CS_COL_NVTX_pid],
					  (uint32_t)v[CS_COL_NVTX_tid], depth);

	if (part_tick(p))
		return 1;
	note_name(p, v[CS_COL_NVTX_textId]);
	return t ? track_add(t, v[CS_COL_NVTX_start], v[CS_COL_NVTX_end],
			     v[CS_COL_NVTX_textId] >= 0 ? v[CS_COL_NVTX_textId]
							: -1 - PSEUDO_UNNAMED,
			     VI_NVTX)
		 : CS_ERR_NOMEM;
}

/* Device memory in use per GPU of each process: the timeline's counter (include/cuscope/timeline.h). */
static int row_memory(const int64_t *v, void *arg)
{
	struct part *p = arg;
	struct cs_tl_mem_row row = {v[CS_COL_MEMORY_start],
				    (uint32_t)v[CS_COL_MEMORY_pid],
				    (int32_t)v[CS_COL_MEMORY_deviceId],
				    (int)v[CS_COL_MEMORY_memoryOperationType],
				    (int)v[CS_COL_MEMORY_memKind],
				    (int)v[CS_COL_MEMORY_returnValue],
				    (uint64_t)v[CS_COL_MEMORY_address],
				    v[CS_COL_MEMORY_bytes]};
	struct cs_tl_mem_change c;
	struct view_track *t;
	int rc;

	if (part_tick(p))
		return 1;
	rc = cs_tl_mem_apply(&p->mem, &row, &c);
	if (rc <= 0)
		return rc;
	t = track_get(&p->ts, VT_MEMORY, row.pid, row.device, 0);
	return t ? sample_add(t, row.start, p->mem.v[c.level].level) : CS_ERR_NOMEM;
}

struct table_scan {
	enum cs_event_kind kind;
	const int *cols;
	int ncols;
	int (*row)(const int64_t *v, void *arg);
};

#define SCAN(kind, name)                                                                           \
	{                                                                                          \
		kind, name##_cols, (int)(sizeof(name##_cols) / sizeof(name##_cols[0])), row_##name \
	}

/* The order matters: a stream's kernels, then its memcpys, then its memsets (sorted runs). */
static const struct table_scan other_scans[] = {
	SCAN(CS_EV_MEMCPY, memcpy), SCAN(CS_EV_MEMSET, memset), SCAN(CS_EV_SYNC, sync),
	SCAN(CS_EV_API, api),	    SCAN(CS_EV_NVTX, nvtx),	SCAN(CS_EV_MEMORY, memory),
};

#undef SCAN

static int part_scan(struct part *p, cs_trace *t, const struct table_scan *s, int64_t first,
		     int64_t end)
{
	cs_error serr = {0, ""};
	int rc;

	p->last = NULL;
	p->last_launch = NULL;
	rc = cs_trace_scan_rows(t, s->kind, first, end, s->cols, s->ncols, s->row, p, &serr);
	/* each track's items of this table form a sorted run */
	for (size_t i = 0; i < p->ts.ntracks; i++) {
		struct view_track *tr = &p->ts.tracks[i];

		if (tr->n > (tr->nruns ? tr->run_end[tr->nruns - 1] : 0) && tr->nruns < MAX_RUNS)
			tr->run_end[tr->nruns++] = tr->n;
	}
	if (rc == CS_ERR_NOMEM)
		return cs_error_set(&p->err, rc, "out of memory loading '%s'", p->path);
	if (rc < 0)
		return cs_error_set(&p->err, rc, "%s",
				    serr.msg[0] ? serr.msg : "cannot read the trace");
	return 0;
}

static void *part_run(void *arg)
{
	static const struct table_scan kernels = {
		CS_EV_KERNEL, kernel_cols, (int)(sizeof(kernel_cols) / sizeof(kernel_cols[0])),
		row_kernel};
	struct part *p = arg;
	cs_trace *t = p->t;

	if (!t) {
		p->rc = cs_trace_open_flags(p->path, CS_TRACE_ONE_THREAD, &t, &p->err);
		if (p->rc < 0)
			return NULL;
	}
	if (p->kend > p->kfirst)
		p->rc = part_scan(p, t, &kernels, p->kfirst, p->kend);
	for (size_t k = 0; p->others && !p->rc && k < sizeof(other_scans) / sizeof(other_scans[0]);
	     k++)
		p->rc = part_scan(p, t, &other_scans[k], 0, INT64_MAX);
	cs_tl_mem_free(&p->mem);
	if (t != p->t)
		cs_trace_close(t);
	return NULL;
}

/* Make the final tracks of s from the tracks of the parts. */
static int join_parts(struct track_set *s, struct part *parts, int nparts)
{
	/* find each track of each part in s, in part order */
	for (int i = 0; i < nparts; i++) {
		for (size_t j = 0; j < parts[i].ts.ntracks; j++) {
			struct view_track *src = &parts[i].ts.tracks[j];
			int64_t a, b;

			track_ab(src, &a, &b);
			if (!track_get(s, src->kind, src->pid, a, b))
				return CS_ERR_NOMEM;
		}
	}
	for (size_t k = 0; k < s->ntracks; k++) {
		struct view_track *dst = &s->tracks[k], *srcs[2];
		int64_t a, b;
		int n = 0;

		track_ab(dst, &a, &b);
		for (int i = 0; i < nparts && n < 2; i++) {
			struct view_track *src = track_get(&parts[i].ts, dst->kind, dst->pid, a, b);

			if (!src)
				return CS_ERR_NOMEM;
			srcs[n++] = src;
		}
		if (track_finish(dst, srcs, n))
			return CS_ERR_NOMEM;
	}
	return 0;
}

/*
 * Read the timeline: every event on its track. With many kernels a second thread reads the last
 * part of the kernel table and then the other tables while this one reads the first part, the
 * split chosen so that both take about as long.
 */
static int load_timeline(struct view_data *v, cs_error *err)
{
	int64_t nk = v->sum.counts[CS_EV_KERNEL], other = v->total_events - nk, split = 0;
	struct part parts[2];
	pthread_t thread;
	int threaded = 0, rc = 0;

	memset(parts, 0, sizeof(parts));
	for (int i = 0; i < 2; i++) {
		parts[i].v = v;
		parts[i].path = v->path;
		parts[i].max_name = -1;
		cs_tl_mem_init(&parts[i].mem);
	}
	/* parts[0]: the first kernels; parts[1]: the rest, then the other tables */
	if (nk >= PARALLEL_MIN_KERNELS) {
		/* a row of the other tables costs about 3/4 of a kernel row (fewer columns) */
		int64_t half = (nk + other * 3 / 4) / 2;

		split = half < nk ? half : nk;
	}
	/* each part on a connection of its own, without SQLite's locking on every call: the
	 * server's (v->trace, serialized) answers the summary from the overview meanwhile */
	parts[0].t = NULL;
	parts[0].kfirst = 0;
	parts[0].kend = split;
	parts[1].kfirst = split;
	parts[1].kend = nk;
	parts[1].others = 1;
	if (split > 0)
		threaded = pthread_create(&thread, NULL, part_run, &parts[1]) == 0;
	if (!threaded) {
		/* one thread reads everything */
		parts[0].kend = nk;
		parts[0].others = 1;
	}
	part_run(&parts[0]);
	if (threaded)
		pthread_join(thread, NULL);
	for (int i = 0; i < 2 && !rc; i++) {
		if (parts[i].rc < 0) {
			*err = parts[i].err;
			rc = parts[i].rc;
		}
	}
	if (!rc && atomic_load(&v->stop))
		rc = cs_error_set(err, CS_ERR_INVALID, "stopped");
	for (int i = 0; i < 2 && !rc; i++)
		if (parts[i].max_name > v->max_name)
			v->max_name = parts[i].max_name;
	if (!rc && join_parts(&v->ts, parts, 2))
		rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory loading '%s'", v->path);
	for (int i = 0; i < 2; i++)
		track_set_free(&parts[i].ts);
	if (rc)
		return rc;
	track_set_seal(&v->ts);
	return 0;
}

/* ---- the summary and findings answers ---- */

static char *json_text(cJSON *root)
{
	char *s = root ? cJSON_PrintUnformatted(root) : NULL;

	cJSON_Delete(root);
	return s;
}

static void add_int(cJSON *obj, const char *key, int64_t value)
{
	cJSON_AddItemToObject(obj, key, cs_json_int(value));
}

static int process_json(const cs_process *p, void *arg)
{
	cJSON *o = cJSON_CreateObject();

	add_int(o, "pid", p->pid);
	cs_json_add_int(o, "rank", p->rank, CS_ID_NONE);
	cs_json_add_int(o, "local_rank", p->local_rank, CS_ID_NONE);
	cs_json_add_string(o, "command", p->command_line);
	cJSON_AddItemToArray(arg, o);
	return 0;
}

/* The processes of the trace: pid, rank and command line (the viewer's group headers). */
static void add_processes(struct view_data *v, cJSON *arr)
{
	cs_error err = {0};

	if (arr)
		cs_trace_each_process(v->trace, process_json, arr, &err);
}

/*
 * The summary of the tracks of ts: trace meta, time span and tracks. "ready" once the timeline is
 * read; "overview" (with load_ms < 0) while the tracks come from the overview.
 */
static char *make_summary(struct view_data *v, const struct track_set *ts, double load_ms)
{
	cJSON *root = cJSON_CreateObject(), *meta, *arr, *o;

	cJSON_AddStringToObject(root, "status", load_ms >= 0 ? "ready" : "overview");
	meta = cJSON_AddObjectToObject(root, "meta");
	cs_json_add_string(meta, "path", v->path);
	add_int(meta, "schema_version", cs_trace_schema_version(v->trace));
	cs_json_add_string(meta, "time_base_ns", cs_trace_meta(v->trace, "time_base_ns"));
	cs_json_add_string(meta, "cuscope_version", cs_trace_meta(v->trace, "cuscope_version"));
	add_int(meta, "kernels", v->sum.counts[CS_EV_KERNEL]);
	add_int(meta, "memcpys", v->sum.counts[CS_EV_MEMCPY]);
	add_int(meta, "memsets", v->sum.counts[CS_EV_MEMSET]);
	add_int(meta, "syncs", v->sum.counts[CS_EV_SYNC]);
	add_int(meta, "api_calls", v->sum.counts[CS_EV_API]);
	add_int(meta, "nvtx", v->sum.counts[CS_EV_NVTX]);
	add_int(meta, "memory", v->sum.counts[CS_EV_MEMORY]);
	if (load_ms >= 0) {
		add_int(meta, "load_ms", (int64_t)(load_ms + 0.5));
	} else {
		/* reading the tracks: as the "loading" answer says it */
		add_int(root, "events", v->total_events);
		add_int(root, "loaded", atomic_load(&v->loaded));
		add_int(root, "ms", (int64_t)ms_since(&v->began));
	}
	add_int(root, "start", v->sum.start == CS_TS_UNKNOWN ? 0 : v->sum.start);
	add_int(root, "end", v->sum.end == CS_TS_UNKNOWN ? 0 : v->sum.end);

	add_processes(v, cJSON_AddArrayToObject(root, "processes"));
	arr = cJSON_AddArrayToObject(root, "tracks");
	for (size_t i = 0; i < ts->ntracks; i++) {
		const struct view_track *t = &ts->tracks[i];

		o = cJSON_CreateObject();
		add_int(o, "id", (int64_t)i);
		cJSON_AddStringToObject(o, "kind", cs_tl_kind_name(t->kind));
		cJSON_AddStringToObject(o, "name", t->name);
		add_int(o, "pid", t->pid);
		cs_json_add_int(o, "device", t->device, -1);
		cs_json_add_int(o, "stream", t->kind == VT_STREAM ? t->stream : -1, -1);
		cs_json_add_int(o, "tid", t->tid, 0);
		if (t->kind == VT_NVTX)
			add_int(o, "depth", t->depth);
		add_int(o, "events",
			(int64_t)(t->kind == VT_MEMORY ? t->nsamples : t->n) + t->ov_events);
		cJSON_AddItemToArray(arr, o);
	}
	return json_text(root);
}

/* The busy time of track t within [a, b) (the union of its events cut to it). */
static int64_t track_busy(const struct view_track *t, int64_t a, int64_t b, int64_t *events);

/* Where a finding is costliest: a time span and its step (-1 when not known). */
struct focus {
	int64_t start, end;
	int32_t step;
};

/*
 * From the evidence: an object whose key starts with "costliest" (d2h-sync's costliest_wait)
 * spans from its earliest "*_start" to its latest "*_end" member. 1 when found.
 */
static int focus_from_evidence(const cJSON *evidence, struct focus *f)
{
	const cJSON *o, *m;

	cJSON_ArrayForEach(o, evidence)
	{
		if (!cJSON_IsObject(o) || !o->string || strncmp(o->string, "costliest", 9))
			continue;
		f->start = INT64_MAX;
		f->end = INT64_MIN;
		cJSON_ArrayForEach(m, o)
		{
			size_t n = m->string ? strlen(m->string) : 0;
			int64_t x;

			if (!cJSON_IsNumber(m))
				continue;
			x = (int64_t)m->valuedouble;
			if (n > 6 && !strcmp(m->string + n - 6, "_start") && x < f->start)
				f->start = x;
			if (n > 4 && !strcmp(m->string + n - 4, "_end") && x > f->end)
				f->end = x;
			if (!strcmp(m->string, "step"))
				f->step = (int32_t)x;
		}
		if (f->start <= f->end && f->end != INT64_MIN)
			return 1;
	}
	return 0;
}

/*
 * Otherwise the finding's step where the GPU of its process was idle longest (the step's span
 * less the busiest stream's busy time in it): the rules measure what a finding costs as GPU idle
 * time. tracks is NULL when the timeline could not be read: the first step then.
 */
static void focus_of(const cs_report_finding *rf, const cs_steps *steps,
		     const struct track_set *tracks, struct focus *f)
{
	int64_t best = -1;

	f->start = rf->first;
	f->end = rf->last;
	f->step = -1;
	if (rf->evidence && focus_from_evidence(rf->evidence, f))
		return;
	for (int32_t i = 0; i < rf->nsteps; i++) {
		const cs_step *s = NULL;
		int64_t busy = 0, idle;

		for (int32_t k = 0; k < steps->n && !s; k++)
			if (steps->v[k].index == rf->steps[i])
				s = &steps->v[k];
		if (!s || s->end <= s->start)
			continue;
		for (size_t j = 0; tracks && j < tracks->ntracks; j++) {
			const struct view_track *t = &tracks->tracks[j];
			int64_t b;

			if (t->kind != VT_STREAM || t->pid != rf->pid)
				continue;
			b = track_busy(t, s->start, s->end, NULL);
			if (b > busy)
				busy = b;
		}
		idle = s->end - s->start - busy;
		if (idle > best) {
			best = idle;
			f->start = s->start;
			f->end = s->end;
			f->step = s->index;
		}
		if (!tracks)
			break;
	}
}

/* The findings answer: the steps and the findings of `cuscope report`. */
/* The steps as the findings answer lists them: index, start, end, warmup. */
static void add_steps(cJSON *arr, const cs_steps *steps)
{
	for (int32_t i = 0; i < steps->n; i++) {
		const cs_step *s = &steps->v[i];
		cJSON *o = cJSON_CreateObject();

		add_int(o, "index", s->index);
		add_int(o, "start", s->start);
		add_int(o, "end", s->end);
		cJSON_AddBoolToObject(o, "warmup", s->warmup != 0);
		cJSON_AddItemToArray(arr, o);
	}
}

/*
 * The findings answer: the steps of the primary process (the one with the most kernels), every
 * process with its own steps, and the findings of every process, as `cuscope report` finds them
 * and as its JSON lists them (report_json_finding: the stacks read through t), each with its index
 * and focus.
 */
static char *make_findings(cs_trace *t, const cs_load_window *w, const cs_report_processes *procs,
			   const cs_report *report, double ms, const struct track_set *tracks)
{
	const cs_steps *steps = &procs->v[procs->primary].steps;
	cJSON *root = cJSON_CreateObject(), *arr, *o;

	cJSON_AddStringToObject(root, "status", "ready");
	cs_json_add_string(root, "step_method", cs_step_method_name(steps->method));
	cs_json_add_string(root, "step_detail", steps->detail);
	if (w->on) {
		/* the trace over the memory limit: steps and findings of a window of it */
		char line[512];

		o = cJSON_AddObjectToObject(root, "window");
		add_int(o, "start", w->start);
		add_int(o, "end", w->end);
		cs_json_add_string(o, "text", cs_load_window_text(line, sizeof(line), w));
	}
	add_int(root, "analysis_ms", (int64_t)(ms + 0.5));
	add_int(root, "pid", procs->v[procs->primary].pid);
	add_steps(cJSON_AddArrayToObject(root, "steps"), steps);
	arr = cJSON_AddArrayToObject(root, "processes");
	for (int32_t i = 0; i < procs->n; i++) {
		const cs_report_process *p = &procs->v[i];

		o = cJSON_CreateObject();
		add_int(o, "pid", p->pid);
		cs_json_add_int(o, "rank", p->rank, CS_ID_NONE);
		cs_json_add_string(o, "step_method", cs_step_method_name(p->steps.method));
		add_steps(cJSON_AddArrayToObject(o, "steps"), &p->steps);
		cJSON_AddItemToArray(arr, o);
	}
	arr = cJSON_AddArrayToObject(root, "findings");
	for (int32_t i = 0; i < report->n; i++) {
		const cs_report_finding *f = report->v[i];
		const cs_report_process *fp = cs_report_process_find(procs, f->pid);
		struct focus fo;
		cJSON *fj;

		/* as `cuscope report --format json` has it, with its index and focus */
		o = report_json_finding(t, procs, f);
		if (!o) {
			cJSON_Delete(root);
			return NULL;
		}
		cJSON_AddItemToArray(arr, o);
		add_int(o, "id", i);
		fj = cJSON_AddObjectToObject(o, "focus");
		/* in the steps of the finding's own process */
		focus_of(f, fp ? &fp->steps : steps, tracks, &fo);
		cs_json_add_int(fj, "start", fo.start, CS_TS_UNKNOWN);
		cs_json_add_int(fj, "end", fo.end, CS_TS_UNKNOWN);
		cs_json_add_int(fj, "step", fo.step, -1);
	}
	return json_text(root);
}

/* {"status": status, "error": msg}: msg is escaped (it may quote the path). */
static char *status_json(const char *status, const char *msg)
{
	cJSON *root = cJSON_CreateObject();

	cJSON_AddStringToObject(root, "status", status);
	if (msg)
		cs_json_add_string(root, "error", msg);
	return json_text(root);
}

/* ---- loading ---- */

static void pause_ms(struct view_data *v, long ms);

/*
 * Publish the steps of the primary process while the rules run: the findings answer says
 * "pending" with them, so that the page can frame the steady-state steps before the findings.
 */
static void publish_steps(struct view_data *v, const cs_steps *steps)
{
	cJSON *root = cJSON_CreateObject();
	char *json;

	cJSON_AddStringToObject(root, "status", "pending");
	cs_json_add_string(root, "step_method", cs_step_method_name(steps->method));
	cs_json_add_string(root, "step_detail", steps->detail);
	add_int(root, "pid", steps->pid);
	add_steps(cJSON_AddArrayToObject(root, "steps"), steps);
	json = json_text(root);
	pthread_mutex_lock(&v->lock);
	free(v->pending);
	v->pending = json;
	pthread_mutex_unlock(&v->lock);
}

/* One analysis of the trace: its arrays, steps and findings, until the findings answer is made. */
struct analysis_run {
	struct view_data *v;
	cs_trace *t;
	cs_analysis a;
	cs_steps steps;
	cs_report_processes procs;
	cs_report report;
	struct timespec began;
	int loaded, rc;
	cs_error err;
};

/*
 * Find the steps and run every rule, as `cuscope report` does by default, on arrays of its own
 * (cs_analysis_load, through a connection of its own); the primary process's steps are published
 * as soon as they are found. r->rc < 0 with r->err set on failure.
 */
static void analyse(struct analysis_run *r)
{
	cs_step_opts so = {NULL, -1, 0, 1}; /* windows: the report's steps (docs/steps.md) */
	/* report's default memory limit: a window of a larger trace */
	cs_load_opts lo = {r->v->max_memory, CS_TS_UNKNOWN, CS_TS_UNKNOWN};
	const char *delay;

	clock_gettime(CLOCK_MONOTONIC, &r->began);
	r->rc = cs_trace_open_flags(r->v->path, CS_TRACE_ONE_THREAD, &r->t, &r->err);
	if (r->rc < 0)
		return;
	r->rc = cs_analysis_load_opts(r->t, &r->a, &lo, &r->err);
	if (r->rc < 0)
		return;
	r->loaded = 1;
	r->rc = cs_steps_detect(&r->a, &so, &r->steps, &r->err);
	if (r->rc >= 0) {
		publish_steps(r->v, &r->steps);
		/* for tests: hold the rules back, so that they see the steps first */
		delay = getenv("CUSCOPE_VIEW_RULES_DELAY_MS");
		if (delay)
			pause_ms(r->v, strtol(delay, NULL, 10));
		/* every CUDA process with its own steps, as `cuscope report` */
		r->rc = cs_report_run_processes_from(&r->a, &so, &r->steps, NULL, &r->procs,
						     &r->report, &r->err);
	}
	if (r->rc >= 0 && r->procs.n == 0)
		r->rc = cs_error_set(&r->err, CS_ERR_INVALID, "no process to analyse");
}

/* The findings answer of analysis r (focused with tracks, NULL when the timeline could not be
 * read), or NULL with err set; r's arrays are freed. */
static char *finish_analysis(struct analysis_run *r, const struct track_set *tracks, cs_error *err)
{
	char *json = NULL;

	if (r->rc >= 0 && !(json = make_findings(r->t, &r->a.window, &r->procs, &r->report,
						 ms_since(&r->began), tracks)))
		cs_error_set(&r->err, CS_ERR_NOMEM, "out of memory");
	if (!json)
		*err = r->err;
	cs_report_free(&r->report);
	cs_report_processes_free(&r->procs);
	if (r->steps.v)
		cs_steps_free(&r->steps);
	if (r->loaded)
		cs_analysis_free(&r->a);
	if (r->t)
		cs_trace_close(r->t);
	return json;
}

static void *analysis_thread(void *arg)
{
	analyse(arg);
	return NULL;
}

static void data_destroy(struct view_data *v)
{
	track_set_free(&v->ts);
	track_set_free(&v->ov_ts);
	cs_overview_free(v->ov);
	if (v->trace)
		cs_trace_close(v->trace);
	pthread_mutex_destroy(&v->lock);
	free(v->summary);
	free(v->findings);
	free(v->pending);
	free(v->path);
	free(v);
}

/* Drop one reference; the last frees v. */
static void data_release(struct view_data *v)
{
	int left;

	pthread_mutex_lock(&v->lock);
	left = --v->refs;
	pthread_mutex_unlock(&v->lock);
	if (!left)
		data_destroy(v);
}

/* Wait ms milliseconds, or less when the server stops. */
static void pause_ms(struct view_data *v, long ms)
{
	while (ms > 0 && !atomic_load(&v->stop)) {
		struct timespec ts = {0, (ms > 50 ? 50 : ms) * 1000000L};

		nanosleep(&ts, NULL);
		ms -= 50;
	}
}

/*
 * The loader thread: the timeline first (the first screen needs it), then the analysis. With the
 * writer's overview, which draws the first screen, the analysis runs beside the timeline on a thread
 * of its own, and its findings are answered once both are done (their focus needs the tracks).
 * Each is published under the lock when done; the server answers "loading" and "pending" until then.
 */
static void *loader_run(void *arg)
{
	struct view_data *v = arg;
	struct analysis_run run;
	cs_error err = {0};
	const char *delay;
	char *json;
	pthread_t thread;
	int rc, beside = 0;

	memset(&run, 0, sizeof(run));
	run.v = v;
	/* for tests: hold the analysis back, so that they see the findings pending */
	delay = getenv("CUSCOPE_VIEW_ANALYSIS_DELAY_MS");
	if (v->ov && !delay)
		beside = pthread_create(&thread, NULL, analysis_thread, &run) == 0;
	/* for tests: hold the tracks back, so that they see the answers of the overview */
	delay = getenv("CUSCOPE_VIEW_TIMELINE_DELAY_MS");
	if (delay)
		pause_ms(v, strtol(delay, NULL, 10));
	rc = load_timeline(v, &err);
	if (!rc) {
		/* the names, read now rather than by the first window query */
		cs_trace_string(v->trace, 0);
		v->summary = make_summary(v, &v->ts, ms_since(&v->began));
		if (!v->summary)
			rc = cs_error_set(&err, CS_ERR_NOMEM, "out of memory");
	}
	pthread_mutex_lock(&v->lock);
	v->timeline = rc ? VS_FAILED : VS_READY;
	if (rc)
		snprintf(v->timeline_error, sizeof(v->timeline_error), "%s", err.msg);
	pthread_mutex_unlock(&v->lock);
	if (rc && !atomic_load(&v->stop))
		fprintf(stderr, "cuscope: %s\n", err.msg);

	delay = getenv("CUSCOPE_VIEW_ANALYSIS_DELAY_MS");
	if (delay)
		pause_ms(v, strtol(delay, NULL, 10));
	json = NULL;
	memset(&err, 0, sizeof(err));
	if (beside)
		pthread_join(thread, NULL);
	else if (!atomic_load(&v->stop))
		analyse(&run);
	if (!atomic_load(&v->stop) || beside) {
		json = finish_analysis(&run, view_data_timeline_ready(v) ? &v->ts : NULL, &err);
		if (!json && !atomic_load(&v->stop))
			fprintf(stderr, "cuscope: %s\n", err.msg[0] ? err.msg : "analysis failed");
	}
	pthread_mutex_lock(&v->lock);
	v->findings = json;
	v->analysis = json ? VS_READY : VS_FAILED;
	if (!json)
		snprintf(v->analysis_error, sizeof(v->analysis_error), "%s",
			 err.msg[0] ? err.msg : "analysis failed");
	pthread_mutex_unlock(&v->lock);
	data_release(v);
	return NULL;
}

/*
 * The overview's tracks, named and ordered as the timeline's will be; without one (an older trace,
 * or an overview that cannot be read) the answers wait for the timeline, as they did before.
 */
static void load_overview(struct view_data *v)
{
	cs_error err = {0};

	if (cs_trace_read_overview(v->trace, &v->ov, &err) < 0 || !v->ov)
		return;
	for (int32_t i = 0; i < v->ov->ntracks; i++) {
		const cs_overview_track *o = &v->ov->tracks[i];
		struct view_track *t = NULL;

		switch (o->kind) {
		case CS_OV_STREAM:
			t = track_get(&v->ov_ts, VT_STREAM, o->pid, o->device_id, o->stream_id);
			break;
		case CS_OV_WAITS:
			t = track_get(&v->ov_ts, VT_THREAD, o->pid, o->tid, 0);
			break;
		case CS_OV_API:
			t = track_get(&v->ov_ts, VT_API, o->pid, o->tid, 0);
			break;
		case CS_OV_NVTX:
			t = track_get(&v->ov_ts, VT_NVTX, o->pid, o->tid, o->depth);
			break;
		default:
			continue; /* a kind this build does not draw */
		}
		if (!t) {
			track_set_free(&v->ov_ts);
			cs_overview_free(v->ov);
			v->ov = NULL;
			return;
		}
		t->ov = i;
		t->ov_events = o->events;
	}
	track_set_seal(&v->ov_ts);
}

int view_data_load(const char *path, struct view_data **out, cs_error *err)
{
	return view_data_load_limited(path, cs_analysis_default_max_bytes(), out, err);
}

int view_data_load_limited(const char *path, int64_t max_memory, struct view_data **out,
			   cs_error *err)
{
	struct view_data *v = calloc(1, sizeof(*v));
	sigset_t all, old;
	pthread_t thread;
	int rc;

	*out = NULL;
	if (!v || !(v->path = strdup(path))) {
		free(v);
		return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
	}
	clock_gettime(CLOCK_MONOTONIC, &v->began);
	pthread_mutex_init(&v->lock, NULL);
	v->max_name = -1;
	v->max_memory = max_memory;
	v->refs = 1;
	rc = cs_trace_open(path, &v->trace, err);
	if (rc >= 0)
		rc = cs_trace_get_summary(v->trace, &v->sum, err);
	if (rc < 0) {
		data_destroy(v);
		return rc;
	}
	for (int k = 0; k < CS_EV_COUNT; k++)
		v->total_events += v->sum.counts[k];
	load_overview(v);
	/* the loader takes no signal: the caller's thread waits for them */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	v->refs = 2;
	rc = pthread_create(&thread, NULL, loader_run, v);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		data_destroy(v);
		return cs_error_set(err, CS_ERR_NOMEM, "cannot start a thread: %s", strerror(rc));
	}
	pthread_detach(thread);
	*out = v;
	return 0;
}

void view_data_free(struct view_data *v)
{
	if (!v)
		return;
	/* the loader stops reading the timeline; an analysis under way finishes on its own and
	 * the loader frees v after it */
	atomic_store(&v->stop, 1);
	data_release(v);
}

int view_data_timeline_ready(struct view_data *v)
{
	int ready;

	pthread_mutex_lock(&v->lock);
	ready = v->timeline == VS_READY;
	pthread_mutex_unlock(&v->lock);
	return ready;
}

/* ---- answers ---- */

int view_data_has_overview(struct view_data *v)
{
	return v->ov != NULL;
}

char *view_api_summary(struct view_data *v)
{
	enum view_state state;
	char msg[CS_ERROR_MSG_MAX];

	pthread_mutex_lock(&v->lock);
	state = v->timeline;
	memcpy(msg, v->timeline_error, sizeof(msg));
	pthread_mutex_unlock(&v->lock);
	if (state == VS_READY)
		return strdup(v->summary);
	if (state == VS_FAILED)
		return status_json("error", msg);
	if (v->ov)
		return make_summary(v, &v->ov_ts, -1);
	{
		char buf[160];

		snprintf(buf, sizeof(buf),
			 "{\"status\":\"loading\",\"events\":%lld,\"loaded\":%lld,\"ms\":%.0f}",
			 (long long)v->total_events, (long long)atomic_load(&v->loaded),
			 ms_since(&v->began));
		return strdup(buf);
	}
}

char *view_api_findings(struct view_data *v)
{
	enum view_state state;
	char msg[CS_ERROR_MSG_MAX], *r = NULL;

	pthread_mutex_lock(&v->lock);
	state = v->analysis;
	memcpy(msg, v->analysis_error, sizeof(msg));
	if (state == VS_READY)
		r = strdup(v->findings);
	else if (state == VS_PENDING)
		r = strdup(v->pending ? v->pending : "{\"status\":\"pending\"}");
	pthread_mutex_unlock(&v->lock);
	if (state == VS_FAILED)
		return status_json("error", msg);
	return r;
}

/* The text of a name key (static or owned by the trace). */
static const char *name_text(struct view_data *v, int64_t key, char *buf, size_t size)
{
	int code;

	if (key >= 0) {
		const char *s = cs_trace_string(v->trace, key);

		return s ? s : "(unnamed)";
	}
	code = (int)(-1 - key);
	if (code == PSEUDO_MEMSET)
		return "Memset";
	if (code >= PSEUDO_MEMCPY && code < PSEUDO_SYNC) {
		snprintf(buf, size, "Memcpy %s", cs_copy_kind_name(code - PSEUDO_MEMCPY));
		return buf;
	}
	if (code >= PSEUDO_SYNC && code < PSEUDO_UNNAMED)
		return cs_sync_type_name(code - PSEUDO_SYNC);
	return "(unnamed)";
}

/* Names used by one answer: key -> index in its "names" array. */
struct name_table {
	int32_t *ids;	 /* StringIds id -> index + 1 */
	int32_t *pseudo; /* pseudo code -> index + 1 */
	int32_t n;
	cs_strbuf json; /* the names array, comma-separated */
	cs_strbuf shrt; /* the same names demangled and short (kernels), comma-separated */
	cs_strbuf full; /* the same names demangled (kernels), comma-separated */
};

/* Append text as a JSON string to b, after a comma unless first. */
static void json_string_to(cs_strbuf *b, const char *text, int first)
{
	char *fixed = cs_utf8_repair(text), *esc;
	cJSON *s = fixed ? cJSON_CreateString(fixed) : NULL;

	esc = s ? cJSON_PrintUnformatted(s) : NULL;
	if (!first)
		cs_strbuf_puts(b, ",");
	cs_strbuf_puts(b, esc ? esc : "\"?\"");
	free(esc);
	cJSON_Delete(s);
	free(fixed);
}

/* How an item's name is shown: as recorded, a kernel's demangled, an API call's plain. */
enum name_style {
	NS_PLAIN = 0,
	NS_KERNEL,
	NS_API,
};

static enum name_style item_name_style(const struct view_item *it)
{
	if (it->kind == VI_KERNEL || (it->kind == VI_LAUNCH && it->name >= 0))
		return NS_KERNEL;
	return it->kind == VI_API ? NS_API : NS_PLAIN;
}

static int32_t name_index(struct view_data *v, struct name_table *nt, int64_t key,
			  enum name_style style)
{
	int32_t *slot = key >= 0 ? &nt->ids[key] : &nt->pseudo[-1 - key];
	char buf[64], plain[256];
	const char *text, *shrt, *full;

	if (*slot)
		return *slot - 1;
	text = name_text(v, key, buf, sizeof(buf));
	shrt = full = text;
	if (style == NS_KERNEL) {
		shrt = cs_demangle_short(text);
		full = cs_demangle(text);
	} else if (style == NS_API) {
		shrt = full = cs_api_name_plain(text, plain, sizeof(plain));
	}
	json_string_to(&nt->json, text, nt->n == 0);
	json_string_to(&nt->shrt, shrt, nt->n == 0);
	json_string_to(&nt->full, full, nt->n == 0);
	*slot = ++nt->n;
	return *slot - 1;
}

/* The first item of t that may overlap [t0, ...): the first whose running max end reaches t0. */
static size_t first_overlapping(const struct view_track *t, int64_t t0)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->max_end[mid] >= t0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

struct block {
	int64_t start, end, busy, count;
	size_t first; /* item index of a block of one */
};

/* One item: [start, end, name index (-1 for a busy block), events, busy ns, kind]. */
static void emit_item(struct view_data *v, struct name_table *nt, const struct view_track *t,
		      const struct block *b, cs_strbuf *out, int *first)
{
	const struct view_item *it = &t->items[b->first];

	cs_strbuf_printf(out, "%s[%lld,%lld,%d,%lld,%lld,%d]", *first ? "" : ",",
			 (long long)(b->count == 1 ? it->start : b->start),
			 (long long)(b->count == 1 ? it->end : b->end),
			 b->count == 1 ? name_index(v, nt, it->name, item_name_style(it)) : -1,
			 (long long)b->count, (long long)b->busy, b->count == 1 ? it->kind : -1);
	*first = 0;
}

/*
 * The width of a column of [t0, t1) in px columns, rounded up. t1 - t0 may pass INT64_MAX (the
 * server takes |t| <= 2^62): the width saturates, which no event's duration reaches.
 */
static int64_t column_ns(int64_t t0, int64_t t1, int px)
{
	return cs_sat_add(cs_sat_sub(t1, t0), px - 1) / px;
}

static void add_flows(struct view_data *v, int64_t t0, int64_t t1, cs_strbuf *out);
/* Windows with at most this many GPU events get their launch-to-GPU arrows (readable ones). */
#define FLOWS_WINDOW_MAX 1500

char *view_api_window(struct view_data *v, int64_t t0, int64_t t1, int px)
{
	struct name_table nt = {0};
	cs_strbuf out = CS_STRBUF_INIT;
	int64_t col, gpu_events = 0;
	char *r = NULL;

	if (t1 <= t0 || px <= 0)
		return NULL;
	col = column_ns(t0, t1, px);
	if (col < 1)
		col = 1;
	nt.ids = calloc((size_t)(v->max_name + 1) + 1, sizeof(*nt.ids));
	nt.pseudo = calloc(PSEUDO_COUNT, sizeof(*nt.pseudo));
	if (!nt.ids || !nt.pseudo)
		goto out;
	cs_strbuf_printf(&out, "{\"t0\":%lld,\"t1\":%lld,\"px\":%d,\"column_ns\":%lld,\"tracks\":[",
			 (long long)t0, (long long)t1, px, (long long)col);
	for (size_t i = 0, emitted = 0; i < v->ts.ntracks; i++) {
		const struct view_track *t = &v->ts.tracks[i];
		struct block b = {0};
		int64_t cov = t0, busy = 0, total = 0;
		int first = 1;

		if (t->kind == VT_MEMORY)
			continue;
		cs_strbuf_printf(&out, "%s{\"id\":%zu,\"items\":[", emitted++ ? "," : "", i);
		for (size_t j = first_overlapping(t, t0); j < t->n && t->items[j].start < t1; j++) {
			const struct view_item *it = &t->items[j];
			int64_t s = it->start > t0 ? it->start : t0;
			int64_t e = it->end < t1 ? it->end : t1;
			int64_t add = 0;

			if (it->end < t0 || (it->end == t0 && it->start < t0))
				continue; /* ended before the window (an earlier long one kept j
					     low) */
			if (e > cov) {
				add = cs_sat_sub(e, s > cov ? s : cov);
				cov = e;
			}
			cs_sat_accum(&busy, add);
			total++;
			if (cs_sat_sub(it->end, it->start) >= col) {
				/* wide enough to see: on its own */
				struct block one = {s, e, add, 1, j};

				if (b.count)
					emit_item(v, &nt, t, &b, &out, &first);
				b.count = 0;
				emit_item(v, &nt, t, &one, &out, &first);
			} else if (b.count && cs_sat_sub(s, b.end) < col) {
				/* joins the busy block: less than a column away */
				if (e > b.end)
					b.end = e;
				cs_sat_accum(&b.busy, add);
				b.count++;
			} else {
				if (b.count)
					emit_item(v, &nt, t, &b, &out, &first);
				b.start = s;
				b.end = e;
				b.busy = add;
				b.count = 1;
				b.first = j;
			}
		}
		if (b.count)
			emit_item(v, &nt, t, &b, &out, &first);
		cs_strbuf_printf(&out, "],\"busy\":%lld,\"events\":%lld}", (long long)busy,
				 (long long)total);
		if (t->kind == VT_STREAM)
			gpu_events += total;
	}
	cs_strbuf_puts(&out, "]");
	if (gpu_events > 0 && gpu_events <= FLOWS_WINDOW_MAX)
		add_flows(v, t0, t1, &out);
	cs_strbuf_puts(&out, ",\"names\":[");
	cs_strbuf_add(&out, cs_strbuf_str(&nt.json), nt.json.len);
	cs_strbuf_puts(&out, "],\"names_short\":[");
	cs_strbuf_add(&out, cs_strbuf_str(&nt.shrt), nt.shrt.len);
	cs_strbuf_puts(&out, "],\"names_demangled\":[");
	cs_strbuf_add(&out, cs_strbuf_str(&nt.full), nt.full.len);
	cs_strbuf_puts(&out, "]}");
	if (!out.failed && !nt.json.failed && !nt.shrt.failed && !nt.full.failed)
		r = strdup(cs_strbuf_str(&out));
out:
	free(nt.ids);
	free(nt.pseudo);
	cs_strbuf_free(&nt.json);
	cs_strbuf_free(&nt.shrt);
	cs_strbuf_free(&nt.full);
	cs_strbuf_free(&out);
	return r;
}

char *view_api_memory(struct view_data *v, int64_t t0, int64_t t1, int px)
{
	cs_strbuf out = CS_STRBUF_INIT;
	int64_t col;
	char *r = NULL;

	if (t1 <= t0 || px <= 0)
		return NULL;
	col = column_ns(t0, t1, px);
	if (col < 1)
		col = 1;
	cs_strbuf_printf(&out, "{\"t0\":%lld,\"t1\":%lld,\"px\":%d,\"tracks\":[", (long long)t0,
			 (long long)t1, px);
	for (size_t i = 0, emitted = 0; i < v->ts.ntracks; i++) {
		const struct view_track *t = &v->ts.tracks[i];
		int64_t level = 0, cmax = 0, ccol = INT64_MIN;
		size_t lo = 0, hi = t->nsamples;
		if (t->kind != VT_MEMORY)
			continue;
		/* the level at t0: the last sample before it */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (t->samples[mid].t < t0)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo)
			level = t->samples[lo - 1].value;
		cs_strbuf_printf(&out, "%s{\"id\":%zu,\"peak\":%lld,\"samples\":[[%lld,%lld]",
				 emitted++ ? "," : "", i, (long long)t->peak, (long long)t0,
				 (long long)level);
		/* each column keeps its highest level, at the column's start */
		for (size_t j = lo; j < t->nsamples && t->samples[j].t < t1; j++) {
			int64_t c = cs_sat_sub(t->samples[j].t, t0) / col;

			if (c != ccol) {
				if (ccol != INT64_MIN)
					cs_strbuf_printf(&out, ",[%lld,%lld]",
							 (long long)cs_sat_add(t0, ccol * col),
							 (long long)cmax);
				ccol = c;
				cmax = t->samples[j].value;
			} else if (t->samples[j].value > cmax) {
				cmax = t->samples[j].value;
			}
			level = t->samples[j].value;
		}
		if (ccol != INT64_MIN)
			cs_strbuf_printf(&out, ",[%lld,%lld]",
					 (long long)cs_sat_add(t0, ccol * col), (long long)cmax);
		cs_strbuf_printf(&out, ",[%lld,%lld]]}", (long long)t1, (long long)level);
	}
	cs_strbuf_puts(&out, "]}");
	if (!out.failed)
		r = strdup(cs_strbuf_str(&out));
	cs_strbuf_free(&out);
	return r;
}

/* ---- answers from the overview, before the timeline is read ---- */

int view_api_overview_covers(struct view_data *v, int64_t t0, int64_t t1, int px)
{
	if (!v->ov || t1 <= t0 || px <= 0)
		return 0;
	return column_ns(t0, t1, px) >= v->ov->bin_ns;
}

/* Where bin i of the overview starts (saturating: the overview's meta values come from the file).
 */
static int64_t bin_start(const cs_overview *ov, int64_t i)
{
	return cs_sat_add(ov->start, cs_sat_mul(i, ov->bin_ns));
}

/*
 * Each track's non-empty bins in the window, those less than a column apart merged into busy
 * blocks. A bin spans [start + i * bin_ns, start + (i + 1) * bin_ns) cut to the trace's span; a
 * bin the window cuts gives the share of its busy time that its cut part is of its span.
 */
char *view_api_window_overview(struct view_data *v, int64_t t0, int64_t t1, int px)
{
	const cs_overview *ov = v->ov;
	cs_strbuf out = CS_STRBUF_INIT;
	int64_t col, end = v->sum.end == CS_TS_UNKNOWN ? ov->start : v->sum.end;
	char *r = NULL;

	if (!ov || t1 <= t0 || px <= 0)
		return NULL;
	col = column_ns(t0, t1, px);
	cs_strbuf_printf(&out,
			 "{\"t0\":%lld,\"t1\":%lld,\"px\":%d,\"column_ns\":%lld,\"overview\":true,"
			 "\"bin_ns\":%lld,\"tracks\":[",
			 (long long)t0, (long long)t1, px, (long long)col, (long long)ov->bin_ns);
	for (size_t i = 0; i < v->ov_ts.ntracks; i++) {
		const cs_overview_track *o = &ov->tracks[v->ov_ts.tracks[i].ov];
		struct block b = {0};
		int64_t busy = 0, total = 0;
		int32_t lo = 0, hi = o->nbins;
		int first = 1, have = 0;

		cs_strbuf_printf(&out, "%s{\"id\":%zu,\"items\":[", i ? "," : "", i);
		/* the first bin that ends after t0 */
		while (lo < hi) {
			int32_t mid = lo + (hi - lo) / 2;

			if (bin_start(ov, (int64_t)o->bins[mid].bin + 1) <= t0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (int32_t j = lo; j < o->nbins; j++) {
			const cs_overview_bin *bin = &o->bins[j];
			int64_t bs = bin_start(ov, bin->bin);
			int64_t be =
				cs_sat_add(bs, ov->bin_ns) < end ? cs_sat_add(bs, ov->bin_ns) : end;
			int64_t s = bs > t0 ? bs : t0, e = be < t1 ? be : t1, add;

			if (bs >= t1)
				break;
			if (be < bs)
				be = bs;
			if (e < s)
				e = s;
			add = be > bs && (s > bs || e < be)
				      ? cs_sat_from_double((double)bin->busy *
							   (double)cs_sat_sub(e, s) /
							   (double)cs_sat_sub(be, bs))
				      : bin->busy;
			cs_sat_accum(&busy, add);
			cs_sat_accum(&total, bin->events);
			if (have && cs_sat_sub(s, b.end) < col) {
				b.end = e;
				cs_sat_accum(&b.busy, add);
				cs_sat_accum(&b.count, bin->events);
				continue;
			}
			if (have) {
				cs_strbuf_printf(&out, "%s[%lld,%lld,-1,%lld,%lld,-1]",
						 first ? "" : ",", (long long)b.start,
						 (long long)b.end, (long long)b.count,
						 (long long)b.busy);
				first = 0;
			}
			b.start = s;
			b.end = e;
			b.busy = add;
			b.count = bin->events;
			have = 1;
		}
		if (have)
			cs_strbuf_printf(&out, "%s[%lld,%lld,-1,%lld,%lld,-1]", first ? "" : ",",
					 (long long)b.start, (long long)b.end, (long long)b.count,
					 (long long)b.busy);
		cs_strbuf_printf(&out, "],\"busy\":%lld,\"events\":%lld}", (long long)busy,
				 (long long)total);
	}
	cs_strbuf_puts(&out, "],\"names\":[]}");
	if (!out.failed)
		r = strdup(cs_strbuf_str(&out));
	cs_strbuf_free(&out);
	return r;
}

/* The overview has no memory counter: no memory track until the timeline is read. */
char *view_api_memory_overview(struct view_data *v, int64_t t0, int64_t t1, int px)
{
	char buf[160];

	(void)v;
	snprintf(buf, sizeof(buf),
		 "{\"t0\":%lld,\"t1\":%lld,\"px\":%d,\"overview\":true,\"tracks\":[]}",
		 (long long)t0, (long long)t1, px);
	return strdup(buf);
}

/* ---- ranges, details, search and flows ---- */

static int64_t track_busy(const struct view_track *t, int64_t a, int64_t b, int64_t *events)
{
	int64_t cov = a, busy = 0, n = 0;

	for (size_t j = first_overlapping(t, a); j < t->n && t->items[j].start < b; j++) {
		const struct view_item *it = &t->items[j];
		int64_t s = it->start > a ? it->start : a, e = it->end < b ? it->end : b;

		if (it->end < a || (it->end == a && it->start < a))
			continue;
		n++;
		if (e > cov) {
			cs_sat_accum(&busy, cs_sat_sub(e, s > cov ? s : cov));
			cov = e;
		}
	}
	if (events)
		*events = n;
	return busy;
}

/* The track of kind (pid, a, b) in the timeline, or -1 (a short list: a linear search). */
static int64_t track_index(const struct view_data *v, enum view_track_kind kind, uint32_t pid,
			   int64_t a, int64_t b)
{
	for (size_t i = 0; i < v->ts.ntracks; i++) {
		const struct view_track *t = &v->ts.tracks[i];
		int64_t ta, tb;

		track_ab(t, &ta, &tb);
		if (t->kind == kind && t->pid == pid && ta == a && tb == b)
			return (int64_t)i;
	}
	return -1;
}

/* A scan of the memcpy or memset table for the bytes of a range. */
struct bytes_scan {
	struct view_data *v;
	int64_t t0, t1;
	int64_t *bytes;
	int64_t pid, device, stream, id; /* the stream of the previous row and its track */
	const int *col; /* the table's columns: start, end, pid, deviceId, streamId, bytes */
};

/* The columns read, in the order bytes_row() takes them, of the memcpy and the memset table. */
static const int bytes_cols_memcpy[] = {CS_COL_MEMCPY_start,	CS_COL_MEMCPY_end,
					CS_COL_MEMCPY_pid,	CS_COL_MEMCPY_deviceId,
					CS_COL_MEMCPY_streamId, CS_COL_MEMCPY_bytes};
static const int bytes_cols_memset[] = {CS_COL_MEMSET_start,	CS_COL_MEMSET_end,
					CS_COL_MEMSET_pid,	CS_COL_MEMSET_deviceId,
					CS_COL_MEMSET_streamId, CS_COL_MEMSET_bytes};

/* One row: added when it overlaps [t0, t1) as the reader's filter has it (an unknown end: an
 * instant at its start). */
static int bytes_row(const int64_t *x, void *arg)
{
	struct bytes_scan *b = arg;
	const int *c = b->col;
	int64_t start = x[c[0]], end = x[c[1]], pid = x[c[2]], dev = x[c[3]], stream = x[c[4]];
	int64_t bytes = x[c[5]];

	if (start == CS_TS_UNKNOWN || start >= b->t1 || bytes <= 0)
		return 0;
	if (!((end != CS_TS_UNKNOWN && end > b->t0) || start >= b->t0))
		return 0;
	if (pid != b->pid || dev != b->device || stream != b->stream) {
		b->pid = pid;
		b->device = dev;
		b->stream = stream;
		b->id = track_index(b->v, VT_STREAM, (uint32_t)pid, dev, stream);
	}
	if (b->id >= 0)
		cs_sat_accum(&b->bytes[b->id], bytes);
	return 0;
}

/*
 * The bytes of the memcpys (or memsets) overlapping [t0, t1), added to each stream's total: for
 * a range of more than an eighth of the trace, one scan of the table's columns (several times
 * faster than the iterator over many rows), else the iterator and its time index.
 */
static void add_bytes(struct view_data *v, enum cs_event_kind kind, int64_t t0, int64_t t1,
		      int64_t *bytes)
{
	cs_filter f = cs_filter_all();
	cs_error err = {0};
	cs_iter *it;
	cs_event ev;

	if (v->sum.start != CS_TS_UNKNOWN && v->sum.end != CS_TS_UNKNOWN &&
	    cs_sat_sub(t1, t0) > cs_sat_sub(v->sum.end, v->sum.start) / 8) {
		struct bytes_scan b = {v,  t0, t1, bytes, -1, -1, -1, -1,
				       kind == CS_EV_MEMSET ? bytes_cols_memset : bytes_cols_memcpy};

		cs_trace_scan(v->trace, kind, b.col, 6, bytes_row, &b, &err);
		return;
	}
	f.t0 = t0;
	f.t1 = t1;
	if (cs_iter_open(v->trace, kind, &f, &it, &err) < 0)
		return;
	while (cs_iter_next(it, &ev) == 1) {
		int64_t id, b;

		if (kind == CS_EV_MEMCPY) {
			id = track_index(v, VT_STREAM, ev.u.memcpy.pid, ev.u.memcpy.device_id,
					 ev.u.memcpy.stream_id);
			b = ev.u.memcpy.bytes;
		} else {
			id = track_index(v, VT_STREAM, ev.u.memset.pid, ev.u.memset.device_id,
					 ev.u.memset.stream_id);
			b = ev.u.memset.bytes;
		}
		if (id >= 0 && b > 0)
			cs_sat_accum(&bytes[id], b);
	}
	cs_iter_close(it);
}

char *view_api_range(struct view_data *v, int64_t t0, int64_t t1)
{
	cs_strbuf out = CS_STRBUF_INIT;
	int64_t *bytes;
	char *r = NULL;

	if (t1 <= t0)
		return NULL;
	bytes = calloc(v->ts.ntracks + 1, sizeof(*bytes));
	if (!bytes)
		return NULL;
	add_bytes(v, CS_EV_MEMCPY, t0, t1, bytes);
	add_bytes(v, CS_EV_MEMSET, t0, t1, bytes);
	cs_strbuf_printf(&out, "{\"t0\":%lld,\"t1\":%lld,\"tracks\":[", (long long)t0,
			 (long long)t1);
	for (size_t i = 0; i < v->ts.ntracks; i++) {
		const struct view_track *t = &v->ts.tracks[i];
		int64_t kinds[VI_LAUNCH + 1] = {0}, busy = 0, events = 0;

		if (t->kind == VT_MEMORY) {
			int64_t level = 0, peak = 0;
			size_t j = 0;

			for (; j < t->nsamples && t->samples[j].t < t0; j++)
				level = t->samples[j].value;
			peak = level;
			cs_strbuf_printf(&out, "%s{\"id\":%zu,\"start_level\":%lld", i ? "," : "",
					 i, (long long)level);
			for (; j < t->nsamples && t->samples[j].t < t1; j++) {
				level = t->samples[j].value;
				if (level > peak)
					peak = level;
			}
			cs_strbuf_printf(&out, ",\"end_level\":%lld,\"peak\":%lld}",
					 (long long)level, (long long)peak);
			continue;
		}
		busy = track_busy(t, t0, t1, &events);
		for (size_t j = first_overlapping(t, t0); j < t->n && t->items[j].start < t1; j++) {
			const struct view_item *it = &t->items[j];

			if (it->end < t0 || (it->end == t0 && it->start < t0))
				continue;
			if (it->kind >= 0 && it->kind <= VI_LAUNCH)
				kinds[it->kind]++;
		}
		cs_strbuf_printf(
			&out,
			"%s{\"id\":%zu,\"busy\":%lld,\"events\":%lld,\"kernels\":%lld,"
			"\"memcpys\":%lld,\"memsets\":%lld,\"launches\":%lld,\"bytes\":%lld}",
			i ? "," : "", i, (long long)busy, (long long)events,
			(long long)kinds[VI_KERNEL], (long long)kinds[VI_MEMCPY],
			(long long)kinds[VI_MEMSET], (long long)kinds[VI_LAUNCH],
			(long long)bytes[i]);
	}
	cs_strbuf_puts(&out, "]}");
	if (!out.failed)
		r = strdup(cs_strbuf_str(&out));
	cs_strbuf_free(&out);
	free(bytes);
	return r;
}

/* ---- the details of one event ---- */

static void add_text(cJSON *o, const char *key, const char *s)
{
	if (s)
		cs_json_add_string(o, key, s);
	else
		cJSON_AddNullToObject(o, key);
}

/*
 * What the details show of an event beside its columns, first: the strings looked up from its
 * string ids, with the kernel's demangled and the API call's plain name.
 */
static void event_names(cJSON *f, const cs_event *ev)
{
	char plain[256];

	switch (ev->kind) {
	case CS_EV_KERNEL:
		add_text(f, "name", ev->u.kernel.name);
		add_text(f, "nameDemangled", cs_demangle(ev->u.kernel.name));
		break;
	case CS_EV_API:
		add_text(f, "name", ev->u.api.name);
		add_text(f, "namePlain",
			 ev->u.api.name ? cs_api_name_plain(ev->u.api.name, plain, sizeof(plain))
					: NULL);
		break;
	case CS_EV_NVTX:
		add_text(f, "text", ev->u.nvtx.text);
		add_text(f, "domain", ev->u.nvtx.domain);
		if (ev->u.nvtx.payload) /* NVTX's payload extension (NCCL's message size, ...) */
			add_text(f, "payload", ev->u.nvtx.payload);
		break;
	default:
		break;
	}
}

/* The label and unit of a key of the details, in cols. */
static void column_of_key(cJSON *cols, const char *key, const cs_column_info *c)
{
	cJSON *o = cJSON_AddObjectToObject(cols, key);

	cs_json_add_string(o, "label", c->label);
	cJSON_AddStringToObject(o, "unit", cs_column_unit_name(c->unit));
}

/*
 * Every stored column of ev, named as the columns of docs/trace-format.md (include/cuscope/
 * columns.def), after the strings of event_names(): a missing time or id null, a value of an
 * enumeration cuscope names by its name, the three columns of a DIM (gridX, gridY, gridZ) one
 * array under their name without the axis ("grid"). cols gets each key's label and unit.
 */
static void event_fields(cJSON *f, cJSON *cols, const cs_event *ev)
{
	int n;
	const cs_column_info *c = cs_event_columns(ev->kind, &n);

	event_names(f, ev);
	for (int i = 0; i < n; i++) {
		int64_t v = cs_event_value(ev, i);
		const char *name = cs_column_value_name(c[i].unit, v);

		if (c[i].unit == CS_COLUNIT_DIM && i + 2 < n) {
			char key[64];
			size_t len = strlen(c[i].name);
			cJSON *a;

			snprintf(key, sizeof(key), "%.*s", (int)(len ? len - 1 : 0), c[i].name);
			a = cJSON_AddArrayToObject(f, key);
			for (int k = 0; k < 3; k++)
				cJSON_AddItemToArray(a, cs_json_int(cs_event_value(ev, i + k)));
			column_of_key(cols, key, &c[i]);
			i += 2;
			continue;
		}
		if (c[i].has_none)
			cs_json_add_int(f, c[i].name, v, c[i].none);
		else if (name)
			cs_json_add_string(f, c[i].name, name);
		else
			add_int(f, c[i].name, v);
		column_of_key(cols, c[i].name, &c[i]);
	}
}

/* The start, end, launch and stack of an event of any kind the tracks draw. */
struct event_where {
	int64_t start, end, launch_start, launch_end, stack_id;
	uint32_t pid, tid;
	int32_t device;
	int64_t stream;
};

static void event_where_of(const cs_event *ev, struct event_where *w)
{
	memset(w, 0, sizeof(*w));
	w->launch_start = w->launch_end = CS_TS_UNKNOWN;
	w->stack_id = CS_ID_NONE;
	w->device = -1;
	w->stream = -1;
	switch (ev->kind) {
#define GPU_WORK(x)                                                             \
	w->start = x.start, w->end = x.end, w->launch_start = x.launch_start,   \
	w->launch_end = x.launch_end, w->stack_id = x.stack_id, w->pid = x.pid, \
	w->tid = x.launch_tid, w->device = x.device_id, w->stream = (int64_t)x.stream_id
	case CS_EV_KERNEL:
		GPU_WORK(ev->u.kernel);
		break;
	case CS_EV_MEMCPY:
		GPU_WORK(ev->u.memcpy);
		break;
	case CS_EV_MEMSET:
		GPU_WORK(ev->u.memset);
		break;
#undef GPU_WORK
	case CS_EV_SYNC:
		w->start = ev->u.sync.start, w->end = ev->u.sync.end;
		w->pid = ev->u.sync.pid, w->tid = ev->u.sync.tid, w->stack_id = ev->u.sync.stack_id;
		break;
	case CS_EV_API:
		w->start = ev->u.api.start, w->end = ev->u.api.end;
		w->pid = ev->u.api.pid, w->tid = ev->u.api.tid, w->stack_id = ev->u.api.stack_id;
		break;
	case CS_EV_NVTX:
		w->start = ev->u.nvtx.start, w->end = ev->u.nvtx.end;
		w->pid = ev->u.nvtx.pid, w->tid = ev->u.nvtx.tid;
		break;
	default:
		break;
	}
}

/* The end a track item has for an event (unknown or implausible: its start). */
static int64_t item_end(int64_t start, int64_t end)
{
	return end == CS_TS_UNKNOWN || end < start ? start : end;
}

/* Rows looked at, at most, for the GPU work that a launch started. */
#define LAUNCH_SEARCH_ROWS 200000

/*
 * Find the event of track t drawn as [start, end): 1 with ev filled, 0 when none. On a launch
 * track, the GPU work whose launch it is.
 */
static int find_event(struct view_data *v, const struct view_track *t, int64_t start, int64_t end,
		      cs_event *ev)
{
	static const enum cs_event_kind gpu[] = {CS_EV_KERNEL, CS_EV_MEMCPY, CS_EV_MEMSET};
	enum cs_event_kind kinds[3];
	int nkinds = 0, found = 0;

	switch (t->kind) {
	case VT_STREAM:
	case VT_LAUNCH:
		memcpy(kinds, gpu, sizeof(gpu));
		nkinds = 3;
		break;
	case VT_THREAD:
		kinds[nkinds++] = CS_EV_SYNC;
		break;
	case VT_API:
		kinds[nkinds++] = CS_EV_API;
		break;
	case VT_NVTX:
		kinds[nkinds++] = CS_EV_NVTX;
		break;
	default:
		return 0;
	}
	for (int k = 0; k < nkinds && !found; k++) {
		cs_filter f = cs_filter_all();
		cs_error err = {0};
		cs_iter *it;
		long rows = 0;

		f.pid = t->pid;
		f.t0 = start;
		if (t->kind == VT_STREAM) {
			f.t1 = cs_sat_add(start, 1);
			f.device_id = t->device;
			f.stream_id = t->stream;
		} else if (t->kind != VT_LAUNCH) {
			f.t1 = cs_sat_add(start, 1);
		}
		if (cs_iter_open(v->trace, kinds[k], &f, &it, &err) < 0)
			continue;
		while (!found && rows++ < LAUNCH_SEARCH_ROWS && cs_iter_next(it, ev) == 1) {
			struct event_where w;

			event_where_of(ev, &w);
			if (t->kind == VT_LAUNCH) {
				found = w.launch_start == start && w.tid == t->tid &&
					item_end(w.launch_start, w.launch_end) == end;
				continue;
			}
			if (w.start != start || item_end(w.start, w.end) != end)
				continue;
			if (t->kind == VT_NVTX)
				found = w.tid == t->tid &&
					(ev->u.nvtx.depth < 0	 ? 0
					 : ev->u.nvtx.depth > 15 ? 15
								 : ev->u.nvtx.depth) == t->depth;
			else
				found = t->kind == VT_STREAM || w.tid == t->tid;
		}
		cs_iter_close(it);
	}
	return found;
}

/* The kind of an event answer. */
static const char *const event_kind_names[CS_EV_COUNT] = {
	[CS_EV_KERNEL] = "kernel", [CS_EV_MEMCPY] = "memcpy", [CS_EV_MEMSET] = "memset",
	[CS_EV_MEMORY] = "memory", [CS_EV_SYNC] = "sync",     [CS_EV_API] = "api",
	[CS_EV_NVTX] = "nvtx",
};

char *view_api_event(struct view_data *v, int64_t track, int64_t start, int64_t end)
{
	const struct view_track *t;
	cJSON *root, *fields, *o;
	struct event_where w;
	cs_event ev;

	if (track < 0 || (size_t)track >= v->ts.ntracks)
		return NULL;
	t = &v->ts.tracks[track];
	root = cJSON_CreateObject();
	if (!find_event(v, t, start, end, &ev)) {
		cJSON_AddStringToObject(root, "status", "none");
		return json_text(root);
	}
	event_where_of(&ev, &w);
	cJSON_AddStringToObject(root, "status", "ok");
	cJSON_AddStringToObject(root, "kind", event_kind_names[ev.kind]);
	add_int(root, "track", track);
	fields = cJSON_AddObjectToObject(root, "fields");
	event_fields(fields, cJSON_AddObjectToObject(root, "columns"), &ev);
	if (ev.kind == CS_EV_KERNEL || ev.kind == CS_EV_MEMCPY || ev.kind == CS_EV_MEMSET) {
		/* both ends of the launch: the GPU work and the host call */
		o = cJSON_AddObjectToObject(root, "gpu");
		cs_json_add_int(o, "track", track_index(v, VT_STREAM, w.pid, w.device, w.stream),
				 -1);
		add_int(o, "start", w.start);
		add_int(o, "end", item_end(w.start, w.end));
		if (w.launch_start != CS_TS_UNKNOWN) {
			o = cJSON_AddObjectToObject(root, "launch");
			cs_json_add_int(o, "track", track_index(v, VT_LAUNCH, w.pid, w.tid, 0),
					 -1);
			add_int(o, "start", w.launch_start);
			add_int(o, "end", item_end(w.launch_start, w.launch_end));
		}
	}
	o = cJSON_AddArrayToObject(root, "stack");
	if (w.stack_id != CS_ID_NONE) {
		const cs_frame *frames;
		cs_error err = {0};
		int n = 0;

		if (cs_trace_get_stack(v->trace, w.stack_id, &frames, &n, &err) >= 0) {
			for (int i = 0; i < n; i++) {
				cJSON *fr = cJSON_CreateObject();

				cJSON_AddStringToObject(fr, "kind",
							frames[i].kind == 2 ? "python" : "native");
				add_text(fr, "symbol", frames[i].symbol);
				add_text(fr, "file", frames[i].file);
				cs_json_add_int(fr, "line", frames[i].line, 0);
				add_text(fr, "module", frames[i].module);
				add_int(fr, "offset", (int64_t)frames[i].offset);
				cJSON_AddItemToArray(o, fr);
			}
		}
	}
	return json_text(root);
}

/* ---- search by name ---- */

/* Whether the name of key matches q: case-insensitive, recorded, demangled or plain (API). */
static int name_matches(struct view_data *v, int64_t key, const char *q)
{
	char buf[64], plain[256];
	const char *text = name_text(v, key, buf, sizeof(buf));
	const char *full = cs_demangle(text);

	return strcasestr(text, q) || (full != text && strcasestr(full, q)) ||
	       strcasestr(cs_api_name_plain(text, plain, sizeof(plain)), q);
}

/* What is known of the names of one search: 0 not looked at yet, 1 no match, 2 a match. */
struct search_names {
	uint8_t *ids;
	uint8_t pseudo[PSEUDO_COUNT];
};

static int item_matches(struct view_data *v, struct search_names *sn, const struct view_item *it,
			const char *q)
{
	uint8_t *slot = it->name >= 0 ? (it->name <= v->max_name ? &sn->ids[it->name] : NULL)
				      : &sn->pseudo[-1 - it->name];

	if (!slot || it->kind == VI_LAUNCH) /* a launch is found through its GPU work */
		return 0;
	if (!*slot)
		*slot = name_matches(v, it->name, q) ? 2 : 1;
	return *slot == 2;
}

/* (start, track) of a before (start, track) of b. */
static int key_before(int64_t sa, int64_t ta, int64_t sb, int64_t tb)
{
	return sa < sb || (sa == sb && ta < tb);
}

/*
 * The events whose name contains q, in the order (start, track): their number, and the first one
 * (launch calls, named as their GPU work, are left out: the GPU work is found)
 * after (t, track) (dir > 0) or the last one before it (dir < 0), wrapping around at the ends,
 * with its rank in that order (1-based).
 */
char *view_api_search(struct view_data *v, const char *q, int64_t t, int64_t track, int dir)
{
	struct search_names sn;
	int64_t total = 0, rank = 0;
	int64_t best_t = 0, best_tr = -1, first_t = 0, first_tr = -1, last_t = 0, last_tr = -1;
	size_t best_j = 0, first_j = 0, last_j = 0;
	cJSON *root, *m;
	char buf[64];

	if (!q || !*q || strlen(q) > 256)
		return NULL;
	memset(&sn, 0, sizeof(sn));
	sn.ids = calloc((size_t)(v->max_name + 1) + 1, 1);
	if (!sn.ids)
		return NULL;
	for (size_t i = 0; i < v->ts.ntracks; i++) {
		const struct view_track *tr = &v->ts.tracks[i];
		int64_t ti = (int64_t)i;

		for (size_t j = 0; j < tr->n; j++) {
			const struct view_item *it = &tr->items[j];

			if (!item_matches(v, &sn, it, q))
				continue;
			total++;
			if (first_tr < 0 || key_before(it->start, ti, first_t, first_tr))
				first_t = it->start, first_tr = ti, first_j = j;
			if (last_tr < 0 || key_before(last_t, last_tr, it->start, ti))
				last_t = it->start, last_tr = ti, last_j = j;
			if (dir > 0 && key_before(t, track, it->start, ti) &&
			    (best_tr < 0 || key_before(it->start, ti, best_t, best_tr)))
				best_t = it->start, best_tr = ti, best_j = j;
			if (dir < 0 && key_before(it->start, ti, t, track) &&
			    (best_tr < 0 || key_before(best_t, best_tr, it->start, ti)))
				best_t = it->start, best_tr = ti, best_j = j;
		}
	}
	if (best_tr < 0 && total) {
		/* past the last (or before the first): wrap around */
		best_tr = dir > 0 ? first_tr : last_tr;
		best_j = dir > 0 ? first_j : last_j;
		best_t = dir > 0 ? first_t : last_t;
	}
	/* its rank: the matches before it */
	for (size_t i = 0; best_tr >= 0 && i < v->ts.ntracks; i++) {
		const struct view_track *tr = &v->ts.tracks[i];

		for (size_t j = 0; j < tr->n && tr->items[j].start <= best_t; j++)
			if (key_before(tr->items[j].start, (int64_t)i, best_t, best_tr) &&
			    item_matches(v, &sn, &tr->items[j], q))
				rank++;
	}
	free(sn.ids);
	root = cJSON_CreateObject();
	cs_json_add_string(root, "q", q);
	add_int(root, "total", total);
	if (best_tr < 0) {
		cJSON_AddNullToObject(root, "match");
		return json_text(root);
	}
	{
		const struct view_item *it = &v->ts.tracks[best_tr].items[best_j];
		const char *text = name_text(v, it->name, buf, sizeof(buf));
		char plain[256];

		add_int(root, "index", rank + 1);
		m = cJSON_AddObjectToObject(root, "match");
		add_int(m, "track", best_tr);
		add_int(m, "start", it->start);
		add_int(m, "end", it->end);
		cs_json_add_string(m, "name",
				    item_name_style(it) == NS_KERNEL ? cs_demangle_short(text)
				    : item_name_style(it) == NS_API
					    ? cs_api_name_plain(text, plain, sizeof(plain))
					    : text);
	}
	return json_text(root);
}

/* ---- launch-to-GPU arrows ---- */

/*
 * The flows of a window: for the GPU work that overlaps [t0, t1 + (t1 - t0)) and whose launch
 * starts before t1, [launch track, launch start, launch end, GPU track, GPU start, GPU end];
 * at most FLOWS_MAX, appended to out as the "flows" member.
 */
#define FLOWS_MAX 2000
static void add_flows(struct view_data *v, int64_t t0, int64_t t1, cs_strbuf *out)
{
	static const enum cs_event_kind gpu[] = {CS_EV_KERNEL, CS_EV_MEMCPY, CS_EV_MEMSET};
	int n = 0;

	cs_strbuf_puts(out, ",\"flows\":[");
	for (int k = 0; k < 3 && n < FLOWS_MAX; k++) {
		cs_filter f = cs_filter_all();
		cs_error err = {0};
		cs_iter *it;
		cs_event ev;
		long rows = 0;

		f.t0 = t0;
		f.t1 = cs_sat_add(t1, cs_sat_sub(t1, t0));
		if (cs_iter_open(v->trace, gpu[k], &f, &it, &err) < 0)
			continue;
		while (n < FLOWS_MAX && rows++ < 4 * FLOWS_MAX && cs_iter_next(it, &ev) == 1) {
			struct event_where w;
			int64_t lt, gt;

			event_where_of(&ev, &w);
			if (w.launch_start == CS_TS_UNKNOWN || w.launch_start >= t1)
				continue;
			lt = track_index(v, VT_LAUNCH, w.pid, w.tid, 0);
			gt = track_index(v, VT_STREAM, w.pid, w.device, w.stream);
			if (lt < 0 || gt < 0)
				continue;
			cs_strbuf_printf(out, "%s[%lld,%lld,%lld,%lld,%lld,%lld]", n ? "," : "",
					 (long long)lt, (long long)w.launch_start,
					 (long long)item_end(w.launch_start, w.launch_end),
					 (long long)gt, (long long)w.start,
					 (long long)item_end(w.start, w.end));
			n++;
		}
		cs_iter_close(it);
	}
	cs_strbuf_puts(out, "]");
}
