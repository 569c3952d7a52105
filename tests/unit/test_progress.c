/*
 * test_progress.c - the progress line (src/util/progress.c): shown on a terminal only, after its
 * delay, at most once an interval, with the percentage or count it was given, erased at the end;
 * nothing when the output is not a terminal.
 */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuscope/progress.h"

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Everything written to the pipe so far (the write end closed by the caller). */
static char *drain(int fd)
{
	static char buf[65536];
	size_t n = 0;
	ssize_t k;

	while (n + 1 < sizeof(buf) && (k = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)k;
	buf[n] = '\0';
	return buf;
}

static int count(const char *s, const char *what)
{
	int n = 0;

	for (; (s = strstr(s, what)) != NULL; s++)
		n++;
	return n;
}

START_TEST(test_not_a_terminal)
{
	int fds[2];

	ck_assert_int_eq(pipe(fds), 0);
	/* a pipe is not a terminal: no progress line, and NULL is fine everywhere */
	ck_assert_ptr_null(cs_progress_start_fd(fds[1], "importing", 0, 0, 10));
	cs_progress_set(NULL, 1, 2);
	cs_progress_phase(NULL, "x");
	cs_progress_end(NULL);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

START_TEST(test_line_throttled_and_erased)
{
	int fds[2];
	cs_progress *p;
	char *out;

	ck_assert_int_eq(pipe(fds), 0);
	p = cs_progress_start_fd(fds[1], "exporting", 1, 0, 100);
	ck_assert_ptr_nonnull(p);
	for (int i = 0; i <= 50; i++) { /* 500 ms of work, updated every 10 ms */
		cs_progress_set(p, i, 50);
		sleep_ms(10);
	}
	cs_progress_phase(p, "writing");
	cs_progress_set(p, 1234, 0);
	sleep_ms(250);
	cs_progress_end(p);
	close(fds[1]);
	out = drain(fds[0]);
	close(fds[0]);
	ck_assert_msg(strstr(out, "\rcuscope: exporting... ") != NULL, "output: %s", out);
	ck_assert_msg(strstr(out, "%") != NULL, "no percentage: %s", out);
	ck_assert_msg(strstr(out, "\rcuscope: writing... 1234 ") != NULL, "no count: %s", out);
	/* 750 ms at most once every 100 ms: about 7 lines, never one per update */
	ck_assert_int_ge(count(out, "\rcuscope: "), 3);
	ck_assert_int_le(count(out, "\rcuscope: "), 10);
	/* erased at the end */
	ck_assert_int_eq(strcmp(out + strlen(out) - 4, "\r\033[K"), 0);
}
END_TEST

START_TEST(test_quick_work_shows_nothing)
{
	int fds[2];
	cs_progress *p;

	ck_assert_int_eq(pipe(fds), 0);
	p = cs_progress_start_fd(fds[1], "reading", 1, 500, 100);
	ck_assert_ptr_nonnull(p);
	cs_progress_set(p, 5, 10);
	sleep_ms(50);
	cs_progress_end(p); /* done before the delay: the terminal is left alone */
	close(fds[1]);
	ck_assert_str_eq(drain(fds[0]), "");
	close(fds[0]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("progress");
	TCase *tc = tcase_create("progress");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_not_a_terminal);
	tcase_add_test(tc, test_line_throttled_and_erased);
	tcase_add_test(tc, test_quick_work_shows_nothing);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
