/*
 * test_replay.c - the replay of a run's dependencies (src/analyzers/facts/deps.c,
 * docs/replay.md).
 *
 * First: replaying the unedited model of every committed trace gives its recorded step times
 * back (the median of the steady steps within 3%, the p90 within 5%). Then edits on those traces
 * move the step times the way the fix would: dropping a recorded wait never makes a step slower,
 * making GPU work longer slows a GPU-bound run and not a host-bound one.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "cuscope/analyze.h"
#include "cuscope/launch_cost.h"
#include "cuscope/sort.h"
#include "deps.h"
#include "testutil.h"

struct loaded {
	cs_trace *t;
	cs_analysis a;
	cs_steps s;
	struct fact_deps *d;
};

static int load(struct loaded *l, const char *path)
{
	cs_error err = {0, ""};

	memset(l, 0, sizeof(*l));
	if (cs_trace_open(path, &l->t, &err) < 0)
		return -1;
	ck_assert_int_eq(cs_analysis_load(l->t, &l->a, &err), 0);
	if (cs_steps_detect(&l->a, NULL, &l->s, &err) < 0) {
		cs_analysis_free(&l->a);
		cs_trace_close(l->t);
		return -1;
	}
	ck_assert_int_eq(fact_deps_build(&l->a, &l->s, 0, &l->d), 0);
	return 0;
}

static void unload(struct loaded *l)
{
	fact_deps_free(l->d);
	cs_steps_free(&l->s);
	cs_analysis_free(&l->a);
	cs_trace_close(l->t);
}

/* Median and p90 of the steady steps of v (as cs_steps_duration_stats() takes them). */
static void stats(const cs_steps *s, const int64_t *v, int64_t *med, int64_t *p90)
{
	int32_t n = cs_steps_steady(s) > 0 ? cs_steps_steady(s) : s->n, from = s->n - n;
	int64_t *x = malloc((size_t)(n > 0 ? n : 1) * sizeof(*x));

	ck_assert_ptr_nonnull(x);
	memcpy(x, v + from, (size_t)n * sizeof(*x));
	cs_sort_i64(x, (size_t)n);
	*med = x[(n - 1) / 2];
	*p90 = x[(int32_t)((n - 1) * 0.9)];
	free(x);
}

static double rel(int64_t x, int64_t ref)
{
	return ref > 0 ? (double)(x > ref ? x - ref : ref - x) / (double)ref : 0;
}

/* Every .db of dir: replayed unedited, its step times as recorded. Returns the traces checked. */
static int check_dir(const char *rel_dir)
{
	char *dir = tu_source_file(rel_dir);
	DIR *dp = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!dp) {
		free(dir);
		return 0;
	}
	while ((de = readdir(dp))) {
		size_t len = strlen(de->d_name);
		char path[4096];
		struct loaded l;
		int64_t *rec, *rep, m0, p0, m1, p1;

		if (len < 4 || strcmp(de->d_name + len - 3, ".db"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (load(&l, path))
			continue;
		if (!l.d || l.s.n < 2) {
			unload(&l);
			continue;
		}
		rec = malloc((size_t)l.s.n * sizeof(*rec));
		rep = malloc((size_t)l.s.n * sizeof(*rep));
		ck_assert(rec && rep);
		for (int32_t i = 0; i < l.s.n; i++)
			rec[i] = cs_step_time(&l.s, i);
		ck_assert_int_eq(fact_deps_replay(l.d, NULL, rep, NULL), 0);
		stats(&l.s, rec, &m0, &p0);
		stats(&l.s, rep, &m1, &p1);
		ck_assert_msg(rel(m1, m0) <= 0.03 && rel(p1, p0) <= 0.05,
			      "%s: replayed median %lld p90 %lld, recorded %lld %lld", path,
			      (long long)m1, (long long)p1, (long long)m0, (long long)p0);
		free(rec);
		free(rep);
		unload(&l);
		n++;
	}
	closedir(dp);
	free(dir);
	return n;
}

START_TEST(test_unedited_replay_is_the_recording)
{
	int n = check_dir("samples/rules/traces") + check_dir("tests/data/corpus") +
		check_dir("samples/traces") + check_dir("tests/data/savings");

	ck_assert_int_gt(n, 0);
}
END_TEST

static char *trace_path(const char *name)
{
	char rel_path[256];

	snprintf(rel_path, sizeof(rel_path), "samples/rules/traces/%s", name);
	return tu_source_file(rel_path);
}

/* The replay is monotone: without any host wait of the steady steps no run gets slower, and it
 * gets faster where the waits held the host. */
START_TEST(test_no_wait_never_slower)
{
	static const char *const names[] = {"d2h-sync-bad.db", "sync-call-bad.db",
					    "pageable-memcpy-negative_gpu_bound.db",
					    "allocator-churn-bad_no_caching.db"};
	int faster = 0;

	for (size_t c = 0; c < sizeof(names) / sizeof(names[0]); c++) {
		char *path = trace_path(names[c]);
		struct loaded l;
		cs_edit *e = NULL;
		int64_t base, ed;

		if (!tu_file_exists(path) || load(&l, path)) {
			free(path);
			continue;
		}
		ck_assert_ptr_nonnull(l.d);
		for (int64_t i = 0; i < l.a.nsyncs; i++)
			if (l.a.syncs[i].pid == l.s.pid && l.a.syncs[i].host_wait &&
			    cs_steps_find(&l.s, l.a.syncs[i].start) >= l.s.warmup)
				ck_assert_int_eq(
					cs_edit_add(&e, CS_EDIT_NO_WAIT, CS_EDIT_SYNC, i, 0), 0);
		ck_assert_ptr_nonnull(e);
		ck_assert_int_eq(fact_deps_replay(l.d, NULL, NULL, &base), 0);
		ck_assert_int_eq(fact_deps_replay(l.d, e, NULL, &ed), 0);
		ck_assert_int_gt(base, 0);
		ck_assert_msg(ed <= base, "%s: %lld -> %lld", names[c], (long long)base,
			      (long long)ed);
		faster += ed < base - base / 100;
		cs_edit_free(e);
		unload(&l);
		free(path);
	}
	ck_assert_int_gt(faster, 0);
}
END_TEST

/*
 * A JAX loop that reads its loss every step (tests/data/savings/jax_float_loss.db): XLA's transfer
 * thread launches the copy and a host function, and the Python thread that launched the step's
 * CUDA graph blocks, in no CUDA call, until the host function has run. The wait belongs to the
 * launching thread; without it the host dispatches ahead and the GPU sets the pace (busy 46% of
 * the recorded step): the replayed span shrinks by far, and never below the GPU's own work.
 */
START_TEST(test_host_func_wait_on_woken_thread)
{
	char *path = tu_source_file("tests/data/savings/jax_float_loss.db");
	struct loaded l;
	cs_edit *e = NULL;
	int64_t base, ed, busy = 0, t0, t1;
	int32_t steps, on_launcher = 0, waits = 0;
	uint32_t launcher = 0;

	if (!tu_file_exists(path) || load(&l, path)) {
		free(path);
		return;
	}
	ck_assert_ptr_nonnull(l.d);
	t0 = l.s.v[l.s.warmup].start;
	t1 = l.s.v[l.s.n - 1].start;
	for (int64_t i = 0; i < l.a.nkernels; i++) {
		const cs_a_kernel *k = &l.a.kernels[i];

		if (k->pid != l.s.pid || k->start < t0 || k->start >= t1)
			continue;
		launcher = k->launch_tid;
		busy += k->end - k->start;
	}
	for (int64_t i = 0; i < l.a.nsyncs; i++) {
		const cs_a_sync *y = &l.a.syncs[i];

		if (y->pid != l.s.pid || y->type != CS_SYNC_HOST_FUNC || y->start < t0 ||
		    y->start >= t1)
			continue;
		waits++;
		on_launcher += y->tid == launcher;
		ck_assert_int_eq(cs_edit_add(&e, CS_EDIT_NO_WAIT, CS_EDIT_SYNC, i, 0), 0);
	}
	ck_assert_int_ge(waits, 20);
	ck_assert_int_eq(on_launcher, waits);
	ck_assert_int_eq(fact_deps_replay(l.d, NULL, NULL, &base), 0);
	ck_assert_int_eq(fact_deps_replay(l.d, e, NULL, &ed), 0);
	steps = fact_deps_span_steps(l.d);
	ck_assert_int_gt(steps, 0);
	/* the GPU's work per step, over the steady steps but the last */
	busy /= l.s.n - 1 - l.s.warmup;
	ck_assert_msg(ed < base - base * 2 / 5, "%lld -> %lld", (long long)base, (long long)ed);
	ck_assert_msg(ed / steps >= busy - busy / 50, "%lld a step, the GPU's work %lld",
		      (long long)(ed / steps), (long long)busy);
	cs_edit_free(e);
	unload(&l);
	free(path);
}
END_TEST

/*
 * Replayed without the profiler in a copy of the trace, with META key set to plain_json (NULL:
 * without the key) and then to json (a format given the process id): the base of the replay in
 * *plain and *cut.
 */
static void replay_with_meta(const char *src, const char *key, const char *plain_json,
			     const char *json, int64_t *plain, int64_t *cut, int64_t *calls)
{
	char *dir = tu_tmpdir(), *path = tu_path(dir, "t.db"), *data;
	size_t len = 0;
	struct fact_deps_stats st;
	struct loaded l;
	sqlite3 *db;
	sqlite3_stmt *q;
	char value[512];
	unsigned pid = 0;

	data = tu_read_file(src, &len);
	ck_assert_ptr_nonnull(data);
	ck_assert_int_eq(tu_write_file(path, data, len), 0);
	free(data);
	for (int pass = 0; pass < 2; pass++) {
		struct fact_deps *d = NULL;
		const char *v = pass ? json : plain_json;

		if (v)
			snprintf(value, sizeof(value), v, pid);
		ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
		ck_assert_int_eq(sqlite3_prepare_v2(db,
						    v ? "INSERT OR REPLACE INTO META VALUES (?, ?)"
						      : "DELETE FROM META WHERE key = ?",
						    -1, &q, NULL),
				 SQLITE_OK);
		sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
		if (v)
			sqlite3_bind_text(q, 2, value, -1, SQLITE_STATIC);
		ck_assert_int_eq(sqlite3_step(q), SQLITE_DONE);
		sqlite3_finalize(q);
		sqlite3_close(db);
		ck_assert_int_eq(load(&l, path), 0);
		pid = (unsigned)l.s.pid; /* for json, which the second pass writes */
		ck_assert_int_eq(fact_deps_build(&l.a, &l.s, FACT_DEPS_UNPROFILED, &d), 0);
		ck_assert_ptr_nonnull(d);
		ck_assert_int_eq(fact_deps_replay(d, NULL, NULL, pass ? cut : plain), 0);
		fact_deps_stats(d, &st);
		*calls = st.calls;
		fact_deps_free(d);
		unload(&l);
	}
	free(path);
	free(dir);
}

/* Replayed with and without the recorder's time after each call (META call_tails). */
static void replay_with_tails(const char *src, const char *tails_json, int64_t *plain, int64_t *cut,
			      int64_t *calls)
{
	replay_with_meta(src, CS_META_CALL_TAILS, NULL, tails_json, plain, cut, calls);
}

START_TEST(test_call_tails_taken_out)
{
	char *path = tu_source_file("tests/data/savings/d2h_item_host.db");
	int64_t plain = 0, cut = 0, calls = 0;

	if (!tu_file_exists(path)) {
		free(path);
		return;
	}
	replay_with_tails(
		path,
		"{\"%u\":{\"launch\":{\"calls\":1000,\"ns\":2000000},"
		"\"stack\":{\"calls\":10,\"ns\":20000},\"other\":{\"calls\":10,\"ns\":20000}}}",
		&plain, &cut, &calls);
	ck_assert_int_gt(plain, 0);
	ck_assert_msg(cut < plain, "%lld -> %lld", (long long)plain, (long long)cut);
	/* never more than 2 us a call of the whole model */
	ck_assert_int_le(plain - cut, 2000 * calls);
	/* the launch-bound loop's calls are nearly all in its span: most of it comes out */
	ck_assert_msg(plain - cut > 2000 * calls / 4, "%lld of %lld calls x 2 us",
		      (long long)(plain - cut), (long long)calls);
	free(path);
}
END_TEST

/* The recorder's time after a wait counts as a wait's (its stack is captured), whatever other
 * records of the call end with it: a C loop whose synchronous copy of a scalar drains the GPU
 * every iteration (c_memcpy_scalar: a few microseconds of host time after each copy before the
 * next launch) replays faster when each call with a stack is followed by 10 us of recording (by
 * what of that host time there is, a few microseconds an iteration), and by far less when it is
 * the other calls that are. */
START_TEST(test_wait_tail_is_a_stack_tail)
{
	char *path = tu_source_file("tests/data/savings/c_memcpy_scalar.db");
	int64_t plain = 0, stack = 0, other = 0, calls = 0;

	if (!tu_file_exists(path)) {
		free(path);
		return;
	}
	replay_with_tails(path,
			  "{\"%u\":{\"launch\":{\"calls\":1,\"ns\":0},"
			  "\"stack\":{\"calls\":1,\"ns\":10000},\"other\":{\"calls\":1,\"ns\":0}}}",
			  &plain, &stack, &calls);
	replay_with_tails(path,
			  "{\"%u\":{\"launch\":{\"calls\":1,\"ns\":0},"
			  "\"stack\":{\"calls\":1,\"ns\":0},\"other\":{\"calls\":1,\"ns\":10000}}}",
			  &plain, &other, &calls);
	ck_assert_int_gt(plain, 0);
	ck_assert_msg(plain - stack >= 25 * 2000 && plain - stack <= 34 * 10000,
		      "%lld -> %lld: %lld less", (long long)plain, (long long)stack,
		      (long long)(plain - stack));
	ck_assert_msg(plain - other < (plain - stack) / 4, "%lld less after the other calls",
		      (long long)(plain - other));
	free(path);
}
END_TEST

/*
 * What CUPTI adds to a blocking call comes out of its return after the wait (META launch_cost's
 * waits): c_memcpy_scalar's 34 synchronous copies of a scalar each drain the GPU, so 4 us less
 * after each copy replays about 34 x 4 us faster; the same for synchronize calls, of which it has
 * none in its iterations, changes next to nothing.
 */
START_TEST(test_wait_cost_taken_out)
{
	static const char plain[] = "{\"version\":2,\"ns_per_launch\":0}";
	static const char copy[] = "{\"version\":2,\"ns_per_launch\":0,\"waits\":{\"copy\":{"
				   "\"added_ns\":4000},\"sync\":{\"added_ns\":0}}}";
	static const char sync[] = "{\"version\":2,\"ns_per_launch\":0,\"waits\":{\"copy\":{"
				   "\"added_ns\":0},\"sync\":{\"added_ns\":4000}}}";
	char *path = tu_source_file("tests/data/savings/c_memcpy_scalar.db");
	int64_t base = 0, fast = 0, other = 0, calls = 0;

	if (!tu_file_exists(path)) {
		free(path);
		return;
	}
	replay_with_meta(path, CS_META_LAUNCH_COST, plain, copy, &base, &fast, &calls);
	replay_with_meta(path, CS_META_LAUNCH_COST, plain, sync, &base, &other, &calls);
	ck_assert_int_gt(base, 0);
	ck_assert_msg(base - fast >= 25 * 3000 && base - fast <= 34 * 4000, "%lld -> %lld",
		      (long long)base, (long long)fast);
	ck_assert_msg(base - other < (base - fast) / 4, "%lld less after the synchronizes",
		      (long long)(base - other));
	free(path);
}
END_TEST

/* GPU time doubled: a GPU-bound run's steps get about twice as long (a fed queue), a host-bound
 * run's (the launch-starved loop) change little. */
START_TEST(test_gpu_time_matters_where_gpu_bound)
{
	static const struct {
		const char *name;
		double lo, hi; /* the edited span over the recorded */
	} cases[] = {
		{"launch-starvation-negative_gpu_bound.db", 1.7, 2.1},
		{"launch-starvation-bad.db", 1.0, 1.2},
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		char *path = trace_path(cases[c].name);
		struct loaded l;
		cs_edit *e = NULL;
		int64_t base, ed;
		double r;

		if (!tu_file_exists(path) || load(&l, path)) {
			free(path);
			continue;
		}
		for (int64_t i = 0; i < l.a.nkernels; i++)
			if (l.a.kernels[i].pid == l.s.pid)
				ck_assert_int_eq(
					cs_edit_add(
						&e, CS_EDIT_GPU_TIME, CS_EDIT_KERNEL, i,
						2 * (l.a.kernels[i].end - l.a.kernels[i].start)),
					0);
		ck_assert_int_eq(fact_deps_replay(l.d, NULL, NULL, &base), 0);
		ck_assert_int_eq(fact_deps_replay(l.d, e, NULL, &ed), 0);
		r = (double)ed / (double)base;
		ck_assert_msg(r >= cases[c].lo && r <= cases[c].hi, "%s: %.3f", cases[c].name, r);
		cs_edit_free(e);
		unload(&l);
		free(path);
	}
}
END_TEST

/* The GPU's gap between queued kernels set (a CUDA graph's nodes: CS_EDIT_GPU_GAP): it moves a
 * GPU-bound run, whose kernels follow each other that way; a launch-starved run's kernels wait for
 * their launches, and it moves them little. */
START_TEST(test_gpu_gap_where_queued)
{
	static const struct {
		const char *name;
		/* the span with gaps of 0 and of 10 us over the recorded */
		double lo0, hi0, lo10, hi10;
	} cases[] = {
		{"launch-starvation-negative_gpu_bound.db", 0.95, 0.999, 1.01, 1.5},
		{"launch-starvation-bad.db", 0.99, 1.0, 1.0, 1.01},
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		char *path = trace_path(cases[c].name);
		struct loaded l;
		int64_t base, span[2];
		double r[2];

		if (!tu_file_exists(path) || load(&l, path)) {
			free(path);
			continue;
		}
		ck_assert_int_eq(fact_deps_replay(l.d, NULL, NULL, &base), 0);
		for (int g = 0; g < 2; g++) {
			cs_edit *e = NULL;

			for (int64_t i = 0; i < l.a.nkernels; i++)
				if (l.a.kernels[i].pid == l.s.pid)
					ck_assert_int_eq(cs_edit_add(&e, CS_EDIT_GPU_GAP,
								     CS_EDIT_KERNEL, i,
								     g ? 10000 : 0),
							 0);
			ck_assert_int_eq(fact_deps_replay(l.d, e, NULL, &span[g]), 0);
			r[g] = (double)span[g] / (double)base;
			cs_edit_free(e);
		}
		ck_assert_msg(r[0] >= cases[c].lo0 && r[0] <= cases[c].hi0 &&
				      r[1] >= cases[c].lo10 && r[1] <= cases[c].hi10,
			      "%s: %.3f with no gap, %.3f with 10 us", cases[c].name, r[0], r[1]);
		unload(&l);
		free(path);
	}
}
END_TEST

/*
 * A long run (tests/bench/gen_trace: 1.2 million events, about 460 steps): the model holds a window
 * of 200 steady steps in the middle, a small part of the run, and replays them as recorded.
 */
START_TEST(test_long_run_window)
{
	const char *gen = getenv("CUSCOPE_GEN_TRACE");
	char *dir, *path;
	struct loaded l;
	struct fact_deps_stats st;
	int64_t *rec, *rep, ops = 0, base = 0, ed = 0;
	cs_edit *e = NULL;

	if (!gen || !tu_file_exists(gen))
		return;
	dir = tu_tmpdir();
	path = tu_path(dir, "long.db");
	{
		const char *argv[] = {gen, "--events", "1200000", path, NULL};

		ck_assert_int_eq(tu_run(argv, NULL, NULL, NULL), 0);
	}
	ck_assert_int_eq(load(&l, path), 0);
	ck_assert_ptr_nonnull(l.d);
	ck_assert_int_gt(cs_steps_steady(&l.s), 400);
	ck_assert_int_eq(fact_deps_span_steps(l.d), 200);
	fact_deps_stats(l.d, &st);
	for (int64_t i = 0; i < l.a.nkernels; i++)
		ops += l.a.kernels[i].pid == l.s.pid;
	ck_assert_msg(st.ops < ops / 2, "%lld of %lld operations", (long long)st.ops,
		      (long long)ops);
	rec = malloc((size_t)l.s.n * sizeof(*rec));
	rep = malloc((size_t)l.s.n * sizeof(*rep));
	ck_assert(rec && rep);
	ck_assert_int_eq(fact_deps_replay(l.d, NULL, rep, &base), 0);
	for (int32_t i = 0; i < l.s.n; i++)
		ck_assert_msg(rep[i] == cs_step_time(&l.s, i), "step %d: %lld, recorded %lld", i,
			      (long long)rep[i], (long long)cs_step_time(&l.s, i));
	ck_assert_int_gt(base, 0);
	for (int64_t i = 0; i < l.a.nsyncs; i++)
		if (l.a.syncs[i].pid == l.s.pid && l.a.syncs[i].host_wait)
			ck_assert_int_eq(cs_edit_add(&e, CS_EDIT_NO_WAIT, CS_EDIT_SYNC, i, 0), 0);
	ck_assert_int_eq(fact_deps_replay(l.d, e, NULL, &ed), 0);
	ck_assert(ed <= base);
	cs_edit_free(e);
	free(rec);
	free(rep);
	unload(&l);
	free(path);
	free(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("replay");
	TCase *tc = tcase_create("replay");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_unedited_replay_is_the_recording);
	tcase_add_test(tc, test_no_wait_never_slower);
	tcase_add_test(tc, test_gpu_time_matters_where_gpu_bound);
	tcase_add_test(tc, test_gpu_gap_where_queued);
	tcase_add_test(tc, test_long_run_window);
	tcase_add_test(tc, test_call_tails_taken_out);
	tcase_add_test(tc, test_host_func_wait_on_woken_thread);
	tcase_add_test(tc, test_wait_tail_is_a_stack_tail);
	tcase_add_test(tc, test_wait_cost_taken_out);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
