/*
 * test_kernel_sites.c - the lines that launched a kernel finding's kernels (kernel_sites.c), as the
 * report shows them.
 *
 * A prefix sum launched every step from two Python lines (model.py:10 twice a step, model.py:20
 * once), plus one launch a step without a stack (a launch record sampled away) that counts at
 * model.py:10, the site most of that kernel's launches had: cuda-core-scan lists both lines with
 * their launches and GPU time, costliest first, in text, JSON ("locations") and markdown. A kernel
 * name launched only without stacks gives no site; a trace without stacks gives none (the
 * committed traces' report is unchanged: the golden test).
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

static Suite *sites_suite(void)
{
	Suite *s = suite_create("kernel_sites");
	TCase *tc = tcase_create("kernel_sites");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_scan_sites);
	tcase_add_test(tc, test_unstacked_name_has_no_site);
	tcase_add_test(tc, test_no_stacks_no_sites);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	tmp_dir = tu_tmpdir();
	if (!tmp_dir) {
		fprintf(stderr, "test_kernel_sites: cannot make a temporary directory\n");
		return 1;
	}
	sr = srunner_create(sites_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
