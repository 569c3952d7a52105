/*
 * test_cli.c - the cuscope command line, run as a real binary: global options, the command table,
 * option errors, `info` and `stats` on a trace written here with known numbers (text and JSON), and
 * the bad inputs every command must refuse with one line on stderr and exit code 2.
 */
#include <check.h>
#include <math.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "cuscope/trace.h"
#include "testutil.h"

#define US  1000 /* ns */
#define MIB (1024 * 1024)

/* Traces shared by the tests, written once in main(). */
static char *sample_db;	   /* two processes, known kernels, copies and memsets */
static char *long_name_db; /* one kernel with a long name */
static char *tmp_dir;

/* ---- writing the traces (in main(), before the tests: no ck_assert there) ---- */

#define need(ok, what) tu_need(ok, "test_cli", what)

/* A kernel of 128 threads without its launch (nor the thread that made it). */
static cs_kernel kernel_at(uint32_t pid, int64_t name_id, int64_t start, int64_t end)
{
	cs_kernel k = tu_kernel(pid, name_id, CS_TS_UNKNOWN, start, end);

	k.launch_tid = 0;
	k.block_x = 128;
	return k;
}

/* A copy without its call (nor the thread that made it), never asynchronous: from pinned memory
 * to the device, or from the device into pinned memory. */
static cs_memcpy memcpy_at(uint32_t pid, int kind, int64_t bytes, int64_t start, int64_t end)
{
	cs_memcpy m = tu_memcpy(pid, kind, bytes, CS_TS_UNKNOWN, CS_TS_UNKNOWN, start, end);

	m.launch_tid = 0;
	m.is_async = 0;
	if (kind != CS_COPY_HTOD)
		m.dst_kind = CS_MEM_PINNED;
	return m;
}

static cs_process process(uint32_t pid, uint32_t ppid, int32_t rank, const char *cmd,
			  int64_t dropped)
{
	cs_process p;

	memset(&p, 0, sizeof(p));
	p.pid = pid;
	p.ppid = ppid;
	p.start = 0;
	p.end = 500 * US;
	p.command_line = cmd;
	p.rank = p.local_rank = rank;
	p.world_size = 2;
	p.exit_code = 0;
	p.used_cuda = 1;
	p.dropped_records = dropped;
	return p;
}

static void add_stream(cs_trace_writer *w, uint32_t pid)
{
	cs_stream s = {.pid = pid, .device_id = 0, .context_id = 1, .stream_id = 7};

	need(cs_writer_add_stream(w, &s) == 0, cs_writer_errmsg(w));
}

/*
 * Process 100 (rank 0): kernel A 10/20/30 us, B 100 us, one A without an end; HtoD 2 x 1 MiB of 100
 * us each, DtoH 4 KiB in 10 us, a memset of 256 B in 2 us. Process 200 (rank 1, 7 dropped records):
 * kernel C 40 us.
 */
static void write_sample(const char *path)
{
	cs_trace_writer *w;
	cs_error err;
	cs_process p;
	cs_device d;
	cs_memset ms;
	cs_kernel k;
	cs_memcpy m;
	int64_t a, b, c;

	need(cs_writer_open(path, 1, &w, &err) == 0, err.msg);
	need(cs_writer_set_meta(w, "cuscope_version", "0.1.0") == 0, cs_writer_errmsg(w));
	need(cs_writer_set_meta(w, "command", "torchrun --nproc-per-node 2 train.py") == 0,
	     cs_writer_errmsg(w));
	need(cs_writer_set_meta(w, "host", "node7") == 0, cs_writer_errmsg(w));
	need(cs_writer_set_meta_int(w, "realtime_base_ns", 1700000000123000000LL) == 0,
	     cs_writer_errmsg(w));
	/* PCIe 4.0 x16: 16 GT/s x 16 x 128/130 / 8 = 31.5 GB/s */
	need(cs_writer_set_meta(w, "gpu_links",
				"[{\"uuid\":\"GPU-0a1b2c3d-0000-1111-2222-333344445555\","
				"\"bus\":\"0000:18:00.0\",\"gts\":16,\"width\":16}]") == 0,
	     cs_writer_errmsg(w));
	/* what record measured recording to cost a launch (calibrate.c's value, abridged) */
	need(cs_writer_set_meta(
		     w, "launch_cost",
		     "{\"version\":2,\"ns_per_launch\":1517.4,\"device\":\"NVIDIA H200\","
		     "\"rounds\":9,\"added_wall_ns\":{\"attached\":1071,"
		     "\"kernel_records\":353.2,\"other_kinds_and_callbacks\":288,"
		     "\"cuscope_code\":-21}}") == 0,
	     cs_writer_errmsg(w));

	p = process(100, 1, 0, "python train.py --rank 0", 0);
	need(cs_writer_add_process(w, &p) == 0, cs_writer_errmsg(w));
	p = process(200, 1, 1, "python train.py --rank 1", 7);
	need(cs_writer_add_process(w, &p) == 0, cs_writer_errmsg(w));

	memset(&d, 0, sizeof(d));
	d.pid = 100;
	d.uuid = "GPU-0a1b2c3d-0000-1111-2222-333344445555";
	d.name = "NVIDIA H200";
	d.total_memory = 150754820096LL;
	d.sm_count = 132;
	d.compute_major = 9;
	d.compute_minor = 0;
	need(cs_writer_add_device(w, &d) == 0, cs_writer_errmsg(w));
	add_stream(w, 100);
	add_stream(w, 200);

	a = cs_writer_intern(w, "A");
	b = cs_writer_intern(w, "B");
	c = cs_writer_intern(w, "C");
	need(a >= 0 && b >= 0 && c >= 0, "cannot intern kernel names");

	m = memcpy_at(100, CS_COPY_HTOD, MIB, 0, 100 * US);
	need(cs_writer_add_memcpy(w, &m) == 0, cs_writer_errmsg(w));
	m = memcpy_at(100, CS_COPY_HTOD, MIB, 100 * US, 200 * US);
	need(cs_writer_add_memcpy(w, &m) == 0, cs_writer_errmsg(w));
	k = kernel_at(100, a, 200 * US, 210 * US);
	need(cs_writer_add_kernel(w, &k) == 0, cs_writer_errmsg(w));
	k = kernel_at(100, a, 210 * US, 230 * US);
	need(cs_writer_add_kernel(w, &k) == 0, cs_writer_errmsg(w));
	k = kernel_at(100, a, 230 * US, 260 * US);
	need(cs_writer_add_kernel(w, &k) == 0, cs_writer_errmsg(w));
	k = kernel_at(100, b, 260 * US, 360 * US);
	need(cs_writer_add_kernel(w, &k) == 0, cs_writer_errmsg(w));
	k = kernel_at(100, a, 360 * US, CS_TS_UNKNOWN);
	need(cs_writer_add_kernel(w, &k) == 0, cs_writer_errmsg(w));

	memset(&ms, 0, sizeof(ms));
	ms.start = 360 * US;
	ms.end = 362 * US;
	ms.launch_start = ms.launch_end = CS_TS_UNKNOWN;
	ms.pid = 100;
	ms.launch_cbid = CS_ID_NONE;
	ms.stream_id = 7;
	ms.mem_kind = CS_MEM_DEVICE;
	ms.bytes = 256;
	ms.graph_id = ms.graph_node_id = CS_ID_NONE;
	ms.stack_id = CS_ID_NONE;
	need(cs_writer_add_memset(w, &ms) == 0, cs_writer_errmsg(w));

	m = memcpy_at(100, CS_COPY_DTOH, 4096, 362 * US, 372 * US);
	need(cs_writer_add_memcpy(w, &m) == 0, cs_writer_errmsg(w));
	k = kernel_at(200, c, 400 * US, 440 * US);
	need(cs_writer_add_kernel(w, &k) == 0, cs_writer_errmsg(w));

	need(cs_writer_finish(w, &err) == 0, err.msg);
}

/* a plain (not mangled) cuBLAS name: stats shows it as it is */
static const char long_kernel_name[] =
	"sm80_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize32x64x8_stage3_warpsize1x2x1_ffma_aligna4_"
	"alignc4_execute_kernel__5x_cublas";

static void write_long_name(const char *path)
{
	cs_trace_writer *w;
	cs_error err;
	cs_process p = process(300, 1, CS_ID_NONE, "./a.out", 0);
	cs_kernel k;
	int64_t id;

	need(cs_writer_open(path, 1, &w, &err) == 0, err.msg);
	need(cs_writer_add_process(w, &p) == 0, cs_writer_errmsg(w));
	id = cs_writer_intern(w, long_kernel_name);
	need(id >= 0, "cannot intern the kernel name");
	k = kernel_at(300, id, 0, 5 * US);
	need(cs_writer_add_kernel(w, &k) == 0, cs_writer_errmsg(w));
	need(cs_writer_finish(w, &err) == 0, err.msg);
}

/* ---- running cuscope ---- */

#define run(...) tu_cuscope((const char *[]){NULL, __VA_ARGS__, NULL})

static int starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/*
 * The cells of the first line of text that ends with "  last" (a table row whose last column is
 * last), split at runs of two or more spaces. Returns the number of cells (0 when there is no such
 * line).
 */
static int row_cells(const char *text, const char *last, char cells[][64], int max)
{
	size_t ll = strlen(last);

	for (const char *line = text; *line;) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);

		if (len > ll + 2 && !memcmp(line + len - ll, last, ll) &&
		    !memcmp(line + len - ll - 2, "  ", 2)) {
			int n = 0;
			size_t i = 0;

			while (i < len && n < max) {
				size_t start, end;

				while (i < len && line[i] == ' ')
					i++;
				if (i >= len)
					break;
				start = i;
				while (i < len &&
				       !(line[i] == ' ' && (i + 1 >= len || line[i + 1] == ' ')))
					i++;
				end = i;
				snprintf(cells[n], 64, "%.*s", (int)(end - start), line + start);
				n++;
			}
			return n;
		}
		line = eol ? eol + 1 : line + len;
	}
	return 0;
}

static void assert_row(const char *text, const char *last, const char *const *expect, int n)
{
	char cells[16][64];
	int got = row_cells(text, last, cells, 16);

	ck_assert_msg(got == n, "row '%s': %d cells, expected %d, in:\n%s", last, got, n, text);
	for (int i = 0; i < n; i++)
		ck_assert_msg(!strcmp(cells[i], expect[i]), "row '%s' cell %d: '%s', expected '%s'",
			      last, i, cells[i], expect[i]);
}

/* The value of a "label   value" line of info's text output ("" when missing), trimmed. */
static const char *info_value(const char *text, const char *label, char *buf, size_t size)
{
	size_t ll = strlen(label);

	buf[0] = '\0';
	for (const char *line = text; *line;) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		const char *p = line;

		while (*p == ' ')
			p++;
		if ((size_t)(p - line) + ll + 2 <= len && !memcmp(p, label, ll) && p[ll] == ' ' &&
		    p[ll + 1] == ' ') {
			p += ll;
			while (*p == ' ')
				p++;
			snprintf(buf, size, "%.*s", (int)(len - (size_t)(p - line)), p);
			return buf;
		}
		line = eol ? eol + 1 : line + len;
	}
	return buf;
}

static double json_num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	ck_assert_msg(cJSON_IsNumber(v), "key '%s' is not a number", key);
	return v->valuedouble;
}

static const char *json_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	ck_assert_msg(cJSON_IsString(v), "key '%s' is not a string", key);
	return v->valuestring;
}

/* ---- global options and the command table ---- */

START_TEST(test_version)
{
	struct tu_result r = run("--version");

	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.err, "");
	ck_assert_msg(!strncmp(r.out, "cuscope 0.1.0\n", 14), "%s", r.out);
	ck_assert_msg(strstr(r.out, "trace schema version 2\n") != NULL, "%s", r.out);
	tu_result_free(&r);
}
END_TEST

START_TEST(test_help_lists_commands)
{
	static const char *const commands[] = {"record", "import", "info", "stats"};
	struct tu_result r = run("--help"), h = run("help");

	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.err, "");
	ck_assert_msg(!strncmp(r.out, "usage: cuscope", 14), "%s", r.out);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		char line[64];

		snprintf(line, sizeof(line), "\n  %s ", commands[i]);
		ck_assert_msg(strstr(r.out, line) != NULL, "'%s' missing from:\n%s", commands[i],
			      r.out);
	}
	ck_assert_int_eq(h.rc, 0);
	ck_assert_str_eq(h.out, r.out);
	tu_result_free(&r);
	tu_result_free(&h);
}
END_TEST

START_TEST(test_command_help)
{
	static const char *const commands[] = {"info", "stats"};

	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		struct tu_result a = run(commands[i], "--help"), b = run("help", commands[i]),
				 c = run(commands[i], "-h");
		char usage[64];

		snprintf(usage, sizeof(usage), "usage: cuscope %s ", commands[i]);
		ck_assert_int_eq(a.rc, 0);
		ck_assert_str_eq(a.err, "");
		ck_assert_msg(!strncmp(a.out, usage, strlen(usage)), "%s", a.out);
		ck_assert_int_eq(b.rc, 0);
		ck_assert_str_eq(b.out, a.out);
		ck_assert_int_eq(c.rc, 0);
		ck_assert_str_eq(c.out, a.out);
		tu_result_free(&a);
		tu_result_free(&b);
		tu_result_free(&c);
	}
}
END_TEST

START_TEST(test_no_command)
{
	struct tu_result r = tu_cuscope((const char *[]){NULL, NULL});

	ck_assert_int_eq(r.rc, 2);
	ck_assert_str_eq(r.out, "");
	ck_assert_msg(strstr(r.err, "usage: cuscope") != NULL, "%s", r.err);
	tu_result_free(&r);
}
END_TEST

START_TEST(test_unknown_command)
{
	struct tu_result r = run("frobnicate", "x.db"), h = run("help", "frobnicate");

	tu_assert_one_line_error(&r, "unknown command");
	ck_assert_msg(strstr(r.err, "'frobnicate'") != NULL, "%s", r.err);
	tu_assert_one_line_error(&h, "help for an unknown command");
	tu_result_free(&r);
	tu_result_free(&h);
}
END_TEST

START_TEST(test_bad_option)
{
	struct tu_result a = run("info", "--bogus", sample_db), b = run("stats", "-Z", sample_db),
			 c = run("--bogus"), d = run("stats", "--format", "xml", sample_db),
			 e = run("stats", "--limit", "ten", sample_db),
			 f = run("stats", sample_db, "--format");

	tu_assert_one_line_error(&a, "info --bogus");
	ck_assert_msg(strstr(a.err, "'--bogus'") && strstr(a.err, "try 'cuscope info --help'"),
		      "%s", a.err);
	tu_assert_one_line_error(&b, "stats -Z");
	ck_assert_msg(strstr(b.err, "'-Z'") && strstr(b.err, "try 'cuscope stats --help'"), "%s",
		      b.err);
	tu_assert_one_line_error(&c, "cuscope --bogus");
	tu_assert_one_line_error(&d, "stats --format xml");
	ck_assert_msg(strstr(d.err, "'xml'") != NULL, "%s", d.err);
	tu_assert_one_line_error(&e, "stats --limit ten");
	/* options may follow FILE: a --format there without its value is a missing value */
	tu_assert_one_line_error(&f, "stats FILE --format");
	ck_assert_msg(strstr(f.err, "option '--format' needs a value"), "%s", f.err);
	tu_result_free(&a);
	tu_result_free(&b);
	tu_result_free(&c);
	tu_result_free(&d);
	tu_result_free(&e);
	tu_result_free(&f);
}
END_TEST

/* Options anywhere among the operands (GNU order); "--" ends them. */
START_TEST(test_options_after_operands)
{
	struct tu_result a = run("stats", sample_db, "--format", "json", "--limit", "1"),
			 b = run("info", sample_db, "-f", "json"),
			 c = run("stats", "--", "--limit", sample_db),
			 d = run("gate", "-q", sample_db, "--baseline", sample_db),
			 e = run("diff", sample_db, "--format", "json", sample_db);
	cJSON *doc;

	ck_assert_msg(a.rc == 0, "rc %d: %s", a.rc, a.err);
	doc = cJSON_Parse(a.out);
	ck_assert_msg(doc != NULL, "not JSON: %s", a.out);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
				 cJSON_GetObjectItemCaseSensitive(doc, "kernels"), "top")),
			 1);
	cJSON_Delete(doc);
	ck_assert_msg(b.rc == 0 && b.out[0] == '{', "rc %d: %s", b.rc, b.err);
	/* after "--" the word "--limit" is a file name */
	tu_assert_one_line_error(&c, "stats -- --limit FILE");
	ck_assert_msg(strstr(c.err, "unexpected argument") || strstr(c.err, "'--limit'"), "%s",
		      c.err);
	ck_assert_msg(d.rc == 0, "gate FILE --baseline FILE: rc %d: %s", d.rc, d.err);
	ck_assert_msg(e.rc == 0 && e.out[0] == '{', "diff: rc %d: %s", e.rc, e.err);
	{
		/* POSIXLY_CORRECT in the environment changes nothing */
		const char *argv[] = {tu_cuscope_bin(), "stats", sample_db, "--limit", "1", NULL};
		const char *env[] = {"POSIXLY_CORRECT=1", NULL};
		char *out = NULL, *err = NULL;

		ck_assert_int_eq(tu_run(argv, env, &out, &err), 0);
		ck_assert_msg(strstr(out, "... 2 more kernels"), "%s%s", out, err);
		free(out);
		free(err);
	}
	{
		/* the README's own lines: export FILE -o OUT, import SPOOL_DIR -o OUT */
		char *spool = tu_source_file("tests/data/spool"), *db = tu_path(tmp_dir, "gnu.db");
		char *json = tu_path(tmp_dir, "gnu.json");
		struct tu_result i = run("import", spool, "-o", db),
				 x = run("export", db, "-o", json, "-q");

		ck_assert_msg(i.rc == 0 && tu_file_exists(db), "import: rc %d: %s", i.rc, i.err);
		ck_assert_msg(x.rc == 0 && tu_file_exists(json), "export: rc %d: %s", x.rc, x.err);
		tu_result_free(&i);
		tu_result_free(&x);
		free(spool);
		free(db);
		free(json);
	}
	tu_result_free(&a);
	tu_result_free(&b);
	tu_result_free(&c);
	tu_result_free(&d);
	tu_result_free(&e);
}
END_TEST

/* An unknown long option names itself and the closest known one, on one line. */
START_TEST(test_unknown_option_suggests)
{
	struct tu_result a = run("stats", "--formt", "json", sample_db),
			 b = run("export", sample_db, "--pdi", "1"),
			 c = run("report", "--zzzzzzzz", sample_db);

	tu_assert_one_line_error(&a, "stats --formt");
	ck_assert_str_eq(a.err, "cuscope: unknown option '--formt'; did you mean '--format'?\n");
	tu_assert_one_line_error(&b, "export --pdi");
	ck_assert_msg(strstr(b.err, "did you mean '--pid'?"), "%s", b.err);
	tu_assert_one_line_error(&c, "report --zzzzzzzz");
	ck_assert_msg(strstr(c.err, "unknown option '--zzzzzzzz'") && !strstr(c.err, "did you"),
		      "%s", c.err);
	tu_result_free(&a);
	tu_result_free(&b);
	tu_result_free(&c);
}
END_TEST

/* Long options may be abbreviated to a unique prefix in every command (GNU getopt_long, as git);
 * a prefix of several is an error that names them. */
START_TEST(test_abbreviated_options)
{
	struct tu_result a = run("stats", "--form", "json", sample_db),
			 b = run("export", "--f", "json", sample_db),
			 c = run("report", "--verb", "--no-col", sample_db);

	ck_assert_msg(a.rc == 0 && a.out[0] == '{', "rc %d: %s", a.rc, a.err);
	tu_assert_one_line_error(&b, "export --f");
	ck_assert_str_eq(b.err, "cuscope: option '--f' is ambiguous: --format, --force; try "
				"'cuscope export --help'\n");
	ck_assert_msg(c.rc == 0, "rc %d: %s", c.rc, c.err);
	tu_result_free(&a);
	tu_result_free(&b);
	tu_result_free(&c);
}
END_TEST

/* A --pid the trace does not have is an error in every command that takes one. */
START_TEST(test_unknown_pid)
{
	char *out = tu_path(tmp_dir, "pid.json");
	struct tu_result a = run("stats", "--pid", "4242", sample_db),
			 b = run("report", "--pid", "4242", sample_db),
			 c = run("export", "-q", "--pid", "4242", "-o", out, sample_db),
			 d = run("export", "-q", "--force", "--pid", "100", "-o", out, sample_db);

	tu_assert_one_line_error(&a, "stats --pid 4242");
	ck_assert_msg(strstr(a.err, "no process 4242"), "%s", a.err);
	/* and says which pids the trace has */
	ck_assert_msg(strstr(a.err, "(it has pids 100, 200)"), "%s", a.err);
	tu_assert_one_line_error(&b, "report --pid 4242");
	ck_assert_msg(strstr(b.err, "no process 4242"), "%s", b.err);
	tu_assert_one_line_error(&c, "export --pid 4242");
	ck_assert_msg(strstr(c.err, "no process 4242"), "%s", c.err);
	ck_assert_msg(d.rc == 0, "export --pid 100: rc %d: %s", d.rc, d.err);
	tu_result_free(&a);
	tu_result_free(&b);
	tu_result_free(&c);
	tu_result_free(&d);
	free(out);
}
END_TEST

/* export keeps an existing output unless --force; the refused file is left as it was. */
START_TEST(test_export_force)
{
	char *out = tu_path(tmp_dir, "existing.json");
	struct tu_result a, b;
	char *text;

	ck_assert_int_eq(tu_write_file(out, "keep\n", 5), 0);
	a = run("export", "-q", "-o", out, sample_db);
	tu_assert_one_line_error(&a, "export onto an existing file");
	ck_assert_msg(strstr(a.err, "exists; use --force"), "%s", a.err);
	text = tu_read_file(out, NULL);
	ck_assert_str_eq(text, "keep\n");
	free(text);
	b = run("export", "-q", sample_db, "-o", out, "--force");
	ck_assert_msg(b.rc == 0, "export --force: rc %d: %s", b.rc, b.err);
	text = tu_read_file(out, NULL);
	ck_assert_msg(text && text[0] == '{', "%s", text ? text : "(none)");
	free(text);
	tu_result_free(&a);
	tu_result_free(&b);
	free(out);
}
END_TEST

START_TEST(test_missing_and_extra_file)
{
	static const char *const commands[] = {"info", "stats"};

	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		struct tu_result a = run(commands[i]), b = run(commands[i], sample_db, sample_db),
				 c = run(commands[i], "--format", "json");

		tu_assert_one_line_error(&a, "missing FILE");
		tu_assert_one_line_error(&b, "extra argument");
		tu_assert_one_line_error(&c, "missing FILE after options");
		tu_result_free(&a);
		tu_result_free(&b);
		tu_result_free(&c);
	}
}
END_TEST

/* ---- info ---- */

START_TEST(test_info_text)
{
	struct tu_result r = run("info", sample_db);
	char v[256];

	ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
	ck_assert_str_eq(r.err, "");
	ck_assert_str_eq(info_value(r.out, "file", v, sizeof(v)), sample_db);
	ck_assert_str_eq(info_value(r.out, "schema version", v, sizeof(v)), "2");
	ck_assert_str_eq(info_value(r.out, "written by", v, sizeof(v)), "cuscope 0.1.0");
	ck_assert_str_eq(info_value(r.out, "command", v, sizeof(v)),
			 "torchrun --nproc-per-node 2 train.py");
	ck_assert_str_eq(info_value(r.out, "host", v, sizeof(v)), "node7");
	ck_assert_str_eq(info_value(r.out, "start time", v, sizeof(v)),
			 "2023-11-14 22:13:20.123 +0000");
	ck_assert_str_eq(info_value(r.out, "duration", v, sizeof(v)), "440 us");
	ck_assert_str_eq(
		info_value(r.out, "recording cost", v, sizeof(v)),
		"1.52 us per launch, measured after the run on NVIDIA H200 (CUPTI attached "
		"+1.07, its kernel records +0.35, other kinds and callbacks +0.29, cuscope's "
		"code -0.02)");
	ck_assert_str_eq(info_value(r.out, "processes", v, sizeof(v)), "2");
	ck_assert_str_eq(info_value(r.out, "devices", v, sizeof(v)), "1");
	ck_assert_str_eq(info_value(r.out, "streams", v, sizeof(v)), "2");
	ck_assert_str_eq(info_value(r.out, "events", v, sizeof(v)), "10");
	ck_assert_str_eq(info_value(r.out, "kernels", v, sizeof(v)), "6");
	ck_assert_str_eq(info_value(r.out, "memcpys", v, sizeof(v)), "3");
	ck_assert_str_eq(info_value(r.out, "memsets", v, sizeof(v)), "1");
	ck_assert_str_eq(info_value(r.out, "findings", v, sizeof(v)), "0");
	ck_assert_msg(
		!strncmp(info_value(r.out, "dropped records", v, sizeof(v)), "7  WARNING", 10),
		"%s", v);

	/* processes: PID PPID RANK EVENTS DROPPED COMMAND */
	{
		const char *p100[] = {"100", "1", "0", "9", "0", "python train.py --rank 0"};
		const char *p200[] = {"200", "1", "1", "1", "7", "python train.py --rank 1"};
		const char *dev[] = {
			"100", "0",   "NVIDIA H200", "140.4 GiB",
			"132", "9.0", "29.3 GiB/s",  "GPU-0a1b2c3d-0000-1111-2222-333344445555"};

		assert_row(r.out, p100[5], p100, 6);
		assert_row(r.out, p200[5], p200, 6);
		assert_row(r.out, dev[7], dev, 8);
	}
	tu_result_free(&r);
}
END_TEST

START_TEST(test_info_json)
{
	struct tu_result r = run("info", "--format", "json", sample_db);
	cJSON *doc, *procs, *p, *devs, *d, *events;

	ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
	ck_assert_str_eq(r.err, "");
	doc = cJSON_Parse(r.out);
	ck_assert_msg(doc != NULL, "not JSON: %s", r.out);
	ck_assert_str_eq(json_str(doc, "file"), sample_db);
	ck_assert(json_num(doc, "size_bytes") > 0);
	ck_assert_int_eq(json_num(doc, "schema_version"), 2);
	ck_assert_str_eq(json_str(doc, "cuscope_version"), "0.1.0");
	ck_assert_str_eq(json_str(doc, "command_line"), "torchrun --nproc-per-node 2 train.py");
	ck_assert_str_eq(json_str(doc, "host"), "node7");
	ck_assert_str_eq(json_str(doc, "start_time"), "2023-11-14T22:13:20.123Z");
	ck_assert(json_num(doc, "start_realtime_ns") == 1700000000123000000.0);
	ck_assert_int_eq(json_num(doc, "start_ns"), 0);
	ck_assert_int_eq(json_num(doc, "end_ns"), 440 * US);
	ck_assert_int_eq(json_num(doc, "duration_ns"), 440 * US);
	ck_assert_int_eq(json_num(doc, "streams"), 2);
	ck_assert_int_eq(json_num(doc, "events_total"), 10);
	ck_assert(json_num(doc, "strings") >= 3);
	ck_assert_int_eq(json_num(doc, "stacks"), 0);
	ck_assert_int_eq(json_num(doc, "findings"), 0);
	ck_assert_int_eq(json_num(doc, "dropped_records"), 7);
	ck_assert(json_num(cJSON_GetObjectItemCaseSensitive(doc, "launch_cost"), "ns_per_launch") ==
		  1517.4);

	events = cJSON_GetObjectItemCaseSensitive(doc, "events");
	ck_assert_int_eq(json_num(events, "kernel"), 6);
	ck_assert_int_eq(json_num(events, "memcpy"), 3);
	ck_assert_int_eq(json_num(events, "memset"), 1);
	ck_assert_int_eq(json_num(events, "memory"), 0);
	ck_assert_int_eq(json_num(events, "sync"), 0);
	ck_assert_int_eq(json_num(events, "api"), 0);
	ck_assert_int_eq(json_num(events, "nvtx"), 0);

	procs = cJSON_GetObjectItemCaseSensitive(doc, "processes");
	ck_assert_int_eq(cJSON_GetArraySize(procs), 2);
	p = cJSON_GetArrayItem(procs, 0);
	ck_assert_int_eq(json_num(p, "pid"), 100);
	ck_assert_int_eq(json_num(p, "ppid"), 1);
	ck_assert_int_eq(json_num(p, "rank"), 0);
	ck_assert_int_eq(json_num(p, "world_size"), 2);
	ck_assert_int_eq(json_num(p, "events"), 9);
	ck_assert_int_eq(json_num(p, "dropped_records"), 0);
	ck_assert_str_eq(json_str(p, "command_line"), "python train.py --rank 0");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "used_cuda")));
	p = cJSON_GetArrayItem(procs, 1);
	ck_assert_int_eq(json_num(p, "pid"), 200);
	ck_assert_int_eq(json_num(p, "rank"), 1);
	ck_assert_int_eq(json_num(p, "events"), 1);
	ck_assert_int_eq(json_num(p, "dropped_records"), 7);

	devs = cJSON_GetObjectItemCaseSensitive(doc, "devices");
	ck_assert_int_eq(cJSON_GetArraySize(devs), 1);
	d = cJSON_GetArrayItem(devs, 0);
	ck_assert_int_eq(json_num(d, "pid"), 100);
	ck_assert_int_eq(json_num(d, "device_id"), 0);
	ck_assert_str_eq(json_str(d, "name"), "NVIDIA H200");
	ck_assert_str_eq(json_str(d, "uuid"), "GPU-0a1b2c3d-0000-1111-2222-333344445555");
	ck_assert(json_num(d, "total_memory_bytes") == 150754820096.0);
	ck_assert_int_eq(json_num(d, "sm_count"), 132);
	ck_assert_str_eq(json_str(d, "compute_capability"), "9.0");
	ck_assert(fabs(json_num(d, "pcie_link_bytes_per_s") - 16e9 * 16 * 128 / 130 / 8) < 2);
	cJSON_Delete(doc);
	tu_result_free(&r);
}
END_TEST

/* ---- stats ---- */

/*
 * Thousands of processes without their end record (a crafted file, or a job of many short-lived
 * workers): info gives each its own last event, from one query per table, and a pid listed twice
 * gets it on both rows. Process 1000 + i ran one kernel ending at (i + 1) * 10 us; the processes
 * from 3000 on ran nothing.
 */
START_TEST(test_many_processes_without_end)
{
	char *path = tu_path(tmp_dir, "many-no-end.db");
	const int nproc = 3000, nrun = 2000;
	cs_trace_writer *w;
	cs_error err;
	cs_process p;
	cs_kernel k;
	struct tu_result ij;
	cJSON *doc, *procs, *o;
	int64_t a;
	int row = 0;

	need(cs_writer_open(path, 1, &w, &err) == 0, err.msg);
	for (int i = 0; i <= nproc; i++) {
		/* the last one lists pid 1005 again */
		p = process((uint32_t)(i < nproc ? 1000 + i : 1005), 1, CS_ID_NONE, "./worker", 0);
		p.end = CS_TS_UNKNOWN;
		p.exit_code = CS_ID_NONE;
		need(cs_writer_add_process(w, &p) == 0, cs_writer_errmsg(w));
	}
	a = cs_writer_intern(w, "A");
	need(a >= 0, "cannot intern");
	for (int i = 0; i < nrun; i++) {
		k = kernel_at((uint32_t)(1000 + i), a, i * 10 * US, (i + 1) * 10 * US);
		need(cs_writer_add_kernel(w, &k) == 0, cs_writer_errmsg(w));
	}
	need(cs_writer_finish(w, &err) == 0, err.msg);

	ij = run("info", "--format", "json", path);
	ck_assert_msg(ij.rc == 0, "rc %d: %s", ij.rc, ij.err);
	doc = cJSON_Parse(ij.out);
	ck_assert(doc != NULL);
	ck_assert_int_eq(json_num(doc, "processes_without_end"), nproc + 1);
	procs = cJSON_GetObjectItemCaseSensitive(doc, "processes");
	ck_assert_int_eq(cJSON_GetArraySize(procs), nproc + 1);
	cJSON_ArrayForEach(o, procs) {
		int64_t pid = json_num(o, "pid");
		cJSON *last = cJSON_GetObjectItemCaseSensitive(o, "last_event_ns");

		if (pid - 1000 < nrun)
			ck_assert_msg(cJSON_IsNumber(last) &&
					      (int64_t)last->valuedouble == (pid - 1000 + 1) * 10 * US,
				      "row %d, pid %lld", row, (long long)pid);
		else
			ck_assert_msg(!last || cJSON_IsNull(last), "row %d, pid %lld", row,
				      (long long)pid);
		row++;
	}
	cJSON_Delete(doc);
	free(path);
}
END_TEST

/*
 * A process without its end record (killed by SIGKILL, os._exit): info counts it and says from when
 * its records may be missing; report names it in its header (text, JSON, markdown) even when it has
 * no finding to print. Process 100 ended (end set), process 200 did not: its last event ends at
 * 440 us.
 */
START_TEST(test_process_without_end)
{
	char *path = tu_path(tmp_dir, "no-end.db");
	cs_trace_writer *w;
	cs_error err;
	cs_process p;
	cs_kernel k;
	int64_t a;
	struct tu_result it, ij, rt, rj, rm, full;
	cJSON *doc, *procs, *arr;
	char v[256];

	need(cs_writer_open(path, 1, &w, &err) == 0, err.msg);
	p = process(100, 1, CS_ID_NONE, "./a.out", 0);
	need(cs_writer_add_process(w, &p) == 0, cs_writer_errmsg(w));
	p = process(200, 100, CS_ID_NONE, "./a.out --child", 0);
	p.end = CS_TS_UNKNOWN;
	p.exit_code = CS_ID_NONE;
	need(cs_writer_add_process(w, &p) == 0, cs_writer_errmsg(w));
	a = cs_writer_intern(w, "A");
	need(a >= 0, "cannot intern");
	k = kernel_at(100, a, 10 * US, 20 * US);
	need(cs_writer_add_kernel(w, &k) == 0, cs_writer_errmsg(w));
	k = kernel_at(200, a, 400 * US, 440 * US);
	need(cs_writer_add_kernel(w, &k) == 0, cs_writer_errmsg(w));
	k = kernel_at(200, a, 300 * US, 310 * US);
	need(cs_writer_add_kernel(w, &k) == 0, cs_writer_errmsg(w));
	need(cs_writer_finish(w, &err) == 0, err.msg);

	it = run("info", path);
	ck_assert_msg(it.rc == 0, "rc %d: %s", it.rc, it.err);
	ck_assert_msg(!strncmp(info_value(it.out, "no end record", v, sizeof(v)), "1  WARNING", 10),
		      "%s", it.out);
	ck_assert_msg(strstr(it.out, "pid 200: records after 440 us may be missing"),
		      "%s", it.out);
	ck_assert_msg(!strstr(it.out, "pid 100:"), "%s", it.out);

	ij = run("info", "--format", "json", path);
	ck_assert_msg(ij.rc == 0, "rc %d: %s", ij.rc, ij.err);
	doc = cJSON_Parse(ij.out);
	ck_assert(doc != NULL);
	ck_assert_int_eq(json_num(doc, "processes_without_end"), 1);
	/* no launch_cost in the trace: null, and no line in the text */
	ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(doc, "launch_cost")));
	ck_assert_msg(!strstr(it.out, "recording cost"), "%s", it.out);
	procs = cJSON_GetObjectItemCaseSensitive(doc, "processes");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(procs, 0),
								 "end_record")));
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(procs, 1),
								  "end_record")));
	ck_assert_int_eq(json_num(cJSON_GetArrayItem(procs, 1), "last_event_ns"), 440 * US);
	ck_assert(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(procs, 0), "last_event_ns") ==
		  NULL);
	cJSON_Delete(doc);

	rt = run("report", path);
	ck_assert_msg(rt.rc == 0, "rc %d: %s", rt.rc, rt.err);
	ck_assert_msg(strstr(rt.out, "pid 200 ended without its end record (killed, os._exit): "
				     "records after 440 us may be missing"),
		      "%s", rt.out);
	ck_assert_msg(strstr(rt.out, "warning:") < strstr(rt.out, "No findings."), "%s", rt.out);

	rj = run("report", "--format", "json", path);
	ck_assert_msg(rj.rc == 0, "rc %d: %s", rj.rc, rj.err);
	doc = cJSON_Parse(rj.out);
	ck_assert(doc != NULL);
	arr = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "trace"),
					       "processes_without_end");
	ck_assert_int_eq(cJSON_GetArraySize(arr), 1);
	ck_assert_int_eq(json_num(cJSON_GetArrayItem(arr, 0), "pid"), 200);
	ck_assert_int_eq(json_num(cJSON_GetArrayItem(arr, 0), "last_event_ns"), 440 * US);
	cJSON_Delete(doc);

	rm = run("report", "--format", "markdown", path);
	ck_assert_msg(rm.rc == 0, "rc %d: %s", rm.rc, rm.err);
	ck_assert_msg(strstr(rm.out, "| Incomplete | pid 200 ended without its end record"), "%s",
		      rm.out);

	/* a trace whose processes all ended says nothing of the kind */
	full = run("info", sample_db);
	ck_assert_msg(!strstr(full.out, "no end record"), "%s", full.out);
	ck_assert_msg(!strstr(full.out, "implausible"), "%s", full.out);
	tu_result_free(&full);
	full = run("report", sample_db);
	ck_assert_msg(!strstr(full.out, "ended without"), "%s", full.out);

	tu_result_free(&it);
	tu_result_free(&ij);
	tu_result_free(&rt);
	tu_result_free(&rj);
	tu_result_free(&rm);
	tu_result_free(&full);
	free(path);
}
END_TEST

/*
 * Traces recorded on the GPU (tests/gpu/abrupt.sh) of programs that launched a known number of kernels,
 * synchronized and ended at once: by _exit (c-exit, 400 kernels), by SIGKILL from outside 0.2 s after
 * the synchronize (py-sigkill, 601 kernels), by raise(SIGTERM) at its default action (c-term, 400
 * kernels). Every kernel is there; the first two have no end record and say so, the third has its
 * end record with exit status 143 (128 + SIGTERM) and no warning.
 */
START_TEST(test_abrupt_traces)
{
	static const struct {
		const char *file;
		int kernels, without_end, exit_code;
	} cases[] = {
		{"tests/data/abrupt/c-exit.db", 400, 1, -1},
		{"tests/data/abrupt/py-sigkill.db", 601, 1, -1},
		{"tests/data/abrupt/c-term.db", 400, 0, 143},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *path = tu_source_file(cases[i].file);
		struct tu_result j = run("info", "--format", "json", path), t = run("info", path),
				 r = run("report", path);
		cJSON *doc = cJSON_Parse(j.out), *p;

		ck_assert_msg(j.rc == 0 && doc, "%s: rc %d: %s", path, j.rc, j.err);
		ck_assert_int_eq(json_num(cJSON_GetObjectItemCaseSensitive(doc, "events"), "kernel"),
				 cases[i].kernels);
		ck_assert_int_eq(json_num(doc, "processes_without_end"), cases[i].without_end);
		p = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "processes"), 0);
		ck_assert(p != NULL);
		if (cases[i].exit_code >= 0)
			ck_assert_int_eq(json_num(p, "exit_code"), cases[i].exit_code);
		ck_assert_msg((strstr(t.out, "WARNING: ended by SIGKILL") != NULL) ==
				      (cases[i].without_end > 0),
			      "%s: %s", path, t.out);
		ck_assert_msg((strstr(r.out, "ended without its end record") != NULL) ==
				      (cases[i].without_end > 0),
			      "%s: %s", path, r.out);
		if (cases[i].without_end)
			/* the last record is the end of the last kernel, after the trace's start */
			ck_assert(json_num(p, "last_event_ns") > 0);
		cJSON_Delete(doc);
		tu_result_free(&j);
		tu_result_free(&t);
		tu_result_free(&r);
		free(path);
	}
}
END_TEST

START_TEST(test_stats_text)
{
	struct tu_result r = run("stats", sample_db);
	const char *b[] = {"50.0%",  "100 us", "1",    "100 us", "100 us",
			   "100 us", "100 us", "0 ns", "B"};
	const char *a[] = {"30.0%",   "60.0 us", "3",	    "20.0 us", "20.0 us",
			   "10.0 us", "30.0 us", "10.0 us", "A"};
	const char *c[] = {"20.0%",   "40.0 us", "1",	 "40.0 us", "40.0 us",
			   "40.0 us", "40.0 us", "0 ns", "C"};
	const char *htod[] = {"HtoD", "2", "2.0 MiB", "200 us", "10.49 GB/s"};
	const char *dtoh[] = {"DtoH", "1", "4.0 KiB", "10.0 us", "0.41 GB/s"};
	const char *ms[] = {"1", "256 B", "2.00 us", "0.13 GB/s"};

	ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
	ck_assert_str_eq(r.err, "");
	ck_assert_msg(
		starts_with(r.out, "CUDA kernels: 5 launches of 3 kernels, 200 us of GPU time\n"),
		"%s", r.out);
	assert_row(r.out, "Name",
		   (const char *[]){"Time(%)", "Total Time", "Instances", "Avg", "Med", "Min",
				    "Max", "StdDev", "Name"},
		   9);
	assert_row(r.out, "B", b, 9);
	assert_row(r.out, "A", a, 9);
	assert_row(r.out, "C", c, 9);
	/* sorted by total time */
	ck_assert(strstr(r.out, "  B\n") < strstr(r.out, "  A\n"));
	ck_assert(strstr(r.out, "  A\n") < strstr(r.out, "  C\n"));
	ck_assert_msg(strstr(r.out, "\n1 kernel without timestamps skipped\n") != NULL, "%s",
		      r.out);
	ck_assert_msg(strstr(r.out, "more kernel") == NULL, "%s", r.out);
	assert_row(r.out, "10.49 GB/s", htod, 5);
	assert_row(r.out, "0.41 GB/s", dtoh, 5);
	assert_row(r.out, "0.13 GB/s", ms, 4);
	tu_result_free(&r);
}
END_TEST

START_TEST(test_stats_limit_and_pid)
{
	struct tu_result r = run("stats", "--limit", "1", sample_db);
	struct tu_result p = run("stats", "--pid", "100", sample_db);
	struct tu_result q = run("stats", "--pid", "200", "--format", "json", sample_db);
	const char *b[] = {"62.5%",  "100 us", "1",    "100 us", "100 us",
			   "100 us", "100 us", "0 ns", "B"};
	const char *a[] = {"37.5%",   "60.0 us", "3",	    "20.0 us", "20.0 us",
			   "10.0 us", "30.0 us", "10.0 us", "A"};
	cJSON *doc, *kern;

	ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
	ck_assert_msg(strstr(r.out, "  B\n") && !strstr(r.out, "  A\n") && !strstr(r.out, "  C\n"),
		      "%s", r.out);
	ck_assert_msg(strstr(r.out, "\n... 2 more kernels (50.0% of GPU time)\n") != NULL, "%s",
		      r.out);

	ck_assert_msg(p.rc == 0, "rc %d: %s", p.rc, p.err);
	assert_row(p.out, "B", b, 9);
	assert_row(p.out, "A", a, 9);
	ck_assert_msg(strstr(p.out, "  C\n") == NULL, "%s", p.out);

	ck_assert_msg(q.rc == 0, "rc %d: %s", q.rc, q.err);
	doc = cJSON_Parse(q.out);
	ck_assert_msg(doc != NULL, "not JSON: %s", q.out);
	ck_assert_int_eq(json_num(doc, "pid"), 200);
	kern = cJSON_GetObjectItemCaseSensitive(doc, "kernels");
	ck_assert_int_eq(json_num(kern, "names"), 1);
	ck_assert_int_eq(json_num(kern, "total_ns"), 40 * US);
	ck_assert_int_eq(json_num(kern, "skipped_without_timestamps"), 0);
	ck_assert_str_eq(
		json_str(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(kern, "top"), 0),
			 "name"),
		"C");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "memcpy")), 0);
	cJSON_Delete(doc);
	tu_result_free(&r);
	tu_result_free(&p);
	tu_result_free(&q);
}
END_TEST

START_TEST(test_stats_json)
{
	struct tu_result r = run("stats", "--format", "json", "--limit", "2", sample_db);
	cJSON *doc, *kern, *top, *k, *more, *copies, *c, *ms;

	ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
	ck_assert_str_eq(r.err, "");
	doc = cJSON_Parse(r.out);
	ck_assert_msg(doc != NULL, "not JSON: %s", r.out);
	ck_assert_str_eq(json_str(doc, "file"), sample_db);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(doc, "pid")));
	kern = cJSON_GetObjectItemCaseSensitive(doc, "kernels");
	ck_assert_int_eq(json_num(kern, "total_ns"), 200 * US);
	ck_assert_int_eq(json_num(kern, "instances"), 5);
	ck_assert_int_eq(json_num(kern, "names"), 3);
	ck_assert_int_eq(json_num(kern, "skipped_without_timestamps"), 1);
	top = cJSON_GetObjectItemCaseSensitive(kern, "top");
	ck_assert_int_eq(cJSON_GetArraySize(top), 2);

	k = cJSON_GetArrayItem(top, 0);
	ck_assert_str_eq(json_str(k, "name"), "B");
	ck_assert_double_eq_tol(json_num(k, "time_percent"), 50.0, 1e-9);
	ck_assert_int_eq(json_num(k, "total_ns"), 100 * US);
	ck_assert_int_eq(json_num(k, "instances"), 1);
	ck_assert_double_eq_tol(json_num(k, "stddev_ns"), 0, 1e-9);

	k = cJSON_GetArrayItem(top, 1);
	ck_assert_str_eq(json_str(k, "name"), "A");
	ck_assert_double_eq_tol(json_num(k, "time_percent"), 30.0, 1e-9);
	ck_assert_int_eq(json_num(k, "total_ns"), 60 * US);
	ck_assert_int_eq(json_num(k, "instances"), 3);
	ck_assert_double_eq_tol(json_num(k, "avg_ns"), 20 * US, 1e-6);
	ck_assert_double_eq_tol(json_num(k, "median_ns"), 20 * US, 1e-6);
	ck_assert_int_eq(json_num(k, "min_ns"), 10 * US);
	ck_assert_int_eq(json_num(k, "max_ns"), 30 * US);
	ck_assert_double_eq_tol(json_num(k, "stddev_ns"), 10 * US, 1e-6);

	more = cJSON_GetObjectItemCaseSensitive(kern, "more");
	ck_assert_int_eq(json_num(more, "names"), 1);
	ck_assert_int_eq(json_num(more, "total_ns"), 40 * US);
	ck_assert_double_eq_tol(json_num(more, "time_percent"), 20.0, 1e-9);

	copies = cJSON_GetObjectItemCaseSensitive(doc, "memcpy");
	ck_assert_int_eq(cJSON_GetArraySize(copies), 2);
	c = cJSON_GetArrayItem(copies, 0);
	ck_assert_str_eq(json_str(c, "direction"), "HtoD");
	ck_assert_int_eq(json_num(c, "count"), 2);
	ck_assert_int_eq(json_num(c, "bytes"), 2 * MIB);
	ck_assert_int_eq(json_num(c, "total_ns"), 200 * US);
	ck_assert_double_eq_tol(json_num(c, "bandwidth_gbps"), 2.0 * MIB / (200 * US), 1e-9);
	c = cJSON_GetArrayItem(copies, 1);
	ck_assert_str_eq(json_str(c, "direction"), "DtoH");
	ck_assert_int_eq(json_num(c, "count"), 1);
	ck_assert_int_eq(json_num(c, "bytes"), 4096);
	ck_assert_int_eq(json_num(c, "total_ns"), 10 * US);

	ms = cJSON_GetObjectItemCaseSensitive(doc, "memset");
	ck_assert_int_eq(json_num(ms, "count"), 1);
	ck_assert_int_eq(json_num(ms, "bytes"), 256);
	ck_assert_int_eq(json_num(ms, "total_ns"), 2 * US);
	cJSON_Delete(doc);
	tu_result_free(&r);
}
END_TEST

/* Display width: characters, not bytes. */
static size_t text_width(const char *s, size_t len)
{
	size_t w = 0;

	for (size_t i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			w++;
	return w;
}

START_TEST(test_stats_width)
{
	struct tu_result whole = run("stats", long_name_db),
			 cut = run("stats", "--width", "100", long_name_db);
	const char *line;

	ck_assert_msg(whole.rc == 0, "rc %d: %s", whole.rc, whole.err);
	/* not a terminal and no --width: names are whole */
	ck_assert_msg(strstr(whole.out, long_kernel_name) != NULL, "%s", whole.out);
	ck_assert_msg(strstr(whole.out, "\xe2\x80\xa6") == NULL, "%s", whole.out);

	ck_assert_msg(cut.rc == 0, "rc %d: %s", cut.rc, cut.err);
	ck_assert_msg(strstr(cut.out, long_kernel_name) == NULL, "%s", cut.out);
	ck_assert_msg(strstr(cut.out, "  sm80_xmma_") != NULL, "%s", cut.out);
	ck_assert_msg(strstr(cut.out, "\xe2\x80\xa6") != NULL, "%s", cut.out);
	ck_assert_msg(strstr(cut.out, "_cublas\n") != NULL, "%s", cut.out);
	ck_assert_msg(
		starts_with(cut.out, "CUDA kernels: 1 launch of 1 kernel, 5.00 us of GPU time\n"),
		"%s", cut.out);
	for (line = cut.out; *line;) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);

		ck_assert_msg(text_width(line, len) <= 100, "line longer than 100: %.*s", (int)len,
			      line);
		line = eol ? eol + 1 : line + len;
	}
	tu_result_free(&whole);
	tu_result_free(&cut);
}
END_TEST

/* Rows grouped by the name as recorded are told apart: the seven multi_tensor_apply_kernel rows of
 * train_small's optimizer show their template arguments, no two Name cells the same. */
START_TEST(test_stats_rows_distinct)
{
	char *trace = tu_source_file("samples/traces/train_small.db");
	struct tu_result r = run("stats", "--limit", "0", "--width", "0", trace);
	char *names[256];
	int n = 0, multi = 0;

	ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
	for (char *line = strtok(r.out, "\n"); line && n < 256; line = strtok(NULL, "\n")) {
		/* a kernel row: "  15.1%  ...  NAME", the name after the last column of numbers */
		char *name = strstr(line, "  ");

		if (!strchr(line, '%') || !strstr(line, "us  ") || !name)
			continue;
		for (char *p = line; (p = strstr(p, "  ")) != NULL; p++)
			name = p;
		while (*name == ' ')
			name++;
		for (int i = 0; i < n; i++)
			ck_assert_msg(strcmp(names[i], name), "two rows named %s", name);
		names[n++] = name;
		if (strstr(name, "multi_tensor_apply_kernel<"))
			multi++;
	}
	ck_assert_int_eq(multi, 7);
	ck_assert_int_ge(n, 20);
	tu_result_free(&r);
	free(trace);
}
END_TEST

/*
 * Kernel names of a committed PyTorch trace: stats shows them demangled and short, its JSON keeps
 * the raw (mangled) name and adds the demangled one (for a name that is not mangled, the same).
 */
START_TEST(test_stats_demangled)
{
	char *trace = tu_source_file("samples/rules/traces/cuda-core-scan-bad.db");
	struct tu_result t = run("stats", "--limit", "0", trace),
			 j = run("stats", "--format", "json", "--limit", "0", trace);
	const cJSON *it, *top;
	cJSON *doc;
	int scan = 0, plain = 0;

	ck_assert_msg(t.rc == 0, "rc %d: %s", t.rc, t.err);
	ck_assert_msg(strstr(t.out, "  at::native::tensor_kernel_scan_innermost_dim<float, "
				    "plus<float>>\n"),
		      "%s", t.out);
	/* two reduce_kernel<512, 1, ...> that differ inside ReduceOp<...>: numbered */
	ck_assert_msg(strstr(t.out, "  at::native::reduce_kernel<512, 1, ReduceOp<...>> #2\n"),
		      "%s", t.out);
	ck_assert_msg(strstr(t.out, "  nvjet_sm90_tst_") != NULL, "%s", t.out);
	ck_assert_msg(strstr(t.out, "_ZN") == NULL, "%s", t.out);

	ck_assert_msg(j.rc == 0, "rc %d: %s", j.rc, j.err);
	doc = cJSON_Parse(j.out);
	ck_assert_ptr_nonnull(doc);
	top = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "kernels"),
					       "top");
	cJSON_ArrayForEach(it, top)
	{
		const char *name = json_str(it, "name");
		const cJSON *dem = cJSON_GetObjectItemCaseSensitive(it, "name_demangled");

		ck_assert_ptr_nonnull(name);
		if (!strncmp(name, "_Z", 2)) {
			ck_assert_msg(cJSON_IsString(dem) && strncmp(dem->valuestring, "_Z", 2),
				      "%s", name);
			if (!strcmp(name, "_ZN2at6native32tensor_kernel_scan_innermost_dimIfSt4plusIfEE"
					  "EvPT_PKS4_jjjS4_T0_")) {
				ck_assert_str_eq(dem->valuestring,
						 "void at::native::tensor_kernel_scan_innermost_dim<"
						 "float, std::plus<float> >(float*, float const*, "
						 "unsigned int, unsigned int, unsigned int, float, "
						 "std::plus<float>)");
				scan++;
			}
		} else {
			ck_assert_msg(cJSON_IsString(dem) && !strcmp(dem->valuestring, name), "%s",
				      name);
			plain++;
		}
	}
	ck_assert_int_eq(scan, 1);
	ck_assert_int_gt(plain, 0);
	cJSON_Delete(doc);
	tu_result_free(&t);
	tu_result_free(&j);
	free(trace);
}
END_TEST

/*
 * A trace with a mangled name, one CUPTI gave demangled, one that is not C++ and a malformed
 * mangled one: stats and export show each readable (the malformed one raw), nothing crashes, and
 * JSON keeps every name as recorded.
 */
START_TEST(test_names_mixed)
{
	static const char *const names[] = {
		"_Z6cs_addPfPKfi",
		"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
		"std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
		"nvjet_sm90_tst_64x8_64x16_1x4_h_bz_NNT",
		"_ZN2at6native13reduce_kernelILi512ELi1ENS0_8Redu",
	};
	static const char *const shown[] = {
		"  cs_add\n",
		"  at::native::vectorized_elementwise_kernel<4, FillFunctor<float>, array<char*, 1ul>>\n",
		"  nvjet_sm90_tst_64x8_64x16_1x4_h_bz_NNT\n",
		"  _ZN2at6native13reduce_kernelILi512ELi1ENS0_8Redu\n",
	};
	char *path = tu_path(tmp_dir, "mixed.db"), *json = tu_path(tmp_dir, "mixed.json"), *text;
	cs_trace_writer *w;
	cs_error err;
	cs_process p = process(400, 1, CS_ID_NONE, "./a.out", 0);
	struct tu_result t, j, e;
	cJSON *doc;
	const cJSON *it;
	int found = 0;

	ck_assert_int_eq(cs_writer_open(path, 1, &w, &err), 0);
	ck_assert_int_eq(cs_writer_add_process(w, &p), 0);
	for (int i = 0; i < 4; i++) {
		int64_t id = cs_writer_intern(w, names[i]);
		cs_kernel k = kernel_at(400, id, (i + 1) * 10 * US, (i + 1) * 10 * US + (i + 1) * US);

		ck_assert_int_ge(id, 0);
		ck_assert_int_eq(cs_writer_add_kernel(w, &k), 0);
	}
	ck_assert_int_eq(cs_writer_finish(w, &err), 0);

	t = run("stats", path);
	ck_assert_msg(t.rc == 0, "rc %d: %s", t.rc, t.err);
	for (int i = 0; i < 4; i++)
		ck_assert_msg(strstr(t.out, shown[i]), "no '%s' in %s", shown[i], t.out);
	j = run("stats", "--format", "json", path);
	ck_assert_msg(j.rc == 0, "rc %d: %s", j.rc, j.err);
	doc = cJSON_Parse(j.out);
	ck_assert_ptr_nonnull(doc);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(
				       cJSON_GetObjectItemCaseSensitive(doc, "kernels"), "top"))
	{
		const char *name = json_str(it, "name"), *dem = json_str(it, "name_demangled");

		for (int i = 0; i < 4; i++)
			found += !strcmp(name, names[i]);
		if (!strcmp(name, names[0]))
			ck_assert_str_eq(dem, "cs_add(float*, float const*, int)");
		else
			ck_assert_str_eq(dem, name);
	}
	ck_assert_int_eq(found, 4);
	cJSON_Delete(doc);

	e = run("export", "-q", "--force", "-o", json, path);
	ck_assert_msg(e.rc == 0, "rc %d: %s", e.rc, e.err);
	text = tu_read_file(json, NULL);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strstr(text, "\"name\":\"cs_add\"") &&
			      strstr(text, "\"kernel\":\"cs_add(float*, float const*, int)\"") &&
			      strstr(text, "\"mangled name\":\"_Z6cs_addPfPKfi\"") &&
			      strstr(text, "\"name\":\"_ZN2at6native13reduce_kernelILi512ELi1ENS0_8Redu\"") &&
			      strstr(text, "\"name\":\"nvjet_sm90_tst_64x8_64x16_1x4_h_bz_NNT\""),
		      "%s", text);
	free(text);
	tu_result_free(&t);
	tu_result_free(&j);
	tu_result_free(&e);
	free(path);
	free(json);
}
END_TEST

/*
 * diff and gate on two committed PyTorch traces: their tables show kernel names demangled and
 * short; diff's JSON keeps the raw name under "kernel" and adds "kernel_demangled".
 */
START_TEST(test_diff_gate_demangled)
{
	char *bad = tu_source_file("samples/rules/traces/cuda-core-scan-bad.db");
	char *fixed = tu_source_file("samples/rules/traces/cuda-core-scan-fixed.db");
	struct tu_result t = run("diff", "-n", "0", bad, fixed),
			 j = run("diff", "--format", "json", bad, fixed),
			 m = run("gate", "-q", "--baseline", bad, fixed, "--markdown", "-");
	const cJSON *it;
	cJSON *doc;
	int kernels = 0;

	ck_assert_msg(t.rc == 0, "rc %d: %s", t.rc, t.err);
	ck_assert_msg(strstr(t.out, "kernel time: at::native::tensor_kernel_scan_innermost_dim<float, "
				    "plus<float>>"),
		      "%s", t.out);
	ck_assert_msg(strstr(t.out, "_ZN") == NULL, "%s", t.out);
	ck_assert_msg(m.rc == 0 || m.rc == 1, "rc %d: %s", m.rc, m.err);
	ck_assert_msg(strstr(m.out, "_ZN") == NULL, "%s", m.out);
	ck_assert_msg(j.rc == 0, "rc %d: %s", j.rc, j.err);
	doc = cJSON_Parse(j.out);
	ck_assert_ptr_nonnull(doc);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(doc, "metrics"))
	{
		const cJSON *kj = cJSON_GetObjectItemCaseSensitive(it, "kernel");
		const char *k, *kd;

		if (!kj)
			continue;
		k = json_str(it, "kernel");
		kd = json_str(it, "kernel_demangled");
		kernels++;
		ck_assert_msg(kd != NULL, "%s", k);
		if (!strncmp(k, "_Z", 2))
			ck_assert_msg(strncmp(kd, "_Z", 2) && strstr(kd, "::"), "%s -> %s", k, kd);
		else
			ck_assert_str_eq(kd, k);
	}
	ck_assert_int_gt(kernels, 0);
	cJSON_Delete(doc);
	tu_result_free(&t);
	tu_result_free(&j);
	tu_result_free(&m);
	free(bad);
	free(fixed);
}
END_TEST

/* Output into a pipe nobody reads: no error message, normal exit code. */
START_TEST(test_stats_closed_pipe)
{
	char *err_path = tu_path(tmp_dir, "pipe-stderr.txt");
	int fds[2], status, errfd;
	pid_t pid;
	char *err;

	ck_assert_int_eq(pipe(fds), 0);
	close(fds[0]);
	errfd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert(errfd >= 0);
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 1);
		dup2(errfd, 2);
		execl(tu_cuscope_bin(), tu_cuscope_bin(), "stats", sample_db, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	close(errfd);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	err = tu_read_file(err_path, NULL);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d, stderr: %s",
		      status, err);
	ck_assert_str_eq(err, "");
	free(err);
	free(err_path);
}
END_TEST

/* ---- bad input ---- */

static void exec_sql(const char *path, const char *sql)
{
	sqlite3 *db;
	char *msg = NULL;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK, "%s: %s", sql, msg);
	sqlite3_close(db);
}

static char *copy_file(const char *from, const char *name, size_t keep)
{
	char *to = tu_path(tmp_dir, name);
	size_t len;
	char *data = tu_read_file(from, &len);

	ck_assert(data != NULL);
	ck_assert_int_eq(tu_write_file(to, data, keep && keep < len ? keep : len), 0);
	free(data);
	return to;
}

/* Every command refuses the file: "cuscope: cannot open 'PATH': ..." on one line, exit code 2. */
static void assert_refused(const char *path, const char *reason)
{
	static const char *const commands[] = {"info", "stats"};
	char prefix[4200];

	snprintf(prefix, sizeof(prefix), "cuscope: cannot open '%s': ", path);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		struct tu_result r = run(commands[i], path),
				 j = run(commands[i], "--format", "json", path);

		tu_assert_one_line_error(&r, reason);
		tu_assert_one_line_error(&j, reason);
		ck_assert_msg(!strncmp(r.err, prefix, strlen(prefix)), "%s: %s", reason, r.err);
		/* the library's reason follows the prefix once, not twice */
		ck_assert_msg(strstr(r.err + strlen(prefix), "cannot open") == NULL, "%s: %s",
			      reason, r.err);
		ck_assert_msg(strlen(r.err) > strlen(prefix) + 1, "%s: no reason: %s", reason,
			      r.err);
		tu_result_free(&r);
		tu_result_free(&j);
	}
}

START_TEST(test_bad_missing_file)
{
	char *path = tu_path(tmp_dir, "no-such-trace.db");

	assert_refused(path, "missing file");
	free(path);
}
END_TEST

START_TEST(test_bad_text_file)
{
	char *path = tu_path(tmp_dir, "notes.txt");
	static const char text[] = "this is not a trace\nat all\n";

	ck_assert_int_eq(tu_write_file(path, text, sizeof(text) - 1), 0);
	assert_refused(path, "text file");
	free(path);
}
END_TEST

START_TEST(test_bad_sqlite_without_meta)
{
	char *path = tu_path(tmp_dir, "other.sqlite");

	exec_sql(path, "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);");
	assert_refused(path, "SQLite file without META");
	free(path);
}
END_TEST

START_TEST(test_bad_newer_schema)
{
	char *path = copy_file(sample_db, "newer.db", 0);

	exec_sql(path, "UPDATE META SET value = '99' WHERE key = 'schema_version';");
	assert_refused(path, "schema_version 99");
	free(path);
}
END_TEST

START_TEST(test_bad_truncated)
{
	size_t len;
	char *data = tu_read_file(sample_db, &len), *path;

	ck_assert(data != NULL && len > 0);
	free(data);
	path = copy_file(sample_db, "truncated.db", len / 2);
	assert_refused(path, "truncated trace");
	free(path);
}
END_TEST

/* ---- output files: never an input, written under an unguessable name, whole or not at all ---- */

/* A copy of the sample trace in a fresh directory; *dir gets the directory. */
static char *trace_copy(char **dir, const char *name)
{
	char *src = tu_source_file("samples/traces/train_small.db"), *data, *path;
	size_t len;

	*dir = tu_tmpdir();
	path = tu_path(*dir, name);
	data = tu_read_file(src, &len);
	ck_assert_ptr_nonnull(data);
	ck_assert_int_eq(tu_write_file(path, data, len), 0);
	free(data);
	free(src);
	return path;
}

static int same_bytes(const char *path, const char *text, size_t len)
{
	size_t n;
	char *got = tu_read_file(path, &n);
	int same = got && n == len && !memcmp(got, text, len);

	free(got);
	return same;
}

/* Entries of dir whose name contains part. */
static int entries_with(const char *dir, const char *part)
{
	char cmd[4400];
	FILE *p;
	int n = 0, c;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' | grep -cF -- '%s'", dir, part);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	if (fscanf(p, "%d", &n) != 1)
		n = -1;
	while ((c = fgetc(p)) != EOF)
		;
	pclose(p);
	return n;
}

/* export -o and gate --junit/--markdown naming an input, by its name or another: refused, the
 * input untouched. */
START_TEST(test_output_is_input)
{
	char *dir, *trace = trace_copy(&dir, "run.db"), *lnk = tu_path(dir, "link.db");
	char *hard = tu_path(dir, "hard.db"), *before;
	size_t len;
	struct tu_result r;

	before = tu_read_file(trace, &len);
	ck_assert_int_eq(symlink("run.db", lnk), 0);
	ck_assert_int_eq(link(trace, hard), 0);
	{
		const char *outs[] = {trace, lnk, hard};

		for (int i = 0; i < 3; i++) {
			const char *argv[] = {NULL, "export", "-o", outs[i], trace, NULL};

			r = tu_cuscope(argv);
			tu_assert_one_line_error(&r, "export onto its input");
			ck_assert_msg(strstr(r.err, "is the trace being exported"), "%s", r.err);
			tu_result_free(&r);
			ck_assert(same_bytes(trace, before, len));
		}
	}
	{
		const char *argv[] = {NULL,	 "gate", "--baseline", trace,
				      "--junit", lnk,	 trace,	       NULL};

		r = tu_cuscope(argv);
		tu_assert_one_line_error(&r, "gate --junit onto the trace");
		ck_assert_msg(strstr(r.err, "--junit") && strstr(r.err, "is an input"), "%s",
			      r.err);
		tu_result_free(&r);
		ck_assert(same_bytes(trace, before, len));
	}
	{
		const char *argv[] = {NULL,	    "gate", "--baseline", hard,
				      "--markdown", hard,   trace,	  NULL};

		r = tu_cuscope(argv);
		tu_assert_one_line_error(&r, "gate --markdown onto the baseline");
		ck_assert_msg(strstr(r.err, "--markdown") && strstr(r.err, "is an input"), "%s",
			      r.err);
		tu_result_free(&r);
		ck_assert(same_bytes(trace, before, len));
	}
	ck_assert_int_eq(entries_with(dir, ".tmp."), 0);
	free(before);
	free(trace);
	free(lnk);
	free(hard);
	free(dir);
}
END_TEST

/*
 * Traces with nothing in them (no event, no process: a writer finished at once), and with events
 * but no process, device or stream rows: every command reads them (exit 0, nothing on stderr), with
 * no empty array handed to qsort() or memcpy() as NULL (the sanitizer build reports that).
 */
START_TEST(test_empty_traces)
{
	char *empty = tu_path(tmp_dir, "empty.db"), *bare = copy_file(sample_db, "bare.db", 0);
	char *dir = tu_tmpdir(), *out = tu_path(dir, "out.json");
	cs_trace_writer *w = NULL;
	cs_error err = {0};

	ck_assert_int_eq(cs_writer_open(empty, 1, &w, &err), 0);
	ck_assert_int_eq(cs_writer_finish(w, &err), 0);
	exec_sql(bare, "DELETE FROM PROCESSES; DELETE FROM TARGET_INFO_GPU; "
		       "DELETE FROM TARGET_INFO_CUDA_STREAM;");
	for (int i = 0; i < 2; i++) {
		const char *path = i ? bare : empty;
		const char *info[] = {NULL, "info", path, NULL};
		const char *json[] = {NULL, "info", "--format", "json", path, NULL};
		const char *stats[] = {NULL, "stats", path, NULL};
		const char *report[] = {NULL, "report", path, NULL};
		const char *exp[] = {NULL, "export", "-q", "--force", "-o", out, path, NULL};
		const char *pf[] = {NULL, "export", "-q", "--force", "-f", "perfetto", "-o", out, path, NULL};
		const char *diff[] = {NULL, "diff", path, path, NULL};
		const char *gate[] = {NULL, "gate", "--baseline", path, path, NULL};
		const char **cmds[] = {info, json, stats, report, exp, pf, diff, gate};

		for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++) {
			struct tu_result r = tu_cuscope(cmds[c]);

			ck_assert_msg(r.rc == 0 && !r.err[0], "%s on %s: exit code %d, stderr: %s",
				      cmds[c][1], path, r.rc, r.err);
			tu_result_free(&r);
		}
	}
	free(out);
	free(dir);
	free(bare);
	free(empty);
}
END_TEST

/*
 * Links planted at the temporary names an output used to have (OUT.tmp.PID, PID the next ones the
 * kernel hands out) are not followed: the file they point to stays as it was.
 */
START_TEST(test_output_planted_links)
{
	char *dir, *trace = trace_copy(&dir, "run.db"), *victim = tu_path(dir, "victim");
	char *json = tu_path(dir, "out.json"), *xml = tu_path(dir, "out.xml");
	char *last = tu_read_file("/proc/sys/kernel/ns_last_pid", NULL), link[4200];
	long next = last ? atol(last) + 1 : (long)getpid() + 1;
	struct tu_result r;

	ck_assert_int_eq(tu_write_file(victim, "precious\n", 9), 0);
	for (long pid = next; pid < next + 400; pid++) {
		snprintf(link, sizeof(link), "%s.tmp.%ld", json, pid);
		ck_assert_int_eq(symlink(victim, link), 0);
		snprintf(link, sizeof(link), "%s.tmp.%ld", xml, pid);
		ck_assert_int_eq(symlink(victim, link), 0);
	}
	{
		const char *argv[] = {NULL, "export", "-q", "-o", json, trace, NULL};

		r = tu_cuscope(argv);
		ck_assert_msg(r.rc == 0, "export: %d %s", r.rc, r.err);
		tu_result_free(&r);
	}
	{
		const char *argv[] = {NULL,	 "gate", "-q",	"--baseline", trace,
				      "--junit", xml,	 trace, NULL};

		r = tu_cuscope(argv);
		ck_assert_msg(r.rc == 0, "gate: %d %s", r.rc, r.err);
		tu_result_free(&r);
	}
	ck_assert(same_bytes(victim, "precious\n", 9));
	ck_assert_int_gt(entries_with(dir, "out.json"), 400); /* the links, and the output */
	{
		char *x = tu_read_file(xml, NULL);

		ck_assert_msg(x && strstr(x, "<testsuite"), "junit: %s", x ? x : "(none)");
		free(x);
	}
	free(last);
	free(trace);
	free(victim);
	free(json);
	free(xml);
	free(dir);
}
END_TEST

/*
 * A write that fails (the file size limit stands in for a full disk) leaves the file that was at
 * the output name as it was, and no temporary beside it.
 */
START_TEST(test_output_failed_write_keeps_previous)
{
	char *dir, *trace = trace_copy(&dir, "run.db");
	char *json = tu_path(dir, "out.json"), *xml = tu_path(dir, "out.xml");
	char *md = tu_path(dir, "out.md");
	struct rlimit saved, rl;
	struct tu_result r1, r2, r3;

	ck_assert_int_eq(tu_write_file(json, "old json\n", 9), 0);
	ck_assert_int_eq(tu_write_file(xml, "old xml\n", 8), 0);
	ck_assert_int_eq(tu_write_file(md, "old md\n", 7), 0);
	signal(SIGXFSZ, SIG_IGN);
	getrlimit(RLIMIT_FSIZE, &saved);
	rl = saved;
	rl.rlim_cur = 1024; /* every report here is larger */
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	{
		const char *argv[] = {NULL, "export", "-q", "--force", "-o", json, trace, NULL};

		r1 = tu_cuscope(argv);
	}
	{
		const char *argv[] = {NULL,	 "gate", "-q",	"--force", "--baseline",
				      trace,	 "--junit", xml, trace,	  NULL};

		r2 = tu_cuscope(argv);
	}
	{
		const char *argv[] = {NULL,	    "gate", "-q",	"--force", "--baseline",
				      trace,	    "--markdown", md,	trace,	   NULL};

		r3 = tu_cuscope(argv);
	}
	setrlimit(RLIMIT_FSIZE, &saved);
	signal(SIGXFSZ, SIG_DFL);
	tu_assert_one_line_error(&r1, "export into a full disk");
	tu_assert_one_line_error(&r2, "gate --junit into a full disk");
	tu_assert_one_line_error(&r3, "gate --markdown into a full disk");
	ck_assert_msg(strstr(r2.err, "cannot write") && strstr(r2.err, "out.xml"), "%s", r2.err);
	ck_assert(same_bytes(json, "old json\n", 9));
	ck_assert(same_bytes(xml, "old xml\n", 8));
	ck_assert(same_bytes(md, "old md\n", 7));
	ck_assert_int_eq(entries_with(dir, ".tmp."), 0);
	tu_result_free(&r1);
	tu_result_free(&r2);
	tu_result_free(&r3);
	{
		/* a directory that does not exist: one line, nothing written */
		char *missing = tu_path(dir, "no/such/out.xml");
		const char *argv[] = {NULL,	 "gate",  "--baseline", trace,
				      "--junit", missing, trace,	NULL};

		r1 = tu_cuscope(argv);
		tu_assert_one_line_error(&r1, "gate --junit into a missing directory");
		tu_result_free(&r1);
		free(missing);
	}
	free(trace);
	free(json);
	free(xml);
	free(md);
	free(dir);
}
END_TEST

/* A FIFO of another user at the output name (it would get the output, or block the writer
 * forever): refused with one line. Needs root, to make a FIFO that is another user's. */
START_TEST(test_output_foreign_fifo)
{
	char *dir, *trace = trace_copy(&dir, "run.db"), *fifo = tu_path(dir, "out.json");
	struct tu_result r;

	if (geteuid() != 0) {
		fprintf(stderr,
			"test_output_foreign_fifo: not root, cannot make another user's FIFO\n");
		free(trace);
		free(fifo);
		free(dir);
		return;
	}
	ck_assert_int_eq(mkfifo(fifo, 0666), 0);
	ck_assert_int_eq(chown(fifo, 65534, 65534), 0);
	{
		const char *argv[] = {NULL, "export", "-o", fifo, trace, NULL};

		r = tu_cuscope(argv);
		tu_assert_one_line_error(&r, "export into another user's FIFO");
		tu_result_free(&r);
	}
	{
		const char *argv[] = {NULL,	 "gate", "--baseline", trace,
				      "--junit", fifo,	 trace,	       NULL};

		r = tu_cuscope(argv);
		tu_assert_one_line_error(&r, "gate --junit into another user's FIFO");
		tu_result_free(&r);
	}
	free(trace);
	free(fifo);
	free(dir);
}
END_TEST

/*
 * Kernel and API name ids without a string, up to 10^15 (a damaged file): `report` reads them as no
 * name, where the rules' arrays indexed by name id asked for petabytes before.
 */
START_TEST(test_dangling_name_ids)
{
	char *src = tu_source_file("samples/rules/traces/cuda-core-scan-bad.db");
	char *path = copy_file(src, "dangling-names.db", 0);
	const char *report[] = {NULL, "report", path, NULL};
	struct tu_result r;

	exec_sql(path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET nameId = 1000000000000000 "
		       "WHERE rowid % 3 = 0; UPDATE CUPTI_ACTIVITY_KIND_RUNTIME "
		       "SET nameId = 999999999999 WHERE rowid % 2 = 0;");
	r = tu_cuscope(report);
	ck_assert_msg(r.rc == 0 && !r.err[0], "exit code %d, stderr: %s", r.rc, r.err);
	tu_result_free(&r);
	free(path);
	free(src);
}
END_TEST

/* Copies of 2^63 - 1 bytes each (a damaged file): outside the plausible sizes, they read as unknown
 * (0 bytes), and `stats`'s sum is that, never a wrapped negative one. */
START_TEST(test_stats_huge_bytes)
{
	char *path = copy_file(sample_db, "huge-bytes.db", 0);
	struct tu_result r;
	cJSON *doc, *c;

	exec_sql(path, "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY_DATA SET bytes = 9223372036854775807;");
	r = run("stats", "--format", "json", path);
	ck_assert_msg(r.rc == 0 && !r.err[0], "exit code %d, stderr: %s", r.rc, r.err);
	doc = cJSON_Parse(r.out);
	ck_assert_ptr_nonnull(doc);
	c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "memcpy"), 0);
	ck_assert_str_eq(json_str(c, "direction"), "HtoD");
	ck_assert(json_num(c, "bytes") == 0);
	cJSON_Delete(doc);
	tu_result_free(&r);
	free(path);
}
END_TEST

/* The kernel table's columns, as views over it must name them. */
static const char kernel_columns[] =
	"start,end,queued,submitted,launchStart,launchEnd,pid,launchTid,launchCbid,launchApiKind,"
	"deviceId,contextId,streamId,correlationId,gridX,gridY,gridZ,blockX,blockY,blockZ,"
	"registersPerThread,staticSharedMemory,dynamicSharedMemory,graphId,graphNodeId,nameId,"
	"stackId";

/* "x AS start, x AS end, ...": every kernel column from one expression x. */
static void counter_columns(char *buf, size_t len, const char *x)
{
	const char *c = kernel_columns;
	size_t n = 0;

	while (*c && n < len) {
		size_t w = strcspn(c, ",");

		n += (size_t)snprintf(buf + n, len - n, "%s%s AS %.*s", n ? ", " : "", x, (int)w,
				      c);
		c += w + (c[w] == ',');
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Event tables that never end: the kernel view (or the table under it) replaced by a recursive
 * view that counts forever, with and without the row count in EVENT_TABLE_INFO, refused as views
 * that cuscope does not write; and a view that joins the kernels' table with itself four times
 * (10^9 rows: counting them, without EVENT_TABLE_INFO's count, is as long as reading a trace of
 * gigabytes), stopped by the work limit. Every command stops within seconds, with one line that
 * says why and exit code 2, and leaves no output file behind.
 */
START_TEST(test_bad_endless_view)
{
	char cols[2048], joined[2048], sql[4096];

	counter_columns(cols, sizeof(cols), "x");
	counter_columns(joined, sizeof(joined), "a.start");
	for (int v = 0; v < 4; v++) {
		char name[64], *path, *out, *dir = tu_tmpdir();

		snprintf(name, sizeof(name), "endless-%d.db", v);
		path = copy_file(sample_db, name, 0);
		if (v < 2)
			snprintf(sql, sizeof(sql),
				 "DROP VIEW CUPTI_ACTIVITY_KIND_KERNEL; "
				 "CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS WITH RECURSIVE r(x) AS "
				 "(SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT x AS rowid, %s "
				 "FROM r;%s",
				 cols,
				 v ? " DELETE FROM EVENT_TABLE_INFO WHERE tableName = "
				     "'CUPTI_ACTIVITY_KIND_KERNEL';"
				   : "");
		else if (v == 3) /* 192 kernels, joined four times, and no row count */
			snprintf(sql, sizeof(sql),
				 "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL_DATA SELECT * FROM "
				 "CUPTI_ACTIVITY_KIND_KERNEL_DATA; "
				 "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL_DATA SELECT * FROM "
				 "CUPTI_ACTIVITY_KIND_KERNEL_DATA; "
				 "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL_DATA SELECT * FROM "
				 "CUPTI_ACTIVITY_KIND_KERNEL_DATA; "
				 "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL_DATA SELECT * FROM "
				 "CUPTI_ACTIVITY_KIND_KERNEL_DATA; "
				 "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL_DATA SELECT * FROM "
				 "CUPTI_ACTIVITY_KIND_KERNEL_DATA; "
				 "DELETE FROM EVENT_TABLE_INFO WHERE tableName = "
				 "'CUPTI_ACTIVITY_KIND_KERNEL'; "
				 "DROP VIEW CUPTI_ACTIVITY_KIND_KERNEL; "
				 "CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS SELECT a.rowid AS "
				 "rowid, "
				 "%s FROM CUPTI_ACTIVITY_KIND_KERNEL_DATA a, "
				 "CUPTI_ACTIVITY_KIND_KERNEL_DATA b, "
				 "CUPTI_ACTIVITY_KIND_KERNEL_DATA c, "
				 "CUPTI_ACTIVITY_KIND_KERNEL_DATA d",
				 joined);
		else /* the table under the view */
			snprintf(sql, sizeof(sql),
				 "PRAGMA legacy_alter_table = ON; "
				 "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL_DATA RENAME TO k; "
				 "CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL_DATA AS WITH RECURSIVE "
				 "r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) "
				 "SELECT k.* FROM r, k");
		exec_sql(path, sql);
		out = tu_path(dir, "out.json");
		{
			const char *info[] = {NULL, "info", path, NULL};
			const char *stats[] = {NULL, "stats", path, NULL};
			const char *report[] = {NULL, "report", path, NULL};
			const char *exp[] = {NULL, "export", "-o", out, path, NULL};
			const char *diff[] = {NULL, "diff", sample_db, path, NULL};
			const char *gate[] = {NULL, "gate", "--baseline", sample_db, path, NULL};
			const char *view[] = {NULL,	   "view", "--port", "0",
					      "--timeout", "5",	   path,     NULL};
			const char **cmds[] = {info, stats, report, exp, diff, gate, view};

			for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
				double t0 = now_s(), took;
				struct tu_result r = tu_cuscope(cmds[i]);

				took = now_s() - t0;
				snprintf(name, sizeof(name), "%s on variant %d", cmds[i][1], v);
				tu_assert_one_line_error(&r, name);
				if (strcmp(cmds[i][1], "view"))
					ck_assert_msg(
						strstr(r.err, v < 3 ? "is not a table"
								    : "exceeded its work limit"),
						"%s: %s", name, r.err);
				ck_assert_msg(took < 30, "%s took %.1f s", cmds[i][1], took);
				tu_result_free(&r);
			}
		}
		ck_assert_msg(!tu_file_exists(out), "export left %s", out);
		ck_assert_int_eq(rmdir(dir), 0); /* nothing else left there either */
		free(out);
		free(dir);
		free(path);
	}
}
END_TEST

static Suite *cli_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("cli");
	TCase *outputs = tcase_create("outputs");

	tcase_add_test(tc, test_version);
	tcase_add_test(tc, test_help_lists_commands);
	tcase_add_test(tc, test_command_help);
	tcase_add_test(tc, test_no_command);
	tcase_add_test(tc, test_unknown_command);
	tcase_add_test(tc, test_bad_option);
	tcase_add_test(tc, test_options_after_operands);
	tcase_add_test(tc, test_unknown_option_suggests);
	tcase_add_test(tc, test_abbreviated_options);
	tcase_add_test(tc, test_unknown_pid);
	tcase_add_test(tc, test_export_force);
	tcase_add_test(tc, test_missing_and_extra_file);
	tcase_add_test(tc, test_info_text);
	tcase_add_test(tc, test_info_json);
	tcase_add_test(tc, test_process_without_end);
	tcase_add_test(tc, test_many_processes_without_end);
	tcase_add_test(tc, test_abrupt_traces);
	tcase_add_test(tc, test_stats_text);
	tcase_add_test(tc, test_stats_limit_and_pid);
	tcase_add_test(tc, test_stats_json);
	tcase_add_test(tc, test_stats_width);
	tcase_add_test(tc, test_stats_closed_pipe);
	tcase_add_test(tc, test_stats_demangled);
	tcase_add_test(tc, test_stats_rows_distinct);
	tcase_add_test(tc, test_diff_gate_demangled);
	tcase_add_test(tc, test_names_mixed);
	tcase_add_test(tc, test_bad_missing_file);
	tcase_add_test(tc, test_bad_text_file);
	tcase_add_test(tc, test_bad_sqlite_without_meta);
	tcase_add_test(tc, test_bad_newer_schema);
	tcase_add_test(tc, test_bad_truncated);
	tcase_add_test(tc, test_bad_endless_view);
	tcase_add_test(tc, test_empty_traces);
	tcase_add_test(tc, test_dangling_name_ids);
	tcase_add_test(tc, test_stats_huge_bytes);
	suite_add_tcase(s, tc);
	tcase_add_test(outputs, test_output_is_input);
	tcase_add_test(outputs, test_output_planted_links);
	tcase_add_test(outputs, test_output_failed_write_keeps_previous);
	tcase_add_test(outputs, test_output_foreign_fifo);
	suite_add_tcase(s, outputs);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	tmp_dir = tu_tmpdir();
	if (!tmp_dir) {
		fprintf(stderr, "test_cli: cannot make a temporary directory\n");
		return 1;
	}
	sample_db = tu_path(tmp_dir, "sample.db");
	long_name_db = tu_path(tmp_dir, "long-name.db");
	write_sample(sample_db);
	write_long_name(long_name_db);

	sr = srunner_create(cli_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
