/*
 * test_launch_sites.c - the launch sites of the injection library (src/collectors/stacks.c) inside
 * a real Python interpreter, without a GPU: tests/data/stacks_helper.py loads the probe library
 * (tests/unit/stacks_probe.c) and launches from known places.
 *
 * A Python thread captures a launch's stack once per call site: 1000 launches from one line share
 * one nonzero stack id and write one stack record; another line gets another id; two lines in one
 * loop two ids; one line reached through two native paths one id (the key is the Python
 * frames, not the captured stack). A thread without Python frames samples each kernel function's
 * launches: the first 4 and then the powers of two, 8 of 100 and 11 of 1000.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static const char *helper;

START_TEST(test_launch_sites)
{
	const char *probe = getenv("CUSCOPE_STACKS_PROBE");
	const char *argv[] = {"python3", "-s", helper, probe, NULL};
	char *out = NULL, *err = NULL, *l;
	int rc, init = -1, python = -1, a_ids = -1, a_nonzero = -1, b_ids = -1, b_diff = -1;
	int records = -1, loop = -1, paths = -1, n100 = -1, n1000 = -1;

	ck_assert_msg(probe && *probe, "CUSCOPE_STACKS_PROBE is not set");
	rc = tu_run(argv, NULL, &out, &err);
	if (rc == 127 || (err && strstr(err, "No such file"))) {
		fprintf(stderr, "test_launch_sites: no python3: skipped\n");
		free(out);
		free(err);
		return;
	}
	ck_assert_msg(rc == 0, "helper exited with %d: %s", rc, err ? err : "");
	for (l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
		sscanf(l, "init %d %d", &init, &python);
		sscanf(l, "site-a %d %d", &a_ids, &a_nonzero);
		sscanf(l, "site-b %d %d", &b_ids, &b_diff);
		sscanf(l, "records %d", &records);
		sscanf(l, "loop %d", &loop);
		sscanf(l, "native-paths %d", &paths);
		sscanf(l, "native %d %d", &n100, &n1000);
	}
	ck_assert_int_eq(init, 0);
	/* the sampling of threads without Python frames holds whatever the interpreter */
	ck_assert_int_eq(n100, 8);
	ck_assert_int_eq(n1000, 11);
	if (!python) {
		fprintf(stderr,
			"test_launch_sites: this python3's frames are not read: call sites not "
			"checked\n");
		free(out);
		free(err);
		return;
	}
	ck_assert_msg(a_ids == 1 && a_nonzero == 1, "one line: %d ids, all nonzero %d", a_ids,
		      a_nonzero);
	ck_assert_msg(b_ids == 1 && b_diff == 1, "another line: %d ids, different %d", b_ids,
		      b_diff);
	ck_assert_msg(records == 2, "%d stack records for two call sites", records);
	ck_assert_int_eq(loop, 2);
	/* keyed by the Python frames: the first capture's stack for the line, whatever the native
	 * path after it (a capture per launch would give two) */
	ck_assert_int_eq(paths, 1);
	free(out);
	free(err);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("launch_sites");
	TCase *tc = tcase_create("launch_sites");
	SRunner *sr;
	int failed;

	helper = tu_source_file("tests/data/stacks_helper.py");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_launch_sites);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
