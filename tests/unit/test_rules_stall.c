/*
 * test_rules_stall.c - dataloader-stall and low-utilization on synthetic traces: the wait for the
 * next batch at every step start (and its idle left out of launch-starvation's cost), the same
 * wait hidden behind a GPU-bound step, a stall in one step only (an epoch boundary), host work in
 * the middle of the step (not a batch), and the summary that names the other rules' findings, or
 * says what the timeline shows when none explains the idle, run after the others whatever the
 * order the rules are given in.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/analyze.h"
#include "rulesim.h"
#include "testutil.h"

/* One step of a loop fed without workers: host work with no CUDA call (stall_ns), the batch's
 * host-to-device copy, then kernels worth about 1 ms of GPU work. */
static void fed_step(struct sim *m, int64_t stall_ns)
{
	sim_step_begin(m);
	sim_host(m, stall_ns);
	sim_h2d(m, 7, 4 * MIB, 1, 0);
	for (int i = 0; i < 20; i++)
		sim_kernel(m, 7, 50 * US);
	sim_step_end(m);
}

static cJSON *ev(const cs_report_finding *f, const char *key)
{
	cJSON *x = cJSON_GetObjectItem(f->evidence, key);

	ck_assert_msg(x != NULL, "no %s in the evidence", key);
	return x;
}

/* Every step waits 5 ms for its batch while the GPU has nothing left to run. */
START_TEST(test_stall_every_step)
{
	struct sim m;
	struct found f;

	sim_open(&m, "stall.db");
	m.launch_ns = 8 * US;
	for (int s = 0; s < STEPS; s++)
		fed_step(&m, 5 * MS);
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "dataloader-stall", &f), 1);
	ck_assert_int_eq(f.v[0].nsteps, STEPS - 2);
	/* the GPU ran the previous step's 1 ms of kernels during the 5 ms: about 4 ms of stall */
	ck_assert_msg(f.v[0].lost_ns_per_step > 3800 * US && f.v[0].lost_ns_per_step < 5 * MS,
		      "%lld", (long long)f.v[0].lost_ns_per_step);
	ck_assert_int_eq(f.v[0].severity, CS_SEV_ERROR);
	ck_assert(cJSON_GetObjectItem(f.v[0].evidence, "no_call_stretch_ns")->valuedouble >=
		  4.9 * MS);
	ck_assert(ev(&f.v[0], "pageable_copy_share")->valuedouble == 1);
	ck_assert(strstr(f.v[0].title, "while the host prepares the next batch") != NULL);
	ck_assert(strstr(f.v[0].fix, "num_workers") != NULL);
	ck_assert(strstr(f.v[0].fix, "pin_memory=True") != NULL);
	found_free(&f);

	/* launch-starvation sees the same idle as its input pipeline: counted in its decision,
	 * left out of its cost */
	ck_assert_int_eq(synthetic_count(&m, "launch-starvation", &f), 1);
	ck_assert(ev(&f.v[0], "idle_ns_left_to_dataloader_stall")->valuedouble > 3.8 * MS);
	ck_assert_msg(f.v[0].lost_ns_per_step < 1 * MS, "%lld", (long long)f.v[0].lost_ns_per_step);
	ck_assert(strstr(f.v[0].title, "dataloader-stall's cost") != NULL);
	found_free(&f);
	free(m.path);
}
END_TEST

/* A cudaEventQuery as PyTorch's pinned-memory allocator makes it while the training thread pins the
 * batch it made: the sync row and the API row, answered at once. */
static void pinned_pool_query(struct sim *m)
{
	int64_t h = m->h;

	sim_api_row(m, "cudaEventQuery_v3020", CS_API_RUNTIME, CS_ID_NONE, TID, 2 * US);
	m->h = h; /* the same call's sync row */
	sim_query(m, CS_SYNC_EVENT_QUERY, 7, 0);
}

/*
 * DataLoader(num_workers=0, pin_memory=True): 5 ms of making the batch, then pinning it, whose
 * allocator queries its blocks' events 300 us before the copy. The queries neither feed the GPU
 * nor wait for it: the stall is the 5 ms, found as without them (pt_slow_collate of the corpus).
 */
START_TEST(test_stall_pinned_pool_queries)
{
	struct sim m;
	struct found f;

	sim_open(&m, "stall_pin_queries.db");
	m.launch_ns = 8 * US;
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		sim_host(&m, 4700 * US);
		pinned_pool_query(&m);
		pinned_pool_query(&m);
		sim_host(&m, 300 * US);
		sim_h2d(&m, 7, 4 * MIB, 0, 0);
		for (int i = 0; i < 20; i++)
			sim_kernel(&m, 7, 50 * US);
		sim_step_end(&m);
	}
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "dataloader-stall", &f), 1);
	ck_assert_msg(f.v[0].lost_ns_per_step > 3800 * US && f.v[0].lost_ns_per_step < 5 * MS,
		      "%lld", (long long)f.v[0].lost_ns_per_step);
	ck_assert(ev(&f.v[0], "no_call_stretch_ns")->valuedouble >= 4.9 * MS);
	found_free(&f);
	free(m.path);
}
END_TEST

/* The same 5 ms of host work per step, but each step has 10 ms of GPU work queued ahead: the
 * batch is ready before the GPU runs out of work. */
START_TEST(test_stall_hidden_by_gpu_bound_step)
{
	struct sim m;
	struct found f;

	sim_open(&m, "stall_hidden.db");
	m.launch_ns = 8 * US;
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		sim_host(&m, 5 * MS);
		sim_h2d(&m, 7, 4 * MIB, 0, 0);
		for (int i = 0; i < 20; i++)
			sim_kernel(&m, 7, 500 * US);
		sim_step_end(&m);
	}
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "dataloader-stall", &f), 0);
	found_free(&f);
	ck_assert_int_eq(synthetic_count(&m, "low-utilization", &f), 0);
	found_free(&f);
	free(m.path);
}
END_TEST

/* A loop fed in time except once (a new epoch's workers starting): no pattern. */
START_TEST(test_stall_once)
{
	struct sim m;
	struct found f;

	sim_open(&m, "stall_once.db");
	m.launch_ns = 8 * US;
	for (int s = 0; s < STEPS; s++)
		fed_step(&m, s == STEPS / 2 ? 200 * MS : 20 * US);
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "dataloader-stall", &f), 0);
	found_free(&f);
	free(m.path);
}
END_TEST

/* Two steps of forty with a stall: reported for its cost over the steady state, as a few steps. */
START_TEST(test_stall_rare)
{
	struct sim m;
	struct found f;

	sim_open(&m, "stall_rare.db");
	m.launch_ns = 8 * US;
	for (int s = 0; s < 2 * STEPS; s++)
		fed_step(&m, s == 10 || s == 25 ? 100 * MS : 20 * US);
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "dataloader-stall", &f), 1);
	ck_assert_int_eq(f.v[0].nsteps, 2);
	ck_assert(strstr(f.v[0].title, "in 2 of") != NULL);
	ck_assert(strstr(f.v[0].fix, "persistent_workers=True") != NULL);
	ck_assert(!cJSON_IsTrue(ev(&f.v[0], "recurring")));
	found_free(&f);
	free(m.path);
}
END_TEST

/* Host work in the middle of the step, between kernels, and no copy after it: not a batch. */
START_TEST(test_stall_not_mid_step)
{
	struct sim m;
	struct found f;

	sim_open(&m, "stall_mid.db");
	m.launch_ns = 8 * US;
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		sim_h2d(&m, 7, 4096, 0, 0);
		for (int i = 0; i < 10; i++)
			sim_kernel(&m, 7, 50 * US);
		sim_host(&m, 5 * MS);
		for (int i = 0; i < 10; i++)
			sim_kernel(&m, 7, 50 * US);
		sim_step_end(&m);
	}
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "dataloader-stall", &f), 0);
	found_free(&f);
	free(m.path);
}
END_TEST

/*
 * No NVTX (steps from the kernel period): the step's first two kernels, then five layers of 20
 * kernels each preceded by 3 ms of host work making a 16 MiB tensor copied from pageable memory,
 * then 20 kernels of backward. The first copy comes 2 kernels into the step, so close to the
 * period's arbitrary boundary that its position alone would make it the next batch's. With
 * batch_site, it is made at a line of its own (model.py:20: a batch), else at the same line as
 * the four inside the step (model.py:10: the same code in the layer loop). hct and dls get
 * host-created-tensor's and dataloader-stall's findings.
 */
static void layer_noise(const char *file, int batch_site, struct found *hct, struct found *dls)
{
	struct sim m;
	struct loaded l;
	int64_t st[2], names[7][20];
	char name[32];

	sim_open(&m, file);
	m.launch_ns = 8 * US;
	sim_two_stacks(&m, st);
	/* every kernel of the step its own name, so that the period is the whole step */
	for (int k = 0; k < 7; k++)
		for (int i = 0; i < 20; i++) {
			snprintf(name, sizeof(name), "layer%d_op%d", k, i);
			names[k][i] = name_id(&m, name);
		}
	for (int s = 0; s < STEPS; s++) {
		sim_kernel_named(&m, 7, names[0][0], 50 * US);
		sim_kernel_named(&m, 7, names[0][1], 50 * US);
		for (int k = 0; k < 5; k++) {
			sim_host(&m, 3 * MS);
			m.copy_stack = k == 0 && batch_site ? st[1] : st[0];
			sim_h2d(&m, 7, 16 * MIB, 1, 300 * US);
			for (int i = 0; i < 20; i++)
				sim_kernel_named(&m, 7, names[k + 1][i], 50 * US);
		}
		for (int i = 0; i < 20; i++)
			sim_kernel_named(&m, 7, names[6][i], 50 * US);
	}
	sim_finish(&m);
	load(&l, m.path, NULL);
	ck_assert_int_eq(l.s.method, CS_STEPS_PERIOD);
	run_rule(&l, "host-created-tensor", hct);
	run_rule(&l, "dataloader-stall", dls);
	unload(&l);
	free(m.path);
}

/* The copy next to the boundary is made where the four inside the step are: all five are
 * host-created-tensor's, none is a batch. */
START_TEST(test_stall_site_inside_steps)
{
	struct found hct, dls;

	layer_noise("stall_layer_noise.db", 0, &hct, &dls);
	ck_assert_int_eq(dls.n, 0);
	ck_assert_int_eq(hct.n, 1);
	ck_assert_msg(ev(&hct.v[0], "copies_per_step")->valuedouble == 5, "%g",
		      ev(&hct.v[0], "copies_per_step")->valuedouble);
	found_free(&hct);
	found_free(&dls);
}
END_TEST

/* The same with the first copy made at a line of its own: a batch at the step's start
 * (dataloader-stall's) and four tensors made inside the step (host-created-tensor's). */
START_TEST(test_stall_site_of_its_own)
{
	struct found hct, dls;

	layer_noise("stall_layer_batch.db", 1, &hct, &dls);
	ck_assert_int_eq(dls.n, 1);
	ck_assert_msg(ev(&dls.v[0], "h2d_copies_per_step")->valuedouble == 1, "%g",
		      ev(&dls.v[0], "h2d_copies_per_step")->valuedouble);
	ck_assert_int_eq(hct.n, 1);
	ck_assert_msg(ev(&hct.v[0], "copies_per_step")->valuedouble == 4, "%g",
		      ev(&hct.v[0], "copies_per_step")->valuedouble);
	found_free(&hct);
	found_free(&dls);
}
END_TEST

/* The rules of ids (NULL-terminated) run together as a report runs them; out gets the findings. */
static void run_together(const char *path, const char *const *ids, cs_report *out)
{
	struct loaded l;
	cs_step_opts o = {"step", 2, 0, 0};
	const cs_analyzer *rules[8];
	cs_error err = {0, ""};
	int n = 0;

	for (; ids[n]; n++) {
		rules[n] = cs_analyzer_find(ids[n]);
		ck_assert_ptr_nonnull(rules[n]);
	}
	rules[n] = NULL;
	load(&l, path, &o);
	memset(out, 0, sizeof(*out));
	ck_assert_msg(cs_report_run(&l.a, &l.s, rules, out, &err) == 0, "%s", err.msg);
	unload(&l);
}

static const cs_report_finding *of_rule(const cs_report *r, const char *id)
{
	const cs_report_finding *x = NULL;

	for (int32_t i = 0; i < r->n; i++)
		if (!strcmp(r->v[i]->rule, id)) {
			ck_assert_msg(x == NULL, "two findings of %s", id);
			x = r->v[i];
		}
	return x;
}

/* The summary names dataloader-stall, which explains nearly all the idle, and charges only the
 * rest; listed before the rule it summarizes, it still runs after it. */
START_TEST(test_low_util_names_causes)
{
	static const char *const ids[] = {"low-utilization", "dataloader-stall", NULL};
	struct sim m;
	cs_report r;
	const cs_report_finding *lu, *ds;
	cJSON *causes;

	sim_open(&m, "lowutil.db");
	m.launch_ns = 8 * US;
	for (int s = 0; s < STEPS; s++)
		fed_step(&m, 5 * MS);
	sim_finish(&m);
	run_together(m.path, ids, &r);
	lu = of_rule(&r, "low-utilization");
	ds = of_rule(&r, "dataloader-stall");
	ck_assert_ptr_nonnull(lu);
	ck_assert_ptr_nonnull(ds);
	ck_assert_msg(strstr(lu->title, "largest causes found: dataloader-stall") != NULL, "%s",
		      lu->title);
	causes = cJSON_GetObjectItem(lu->evidence, "causes");
	ck_assert_int_eq(cJSON_GetArraySize(causes), 1);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(causes, 0), "rule")->valuestring,
			 "dataloader-stall");
	/* busy about 1 ms of 5 ms */
	ck_assert(cJSON_GetObjectItem(lu->evidence, "busy_share")->valuedouble < 0.3);
	/* not a duplicate: its own cost is what dataloader-stall does not explain */
	ck_assert_msg(lu->lost_ns_per_step < ds->lost_ns_per_step / 4, "%lld vs %lld",
		      (long long)lu->lost_ns_per_step, (long long)ds->lost_ns_per_step);
	ck_assert(strstr(lu->fix, "dataloader-stall") != NULL);
	cs_report_free(&r);
	free(m.path);
}
END_TEST

/* Tiny kernels launched one by one, and no other rule run: the summary says what the timeline
 * shows (host-bound launches) and charges the idle itself. */
START_TEST(test_low_util_timeline)
{
	static const char *const ids[] = {"low-utilization", NULL};
	struct sim m;
	cs_report r;
	const cs_report_finding *lu;

	sim_open(&m, "lowutil_launch.db");
	m.launch_ns = 20 * US;
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		for (int i = 0; i < 100; i++)
			sim_kernel(&m, 7, 3 * US);
		sim_step_end(&m);
	}
	sim_finish(&m);
	run_together(m.path, ids, &r);
	lu = of_rule(&r, "low-utilization");
	ck_assert_ptr_nonnull(lu);
	ck_assert_msg(strstr(lu->title, "no other rule explains it; the timeline shows mostly "
					"host-bound launches") != NULL,
		      "%s", lu->title);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(lu->evidence, "causes")), 0);
	ck_assert(lu->lost_ns_per_step > 1 * MS);
	ck_assert_int_eq(lu->severity, CS_SEV_ERROR);
	cs_report_free(&r);
	free(m.path);
}
END_TEST

/* A GPU-bound loop: busy nearly all the step. */
START_TEST(test_low_util_busy)
{
	struct sim m;
	struct found f;

	sim_open(&m, "lowutil_busy.db");
	m.launch_ns = 8 * US;
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		busy_step(&m);
		sim_step_end(&m);
	}
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "low-utilization", &f), 0);
	found_free(&f);
	free(m.path);
}
END_TEST

/* The recorded traces: no program waits for its batches, and each keeps the GPU busy over half
 * the step. */
START_TEST(test_stall_recorded_traces)
{
	static const char *const traces[] = {"clean",
					     "d2h-sync-fixed",
					     "d2h-sync-bad",
					     "launch-starvation-fixed",
					     "launch-starvation-negative_gpu_bound",
					     "empty-cache-in-loop-fixed",
					     "cuda-core-scan-fixed",
					     "memory-ceiling-thrash-fixed"};
	char path[512];

	for (size_t i = 0; i < sizeof(traces) / sizeof(*traces); i++) {
		struct loaded l;
		struct found f;

		snprintf(path, sizeof(path), "%s/samples/rules/traces/%s.db", tu_source_root(),
			 traces[i]);
		load(&l, path, NULL);
		run_rule(&l, "dataloader-stall", &f);
		ck_assert_msg(f.n == 0, "%s: %s", traces[i], f.n ? f.v[0].title : "");
		found_free(&f);
		/* busy 52.5% (d2h-sync-fixed) to 98.8% of the step */
		run_rule(&l, "low-utilization", &f);
		ck_assert_msg(f.n == 0, "%s: %s", traces[i], f.n ? f.v[0].title : "");
		found_free(&f);
		unload(&l);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("rules_stall");
	TCase *tc = tcase_create("stall");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_stall_every_step);
	tcase_add_test(tc, test_stall_hidden_by_gpu_bound_step);
	tcase_add_test(tc, test_stall_pinned_pool_queries);
	tcase_add_test(tc, test_stall_once);
	tcase_add_test(tc, test_stall_rare);
	tcase_add_test(tc, test_stall_not_mid_step);
	tcase_add_test(tc, test_stall_site_inside_steps);
	tcase_add_test(tc, test_stall_site_of_its_own);
	tcase_add_test(tc, test_low_util_names_causes);
	tcase_add_test(tc, test_low_util_timeline);
	tcase_add_test(tc, test_low_util_busy);
	tcase_add_test(tc, test_stall_recorded_traces);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sim_main(suite(), "test_rules_stall");
}
