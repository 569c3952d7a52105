/*
 * api.c - the data behind `cuscope view` and its JSON API (docs/commands/view.md).
 *
 * The trace is read once through the reader (cs_analysis_load) and laid out on tracks, named as
 * the exporter names them (src/export/export.c):
 *   stream  kernels, memcpys and memsets of one CUDA stream (pid, device, stream)
 *   thread  host waits (cudaStreamSynchronize, ...) of one host thread (pid, tid)
 *   api     CUDA API calls of one host thread, when the trace has them
 *   nvtx    NVTX ranges of one host thread, a track per nesting depth
 *   memory  device memory in use on one GPU (pid, device): the running sum of live allocations
 * Each track keeps its events sorted by start with the running maximum of their ends, so that the
 * first event overlapping a window is a binary search away. A window answer walks the events of
 * the window once per track and merges those shorter than one pixel column, with gaps shorter than
 * one column between them, into busy blocks; each item carries the time it adds to the union of
 * its track's events, so the busy time of a track is exact whatever the zoom.
 *
 * Strings from the trace (kernel names, NVTX text, finding titles) are user data: invalid UTF-8 is
 * repaired and cJSON escapes them.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "cuscope/analyze.h"
#include "cuscope/strbuf.h"
#include "view/api.h"

enum view_track_kind {
	VT_STREAM = 0,
	VT_THREAD,
	VT_API,
	VT_NVTX,
	VT_MEMORY,
};

static const char *const track_kind_names[] = {
	[VT_STREAM] = "stream", [VT_THREAD] = "thread", [VT_API] = "api",
	[VT_NVTX] = "nvtx",	[VT_MEMORY] = "memory",
};

/* Event kinds of an item, as the viewer colours them. */
enum view_item_kind {
	VI_KERNEL = 0,
	VI_MEMCPY,
	VI_MEMSET,
	VI_SYNC,
	VI_API,
	VI_NVTX,
};

/* Names that are not StringIds: name keys -1 - code. */
#define PSEUDO_MEMSET  0
#define PSEUDO_MEMCPY  1   /* + copy kind (0..10) */
#define PSEUDO_SYNC    20  /* + sync type (0..102) */
#define PSEUDO_UNNAMED 150 /* no name */
#define PSEUDO_COUNT   151

struct view_item {
	int64_t start, end;
	int64_t name; /* StringIds id, or -1 - pseudo code */
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
};

struct view_data {
	char *path;
	cs_trace *trace;
	cs_analysis a;
	cs_steps steps;
	cs_report report;
	cs_trace_summary sum;
	struct view_track *tracks;
	size_t ntracks, tracks_cap;
	/* key -> track index + 1, open addressing */
	uint64_t *hkeys;
	uint32_t *hvals;
	size_t hcap;
	int64_t max_name; /* largest StringIds id seen */
	int counting;	  /* first pass of build_tracks: count the items of each track */
	char *summary;	  /* the summary answer, made once */
};

/* ---- tracks ---- */

static uint64_t track_key(enum view_track_kind kind, uint32_t pid, int64_t a, int64_t b)
{
	uint64_t h = 1469598103934665603ull;
	uint64_t parts[4] = {(uint64_t)kind, pid, (uint64_t)a, (uint64_t)b};

	for (int i = 0; i < 4; i++) {
		h ^= parts[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
		h *= 1099511628211ull;
	}
	return h ? h : 1;
}

static int hash_grow(struct view_data *v)
{
	size_t ncap = v->hcap ? v->hcap * 2 : 256;
	uint64_t *keys = calloc(ncap, sizeof(*keys));
	uint32_t *vals = calloc(ncap, sizeof(*vals));

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return CS_ERR_NOMEM;
	}
	for (size_t i = 0; i < v->hcap; i++) {
		size_t j;

		if (!v->hkeys[i])
			continue;
		for (j = v->hkeys[i] & (ncap - 1); keys[j]; j = (j + 1) & (ncap - 1))
			;
		keys[j] = v->hkeys[i];
		vals[j] = v->hvals[i];
	}
	free(v->hkeys);
	free(v->hvals);
	v->hkeys = keys;
	v->hvals = vals;
	v->hcap = ncap;
	return 0;
}

/*
 * The track of (kind, pid, a, b), created on first use: a and b are (device, stream) for streams
 * and memory, (tid, depth) for host tracks. NULL without memory.
 */
static struct view_track *track_get(struct view_data *v, enum view_track_kind kind, uint32_t pid,
				    int64_t a, int64_t b)
{
	uint64_t key = track_key(kind, pid, a, b);
	struct view_track *t;
	size_t j;

	if (v->ntracks * 2 >= v->hcap && hash_grow(v))
		return NULL;
	for (j = key & (v->hcap - 1); v->hkeys[j]; j = (j + 1) & (v->hcap - 1)) {
		t = &v->tracks[v->hvals[j] - 1];
		if (v->hkeys[j] == key && t->kind == kind && t->pid == pid)
			return t;
	}
	if (v->ntracks == v->tracks_cap) {
		size_t ncap = v->tracks_cap ? v->tracks_cap * 2 : 32;
		struct view_track *nt = realloc(v->tracks, ncap * sizeof(*nt));

		if (!nt)
			return NULL;
		v->tracks = nt;
		v->tracks_cap = ncap;
	}
	t = &v->tracks[v->ntracks++];
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->pid = pid;
	t->device = -1;
	t->stream = -1;
	switch (kind) {
	case VT_STREAM:
		t->device = (int32_t)a;
		t->stream = b;
		snprintf(t->name, sizeof(t->name), "GPU %d stream %lld", t->device,
			 (long long)t->stream);
		break;
	case VT_MEMORY:
		t->device = (int32_t)a;
		snprintf(t->name, sizeof(t->name), "GPU %d device memory", t->device);
		break;
	case VT_THREAD:
		t->tid = (uint32_t)a;
		snprintf(t->name, sizeof(t->name), "thread %u waits", t->tid);
		break;
	case VT_API:
		t->tid = (uint32_t)a;
		snprintf(t->name, sizeof(t->name), "thread %u CUDA API", t->tid);
		break;
	case VT_NVTX:
		t->tid = (uint32_t)a;
		t->depth = (int32_t)b;
		snprintf(t->name, sizeof(t->name), "thread %u NVTX %d", t->tid, t->depth);
		break;
	}
	v->hkeys[j] = key;
	v->hvals[j] = (uint32_t)v->ntracks;
	return t;
}

static int track_add(struct view_data *v, struct view_track *t, int64_t start, int64_t end,
		     int64_t name, int kind)
{
	struct view_item *it;

	if (start == CS_TS_UNKNOWN)
		return 0;
	if (v->counting) {
		t->n++;
		return 0;
	}
	if (end == CS_TS_UNKNOWN || end < start)
		end = start;
	if (t->n == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 64;
		struct view_item *ni = realloc(t->items, ncap * sizeof(*ni));

		if (!ni)
			return CS_ERR_NOMEM;
		t->items = ni;
		t->cap = ncap;
	}
	it = &t->items[t->n++];
	it->start = start;
	it->end = end;
	it->name = name;
	it->kind = kind;
	return 0;
}

static int sample_add(struct view_track *t, int64_t ts, int64_t value)
{
	if (t->nsamples && t->samples[t->nsamples - 1].t == ts) {
		t->samples[t->nsamples - 1].value = value;
		return 0;
	}
	if (t->nsamples == t->samples_cap) {
		size_t ncap = t->samples_cap ? t->samples_cap * 2 : 64;
		struct view_sample *ns = realloc(t->samples, ncap * sizeof(*ns));

		if (!ns)
			return CS_ERR_NOMEM;
		t->samples = ns;
		t->samples_cap = ncap;
	}
	t->samples[t->nsamples].t = ts;
	t->samples[t->nsamples].value = value;
	t->nsamples++;
	return 0;
}

static int item_cmp(const void *pa, const void *pb)
{
	const struct view_item *x = pa, *y = pb;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->end > y->end) - (x->end < y->end);
}

/*
 * Sort a track's items by start. They arrive as sorted runs (the kernels of a stream, then its
 * copies, each in start order): two runs are merged in one pass, anything else is sorted.
 */
static int track_sort(struct view_track *t)
{
	struct view_item *tmp;
	size_t k = 1, a, b, o;

	while (k < t->n && item_cmp(&t->items[k - 1], &t->items[k]) <= 0)
		k++;
	if (k >= t->n)
		return 0;
	for (size_t j = k + 1; j < t->n; j++) {
		if (item_cmp(&t->items[j - 1], &t->items[j]) > 0) {
			qsort(t->items, t->n, sizeof(*t->items), item_cmp);
			return 0;
		}
	}
	tmp = malloc(t->n * sizeof(*tmp));
	if (!tmp)
		return CS_ERR_NOMEM;
	for (a = 0, b = k, o = 0; a < k || b < t->n;)
		tmp[o++] = b >= t->n || (a < k && item_cmp(&t->items[a], &t->items[b]) <= 0)
				   ? t->items[a++]
				   : t->items[b++];
	free(t->items);
	t->items = tmp;
	t->cap = t->n;
	return 0;
}

/* Sort the items of every track by start and fill max_end. */
static int tracks_index(struct view_data *v)
{
	for (size_t i = 0; i < v->ntracks; i++) {
		struct view_track *t = &v->tracks[i];
		int64_t m = INT64_MIN;

		if (track_sort(t))
			return CS_ERR_NOMEM;
		t->max_end = malloc((t->n ? t->n : 1) * sizeof(*t->max_end));
		if (!t->max_end)
			return CS_ERR_NOMEM;
		for (size_t j = 0; j < t->n; j++) {
			if (t->items[j].end > m)
				m = t->items[j].end;
			t->max_end[j] = m;
		}
	}
	return 0;
}

static int track_order(const void *pa, const void *pb)
{
	const struct view_track *x = pa, *y = pb;

	/* GPUs first (streams, then their memory), then host threads; by pid, device, stream */
	static const int rank[] = {
		[VT_STREAM] = 0, [VT_MEMORY] = 0, [VT_NVTX] = 1, [VT_API] = 1, [VT_THREAD] = 1};

	if (rank[x->kind] != rank[y->kind])
		return rank[x->kind] - rank[y->kind];
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (rank[x->kind] == 0) {
		if (x->device != y->device)
			return x->device < y->device ? -1 : 1;
		if (x->kind != y->kind)
			return x->kind == VT_MEMORY ? 1 : -1;
		return (x->stream > y->stream) - (x->stream < y->stream);
	}
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->kind != y->kind) /* NVTX above the API calls above the waits */
		return x->kind == VT_NVTX   ? -1
		       : y->kind == VT_NVTX ? 1
		       : x->kind == VT_API  ? -1
					    : 1;
	return x->depth - y->depth;
}

static void note_name(struct view_data *v, int64_t id)
{
	if (id > v->max_name)
		v->max_name = id;
}

/* Put the loaded events on their tracks (or count them, with v->counting). */
static int fill_tracks(struct view_data *v)
{
	const cs_analysis *a = &v->a;
	struct view_track *t;
	int rc = 0;

	for (int64_t i = 0; i < a->nkernels && !rc; i++) {
		const cs_a_kernel *k = &a->kernels[i];

		t = track_get(v, VT_STREAM, k->pid, k->device_id, k->stream_id);
		note_name(v, k->name_id);
		rc = t ? track_add(v, t, k->start, k->end,
				   k->name_id >= 0 ? k->name_id : -1 - PSEUDO_UNNAMED, VI_KERNEL)
		       : CS_ERR_NOMEM;
	}
	for (int64_t i = 0; i < a->ncopies && !rc; i++) {
		const cs_a_copy *c = &a->copies[i];
		int code = c->is_memset ? PSEUDO_MEMSET
					: PSEUDO_MEMCPY + (c->copy_kind >= 0 && c->copy_kind <= 10
								   ? c->copy_kind
								   : 0);

		t = track_get(v, VT_STREAM, c->pid, c->device_id, c->stream_id);
		rc = t ? track_add(v, t, c->start, c->end, -1 - code,
				   c->is_memset ? VI_MEMSET : VI_MEMCPY)
		       : CS_ERR_NOMEM;
	}
	for (int64_t i = 0; i < a->nsyncs && !rc; i++) {
		const cs_a_sync *s = &a->syncs[i];
		int type = s->type >= 0 && s->type <= 102 ? s->type : 0;

		if (!s->host_wait)
			continue;
		t = track_get(v, VT_THREAD, s->pid, s->tid, 0);
		rc = t ? track_add(v, t, s->start, s->end, -1 - (PSEUDO_SYNC + type), VI_SYNC)
		       : CS_ERR_NOMEM;
	}
	for (int64_t i = 0; i < a->napis && !rc; i++) {
		const cs_a_api *p = &a->apis[i];

		t = track_get(v, VT_API, p->pid, p->tid, 0);
		note_name(v, p->name_id);
		rc = t ? track_add(v, t, p->start, p->end,
				   p->name_id >= 0 ? p->name_id : -1 - PSEUDO_UNNAMED, VI_API)
		       : CS_ERR_NOMEM;
	}
	for (int64_t i = 0; i < a->nnvtx && !rc; i++) {
		const cs_a_nvtx *n = &a->nvtx[i];
		int depth = n->depth < 0 ? 0 : n->depth > 15 ? 15 : n->depth;

		t = track_get(v, VT_NVTX, n->pid, n->tid, depth);
		note_name(v, n->text_id);
		rc = t ? track_add(v, t, n->start, n->end,
				   n->text_id >= 0 ? n->text_id : -1 - PSEUDO_UNNAMED, VI_NVTX)
		       : CS_ERR_NOMEM;
	}
	return rc;
}

/* Lay the loaded events out on tracks: count, allocate each track once, fill. */
static int build_tracks(struct view_data *v)
{
	int rc;

	v->counting = 1;
	rc = fill_tracks(v);
	v->counting = 0;
	for (size_t i = 0; i < v->ntracks && !rc; i++) {
		struct view_track *t = &v->tracks[i];

		t->cap = t->n;
		t->n = 0;
		if (t->cap && !(t->items = malloc(t->cap * sizeof(*t->items))))
			rc = CS_ERR_NOMEM;
	}
	if (!rc)
		rc = fill_tracks(v);
	if (rc)
		return rc;
	rc = tracks_index(v);
	if (rc)
		return rc;
	qsort(v->tracks, v->ntracks, sizeof(*v->tracks), track_order);
	/* the hash points at positions before the sort: it is not used after loading */
	free(v->hkeys);
	free(v->hvals);
	v->hkeys = NULL;
	v->hvals = NULL;
	v->hcap = 0;
	return 0;
}

/* ---- device memory ---- */

struct live_alloc {
	uint32_t pid;
	int32_t vmm;
	uint64_t address;
	int64_t bytes;
	struct view_track *track;
};

/*
 * The memory counters: the running sum of the device allocations made inside the trace, per GPU
 * of each process, as the exporter computes it (a free of memory allocated before the trace is
 * ignored, so a counter never goes below zero). Allocations alive at a time are few: a list.
 */
static int build_memory(struct view_data *v)
{
	const cs_analysis *a = &v->a;
	struct live_alloc *live = NULL;
	size_t nlive = 0, cap = 0;
	int rc = 0;

	for (int64_t i = 0; i < a->nmemory && !rc; i++) {
		const cs_a_memory *m = &a->memory[i];
		int dev_kind = m->mem_kind == CS_MEM_DEVICE || m->mem_kind == CS_MEM_MANAGED;
		int vmm = m->op == CS_MEMOP_VMM_CREATE || m->op == CS_MEMOP_VMM_RELEASE;
		struct view_track *t;
		int64_t delta;
		size_t j;

		if (m->start == CS_TS_UNKNOWN || m->result != 0 || m->device_id < 0)
			continue;
		if (m->op == CS_MEMOP_ALLOC || m->op == CS_MEMOP_VMM_CREATE) {
			if ((m->op == CS_MEMOP_ALLOC && !dev_kind) || m->bytes <= 0)
				continue;
			t = track_get(v, VT_MEMORY, m->pid, m->device_id, 0);
			if (!t) {
				rc = CS_ERR_NOMEM;
				break;
			}
			if (nlive == cap) {
				size_t ncap = cap ? cap * 2 : 256;
				struct live_alloc *nl = realloc(live, ncap * sizeof(*nl));

				if (!nl) {
					rc = CS_ERR_NOMEM;
					break;
				}
				live = nl;
				cap = ncap;
			}
			live[nlive].pid = m->pid;
			live[nlive].vmm = vmm;
			live[nlive].address = m->address;
			live[nlive].bytes = m->bytes;
			live[nlive].track = t;
			nlive++;
			delta = m->bytes;
		} else if (m->op == CS_MEMOP_FREE || m->op == CS_MEMOP_VMM_RELEASE) {
			for (j = nlive; j > 0; j--)
				if (live[j - 1].pid == m->pid && live[j - 1].vmm == vmm &&
				    live[j - 1].address == m->address)
					break;
			if (!j)
				continue;
			t = live[j - 1].track;
			delta = -live[j - 1].bytes;
			live[j - 1] = live[--nlive];
		} else {
			continue;
		}
		/* the track's current level is its last sample */
		rc = sample_add(t, m->start,
				(t->nsamples ? t->samples[t->nsamples - 1].value : 0) + delta);
	}
	free(live);
	return rc;
}

/* ---- loading ---- */

/* Find the steps and run every rule (the findings list), as `cuscope report` does by default. */
struct rules_job {
	struct view_data *v;
	cs_error err;
	int rc;
};

static void *rules_job_run(void *arg)
{
	struct rules_job *job = arg;
	struct view_data *v = job->v;
	cs_step_opts so = {NULL, -1, 0};

	job->rc = cs_steps_detect(&v->a, &so, &v->steps, &job->err);
	if (job->rc >= 0)
		job->rc = cs_report_run(&v->a, &v->steps, NULL, &v->report, &job->err);
	return NULL;
}

int view_data_load(const char *path, struct view_data **out, cs_error *err)
{
	struct view_data *v = calloc(1, sizeof(*v));
	struct rules_job job = {0};
	pthread_t thread;
	int rc, joined = 0;

	*out = NULL;
	if (!v || !(v->path = strdup(path))) {
		free(v);
		return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
	}
	v->max_name = -1;
	rc = cs_trace_open(path, &v->trace, err);
	if (rc < 0)
		goto fail;
	rc = cs_trace_get_summary(v->trace, &v->sum, err);
	if (rc < 0)
		goto fail;
	rc = cs_analysis_load(v->trace, &v->a, err);
	if (rc < 0)
		goto fail;
	/* the steps and rules on a second thread while this one lays out the tracks: both only
	 * read the arrays */
	job.v = v;
	if (pthread_create(&thread, NULL, rules_job_run, &job)) {
		rules_job_run(&job);
		joined = 1;
	}
	rc = build_memory(v);
	if (!rc)
		rc = build_tracks(v);
	if (!joined)
		pthread_join(thread, NULL);
	if (rc < 0) {
		cs_error_set(err, rc, "out of memory");
		goto fail;
	}
	if (job.rc < 0) {
		*err = job.err;
		rc = job.rc;
		goto fail;
	}
	*out = v;
	return 0;
fail:
	view_data_free(v);
	return rc;
}

void view_data_free(struct view_data *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->ntracks; i++) {
		free(v->tracks[i].items);
		free(v->tracks[i].max_end);
		free(v->tracks[i].samples);
	}
	free(v->tracks);
	free(v->hkeys);
	free(v->hvals);
	cs_report_free(&v->report);
	if (v->steps.v)
		cs_steps_free(&v->steps);
	if (v->trace) {
		cs_analysis_free(&v->a);
		cs_trace_close(v->trace);
	}
	free(v->summary);
	free(v->path);
	free(v);
}

/* ---- answers ---- */

static char *json_text(cJSON *root)
{
	char *s = root ? cJSON_PrintUnformatted(root) : NULL;

	cJSON_Delete(root);
	return s;
}

static void add_int(cJSON *obj, const char *key, int64_t value)
{
	cJSON_AddItemToObject(obj, key, cli_json_int(value));
}

char *view_api_summary(struct view_data *v)
{
	cJSON *root, *meta, *arr, *o;
	const char *base;

	if (v->summary)
		return strdup(v->summary);
	root = cJSON_CreateObject();
	meta = cJSON_AddObjectToObject(root, "meta");
	cli_json_add_string(meta, "path", v->path);
	add_int(meta, "schema_version", cs_trace_schema_version(v->trace));
	base = cs_trace_meta(v->trace, "time_base_ns");
	cli_json_add_string(meta, "time_base_ns", base);
	cli_json_add_string(meta, "cuscope_version", cs_trace_meta(v->trace, "cuscope_version"));
	add_int(meta, "kernels", v->sum.counts[CS_EV_KERNEL]);
	add_int(meta, "memcpys", v->sum.counts[CS_EV_MEMCPY]);
	add_int(meta, "memsets", v->sum.counts[CS_EV_MEMSET]);
	add_int(meta, "syncs", v->sum.counts[CS_EV_SYNC]);
	add_int(meta, "api_calls", v->sum.counts[CS_EV_API]);
	add_int(meta, "nvtx", v->sum.counts[CS_EV_NVTX]);
	add_int(meta, "memory", v->sum.counts[CS_EV_MEMORY]);
	cli_json_add_string(meta, "step_method", cs_step_method_name(v->steps.method));
	cli_json_add_string(meta, "step_detail", v->steps.detail);
	add_int(root, "start", v->sum.start == CS_TS_UNKNOWN ? 0 : v->sum.start);
	add_int(root, "end", v->sum.end == CS_TS_UNKNOWN ? 0 : v->sum.end);

	arr = cJSON_AddArrayToObject(root, "tracks");
	for (size_t i = 0; i < v->ntracks; i++) {
		const struct view_track *t = &v->tracks[i];

		o = cJSON_CreateObject();
		add_int(o, "id", (int64_t)i);
		cJSON_AddStringToObject(o, "kind", track_kind_names[t->kind]);
		cJSON_AddStringToObject(o, "name", t->name);
		add_int(o, "pid", t->pid);
		cli_json_add_int(o, "device", t->device, -1);
		cli_json_add_int(o, "stream", t->kind == VT_STREAM ? t->stream : -1, -1);
		cli_json_add_int(o, "tid", t->tid, 0);
		if (t->kind == VT_NVTX)
			add_int(o, "depth", t->depth);
		add_int(o, "events", (int64_t)(t->kind == VT_MEMORY ? t->nsamples : t->n));
		cJSON_AddItemToArray(arr, o);
	}
	arr = cJSON_AddArrayToObject(root, "steps");
	for (int32_t i = 0; i < v->steps.n; i++) {
		const cs_step *s = &v->steps.v[i];

		o = cJSON_CreateObject();
		add_int(o, "index", s->index);
		add_int(o, "start", s->start);
		add_int(o, "end", s->end);
		cJSON_AddBoolToObject(o, "warmup", s->warmup != 0);
		cJSON_AddItemToArray(arr, o);
	}
	arr = cJSON_AddArrayToObject(root, "findings");
	for (int32_t i = 0; i < v->report.n; i++) {
		const cs_report_finding *f = v->report.v[i];
		cJSON *steps;

		o = cJSON_CreateObject();
		add_int(o, "id", i);
		cli_json_add_string(o, "rule", f->rule);
		cli_json_add_string(o, "severity", cs_severity_name(f->severity));
		cli_json_add_string(o, "title", f->title);
		cli_json_add_string(o, "fix", f->fix);
		cli_json_add_int(o, "first", f->first, CS_TS_UNKNOWN);
		cli_json_add_int(o, "last", f->last, CS_TS_UNKNOWN);
		add_int(o, "lost_ns_per_step", f->lost_ns_per_step);
		steps = cJSON_AddArrayToObject(o, "steps");
		for (int32_t j = 0; j < f->nsteps; j++)
			cJSON_AddItemToArray(steps, cli_json_int(f->steps[j]));
		cJSON_AddItemToArray(arr, o);
	}
	v->summary = json_text(root);
	return v->summary ? strdup(v->summary) : NULL;
}

/* The text of a name key (static or owned by the analysis/trace). */
static const char *name_text(struct view_data *v, int64_t key, char *buf, size_t size)
{
	int code;

	if (key >= 0) {
		const char *s = cs_analysis_string(&v->a, key);

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
};

static int32_t name_index(struct view_data *v, struct name_table *nt, int64_t key)
{
	int32_t *slot = key >= 0 ? &nt->ids[key] : &nt->pseudo[-1 - key];
	char buf[64], *fixed, *esc;
	cJSON *s;

	if (*slot)
		return *slot - 1;
	fixed = cli_utf8_repair(name_text(v, key, buf, sizeof(buf)));
	s = fixed ? cJSON_CreateString(fixed) : NULL;
	esc = s ? cJSON_PrintUnformatted(s) : NULL;
	if (nt->n)
		cs_strbuf_puts(&nt->json, ",");
	cs_strbuf_puts(&nt->json, esc ? esc : "\"?\"");
	free(esc);
	cJSON_Delete(s);
	free(fixed);
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
			 b->count == 1 ? name_index(v, nt, it->name) : -1, (long long)b->count,
			 (long long)b->busy, b->count == 1 ? it->kind : -1);
	*first = 0;
}

char *view_api_window(struct view_data *v, int64_t t0, int64_t t1, int px)
{
	struct name_table nt = {0};
	cs_strbuf out = CS_STRBUF_INIT;
	int64_t col;
	char *r = NULL;

	if (t1 <= t0 || px <= 0)
		return NULL;
	col = (t1 - t0 + px - 1) / px;
	if (col < 1)
		col = 1;
	nt.ids = calloc((size_t)(v->max_name + 1) + 1, sizeof(*nt.ids));
	nt.pseudo = calloc(PSEUDO_COUNT, sizeof(*nt.pseudo));
	if (!nt.ids || !nt.pseudo)
		goto out;
	cs_strbuf_printf(&out, "{\"t0\":%lld,\"t1\":%lld,\"px\":%d,\"column_ns\":%lld,\"tracks\":[",
			 (long long)t0, (long long)t1, px, (long long)col);
	for (size_t i = 0, emitted = 0; i < v->ntracks; i++) {
		const struct view_track *t = &v->tracks[i];
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
				add = e - (s > cov ? s : cov);
				cov = e;
			}
			busy += add;
			total++;
			if (it->end - it->start >= col) {
				/* wide enough to see: on its own */
				struct block one = {s, e, add, 1, j};

				if (b.count)
					emit_item(v, &nt, t, &b, &out, &first);
				b.count = 0;
				emit_item(v, &nt, t, &one, &out, &first);
			} else if (b.count && s - b.end < col) {
				/* joins the busy block: less than a column away */
				if (e > b.end)
					b.end = e;
				b.busy += add;
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
	}
	cs_strbuf_puts(&out, "],\"names\":[");
	cs_strbuf_add(&out, cs_strbuf_str(&nt.json), nt.json.len);
	cs_strbuf_puts(&out, "]}");
	if (!out.failed && !nt.json.failed)
		r = strdup(cs_strbuf_str(&out));
out:
	free(nt.ids);
	free(nt.pseudo);
	cs_strbuf_free(&nt.json);
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
	col = (t1 - t0 + px - 1) / px;
	if (col < 1)
		col = 1;
	cs_strbuf_printf(&out, "{\"t0\":%lld,\"t1\":%lld,\"px\":%d,\"tracks\":[", (long long)t0,
			 (long long)t1, px);
	for (size_t i = 0, emitted = 0; i < v->ntracks; i++) {
		const struct view_track *t = &v->tracks[i];
		int64_t level = 0, cmax = 0, ccol = INT64_MIN, peak = 0;
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
		for (size_t j = 0; j < t->nsamples; j++)
			if (t->samples[j].value > peak)
				peak = t->samples[j].value;
		cs_strbuf_printf(&out, "%s{\"id\":%zu,\"peak\":%lld,\"samples\":[[%lld,%lld]",
				 emitted++ ? "," : "", i, (long long)peak, (long long)t0,
				 (long long)level);
		/* each column keeps its highest level, at the column's start */
		for (size_t j = lo; j < t->nsamples && t->samples[j].t < t1; j++) {
			int64_t c = (t->samples[j].t - t0) / col;

			if (c != ccol) {
				if (ccol != INT64_MIN)
					cs_strbuf_printf(&out, ",[%lld,%lld]",
							 (long long)(t0 + ccol * col),
							 (long long)cmax);
				ccol = c;
				cmax = t->samples[j].value;
			} else if (t->samples[j].value > cmax) {
				cmax = t->samples[j].value;
			}
			level = t->samples[j].value;
		}
		if (ccol != INT64_MIN)
			cs_strbuf_printf(&out, ",[%lld,%lld]", (long long)(t0 + ccol * col),
					 (long long)cmax);
		cs_strbuf_printf(&out, ",[%lld,%lld]]}", (long long)t1, (long long)level);
	}
	cs_strbuf_puts(&out, "]}");
	if (!out.failed)
		r = strdup(cs_strbuf_str(&out));
	cs_strbuf_free(&out);
	return r;
}
