/*
 * test_golden.c - `cuscope report` as text, JSON and markdown on a few committed traces, compared
 * byte for byte with the expected outputs committed in tests/data/golden/: what a change to the
 * renderers, the units or a rule does to the report shows as a difference here.
 *
 * The one thing that varies between machines, the trace's path, is written as the path from the
 * source root (the trace is given to cuscope by its absolute path, which is cut back to that; the
 * rest of the output, such as the recorded command, stays as it is).
 *
 * Each case runs twice: the cuscope binary, and cmd_report() of the CLI library linked into this
 * test.
 *
 * With CUSCOPE_UPDATE_GOLDEN=1 in the environment the test writes the golden files instead of
 * comparing them (scripts/update-golden): a change that is meant to change the report is then a
 * reviewed difference of those files.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "testutil.h"

struct golden_case {
	const char *trace;  /* from the source root */
	const char *golden; /* file in tests/data/golden/ */
	const char *args[4];
};

/*
 * Three traces: a rule's finding with its evidence (d2h-sync), one with a sizes-and-memory
 * evidence (memory-ceiling-thrash), a plain CUDA C program (the corpus); -v once.
 */
static const struct golden_case cases[] = {
	{"samples/rules/traces/d2h-sync-bad.db", "d2h-sync-bad.txt", {"--no-color"}},
	{"samples/rules/traces/d2h-sync-bad.db", "d2h-sync-bad.verbose.txt", {"--no-color", "-v"}},
	{"samples/rules/traces/d2h-sync-bad.db", "d2h-sync-bad.json", {"--format", "json"}},
	{"samples/rules/traces/d2h-sync-bad.db", "d2h-sync-bad.md", {"--format", "markdown"}},
	{"samples/rules/traces/memory-ceiling-thrash-bad_real.db",
	 "memory-ceiling-thrash-bad_real.txt",
	 {"--no-color"}},
	{"samples/rules/traces/memory-ceiling-thrash-bad_real.db",
	 "memory-ceiling-thrash-bad_real.json",
	 {"--format", "json"}},
	{"samples/rules/traces/memory-ceiling-thrash-bad_real.db",
	 "memory-ceiling-thrash-bad_real.md",
	 {"--format", "markdown"}},
	{"tests/data/corpus/cu_rare_field_dump.db", "cu_rare_field_dump.txt", {"--no-color"}},
	{"tests/data/corpus/cu_rare_field_dump.db",
	 "cu_rare_field_dump.json",
	 {"--format", "json"}},
	{"tests/data/corpus/cu_rare_field_dump.db",
	 "cu_rare_field_dump.md",
	 {"--format", "markdown"}},
};
#define NCASES (int)(sizeof(cases) / sizeof(cases[0]))

/* s with every occurrence of from replaced by to (malloc'd). */
static char *replace_all(const char *s, const char *from, const char *to)
{
	size_t nfrom = strlen(from), nto = strlen(to), n = 0;
	const char *p;
	char *r, *q;

	for (p = s; (p = strstr(p, from)); p += nfrom)
		n++;
	r = malloc(strlen(s) + n * nto + 1);
	ck_assert_ptr_nonnull(r);
	for (q = r, p = s;;) {
		const char *hit = strstr(p, from);

		if (!hit)
			break;
		memcpy(q, p, (size_t)(hit - p));
		q += hit - p;
		memcpy(q, to, nto);
		q += nto;
		p = hit + nfrom;
	}
	strcpy(q, p);
	return r;
}

/* The first line where a and b differ (1-based), its text in each put in la and lb. */
static int first_difference(const char *a, const char *b, char *la, char *lb, size_t size)
{
	int line = 1;

	for (;;) {
		const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
		size_t na = ea ? (size_t)(ea - a) : strlen(a),
		       nb = eb ? (size_t)(eb - b) : strlen(b);

		if (na != nb || memcmp(a, b, na) || !ea != !eb) {
			snprintf(la, size, "%.*s", (int)na, a);
			snprintf(lb, size, "%.*s", (int)nb, b);
			return line;
		}
		if (!ea)
			return 0;
		a = ea + 1;
		b = eb + 1;
		line++;
	}
}

/* Compare report's output out (for case c) with its golden file, or write it there when updating.
 */
static void check_golden(const struct golden_case *c, const char *raw, int update)
{
	char *rel = malloc(strlen(c->golden) + 32), *golden_path, *prefix, *out;

	/* only the trace's own path: a recorded command may also name a file under the tree in
	 * which it was recorded, which stays as it is */
	prefix = tu_source_file(c->trace);
	out = replace_all(raw, prefix, c->trace);
	sprintf(rel, "tests/data/golden/%s", c->golden);
	golden_path = tu_source_file(rel);
	if (update) {
		ck_assert_msg(!tu_write_file(golden_path, out, strlen(out)), "cannot write %s",
			      golden_path);
	} else {
		char *expected = tu_read_file(golden_path, NULL);
		char la[256], lb[256];
		int line;

		ck_assert_msg(expected, "%s is missing (scripts/update-golden writes it)", rel);
		line = first_difference(expected, out, la, lb, sizeof(la));
		ck_assert_msg(!line,
			      "%s differs from the report at line %d:\n  expected: %s\n  report:   "
			      "%s\n(scripts/update-golden writes the new output when the change is "
			      "meant)",
			      rel, line, la, lb);
		free(expected);
	}
	free(out);
	free(prefix);
	free(golden_path);
	free(rel);
}

static int updating(void)
{
	const char *u = getenv("CUSCOPE_UPDATE_GOLDEN");

	return u && !strcmp(u, "1");
}

/* The cuscope binary. */
START_TEST(test_golden_report)
{
	const struct golden_case *c = &cases[_i];
	const char *argv[8] = {NULL, "report"};
	char *trace = tu_source_file(c->trace);
	struct tu_result r;
	int n = 2;

	for (int i = 0; i < 4 && c->args[i]; i++)
		argv[n++] = c->args[i];
	argv[n++] = trace;
	argv[n] = NULL;
	r = tu_cuscope(argv);
	ck_assert_msg(r.rc == 0, "%s %s: exit %d: %s", c->trace, c->golden, r.rc, r.err);
	ck_assert_msg(r.err[0] == '\0', "%s: stderr: %s", c->golden, r.err);
	check_golden(c, r.out, updating());
	free(trace);
	tu_result_free(&r);
}
END_TEST

/*
 * The same through cmd_report() of the CLI library, called here with stdout sent to a file: the
 * command's code as the binary runs it, without a process in between.
 */
START_TEST(test_golden_report_linked)
{
	const struct golden_case *c = &cases[_i];
	char *argv[8] = {"report"};
	char *trace = tu_source_file(c->trace), *dir = tu_tmpdir(), *path = tu_path(dir, "out");
	char *out;
	int n = 1, fd, saved, rc;

	for (int i = 0; i < 4 && c->args[i]; i++)
		argv[n++] = (char *)c->args[i];
	argv[n++] = trace;
	argv[n] = NULL;
	setenv("TZ", "UTC", 1);
	unsetenv("POSIXLY_CORRECT");
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_ge(fd, 0);
	dup2(fd, STDOUT_FILENO);
	close(fd);
	cli_getopt_begin();
	rc = cmd_report(n, argv);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	ck_assert_msg(rc == 0, "%s %s: exit %d", c->trace, c->golden, rc);
	out = tu_read_file(path, NULL);
	ck_assert_ptr_nonnull(out);
	check_golden(c, out, 0);
	free(out);
	free(path);
	free(trace);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("golden");
	TCase *tc = tcase_create("report");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, test_golden_report, 0, NCASES);
	if (!updating())
		tcase_add_loop_test(tc, test_golden_report_linked, 0, NCASES);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
