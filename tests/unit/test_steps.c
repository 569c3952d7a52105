/*
 * test_steps.c - the analysis side's loaded trace and its training steps: the reader's bulk scan,
 * loading (arrays sorted, memcpys and memsets merged, a kernel table read by two threads, lookups,
 * GPU busy time), step detection from NVTX ranges, from cudaProfilerStart/Stop pairs and from the
 * period of the GPU work (on the committed train_small trace with and without its NVTX ranges, on
 * the rule samples' traces, on a trace without structure, on synthetic loops with warm-up, gradient
 * accumulation, occasional extra kernels and steps of varying length, and on C loops of copies and
 * one repeated kernel), step times from the host or the GPU, the warm-up defaults, cs_steps_find
 * and the step duration statistics.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "cuscope/analyze.h"
#include "testutil.h"

#define PID 100
#define US  1000

static char *tmp_dir;

/* ---- helpers ---- */

static char *sample_path(const char *name)
{
	char buf[4096];

	snprintf(buf, sizeof(buf), "%s/samples/traces/%s", tu_source_root(), name);
	return strdup(buf);
}

static cs_trace *open_trace(const char *path)
{
	cs_trace *t = NULL;
	cs_error err = {0, ""};

	ck_assert_msg(cs_trace_open(path, &t, &err) == 0, "open %s: %s", path, err.msg);
	return t;
}

/* A trace loaded and its steps detected with opts (NULL: defaults). */
struct loaded {
	cs_trace *t;
	cs_analysis a;
	cs_steps s;
};

static void load(struct loaded *l, const char *path, const cs_step_opts *o)
{
	cs_error err = {0, ""};

	l->t = open_trace(path);
	ck_assert_msg(cs_analysis_load(l->t, &l->a, &err) == 0, "load: %s", err.msg);
	ck_assert_msg(cs_steps_detect(&l->a, o, &l->s, &err) == 0, "steps: %s", err.msg);
}

static void unload(struct loaded *l)
{
	cs_steps_free(&l->s);
	cs_analysis_free(&l->a);
	cs_trace_close(l->t);
}

static void exec_sql(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	char *msg = NULL;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK, "%s: %s", sql,
		      msg ? msg : "");
	sqlite3_close(db);
}

static char *copy_file(const char *from, const char *name)
{
	char *to = tu_path(tmp_dir, name);
	size_t len;
	char *data = tu_read_file(from, &len);

	ck_assert(data != NULL);
	ck_assert_int_eq(tu_write_file(to, data, len), 0);
	free(data);
	return to;
}

static cs_trace_writer *open_writer(const char *path)
{
	cs_trace_writer *w = NULL;
	cs_error err = {0, ""};

	ck_assert_msg(cs_writer_open(path, 1, &w, &err) == 0, "writer: %s", err.msg);
	return w;
}

static void finish_writer(cs_trace_writer *w)
{
	cs_error err = {0, ""};

	ck_assert_msg(cs_writer_finish(w, &err) == 0, "finish: %s", err.msg);
}

/* tu_kernel()'s kernel in a grid of 4 x 2 blocks of 128 threads. */
static cs_kernel kernel(uint32_t pid, int64_t name_id, int64_t launch, int64_t start, int64_t end)
{
	cs_kernel k = tu_kernel(pid, name_id, launch, start, end);

	k.grid_x = 4;
	k.grid_y = 2;
	k.block_x = 128;
	return k;
}

/* Names 900 and up: realistic kernel names (an optimizer, an indexing kernel). */
static const char *const special_names[] = {
	"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor>",
	"void at::native::vectorized_elementwise_kernel<4, masked_fill_kernel>",
	"void at::native::reduce_kernel<norm_functor>",
	"void at::native::vectorized_elementwise_kernel<4, where_kernel>",
};

/*
 * Write a trace whose only process launches kernels named "k<names[i]>" (or special_names for 900
 * and up) in this order, one every
 * 10 us, each running 5 us on the GPU. Returns the path (malloc'd).
 */
static char *write_sequence(const char *file, const int *names, int n)
{
	char *path = tu_path(tmp_dir, file);
	cs_trace_writer *w = open_writer(path);
	int64_t ids[1000];

	for (int i = 0; i < 1000; i++)
		ids[i] = -1;
	for (int i = 0; i < n; i++) {
		int64_t launch = 1000 * US + (int64_t)i * 10 * US;
		cs_kernel k;

		ck_assert(names[i] >= 0 && names[i] < 1000);
		if (ids[names[i]] < 0) {
			char name[128];

			if (names[i] >= 900)
				snprintf(name, sizeof(name), "%s_%d",
					 special_names[(names[i] - 900) % 4], names[i]);
			else
				snprintf(name, sizeof(name), "k%d", names[i]);
			ids[names[i]] = cs_writer_intern(w, name);
			ck_assert(ids[names[i]] >= 0);
		}
		k = kernel(PID, ids[names[i]], launch, launch + 3 * US, launch + 8 * US);
		ck_assert_int_eq(cs_writer_add_kernel(w, &k), 0);
	}
	finish_writer(w);
	return path;
}

/* A growable list of kernel names. */
struct names {
	int v[20000];
	int n;
};

static void push(struct names *s, int name)
{
	ck_assert(s->n < (int)(sizeof(s->v) / sizeof(s->v[0])));
	s->v[s->n++] = name;
}

static void push_all(struct names *s, const int *names, int n)
{
	for (int i = 0; i < n; i++)
		push(s, names[i]);
}

/* A steady step of 30 kernels, with names repeated inside it as in a real forward/backward. */
static const int steady_step[] = {1, 2, 3, 2, 4, 5, 1,	2,  3,	2,  4,	6,  7,	8,  9,
				  7, 8, 9, 3, 2, 1, 10, 11, 12, 13, 14, 15, 16, 17, 2};
#define STEADY_LEN ((int)(sizeof(steady_step) / sizeof(steady_step[0])))

static uint32_t rnd_state = 12345;

static uint32_t rnd(void)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return (rnd_state >> 16) & 0x7fff;
}

/* ---- loading ---- */

struct scan_rows {
	int64_t starts[16];
	int n;
	int stop_col;	     /* stop at the first row whose value here is CS_ID_NONE; -1: never */
	int64_t unlisted[2]; /* the first row's end and gridX, when they were not listed */
};

static int scan_row(const int64_t *v, void *arg)
{
	struct scan_rows *r = arg;

	/* start is the first column of every table */
	if (r->n < 16)
		r->starts[r->n] = v[CS_COL_KERNEL_start];
	if (!r->n) {
		r->unlisted[0] = v[CS_COL_KERNEL_end];
		r->unlisted[1] = v[CS_COL_KERNEL_gridX];
	}
	r->n++;
	return r->stop_col >= 0 && v[r->stop_col] == CS_ID_NONE ? 1 : 0;
}

/* The reader's bulk scan: listed columns only, each at its place, NULLs as the iterator reads
 * them, rows by position, bad columns. */
START_TEST(test_trace_scan)
{
	char *path = sample_path("train_small.db");
	static const int cols[] = {CS_COL_KERNEL_start, CS_COL_KERNEL_stackId};
	static const int nvtx_cols[] = {CS_COL_NVTX_start};
	static const int bad[] = {CS_COL_KERNEL_start, CS_COL_KERNEL_COUNT};
	static const int negative[] = {-1};
	cs_trace *t = open_trace(path);
	struct scan_rows r;
	cs_error err = {0, ""};
	cs_event ev;
	cs_iter *it;
	cs_filter all = cs_filter_all();

	memset(&r, 0, sizeof(r));
	r.stop_col = CS_COL_KERNEL_stackId;
	/* stackId is NULL in this trace: it reads as CS_ID_NONE, which stops the scan at once */
	ck_assert_int_eq(cs_trace_scan(t, CS_EV_KERNEL, cols, 2, scan_row, &r, &err), 0);
	ck_assert_int_eq(r.n, 1);
	/* the columns not listed hold their null values, whatever the row has */
	ck_assert_int_eq(r.unlisted[0], CS_TS_UNKNOWN);
	ck_assert_int_eq(r.unlisted[1], 0);
	ck_assert_int_eq(cs_iter_open(t, CS_EV_KERNEL, &all, &it, &err), 0);
	ck_assert_int_eq(cs_iter_next(it, &ev), 1);
	ck_assert_int_eq(r.starts[0], ev.u.kernel.start);
	ck_assert_int_ne(ev.u.kernel.end, CS_TS_UNKNOWN);
	ck_assert_int_gt(ev.u.kernel.grid_x, 0);
	cs_iter_close(it);
	memset(&r, 0, sizeof(r));
	r.stop_col = -1;
	ck_assert_int_eq(cs_trace_scan_rows(t, CS_EV_NVTX, 5, 10, nvtx_cols, 1, scan_row, &r, &err),
			 0);
	ck_assert_int_eq(r.n, 5);
	ck_assert_int_eq(cs_iter_open(t, CS_EV_NVTX, &all, &it, &err), 0);
	for (int i = 0; i < 10 && cs_iter_next(it, &ev) > 0; i++)
		if (i >= 5)
			ck_assert_int_eq(r.starts[i - 5], ev.u.nvtx.start);
	cs_iter_close(it);
	memset(&r, 0, sizeof(r));
	r.stop_col = -1;
	ck_assert_int_eq(
		cs_trace_scan_rows(t, CS_EV_NVTX, 28, INT64_MAX, nvtx_cols, 1, scan_row, &r, &err),
		0);
	ck_assert_int_eq(r.n, 2);
	ck_assert_int_eq(cs_trace_scan(t, CS_EV_KERNEL, bad, 2, scan_row, &r, &err),
			 CS_ERR_INVALID);
	ck_assert_msg(strstr(err.msg, "has no column 27") != NULL, "%s", err.msg);
	ck_assert_int_eq(cs_trace_scan(t, CS_EV_KERNEL, negative, 1, scan_row, &r, &err),
			 CS_ERR_INVALID);
	/* a kernel column number that the NVTX table does not have */
	ck_assert_int_eq(cs_trace_scan(t, CS_EV_NVTX, (const int[]){CS_COL_KERNEL_stackId}, 1,
				       scan_row, &r, &err),
			 CS_ERR_INVALID);
	ck_assert_int_eq(cs_trace_scan(t, CS_EV_KERNEL, cols, 0, scan_row, &r, &err),
			 CS_ERR_INVALID);
	cs_trace_close(t);
	free(path);
}
END_TEST

START_TEST(test_load_train_small)
{
	char *path = sample_path("train_small.db");
	struct loaded l;
	int memsets = 0;

	load(&l, path, NULL);
	ck_assert_int_eq(l.a.nkernels, 1176);
	ck_assert_int_eq(l.a.ncopies, 7 + 30);
	ck_assert_int_eq(l.a.nmemory, 792);
	ck_assert_int_eq(l.a.nsyncs, 7);
	ck_assert_int_eq(l.a.napis, 22);
	ck_assert_int_eq(l.a.nnvtx, 30);
	for (int64_t i = 1; i < l.a.nkernels; i++)
		ck_assert(l.a.kernels[i - 1].start <= l.a.kernels[i].start);
	for (int64_t i = 0; i < l.a.ncopies; i++) {
		memsets += l.a.copies[i].is_memset;
		if (i)
			ck_assert(l.a.copies[i - 1].start <= l.a.copies[i].start);
	}
	ck_assert_int_eq(memsets, 30);
	for (int64_t i = 0; i < l.a.nsyncs; i++)
		ck_assert_int_eq(l.a.syncs[i].host_wait, 1);
	/* names resolve, and every kernel of this trace ran on stream 7 of one process */
	ck_assert_msg(strstr(cs_analysis_string(&l.a, l.a.kernels[0].name_id), "Fill") != NULL,
		      "%s", cs_analysis_string(&l.a, l.a.kernels[0].name_id));
	ck_assert_str_eq(cs_analysis_string(&l.a, -1), "");
	for (int64_t i = 0; i < l.a.nkernels; i++) {
		ck_assert_int_eq(l.a.kernels[i].pid, 3615);
		ck_assert_int_eq(l.a.kernel_stream_order[i], i);
		ck_assert_int_eq(l.a.kernels[i].graph, 0);
		ck_assert(l.a.kernels[i].grid_blocks > 0);
	}
	ck_assert(l.a.device_memory_total > 0);
	ck_assert(l.a.kernel_longest > 0 && l.a.copy_longest > 0 && l.a.sync_longest > 0);
	/* binary searches */
	ck_assert_int_eq(cs_analysis_kernel_at(&l.a, INT64_MIN + 1), 0);
	ck_assert_int_eq(cs_analysis_kernel_at(&l.a, INT64_MAX), l.a.nkernels);
	ck_assert_int_eq(cs_analysis_kernel_at(&l.a, l.a.kernels[100].start), 100);
	ck_assert_int_eq(cs_analysis_kernel_at(&l.a, l.a.kernels[100].start + 1), 101);
	ck_assert_int_eq(cs_analysis_copy_at(&l.a, l.a.copies[5].start), 5);
	ck_assert_int_eq(cs_analysis_sync_at(&l.a, l.a.syncs[3].start), 3);
	ck_assert_int_eq(cs_analysis_memory_at(&l.a, INT64_MAX), l.a.nmemory);
	ck_assert_int_eq(cs_analysis_api_at(&l.a, l.a.apis[0].start), 0);
	ck_assert_int_eq(cs_analysis_nvtx_at(&l.a, l.a.nvtx[29].start), 29);
	unload(&l);
	free(path);
}
END_TEST

START_TEST(test_load_overlap_and_busy)
{
	char *path = tu_path(tmp_dir, "busy.db");
	cs_trace_writer *w = open_writer(path);
	int64_t a = cs_writer_intern(w, "a");
	cs_kernel k;
	cs_memcpy m;
	cs_memset ms;
	struct loaded l;
	cs_error err = {0, ""};

	/* kernels [0,10) [5,15) [20,30) of pid 100, [50,60) of pid 200; a copy [25,40), a memset
	 * [70,80) (us) */
	k = kernel(PID, a, 0, 0, 10 * US);
	ck_assert_int_eq(cs_writer_add_kernel(w, &k), 0);
	k = kernel(PID, a, 1 * US, 5 * US, 15 * US);
	ck_assert_int_eq(cs_writer_add_kernel(w, &k), 0);
	k = kernel(PID, a, 2 * US, 20 * US, 30 * US);
	ck_assert_int_eq(cs_writer_add_kernel(w, &k), 0);
	k = kernel(200, a, 3 * US, 50 * US, 60 * US);
	ck_assert_int_eq(cs_writer_add_kernel(w, &k), 0);
	memset(&m, 0, sizeof(m));
	m.start = 25 * US;
	m.end = 40 * US;
	m.launch_start = m.launch_end = CS_TS_UNKNOWN;
	m.pid = PID;
	m.launch_cbid = CS_ID_NONE;
	m.copy_kind = CS_COPY_DTOH;
	m.bytes = 4;
	m.src_device_id = m.dst_device_id = CS_ID_NONE;
	m.graph_id = m.graph_node_id = m.stack_id = CS_ID_NONE;
	ck_assert_int_eq(cs_writer_add_memcpy(w, &m), 0);
	memset(&ms, 0, sizeof(ms));
	ms.start = 70 * US;
	ms.end = 80 * US;
	ms.launch_start = ms.launch_end = CS_TS_UNKNOWN;
	ms.pid = PID;
	ms.launch_cbid = CS_ID_NONE;
	ms.bytes = 64;
	ms.graph_id = ms.graph_node_id = ms.stack_id = CS_ID_NONE;
	ck_assert_int_eq(cs_writer_add_memset(w, &ms), 0);
	finish_writer(w);

	l.t = open_trace(path);
	ck_assert_msg(cs_analysis_load(l.t, &l.a, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(l.a.ncopies, 2);
	ck_assert_int_eq(l.a.copies[0].is_memset, 0);
	ck_assert_int_eq(l.a.copies[0].copy_kind, CS_COPY_DTOH);
	ck_assert_int_eq(l.a.copies[1].is_memset, 1);
	ck_assert_int_eq(l.a.kernels[0].grid_blocks, 8);
	ck_assert_int_eq(l.a.kernel_longest, 10 * US);
	ck_assert_int_eq(l.a.copy_longest, 15 * US);
	/* the first kernel that may overlap 12 us is the second one (the first ends at 10) */
	ck_assert_int_le(cs_analysis_kernel_overlapping(&l.a, 12 * US), 1);
	ck_assert_int_eq(cs_analysis_kernel_overlapping(&l.a, 100 * US), l.a.nkernels);
	ck_assert_int_eq(cs_analysis_copy_overlapping(&l.a, 100 * US), l.a.ncopies);
	/* union of [0,15) [20,30) [25,40) [70,80) for pid 100 */
	ck_assert_int_eq(cs_analysis_gpu_busy(&l.a, PID, 0, 100 * US), (15 + 20 + 10) * US);
	ck_assert_int_eq(cs_analysis_gpu_busy(&l.a, PID, 8 * US, 22 * US), (7 + 2) * US);
	ck_assert_int_eq(cs_analysis_gpu_busy(&l.a, 0, 0, 100 * US), (15 + 20 + 10 + 10) * US);
	ck_assert_int_eq(cs_analysis_gpu_busy(&l.a, 200, 0, 100 * US), 10 * US);
	ck_assert_int_eq(cs_analysis_gpu_busy(&l.a, PID, 40 * US, 70 * US), 0);
	ck_assert_int_eq(cs_analysis_gpu_busy(&l.a, PID, 30 * US, 30 * US), 0);
	cs_analysis_free(&l.a);
	cs_trace_close(l.t);
	free(path);
}
END_TEST

/* A kernel table long enough to be read by two threads: every kernel arrives, in time order. */
START_TEST(test_load_large_two_threads)
{
	char *path = tu_path(tmp_dir, "large.db");
	cs_trace_writer *w = open_writer(path);
	int64_t ids[10];
	const int n = 300000;
	struct loaded l;
	cs_filter all = cs_filter_all();
	cs_iter *it;
	cs_event ev;
	cs_error err = {0, ""};
	int64_t i = 0;

	for (int k = 0; k < 10; k++) {
		char name[16];

		snprintf(name, sizeof(name), "kern%d", k);
		ids[k] = cs_writer_intern(w, name);
	}
	for (int k = 0; k < n; k++) {
		cs_kernel kk = kernel(PID, ids[k % 10], (int64_t)k * 2 * US,
				      (int64_t)k * 2 * US + US, (int64_t)k * 2 * US + 2 * US);

		kk.grid_x = k % 7 + 1;
		ck_assert_int_eq(cs_writer_add_kernel(w, &kk), 0);
	}
	finish_writer(w);
	load(&l, path, NULL);
	ck_assert_int_eq(l.a.nkernels, n);
	ck_assert_int_eq(cs_iter_open(l.t, CS_EV_KERNEL, &all, &it, &err), 0);
	while (cs_iter_next(it, &ev) > 0) {
		const cs_a_kernel *k = &l.a.kernels[i++];

		ck_assert_int_eq(k->start, ev.u.kernel.start);
		ck_assert_int_eq(k->end, ev.u.kernel.end);
		ck_assert_int_eq(k->name_id, ev.u.kernel.name_id);
		ck_assert_int_eq(k->grid_blocks, ev.u.kernel.grid_x * 2);
	}
	cs_iter_close(it);
	ck_assert_int_eq(i, n);
	ck_assert_int_eq(l.s.method, CS_STEPS_PERIOD);
	ck_assert_int_eq(l.s.period, 10);
	unload(&l);
	free(path);
}
END_TEST

/* ---- steps of the committed traces ---- */

START_TEST(test_train_small_nvtx_and_period)
{
	char *path = sample_path("train_small.db");
	cs_step_opts nvtx = {"step*", -1, 0, 0};
	struct loaded a, b;

	load(&a, path, &nvtx);
	load(&b, path, NULL);
	ck_assert_int_eq(a.s.method, CS_STEPS_NVTX);
	ck_assert_int_eq(a.s.n, 30);
	ck_assert_int_eq(a.s.pid, 3615);
	ck_assert_int_eq(b.s.method, CS_STEPS_PERIOD);
	ck_assert_msg(abs(b.s.n - a.s.n) <= 1, "period %d steps, NVTX %d", b.s.n, a.s.n);
	ck_assert_int_eq(b.s.period, 38);
	ck_assert_int_eq(b.s.period_ops, 39); /* and a memset */
	/* every steady step launches the same 38 kernels either way */
	for (int i = 1; i < a.s.n; i++)
		ck_assert_int_eq(a.s.v[i].kernels, 38);
	for (int i = 1; i < b.s.n; i++)
		ck_assert_int_eq(b.s.v[i].kernels, 38);
	/* each period step starts with the first kernel launched in the NVTX step */
	for (int i = 0; i < a.s.n && i < b.s.n; i++) {
		ck_assert(b.s.v[i].start >= a.s.v[i].start);
		ck_assert(b.s.v[i].start < a.s.v[i].end);
		ck_assert(b.s.v[i].gpu_busy > 0 &&
			  b.s.v[i].gpu_busy <= b.s.v[i].end - b.s.v[i].start);
	}
	/* the first two steps run far longer than the rest: warm-up */
	ck_assert_int_eq(a.s.warmup, 2);
	ck_assert_int_eq(b.s.warmup, 2);
	unload(&a);
	unload(&b);
	free(path);
}
END_TEST

/* With the NVTX rows deleted from a copy, the period detector finds the NVTX step count, +-1. */
START_TEST(test_train_small_without_nvtx)
{
	char *orig = sample_path("train_small.db"), *copy = copy_file(orig, "no-nvtx.db");
	cs_step_opts nvtx = {"step*", -1, 0, 0};
	struct loaded a, b;
	cs_step_opts want = {"step*", -1, 0, 0};
	cs_steps s;
	cs_error err = {0, ""};

	exec_sql(copy, "DELETE FROM NVTX_EVENTS_DATA; UPDATE EVENT_TABLE_INFO SET rowCount = 0, "
		       "minStart = NULL, maxEnd = NULL, maxDuration = NULL "
		       "WHERE tableName = 'NVTX_EVENTS';");
	load(&a, orig, &nvtx);
	load(&b, copy, NULL);
	ck_assert_int_eq(b.a.nnvtx, 0);
	ck_assert_int_eq(b.s.method, CS_STEPS_PERIOD);
	ck_assert_msg(abs(b.s.n - a.s.n) <= 1, "period %d steps, NVTX %d", b.s.n, a.s.n);
	/* asking for NVTX steps that are not there is an error that says so */
	ck_assert_int_eq(cs_steps_detect(&b.a, &want, &s, &err), CS_ERR_INVALID);
	ck_assert_msg(strstr(err.msg, "no NVTX range matches") != NULL, "%s", err.msg);
	unload(&a);
	unload(&b);
	free(orig);
	free(copy);
}
END_TEST

/*
 * Traces recorded from the rule samples (samples/rules; 5 warm-up and 40 measured steps each, no
 * NVTX step ranges): one with a data-dependent branch every fourth step, one whose steps are a
 * thousand small kernels, and the clean baseline. Skipped when the traces are not there.
 */
START_TEST(test_rule_sample_traces)
{
	static const char *const files[] = {"d2h-sync-bad.db", "launch-starvation-bad.db",
					    "clean.db"};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[4096];
		struct loaded l;

		snprintf(path, sizeof(path), "%s/samples/rules/traces/%s", tu_source_root(),
			 files[i]);
		if (!tu_file_exists(path))
			continue;
		load(&l, path, NULL);
		ck_assert_int_eq(l.s.method, CS_STEPS_PERIOD);
		ck_assert_msg(abs(l.s.n - 45) <= 1, "%s: %d steps: %s", files[i], l.s.n,
			      l.s.detail);
		unload(&l);
	}
}
END_TEST

/*
 * A run without steps gets windows when asked (cs_step_opts.windows): the C++ loop of
 * samples/savings/c_malloc_uneven.cu, whose iterations differ in length, and c_tiny_graph.cu, one
 * kernel repeated; without the option (diff, gate) they stay one step. A run too short to have a
 * rate (counts.db, a few dozen operations) gets no windows.
 */
START_TEST(test_windows_without_steps)
{
	static const char *const names[] = {"c_malloc_uneven.db", "c_tiny_graph.db"};
	cs_step_opts win = {NULL, -1, 0, 1};
	char *counts = sample_path("counts.db");
	struct loaded l;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char rel[128], *path;

		snprintf(rel, sizeof(rel), "tests/data/savings/%s", names[i]);
		path = tu_source_file(rel);
		if (!tu_file_exists(path)) {
			free(path);
			continue;
		}
		load(&l, path, NULL);
		ck_assert_int_eq(l.s.method, CS_STEPS_NONE);
		ck_assert_int_eq(l.s.n, 1);
		unload(&l);
		load(&l, path, &win);
		ck_assert_msg(l.s.method == CS_STEPS_WINDOWS, "%s: %s", names[i], l.s.detail);
		ck_assert_int_ge(l.s.n, 3);
		ck_assert_int_le(l.s.n, 20);
		ck_assert_str_eq(cs_step_method_name(l.s.method), "windows");
		ck_assert_msg(strstr(l.s.detail, "windows of"), "%s", l.s.detail);
		for (int32_t k = 0; k < l.s.n; k++) {
			ck_assert(l.s.v[k].end > l.s.v[k].start);
			if (k + 1 < l.s.n)
				ck_assert(l.s.v[k].end == l.s.v[k + 1].start);
			ck_assert_int_gt(l.s.v[k].kernels, 0);
		}
		unload(&l);
		free(path);
	}
	load(&l, counts, &win);
	ck_assert_int_eq(l.s.method, CS_STEPS_NONE);
	unload(&l);
	free(counts);
}
END_TEST

START_TEST(test_counts_no_structure)
{
	char *path = sample_path("counts.db");
	struct loaded l;
	int64_t med, p10, p90;

	load(&l, path, NULL);
	ck_assert_int_eq(l.s.method, CS_STEPS_NONE);
	ck_assert_int_eq(l.s.n, 1);
	ck_assert_int_eq(l.s.warmup, 0);
	ck_assert_int_eq(l.s.v[0].kernels, 17);
	ck_assert(l.s.v[0].start <= l.a.kernels[0].start);
	ck_assert(l.s.v[0].end >= l.a.kernels[16].end);
	cs_steps_duration_stats(&l.s, &med, &p10, &p90);
	ck_assert_int_eq(med, l.s.v[0].end - l.s.v[0].start);
	ck_assert(strlen(l.s.detail) > 0);
	unload(&l);
	free(path);
}
END_TEST

START_TEST(test_nvtx_pattern_no_match)
{
	char *path = sample_path("counts.db");
	cs_step_opts o = {"epoch*", -1, 0, 0};
	struct loaded l;
	cs_steps s;
	cs_error err = {0, ""};

	l.t = open_trace(path);
	ck_assert_int_eq(cs_analysis_load(l.t, &l.a, &err), 0);
	ck_assert_int_eq(cs_steps_detect(&l.a, &o, &s, &err), CS_ERR_INVALID);
	ck_assert_msg(strstr(err.msg, "'epoch*'") != NULL, "%s", err.msg);
	cs_analysis_free(&l.a);
	cs_trace_close(l.t);
	free(path);
}
END_TEST

/* ---- synthetic loops ---- */

/* Setup kernels, 5 warm-up steps that differ from each other, 50 steady steps, teardown. */
START_TEST(test_period_warmup_and_setup)
{
	struct names *s = calloc(1, sizeof(*s));
	struct loaded l;
	char *path;
	int setup;

	for (int i = 0; i < 20; i++)
		push(s, i % 3 == 0 ? 100 : 101 + i); /* init kernels; a fill repeated */
	setup = s->n;
	for (int w = 0; w < 5; w++) {
		/* a warm-up step: autotuning tries (5 - w) * 4 extra kernels, and one kernel of the
		 * steady step is missing */
		for (int i = 0; i < STEADY_LEN; i++) {
			if (i == 3 + w)
				continue;
			push(s, steady_step[i]);
			if (i % 6 == 1)
				for (int j = 0; j < 5 - w; j++)
					push(s, 200 + w * 10 + j);
		}
	}
	for (int r = 0; r < 50; r++)
		push_all(s, steady_step, STEADY_LEN);
	for (int i = 0; i < 12; i++)
		push(s, 300 + i % 4); /* teardown: evaluation, saving */
	path = write_sequence("warmup.db", s->v, s->n);

	load(&l, path, NULL);
	ck_assert_int_eq(l.s.method, CS_STEPS_PERIOD);
	ck_assert_msg(abs(l.s.n - 55) <= 1, "%d steps: %s", l.s.n, l.s.detail);
	ck_assert_int_eq(l.s.period, STEADY_LEN);
	/* the first step starts right after the setup kernels, autotuning tries included */
	ck_assert_int_eq(l.s.v[0].start, 1000 * US + (int64_t)setup * 10 * US);
	/* steady steps hold the 30 kernels of the loop */
	for (int i = 6; i < l.s.n - 1; i++)
		ck_assert_int_eq(l.s.v[i].kernels, STEADY_LEN);
	ck_assert_int_eq(l.s.warmup, 5);
	unload(&l);
	free(path);
	free(s);
}
END_TEST

/* Give the trace at path a META ring whose process pid dropped segments, and load it. */
static void load_with_ring(struct loaded *l, const char *path, uint32_t pid, int segments)
{
	char sql[512];

	snprintf(sql, sizeof(sql),
		 "INSERT OR REPLACE INTO META VALUES ('ring', '{\"size_bytes\":1048576,"
		 "\"duration_ns\":0,\"segments_dropped\":%d,\"processes\":{\"%u\":"
		 "{\"segments_dropped\":%d}}}')",
		 segments, pid, segments);
	exec_sql(path, sql);
	load(l, path, NULL);
}

/*
 * A trace of record --ring whose ring deleted segments starts in the middle of a step: the period's
 * first step, which may hold only its end, is left out and the detail says so; a ring that cut
 * nothing, and another process's cut, leave the steps alone.
 */
START_TEST(test_period_ring_cut_drops_first_step)
{
	struct names *s = calloc(1, sizeof(*s));
	struct loaded l;
	int32_t n0;
	int64_t second;
	char *path;

	for (int i = 13; i < STEADY_LEN; i++)
		push(s, steady_step[i]); /* the end of a step whose start the ring deleted */
	for (int r = 0; r < 40; r++)
		push_all(s, steady_step, STEADY_LEN);
	path = write_sequence("ring.db", s->v, s->n);
	load(&l, path, NULL);
	ck_assert_int_eq(l.s.method, CS_STEPS_PERIOD);
	n0 = l.s.n;
	ck_assert_int_ge(n0, 39);
	second = l.s.v[1].start;
	unload(&l);

	load_with_ring(&l, path, PID, 0); /* a ring that cut nothing */
	ck_assert_int_eq(l.s.n, n0);
	unload(&l);
	load_with_ring(&l, path, PID + 1, 3); /* another process's cut */
	ck_assert_int_eq(l.s.n, n0);
	unload(&l);
	load_with_ring(&l, path, PID, 3);
	ck_assert_int_eq(l.s.method, CS_STEPS_PERIOD);
	ck_assert_int_eq(l.s.n, n0 - 1);
	ck_assert_int_eq(l.s.v[0].start, second);
	ck_assert_msg(strstr(l.s.detail, "cut by --ring"), "%s", l.s.detail);
	unload(&l);
	free(path);
	free(s);
}
END_TEST

/*
 * torch.compile autotuning at a kernel's first run (pt_compile_cumsum of the corpus): 45 steps of
 * 8 kernels, but inside the first one the compiler benchmarks a kernel 800 times, each run after
 * a cache-clearing fill: 1,600 kernels of a 2-kernel pattern, more than the 360 of the loop. The
 * loop's kernels are regular once the first gap (the benchmark) is left out of their span; the
 * benchmark's fill must not make 800 steps of 2.
 */
START_TEST(test_period_autotune_in_first_step)
{
	static const int step[8] = {1, 2, 3, 4, 5, 6, 7, 8};

	/* the benchmark in the first, second or third step (a kernel first run there) */
	for (int at = 0; at < 3; at++) {
		struct names *s = calloc(1, sizeof(*s));
		struct loaded l;
		char *path, file[32];

		for (int i = 0; i < 6; i++)
			push(s, 100 + i); /* setup */
		for (int r = 0; r < 45; r++) {
			push_all(s, step, 4);
			if (r == at)
				for (int b = 0; b < 800; b++) {
					push(s, 50); /* the fill that clears the L2 cache */
					push(s, 51); /* the candidate kernel */
				}
			push_all(s, step + 4, 4);
		}
		snprintf(file, sizeof(file), "autotune%d.db", at);
		path = write_sequence(file, s->v, s->n);

		load(&l, path, NULL);
		ck_assert_int_eq(l.s.method, CS_STEPS_PERIOD);
		ck_assert_msg(l.s.period == 8, "benchmark in step %d: %s", at, l.s.detail);
		ck_assert_msg(l.s.n >= 42 && l.s.n <= 45, "%d steps: %s", l.s.n, l.s.detail);
		/* every step holds the loop's 8 kernels, one of the first three the benchmark too
		 * (warm-up marks it only when it runs long, docs/steps.md) */
		/* every step holds the loop's 8 kernels but the one with the benchmark, if the
		 * benchmark is not before the first step (in the first step, it cuts the loop
		 * there: the steps then begin with its second half, docs/steps.md "Limits") */
		for (int i = 0, odd = 0; i < l.s.n - 1; i++)
			if (l.s.v[i].kernels != 8) {
				ck_assert_msg(l.s.v[i].kernels == 1608 && ++odd == 1,
					      "benchmark in step %d: step %d of %d has %d kernels",
					      at, i, l.s.n, (int)l.s.v[i].kernels);
			}
		unload(&l);
		free(path);
		free(s);
	}
}
END_TEST

/* Gradient accumulation: 4 micro-batches, then the optimizer once per step. */
START_TEST(test_period_gradient_accumulation)
{
	static const int micro[] = {1, 2, 3, 2, 4, 1, 2, 3, 2, 5, 6, 7, 6, 7, 8, 9, 2, 3, 10, 2};
	static const int optimizer[] = {50, 51, 52, 51, 53, 54};
	struct names *s = calloc(1, sizeof(*s));
	struct loaded l;
	char *path;
	int step_len = 4 * 20 + 6;

	for (int i = 0; i < 10; i++)
		push(s, 100 + i);
	for (int r = 0; r < 40; r++) {
		for (int m = 0; m < 4; m++)
			push_all(s, micro, 20);
		push_all(s, optimizer, 6);
	}
	path = write_sequence("accumulation.db", s->v, s->n);

	load(&l, path, NULL);
	ck_assert_int_eq(l.s.method, CS_STEPS_PERIOD);
	ck_assert_msg(abs(l.s.n - 40) <= 1, "%d steps: %s", l.s.n, l.s.detail);
	ck_assert_int_eq(l.s.period, step_len);
	ck_assert_int_eq(l.s.v[0].start, 1000 * US + 10 * 10 * US);
	for (int i = 0; i < l.s.n; i++)
		ck_assert_int_eq(l.s.v[i].kernels, step_len);
	unload(&l);
	free(path);
	free(s);
}
END_TEST

/* Gradient accumulation with a fused optimizer: one optimizer kernel per step of 80 kernels. */
START_TEST(test_period_accumulation_fused_optimizer)
{
	static const int micro[] = {1, 2, 3, 2, 4, 1, 2, 3, 2, 5, 6, 7, 6, 7, 8, 9, 2, 3, 10, 2};
	struct names *s = calloc(1, sizeof(*s));
	struct loaded l;
	char *path;

	for (int i = 0; i < 10; i++)
		push(s, 100 + i);
	for (int r = 0; r < 40; r++) {
		for (int m = 0; m < 4; m++)
			push_all(s, micro, 20);
		push(s, 900); /* multi_tensor_apply_kernel<FusedAdamMathFunctor> */
	}
	path = write_sequence("accumulation-fused.db", s->v, s->n);
	load(&l, path, NULL);
	ck_assert_int_eq(l.s.method, CS_STEPS_PERIOD);
	ck_assert_msg(abs(l.s.n - 40) <= 1, "%d steps: %s", l.s.n, l.s.detail);
	ck_assert_int_eq(l.s.period, 81);
	unload(&l);
	free(path);
	free(s);
}
END_TEST

/* A data-dependent branch every fourth step (one extra kernel) does not make 4 steps one. */
START_TEST(test_period_occasional_kernel)
{
	struct names *s = calloc(1, sizeof(*s));
	struct loaded l;
	char *path;

	for (int i = 0; i < 10; i++)
		push(s, 100 + i);
	for (int r = 0; r < 44; r++) {
		push_all(s, steady_step, 8);
		if (r % 4 == 3)
			push(s, 901); /* masked_fill: every fourth batch has padding */
		push_all(s, steady_step + 8, STEADY_LEN - 8);
		if (r % 10 == 9)
			push(s, 902); /* a norm logged every tenth step */
	}
	path = write_sequence("occasional.db", s->v, s->n);
	load(&l, path, NULL);
	ck_assert_int_eq(l.s.method, CS_STEPS_PERIOD);
	ck_assert_msg(abs(l.s.n - 44) <= 1, "%d steps: %s", l.s.n, l.s.detail);
	ck_assert_int_eq(l.s.period, STEADY_LEN);
	unload(&l);
	free(path);
	free(s);
}
END_TEST

/* Steps of varying length: data-dependent kernels come and go, one kernel is sometimes skipped. */
START_TEST(test_period_variable_length)
{
	struct names *s = calloc(1, sizeof(*s));
	struct loaded l;
	char *path;
	int min_len = 1 << 30, max_len = 0;

	rnd_state = 4242;
	for (int i = 0; i < 8; i++)
		push(s, 100 + i);
	for (int r = 0; r < 40; r++) {
		int extra = (int)(rnd() % 4), len = 0;

		for (int i = 0; i < STEADY_LEN; i++) {
			if (i == 12 && rnd() % 3 == 0)
				continue;
			push(s, steady_step[i]);
			len++;
			if (extra > 0 && rnd() % 8 == 0) {
				push(s, 60 + (int)(rnd() % 3));
				len++;
				extra--;
			}
		}
		if (len < min_len)
			min_len = len;
		if (len > max_len)
			max_len = len;
	}
	ck_assert_int_lt(min_len, max_len);
	path = write_sequence("variable.db", s->v, s->n);

	load(&l, path, NULL);
	ck_assert_int_eq(l.s.method, CS_STEPS_PERIOD);
	ck_assert_msg(abs(l.s.n - 40) <= 1, "%d steps: %s", l.s.n, l.s.detail);
	ck_assert_int_eq(l.s.v[0].start, 1000 * US + 8 * 10 * US);
	for (int i = 0; i < l.s.n - 1; i++)
		ck_assert_msg(l.s.v[i].kernels >= min_len - 2 && l.s.v[i].kernels <= max_len + 2,
			      "step %d has %lld kernels", i, (long long)l.s.v[i].kernels);
	unload(&l);
	free(path);
	free(s);
}
END_TEST

/* No loop: kernels in random order, and a loop of a single kernel. */
START_TEST(test_period_none)
{
	struct names *s = calloc(1, sizeof(*s));
	struct loaded l;
	char *path;

	rnd_state = 7;
	for (int i = 0; i < 400; i++)
		push(s, (int)(rnd() % 40));
	path = write_sequence("random.db", s->v, s->n);
	load(&l, path, NULL);
	ck_assert_int_eq(l.s.method, CS_STEPS_NONE);
	ck_assert_int_eq(l.s.n, 1);
	ck_assert_int_eq(l.s.v[0].kernels, 400);
	unload(&l);
	free(path);

	s->n = 0;
	for (int i = 0; i < 100; i++)
		push(s, 1);
	path = write_sequence("one-kernel.db", s->v, s->n);
	load(&l, path, NULL);
	ck_assert_int_eq(l.s.method, CS_STEPS_NONE);
	unload(&l);
	free(path);
	free(s);
}
END_TEST

/* ---- the sequence of kernels and copies ---- */

#define OP_HTOD	  (-1)
#define OP_DTOH	  (-2)
#define OP_MEMSET (-3)

/*
 * Write a trace whose only process launches, in this order, one every 10 us, kernels named
 * "k<ops[i]>" and for negative ops a memcpy host to device (OP_HTOD), device to host (OP_DTOH) or
 * a memset, each running 5 us on the GPU from 3 us after its launch. Returns the path (malloc'd).
 */
static char *write_ops(const char *file, const int *ops, int n)
{
	char *path = tu_path(tmp_dir, file);
	cs_trace_writer *w = open_writer(path);
	int64_t ids[100];

	for (int i = 0; i < 100; i++)
		ids[i] = -1;
	for (int i = 0; i < n; i++) {
		int64_t launch = 1000 * US + (int64_t)i * 10 * US;

		if (ops[i] >= 0) {
			cs_kernel k;

			ck_assert(ops[i] < 100);
			if (ids[ops[i]] < 0) {
				char name[16];

				snprintf(name, sizeof(name), "k%d", ops[i]);
				ids[ops[i]] = cs_writer_intern(w, name);
			}
			k = kernel(PID, ids[ops[i]], launch, launch + 3 * US, launch + 8 * US);
			ck_assert_int_eq(cs_writer_add_kernel(w, &k), 0);
		} else if (ops[i] == OP_MEMSET) {
			cs_memset ms;

			memset(&ms, 0, sizeof(ms));
			ms.start = launch + 3 * US;
			ms.end = launch + 8 * US;
			ms.launch_start = launch;
			ms.launch_end = launch + 2 * US;
			ms.pid = PID;
			ms.launch_tid = PID;
			ms.launch_cbid = CS_ID_NONE;
			ms.stream_id = 7;
			ms.bytes = 4096;
			ms.graph_id = ms.graph_node_id = ms.stack_id = CS_ID_NONE;
			ck_assert_int_eq(cs_writer_add_memset(w, &ms), 0);
		} else {
			cs_memcpy m;

			memset(&m, 0, sizeof(m));
			m.start = launch + 3 * US;
			m.end = launch + 8 * US;
			m.launch_start = launch;
			m.launch_end = launch + 2 * US;
			m.pid = PID;
			m.launch_tid = PID;
			m.launch_cbid = CS_ID_NONE;
			m.stream_id = 7;
			m.copy_kind = ops[i] == OP_HTOD ? CS_COPY_HTOD : CS_COPY_DTOH;
			m.bytes = 1 << 20;
			m.src_device_id = m.dst_device_id = CS_ID_NONE;
			m.graph_id = m.graph_node_id = m.stack_id = CS_ID_NONE;
			ck_assert_int_eq(cs_writer_add_memcpy(w, &m), 0);
		}
	}
	finish_writer(w);
	return path;
}

/*
 * A plain C loop: copy the input in, run the same kernel 10 times, copy the result out, 20 times,
 * after a setup of a memset and an upload. The kernels alone are one kernel repeated; with the
 * copies the loop repeats every 12 operations, and each step starts at its copy in.
 */
START_TEST(test_period_copy_kernels_copy)
{
	struct names *s = calloc(1, sizeof(*s));
	struct loaded l;
	char *path;

	push(s, OP_MEMSET);
	push(s, OP_HTOD);
	for (int r = 0; r < 20; r++) {
		push(s, OP_HTOD);
		for (int i = 0; i < 10; i++)
			push(s, 1);
		push(s, OP_DTOH);
	}
	path = write_ops("copy-kernels-copy.db", s->v, s->n);
	load(&l, path, NULL);
	ck_assert_int_eq(l.s.method, CS_STEPS_PERIOD);
	ck_assert_int_eq(l.s.period_ops, 12);
	ck_assert_int_eq(l.s.period, 10);
	ck_assert_msg(l.s.n == 20, "%d steps: %s", l.s.n, l.s.detail);
	for (int i = 0; i < l.s.n; i++) {
		ck_assert_int_eq(l.s.v[i].start, 1000 * US + (int64_t)(2 + 12 * i) * 10 * US);
		ck_assert_int_eq(l.s.v[i].kernels, 10);
	}
	ck_assert_msg(strstr(l.s.detail, "every 10 kernels (12 operations"), "%s", l.s.detail);
	unload(&l);
	free(path);
	free(s);
}
END_TEST

/*
 * An inner loop of two kernels, 5 times between a copy in and a copy out: the kernels alone repeat
 * every 2, the work every 12 (the longer step, with more kernels, is the loop's).
 */
START_TEST(test_period_inner_loop_between_copies)
{
	struct names *s = calloc(1, sizeof(*s));
	struct loaded l;
	char *path;

	for (int r = 0; r < 30; r++) {
		push(s, OP_HTOD);
		for (int i = 0; i < 5; i++) {
			push(s, 1);
			push(s, 2);
		}
		push(s, OP_DTOH);
	}
	path = write_ops("inner-loop.db", s->v, s->n);
	load(&l, path, NULL);
	ck_assert_int_eq(l.s.method, CS_STEPS_PERIOD);
	ck_assert_int_eq(l.s.period_ops, 12);
	ck_assert_int_eq(l.s.period, 10);
	ck_assert_msg(l.s.n == 30, "%d steps: %s", l.s.n, l.s.detail);
	unload(&l);
	free(path);
	free(s);
}
END_TEST

/*
 * One kernel repeated, alone or between a copy in before it and a copy out after it: steps cannot
 * be told apart, and the header says why. Copies inside such a loop (every few kernels) make it a
 * loop of steps again; memsets in steps of kernels that have their own period (train_small) leave
 * the kernel period as it was.
 */
START_TEST(test_period_one_kernel)
{
	struct names *s = calloc(1, sizeof(*s));
	struct loaded l;
	char *path;

	for (int i = 0; i < 100; i++)
		push(s, 1);
	path = write_ops("one-kernel-only.db", s->v, s->n);
	load(&l, path, NULL);
	ck_assert_int_eq(l.s.method, CS_STEPS_NONE);
	ck_assert_int_eq(l.s.n, 1);
	ck_assert_msg(strstr(l.s.detail, "one kernel repeated"), "%s", l.s.detail);
	unload(&l);
	free(path);

	s->n = 0;
	push(s, OP_HTOD);
	push(s, OP_HTOD);
	for (int i = 0; i < 200; i++)
		push(s, 1);
	push(s, OP_DTOH);
	path = write_ops("one-kernel-copies.db", s->v, s->n);
	load(&l, path, NULL);
	ck_assert_int_eq(l.s.method, CS_STEPS_NONE);
	ck_assert_msg(strstr(l.s.detail, "one kernel repeated"), "%s", l.s.detail);
	unload(&l);
	free(path);

	s->n = 0;
	for (int r = 0; r < 25; r++) {
		for (int i = 0; i < 4; i++)
			push(s, 1);
		push(s, OP_MEMSET);
	}
	path = write_ops("one-kernel-memsets.db", s->v, s->n);
	load(&l, path, NULL);
	ck_assert_int_eq(l.s.method, CS_STEPS_PERIOD);
	ck_assert_int_eq(l.s.period_ops, 5);
	ck_assert_int_eq(l.s.period, 4);
	ck_assert_msg(abs(l.s.n - 25) <= 1, "%d steps: %s", l.s.n, l.s.detail);
	unload(&l);
	free(path);
	free(s);
}
END_TEST

/* ---- step time: the host's or the GPU's ---- */

/*
 * A loop of nsteps steps of 5 kernels (k1..k5). The host launches a step's kernels evenly over
 * host_ns; the GPU runs each kernel for gpu_ns / 5, starting it 10 us after its launch or when the
 * previous kernel ends, whichever is later (one stream). With ahead > 0 the host cannot launch a
 * step before the GPU has finished the step ahead steps before it (a full launch queue). Returns
 * the path (malloc'd).
 */
static char *write_timed_loop(const char *file, int nsteps, int64_t host_ns, int64_t gpu_ns,
			      int ahead)
{
	char *path = tu_path(tmp_dir, file);
	cs_trace_writer *w = open_writer(path);
	int64_t ids[5], gpu = 0, host = 1000 * US, *done = calloc((size_t)nsteps, sizeof(*done));

	ck_assert(done != NULL);
	for (int j = 0; j < 5; j++) {
		char name[16];

		snprintf(name, sizeof(name), "k%d", j + 1);
		ids[j] = cs_writer_intern(w, name);
	}
	for (int i = 0; i < nsteps; i++) {
		if (ahead > 0 && i >= ahead && done[i - ahead] > host)
			host = done[i - ahead];
		for (int j = 0; j < 5; j++) {
			int64_t launch = host + (int64_t)j * host_ns / 5;
			int64_t start = launch + 10 * US > gpu ? launch + 10 * US : gpu;
			cs_kernel k = kernel(PID, ids[j], launch, start, start + gpu_ns / 5);

			gpu = start + gpu_ns / 5;
			ck_assert_int_eq(cs_writer_add_kernel(w, &k), 0);
		}
		done[i] = gpu;
		host += host_ns;
	}
	finish_writer(w);
	free(done);
	return path;
}

/*
 * GPU-bound: the host launches a step in 1.5 ms, the GPU takes 22 ms for it, so the host ends up
 * 11 steps ahead (it has launched all 12 steps while the GPU runs the first). The host spans are
 * 1.5 ms; the step time must be the GPU's 22 ms, and so must the statistics and the busy share's
 * denominator. The spans still place launches in steps.
 */
START_TEST(test_step_time_gpu_bound)
{
	char *path = write_timed_loop("gpu-bound.db", 12, 1500 * US, 22000 * US, 0);
	struct loaded l;
	int64_t med, p10, p90;

	load(&l, path, NULL);
	ck_assert_int_eq(l.s.method, CS_STEPS_PERIOD);
	ck_assert_int_eq(l.s.n, 12);
	ck_assert_int_eq(l.s.period, 5);
	ck_assert_int_eq(l.s.timing, CS_STEP_TIME_GPU);
	ck_assert_str_eq(cs_step_timing_name(l.s.timing), "gpu");
	for (int i = 0; i + 1 < l.s.n; i++) {
		ck_assert_int_eq(l.s.v[i].end - l.s.v[i].start, 1500 * US);
		ck_assert_int_eq(cs_step_time(&l.s, i), 22000 * US);
		ck_assert_int_eq(l.s.v[i].kernels, 5);
		/* the GPU never idles inside the GPU window */
		ck_assert_int_eq(l.s.v[i].gpu_busy, 22000 * US);
	}
	/* the last step: from its GPU start to its GPU end */
	ck_assert_int_eq(cs_step_time(&l.s, l.s.n - 1), 22000 * US);
	cs_steps_duration_stats(&l.s, &med, &p10, &p90);
	ck_assert_int_eq(med, 22000 * US);
	ck_assert_int_eq(p10, 22000 * US);
	ck_assert_int_eq(p90, 22000 * US);
	ck_assert_int_eq(cs_steps_median(&l.s, NULL, 0), 22000 * US);
	ck_assert(cs_steps_busy_share(&l.s) > 0.99);
	/* a kernel launched in step 5 is found in step 5 by its host launch time */
	ck_assert_int_eq(cs_steps_find(&l.s, l.s.v[5].start + 10 * US), 5);
	unload(&l);
	free(path);
}
END_TEST

/*
 * GPU-bound with a full launch queue: the host may run at most 10 steps ahead, so after the first
 * 10 steps its spans stretch to the GPU's 22 ms (it waits in the launches) and the first ones are
 * 1.5 ms. Every step reads 22 ms, warm-up included.
 */
START_TEST(test_step_time_gpu_bound_throttled)
{
	char *path = write_timed_loop("gpu-bound-queue.db", 40, 1500 * US, 22000 * US, 10);
	struct loaded l;
	int64_t med, p10, p90;

	load(&l, path, NULL);
	ck_assert_int_eq(l.s.method, CS_STEPS_PERIOD);
	ck_assert_int_eq(l.s.n, 40);
	ck_assert_int_eq(l.s.timing, CS_STEP_TIME_GPU);
	ck_assert_int_eq(l.s.v[0].end - l.s.v[0].start, 1500 * US);
	for (int i = 0; i < l.s.n; i++)
		ck_assert_int_eq(cs_step_time(&l.s, i), 22000 * US);
	cs_steps_duration_stats(&l.s, &med, &p10, &p90);
	ck_assert_int_eq(med, 22000 * US);
	ck_assert_int_eq(p10, 22000 * US);
	unload(&l);
	free(path);
}
END_TEST

/*
 * Host-bound: the host takes 5 ms to launch a step whose GPU work takes 2 ms; the GPU starts each
 * kernel 10 us after its launch. The step time stays the host span.
 */
START_TEST(test_step_time_host_bound)
{
	char *path = write_timed_loop("host-bound.db", 30, 5000 * US, 2000 * US, 0);
	struct loaded l;
	int64_t med, p10, p90;
	double busy;

	load(&l, path, NULL);
	ck_assert_int_eq(l.s.method, CS_STEPS_PERIOD);
	ck_assert_int_eq(l.s.n, 30);
	ck_assert_int_eq(l.s.timing, CS_STEP_TIME_HOST);
	ck_assert_str_eq(cs_step_timing_name(l.s.timing), "host");
	for (int i = 0; i + 1 < l.s.n; i++)
		ck_assert_int_eq(cs_step_time(&l.s, i), 5000 * US);
	cs_steps_duration_stats(&l.s, &med, &p10, &p90);
	ck_assert_int_eq(med, 5000 * US);
	ck_assert_int_eq(p90, 5000 * US);
	busy = cs_steps_busy_share(&l.s);
	ck_assert_msg(busy > 0.39 && busy < 0.41, "busy %f", busy);
	unload(&l);
	free(path);
}
END_TEST

/*
 * Nearly balanced: 5 ms host spans and 4.9 ms of GPU work per step. The GPU keeps up, a fraction
 * of a step behind the launches, so the host's time is kept (the GPU's period is the same here).
 */
START_TEST(test_step_time_balanced)
{
	char *path = write_timed_loop("balanced.db", 30, 5000 * US, 4900 * US, 0);
	struct loaded l;

	load(&l, path, NULL);
	ck_assert_int_eq(l.s.method, CS_STEPS_PERIOD);
	ck_assert_int_eq(l.s.timing, CS_STEP_TIME_HOST);
	ck_assert_int_eq(cs_steps_median(&l.s, NULL, 0), 5000 * US);
	unload(&l);
	free(path);
}
END_TEST

/* A trace without events, and kernels whose timestamps are partly unknown: no crash, one step. */
START_TEST(test_empty_and_unknown_times)
{
	char *empty = tu_path(tmp_dir, "empty.db"), *odd = tu_path(tmp_dir, "unknown-times.db");
	cs_trace_writer *w = open_writer(empty);
	struct loaded l;
	cs_kernel k;
	int64_t a;

	finish_writer(w);
	load(&l, empty, NULL);
	ck_assert_int_eq(l.a.nkernels, 0);
	ck_assert_int_eq(l.s.method, CS_STEPS_NONE);
	ck_assert_int_eq(l.s.n, 1);
	ck_assert_int_eq(l.s.v[0].kernels, 0);
	ck_assert_int_eq(l.s.v[0].gpu_busy, 0);
	ck_assert_int_eq(cs_analysis_gpu_busy(&l.a, 0, 0, 1000), 0);
	ck_assert_int_eq(cs_analysis_kernel_overlapping(&l.a, 0), 0);
	unload(&l);

	w = open_writer(odd);
	a = cs_writer_intern(w, "a");
	k = kernel(PID, a, CS_TS_UNKNOWN, CS_TS_UNKNOWN, CS_TS_UNKNOWN);
	ck_assert_int_eq(cs_writer_add_kernel(w, &k), 0);
	k = kernel(PID, a, CS_TS_UNKNOWN, 10 * US, CS_TS_UNKNOWN);
	ck_assert_int_eq(cs_writer_add_kernel(w, &k), 0);
	k = kernel(PID, a, 5 * US, 20 * US, 30 * US);
	ck_assert_int_eq(cs_writer_add_kernel(w, &k), 0);
	finish_writer(w);
	load(&l, odd, NULL);
	ck_assert_int_eq(l.a.nkernels, 3);
	ck_assert_int_eq(l.a.kernels[0].start, CS_TS_UNKNOWN);
	ck_assert_int_eq(l.s.method, CS_STEPS_NONE);
	ck_assert_int_eq(l.s.n, 1);
	ck_assert_int_eq(cs_analysis_gpu_busy(&l.a, PID, 0, 100 * US), 10 * US);
	unload(&l);
	free(empty);
	free(odd);
}
END_TEST

/* ---- NVTX and profiler ranges ---- */

static void add_nvtx(cs_trace_writer *w, const char *text, int64_t start, int64_t end, int depth,
		     uint32_t tid)
{
	cs_nvtx n = tu_nvtx(PID, cs_writer_intern(w, text), start, end);

	n.tid = n.end_tid = tid;
	n.depth = depth;
	ck_assert_int_eq(cs_writer_add_nvtx(w, &n), 0);
}

static void add_api(cs_trace_writer *w, const char *name, int64_t start)
{
	cs_api a;

	memset(&a, 0, sizeof(a));
	a.start = start;
	a.end = start + US;
	a.pid = PID;
	a.tid = PID;
	a.api_kind = CS_API_RUNTIME;
	a.name_id = cs_writer_intern(w, name);
	a.stack_id = CS_ID_NONE;
	ck_assert_int_eq(cs_writer_add_api(w, &a), 0);
}

/* 10 "step<i>" ranges with a nested range matching the pattern too, on thread 1; a thread 2 with
 * 3 matching ranges; cudaProfilerStart/Stop around steps 2-4, 5-6 and 7. */
static char *write_ranges(const char *file, int profiler_pairs)
{
	char *path = tu_path(tmp_dir, file);
	cs_trace_writer *w = open_writer(path);
	int64_t a = cs_writer_intern(w, "a"), b = cs_writer_intern(w, "b");

	for (int i = 0; i < 10; i++) {
		int64_t t0 = 1000 * US + i * 100 * US;
		char text[16];
		cs_kernel k;

		snprintf(text, sizeof(text), "step%d", i);
		add_nvtx(w, text, t0, t0 + 90 * US, 0, 1);
		add_nvtx(w, "step-inner", t0 + 10 * US, t0 + 20 * US, 1, 1);
		k = kernel(PID, a, t0 + 10 * US, t0 + 12 * US, t0 + 30 * US);
		ck_assert_int_eq(cs_writer_add_kernel(w, &k), 0);
		k = kernel(PID, b, t0 + 20 * US, t0 + 30 * US, t0 + 50 * US);
		ck_assert_int_eq(cs_writer_add_kernel(w, &k), 0);
	}
	for (int i = 0; i < 3; i++)
		add_nvtx(w, "step-other-thread", 5000 * US + i * 10 * US,
			 5000 * US + i * 10 * US + 5 * US, 0, 2);
	if (profiler_pairs >= 1) {
		add_api(w, "cudaProfilerStart_v4000", 1200 * US);
		add_api(w, "cudaProfilerStop_v4000", 1490 * US);
	}
	if (profiler_pairs >= 2) {
		add_api(w, "cuProfilerStart", 1500 * US);
		add_api(w, "cuProfilerStop", 1690 * US);
		add_api(w, "cudaProfilerStart_v4000", 1700 * US);
		add_api(w, "cudaProfilerStop_v4000", 1790 * US);
	}
	finish_writer(w);
	return path;
}

START_TEST(test_nvtx_outermost_one_thread)
{
	char *path = write_ranges("ranges.db", 0);
	cs_step_opts o = {"step*", -1, 0, 0};
	struct loaded l;

	load(&l, path, &o);
	ck_assert_int_eq(l.s.method, CS_STEPS_NVTX);
	ck_assert_int_eq(l.s.n, 10);
	for (int i = 0; i < 10; i++) {
		ck_assert_int_eq(l.s.v[i].start, 1000 * US + i * 100 * US);
		ck_assert_int_eq(l.s.v[i].end, 1090 * US + i * 100 * US);
		ck_assert_int_eq(l.s.v[i].kernels, 2);
		ck_assert_int_eq(l.s.v[i].index, i);
		/* GPU busy: [12, 50) us of the step */
		ck_assert_int_eq(l.s.v[i].gpu_busy, 38 * US);
		ck_assert_int_eq(l.s.v[i].gpu_start, l.s.v[i].start + 12 * US);
		ck_assert_int_eq(l.s.v[i].gpu_end, l.s.v[i].start + 50 * US);
	}
	ck_assert_int_eq(l.s.warmup, 0); /* alike steps: none is warm-up */
	ck_assert_msg(strstr(l.s.detail, "step*") != NULL, "%s", l.s.detail);
	unload(&l);
	free(path);
}
END_TEST

START_TEST(test_profiler_pairs)
{
	char *one = write_ranges("profiler1.db", 1), *three = write_ranges("profiler3.db", 2);
	struct loaded l;

	/* one capture range is not a loop of steps */
	load(&l, one, NULL);
	ck_assert_int_ne(l.s.method, CS_STEPS_PROFILER);
	unload(&l);

	load(&l, three, NULL);
	ck_assert_int_eq(l.s.method, CS_STEPS_PROFILER);
	ck_assert_int_eq(l.s.n, 3);
	ck_assert_int_eq(l.s.v[0].start, 1200 * US);
	ck_assert_int_eq(l.s.v[0].end, 1491 * US);
	ck_assert_int_eq(l.s.v[1].start, 1500 * US);
	ck_assert_int_eq(l.s.v[2].end, 1791 * US);
	ck_assert_int_eq(l.s.v[0].kernels, 6); /* steps 2, 3, 4 */
	ck_assert_int_eq(l.s.warmup, 0);       /* alike ranges: none is warm-up */
	unload(&l);
	free(one);
	free(three);
}
END_TEST

/* ---- warm-up, lookups, statistics ---- */

/* The default warm-up of steps whose host spans are us[0..n) microseconds. */
static int32_t warmup_of(const int64_t *us, int32_t n)
{
	cs_step v[64];
	cs_steps s;
	int64_t t = 0;

	memset(&s, 0, sizeof(s));
	memset(v, 0, sizeof(v));
	for (int32_t i = 0; i < n; i++) {
		v[i].start = t;
		v[i].end = t += us[i] * US;
		v[i].index = i;
	}
	s.v = v;
	s.n = n;
	return cs_steps_default_warmup(&s);
}

/*
 * A first step whose span passes INT64_MAX (times from a crafted trace): it is the one outlier, so
 * warm-up; its span wrapped to a negative one before (steps.c read end - start unchecked).
 */
START_TEST(test_warmup_extreme_span)
{
	cs_step v[9];
	cs_steps s;

	memset(&s, 0, sizeof(s));
	memset(v, 0, sizeof(v));
	v[0].start = -(INT64_C(3) << 61);
	v[0].end = INT64_C(3) << 61;
	for (int32_t i = 1; i < 9; i++) {
		v[i].start = v[i - 1].end;
		v[i].end = v[i].start + 10000 * US;
		v[i].index = i;
	}
	s.v = v;
	s.n = 9;
	ck_assert_int_eq(cs_steps_default_warmup(&s), 1);
}
END_TEST

/*
 * Part steps at the start: torch.compile runs the model in pieces before its whole graph is
 * compiled (samples/savings/compile_item.py: steps of 63 kernels, 1.3 ms, against 123 and 3.0 ms,
 * between compilation steps of seconds). Fewer kernels than most steps launch makes them warm-up
 * however short; more kernels (a log line) or kernel counts that vary from step to step do not.
 */
START_TEST(test_warmup_part_steps)
{
	cs_step v[40];
	cs_steps s;
	int64_t t = 0;

	memset(&s, 0, sizeof(s));
	memset(v, 0, sizeof(v));
	for (int32_t i = 0; i < 40; i++) {
		int64_t us = 3000 + (i * 37 % 7 - 3) * 20, k = 123;

		if (i == 0 || i == 5)
			us = 2000000, k = i ? 3126 : 121; /* compilation */
		else if (i < 5)
			us = 1300, k = 63; /* the compiled pieces */
		else if (i == 6)
			us = 32800, k = 237;
		v[i].start = t;
		v[i].end = t += us * US;
		v[i].kernels = k;
		v[i].index = i;
	}
	s.v = v;
	s.n = 40;
	ck_assert_int_eq(cs_steps_default_warmup(&s), 7);
	/* by their spans alone, only the first step would be (2 of 6 long ones by step 5) */
	for (int32_t i = 1; i < 5; i++)
		v[i].kernels = 123;
	ck_assert_int_eq(cs_steps_default_warmup(&s), 1);
	/* a step that launches more kernels at a normal span stays steady */
	for (int32_t i = 1; i < 5; i++)
		v[i].end = v[i].start + 3000 * US, v[i].kernels = 124;
	ck_assert_int_eq(cs_steps_default_warmup(&s), 1);
	/* counts that vary from step to step say nothing: most steps must launch one count */
	for (int32_t i = 0; i < 40; i++)
		v[i].kernels = 100 + i;
	v[1].kernels = v[2].kernels = 1;
	ck_assert_int_eq(cs_steps_default_warmup(&s), 1);
}
END_TEST

START_TEST(test_warmup_defaults)
{
	int64_t d[40];
	char *path = sample_path("train_small.db");
	cs_step_opts o = {NULL, 5, 0, 0};
	struct loaded l;

	/* steps of 10 ms +- 0.3 ms */
	for (int i = 0; i < 40; i++)
		d[i] = 10000 + (i * 37 % 7 - 3) * 100;
	ck_assert_int_eq(warmup_of(d, 2), 0); /* too few to tell */
	ck_assert_int_eq(warmup_of(d, 40), 0);
	/* compilation and autotuning in the first 3 steps (seconds, then 60 ms) */
	d[0] = 2000000;
	d[1] = 900000;
	d[2] = 60000;
	ck_assert_int_eq(warmup_of(d, 40), 3);
	/* a recompile with a normal step before it: still warm-up */
	d[1] = 10100;
	ck_assert_int_eq(warmup_of(d, 40), 3);
	/* a second step of 12 ms, far over 10 +- 0.3 ms: warm-up up to it */
	d[0] = d[2] = 10000;
	d[1] = 12000;
	ck_assert_int_eq(warmup_of(d, 40), 2);
	/* one slow step in the steady state (a checkpoint at step 15) is not warm-up */
	d[1] = 10000;
	d[15] = 500000;
	ck_assert_int_eq(warmup_of(d, 40), 0);
	d[0] = 800000;
	ck_assert_int_eq(warmup_of(d, 40), 1);
	/* identical steps: none */
	for (int i = 0; i < 40; i++)
		d[i] = 10000;
	ck_assert_int_eq(warmup_of(d, 40), 0);
	load(&l, path, &o);
	ck_assert_int_eq(l.s.warmup, 5);
	ck_assert_int_eq(cs_steps_steady(&l.s), l.s.n - 5);
	for (int i = 0; i < l.s.n; i++)
		ck_assert_int_eq(l.s.v[i].warmup, i < 5);
	unload(&l);
	o.warmup = 1000; /* more than there are: one steady step is kept */
	load(&l, path, &o);
	ck_assert_int_eq(l.s.warmup, l.s.n - 1);
	unload(&l);
	o.warmup = 0;
	load(&l, path, &o);
	ck_assert_int_eq(l.s.warmup, 0);
	unload(&l);
	free(path);
}
END_TEST

START_TEST(test_steps_find)
{
	cs_step v[3];
	cs_steps s;

	memset(v, 0, sizeof(v));
	memset(&s, 0, sizeof(s));
	v[0].start = 10, v[0].end = 20;
	v[1].start = 20, v[1].end = 30;
	v[2].start = 35, v[2].end = 40;
	s.v = v;
	s.n = 3;
	ck_assert_int_eq(cs_steps_find(&s, 5), -1);
	ck_assert_int_eq(cs_steps_find(&s, 10), 0);
	ck_assert_int_eq(cs_steps_find(&s, 19), 0);
	ck_assert_int_eq(cs_steps_find(&s, 20), 1);
	ck_assert_int_eq(cs_steps_find(&s, 32), -1);
	ck_assert_int_eq(cs_steps_find(&s, 39), 2);
	ck_assert_int_eq(cs_steps_find(&s, 40), -1);
	ck_assert_int_eq(cs_steps_find(&s, CS_TS_UNKNOWN), -1);
	ck_assert_int_eq(cs_steps_find_launch(&s, 12, 50), 0);
	ck_assert_int_eq(cs_steps_find_launch(&s, CS_TS_UNKNOWN, 36), 2);
	s.n = 0;
	ck_assert_int_eq(cs_steps_find(&s, 15), -1);
}
END_TEST

START_TEST(test_duration_stats)
{
	cs_step v[12];
	cs_steps s;
	int64_t med, p10, p90, per_step[12];

	memset(v, 0, sizeof(v));
	memset(&s, 0, sizeof(s));
	/* two warm-up steps of 1000 and 900, then 10..100 in a shuffled order */
	for (int i = 0; i < 12; i++) {
		int64_t d = i == 0 ? 1000 : i == 1 ? 900 : ((i * 7) % 10 + 1) * 10;

		v[i].start = i * 10000;
		v[i].end = v[i].start + d;
		v[i].warmup = i < 2;
		per_step[i] = i % 2 ? 0 : d;
	}
	s.v = v;
	s.n = 12;
	s.warmup = 2;
	cs_steps_duration_stats(&s, &med, &p10, &p90);
	ck_assert_int_eq(med, 55);
	ck_assert_int_eq(p10, 19);
	ck_assert_int_eq(p90, 91);
	ck_assert_int_eq(cs_steps_median(&s, NULL, 0), 55);
	/* the even steady steps only: 2, 4, ..., 10 -> values (i * 7 % 10 + 1) * 10 */
	ck_assert_int_eq(cs_steps_median(&s, per_step, 1), 50);
	/* all warm-up: the statistics use every step */
	s.warmup = 12;
	for (int i = 0; i < 12; i++)
		v[i].warmup = 1;
	cs_steps_duration_stats(&s, &med, &p10, &p90);
	ck_assert_int_eq(med, 65);
	s.n = 0;
	cs_steps_duration_stats(&s, &med, &p10, &p90);
	ck_assert_int_eq(med, 0);
	ck_assert_int_eq(p90, 0);
}
END_TEST

static int match_named_a(const cs_a_kernel *k, void *arg)
{
	return k->name_id == *(int64_t *)arg;
}

START_TEST(test_steps_kernel_time)
{
	char *path = write_ranges("kernel-time.db", 0);
	cs_step_opts o = {"step*", -1, 0, 0};
	struct loaded l;
	int64_t out[10], a_id;

	load(&l, path, &o);
	cs_steps_kernel_time(&l.a, &l.s, NULL, NULL, out);
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(out[i], (18 + 20) * US);
	a_id = l.a.kernels[0].name_id;
	cs_steps_kernel_time(&l.a, &l.s, match_named_a, &a_id, out);
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(out[i], 18 * US);
	ck_assert_int_eq(cs_steps_median(&l.s, out, 0), 18 * US);
	ck_assert_str_eq(cs_step_method_name(l.s.method), "nvtx");
	ck_assert_str_eq(cs_step_method_name(CS_STEPS_PERIOD), "period");
	unload(&l);
	free(path);
}
END_TEST

static Suite *steps_suite(void)
{
	Suite *s = suite_create("steps");
	TCase *tc = tcase_create("steps");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_trace_scan);
	tcase_add_test(tc, test_load_train_small);
	tcase_add_test(tc, test_windows_without_steps);
	tcase_add_test(tc, test_load_overlap_and_busy);
	tcase_add_test(tc, test_load_large_two_threads);
	tcase_add_test(tc, test_train_small_nvtx_and_period);
	tcase_add_test(tc, test_train_small_without_nvtx);
	tcase_add_test(tc, test_rule_sample_traces);
	tcase_add_test(tc, test_counts_no_structure);
	tcase_add_test(tc, test_nvtx_pattern_no_match);
	tcase_add_test(tc, test_period_warmup_and_setup);
	tcase_add_test(tc, test_period_ring_cut_drops_first_step);
	tcase_add_test(tc, test_period_autotune_in_first_step);
	tcase_add_test(tc, test_period_gradient_accumulation);
	tcase_add_test(tc, test_period_accumulation_fused_optimizer);
	tcase_add_test(tc, test_period_occasional_kernel);
	tcase_add_test(tc, test_period_variable_length);
	tcase_add_test(tc, test_period_none);
	tcase_add_test(tc, test_period_copy_kernels_copy);
	tcase_add_test(tc, test_period_inner_loop_between_copies);
	tcase_add_test(tc, test_period_one_kernel);
	tcase_add_test(tc, test_step_time_gpu_bound);
	tcase_add_test(tc, test_step_time_gpu_bound_throttled);
	tcase_add_test(tc, test_step_time_host_bound);
	tcase_add_test(tc, test_step_time_balanced);
	tcase_add_test(tc, test_empty_and_unknown_times);
	tcase_add_test(tc, test_nvtx_outermost_one_thread);
	tcase_add_test(tc, test_profiler_pairs);
	tcase_add_test(tc, test_warmup_defaults);
	tcase_add_test(tc, test_warmup_part_steps);
	tcase_add_test(tc, test_warmup_extreme_span);
	tcase_add_test(tc, test_steps_find);
	tcase_add_test(tc, test_duration_stats);
	tcase_add_test(tc, test_steps_kernel_time);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	tmp_dir = tu_tmpdir();
	if (!tmp_dir) {
		fprintf(stderr, "test_steps: cannot make a temporary directory\n");
		return 1;
	}
	sr = srunner_create(steps_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
