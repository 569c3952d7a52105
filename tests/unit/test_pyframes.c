/*
 * test_pyframes.c - the Python frame walker (src/collectors/pyframes.c) under every Python
 * interpreter on the machine: python3 and python3.10 to python3.13 on PATH or in /usr/bin, and
 * every pyenv version's bin/python3. Each runs tests/data/pyframes_helper.py, which loads the
 * probe library (tests/unit/pyframes_probe.c, path in $CUSCOPE_PYFRAMES_PROBE) with ctypes and
 * has it read the calling thread's frames, with the GIL released, from known places. On 3.10 to
 * 3.13 the innermost frames must be exactly the known file, function (qualified on 3.11+) and
 * line, and every frame above the probe must match the interpreter's own view; any other version,
 * and a debug or free-threaded build, must give no frames and still run to the end. The helper
 * also blocks the main thread inside the fake torch autograd entry points of tests/data/fake_torch
 * while a thread without Python frames captures: that thread must get the main thread's frames
 * down to the line that called backward(), and none when the main thread is blocked elsewhere.
 * Skipped (as a pass) when there is no python3.
 */
#include <check.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#define MAX_INTERP   64
#define MAX_SECTIONS 32
#define MAX_LINES    160

static char *interps[MAX_INTERP];
static int ninterps;
static char helper[PATH_MAX], fake_init[PATH_MAX], fake_graph[PATH_MAX];

/* ---- finding interpreters ---- */

static void add_interp(const char *path)
{
	char real[PATH_MAX];

	if (access(path, X_OK) || !realpath(path, real))
		return;
	for (int i = 0; i < ninterps; i++) {
		if (!strcmp(interps[i], real))
			return;
	}
	if (ninterps < MAX_INTERP)
		interps[ninterps++] = strdup(real);
}

static void add_pyenv(const char *root)
{
	char pattern[PATH_MAX];
	glob_t g;

	snprintf(pattern, sizeof(pattern), "%s/versions/*/bin/python3", root);
	if (glob(pattern, 0, NULL, &g))
		return;
	for (size_t i = 0; i < g.gl_pathc; i++)
		add_interp(g.gl_pathv[i]);
	globfree(&g);
}

static void find_interpreters(void)
{
	static const char *const names[] = {"python3", "python3.10", "python3.11", "python3.12",
					    "python3.13"};
	const char *env = getenv("PATH");
	char *path = strdup(env ? env : ""), *save = NULL;
	char buf[PATH_MAX];

	for (char *dir = strtok_r(path, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		/* pyenv's shims are scripts that pick a version: the versions are listed below. */
		if (!*dir || strstr(dir, "/.pyenv/shims"))
			continue;
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			snprintf(buf, sizeof(buf), "%s/%s", dir, names[i]);
			add_interp(buf);
		}
	}
	free(path);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(buf, sizeof(buf), "/usr/bin/%s", names[i]);
		add_interp(buf);
	}
	if (getenv("PYENV_ROOT"))
		add_pyenv(getenv("PYENV_ROOT"));
	add_pyenv("/root/.pyenv");
}

/* ---- the helper's output ---- */

struct section {
	char name[32];
	int frames; /* what cs_py_walk (or cs_py_walk_backward) returned */
	int nlines;
	char *lines[MAX_LINES];
	int checked, check_ok;
	int borrowed, own, same; /* a "borrowed" section: own frames and identical captures */
};

struct run {
	char *out;
	char build[32]; /* release, debug or free-threaded */
	int major, minor, init, version, native, repeat_total, repeat_same, borrow_on_main;
	long hammer_tries, hammer_hits, hammer_bad;
	int key_same, key_different, key_nonzero; /* chain-key */
	int nsections;
	struct section sections[MAX_SECTIONS];
};

static void parse(struct run *r)
{
	struct section *cur = NULL;
	char *save = NULL;

	r->init = r->version = r->native = r->repeat_total = r->repeat_same = -2;
	r->borrow_on_main = -2;
	r->hammer_tries = r->hammer_hits = r->hammer_bad = -2;
	r->key_same = r->key_different = r->key_nonzero = -1;
	for (char *l = strtok_r(r->out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char name[32];
		int n, own, same;

		if (sscanf(l, "python %d %d", &r->major, &r->minor) == 2 ||
		    sscanf(l, "build %31s", r->build) == 1 || sscanf(l, "init %d", &r->init) == 1 ||
		    sscanf(l, "version %d", &r->version) == 1 ||
		    sscanf(l, "native %d", &r->native) == 1 ||
		    sscanf(l, "thread-repeat %d %d", &r->repeat_total, &r->repeat_same) == 2 ||
		    sscanf(l, "borrow-on-main %d", &r->borrow_on_main) == 1 ||
		    sscanf(l, "chain-key %d %d %d", &r->key_same, &r->key_different,
			   &r->key_nonzero) == 3 ||
		    sscanf(l, "borrow-hammer %ld %ld %ld", &r->hammer_tries, &r->hammer_hits,
			   &r->hammer_bad) == 3)
			continue;
		if (sscanf(l, "borrowed %31s %d %d %d", name, &own, &n, &same) == 4 &&
		    r->nsections < MAX_SECTIONS) {
			cur = &r->sections[r->nsections++];
			snprintf(cur->name, sizeof(cur->name), "%s", name);
			cur->frames = n;
			cur->borrowed = 1;
			cur->own = own;
			cur->same = same;
			continue;
		}
		if (sscanf(l, "begin %31s %d", name, &n) == 2 && r->nsections < MAX_SECTIONS) {
			cur = &r->sections[r->nsections++];
			snprintf(cur->name, sizeof(cur->name), "%s", name);
			cur->frames = n;
		} else if (!strncmp(l, "end ", 4)) {
			cur = NULL;
		} else if (cur && !strncmp(l, "check ", 6)) {
			cur->checked = 1;
			cur->check_ok = !strcmp(l + 6, "ok");
		} else if (cur && cur->nlines < MAX_LINES) {
			cur->lines[cur->nlines++] = l;
		}
	}
}

static const struct section *section(const struct run *r, const char *name, const char *interp)
{
	for (int i = 0; i < r->nsections; i++) {
		if (!strcmp(r->sections[i].name, name))
			return &r->sections[i];
	}
	ck_abort_msg("%s: no section '%s' in the helper's output", interp, name);
	return NULL;
}

/* The line of file marked "# mark:name". */
static int mark_in(const char *file, const char *name)
{
	char want[64];
	const char *at;
	char *text = tu_read_file(file, NULL);
	int line = 1;

	ck_assert_msg(text != NULL, "cannot read %s", file);
	snprintf(want, sizeof(want), "# mark:%s\n", name);
	at = strstr(text, want);
	ck_assert_msg(at != NULL, "no mark '%s' in %s", name, file);
	for (const char *p = text; p < at; p++)
		line += *p == '\n';
	free(text);
	return line;
}

/* The line of the helper marked "# mark:name". */
static int mark(const char *name)
{
	return mark_in(helper, name);
}

static void expect_frame(const struct section *s, int i, const char *file, const char *func,
			 int line, const char *interp)
{
	char want[PATH_MAX + 512];

	snprintf(want, sizeof(want), "%s:%s:%d", file, func, line);
	ck_assert_msg(i < s->nlines, "%s, %s: no frame %d (want %s)", interp, s->name, i, want);
	ck_assert_msg(!strcmp(s->lines[i], want), "%s, %s, frame %d: got '%s', want '%s'", interp,
		      s->name, i, s->lines[i], want);
}

/* A frame of the helper file at a marked line. */
static void expect_mark(const struct section *s, int i, const char *func, const char *m,
			const char *interp)
{
	expect_frame(s, i, helper, func, mark(m), interp);
}

/* ---- the checks ---- */

/* A borrowed section: the thread had no frames of its own, and its 100 captures agreed. */
static const struct section *borrowed(const struct run *r, const char *name, int frames,
				      const char *interp)
{
	const struct section *s = section(r, name, interp);

	ck_assert_msg(s->borrowed, "%s, %s: not a borrowed section", interp, name);
	ck_assert_msg(s->own == 0, "%s, %s: the thread without frames found %d of its own", interp,
		      name, s->own);
	ck_assert_msg(s->frames == frames && s->nlines == frames,
		      "%s, %s: %d borrowed frames (%d lines), want %d", interp, name, s->frames,
		      s->nlines, frames);
	ck_assert_msg(s->same == 100, "%s, %s: %d of 100 captures were the same", interp, name,
		      s->same);
	return s;
}

/* Frames borrowed from the main thread blocked in the fake autograd engine call. */
static void check_borrowed(const struct run *r, const char *interp)
{
	const struct section *s;

	/* torch >= 2.2: backward -> _engine_run_backward -> the engine, from a thread without a
	 * thread state and from one with a thread state but no frames (PyTorch's engine threads) */
	for (int state = 0; state < 2; state++) {
		s = borrowed(r, state ? "backward-state" : "backward", 5, interp);
		expect_frame(s, 0, fake_graph, "_engine_run_backward",
			     mark_in(fake_graph, "engine_call"), interp);
		expect_frame(s, 1, fake_init, "backward", mark_in(fake_init, "init_backward"),
			     interp);
		expect_mark(s, 2, "train_step", "backward_call", interp);
		expect_mark(s, 3, "report_borrowed", "report_borrowed", interp);
		expect_mark(s, 4, "<module>", state ? "main_backward_state" : "main_backward",
			    interp);
	}
	/* older torch: backward calls the engine itself */
	s = borrowed(r, "backward-old", 4, interp);
	expect_frame(s, 0, fake_init, "backward", mark_in(fake_init, "direct_engine_call"), interp);
	expect_mark(s, 1, "train_step_old", "backward_call_old", interp);
	expect_mark(s, 2, "report_borrowed", "report_borrowed", interp);
	expect_mark(s, 3, "<module>", "main_backward_old", interp);
	/* a thread blocked in a call, read from another thread: its own frames, down to the line
	 * that called the wait (the lambda and report_borrowed above it) */
	s = borrowed(r, "blocked", 4, interp);
	expect_mark(s, 0, "wait_for_gpu", "blocked_call", interp);
	ck_assert_msg(strstr(s->lines[1], "<lambda>:") != NULL, "%s, blocked: frame 1 is '%s'",
		      interp, s->lines[1]);
	expect_mark(s, 2, "report_borrowed", "report_borrowed", interp);
	/* blocked anywhere else, or in a function of the right name in the wrong file: nothing */
	borrowed(r, "elsewhere", 0, interp);
	borrowed(r, "impostor", 0, interp);
	ck_assert_msg(r->borrow_on_main == 0, "%s: the main thread borrowed %d frames from itself",
		      interp, r->borrow_on_main);
	/* borrowing without pause while the main thread enters and leaves the engine call */
	ck_assert_msg(r->hammer_tries > 0 && r->hammer_hits > 0 && r->hammer_bad == 0,
		      "%s: %ld tries, %ld with frames, %ld not from the engine call (see stderr)",
		      interp, r->hammer_tries, r->hammer_hits, r->hammer_bad);
}

static void check_supported(const struct run *r, const char *interp)
{
	int qual = r->minor >= 11; /* qualified names from 3.11 on */
	const struct section *s;

	ck_assert_msg(r->init == 0, "%s: cs_py_init failed", interp);
	ck_assert_msg(r->version == (r->major << 8 | r->minor), "%s: cs_py_version %#x", interp,
		      r->version);
	for (int i = 0; i < r->nsections; i++) {
		s = &r->sections[i];
		if (s->borrowed)
			continue;
		ck_assert_msg(s->frames > 0 && s->nlines == s->frames,
			      "%s, %s: %d frames, %d lines", interp, s->name, s->frames, s->nlines);
		ck_assert_msg(s->checked && s->check_ok,
			      "%s, %s: the frames above the probe differ from the interpreter's "
			      "(see its stderr)",
			      interp, s->name);
	}

	s = section(r, "nested", interp);
	ck_assert_int_eq(s->frames, 4);
	expect_mark(s, 0, "capture", "capture", interp);
	expect_mark(s, 1, "nested_inner", "nested_inner", interp);
	expect_mark(s, 2, "nested_outer", "nested_outer", interp);
	expect_mark(s, 3, "<module>", "main_nested", interp);

	s = section(r, "method", interp);
	ck_assert_int_eq(s->frames, 4);
	expect_mark(s, 0, "capture", "capture", interp);
	expect_mark(s, 1, qual ? "Model.forward.<locals>.step" : "step", "method_local", interp);
	expect_mark(s, 2, qual ? "Model.forward" : "forward", "method_forward", interp);
	expect_mark(s, 3, "<module>", "main_method", interp);

	s = section(r, "gen", interp);
	ck_assert_int_eq(s->frames, 3);
	expect_mark(s, 1, "gen", "gen", interp);
	expect_mark(s, 2, "<module>", "main_gen", interp);

	s = section(r, "coro", interp);
	ck_assert_int_eq(s->frames, 4);
	expect_mark(s, 1, "coro", "coro", interp);
	expect_mark(s, 2, "run_coro", "run_coro", interp);
	expect_mark(s, 3, "<module>", "main_coro", interp);

	/* 200 levels deep: the probe asks for 128 frames and gets exactly that many. */
	s = section(r, "recurse", interp);
	ck_assert_int_eq(s->frames, 128);
	expect_mark(s, 0, "capture", "capture", interp);
	expect_mark(s, 1, "recurse", "recurse_leaf", interp);
	for (int i = 2; i < 128; i++)
		expect_mark(s, i, "recurse", "recurse", interp);

	s = section(r, "handler", interp);
	expect_mark(s, 1, "in_handler", "handler", interp);

	s = section(r, "traced", interp);
	expect_mark(s, 1, "nested_inner", "nested_inner", interp);
	expect_mark(s, 2, "nested_outer", "nested_outer", interp);

	/* Line jumps of thousands of lines and columns past 255 (checked against the interpreter
	 * above); here the names. */
	s = section(r, "generated", interp);
	ck_assert_msg(!strncmp(s->lines[1], "<generated>:generated_inner:", 28) &&
			      !strncmp(s->lines[2], "<generated>:generated_outer:", 28),
		      "%s, generated: '%s', '%s'", interp, s->lines[1], s->lines[2]);

	/* Latin-1, two-byte and four-byte strings, as UTF-8. */
	s = section(r, "unicode", interp);
	expect_frame(s, 1, "<\u00fcnicode-\u540d-\U00020000>", "\U00020000", 6, interp);
	expect_frame(s, 2, "<\u00fcnicode-\u540d-\U00020000>", "\u51fd\u6570", 4, interp);
	expect_frame(s, 3, "<\u00fcnicode-\u540d-\U00020000>", "caf\u00e9", 2, interp);

	/* A second thread, while the main thread runs Python code with the GIL. */
	s = section(r, "thread", interp);
	expect_mark(s, 0, "capture", "capture", interp);
	expect_mark(s, 1, "worker_inner", "worker_inner", interp);
	expect_mark(s, 2, "worker", "worker", interp);
	ck_assert_msg(s->nlines > 3 && strstr(s->lines[3], "threading.py:"),
		      "%s, thread: frame 3 is '%s', not threading.py's", interp,
		      s->nlines > 3 ? s->lines[3] : "");
	ck_assert_msg(r->repeat_total == 200 && r->repeat_same == 200,
		      "%s: %d of %d captures on the second thread were the same", interp,
		      r->repeat_same, r->repeat_total);

	/* Launch sites: one key per call site. */
	ck_assert_msg(r->key_same == 1 && r->key_different == 1 && r->key_nonzero == 1,
		      "%s: chain keys: same line %d, another line different %d, nonzero %d", interp,
		      r->key_same, r->key_different, r->key_nonzero);

	check_borrowed(r, interp);
}

static void check_unsupported(const struct run *r, const char *interp)
{
	ck_assert_msg(r->init == -1, "%s (%d.%d, %s build): cs_py_init succeeded", interp, r->major,
		      r->minor, r->build);
	ck_assert_msg(r->nsections >= 15 && r->borrow_on_main == 0 && r->hammer_tries > 0 &&
			      r->hammer_hits == 0,
		      "%s: the helper stopped early, or borrowed frames", interp);
	ck_assert_msg(r->key_nonzero == 0, "%s: a chain key from an unsupported version", interp);
	for (int i = 0; i < r->nsections; i++) {
		ck_assert_msg(r->sections[i].frames == 0 && r->sections[i].nlines == 0,
			      "%s (%d.%d), %s: %d frames from an unsupported version", interp,
			      r->major, r->minor, r->sections[i].name, r->sections[i].frames);
	}
}

START_TEST(test_interpreter)
{
	const char *interp = interps[_i];
	const char *probe = getenv("CUSCOPE_PYFRAMES_PROBE");
	const char *argv[] = {interp, "-s", helper, probe, NULL};
	const char *env[] = {"PYTHONIOENCODING=utf-8", "PYTHONDONTWRITEBYTECODE=1", NULL};
	struct run r;
	char *err = NULL;
	int rc;

	ck_assert_msg(probe && *probe, "CUSCOPE_PYFRAMES_PROBE is not set");
	memset(&r, 0, sizeof(r));
	rc = tu_run(argv, env, &r.out, &err);
	ck_assert_msg(rc == 0, "%s exited with %d: %s", interp, rc, err ? err : "");
	parse(&r);
	ck_assert_msg(r.major == 3 && r.native == 0, "%s: unexpected output: %s", interp, r.out);
	fprintf(stderr, "test_pyframes: %s (%d.%d, %s build): %s\n", interp, r.major, r.minor,
		r.build, r.init == 0 ? "frames read" : "unsupported, no frames");
	if (r.minor >= 10 && r.minor <= 13 && !strcmp(r.build, "release"))
		check_supported(&r, interp);
	else
		check_unsupported(&r, interp);
	free(r.out);
	free(err);
}
END_TEST

START_TEST(test_no_python)
{
	fprintf(stderr, "test_pyframes: no python3 on this machine: skipped\n");
}
END_TEST

static Suite *pyframes_suite(void)
{
	Suite *s = suite_create("pyframes");
	TCase *tc = tcase_create("pyframes");

	tcase_set_timeout(tc, 120);
	if (ninterps)
		tcase_add_loop_test(tc, test_interpreter, 0, ninterps);
	else
		tcase_add_test(tc, test_no_python);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	char path[PATH_MAX];
	SRunner *sr;
	int failed;

	snprintf(path, sizeof(path), "%s/tests/data/pyframes_helper.py", tu_source_root());
	if (!realpath(path, helper)) {
		fprintf(stderr, "test_pyframes: cannot find %s\n", path);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/tests/data/fake_torch/torch/autograd/__init__.py",
		 tu_source_root());
	if (!realpath(path, fake_init)) {
		fprintf(stderr, "test_pyframes: cannot find %s\n", path);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/tests/data/fake_torch/torch/autograd/graph.py",
		 tu_source_root());
	if (!realpath(path, fake_graph)) {
		fprintf(stderr, "test_pyframes: cannot find %s\n", path);
		return 1;
	}
	find_interpreters();
	sr = srunner_create(pyframes_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
