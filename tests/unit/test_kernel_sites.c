/*
 * test_kernel_sites.c - the lines that launched a kernel finding's kernels (sites.c), as the
 * report shows them.
 *
 * A prefix sum launched every step from two Python lines (model.py:10 twice a step, model.py:20
 * once), plus one launch a step without a stack (a launch record sampled away) that counts at
 * model.py:10, the site most of that kernel's launches had: cuda-core-scan lists both lines with
 * their launches and GPU time, costliest first, in text, JSON ("locations") and markdown. A kernel
 * name launched only without stacks gives no site; a trace without stacks gives none (the
 * committed traces' report is unchanged: the golden test).
 *
 * The other kernel findings, each on a synthetic trace whose launches come from two lines of
 * different cost (model.py:10 costlier than model.py:20): unfused-elementwise (a chain's kernels,
 * each with its time but the longest's and the idle before it), unfused-optimizer (the
 * per-tensor kernels, each with the idle of the run before it), zero-grad-memset (fills and
 * memsets, each with its time and the idle of the run before it), index-select-embedding (the
 * atomic accumulations, their time) and launch-starvation (the launch after each starved gap,
 * with the gap): the JSON lists both lines with their launches and costs in that order, the text
 * report a `where:` line for each.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/analyze.h"
#include "rulesim.h"
#include "testutil.h"

#define SCAN_NAME "_ZN2at6native32tensor_kernel_scan_innermost_dimIfSt4plusIfEEEvPT_PKS4_jjjS4_T0_"

/* A step: other work, the scans (a from sa twice, b from sb once, one launch without a stack). */
static void scan_step(struct sim *m, int64_t scan, int64_t sa, int64_t sb, int64_t unstacked)
{
	sim_step_begin(m);
	m->kernel_stack = CS_ID_NONE;
	sim_kernel(m, 7, 2 * MS);
	m->kernel_stack = sa;
	sim_kernel_named(m, 7, scan, 3 * MS);
	sim_kernel_named(m, 7, scan, 3 * MS);
	m->kernel_stack = sb;
	sim_kernel_named(m, 7, scan, 1 * MS);
	m->kernel_stack = CS_ID_NONE;
	sim_kernel_named(m, 7, unstacked, 3 * MS);
	sim_step_end(m);
}

static cJSON *report_json(const char *path)
{
	const char *js[] = {"cuscope", "report",	 "--format", "json",
			    "--rules", "cuda-core-scan", path,	     NULL};
	struct tu_result j = tu_cuscope(js);
	cJSON *doc;

	ck_assert_msg(j.rc == 0, "%s", j.err);
	doc = cJSON_Parse(j.out);
	ck_assert_ptr_nonnull(doc);
	tu_result_free(&j);
	return doc;
}

START_TEST(test_scan_sites)
{
	struct sim m;
	cs_frame a = {2, 0, NULL, "forward", 0, "model.py", 10};
	cs_frame b = {2, 0, NULL, "normalize", 0, "model.py", 20};
	int64_t sa, sb, scan;
	cJSON *doc, *loc, *l0, *l1;

	sim_open(&m, "scan_sites.db");
	sa = cs_writer_add_stack(m.w, &a, 1);
	sb = cs_writer_add_stack(m.w, &b, 1);
	ck_assert(sa >= 0 && sb >= 0);
	scan = name_id(&m, SCAN_NAME);
	for (int s = 0; s < STEPS; s++)
		scan_step(&m, scan, sa, sb, scan);
	sim_finish(&m);
	{
		const char *txt[] = {"cuscope",	       "report", "--no-color", "--rules",
				     "cuda-core-scan", m.path,	 NULL};
		const char *md[] = {"cuscope", "report",	 "--format", "markdown",
				    "--rules", "cuda-core-scan", m.path,     NULL};
		struct tu_result t = tu_cuscope(txt), k = tu_cuscope(md);
		const char *p1, *p2;
		int64_t n0, n1;

		ck_assert_msg(t.rc == 0 && k.rc == 0, "%s%s", t.err, k.err);
		p1 = strstr(t.out, "where:    model.py:10 in forward (");
		p2 = strstr(t.out, "model.py:20 in normalize (");
		ck_assert_msg(p1 && p2 && p1 < p2, "%s", t.out);
		doc = report_json(m.path);
		loc = cJSON_GetObjectItem(
			cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "findings"), 0), "locations");
		ck_assert_int_eq(cJSON_GetArraySize(loc), 2);
		l0 = cJSON_GetArrayItem(loc, 0);
		l1 = cJSON_GetArrayItem(loc, 1);
		ck_assert_int_eq(cJSON_GetObjectItem(l0, "line")->valueint, 10);
		ck_assert_int_eq(cJSON_GetObjectItem(l1, "line")->valueint, 20);
		/* three launches a step at line 10 (the unstacked one counted there), one at 20;
		 * 9 ms against 1 ms of GPU time */
		n0 = (int64_t)cJSON_GetObjectItem(l0, "count")->valuedouble;
		n1 = (int64_t)cJSON_GetObjectItem(l1, "count")->valuedouble;
		ck_assert_msg(n1 >= STEPS / 2 && n0 == 3 * n1, "%lld and %lld launches",
			      (long long)n0, (long long)n1);
		ck_assert_int_eq((int64_t)cJSON_GetObjectItem(l0, "cost_ns")->valuedouble,
				 n1 * 9 * MS);
		ck_assert_int_eq((int64_t)cJSON_GetObjectItem(l1, "cost_ns")->valuedouble,
				 n1 * 1 * MS);
		cJSON_Delete(doc);
		ck_assert_msg(strstr(k.out, "- **Where:**\n  - `model.py:10 in forward`:"), "%s",
			      k.out);
		tu_result_free(&t);
		tu_result_free(&k);
	}
	free(m.path);
}
END_TEST

/* The launches of one scan kernel have no stack at all (another scan has): only the other is a
 * site. */
START_TEST(test_unstacked_name_has_no_site)
{
	struct sim m;
	cs_frame a = {2, 0, NULL, "forward", 0, "model.py", 10};
	int64_t sa, scan, other;
	cJSON *doc, *f, *loc;

	sim_open(&m, "scan_unstacked.db");
	sa = cs_writer_add_stack(m.w, &a, 1);
	scan = name_id(&m, SCAN_NAME);
	other = name_id(&m, "_ZN3cub11DeviceScanKernelIiEEvv");
	for (int s = 0; s < STEPS; s++)
		scan_step(&m, scan, sa, sa, other);
	sim_finish(&m);
	doc = report_json(m.path);
	f = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "findings"), 0);
	ck_assert_ptr_nonnull(f);
	/* one site: no list, the finding's own location */
	loc = cJSON_GetObjectItem(f, "locations");
	ck_assert_msg(!loc || cJSON_GetArraySize(loc) <= 1, "%s", cJSON_Print(f));
	ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(f, "location"), "line")->valueint,
			 10);
	cJSON_Delete(doc);
	free(m.path);
}
END_TEST

/* No stacks in the trace: no sites, no location. */
START_TEST(test_no_stacks_no_sites)
{
	struct sim m;
	int64_t scan;
	cJSON *doc, *f;

	sim_open(&m, "scan_nostack.db");
	scan = name_id(&m, SCAN_NAME);
	for (int s = 0; s < STEPS; s++)
		scan_step(&m, scan, CS_ID_NONE, CS_ID_NONE, scan);
	sim_finish(&m);
	doc = report_json(m.path);
	f = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "findings"), 0);
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_null(cJSON_GetObjectItem(f, "locations"));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(f, "location")));
	ck_assert_ptr_null(cJSON_GetObjectItem(cJSON_GetObjectItem(f, "evidence"), "sites"));
	cJSON_Delete(doc);
	free(m.path);
}
END_TEST

#define FILL_NAME                                               \
	"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_" \
	"11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_"              \
	"T1_"
#define GEMM_NAME   "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
#define GATHER_NAME "_ZN2at6native24vectorized_gather_kernelILi16ElEEvPcS2_PT0_illllb"
#define INDEX_ADD_NAME                                                                            \
	"_ZN2at6native19indexFuncLargeIndexIfljLi2ELi2ELin2ELb1ENS0_44_GLOBAL__N__50c743a2_11_"   \
	"Indexing_cu_89862edb9ReduceAddEEEvNS_4cuda6detail10TensorInfoIT_T1_EENS6_IKS7_S8_EENS6_" \
	"IKT0_S8_EEiiS8_S8_llRKT6_S7_"

/* Eight element-wise kernels of different functions (a per-tensor optimizer update). */
static const char *const ew_names[8] = {
	"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BinaryFunctorIfffNS0_"
	"10MulFunctorIfEEEE",
	"_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_16lerp_kernel_scalarEv",
	"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIfffNS0_"
	"10MulFunctorIfEEEE",
	"_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_14addcmul_cuda_kernelEv",
	"_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_16sqrt_kernel_cudaEv",
	"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BinaryFunctorIfffNS0_"
	"10DivFunctorIfEEEE",
	"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13CUDAFunctorOnSelf_addIfEEEE",
	"_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_14addcdiv_cuda_kernelEv"};

/* A memset of bytes on stream, launched from m->kernel_stack. */
static void memset_at(struct sim *m, int stream, int64_t bytes, int64_t dur)
{
	cs_memset c;

	memset(&c, 0, sizeof(c));
	c.launch_start = m->h;
	c.launch_end = m->h + m->launch_ns;
	c.start = next_start(m, stream);
	c.end = c.start + dur;
	c.pid = PID;
	c.launch_tid = TID;
	c.launch_cbid = CS_ID_NONE;
	c.stream_id = (uint32_t)stream;
	c.correlation_id = ++m->corr;
	c.is_async = 1;
	c.bytes = bytes;
	c.graph_id = c.graph_node_id = CS_ID_NONE;
	c.stack_id = m->kernel_stack;
	ck_assert_int_eq(cs_writer_add_memset(m->w, &c), 0);
	m->g[stream] = c.end;
	m->h = c.launch_end;
}

/* The host waits until the GPU has run out of work. */
static void drain(struct sim *m)
{
	sim_sync(m, CS_SYNC_CONTEXT_SYNCHRONIZE, CS_ID_NONE, gpu_end(m), CS_ID_NONE);
}

/*
 * unfused-elementwise: a chain of four 100 us kernels from line 10 and one of two 50 us kernels
 * from line 20, each behind a GEMM (queued: the GPU starts each 1 us after the previous one). A
 * chain costs its kernels' time but the longest's and the idle between them: 300 + 3 us at line
 * 10 (the longest, the first, charged nothing of its own), 50 + 1 us at line 20.
 */
START_TEST(test_unfused_elementwise_sites)
{
	struct sim m;
	int64_t st[2];

	sim_open(&m, "sites_ew.db");
	sim_two_stacks(&m, st);
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		m.kernel_stack = CS_ID_NONE;
		sim_kernel_grid(&m, 7, GEMM_NAME, 264, 1 * MS);
		m.kernel_stack = st[0];
		for (int i = 0; i < 4; i++)
			sim_kernel_grid(&m, 7, ew_names[i], 65536, 100 * US);
		m.kernel_stack = CS_ID_NONE;
		sim_kernel_grid(&m, 7, GEMM_NAME, 264, 1 * MS);
		m.kernel_stack = st[1];
		for (int i = 4; i < 6; i++)
			sim_kernel_grid(&m, 7, ew_names[i], 16384, 50 * US);
		drain(&m);
		sim_host(&m, 50 * US);
		sim_step_end(&m);
	}
	sim_finish(&m);
	sim_expect_sites(m.path, "unfused-elementwise",
			 &(struct site_want){10, 4, 303 * US, 303 * US},
			 &(struct site_want){20, 2, 51 * US, 51 * US});
	free(m.path);
}
END_TEST

/*
 * unfused-optimizer: after the GPU ran out of work, ten tensors (of two sizes) updated by eight
 * 2 us kernels each, each launched after 20 us of Python: the first six from line 10, the last two
 * from line 20. The GPU idles 5 + 20 - 2 = 23 us before each kernel but the run's first.
 */
START_TEST(test_unfused_optimizer_sites)
{
	struct sim m;
	int64_t st[2];
	const int64_t gap = 23 * US;

	sim_open(&m, "sites_opt.db");
	sim_two_stacks(&m, st);
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		m.kernel_stack = CS_ID_NONE;
		for (int i = 0; i < 30; i++)
			sim_kernel(&m, 7, 60 * US);
		drain(&m);
		for (int t = 0; t < 10; t++)
			for (int o = 0; o < 8; o++) {
				m.kernel_stack = st[o < 6 ? 0 : 1];
				sim_host(&m, 20 * US);
				sim_kernel_grid(&m, 7, ew_names[o], t % 2 ? 2 : 2048, 2 * US);
			}
		sim_step_end(&m);
	}
	sim_finish(&m);
	sim_expect_sites(m.path, "unfused-optimizer",
			 &(struct site_want){10, 60, 59 * gap, 59 * gap},
			 &(struct site_want){20, 20, 20 * gap, 20 * gap});
	free(m.path);
}
END_TEST

/*
 * zero-grad-memset: after the GPU ran out of work, twelve fills from line 10 and four memsets from
 * line 20, 2 us each, launched 4 us apart: each write costs its 2 us and the 5 + 4 - 2 = 7 us of
 * idle before it (not the run's first).
 */
START_TEST(test_zero_grad_sites)
{
	struct sim m;
	int64_t st[2];

	sim_open(&m, "sites_zero.db");
	sim_two_stacks(&m, st);
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		for (int t = 0; t < 16; t++) {
			m.kernel_stack = st[t < 12 ? 0 : 1];
			sim_host(&m, 4 * US);
			if (t < 12)
				sim_kernel_grid(&m, 7, FILL_NAME, t % 2 ? 2 : 2048, 2 * US);
			else
				memset_at(&m, 7, t % 2 ? 4096 : 4 * MIB, 2 * US);
		}
		m.kernel_stack = CS_ID_NONE;
		for (int i = 0; i < 30; i++)
			sim_kernel(&m, 7, 60 * US);
		drain(&m);
		sim_step_end(&m);
	}
	sim_finish(&m);
	sim_expect_sites(
		m.path, "zero-grad-memset",
		&(struct site_want){10, 12, 12 * 2 * US + 11 * 7 * US, 12 * 2 * US + 11 * 7 * US},
		&(struct site_want){20, 4, 4 * 9 * US, 4 * 9 * US});
	free(m.path);
}
END_TEST

/*
 * index-select-embedding: two tables looked up with index_select, at lines 10 and 20 of the
 * forward; the backward (on its own thread and without a line of the model, as autograd's) runs
 * them in reverse: the second table's atomic accumulation (300 us) first, then the first's (1 ms),
 * each after its zero fill. The sites are the lookups' lines, each with its own accumulation.
 */
START_TEST(test_index_select_sites)
{
	struct sim m;
	int64_t st[2];

	sim_open(&m, "sites_ise.db");
	sim_two_stacks(&m, st);
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		for (int i = 0; i < 2; i++) {
			m.kernel_stack = st[i];
			sim_kernel_grid(&m, 7, GATHER_NAME, 64, 20 * US);
		}
		m.kernel_stack = CS_ID_NONE;
		for (int i = 0; i < 60; i++)
			sim_kernel(&m, 7, 100 * US);
		m.kernel_tid = 4343; /* the autograd thread */
		for (int i = 0; i < 2; i++) {
			sim_kernel_grid(&m, 7, FILL_NAME, 64, 10 * US);
			sim_kernel_grid(&m, 7, INDEX_ADD_NAME, 64, i ? 1 * MS : 300 * US);
		}
		m.kernel_tid = 0;
		sim_sync(&m, CS_SYNC_STREAM_SYNCHRONIZE, 7, gpu_end(&m), CS_ID_NONE);
		sim_step_end(&m);
	}
	sim_finish(&m);
	sim_expect_sites(m.path, "index-select-embedding",
			 &(struct site_want){10, 1, 1 * MS, 1 * MS},
			 &(struct site_want){20, 1, 300 * US, 300 * US});
	free(m.path);
}
END_TEST

/*
 * launch-starvation: ten times a step, 50 us of host work then a 10 us kernel from line 10, 20 us
 * then one from line 20; the GPU has always run out of work, so each kernel's gap is 5 + 50 - 10 =
 * 45 us at line 10 (55 us for the step's first, after the 10 us between two steps) and 5 + 20 -
 * 10 = 15 us at line 20 (three quarters of the step idle).
 */
START_TEST(test_launch_starvation_sites)
{
	struct sim m;
	int64_t st[2];

	sim_open(&m, "sites_starve.db");
	sim_two_stacks(&m, st);
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		for (int i = 0; i < 10; i++) {
			m.kernel_stack = st[0];
			sim_host(&m, 50 * US);
			sim_kernel_named(&m, 7, name_id(&m, GEMM_NAME), 10 * US);
			m.kernel_stack = st[1];
			sim_host(&m, 20 * US);
			sim_kernel_named(&m, 7, name_id(&m, GEMM_NAME), 10 * US);
		}
		sim_step_end(&m);
	}
	sim_finish(&m);
	sim_expect_sites(m.path, "launch-starvation",
			 &(struct site_want){10, 10, 9 * 45 * US + 55 * US, 9 * 45 * US + 55 * US},
			 &(struct site_want){20, 10, 10 * 15 * US, 10 * 15 * US});
	free(m.path);
}
END_TEST

static Suite *sites_suite(void)
{
	Suite *s = suite_create("kernel_sites");
	TCase *tc = tcase_create("kernel_sites");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_scan_sites);
	tcase_add_test(tc, test_unstacked_name_has_no_site);
	tcase_add_test(tc, test_no_stacks_no_sites);
	tcase_add_test(tc, test_unfused_elementwise_sites);
	tcase_add_test(tc, test_unfused_optimizer_sites);
	tcase_add_test(tc, test_zero_grad_sites);
	tcase_add_test(tc, test_index_select_sites);
	tcase_add_test(tc, test_launch_starvation_sites);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sim_main(sites_suite(), "test_kernel_sites");
}
