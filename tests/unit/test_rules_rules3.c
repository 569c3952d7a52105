/*
 * test_rules_rules3.c - the host-created-tensor and index-select-embedding rules.
 * host-created-tensor: on synthetic traces (a tensor computed on the host and copied from pageable
 * memory in the middle of each step; the same copy at the step start, which is dataloader-stall's;
 * a pinned copy; the same work queued behind a busy GPU; steps from the kernel period with the copy
 * in the middle or at the start) and on recorded traces of samples/rules/traces and
 * tests/data/corpus (no finding; the dataloader stall stays dataloader-stall's).
 * index-select-embedding: a lookup whose backward is a zero fill and an atomic index_add_, and what
 * resembles it (nn.Embedding's backward, a gather in the middle of the step, an index_add_ into a
 * kept buffer, a cheap one); the same recorded traces.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/analyze.h"
#include "rulesim.h"
#include "testutil.h"

/* 20 kernels of 50 us launched 5 us apart: the host keeps ahead of a short queue. */
static void layers(struct sim *m, int n)
{
	for (int i = 0; i < n; i++)
		sim_kernel(m, 7, 50 * US);
}

/*
 * One step: forward kernels, then host_ns of CPU work making a tensor of bytes, copied from
 * pageable (or pinned) memory, then more kernels. at_start: the host work and copy come first.
 */
static void made_step(struct sim *m, int64_t host_ns, int64_t bytes, int pageable, int at_start)
{
	sim_step_begin(m);
	if (at_start) {
		sim_host(m, host_ns);
		sim_h2d(m, 7, bytes, pageable, 300 * US);
	}
	layers(m, 20);
	if (!at_start) {
		sim_host(m, host_ns);
		sim_h2d(m, 7, bytes, pageable, 300 * US);
	}
	layers(m, 20);
	sim_step_end(m);
}

START_TEST(test_host_created_mid_step)
{
	struct sim m;
	struct found f;
	struct loaded l;
	const cJSON *e;

	sim_open(&m, "hct_mid.db");
	for (int s = 0; s < STEPS; s++)
		made_step(&m, 3 * MS, 16 * MIB, 1, 0);
	sim_finish(&m);
	run_synthetic(&m, "host-created-tensor", &f, &l);
	ck_assert_int_eq(f.n, 1);
	ck_assert_int_eq(f.v[0].nsteps, STEPS - 2);
	e = f.v[0].evidence;
	ck_assert_int_eq(cJSON_GetObjectItem(e, "copies_per_step")->valueint, 1);
	ck_assert_int_eq((int64_t)cJSON_GetObjectItem(e, "bytes_per_step")->valuedouble, 16 * MIB);
	/* the host works 3 ms while the GPU runs what is queued: the step's first 20 layers and
	 * the previous step's last 20 (40 x 50 us, launched 5 us apart from the step's start):
	 * about 3 ms - 1.85 ms idle */
	ck_assert_msg(f.v[0].lost_ns_per_step > 1050 * US && f.v[0].lost_ns_per_step < 1300 * US,
		      "lost %lld", (long long)f.v[0].lost_ns_per_step);
	ck_assert(f.v[0].severity == CS_SEV_ERROR);
	ck_assert(strstr(f.v[0].fix, "device=\"cuda\"") != NULL);
	found_free(&f);
	/* not a batch at the step boundary */
	run_rule(&l, "dataloader-stall", &f);
	ck_assert_int_eq(f.n, 0);
	found_free(&f);
	unload(&l);
	free(m.path);
}
END_TEST

/* The same host work and copy before the step's first kernel: the next batch, dataloader-stall's.
 */
START_TEST(test_host_created_at_start_is_loader)
{
	struct sim m;
	struct found f;
	struct loaded l;

	sim_open(&m, "hct_start.db");
	for (int s = 0; s < STEPS; s++)
		made_step(&m, 3 * MS, 16 * MIB, 1, 1);
	sim_finish(&m);
	run_synthetic(&m, "host-created-tensor", &f, &l);
	ck_assert_int_eq(f.n, 0);
	run_rule(&l, "dataloader-stall", &f);
	ck_assert_int_eq(f.n, 1);
	found_free(&f);
	unload(&l);
	free(m.path);
}
END_TEST

/* From pinned memory, or a few bytes (a scalar, a flag): not a tensor made on the host. */
START_TEST(test_host_created_pinned_or_small)
{
	struct sim m;
	struct found f;

	sim_open(&m, "hct_pinned.db");
	for (int s = 0; s < STEPS; s++)
		made_step(&m, 3 * MS, 16 * MIB, 0, 0);
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "host-created-tensor", &f), 0);
	free(m.path);

	sim_open(&m, "hct_small.db");
	for (int s = 0; s < STEPS; s++)
		made_step(&m, 3 * MS, 4096, 1, 0);
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "host-created-tensor", &f), 0);
	free(m.path);
}
END_TEST

/* The host makes the tensor while the GPU still runs 8 ms of queued work: nothing idles. */
START_TEST(test_host_created_gpu_busy)
{
	struct sim m;
	struct found f;

	sim_open(&m, "hct_busy.db");
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		for (int i = 0; i < 20; i++)
			sim_kernel(&m, 7, 400 * US);
		sim_host(&m, 2 * MS);
		sim_h2d(&m, 7, 16 * MIB, 1, 10 * US);
		layers(&m, 5);
		/* wait for the step's work, as a step that reads its loss */
		sim_sync(&m, CS_SYNC_STREAM_SYNCHRONIZE, 7, gpu_end(&m), CS_ID_NONE);
		sim_step_end(&m);
	}
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "host-created-tensor", &f), 0);
	free(m.path);
}
END_TEST

/* A tensor made in one step of ten: a pattern of a few steps, found when it costs 2% overall. */
START_TEST(test_host_created_rare)
{
	struct sim m;
	struct found f;

	sim_open(&m, "hct_rare.db");
	for (int s = 0; s < 40; s++)
		made_step(&m, s % 10 == 5 ? 20 * MS : 0, s % 10 == 5 ? 16 * MIB : 0, 1, 0);
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "host-created-tensor", &f), 1);
	ck_assert(f.v[0].nsteps < 10);
	ck_assert(strstr(f.v[0].title, "a tensor made on the host") != NULL);
	found_free(&f);
	free(m.path);
}
END_TEST

/*
 * Without NVTX ranges, steps come from the kernel period: 40 kernels of distinct names per
 * iteration, the host work and its pageable copy after kernel `at` (0: before the first). In the
 * middle of the period it is a tensor the step made; right before the loop's first kernel, the
 * next batch.
 */
static void period_trace(struct sim *m, const char *file, int at)
{
	int64_t names[40];
	char buf[64];

	sim_open(m, file);
	for (int i = 0; i < 40; i++) {
		snprintf(buf, sizeof(buf), "_ZN6layer%dEv", i);
		names[i] = name_id(m, buf);
	}
	for (int s = 0; s < STEPS; s++)
		for (int i = 0; i < 40; i++) {
			if (i == at) {
				sim_host(m, 3 * MS);
				sim_h2d(m, 7, 16 * MIB, 1, 300 * US);
			}
			sim_kernel_named(m, 7, names[i], 50 * US);
		}
	sim_finish(m);
}

START_TEST(test_host_created_period_steps)
{
	struct sim m;
	struct found f;
	struct loaded l;
	cs_step_opts o = {NULL, 2, 0, 0};
	static const char *const ids[2] = {"host-created-tensor", "dataloader-stall"};

	for (int at = 0; at <= 20; at += 20) {
		period_trace(&m, at ? "hct_period_mid.db" : "hct_period_start.db", at);
		load(&l, m.path, &o);
		ck_assert_int_eq(l.s.method, CS_STEPS_PERIOD);
		for (int r = 0; r < 2; r++) {
			run_rule(&l, ids[r], &f);
			/* in the middle: host-created-tensor's alone; at the start:
			 * dataloader-stall's */
			ck_assert_msg(f.n == ((r == 0) == (at != 0)), "%s at %d: %d findings",
				      ids[r], at, f.n);
			found_free(&f);
		}
		unload(&l);
		free(m.path);
	}
}
END_TEST

/* ---- index-select-embedding ---- */

static const char gather_name[] =
	"_ZN2at6native24vectorized_gather_kernelILi16ElEEvPcS2_PT0_illllb";
static const char fill_name[] = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_"
				"11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_";
static const char index_add_name[] = "_ZN2at6native19indexFuncLargeIndexIfljLi2ELi2ELin2ELb1ENS0_"
				     "44_GLOBAL__N__50c743a2_11_Indexing_"
				     "cu_89862edb9ReduceAddEEEvNS_4cuda6detail10TensorInfoIT_T1_"
				     "EENS6_IKS7_S8_EENS6_IKT0_S8_EEiiS8_"
				     "S8_llRKT6_S7_";
static const char emb_bwd_name[] =
	"_ZN2at6native59_GLOBAL__N__4b0cc4ca_26_EmbeddingBackwardKernel_cu_5d1cf09b19compute_grad_"
	"weightIflEEvPKT0_PKT_S5_llS5_PKlPNS_14AccumulateTypeIS6_Lb1EE4typeEl";

enum lookup { LOOKUP_INDEX_SELECT, LOOKUP_EMBEDDING, LOOKUP_LATE_GATHER, LOOKUP_NO_FILL };

/*
 * One step of a model with a lookup: the gather (first, or after 20 kernels with
 * LOOKUP_LATE_GATHER), 30 layers of 100 us, then the backward: 30 layers and the lookup's
 * backward (a zero fill and an index_add_ of add_ns, or nn.Embedding's backward kernel).
 */
static void lookup_step(struct sim *m, enum lookup how, int64_t add_ns)
{
	sim_step_begin(m);
	if (how == LOOKUP_LATE_GATHER)
		for (int i = 0; i < 20; i++)
			sim_kernel(m, 7, 100 * US);
	sim_kernel_named(m, 7, name_id(m, gather_name), 20 * US);
	for (int i = 0; i < 60; i++)
		sim_kernel(m, 7, 100 * US);
	if (how == LOOKUP_EMBEDDING) {
		sim_kernel_named(m, 7, name_id(m, fill_name), 10 * US);
		sim_kernel_named(m, 7, name_id(m, emb_bwd_name), add_ns / 4);
	} else {
		if (how != LOOKUP_NO_FILL)
			sim_kernel_named(m, 7, name_id(m, fill_name), 10 * US);
		sim_kernel_named(m, 7, name_id(m, index_add_name), add_ns);
	}
	sim_sync(m, CS_SYNC_STREAM_SYNCHRONIZE, 7, gpu_end(m), CS_ID_NONE);
	sim_step_end(m);
}

START_TEST(test_index_select_lookup)
{
	struct sim m;
	struct found f;
	const cJSON *e;

	sim_open(&m, "ise_bad.db");
	for (int s = 0; s < STEPS; s++)
		lookup_step(&m, LOOKUP_INDEX_SELECT, 1 * MS);
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "index-select-embedding", &f), 1);
	ck_assert_int_eq(f.v[0].nsteps, STEPS - 2);
	/* information: the atomic kernel's time (1 ms of a ~7 ms step) is what the backward takes,
	 * not what nn.Embedding would save */
	ck_assert_int_eq(f.v[0].lost_ns_per_step, 0);
	ck_assert(f.v[0].severity == CS_SEV_INFO);
	e = f.v[0].evidence;
	ck_assert_int_eq(cJSON_GetObjectItem(e, "atomic_ns_per_step")->valueint, 1 * MS);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(e, "gain_known")));
	ck_assert(strstr(f.v[0].title, "time both") != NULL);
	ck_assert_int_eq(cJSON_GetObjectItem(e, "atomic_kernels_per_step")->valueint, 1);
	ck_assert_str_eq(cJSON_GetObjectItem(e, "atomic_kernel")->valuestring, index_add_name);
	ck_assert_str_eq(cJSON_GetObjectItem(e, "lookup_kernel")->valuestring, gather_name);
	ck_assert(strstr(f.v[0].fix, "nn.Embedding") != NULL);
	found_free(&f);
	free(m.path);
}
END_TEST

/*
 * PyTorch launches the backward from its autograd thread: the lookup on the main thread, the
 * zero fill and the atomic add on another, found all the same; and not when the fill and the
 * add are launched by different threads (the add does not follow its zeros).
 */
START_TEST(test_index_select_backward_thread)
{
	struct sim m;
	struct found f;

	for (int split = 0; split < 2; split++) {
		sim_open(&m, split ? "ise_split.db" : "ise_thread.db");
		for (int s = 0; s < STEPS; s++) {
			sim_step_begin(&m);
			m.kernel_tid = 0;
			sim_kernel_named(&m, 7, name_id(&m, gather_name), 20 * US);
			for (int i = 0; i < 30; i++)
				sim_kernel(&m, 7, 100 * US);
			m.kernel_tid = 4242; /* the autograd thread */
			for (int i = 0; i < 30; i++)
				sim_kernel(&m, 7, 100 * US);
			sim_kernel_named(&m, 7, name_id(&m, fill_name), 10 * US);
			if (split)
				m.kernel_tid = 4343;
			sim_kernel_named(&m, 7, name_id(&m, index_add_name), 1 * MS);
			m.kernel_tid = 0;
			sim_sync(&m, CS_SYNC_STREAM_SYNCHRONIZE, 7, gpu_end(&m), CS_ID_NONE);
			sim_step_end(&m);
		}
		sim_finish(&m);
		ck_assert_int_eq(synthetic_count(&m, "index-select-embedding", &f), split ? 0 : 1);
		if (!split) {
			ck_assert_int_eq(f.v[0].nsteps, STEPS - 2);
			ck_assert(f.v[0].severity == CS_SEV_INFO);
		}
		found_free(&f);
		free(m.path);
	}
}
END_TEST

/*
 * Not an embedding written as index_select: nn.Embedding's backward; a gather in the middle of
 * the step (index_select of activations, rows picked by nonzero); an index_add_ with no zero fill
 * before it (written by the program into a buffer it keeps); an atomic add of 50 us (under 2%).
 */
START_TEST(test_index_select_not_embedding)
{
	static const enum lookup hows[] = {LOOKUP_EMBEDDING, LOOKUP_LATE_GATHER, LOOKUP_NO_FILL,
					   LOOKUP_INDEX_SELECT};
	struct sim m;
	struct found f;
	char file[64];

	for (int h = 0; h < 4; h++) {
		snprintf(file, sizeof(file), "ise_neg%d.db", h);
		sim_open(&m, file);
		for (int s = 0; s < STEPS; s++)
			lookup_step(&m, hows[h], h == 3 ? 50 * US : 1 * MS);
		sim_finish(&m);
		ck_assert_msg(synthetic_count(&m, "index-select-embedding", &f) == 0, "case %d: %s",
			      h, f.n ? f.v[0].title : "");
		free(m.path);
	}
}
END_TEST

/* ---- the recorded traces ---- */

static const char *const recorded[] = {
	"samples/rules/traces/clean.db",
	"samples/rules/traces/dataloader-stall-bad.db",
	"samples/rules/traces/dataloader-stall-fixed.db",
	"samples/rules/traces/pageable-memcpy-bad.db",
	"samples/rules/traces/pageable-memcpy-negative_gpu_bound.db",
	"samples/rules/traces/launch-starvation-bad.db",
	"samples/rules/traces/d2h-sync-bad.db",
	"samples/rules/traces/low-utilization-bad.db",
	"samples/rules/traces/cuda-core-scan-negative_nonzero_select.db",
	"samples/rules/traces/cuda-core-scan-negative_short_cumsum.db",
	"samples/rules/traces/zero-grad-memset-negative_buffer_reset.db",
	"tests/data/corpus/pt_item_every15.db",
	"tests/data/corpus/pt_epoch_sync.db",
};
#define NRECORDED ((int)(sizeof(recorded) / sizeof(recorded[0])))

START_TEST(test_recorded_none)
{
	char path[4096];
	struct loaded l;
	struct found f;

	snprintf(path, sizeof(path), "%s/%s", tu_source_root(), recorded[_i]);
	load(&l, path, NULL);
	ck_assert_int_gt(cs_steps_steady(&l.s), 3);
	run_rule(&l, "host-created-tensor", &f);
	ck_assert_msg(f.n == 0, "%s: %s", recorded[_i], f.n ? f.v[0].title : "");
	found_free(&f);
	run_rule(&l, "index-select-embedding", &f);
	ck_assert_msg(f.n == 0, "%s: %s", recorded[_i], f.n ? f.v[0].title : "");
	found_free(&f);
	unload(&l);
}
END_TEST

/* dataloader-stall-bad's batch decoded in the training thread stays dataloader-stall's. */
START_TEST(test_recorded_loader_kept)
{
	char path[4096];
	struct loaded l;
	struct found f;

	snprintf(path, sizeof(path), "%s/samples/rules/traces/dataloader-stall-bad.db",
		 tu_source_root());
	load(&l, path, NULL);
	run_rule(&l, "dataloader-stall", &f);
	ck_assert_int_eq(f.n, 1);
	found_free(&f);
	unload(&l);
}
END_TEST

static Suite *rules_rules3_suite(void)
{
	Suite *s = suite_create("rules_rules3");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_host_created_mid_step);
	tcase_add_test(tc, test_host_created_at_start_is_loader);
	tcase_add_test(tc, test_host_created_pinned_or_small);
	tcase_add_test(tc, test_host_created_gpu_busy);
	tcase_add_test(tc, test_host_created_rare);
	tcase_add_test(tc, test_host_created_period_steps);
	tcase_add_test(tc, test_index_select_lookup);
	tcase_add_test(tc, test_index_select_not_embedding);
	tcase_add_test(tc, test_index_select_backward_thread);
	tcase_add_loop_test(tc, test_recorded_none, 0, NRECORDED);
	tcase_add_test(tc, test_recorded_loader_kept);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sim_main(rules_rules3_suite(), "test_rules_rules3");
}
