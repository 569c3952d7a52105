/*
 * test_call_sites.c - the call sites of the findings charged to API calls (copies, allocator
 * calls), as the report shows them: each rule, on a synthetic trace whose calls come from two lines
 * of a program (model.py:10 and model.py:20) of different cost, lists both lines with their calls
 * and the cost it charges each, costliest first, in JSON ("locations"), as `where:` lines in the
 * text report and under **Where:** in markdown.
 *
 * pageable-memcpy (each copy: the GPU idle while its call held the host, and after the wait a
 * blocking copy made), host-created-tensor and dataloader-stall (each copy: the idle of the stall
 * it ended), empty-cache-in-loop and memory-ceiling-thrash (each allocator call of the affected
 * steps: the GPU idle while it ran), allocator-churn (each allocator call outside the bursts: the
 * same); from a trace without API rows, the memory rules charge each release of their bursts the
 * idle since the one before it. A trace without stacks gives no sites (the committed traces'
 * reports are unchanged: the golden test).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/analyze.h"
#include "rulesim.h"
#include "testutil.h"

/* The finding of rule id on path has no sites and no location. */
static void expect_no_sites(const char *path, const char *id)
{
	const char *js[] = {"cuscope",	"report", "--format", "json", "--step-range", "step",
			    "--warmup", "2",	  "--rules",  id,     path,	      NULL};
	struct tu_result j = tu_cuscope(js);
	cJSON *doc, *f;

	ck_assert_msg(j.rc == 0, "%s: %s", id, j.err);
	doc = cJSON_Parse(j.out);
	ck_assert_ptr_nonnull(doc);
	f = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "findings"), 0);
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_null(cJSON_GetObjectItem(f, "locations"));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(f, "location")));
	ck_assert_ptr_null(cJSON_GetObjectItem(cJSON_GetObjectItem(f, "evidence"), "sites"));
	cJSON_Delete(doc);
	tu_result_free(&j);
}

/*
 * pageable-memcpy: each step, a copy of 64 MiB from pageable memory (non_blocking, so no wait
 * after it) whose call holds the host 2 ms from line 10 after the GPU ran out of work, 50 kernels
 * of 5 us with 10 us of Python after each (the GPU keeps up), then one holding it 500 us from line
 * 20. Each copy is charged the GPU idle during its call: the hold, and the 2 us the call went on
 * after the copy's own 2 us.
 */
static void pageable_trace(struct sim *m, const int64_t *st)
{
	m->h2d_async = 1;
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(m);
		m->copy_stack = st[0];
		sim_h2d(m, 7, 64 * MIB, 1, 2 * MS);
		for (int i = 0; i < 50; i++) {
			sim_kernel(m, 7, 5 * US);
			sim_host(m, 10 * US);
		}
		m->copy_stack = st[1];
		sim_h2d(m, 7, 64 * MIB, 1, 500 * US);
		sim_step_end(m);
	}
	sim_finish(m);
}

START_TEST(test_pageable_sites)
{
	struct sim m;
	int64_t st[2];
	struct site_want w0 = {10, 1, 2002 * US, 2002 * US}, w1 = {20, 1, 502 * US, 502 * US};

	sim_open(&m, "sites_pageable.db");
	sim_two_stacks(&m, st);
	pageable_trace(&m, st);
	sim_expect_sites(m.path, "pageable-memcpy", &w0, &w1);
	free(m.path);
}
END_TEST

/*
 * pageable-memcpy, blocking copies: each step, 4 ms of kernels queued, a blocking copy from line 10
 * then 300 us of Python before the next kernel, a blocking copy from line 20 then 100 us. The GPU
 * is busy during the calls; each copy is charged the idle after the wait it made: the Python after
 * it, and the launch.
 */
START_TEST(test_pageable_blocking_sites)
{
	struct sim m;
	int64_t st[2];
	struct site_want w0 = {10, 1, 300 * US, 320 * US}, w1 = {20, 1, 100 * US, 120 * US};

	sim_open(&m, "sites_pageable_blocking.db");
	sim_two_stacks(&m, st);
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		busy_step(&m);
		sim_blocking_copy(&m, st[0]);
		sim_host(&m, 300 * US);
		sim_kernel(&m, 7, 100 * US);
		sim_blocking_copy(&m, st[1]);
		sim_host(&m, 100 * US);
		sim_kernel(&m, 7, 100 * US);
		sim_step_end(&m);
	}
	sim_finish(&m);
	sim_expect_sites(m.path, "pageable-memcpy", &w0, &w1);
	free(m.path);
}
END_TEST

/* Twenty 50 us kernels launched 5 us apart. */
static void layers(struct sim *m)
{
	for (int i = 0; i < 20; i++)
		sim_kernel(m, 7, 50 * US);
}

/*
 * host-created-tensor: inside each step, after 20 layers, 3 ms of host work making a tensor
 * copied from line 10, 20 layers, 1.5 ms making one copied from line 20, 20 layers. The GPU runs
 * what is queued before each and idles the rest: before the first the previous step's last 20
 * layers and this step's first 20 (2 ms, less the 100 us of their launches and the step's end:
 * about 1.84 ms queued, 1.165 ms idle), before the second 20 layers (about 0.925 ms queued,
 * 0.575 ms idle).
 */
START_TEST(test_host_created_sites)
{
	struct sim m;
	int64_t st[2];
	struct site_want w0 = {10, 1, 1150 * US, 1180 * US}, w1 = {20, 1, 560 * US, 590 * US};

	sim_open(&m, "sites_hct.db");
	sim_two_stacks(&m, st);
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		layers(&m);
		sim_host(&m, 3 * MS);
		m.copy_stack = st[0];
		sim_h2d(&m, 7, 16 * MIB, 1, 300 * US);
		layers(&m);
		sim_host(&m, 1500 * US);
		m.copy_stack = st[1];
		sim_h2d(&m, 7, 16 * MIB, 1, 300 * US);
		layers(&m);
		sim_step_end(&m);
	}
	sim_finish(&m);
	sim_expect_sites(m.path, "host-created-tensor", &w0, &w1);
	free(m.path);
}
END_TEST

/*
 * dataloader-stall: at the start of each step, 4 ms of host work then a batch's copy from line 10,
 * 1.5 ms more then one from line 20 (a second input), then 1 ms of kernels. The first stall is the
 * 4 ms less the previous step's kernels still running (about 0.86 ms of them); the second the
 * whole 1.5 ms from the first copy's call.
 */
START_TEST(test_dataloader_sites)
{
	struct sim m;
	int64_t st[2];
	struct site_want w0 = {10, 1, 3100 * US, 3200 * US}, w1 = {20, 1, 1500 * US, 1500 * US};

	sim_open(&m, "sites_loader.db");
	m.launch_ns = 8 * US;
	sim_two_stacks(&m, st);
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		sim_host(&m, 4 * MS);
		m.copy_stack = st[0];
		sim_h2d(&m, 7, 4 * MIB, 1, 0);
		sim_host(&m, 1500 * US);
		m.copy_stack = st[1];
		sim_h2d(&m, 7, 4 * MIB, 1, 0);
		for (int i = 0; i < 20; i++)
			sim_kernel(&m, 7, 50 * US);
		sim_step_end(&m);
	}
	sim_finish(&m);
	sim_expect_sites(m.path, "dataloader-stall", &w0, &w1);
	free(m.path);
}
END_TEST

/*
 * empty-cache-in-loop: 4 GiB of state, then every step 12 blocks of 64 MiB allocated from line 20
 * (100 us each, between kernels) and all freed from line 10 after the step's GPU work (60 us
 * each, the first waiting for the GPU). Each allocator call of the step is charged the GPU idle
 * while it ran: 60 us for each free, plus the 1 us gaps between the queued kernels the first
 * waited for; for the allocations, the step's first (the GPU drained), 100 us, the others almost
 * none (kernels queued).
 */
START_TEST(test_empty_cache_sites)
{
	struct sim m;
	int64_t st[2], addr[12];
	struct site_want w0 = {10, 12, 12 * 60 * US, 800 * US}, w1 = {20, 12, 100 * US, 110 * US};

	sim_open(&m, "sites_empty_cache.db");
	sim_two_stacks(&m, st);
	sim_alloc(&m, 4 * GIB);
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		m.mem_stack = st[1];
		for (int i = 0; i < 12; i++) {
			addr[i] = sim_alloc(&m, 64 * MIB);
			sim_kernel(&m, 7, 200 * US);
			sim_kernel(&m, 7, 200 * US);
		}
		busy_step(&m);
		m.mem_stack = st[0];
		for (int i = 0; i < 12; i++)
			sim_mem(&m, CS_MEMOP_FREE, 64 * MIB, addr[i], 0, 60 * US);
		sim_host(&m, 100 * US);
		sim_step_end(&m);
	}
	sim_finish(&m);
	sim_expect_sites(m.path, "empty-cache-in-loop", &w0, &w1);
	free(m.path);
}
END_TEST

/* A memory row of op at the end of dur of host time, from stack, with no API row (a trace recorded
 * without the allocator's API calls). */
static void mem_row(struct sim *m, int op, int64_t bytes, int64_t address, int64_t dur,
		    int64_t stack)
{
	cs_memory r;

	m->h += dur;
	memset(&r, 0, sizeof(r));
	r.start = m->h - 1 * US;
	r.pid = PID;
	r.tid = TID;
	r.stream_id = CS_ID_NONE;
	r.correlation_id = ++m->corr;
	r.op = op;
	r.mem_kind = CS_MEM_DEVICE;
	r.cbid = op == CS_MEMOP_FREE ? 22 : 20;
	r.address = (uint64_t)address;
	r.bytes = bytes;
	r.stack_id = stack;
	ck_assert_int_eq(cs_writer_add_memory(m->w, &r), 0);
	m->h += 1 * US;
}

/*
 * empty-cache-in-loop without API rows: the cost is the GPU idle of each burst, from its first
 * release to its last. After the step's GPU work has drained, twelve blocks freed 61 us apart,
 * the first eight from line 10, the last four from line 20: each release is charged the 61 us
 * since the one before it (the burst's first, none), 7 x 61 us and 4 x 61 us, and the sites add
 * up to the finding's cost.
 */
START_TEST(test_empty_cache_sites_without_api)
{
	struct sim m;
	int64_t st[2], addr[12];
	struct site_want w0 = {10, 8, 7 * 61 * US, 7 * 61 * US},
			 w1 = {20, 4, 4 * 61 * US, 4 * 61 * US};
	const char *js[] = {"cuscope", "report",   "--format", "json",	  "--step-range",
			    "step",    "--warmup", "2",	       "--rules", "empty-cache-in-loop",
			    NULL,      NULL};
	struct tu_result j;
	cJSON *doc, *f;

	sim_open(&m, "sites_empty_cache_noapi.db");
	sim_two_stacks(&m, st);
	m.addr = 0x10000000;
	mem_row(&m, CS_MEMOP_ALLOC, 4 * GIB, m.addr, 100 * US, CS_ID_NONE);
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		for (int i = 0; i < 12; i++) {
			m.addr += 0x10000000;
			addr[i] = m.addr;
			mem_row(&m, CS_MEMOP_ALLOC, 64 * MIB, addr[i], 100 * US, CS_ID_NONE);
			sim_kernel(&m, 7, 200 * US);
			sim_kernel(&m, 7, 200 * US);
		}
		busy_step(&m);
		sim_sync(&m, CS_SYNC_CONTEXT_SYNCHRONIZE, CS_ID_NONE, gpu_end(&m), CS_ID_NONE);
		for (int i = 0; i < 12; i++)
			mem_row(&m, CS_MEMOP_FREE, 64 * MIB, addr[i], 60 * US, st[i < 8 ? 0 : 1]);
		sim_host(&m, 100 * US);
		sim_step_end(&m);
	}
	sim_finish(&m);
	sim_expect_sites(m.path, "empty-cache-in-loop", &w0, &w1);
	js[10] = m.path;
	j = tu_cuscope(js);
	ck_assert_msg(j.rc == 0, "%s", j.err);
	doc = cJSON_Parse(j.out);
	f = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "findings"), 0);
	ck_assert(cJSON_IsFalse(
		cJSON_GetObjectItem(cJSON_GetObjectItem(f, "evidence"), "cost_from_api_calls")));
	ck_assert_int_eq((int64_t)cJSON_GetObjectItem(f, "lost_ns_per_step")->valuedouble,
			 11 * 61 * US);
	cJSON_Delete(doc);
	tu_result_free(&j);
	free(m.path);
}
END_TEST

/*
 * memory-ceiling-thrash: every step (after the first) a request fails in cudaMalloc (200 us) and
 * the allocator frees three cached blocks of 1 GiB (150 us each, the first waiting for the GPU),
 * all from line 10 (the allocator's retry): the frees' 450 us after the GPU drained, and the gaps
 * of the kernels the failed call and the first free ran beside. The three allocations of 1 GiB of
 * each step (100 us) come from line 20: two between kernels, the last after the frees (100 us).
 */
START_TEST(test_ceiling_sites)
{
	struct sim m;
	int64_t st[2], prev[3] = {0, 0, 0}, cur[3];
	struct site_want w0 = {10, 4, 450 * US, 500 * US}, w1 = {20, 3, 100 * US, 110 * US};

	sim_open(&m, "sites_ceiling.db");
	sim_two_stacks(&m, st);
	sim_alloc(&m, 4 * GIB);
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		m.mem_stack = st[1];
		for (int i = 0; i < 2; i++) {
			cur[i] = sim_alloc(&m, 1 * GIB);
			sim_kernel(&m, 7, 300 * US);
			sim_kernel(&m, 7, 300 * US);
		}
		if (s > 0) {
			m.mem_stack = st[0];
			sim_mem(&m, CS_MEMOP_ALLOC, 1 * GIB, 0, 2, 200 * US);
			for (int i = 0; i < 3; i++)
				sim_mem(&m, CS_MEMOP_FREE, 1 * GIB, prev[i], 0, 150 * US);
		}
		m.mem_stack = st[1];
		cur[2] = sim_alloc(&m, 1 * GIB);
		busy_step(&m);
		memcpy(prev, cur, sizeof(prev));
		sim_step_end(&m);
	}
	sim_finish(&m);
	sim_expect_sites(m.path, "memory-ceiling-thrash", &w0, &w1);
	free(m.path);
}
END_TEST

/*
 * allocator-churn: each step frees the previous step's block from line 10 (cudaFree waits for the
 * GPU, then 60 us with the GPU idle, plus the 1 us gaps of the queued kernels it waited for) and
 * allocates one of a new size from line 20 (100 us, the GPU idle), then 20 kernels of 50 us: the
 * allocation is the costlier line.
 */
static void churn_trace(struct sim *m, const int64_t *st)
{
	int64_t prev = 0;

	sim_alloc(m, 4 * GIB);
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(m);
		if (prev) {
			m->mem_stack = st[0];
			sim_mem(m, CS_MEMOP_FREE, 0, prev, 0, 60 * US);
		}
		m->mem_stack = st[1];
		prev = sim_alloc(m, (64 + 2 * s) * MIB);
		for (int i = 0; i < 20; i++)
			sim_kernel(m, 7, 50 * US);
		sim_step_end(m);
	}
	sim_finish(m);
}

START_TEST(test_churn_sites)
{
	struct sim m;
	int64_t st[2];
	/* each call charged what the finding charges it (fact_alloc_call_idle): the allocation its
	 * 100 us and the relaunch after it, the free its 60 us up to the allocation */
	struct site_want w0 = {20, 1, 100 * US, 110 * US}, w1 = {10, 1, 60 * US, 80 * US};

	sim_open(&m, "sites_churn.db");
	sim_two_stacks(&m, st);
	churn_trace(&m, st);
	sim_expect_sites(m.path, "allocator-churn", &w0, &w1);
	free(m.path);
}
END_TEST

/* The same traces without stacks: the findings stand, with no sites and no location. */
START_TEST(test_no_stacks_no_sites)
{
	struct sim m;
	int64_t none[2] = {CS_ID_NONE, CS_ID_NONE};

	sim_open(&m, "sites_pageable_nostack.db");
	pageable_trace(&m, none);
	expect_no_sites(m.path, "pageable-memcpy");
	free(m.path);
	sim_open(&m, "sites_churn_nostack.db");
	churn_trace(&m, none);
	expect_no_sites(m.path, "allocator-churn");
	free(m.path);
}
END_TEST

static Suite *sites_suite(void)
{
	Suite *s = suite_create("call_sites");
	TCase *tc = tcase_create("call_sites");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_pageable_sites);
	tcase_add_test(tc, test_pageable_blocking_sites);
	tcase_add_test(tc, test_host_created_sites);
	tcase_add_test(tc, test_dataloader_sites);
	tcase_add_test(tc, test_empty_cache_sites);
	tcase_add_test(tc, test_empty_cache_sites_without_api);
	tcase_add_test(tc, test_ceiling_sites);
	tcase_add_test(tc, test_churn_sites);
	tcase_add_test(tc, test_no_stacks_no_sites);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sim_main(sites_suite(), "test_call_sites");
}
