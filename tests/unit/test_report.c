/*
 * test_report.c - `cuscope report` run as a real binary on the committed traces and on traces
 * written here: text, JSON (parsed and validated against docs/report-schema.json by the small
 * JSON Schema validator below) and markdown output, --list-rules, --rules and --skip, --fail-on
 * exit codes, --step-range, --warmup, --pid, -v, no colour in a pipe, and the bad usage and bad
 * files that must end with one line on stderr and exit code 2.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cuscope/analyze.h"
#include "cuscope/trace.h"
#include "testutil.h"

#define US 1000

static char *tmp_dir;
static char *train_db, *counts_db; /* committed */
static char *rare_db;		   /* committed: an evaluation with 1,028 read-backs in 3 of 30 steps */
static char *clean_db;		   /* GPU busy, nothing to find */
static char *sync_db;		   /* a device-to-host copy and a host wait in every step */
static char *native_db; /* the read-back's stack a C program's, without line numbers */
static char *native_lines_db;	   /* the same program built with -g: its frames have lines */
static char *backward_db;	   /* the same, the stack borrowed by an autograd engine thread */
static char *second_db; /* two processes without a rank: only the second syncs in every step */
static char *rank1_db;	/* ranks 0 and 1: only rank 1 (the lower pid) syncs */
static char *both_db;	/* ranks 0, 1 and 2: ranks 0 and 1 sync at the same line, rank 1 longer */
static char *apart_db;	/* ranks 0 and 1 sync at different lines */
static char *six_db;	/* six ranks sync at the same line */
static char *nvtx_db;	/* ranks 0 and 1 sync; only rank 0 has NVTX step ranges */
static cJSON *schema;

/* ---- running cuscope ---- */

#define run(...) tu_cuscope((const char *[]){NULL, "report", __VA_ARGS__, NULL})

/* ---- a JSON Schema validator for what docs/report-schema.json uses ---- */

static int type_matches(const char *type, const cJSON *v)
{
	if (!strcmp(type, "object"))
		return cJSON_IsObject(v);
	if (!strcmp(type, "array"))
		return cJSON_IsArray(v);
	if (!strcmp(type, "string"))
		return cJSON_IsString(v);
	if (!strcmp(type, "number"))
		return cJSON_IsNumber(v);
	if (!strcmp(type, "integer"))
		return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble);
	if (!strcmp(type, "boolean"))
		return cJSON_IsBool(v);
	if (!strcmp(type, "null"))
		return cJSON_IsNull(v);
	return 0;
}

static int json_equal(const cJSON *a, const cJSON *b)
{
	return cJSON_Compare(a, b, 1);
}

/*
 * Validate v against schema s (keywords: type, enum, required, properties, items); on failure
 * write where and why into msg and return -1. Keywords the validator does not know are an error
 * too, so that the schema cannot silently use more than is checked.
 */
static int validate(const cJSON *s, const cJSON *v, const char *path, char *msg, size_t size)
{
	const cJSON *kw, *it;
	char sub[512];

	cJSON_ArrayForEach(kw, s)
	{
		const char *k = kw->string;

		if (!strcmp(k, "$schema") || !strcmp(k, "title") || !strcmp(k, "description"))
			continue;
		if (!strcmp(k, "type")) {
			int ok = 0;

			if (cJSON_IsString(kw))
				ok = type_matches(kw->valuestring, v);
			else
				cJSON_ArrayForEach(it, kw) ok |= type_matches(it->valuestring, v);
			if (!ok) {
				char *text = cJSON_PrintUnformatted(v);

				snprintf(msg, size, "%s: wrong type: %.80s", path,
					 text ? text : "?");
				cJSON_free(text);
				return -1;
			}
		} else if (!strcmp(k, "enum")) {
			int ok = 0;

			cJSON_ArrayForEach(it, kw) ok |= json_equal(it, v);
			if (!ok) {
				snprintf(msg, size, "%s: not one of the allowed values", path);
				return -1;
			}
		} else if (!strcmp(k, "required")) {
			if (!cJSON_IsObject(v))
				continue;
			cJSON_ArrayForEach(it, kw)
			{
				if (!cJSON_GetObjectItemCaseSensitive(v, it->valuestring)) {
					snprintf(msg, size, "%s: missing key '%s'", path,
						 it->valuestring);
					return -1;
				}
			}
		} else if (!strcmp(k, "properties")) {
			if (!cJSON_IsObject(v))
				continue;
			cJSON_ArrayForEach(it, kw)
			{
				const cJSON *x = cJSON_GetObjectItemCaseSensitive(v, it->string);

				snprintf(sub, sizeof(sub), "%s.%s", path, it->string);
				if (x && validate(it, x, sub, msg, size))
					return -1;
			}
		} else if (!strcmp(k, "items")) {
			int i = 0;

			if (!cJSON_IsArray(v))
				continue;
			cJSON_ArrayForEach(it, v)
			{
				snprintf(sub, sizeof(sub), "%s[%d]", path, i++);
				if (validate(kw, it, sub, msg, size))
					return -1;
			}
		} else {
			snprintf(msg, size, "%s: schema keyword '%s' is not checked", path, k);
			return -1;
		}
	}
	return 0;
}

/* Parse a report and validate it against the schema; the caller deletes it. */
static cJSON *report_json(const char *out)
{
	cJSON *doc = cJSON_Parse(out);
	char msg[1024] = "";

	ck_assert_msg(doc != NULL, "not JSON: %.200s", out);
	ck_assert_msg(validate(schema, doc, "$", msg, sizeof(msg)) == 0, "%s", msg);
	return doc;
}

static const char *json_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	ck_assert_msg(cJSON_IsString(v), "no string '%s'", key);
	return v->valuestring;
}

/* ---- traces written here (in main(), before the tests: no ck_assert there) ---- */

#define need(ok, what) tu_need(ok, "test_report", what)

/*
 * The stack of a wait made by an autograd engine thread during loss.backward() at train.py:88, as
 * the importer writes it: the thread's native frames, the note (kind 3), then the Python frames of
 * the main thread, which waits in torch's engine call.
 */
static int64_t add_borrowed_stack(cs_trace_writer *w)
{
	static const char *const torch = "/venv/lib/python3.12/site-packages/torch";
	char files[3][128];
	cs_frame f[7];

	memset(f, 0, sizeof(f));
	f[0].kind = 1;
	f[0].pc = 0x7f0000002000ull;
	f[0].module = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
	f[0].symbol = "cuStreamSynchronize";
	f[1].kind = 1;
	f[1].pc = 0x7f0000003000ull;
	f[1].module = "/venv/lib/python3.12/site-packages/torch/lib/libtorch_cpu.so";
	f[1].symbol = "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::"
		      "GraphTask> const&)";
	f[2].kind = 3;
	f[2].symbol = "[autograd engine thread: the Python frames below are the main thread's, "
		      "waiting in backward()]";
	snprintf(files[0], sizeof(files[0]), "%s/autograd/graph.py", torch);
	snprintf(files[1], sizeof(files[1]), "%s/autograd/__init__.py", torch);
	snprintf(files[2], sizeof(files[2]), "%s/_tensor.py", torch);
	f[3].kind = 2;
	f[3].symbol = "_engine_run_backward";
	f[3].file = files[0];
	f[3].line = 829;
	f[4].kind = 2;
	f[4].symbol = "backward";
	f[4].file = files[1];
	f[4].line = 354;
	f[5].kind = 2;
	f[5].symbol = "Tensor.backward";
	f[5].file = files[2];
	f[5].line = 647;
	f[6].kind = 2;
	f[6].symbol = "train_step";
	f[6].file = "/home/user/train.py";
	f[6].line = 88;
	return cs_writer_add_stack(w, f, 7);
}

/* A process of a trace written by write_procs(). */
struct wproc {
	uint32_t pid;
	int32_t rank; /* CS_ID_NONE: no rank */
	int sync;     /* as write_loop's */
	int extra_us; /* more GPU idle after each wait */
	int line;     /* line of train_step that reads the value back (0: 42) */
	int nvtx;     /* each step is an NVTX range "step<i>" */
};

/*
 * 20 steps of 6 kernels each launched well ahead of the GPU, which runs them back to back: the GPU
 * never waits. With sync set, every step also ends with loss.item(): a synchronous 4-byte
 * device-to-host copy into pageable memory, a stream synchronization the host waits in, and the
 * GPU idle until the next step's first launch. With sync 2, their stack is an autograd engine
 * thread's, with the Python frames of the main thread in backward().
 */
static void write_loop_of(cs_trace_writer *w, const int64_t *ids, const struct wproc *p, int np);

/* The kernels of every step of the loop. */
static const char *const loop_names[6] = {"sm90_gemm_bf16_tn", "elementwise_relu",
					  "sm90_gemm_bf16_nt", "reduce_sum",
					  "softmax_fwd",       "adam_update"};

static void write_loop(const char *path, int sync)
{
	struct wproc p = {300, CS_ID_NONE, sync, 0, 0, 0};
	cs_trace_writer *w = tu_open_trace(path, "python3 train.py", "test_report");
	int64_t ids[6];

	tu_add_process(w, 300, "python3 train.py", "test_report");
	tu_intern_names(w, loop_names, 6, ids, "test_report");
	write_loop_of(w, ids, &p, 1);
	tu_finish_trace(w, "test_report");
}

/*
 * A job of np processes, each running write_loop's loop on its own GPU at the same time (process
 * p[i] with its rank, LOCAL_RANK the same, WORLD_SIZE np when ranked), each ended normally. The
 * stacks of the processes' waits differ only in their addresses.
 */
static void write_procs(const char *path, const struct wproc *p, int np)
{
	cs_trace_writer *w = tu_open_trace(path, "torchrun train.py", "test_report");
	int64_t ids[6];

	for (int i = 0; i < np; i++)
		tu_add_rank(w, p[i].pid, "python3 train.py", p[i].rank,
			    p[i].rank != CS_ID_NONE ? np : CS_ID_NONE, 100000 * US, "test_report");
	tu_intern_names(w, loop_names, 6, ids, "test_report");
	for (int i = 0; i < np; i++)
		write_loop_of(w, ids, &p[i], np);
	tu_finish_trace(w, "test_report");
}

/* The loop of process p (of np) into w. */
static void write_loop_of(cs_trace_writer *w, const int64_t *ids, const struct wproc *p, int np)
{
	int64_t stack = CS_ID_NONE, host = 1000 * US, gpu = 1000 * US;
	int sync = p->sync;
	uint32_t pid = p->pid;
	int32_t device = np > 1 ? (int32_t)(pid % 8) : 0;

	if (sync == 2) {
		stack = add_borrowed_stack(w);
		need(stack >= 0, "stack");
	} else if (sync == 3 || sync == 4) {
		/* a C program without debug lines: CUPTI, the driver, the runtime linked into
		 * the program, the program's own function, libc */
		cs_frame f[6];

		memset(f, 0, sizeof(f));
		for (int i = 0; i < 6; i++) {
			f[i].kind = 1;
			f[i].pc = 0x7f0000001000ull + (uint64_t)i * 0x100;
		}
		f[0].module = "/usr/lib/libcupti.so.13";
		f[1].module = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
		f[1].symbol = "cuMemcpyDtoH_v2";
		f[2].module = "/home/user/solver";
		f[2].symbol = "cudaMemcpy";
		f[3].module = "/home/user/solver";
		f[3].symbol = "cudart::cudaApiMemcpy(void*, void const*, unsigned long)";
		f[3].offset = 0x20;
		f[4].module = "/home/user/solver";
		f[4].symbol = "residual_norm";
		f[4].offset = 0x4d;
		f[5].module = "/usr/lib/x86_64-linux-gnu/libc.so.6";
		f[5].symbol = "__libc_start_call_main";
		if (sync == 4) {
			/* built with -g: the runtime's inline wrapper in CUDA's header, the
			 * program's own line */
			f[2].file = "/usr/local/cuda/targets/x86_64-linux/include/cuda_runtime.h";
			f[2].line = 120;
			f[4].file = "/home/user/solver.cu";
			f[4].line = 57;
		}
		/* the runtime's own frame after the program's: only the first counts */
		f[2].offset = 0x1cb;
		stack = cs_writer_add_stack(w, f, 6);
		need(stack >= 0, "stack");
	} else if (sync) {
		cs_frame f[4];

		memset(f, 0, sizeof(f));
		f[0].kind = 1;
		f[0].pc = 0x7f0000001000ull + (np > 1 ? (uint64_t)pid << 20 : 0);
		f[0].module = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
		f[0].symbol = "cuMemcpyDtoH_v2";
		f[1].kind = 2;
		f[1].symbol = "item";
		f[1].file = "/usr/lib/python3/dist-packages/torch/_tensor.py";
		f[1].line = 1000;
		f[2].kind = 2;
		f[2].symbol = "train_step";
		f[2].file = "/home/user/train.py";
		f[2].line = p->line ? p->line : 42;
		f[3].kind = 2;
		f[3].symbol = "<module>";
		f[3].file = "/home/user/train.py";
		f[3].line = 60;
		stack = cs_writer_add_stack(w, f, 4);
		need(stack >= 0, "stack");
	}
	for (int step = 0; step < 20; step++) {
		int64_t step_start = host;

		for (int i = 0; i < 6; i++) {
			int64_t start = gpu > host + 5 * US ? gpu : host + 5 * US;
			cs_kernel k = tu_kernel(pid, ids[i], host, start, start + 200 * US);

			k.device_id = device;
			need(cs_writer_add_kernel(w, &k) == 0, cs_writer_errmsg(w));
			gpu = start + 200 * US;
			host += 10 * US;
		}
		if (sync) {
			cs_memcpy m;
			cs_sync s;

			/* the call returns 5 us after its copy */
			m = tu_memcpy(pid, CS_COPY_DTOH, 4, host, gpu + 10 * US, gpu + 2 * US,
				      gpu + 5 * US);
			m.device_id = device;
			m.stack_id = stack;
			need(cs_writer_add_memcpy(w, &m) == 0, cs_writer_errmsg(w));
			s = tu_sync(pid, host + 1 * US, m.launch_end);
			s.stack_id = stack;
			need(cs_writer_add_sync(w, &s) == 0, cs_writer_errmsg(w));
			/* the host comes back after the copy, the GPU idles until the next launch
			 */
			host = s.end + (200 + p->extra_us) * US;
			gpu = host;
		}
		if (p->nvtx) {
			cs_nvtx n;
			char text[32];

			snprintf(text, sizeof(text), "step%d", step);
			n = tu_nvtx(pid, cs_writer_intern(w, text), step_start, host - 1);
			need(n.text_id >= 0, "intern");
			need(cs_writer_add_nvtx(w, &n) == 0, cs_writer_errmsg(w));
		}
	}
}

/* ---- tests ---- */

START_TEST(test_text_train_small)
{
	struct tu_result r = run(train_db);

	ck_assert_msg(r.rc == 0, "exit %d: %s", r.rc, r.err);
	ck_assert_str_eq(r.err, "");
	ck_assert_msg(strstr(r.out, "trace:") && strstr(r.out, "train_small.db"), "%s", r.out);
	ck_assert_msg(strstr(r.out, "command:   python3 samples/pytorch/train_small.py"), "%s",
		      r.out);
	ck_assert_msg(strstr(r.out, "steps:     30 (kernel sequence"), "%s", r.out);
	ck_assert_msg(strstr(r.out, "2 warm-up"), "%s", r.out);
	ck_assert_msg(strstr(r.out, "step time: median "), "%s", r.out);
	ck_assert_msg(strstr(r.out, "GPU busy "), "%s", r.out);
	ck_assert_msg(strchr(r.out, '\033') == NULL, "colour in a pipe: %s", r.out);
	tu_result_free(&r);
}
END_TEST

/*
 * Evidence in nanoseconds that is not a whole number (a measured rate: what recording cost a
 * launch, 1774.x ns in cu_relaunch_starved's trace) reads as a duration, not a bare number.
 */
START_TEST(test_evidence_fractional_ns)
{
	char *db = tu_source_file("tests/data/corpus/cu_relaunch_starved.db");
	struct tu_result v = run("-v", db);

	ck_assert_msg(v.rc == 0, "exit %d: %s", v.rc, v.err);
	ck_assert_msg(strstr(v.out, "recording time per launch: 1.77 us\n") != NULL, "%s", v.out);
	ck_assert_msg(strstr(v.out, "mean work time: 2.73 us\n") != NULL, "%s", v.out);
	tu_result_free(&v);
	free(db);
}
END_TEST

START_TEST(test_text_clean_says_no_findings)
{
	struct tu_result r = run(clean_db), v = run("-v", clean_db);

	ck_assert_msg(r.rc == 0, "exit %d: %s", r.rc, r.err);
	ck_assert_msg(strstr(r.out, "\nNo findings.\n") != NULL, "%s", r.out);
	ck_assert_msg(strstr(r.out, "steps:     20 (kernel sequence"), "%s", r.out);
	/* -v adds the table of steps */
	ck_assert_int_eq(v.rc, 0);
	ck_assert_msg(strstr(v.out, "Step") && strstr(v.out, "GPU busy") &&
			      strstr(v.out, "warm-up"),
		      "%s", v.out);
	ck_assert_msg(strstr(r.out, "Step ") == NULL, "%s", r.out);
	ck_assert_msg(strchr(v.out, '\033') == NULL, "colour in a pipe: %s", v.out);
	tu_result_free(&r);
	tu_result_free(&v);
}
END_TEST

START_TEST(test_text_no_structure)
{
	struct tu_result r = run(counts_db);

	ck_assert_msg(r.rc == 0, "exit %d: %s", r.rc, r.err);
	ck_assert_msg(strstr(r.out, "steps:     none found"), "%s", r.out);
	tu_result_free(&r);
}
END_TEST

START_TEST(test_json_validates)
{
	const char *files[] = {train_db,  counts_db, clean_db, sync_db,	 backward_db,
			       second_db, rank1_db,  both_db,  apart_db, six_db};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct tu_result r = run("--format", "json", files[i]),
				 v = run("-f", "json", "-v", files[i]);
		cJSON *doc, *dv;

		ck_assert_msg(r.rc == 0, "%s: exit %d: %s", files[i], r.rc, r.err);
		doc = report_json(r.out);
		dv = report_json(v.out);
		ck_assert_str_eq(json_str(cJSON_GetObjectItem(doc, "trace"), "file"), files[i]);
		ck_assert_int_eq(tu_json_i64(doc, "version"), 1);
		ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "rules")), 20);
		ck_assert_int_eq(tu_json_i64(cJSON_GetObjectItem(doc, "summary"), "findings"),
				 cJSON_GetArraySize(cJSON_GetObjectItem(doc, "findings")));
		/* JSON is for tools: -v does not change it */
		ck_assert_str_eq(r.out, v.out);
		cJSON_Delete(doc);
		cJSON_Delete(dv);
		tu_result_free(&r);
		tu_result_free(&v);
	}
}
END_TEST

START_TEST(test_json_steps)
{
	struct tu_result r = run("-f", "json", train_db),
			 n = run("-f", "json", "--step-range", "step*", "--warmup", "4", train_db);
	cJSON *a = report_json(r.out), *b = report_json(n.out);
	const cJSON *sa = cJSON_GetObjectItem(a, "steps"), *sb = cJSON_GetObjectItem(b, "steps");
	const cJSON *list = cJSON_GetObjectItem(sb, "list"), *first;

	ck_assert_str_eq(json_str(sa, "method"), "period");
	ck_assert_int_eq(tu_json_i64(sa, "count"), 30);
	ck_assert_int_eq(tu_json_i64(sa, "period_kernels"), 38);
	ck_assert_int_eq(tu_json_i64(sa, "warmup"), 2);
	ck_assert_int_eq(tu_json_i64(sa, "pid"), 3615);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(sa, "step_range")));
	ck_assert_str_eq(json_str(sb, "method"), "nvtx");
	ck_assert_str_eq(json_str(sb, "step_range"), "step*");
	ck_assert_int_eq(tu_json_i64(sb, "count"), 30);
	ck_assert_int_eq(tu_json_i64(sb, "warmup"), 4);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(sb, "period_kernels")));
	ck_assert_int_eq(cJSON_GetArraySize(list), 30);
	first = cJSON_GetArrayItem(list, 0);
	ck_assert_int_eq(tu_json_i64(first, "index"), 0);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(first, "warmup")));
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 4), "warmup")));
	ck_assert_int_eq(tu_json_i64(cJSON_GetArrayItem(list, 5), "kernels"), 38);
	ck_assert(tu_json_i64(sb, "p10_ns") <= tu_json_i64(sb, "median_ns"));
	ck_assert(tu_json_i64(sb, "median_ns") <= tu_json_i64(sb, "p90_ns"));
	cJSON_Delete(a);
	cJSON_Delete(b);
	tu_result_free(&r);
	tu_result_free(&n);
}
END_TEST

/* The causes of the "GPU idle:" line and their shares in the JSON report (docs/commands/report.md).
 */
static void check_host_idle(const char *db, double min_total, double max_total)
{
	struct tu_result t = run(db), j = run("-f", "json", db);
	cJSON *doc = report_json(j.out);
	const cJSON *st = cJSON_GetObjectItem(doc, "steps"), *by, *it, *largest = NULL;
	const cJSON *ps = cJSON_GetObjectItem(
		cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "processes"), 0), "steps");
	double total, busy, sum = 0;
	const char *line;

	ck_assert_msg(t.rc == 0 && j.rc == 0, "%s: exit %d/%d", db, t.rc, j.rc);
	total = cJSON_GetObjectItem(st, "host_idle_share")->valuedouble;
	busy = cJSON_GetObjectItem(st, "gpu_busy_share")->valuedouble;
	ck_assert_msg(total >= min_total && total <= max_total, "%s: host idle %f", db, total);
	/* busy and host-caused idle are disjoint parts of the same steps' time */
	ck_assert_msg(total + busy <= 1.0 + 1e-9, "%s: busy %f + idle %f", db, busy, total);
	by = cJSON_GetObjectItem(st, "host_idle_share_by_cause");
	ck_assert_int_eq(cJSON_GetArraySize(by), 7);
	cJSON_ArrayForEach(it, by)
	{
		ck_assert(it->valuedouble >= 0);
		sum += it->valuedouble;
		if (!largest || it->valuedouble > largest->valuedouble)
			largest = it;
	}
	ck_assert_msg(fabs(sum - total) < 1e-9, "%s: causes add up to %f, not %f", db, sum, total);
	/* the only process's steps object says the same */
	ck_assert(cJSON_GetObjectItem(ps, "host_idle_share")->valuedouble == total);
	line = strstr(t.out, "GPU idle:  ");
	if (total < 0.005) {
		ck_assert_msg(line == NULL, "%s", t.out);
	} else {
		char words[64];

		ck_assert_msg(line != NULL, "%s", t.out);
		/* the largest cause comes first, in words */
		snprintf(words, sizeof(words), "the host: %s", largest->string);
		for (char *c = words; *c; c++)
			if (*c == '_')
				*c = ' ';
		ck_assert_msg(strncmp(strstr(line, "the host: "), words, strlen(words)) == 0,
			      "%s / %s", line, words);
	}
	cJSON_Delete(doc);
	tu_result_free(&t);
	tu_result_free(&j);
}

START_TEST(test_host_idle)
{
	struct tu_result n = run(counts_db), nj = run("-f", "json", counts_db);
	struct tu_result h = run("-f", "html", train_db), hc = run("-f", "html", clean_db);
	struct tu_result m = run("-f", "markdown", train_db);
	cJSON *doc = report_json(nj.out);

	/* train_small: 9.6% busy, the rest the host's launch pace and its work between launches */
	check_host_idle(train_db, 0.85, 0.91);
	/* the GPU busy with queued work throughout: no line */
	check_host_idle(clean_db, 0, 0.005);
	/* no steps: nothing to say */
	ck_assert(cJSON_IsNull(
		cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "steps"), "host_idle_share")));
	ck_assert_msg(strstr(n.out, "GPU idle:") == NULL, "%s", n.out);
	/* the HTML header and the markdown table say it too, in the same words */
	ck_assert(strstr(h.out, "<dt>GPU idle</dt><dd>") != NULL);
	ck_assert(strstr(h.out, "of the step waiting for the host: host work ") != NULL);
	ck_assert(strstr(hc.out, "<dt>GPU idle</dt>") == NULL);
	ck_assert(strstr(m.out, "| GPU idle | ") != NULL);
	cJSON_Delete(doc);
	tu_result_free(&n);
	tu_result_free(&nj);
	tu_result_free(&h);
	tu_result_free(&hc);
	tu_result_free(&m);
}
END_TEST

/*
 * The rest of the GPU's idle, its next work already queued, is named from 5% of the step: a C++
 * loop of short kernels queued ahead between device synchronizes (5.9%), a CUDA graph of short
 * kernels (15.5%); train_small (9.6% busy, the rest the host's) and a GPU-bound trace do not have
 * it. Nor does a C++ loop of 1.5 us kernels launched one by one every 4 us (c_tiny_graph on a fast
 * host, tests/data/launch_lag): each launch call returns about 2 us before the kernel before it
 * ends, but a kernel starts some 2.3 us after its call returns (the launch lag, measured on the
 * launches into an idle GPU), so each gap is the host's, and launch-starvation reports it (it said
 * 28.5% queued while the call's return was the test).
 */
START_TEST(test_queued_idle)
{
	static const struct {
		const char *path;
		const char *words; /* NULL: not named */
	} cases[] = {
		{"tests/data/savings/c_devsync.db", "pageable copies 0.5%; 5.9% with its next work queued"},
		{"tests/data/launch_lag/c_tiny_graph_fast_host.db", NULL},
		{"samples/rules/traces/launch-starvation-fixed.db",
		 "launch overhead 2.4%; 15.5% with its next work queued"},
		{"samples/traces/train_small.db", NULL},
		{"samples/rules/traces/host-created-tensor-negative_gpu_bound.db", NULL},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *path = tu_source_file(cases[i].path);
		struct tu_result t, h;

		if (!tu_file_exists(path)) {
			free(path);
			continue;
		}
		t = run(path);
		h = run("-f", "html", path);
		ck_assert_int_eq(t.rc, 0);
		if (cases[i].words) {
			ck_assert_msg(strstr(t.out, cases[i].words) != NULL, "%s", t.out);
			ck_assert_msg(strstr(h.out, cases[i].words) != NULL, "%s", cases[i].path);
		} else {
			ck_assert_msg(strstr(t.out, "next work queued") == NULL, "%s", t.out);
		}
		if (strstr(cases[i].path, "c_tiny_graph"))
			ck_assert_msg(strstr(t.out, "[error] launch-starvation") != NULL, "%s", t.out);
		tu_result_free(&t);
		tu_result_free(&h);
		free(path);
	}
}
END_TEST

/* text with its line no (from 1) replaced by line, malloc'd; NULL when it has fewer lines */
static char *replace_line(const char *text, int no, const char *line)
{
	const char *s = text, *e;
	size_t n;
	char *out;

	for (int i = 1; i < no && s; i++)
		s = (s = strchr(s, '\n')) ? s + 1 : NULL;
	if (!s || !(e = strchr(s, '\n')))
		return NULL;
	n = strlen(text) - (size_t)(e - s) + strlen(line) + 1;
	if (!(out = malloc(n)))
		return NULL;
	snprintf(out, n, "%.*s%s%s", (int)(s - text), text, line, e);
	return out;
}

/*
 * The trace cannot tell a tensor made on the host at the start of the step from the next batch
 * (host_randn_host: torch.randn(BATCH, WIDTH), then .cuda(), the step's first copy after 15 ms of
 * host work); the line that made it can. With the program's source under --source-dir, the stall
 * is host-created-tensor's, also when NumPy's random module made it; the same copy after
 * next(it), of data read from a file, with the factory given a device argument, or with no
 * source found, stays dataloader-stall's.
 */
START_TEST(test_source_names_host_tensor)
{
	static const struct {
		const char *line38; /* NULL: the committed source; "": no source at all */
		const char *rule, *other, *says;
	} cases[] = {
		{NULL, "[error] host-created-tensor", "dataloader-stall", "a tensor made on the host"},
		{"", "[error] dataloader-stall", "host-created-tensor", "file not found"},
		{"            noise = next(self.noise_it)", "[error] dataloader-stall",
		 "host-created-tensor", "a batch (an iterator's, or read from a file)"},
		{"            noise = torch.randn(BATCH, WIDTH, device=\"cpu\")",
		 "[error] dataloader-stall", "host-created-tensor", "nothing recognised"},
		{"            noise = torch.from_numpy(np.random.standard_normal((BATCH, WIDTH)))",
		 "[error] host-created-tensor", "dataloader-stall", "a tensor made on the host"},
		{"            noise = torch.tensor([0.1] * (BATCH * WIDTH), device=\"cuda\")",
		 "[error] host-created-tensor", "dataloader-stall", "a tensor made on the host"},
		{"            noise = torch.from_numpy(np.load(\"noise.npy\")) + torch.randn(1)",
		 "[error] dataloader-stall", "host-created-tensor",
		 "a batch (an iterator's, or read from a file)"},
	};
	char *db = tu_source_file("tests/data/savings/host_randn_host.db");
	char *py = tu_source_file("samples/savings/host_randn_host.py");
	char *src = tu_read_file(py, NULL);

	if (!tu_file_exists(db)) {
		free(db);
		free(py);
		free(src);
		return;
	}
	ck_assert_ptr_nonnull(src);
	ck_assert_msg(strstr(src, "noise = torch.randn(BATCH, WIDTH)  #") != NULL, "line 38 moved");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *dir = tu_tmpdir(), *sub = tu_path(dir, "samples"), *sub2 = tu_path(sub, "savings");
		char *file = tu_path(sub2, "host_randn_host.py");
		const char *root = dir;
		struct tu_result t, j;
		const cJSON *f, *sl;
		cJSON *doc;

		if (!cases[i].line38) {
			root = tu_source_root();
		} else if (cases[i].line38[0]) {
			char *text = replace_line(src, 38, cases[i].line38);

			ck_assert_ptr_nonnull(text);
			ck_assert_int_eq(mkdir(sub, 0700), 0);
			ck_assert_int_eq(mkdir(sub2, 0700), 0);
			ck_assert_int_eq(tu_write_file(file, text, strlen(text)), 0);
			free(text);
		}
		t = run("--source-dir", root, db);
		j = run("--source-dir", root, "-f", "json", db);
		ck_assert_int_eq(t.rc, 0);
		ck_assert_msg(strstr(t.out, cases[i].rule) != NULL, "case %zu: no %s", i,
			      cases[i].rule);
		{
			/* the other rule is no finding (other findings' text may name it) */
			char line[64];

			snprintf(line, sizeof(line), "] %s  ", cases[i].other);
			ck_assert_msg(strstr(t.out, line) == NULL, "case %zu: %s found", i,
				      cases[i].other);
		}
		doc = report_json(j.out);
		f = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "findings"), 0);
		sl = cJSON_GetObjectItem(cJSON_GetObjectItem(f, "evidence"), "source_line");
		ck_assert_msg(sl && strstr(cJSON_GetStringValue(cJSON_GetObjectItem(sl, "says")),
					   cases[i].says),
			      "case %zu: source_line says otherwise", i);
		if (!cases[i].line38) {
			/* the fix names the line */
			ck_assert_int_eq(tu_json_i64(sl, "line"), 38);
			ck_assert_msg(strstr(t.out, "host_randn_host.py:38 makes it on the host (noise = "
						    "torch.randn(BATCH, WIDTH)). Create the tensor") != NULL,
				      "no line in the fix");
		}
		cJSON_Delete(doc);
		tu_result_free(&t);
		tu_result_free(&j);
		free(sub);
		free(sub2);
		free(file);
	}
	/* noise made on the host after each layer, inside `for i, lin in enumerate(layers):`: the
	 * copy's own line makes it, and the loop gives the copy nothing it sends */
	{
		char *noise = tu_source_file("tests/data/corpus/pt_host_noise_layers.db");
		struct tu_result j = run("--source-dir", tu_source_root(), "-f", "json", noise);
		cJSON *d = report_json(j.out);
		const cJSON *f, *sl = NULL;

		cJSON_ArrayForEach(f, cJSON_GetObjectItem(d, "findings"))
		{
			if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(f, "rule")),
				   "host-created-tensor") == 0)
				sl = cJSON_GetObjectItem(cJSON_GetObjectItem(f, "evidence"),
							 "source_line");
		}
		ck_assert_msg(sl != NULL, "pt_host_noise_layers: no host-created-tensor source line");
		ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(sl, "says")),
				 "a tensor made on the host");
		ck_assert_int_eq(tu_json_i64(sl, "line"), 36);
		cJSON_Delete(d);
		tu_result_free(&j);
		free(noise);
	}
	/* a link named *.py to a file of another name is not read: a trace cannot have the report
	 * quote any file the user can read */
	{
		char *dir = tu_tmpdir(), *sub = tu_path(dir, "samples"), *sub2 = tu_path(sub, "savings");
		char *file = tu_path(sub2, "host_randn_host.py"), *other = tu_path(dir, "notes.txt");
		struct tu_result j;

		ck_assert_int_eq(mkdir(sub, 0700), 0);
		ck_assert_int_eq(mkdir(sub2, 0700), 0);
		ck_assert_int_eq(tu_write_file(other, src, strlen(src)), 0);
		ck_assert_int_eq(symlink(other, file), 0);
		j = run("--source-dir", dir, "-f", "json", db);
		ck_assert_int_eq(j.rc, 0);
		ck_assert_msg(strstr(j.out, "file not found") && !strstr(j.out, "torch.randn"), "%s",
			      j.out);
		tu_result_free(&j);
		free(sub);
		free(sub2);
		free(file);
		free(other);
	}
	free(db);
	free(py);
	free(src);
}
END_TEST

/*
 * Findings whose savings overlap say so in the "if fixed:" line: launch-starvation-bad's three
 * fixes save 107.5% one by one and 92.3% together (the optimizer's and the chains' launches are
 * part of the launch overhead); d2h_item_balanced's one finding saves what every fix together does.
 */
START_TEST(test_overlap_said)
{
	char *bad = tu_source_file("samples/rules/traces/launch-starvation-bad.db");
	char *one = tu_source_file("tests/data/savings/d2h_item_balanced.db");
	struct tu_result t = run(bad), m = run("-f", "markdown", bad), h = run("-f", "html", bad);
	struct tu_result j = run("-f", "json", bad), o = run(one);
	cJSON *doc = report_json(j.out);
	const cJSON *fa = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "steps"), "fix_all");
	double sum = 0;
	const cJSON *it;
	const char *words = "; the findings' own savings add up to 107.5%: they overlap";

	ck_assert_msg(strstr(t.out, words) != NULL, "%s", t.out);
	ck_assert_msg(strstr(m.out, words) != NULL, "%s", m.out);
	ck_assert(strstr(h.out, "add up to 107.5%: they overlap") != NULL);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(doc, "findings"))
	{
		const cJSON *s = cJSON_GetObjectItem(it, "saving_share");

		if (cJSON_IsNumber(s))
			sum += s->valuedouble;
	}
	ck_assert(fabs(cJSON_GetObjectItem(fa, "findings_saving_share")->valuedouble - sum) < 1e-9);
	ck_assert(sum > cJSON_GetObjectItem(fa, "saving_share")->valuedouble + 0.01);
	ck_assert_msg(strstr(o.out, "if fixed:") && !strstr(o.out, "overlap"), "%s", o.out);
	cJSON_Delete(doc);
	tu_result_free(&t);
	tu_result_free(&m);
	tu_result_free(&h);
	tu_result_free(&j);
	tu_result_free(&o);
	free(bad);
	free(one);
}
END_TEST

/*
 * Every idle share of the "GPU idle:" line from 5% of the step is explained by a finding or says
 * why none: d2h-sync-bad's launch overhead and host work (launch-starvation's decision), a C++
 * loop's idle with work queued (no rule); none where low-utilization explains the idle.
 */
START_TEST(test_idle_without_finding)
{
	static const struct {
		const char *path, *words; /* NULL: nothing said */
	} cases[] = {
		{"samples/rules/traces/d2h-sync-bad.db",
		 "no finding for launch overhead 20.1% and host work 7.1% (launch-starvation reports "
		 "when the host's idle is at least the GPU's busy time: here 34.8% against 62.8%)"},
		{"tests/data/savings/c_devsync.db",
		 "work queued 5.9% (no rule: the GPU's own gaps between kernels, waits on other "
		 "streams)"},
		{"tests/data/savings/c_tiny_graph.db", NULL},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *path = tu_source_file(cases[i].path);
		struct tu_result t = run("--width", "0", path), m = run("-f", "markdown", path);
		struct tu_result j = run("-f", "json", path);
		cJSON *doc = report_json(j.out);
		const cJSON *w = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "steps"),
						     "idle_without_finding");

		if (cases[i].words) {
			ck_assert_msg(strstr(t.out, cases[i].words) != NULL, "%s", t.out);
			ck_assert_msg(strstr(m.out, "| Without a finding | ") != NULL, "%s", m.out);
			ck_assert(cJSON_IsString(w) && strstr(w->valuestring, cases[i].words));
		} else {
			ck_assert_msg(strstr(t.out, "no finding for") == NULL, "%s", t.out);
			ck_assert(cJSON_IsNull(w));
		}
		cJSON_Delete(doc);
		tu_result_free(&t);
		tu_result_free(&m);
		tu_result_free(&j);
		free(path);
	}
}
END_TEST

/* The validator itself: a missing key or a wrong type fails. */
START_TEST(test_schema_catches_mistakes)
{
	struct tu_result r = run("-f", "json", clean_db);
	cJSON *doc = report_json(r.out), *copy;
	char msg[512];

	copy = cJSON_Duplicate(doc, 1);
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(copy, "steps"), "median_ns");
	ck_assert_int_eq(validate(schema, copy, "$", msg, sizeof(msg)), -1);
	ck_assert_msg(strstr(msg, "median_ns") != NULL, "%s", msg);
	cJSON_Delete(copy);

	copy = cJSON_Duplicate(doc, 1);
	cJSON_DeleteItemFromObject(copy, "processes");
	ck_assert_int_eq(validate(schema, copy, "$", msg, sizeof(msg)), -1);
	ck_assert_msg(strstr(msg, "processes") != NULL, "%s", msg);
	cJSON_Delete(copy);

	copy = cJSON_Duplicate(doc, 1);
	cJSON_ReplaceItemInObject(copy, "findings", cJSON_CreateString("none"));
	ck_assert_int_eq(validate(schema, copy, "$", msg, sizeof(msg)), -1);
	cJSON_Delete(copy);

	copy = cJSON_Duplicate(doc, 1);
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(copy, "steps"), "method",
				  cJSON_CreateString("guess"));
	ck_assert_int_eq(validate(schema, copy, "$", msg, sizeof(msg)), -1);
	cJSON_Delete(copy);

	copy = cJSON_Duplicate(doc, 1);
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(copy, "steps"), "count",
				  cJSON_CreateNumber(1.5));
	ck_assert_int_eq(validate(schema, copy, "$", msg, sizeof(msg)), -1);
	cJSON_Delete(copy);

	/* a finding with every key, and one without its location */
	copy = cJSON_Duplicate(doc, 1);
	{
		cJSON *f = cJSON_Parse(
			"{\"rule\":\"d2h-sync\",\"severity\":\"warning\",\"title\":\"t\","
			"\"steps\":[3,4],\"lost_ns_per_step\":10,\"step_share\":0.1,"
			"\"total_lost_ns\":20,\"first_ns\":1,\"last_ns\":null,"
			"\"evidence\":{},\"fix\":\"f\",\"location\":null,\"stack\":[],"
			"\"pid\":300,\"rank\":null,\"local_rank\":null,\"processes\":[{\"pid\":300,"
			"\"rank\":null,\"local_rank\":null,\"severity\":\"warning\","
			"\"steps\":[3,4],\"lost_ns_per_step\":10,\"step_share\":0.1,"
			"\"total_lost_ns\":20,"
			"\"first_ns\":1,\"last_ns\":null}]}");

		cJSON_AddItemToArray(cJSON_GetObjectItem(copy, "findings"), f);
		ck_assert_msg(validate(schema, copy, "$", msg, sizeof(msg)) == 0, "%s", msg);
		cJSON_DeleteItemFromObject(f, "location");
		ck_assert_int_eq(validate(schema, copy, "$", msg, sizeof(msg)), -1);
		ck_assert_msg(strstr(msg, "location") != NULL, "%s", msg);
	}
	cJSON_Delete(copy);
	cJSON_Delete(doc);
	tu_result_free(&r);
}
END_TEST

START_TEST(test_markdown)
{
	struct tu_result r = run("--format", "markdown", train_db), c = run("-f", "md", clean_db);

	ck_assert_msg(r.rc == 0, "exit %d: %s", r.rc, r.err);
	ck_assert_msg(!strncmp(r.out, "## cuscope report: `train_small.db`\n", 36), "%s", r.out);
	ck_assert_msg(strstr(r.out, "| Steps | 30 ("), "%s", r.out);
	ck_assert_msg(strstr(r.out, "| Step time | median "), "%s", r.out);
	ck_assert_msg(strstr(r.out, "| Findings | "), "%s", r.out);
	ck_assert_int_eq(c.rc, 0);
	ck_assert_msg(strstr(c.out, "**No findings.**"), "%s", c.out);
	ck_assert_msg(strchr(r.out, '\033') == NULL, "%s", r.out);
	tu_result_free(&r);
	tu_result_free(&c);
}
END_TEST

START_TEST(test_list_rules)
{
	static const char *const ids[] = {"d2h-sync",
					  "empty-cache-in-loop",
					  "memory-ceiling-thrash",
					  "launch-starvation",
					  "cuda-core-scan",
					  "sync-call",
					  "pageable-memcpy",
					  "allocator-churn",
					  "unfused-optimizer",
					  "zero-grad-memset",
					  "rank-straggler",
					  "comm-not-overlapped",
					  "small-allreduce-buckets",
					  "gather-list-cat",
					  "unfused-elementwise",
					  "no-tensor-cores",
					  "dataloader-stall",
					  "host-created-tensor",
					  "index-select-embedding",
					  "low-utilization"};
	struct tu_result r = run("--list-rules"), j = run("--list-rules", "--format", "json"),
			 x = run("--list-rules", train_db);
	cJSON *doc;

	ck_assert_msg(r.rc == 0, "exit %d: %s", r.rc, r.err);
	ck_assert_str_eq(r.err, "");
	for (size_t i = 0; i < 12; i++) {
		char line[64];

		snprintf(line, sizeof(line), "\n%s ", ids[i]);
		ck_assert_msg(strstr(r.out, line) != NULL, "%s missing:\n%s", ids[i], r.out);
	}
	ck_assert_int_eq(j.rc, 0);
	doc = cJSON_Parse(j.out);
	ck_assert_ptr_nonnull(doc);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "rules")), 20);
	for (int i = 0; i < 12; i++) {
		const cJSON *o = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "rules"), i);

		ck_assert_str_eq(json_str(o, "id"), ids[i]);
		json_str(o, "summary");
		json_str(o, "source");
	}
	cJSON_Delete(doc);
	tu_assert_one_line_error(&x, "--list-rules with a file");
	tu_result_free(&r);
	tu_result_free(&j);
	tu_result_free(&x);
}
END_TEST

static int rules_of(const char *out, char *buf, size_t size)
{
	cJSON *doc = report_json(out), *it;
	int n = 0;

	buf[0] = '\0';
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(doc, "rules"))
	{
		snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", n ? "," : "",
			 it->valuestring);
		n++;
	}
	cJSON_Delete(doc);
	return n;
}

START_TEST(test_rules_and_skip)
{
	struct tu_result a = run("-f", "json", "--rules", "d2h-sync", clean_db),
			 b = run("-f", "json", "--rules", "cuda-core-scan, d2h-sync", clean_db),
			 c = run("-f", "json", "--skip", "d2h-sync,launch-starvation", clean_db),
			 d = run("-f", "json", "--rules", "d2h-sync,cuda-core-scan", "--skip",
				 "d2h-sync", clean_db),
			 e = run("--rules", "d2h-sync,no-such-rule", clean_db),
			 f = run("--skip", "nope", clean_db), g = run("--rules", ",", clean_db);
	char buf[512];

	ck_assert_msg(a.rc == 0, "%s", a.err);
	ck_assert_int_eq(rules_of(a.out, buf, sizeof(buf)), 1);
	ck_assert_str_eq(buf, "d2h-sync");
	ck_assert_int_eq(rules_of(b.out, buf, sizeof(buf)), 2);
	ck_assert_str_eq(buf, "d2h-sync,cuda-core-scan"); /* registry order */
	ck_assert_int_eq(rules_of(c.out, buf, sizeof(buf)), 18);
	ck_assert_str_eq(buf, "empty-cache-in-loop,memory-ceiling-thrash,cuda-core-scan,sync-call,"
			      "pageable-memcpy,allocator-churn,unfused-optimizer,zero-grad-memset,"
			      "rank-straggler,comm-not-overlapped,small-allreduce-buckets,"
			      "gather-list-cat,unfused-elementwise,no-tensor-cores,"
			      "dataloader-stall,host-created-tensor,index-select-embedding,"
			      "low-utilization");
	ck_assert_int_eq(rules_of(d.out, buf, sizeof(buf)), 1);
	ck_assert_str_eq(buf, "cuda-core-scan");
	tu_assert_one_line_error(&e, "unknown rule");
	ck_assert_msg(strstr(e.err, "'no-such-rule'") != NULL, "%s", e.err);
	tu_assert_one_line_error(&f, "unknown skipped rule");
	tu_assert_one_line_error(&g, "empty rule list");
	tu_result_free(&a);
	tu_result_free(&b);
	tu_result_free(&c);
	tu_result_free(&d);
	tu_result_free(&e);
	tu_result_free(&f);
	tu_result_free(&g);
}
END_TEST

/* The exit code --fail-on LEVEL should give for a report. */
static int expected_fail(const char *json, int level)
{
	cJSON *doc = report_json(json), *it;
	int fail = 0;

	cJSON_ArrayForEach(it, cJSON_GetObjectItem(doc, "findings")) fail |=
		cs_severity_parse(json_str(it, "severity")) >= level;
	cJSON_Delete(doc);
	return fail ? 1 : 0;
}

/* A --warmup the steps cannot give is taken as far as it goes, and a note on stderr says so; one
 * that fits says nothing. */
START_TEST(test_warmup_past_steps)
{
	char *trace = tu_source_file("samples/rules/traces/d2h-sync-bad.db");
	struct tu_result big = run("--warmup", "100", trace), fits = run("--warmup", "10", trace);

	ck_assert_int_eq(big.rc, 0);
	ck_assert_msg(strstr(big.out, "45 (") && strstr(big.out, "44 warm-up"), "%s", big.out);
	ck_assert_msg(strstr(big.err, "note: 100 warm-up steps asked (--warmup), but pid 883") &&
			      strstr(big.err, "has 45 steps: the first 44 are warm-up"),
		      "%s", big.err);
	ck_assert_int_eq(fits.rc, 0);
	ck_assert_msg(!strstr(fits.err, "warm-up"), "%s", fits.err);
	tu_result_free(&big);
	tu_result_free(&fits);
	free(trace);
}
END_TEST

START_TEST(test_fail_on)
{
	static const char *const levels[] = {"info", "warning", "error"};
	const char *files[] = {clean_db, sync_db, train_db};

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct tu_result j = run("-f", "json", files[f]), plain = run(files[f]);

		/* findings alone never change the exit code */
		ck_assert_int_eq(j.rc, 0);
		ck_assert_int_eq(plain.rc, 0);
		for (int l = 0; l < 3; l++) {
			struct tu_result r = run("--fail-on", levels[l], files[f]),
					 rj = run("--fail-on", levels[l], "-f", "json", files[f]);

			ck_assert_msg(r.rc == expected_fail(j.out, l + 1), "%s --fail-on %s: %d",
				      files[f], levels[l], r.rc);
			ck_assert_int_eq(rj.rc, r.rc);
			ck_assert_str_eq(rj.out, j.out);
			tu_result_free(&r);
			tu_result_free(&rj);
		}
		tu_result_free(&j);
		tu_result_free(&plain);
	}
	/* a clean trace passes the strictest gate */
	{
		struct tu_result r = run("--fail-on", "info", clean_db),
				 bad = run("--fail-on", "fatal", clean_db);

		ck_assert_int_eq(r.rc, 0);
		tu_assert_one_line_error(&bad, "bad --fail-on");
		tu_result_free(&r);
		tu_result_free(&bad);
	}
}
END_TEST

/* Findings, when the rules find any in the trace with a sync in every step, carry their step list
 * and the user's line (the innermost frame outside torch). */
START_TEST(test_findings_output)
{
	struct tu_result j = run("-f", "json", sync_db), t = run(sync_db), v = run("-v", sync_db),
			 m = run("-f", "markdown", sync_db);
	cJSON *doc = report_json(j.out), *f;
	int64_t prev = INT64_MAX;
	int located = 0;

	ck_assert_int_eq(t.rc, 0);
	ck_assert_int_eq(m.rc, 0);
	cJSON_ArrayForEach(f, cJSON_GetObjectItem(doc, "findings"))
	{
		const cJSON *loc = cJSON_GetObjectItem(f, "location");
		int64_t total = (int64_t)cJSON_GetObjectItem(f, "total_lost_ns")->valuedouble;
		const char *group;
		char head[256];

		/* most costly first */
		ck_assert(total <= prev);
		prev = total;
		snprintf(head, sizeof(head), "[%s] %s  ", json_str(f, "severity"),
			 json_str(f, "rule"));
		ck_assert_msg(strstr(t.out, head) != NULL, "%s missing:\n%s", head, t.out);
		if (cJSON_IsObject(loc)) {
			ck_assert_str_eq(json_str(loc, "file"), "/home/user/train.py");
			ck_assert_int_eq(tu_json_i64(loc, "line"), 42);
			ck_assert_msg(strstr(t.out, "/home/user/train.py:42 in train_step"), "%s",
				      t.out);
			ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(f, "stack")), 4);
			ck_assert_msg(strstr(v.out, "#0  cuMemcpyDtoH_v2"), "%s", v.out);
			/* grouped under their location after the findings */
			group = strstr(t.out, "By source location:\n  /home/user/train.py:42 in "
					      "train_step\n      ");
			ck_assert_msg(group != NULL, "%s", t.out);
			snprintf(head, sizeof(head), "%s (%s)", json_str(f, "rule"),
				 json_str(f, "severity"));
			ck_assert_msg(strstr(group, head) != NULL, "%s", t.out);
			located++;
		}
		ck_assert_msg(strstr(m.out, json_str(f, "rule")) != NULL, "%s", m.out);
	}
	/* the trace has a D2H copy and a wait with a stack in every step: d2h-sync names the line
	 */
	ck_assert_msg(located > 0, "%s", t.out);
	ck_assert_msg(strchr(t.out, '\033') == NULL, "%s", t.out);
	cJSON_Delete(doc);
	tu_result_free(&j);
	tu_result_free(&t);
	tu_result_free(&v);
	tu_result_free(&m);
}
END_TEST

/* A cost in a few steps only is spread over the steady steps: the share printed beside the saving
 * per step is the replayed saving's share of the mean step (JSON saving_share, the header's "if
 * fixed"), not that amount over the median step, which leaves the slow steps out. */
START_TEST(test_rare_saving_share)
{
	struct tu_result j = run("-f", "json", rare_db), t = run(rare_db),
			 m = run("-f", "markdown", rare_db);
	cJSON *doc = report_json(j.out), *f, *fa;
	char want[64], median[64];
	int seen = 0;

	ck_assert_int_eq(t.rc, 0);
	ck_assert_int_eq(m.rc, 0);
	cJSON_ArrayForEach(f, cJSON_GetObjectItem(doc, "findings"))
	{
		double saving, median_share;

		if (strcmp(json_str(f, "rule"), "d2h-sync") != 0)
			continue;
		seen++;
		saving = cJSON_GetObjectItem(f, "saving_share")->valuedouble;
		median_share = cJSON_GetObjectItem(f, "step_share")->valuedouble;
		/* the two differ here, so that the test tells them apart */
		ck_assert_msg(median_share > saving * 1.2, "%f %f", median_share, saving);
		snprintf(want, sizeof(want), "(%.1f%% of step time)", 100.0 * saving);
		snprintf(median, sizeof(median), "(%.1f%% of step time)", 100.0 * median_share);
		ck_assert_msg(strstr(t.out, want) != NULL, "%s missing:\n%s", want, t.out);
		ck_assert_msg(strstr(m.out, want) != NULL, "%s missing:\n%s", want, m.out);
		ck_assert_msg(strstr(t.out, median) == NULL, "%s", t.out);
		/* one fix alone here: the header's every-fix-together share is the same */
		fa = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "steps"), "fix_all");
		ck_assert_ptr_nonnull(fa);
		ck_assert_double_eq_tol(cJSON_GetObjectItem(fa, "saving_share")->valuedouble, saving,
					1e-3);
	}
	ck_assert_int_eq(seen, 1);
	cJSON_Delete(doc);
	tu_result_free(&j);
	tu_result_free(&t);
	tu_result_free(&m);
}
END_TEST

/* A native stack without lines names the program's own function, not the CUDA runtime linked
 * into it, the driver or libc. */
START_TEST(test_native_stack_location)
{
	struct tu_result j = run("-f", "json", native_db), t = run(native_db);
	cJSON *doc = report_json(j.out), *f;
	int located = 0;

	ck_assert_int_eq(t.rc, 0);
	cJSON_ArrayForEach(f, cJSON_GetObjectItem(doc, "findings"))
	{
		const cJSON *loc = cJSON_GetObjectItem(f, "location");

		if (!cJSON_IsObject(loc))
			continue;
		ck_assert_str_eq(json_str(loc, "function"), "residual_norm");
		located++;
	}
	ck_assert_msg(located > 0, "%s", j.out);
	ck_assert_msg(strstr(t.out, "where:    residual_norm (solver+0x4d)"), "%s", t.out);
	cJSON_Delete(doc);
	tu_result_free(&j);
	tu_result_free(&t);
	/* built with -g: the program's line, not CUDA's header */
	t = run(native_lines_db);
	ck_assert_int_eq(t.rc, 0);
	ck_assert_msg(strstr(t.out, "where:    /home/user/solver.cu:57 in residual_norm"), "%s",
		      t.out);
	tu_result_free(&t);
}
END_TEST

/* A stack borrowed by an autograd engine thread names the line that called loss.backward(). */
START_TEST(test_borrowed_stack_location)
{
	struct tu_result j = run("-f", "json", backward_db), t = run(backward_db),
			 v = run("-v", backward_db);
	cJSON *doc = report_json(j.out), *f;
	int located = 0;

	ck_assert_int_eq(t.rc, 0);
	ck_assert_int_eq(v.rc, 0);
	cJSON_ArrayForEach(f, cJSON_GetObjectItem(doc, "findings"))
	{
		const cJSON *loc = cJSON_GetObjectItem(f, "location");

		if (!cJSON_IsObject(loc))
			continue;
		ck_assert_str_eq(json_str(loc, "file"), "/home/user/train.py");
		ck_assert_str_eq(json_str(loc, "function"), "train_step");
		ck_assert_int_eq(tu_json_i64(loc, "line"), 88);
		ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(f, "stack")), 7);
		ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(loc, "autograd_engine_thread")));
		ck_assert_str_eq(
			json_str(cJSON_GetArrayItem(cJSON_GetObjectItem(f, "stack"), 2), "kind"),
			"note");
		located++;
	}
	ck_assert_msg(located > 0, "%s", j.out);
	ck_assert_msg(strstr(t.out, "where:") &&
			      strstr(t.out, "backward() at /home/user/train.py:88 in train_step "
					    "(autograd engine thread)"),
		      "%s", t.out);
	ck_assert_msg(strstr(v.out, "#2  [autograd engine thread: the Python frames below are the "
				    "main thread's, waiting in backward()]"),
		      "%s", v.out);
	cJSON_Delete(doc);
	tu_result_free(&j);
	tu_result_free(&t);
	tu_result_free(&v);
}
END_TEST

/* A finding whose call sites do not resolve to a line (allocator-churn's on a trace recorded
 * without PyTorch's caching allocator): the text's where: line names the finding's own location,
 * the line that JSON, markdown and HTML name, not a frame of the last site's stack that the sites
 * read. */
START_TEST(test_text_where_after_sites)
{
	char *trace = tu_source_file("samples/rules/traces/allocator-churn-bad_no_caching.db");
	struct tu_result j = run("-f", "json", "--rules", "allocator-churn", trace),
			 t = run("--rules", "allocator-churn", trace),
			 m = run("-f", "markdown", "--rules", "allocator-churn", trace);
	cJSON *doc = report_json(j.out);
	const cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "findings"), 0);
	const cJSON *loc = cJSON_GetObjectItem(f, "location");
	const char *where;
	char want[512];

	ck_assert_int_eq(t.rc, 0);
	ck_assert_int_eq(m.rc, 0);
	ck_assert_str_eq(json_str(f, "rule"), "allocator-churn");
	ck_assert(cJSON_GetArraySize(
			  cJSON_GetObjectItem(cJSON_GetObjectItem(f, "evidence"), "sites")) > 0);
	ck_assert_int_eq(tu_json_i64(loc, "line"), 63);
	snprintf(want, sizeof(want), "backward() at %s:63 in main (autograd engine thread)",
		 json_str(loc, "file"));
	where = strstr(t.out, "where:");
	ck_assert_msg(where != NULL, "%s", t.out);
	ck_assert_msg(!strncmp(where + strlen("where:    "), want, strlen(want)), "want %s in\n%s",
		      want, t.out);
	ck_assert_msg(strstr(t.out, "uncached_delete") == NULL, "%s", t.out);
	ck_assert_msg(strstr(m.out, want) != NULL, "%s", m.out);
	cJSON_Delete(doc);
	tu_result_free(&j);
	tu_result_free(&t);
	tu_result_free(&m);
	free(trace);
}
END_TEST

START_TEST(test_bad_usage)
{
	char *text = tu_path(tmp_dir, "notes.txt"), *missing = tu_path(tmp_dir, "missing.db");

	ck_assert_int_eq(tu_write_file(text, "hello\n", 6), 0);
	struct tu_result r[] = {
		run(missing),
		run(text),
		run("--format", "yaml", train_db),
		run("--warmup", "-1", train_db),
		run("--warmup", "many", train_db),
		run("--pid", "0", train_db),
		run("--pid", "999999", train_db),
		run("--step-range", "epoch*", train_db),
		run("--step-range", "", train_db),
		run("--no-such-option", train_db),
		run(train_db, counts_db),
	};
	struct tu_result none = tu_cuscope((const char *[]){NULL, "report", NULL});
	struct tu_result help = run("--help");

	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		char what[32];

		snprintf(what, sizeof(what), "case %zu", i);
		tu_assert_one_line_error(&r[i], what);
		tu_result_free(&r[i]);
	}
	tu_assert_one_line_error(&none, "no file");
	ck_assert_int_eq(help.rc, 0);
	ck_assert_msg(!strncmp(help.out, "usage: cuscope report", 21), "%s", help.out);
	ck_assert_msg(strstr(help.out, "--fail-on"), "%s", help.out);
	tu_result_free(&none);
	tu_result_free(&help);
	free(text);
	free(missing);
}
END_TEST

START_TEST(test_pid_and_no_color_env)
{
	static const char *const env[] = {"NO_COLOR=1", NULL};
	const char *argv[] = {tu_cuscope_bin(), "report", "--pid", "3615",
			      "--no-color",	train_db, NULL};
	char *out = NULL, *err = NULL;
	int rc = tu_run(argv, env, &out, &err);

	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_msg(strstr(out, "pid 3615") != NULL, "%s", out);
	ck_assert(strchr(out, '\033') == NULL);
	free(out);
	free(err);
}
END_TEST

/* The finding of rule in a report, or NULL. */
static const cJSON *finding_of(const cJSON *doc, const char *rule)
{
	const cJSON *f;

	cJSON_ArrayForEach(f, cJSON_GetObjectItem(doc, "findings"))
	{
		if (!strcmp(json_str(f, "rule"), rule))
			return f;
	}
	return NULL;
}

/* Is key of o null? */
static int json_null(const cJSON *o, const char *key)
{
	return cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, key));
}

/*
 * Every process that launched GPU work is analysed with its own steps: a read-back in every step
 * of the second process (not the one with the most kernels, which a tie gives to the lower pid) is
 * found, and carries that pid, in JSON, text and markdown.
 */
START_TEST(test_every_process_second_only)
{
	struct tu_result j = run("-f", "json", second_db), t = run("--width", "100", second_db),
			 m = run("-f", "markdown", second_db), v = run("-v", second_db),
			 fail = run("--fail-on", "warning", second_db),
			 h = run("-f", "html", second_db);
	cJSON *doc = report_json(j.out), *procs = cJSON_GetObjectItem(doc, "processes");
	const cJSON *f = finding_of(doc, "d2h-sync"), *p0, *p1;

	ck_assert_int_eq(j.rc, 0);
	ck_assert_msg(f != NULL, "%s", j.out);
	ck_assert_int_eq(tu_json_i64(f, "pid"), 301);
	ck_assert(json_null(f, "rank"));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(f, "processes")), 1);
	ck_assert_int_eq(
		tu_json_i64(cJSON_GetArrayItem(cJSON_GetObjectItem(f, "processes"), 0), "pid"), 301);
	/* both processes, each with its own 20 steps; the top-level steps stay the busiest's */
	ck_assert_int_eq(cJSON_GetArraySize(procs), 2);
	p0 = cJSON_GetArrayItem(procs, 0);
	p1 = cJSON_GetArrayItem(procs, 1);
	ck_assert_int_eq(tu_json_i64(p0, "pid"), 300);
	ck_assert_int_eq(tu_json_i64(p1, "pid"), 301);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(p0, "primary")));
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(p1, "primary")));
	ck_assert_int_eq(tu_json_i64(cJSON_GetObjectItem(p0, "steps"), "count"), 20);
	ck_assert_int_eq(tu_json_i64(cJSON_GetObjectItem(p1, "steps"), "count"), 20);
	ck_assert_int_eq(tu_json_i64(cJSON_GetObjectItem(p1, "steps"), "pid"), 301);
	ck_assert_int_eq(tu_json_i64(cJSON_GetObjectItem(doc, "steps"), "pid"), 300);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(p0, "findings")), 0);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(p1, "findings")), 1);
	/* the text header lists both processes and what was found in each, in 100 columns */
	ck_assert_int_eq(t.rc, 0);
	ck_assert_msg(strstr(t.out, "processes: 2 analysed, each with its own steps"), "%s", t.out);
	ck_assert_msg(strstr(t.out, "           pid 300: 20 steps, median ") &&
			      strstr(t.out, "GPU busy 100.0%; no findings\n"),
		      "%s", t.out);
	/* the process whose reads drain the GPU: the share of its steps it waited for the host
	 * (the GPU idle line of a single process), the GPU-bound one without it */
	ck_assert_msg(strstr(t.out, "           pid 301: 20 steps, median ") &&
			      strstr(t.out, ", waiting for the host 14.3%; d2h-sync"),
		      "%s", t.out);
	ck_assert_msg(strstr(t.out, "\n    process:  pid 301\n"), "%s", t.out);
	for (const char *l = t.out; *l;) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);

		ck_assert_msg(n <= 100, "line of %zu columns: %.*s", n, (int)n, l);
		l += n + (e != NULL);
	}
	/* -v: the steps of each process, each table with that process's step times (the same
	 * rows as --pid 301 -v shows) */
	ck_assert_msg(strstr(v.out, "Steps of pid 300: kernel sequence of pid 300") &&
			      strstr(v.out, "Steps of pid 301: kernel sequence of pid 301"),
		      "%s", v.out);
	{
		struct tu_result one = run("-v", "--pid", "301", second_db);
		const char *a = strstr(strstr(v.out, "Steps of pid 301:"), "\n\n");
		const char *b = strstr(strstr(one.out, "Steps:"), "\n\n");
		const char *ae = a ? strstr(a + 2, "\n\n") : NULL;
		const char *be = b ? strstr(b + 2, "\n\n") : NULL;

		ck_assert_msg(a && b && ae && be, "%s\n%s", v.out, one.out);
		ck_assert_msg(ae - a == be - b && !memcmp(a, b, (size_t)(ae - a)),
			      "steps of pid 301:%.*s\nwith --pid 301:%.*s", (int)(ae - a), a,
			      (int)(be - b), b);
		tu_result_free(&one);
	}
	ck_assert_msg(strstr(m.out, "| Process | pid 301: 20 steps") &&
			      strstr(m.out, "- **Process:** pid 301\n"),
		      "%s", m.out);
	/* the share each process's GPU waited for the host, in every format's list of processes */
	ck_assert_msg(strstr(m.out, ", waiting for the host 14.3%; d2h-sync (error) |") &&
			      strstr(m.out, "GPU busy 100.0%; no findings |"),
		      "%s", m.out);
	ck_assert_int_eq(h.rc, 0);
	ck_assert_msg(strstr(h.out, "<th>GPU busy</th><th>Waiting for the host</th>") &&
			      strstr(h.out, "<td class=\"num\">14.3%</td><td>d2h-sync</td>") &&
			      strstr(h.out, "<td class=\"num\">100.0%</td><td class=\"num\"></td>"),
		      "%s", h.out);
	/* --fail-on sees findings of every process */
	ck_assert_int_eq(fail.rc, 1);
	cJSON_Delete(doc);
	tu_result_free(&j);
	tu_result_free(&t);
	tu_result_free(&m);
	tu_result_free(&h);
	tu_result_free(&v);
	tu_result_free(&fail);
}
END_TEST

/* --pid narrows the report to one process: its steps, its findings, today's one-process layout. */
START_TEST(test_every_process_pid_narrows)
{
	struct tu_result a = run("-f", "json", "--pid", "300", second_db),
			 b = run("-f", "json", "--pid", "301", second_db),
			 t = run("--pid", "301", second_db), bad = run("--pid", "302", second_db);
	cJSON *da = report_json(a.out), *db = report_json(b.out);

	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(da, "findings")), 0);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(da, "processes")), 1);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(db, "processes")), 1);
	ck_assert_int_eq(tu_json_i64(cJSON_GetObjectItem(db, "steps"), "pid"), 301);
	ck_assert_msg(finding_of(db, "d2h-sync") != NULL, "%s", b.out);
	ck_assert_int_eq(tu_json_i64(finding_of(db, "d2h-sync"), "pid"), 301);
	ck_assert_msg(strstr(t.out, "steps:     20 (kernel sequence of pid 301"), "%s", t.out);
	ck_assert_msg(!strstr(t.out, "processes:") && !strstr(t.out, "process:"), "%s", t.out);
	tu_assert_one_line_error(&bad, "--pid not in the trace");
	ck_assert_msg(strstr(bad.err, "no process 302"), "%s", bad.err);
	cJSON_Delete(da);
	cJSON_Delete(db);
	tu_result_free(&a);
	tu_result_free(&b);
	tu_result_free(&t);
	tu_result_free(&bad);
}
END_TEST

/* The rank comes from the PROCESSES table, and processes are listed by rank. */
START_TEST(test_every_process_rank)
{
	struct tu_result j = run("-f", "json", rank1_db), t = run(rank1_db);
	cJSON *doc = report_json(j.out), *procs = cJSON_GetObjectItem(doc, "processes");
	const cJSON *f = finding_of(doc, "d2h-sync");

	ck_assert_msg(f != NULL, "%s", j.out);
	ck_assert_int_eq(tu_json_i64(f, "pid"), 500);
	ck_assert_int_eq(tu_json_i64(f, "rank"), 1);
	ck_assert_int_eq(tu_json_i64(f, "local_rank"), 1);
	ck_assert_int_eq(tu_json_i64(cJSON_GetArrayItem(procs, 0), "rank"), 0);
	ck_assert_int_eq(tu_json_i64(cJSON_GetArrayItem(procs, 0), "pid"), 501);
	ck_assert_int_eq(tu_json_i64(cJSON_GetArrayItem(procs, 1), "rank"), 1);
	ck_assert_msg(strstr(t.out, "           rank 0 (pid 501): 20 steps") &&
			      strstr(t.out, "           rank 1 (pid 500): 20 steps"),
		      "%s", t.out);
	ck_assert_msg(strstr(t.out, "rank 0 (pid 501)") < strstr(t.out, "rank 1 (pid 500)"), "%s",
		      t.out);
	ck_assert_msg(strstr(t.out, "\n    process:  rank 1 (pid 500)\n"), "%s", t.out);
	cJSON_Delete(doc);
	tu_result_free(&j);
	tu_result_free(&t);
}
END_TEST

/*
 * The same finding (same rule, same line of the program) in two ranks is one finding naming both,
 * with the figures of the rank where it costs most and each rank's own cost.
 */
START_TEST(test_every_process_same_finding_once)
{
	struct tu_result j = run("-f", "json", both_db), t = run(both_db),
			 m = run("-f", "markdown", both_db);
	cJSON *doc = report_json(j.out);
	const cJSON *f = finding_of(doc, "d2h-sync"), *fp, *x;
	int n = 0;
	int64_t lost0, lost1;

	ck_assert_msg(f != NULL, "%s", j.out);
	cJSON_ArrayForEach(x, cJSON_GetObjectItem(doc, "findings"))
	{
		n += !strcmp(json_str(x, "rule"), "d2h-sync");
	}
	ck_assert_int_eq(n, 1);
	fp = cJSON_GetObjectItem(f, "processes");
	ck_assert_int_eq(cJSON_GetArraySize(fp), 2);
	ck_assert_int_eq(tu_json_i64(cJSON_GetArrayItem(fp, 0), "rank"), 0);
	ck_assert_int_eq(tu_json_i64(cJSON_GetArrayItem(fp, 1), "rank"), 1);
	lost0 = (int64_t)cJSON_GetObjectItem(cJSON_GetArrayItem(fp, 0), "lost_ns_per_step")
			->valuedouble;
	lost1 = (int64_t)cJSON_GetObjectItem(cJSON_GetArrayItem(fp, 1), "lost_ns_per_step")
			->valuedouble;
	ck_assert_msg(lost1 > lost0, "%lld %lld", (long long)lost0, (long long)lost1);
	/* the finding's own figures are rank 1's, where it costs most */
	ck_assert_int_eq(tu_json_i64(f, "rank"), 1);
	ck_assert_int_eq(tu_json_i64(f, "pid"), 601);
	ck_assert(cJSON_GetObjectItem(f, "lost_ns_per_step")->valuedouble == (double)lost1);
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(
			cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "processes"), 2), "findings")),
		0);
	ck_assert_msg(strstr(t.out, "\n    process:  rank 1 (pid 601)\n    steps:    ") &&
			      strstr(t.out, "\n    also in:  rank 0 (pid 600): ") &&
			      strstr(t.out, " per step ("),
		      "%s", t.out);
	ck_assert_msg(strstr(t.out, "rank 2 (pid 602): 20 steps") && strstr(t.out, "no findings"),
		      "%s", t.out);
	ck_assert_msg(strstr(m.out, "| rank 0 (pid 600), rank 1 (pid 601) |") &&
			      strstr(m.out, "- **Also in:** rank 0 (pid 600): "),
		      "%s", m.out);
	cJSON_Delete(doc);
	tu_result_free(&j);
	tu_result_free(&t);
	tu_result_free(&m);
}
END_TEST

/* Another line of the program is another cause: two findings, one per rank. */
START_TEST(test_every_process_other_line_apart)
{
	struct tu_result j = run("-f", "json", apart_db);
	cJSON *doc = report_json(j.out), *f;
	int n = 0, ranks = 0;

	cJSON_ArrayForEach(f, cJSON_GetObjectItem(doc, "findings"))
	{
		if (strcmp(json_str(f, "rule"), "d2h-sync"))
			continue;
		n++;
		ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(f, "processes")), 1);
		ck_assert_int_eq(tu_json_i64(cJSON_GetObjectItem(f, "location"), "line"),
				 42 + tu_json_i64(f, "rank"));
		ranks |= 1 << tu_json_i64(f, "rank");
	}
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(ranks, 3);
	cJSON_Delete(doc);
	tu_result_free(&j);
}
END_TEST

/* Six ranks with the same finding: one finding; the text names 4 others without -v, -v all 5. */
START_TEST(test_every_process_many_ranks)
{
	struct tu_result j = run("-f", "json", six_db), t = run(six_db), v = run("-v", six_db);
	cJSON *doc = report_json(j.out);
	const cJSON *f = finding_of(doc, "d2h-sync");
	const char *p;
	int also = 0;

	ck_assert_msg(f != NULL, "%s", j.out);
	ck_assert_int_eq(tu_json_i64(cJSON_GetObjectItem(doc, "summary"), "findings"), 1);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(f, "processes")), 6);
	ck_assert_msg(strstr(t.out, "\n              ... 1 more (-v shows all)\n"), "%s", t.out);
	for (p = strstr(v.out, "also in:"); p && (p = strstr(p, " per step (")); p++)
		also++;
	ck_assert_msg(also == 5, "%d:\n%s", also, v.out);
	cJSON_Delete(doc);
	tu_result_free(&j);
	tu_result_free(&t);
	tu_result_free(&v);
}
END_TEST

/*
 * --step-range: each process takes its steps from its own matching ranges; a process without any
 * gets the automatic detection. The pattern must match somewhere, and in the --pid process.
 */
START_TEST(test_every_process_step_range)
{
	struct tu_result j = run("-f", "json", "--step-range", "step*", nvtx_db),
			 none = run("--step-range", "epoch*", nvtx_db),
			 pid = run("--step-range", "step*", "--pid", "701", nvtx_db);
	cJSON *doc = report_json(j.out), *procs = cJSON_GetObjectItem(doc, "processes");
	const cJSON *f = finding_of(doc, "d2h-sync");

	ck_assert_int_eq(j.rc, 0);
	ck_assert_int_eq(cJSON_GetArraySize(procs), 2);
	ck_assert_str_eq(
		json_str(cJSON_GetObjectItem(cJSON_GetArrayItem(procs, 0), "steps"), "method"),
		"nvtx");
	ck_assert_int_eq(
		tu_json_i64(cJSON_GetObjectItem(cJSON_GetArrayItem(procs, 0), "steps"), "count"), 20);
	ck_assert_str_eq(
		json_str(cJSON_GetObjectItem(cJSON_GetArrayItem(procs, 1), "steps"), "method"),
		"period");
	ck_assert_str_eq(json_str(cJSON_GetObjectItem(doc, "steps"), "method"), "nvtx");
	ck_assert_msg(f != NULL, "%s", j.out);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(f, "processes")), 2);
	tu_assert_one_line_error(&none, "a pattern that matches nothing");
	tu_assert_one_line_error(&pid, "a pattern that matches nothing in the --pid process");
	cJSON_Delete(doc);
	tu_result_free(&j);
	tu_result_free(&none);
	tu_result_free(&pid);
}
END_TEST

static Suite *report_suite(void)
{
	Suite *s = suite_create("report");
	TCase *tc = tcase_create("report");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_text_train_small);
	tcase_add_test(tc, test_source_names_host_tensor);
	tcase_add_test(tc, test_text_clean_says_no_findings);
	tcase_add_test(tc, test_evidence_fractional_ns);
	tcase_add_test(tc, test_text_no_structure);
	tcase_add_test(tc, test_json_validates);
	tcase_add_test(tc, test_json_steps);
	tcase_add_test(tc, test_host_idle);
	tcase_add_test(tc, test_queued_idle);
	tcase_add_test(tc, test_overlap_said);
	tcase_add_test(tc, test_idle_without_finding);
	tcase_add_test(tc, test_schema_catches_mistakes);
	tcase_add_test(tc, test_markdown);
	tcase_add_test(tc, test_list_rules);
	tcase_add_test(tc, test_rules_and_skip);
	tcase_add_test(tc, test_fail_on);
	tcase_add_test(tc, test_findings_output);
	tcase_add_test(tc, test_rare_saving_share);
	tcase_add_test(tc, test_borrowed_stack_location);
	tcase_add_test(tc, test_text_where_after_sites);
	tcase_add_test(tc, test_warmup_past_steps);
	tcase_add_test(tc, test_native_stack_location);
	tcase_add_test(tc, test_bad_usage);
	tcase_add_test(tc, test_pid_and_no_color_env);
	tcase_add_test(tc, test_every_process_second_only);
	tcase_add_test(tc, test_every_process_pid_narrows);
	tcase_add_test(tc, test_every_process_rank);
	tcase_add_test(tc, test_every_process_same_finding_once);
	tcase_add_test(tc, test_every_process_other_line_apart);
	tcase_add_test(tc, test_every_process_many_ranks);
	tcase_add_test(tc, test_every_process_step_range);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	char *schema_path, *text;
	int failed;

	tmp_dir = tu_tmpdir();
	if (!tmp_dir) {
		fprintf(stderr, "test_report: cannot make a temporary directory\n");
		return 1;
	}
	train_db = tu_source_file("samples/traces/train_small.db");
	counts_db = tu_source_file("samples/traces/counts.db");
	rare_db = tu_source_file("tests/data/savings/rare_eval_item.db");
	schema_path = tu_source_file("docs/report-schema.json");
	text = tu_read_file(schema_path, NULL);
	schema = text ? cJSON_Parse(text) : NULL;
	if (!schema) {
		fprintf(stderr, "test_report: cannot read %s\n", schema_path);
		return 1;
	}
	free(text);
	free(schema_path);
	clean_db = tu_path(tmp_dir, "clean.db");
	sync_db = tu_path(tmp_dir, "sync.db");
	write_loop(clean_db, 0);
	write_loop(sync_db, 1);
	backward_db = tu_path(tmp_dir, "backward.db");
	write_loop(backward_db, 2);
	native_db = tu_path(tmp_dir, "native.db");
	write_loop(native_db, 3);
	native_lines_db = tu_path(tmp_dir, "native_lines.db");
	write_loop(native_lines_db, 4);
	{
		static const struct wproc second[] = {{300, CS_ID_NONE, 0, 0, 0, 0},
						      {301, CS_ID_NONE, 1, 0, 0, 0}};
		static const struct wproc rank1[] = {{500, 1, 1, 0, 0, 0}, {501, 0, 0, 0, 0, 0}};
		static const struct wproc both[] = {
			{600, 0, 1, 0, 0, 0}, {601, 1, 1, 300, 0, 0}, {602, 2, 0, 0, 0, 0}};
		static const struct wproc apart[] = {{800, 0, 1, 0, 42, 0}, {801, 1, 1, 0, 43, 0}};
		static const struct wproc six[] = {{900, 0, 1, 0, 0, 0}, {901, 1, 1, 0, 0, 0},
						   {902, 2, 1, 0, 0, 0}, {903, 3, 1, 0, 0, 0},
						   {904, 4, 1, 0, 0, 0}, {905, 5, 1, 0, 0, 0}};
		static const struct wproc nvtx[] = {{700, 0, 1, 0, 0, 1}, {701, 1, 1, 0, 0, 0}};

		second_db = tu_path(tmp_dir, "second.db");
		write_procs(second_db, second, 2);
		rank1_db = tu_path(tmp_dir, "rank1.db");
		write_procs(rank1_db, rank1, 2);
		both_db = tu_path(tmp_dir, "both.db");
		write_procs(both_db, both, 3);
		apart_db = tu_path(tmp_dir, "apart.db");
		write_procs(apart_db, apart, 2);
		six_db = tu_path(tmp_dir, "six.db");
		write_procs(six_db, six, 6);
		nvtx_db = tu_path(tmp_dir, "nvtx.db");
		write_procs(nvtx_db, nvtx, 2);
	}

	sr = srunner_create(report_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	cJSON_Delete(schema);
	return failed ? 1 : 0;
}
