/*
 * test_export.c - `cuscope export`, run as the real binary, its output checked against the trace it
 * came from: the Chrome JSON parses and every event has the fields its phase needs; kernel time
 * per stream matches the trace; slices on one thread nest; each flow starts inside a launch slice
 * and ends inside the GPU work; unknown timestamps are left out; names with quotes, control
 * characters and invalid UTF-8 come out escaped and repaired; overlapping kernels go on an overlap
 * lane; launches are written once and reused; the memory counter, no findings, metadata; the
 *Perfetto protobuf decodes (a small wire-format reader below) with begin/end pairs that match; the
 *golden output of samples/traces/counts.db; gzip, --time-range, --steps, standard output and bad
 *input.
 *
 * The golden file tests/data/export/counts.chrome.json is the exporter's output, compared byte for
 * byte; refresh it after an intended change of the format with
 *	build/cuscope export -q --force -o tests/data/export/counts.chrome.json
 *samples/traces/counts.db and review the diff.
 */
#include <check.h>
#include <dirent.h>
#include <inttypes.h>
#include <regex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "cuscope/analyze.h"
#include "cuscope/export.h"
#include "cuscope/trace.h"
#include "testutil.h"

#define PID	100
#define TID2	101
#define BASE_NS 1700000000000000000ll

static char *tmp_dir;
static char *synth_db; /* the trace written in main() */
static char *counts_db, *train_db;
static char *ranks_db; /* two ranks, written in main() */
static int count_files(const char *dir);

/* ---- the synthetic trace (written in main(), before the tests: no ck_assert there) ---- */

#define need(ok, what) tu_need(ok, "test_export", what)

static cs_kernel kernel(int64_t name_id, uint32_t stream, int64_t start, int64_t end, uint64_t corr)
{
	cs_kernel k;

	memset(&k, 0, sizeof(k));
	k.start = start;
	k.end = end;
	k.queued = k.submitted = CS_TS_UNKNOWN;
	k.launch_start = k.launch_end = CS_TS_UNKNOWN;
	k.pid = PID;
	k.launch_cbid = CS_ID_NONE;
	k.stream_id = stream;
	k.context_id = 1;
	k.correlation_id = corr;
	k.grid_x = 128;
	k.grid_y = k.grid_z = 1;
	k.block_x = 256;
	k.block_y = k.block_z = 1;
	k.registers_per_thread = 32;
	k.graph_id = k.graph_node_id = CS_ID_NONE;
	k.name_id = name_id;
	k.stack_id = CS_ID_NONE;
	return k;
}

static void launched(cs_kernel *k, uint32_t tid, int64_t ls, int64_t le, int32_t cbid)
{
	k->launch_tid = tid;
	k->launch_start = ls;
	k->launch_end = le;
	k->launch_cbid = cbid;
	k->launch_api_kind = CS_API_RUNTIME;
}

/* An NVTX range or mark of type, the thread that ended it unknown (0). */
static cs_nvtx nvtx(cs_trace_writer *w, const char *text, int type, int64_t start, int64_t end)
{
	cs_nvtx n = tu_nvtx(PID, cs_writer_intern(w, text), start, end);

	n.type = type;
	n.end_tid = 0;
	return n;
}

static cs_memory memory(int op, int kind, uint64_t address, int64_t bytes, int64_t start)
{
	cs_memory m = tu_memory(PID, op, address, bytes, start);

	m.mem_kind = kind;
	return m;
}

/* A kernel name with a quote, a backslash, a newline, a control byte and invalid UTF-8. */
#define WEIRD_KERNEL "we\"ird\\\n\x01\xff\xc3(k\xc3\xa9"
/* ... and what it must read back as from the JSON */
#define WEIRD_KERNEL_REPAIRED "we\"ird\\\n\x01\xef\xbf\xbd\xef\xbf\xbd(k\xc3\xa9"
#define WEIRD_NVTX	      "step \"1\"\t\xe2\x82"
#define WEIRD_NVTX_REPAIRED   "step \"1\"\t\xef\xbf\xbd\xef\xbf\xbd"

static void write_synthetic(const char *path)
{
	cs_trace_writer *w = NULL;
	cs_error err = {0, ""};
	cs_process p;
	cs_device dv;
	cs_stream s;
	cs_kernel k;
	cs_memcpy mc;
	cs_memset ms;
	cs_api a;
	cs_sync sy;
	cs_nvtx n;
	sqlite3 *db;
	int64_t ka, kb;

	need(cs_writer_open(path, 1, &w, &err) == CS_OK, err.msg);
	cs_writer_set_meta_int(w, "realtime_base_ns", BASE_NS);
	cs_writer_set_meta_int(w, "time_base_ns", 5000000000ll);

	memset(&p, 0, sizeof(p));
	p.pid = PID;
	p.ppid = 1;
	p.start = p.end = CS_TS_UNKNOWN;
	p.command_line = "python3 train.py --tag \"x\"";
	p.rank = 0;
	p.local_rank = 0;
	p.world_size = 2;
	p.exit_code = 0;
	p.used_cuda = 1;
	need(!cs_writer_add_process(w, &p), "process");

	memset(&dv, 0, sizeof(dv));
	dv.pid = PID;
	dv.device_id = 0;
	dv.uuid = "GPU-test";
	dv.name = "Test GPU";
	dv.total_memory = 1ll << 34;
	dv.sm_count = 100;
	dv.compute_major = 9;
	need(!cs_writer_add_device(w, &dv), "device");
	memset(&s, 0, sizeof(s));
	s.pid = PID;
	s.context_id = 1;
	s.stream_id = 7;
	need(!cs_writer_add_stream(w, &s), "stream");
	s.stream_id = 9;
	need(!cs_writer_add_stream(w, &s), "stream");

	ka = cs_writer_intern(w, "kern_a");
	kb = cs_writer_intern(w, "kern_b");

	/* stream 7: two kernels that overlap (the second goes on an overlap lane) */
	k = kernel(ka, 7, 2000, 3000, 1);
	launched(&k, PID, 1000, 1200, 211);
	need(!cs_writer_add_kernel(w, &k), "kernel");
	k = kernel(kb, 7, 2500, 3500, 2);
	launched(&k, PID, 1300, 1500, 211);
	need(!cs_writer_add_kernel(w, &k), "kernel");
	k = kernel(cs_writer_intern(w, WEIRD_KERNEL), 7, 4000, 4500, 3);
	launched(&k, PID, 1600, 1800, 211);
	need(!cs_writer_add_kernel(w, &k), "kernel");
	/* launched by an API call the trace has a row for: the row is the launch slice */
	memset(&a, 0, sizeof(a));
	a.start = 1900;
	a.end = 1950;
	a.pid = PID;
	a.tid = PID;
	a.api_kind = CS_API_RUNTIME;
	a.cbid = 211;
	a.correlation_id = 4;
	a.name_id = cs_writer_intern(w, "cudaLaunchKernel_v7000");
	a.stack_id = CS_ID_NONE;
	need(!cs_writer_add_api(w, &a), "api");
	k = kernel(ka, 7, 5000, 5600, 4);
	launched(&k, PID, 1900, 1950, 211);
	need(!cs_writer_add_kernel(w, &k), "kernel");
	/* stream 9: a CUDA graph of two kernels from one launch on the second thread */
	k = kernel(ka, 9, 6000, 6500, 5);
	launched(&k, TID2, 5500, 5800, 311);
	k.graph_id = 1;
	k.graph_node_id = 1;
	need(!cs_writer_add_kernel(w, &k), "kernel");
	k = kernel(kb, 9, 6600, 7000, 5);
	launched(&k, TID2, 5500, 5800, 311);
	k.graph_id = 1;
	k.graph_node_id = 2;
	need(!cs_writer_add_kernel(w, &k), "kernel");
	/* unknown timestamps: left out */
	k = kernel(cs_writer_intern(w, "UNKNOWN_START_KERNEL"), 9, CS_TS_UNKNOWN, 8000, 8);
	need(!cs_writer_add_kernel(w, &k), "kernel");
	k = kernel(cs_writer_intern(w, "UNKNOWN_END_KERNEL"), 9, 8100, CS_TS_UNKNOWN, 9);
	need(!cs_writer_add_kernel(w, &k), "kernel");

	memset(&mc, 0, sizeof(mc));
	mc.start = 9000;
	mc.end = 9500;
	mc.launch_start = 8800;
	mc.launch_end = 8850;
	mc.pid = PID;
	mc.launch_tid = TID2;
	mc.launch_cbid = 41;
	mc.stream_id = 9;
	mc.context_id = 1;
	mc.correlation_id = 6;
	mc.copy_kind = CS_COPY_HTOD;
	mc.src_kind = CS_MEM_PINNED;
	mc.dst_kind = CS_MEM_DEVICE;
	mc.is_async = 1;
	mc.src_device_id = mc.dst_device_id = CS_ID_NONE;
	mc.bytes = 4096;
	mc.graph_id = mc.graph_node_id = mc.stack_id = CS_ID_NONE;
	need(!cs_writer_add_memcpy(w, &mc), "memcpy");
	memset(&ms, 0, sizeof(ms));
	ms.start = 9600;
	ms.end = 9700;
	ms.launch_start = 9550;
	ms.launch_end = 9580;
	ms.pid = PID;
	ms.launch_tid = PID;
	ms.launch_cbid = 51;
	ms.stream_id = 7;
	ms.context_id = 1;
	ms.correlation_id = 7;
	ms.mem_kind = CS_MEM_DEVICE;
	ms.is_async = 1;
	ms.bytes = 1024;
	ms.graph_id = ms.graph_node_id = ms.stack_id = CS_ID_NONE;
	need(!cs_writer_add_memset(w, &ms), "memset");

	/*
	 * device memory: 1000, 1500, 500, 700, 0; pinned host memory and a failed call do not
	 * count
	 */
	cs_memory m = memory(CS_MEMOP_ALLOC, CS_MEM_DEVICE, 0x1000, 1000, 300);
	need(!cs_writer_add_memory(w, &m), "memory");
	m = memory(CS_MEMOP_ALLOC, CS_MEM_PINNED, 0x9000, 77777, 400);
	need(!cs_writer_add_memory(w, &m), "memory");
	m = memory(CS_MEMOP_ALLOC, CS_MEM_DEVICE, 0x5000, 1ll << 50, 450);
	m.result = 2;
	need(!cs_writer_add_memory(w, &m), "memory");
	m = memory(CS_MEMOP_ALLOC, CS_MEM_DEVICE, 0x2000, 500, 10000);
	need(!cs_writer_add_memory(w, &m), "memory");
	m = memory(CS_MEMOP_FREE, CS_MEM_DEVICE, 0x1000, 0, 12000);
	need(!cs_writer_add_memory(w, &m), "memory");
	/* 0x2000 allocated again with no free seen (a dropped record): it replaces the 500 */
	m = memory(CS_MEMOP_ALLOC, CS_MEM_DEVICE, 0x2000, 700, 13000);
	need(!cs_writer_add_memory(w, &m), "memory");
	m = memory(CS_MEMOP_FREE, CS_MEM_DEVICE, 0x2000, 0, 14000);
	need(!cs_writer_add_memory(w, &m), "memory");

	/* a stream synchronize: the API call and the wait inside it */
	a.start = 15000;
	a.end = 16000;
	a.cbid = 131;
	a.correlation_id = 900;
	a.name_id = cs_writer_intern(w, "cudaStreamSynchronize_v3020");
	need(!cs_writer_add_api(w, &a), "api");
	memset(&sy, 0, sizeof(sy));
	sy.start = 15100;
	sy.end = 15900;
	sy.pid = PID;
	sy.tid = PID;
	sy.stream_id = 7;
	sy.event_id = CS_ID_NONE;
	sy.correlation_id = 900;
	sy.type = CS_SYNC_STREAM_SYNCHRONIZE;
	sy.cbid = 131;
	sy.api_kind = CS_API_RUNTIME;
	sy.stack_id = CS_ID_NONE;
	need(!cs_writer_add_sync(w, &sy), "sync");

	n = nvtx(w, WEIRD_NVTX, CS_NVTX_PUSHPOP, 500, 20000);
	need(!cs_writer_add_nvtx(w, &n), "nvtx");
	n = nvtx(w, "cross", CS_NVTX_STARTEND, 11000, 13000);
	n.end_tid = TID2;
	n.range_id = 1;
	need(!cs_writer_add_nvtx(w, &n), "nvtx");
	n = nvtx(w, "NEVER_ENDED_RANGE", CS_NVTX_STARTEND, 11500, CS_TS_UNKNOWN);
	n.range_id = 2;
	need(!cs_writer_add_nvtx(w, &n), "nvtx");
	n = nvtx(w, "mark", CS_NVTX_MARK, 14000, 14000);
	need(!cs_writer_add_nvtx(w, &n), "nvtx");

	need(cs_writer_finish(w, &err) == CS_OK, err.msg);
	/* a row in FINDINGS, as another tool may write one: export draws none */
	need(sqlite3_open(path, &db) == SQLITE_OK &&
		     sqlite3_exec(
			     db,
			     "INSERT INTO FINDINGS(rule, severity, start, end, message) "
			     "VALUES('d2h-sync', 2, 15000, 16000, 'loss.item() syncs every step')",
			     NULL, NULL, NULL) == SQLITE_OK,
	     "findings row");
	sqlite3_close(db);
}

/* Two processes of a job, ranks 0 and 1, each on its own GPU of the two they both see. */
static void write_ranks(const char *path)
{
	cs_trace_writer *w = NULL;
	cs_error err = {0, ""};
	int64_t name;

	need(cs_writer_open(path, 1, &w, &err) == CS_OK, err.msg);
	cs_writer_set_meta_int(w, "realtime_base_ns", BASE_NS);
	name = cs_writer_intern(w, "rank_kernel");
	for (int r = 0; r < 2; r++) {
		uint32_t pid = 200 + 100 * (uint32_t)r;
		cs_process p;
		cs_device dv;
		cs_kernel k;
		cs_memory m;

		memset(&p, 0, sizeof(p));
		p.pid = pid;
		p.ppid = 1;
		p.start = p.end = CS_TS_UNKNOWN;
		p.command_line = "python3 train.py";
		p.rank = p.local_rank = r;
		p.world_size = 2;
		p.exit_code = 0;
		p.used_cuda = 1;
		need(!cs_writer_add_process(w, &p), "process");
		for (int dev = 0; dev < 2; dev++) {
			memset(&dv, 0, sizeof(dv));
			dv.pid = pid;
			dv.device_id = dev;
			dv.uuid = dev ? "GPU-b" : "GPU-a";
			dv.name = "Test GPU";
			dv.total_memory = 1ll << 34;
			dv.sm_count = 132;
			dv.compute_major = 9;
			need(!cs_writer_add_device(w, &dv), "device");
		}
		for (int i = 0; i < 4; i++) {
			k = kernel(name, 7, 10000 * (i + 1), 10000 * (i + 1) + 500,
				   (uint64_t)i + 1);
			k.pid = pid;
			k.device_id = r;
			launched(&k, pid, 10000 * (i + 1) - 900, 10000 * (i + 1) - 800, 211);
			need(!cs_writer_add_kernel(w, &k), "kernel");
		}
		m = memory(CS_MEMOP_ALLOC, CS_MEM_DEVICE, 0x1000, 4096 * (r + 1), 500);
		m.pid = m.tid = pid;
		m.device_id = r;
		need(!cs_writer_add_memory(w, &m), "memory");
	}
	need(cs_writer_finish(w, &err) == CS_OK, err.msg);
}

/* ---- running the exporter ---- */

/* Run `cuscope export ARGS... -o OUT FILE`; returns the exit code, stderr in *err when asked. */
static int run_export(const char *const *args, const char *out, const char *file, char **err)
{
	const char *argv[24];
	int n = 0;

	argv[n++] = tu_cuscope_bin();
	argv[n++] = "export";
	argv[n++] = "--force"; /* the outputs of a test are written over */
	for (; args && *args; args++)
		argv[n++] = *args;
	if (out) {
		argv[n++] = "-o";
		argv[n++] = out;
	}
	argv[n++] = file;
	argv[n] = NULL;
	return tu_run(argv, NULL, NULL, err);
}

/* The number of events the summary line says were written. */
static long summary_events(const char *err)
{
	const char *p = strstr(err, ", ");
	char digits[32];
	size_t n = 0;

	ck_assert_msg(p, "no summary line: %s", err);
	for (p += 2; *p && *p != ' ' && n + 1 < sizeof(digits); p++)
		if (*p != ',')
			digits[n++] = *p;
	digits[n] = '\0';
	return strtol(digits, NULL, 10);
}

/* Export FILE to Chrome JSON with extra args; the text (malloc'd), its events counted. */
static char *export_json(const char *file, const char *const *args, long *events)
{
	static int seq;
	char name[64], *out, *err = NULL, *text;
	int rc;

	snprintf(name, sizeof(name), "out-%d.json", seq++);
	out = tu_path(tmp_dir, name);
	rc = run_export(args, out, file, &err);
	ck_assert_msg(rc == 0, "export failed (%d): %s", rc, err);
	if (events)
		*events = summary_events(err);
	text = tu_read_file(out, NULL);
	ck_assert_ptr_nonnull(text);
	free(err);
	free(out);
	return text;
}

static cJSON *parse(const char *text)
{
	cJSON *doc = cJSON_Parse(text);

	ck_assert_msg(doc != NULL, "output is not JSON near: %.80s", cJSON_GetErrorPtr());
	ck_assert(cJSON_IsArray(cJSON_GetObjectItem(doc, "traceEvents")));
	return doc;
}

static cJSON *events_of(cJSON *doc)
{
	return cJSON_GetObjectItem(doc, "traceEvents");
}

static const char *str_of(const cJSON *e, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(e, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int has_num(const cJSON *e, const char *key)
{
	return cJSON_IsNumber(cJSON_GetObjectItem(e, key));
}

static double num_of(const cJSON *e, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(e, key);

	ck_assert_msg(cJSON_IsNumber(v), "missing number '%s'", key);
	return v->valuedouble;
}

/* A "ts"/"dur" in microseconds with ns decimals as integer ns. */
static int64_t ns_of(const cJSON *e, const char *key)
{
	return llround(num_of(e, key) * 1000.0);
}

static int64_t arg_int(const cJSON *e, const char *key, int64_t none)
{
	const cJSON *args = cJSON_GetObjectItem(e, "args");
	const cJSON *v = args ? cJSON_GetObjectItem(args, key) : NULL;

	return cJSON_IsNumber(v) ? (int64_t)llround(v->valuedouble) : none;
}

static int ph_is(const cJSON *e, const char *ph)
{
	const char *p = str_of(e, "ph");

	return p && !strcmp(p, ph);
}

static int cat_is(const cJSON *e, const char *cat)
{
	const char *c = str_of(e, "cat");

	return c && !strcmp(c, cat);
}

static int is_gpu_cat(const cJSON *e)
{
	return cat_is(e, "kernel") || cat_is(e, "gpu_memcpy") || cat_is(e, "gpu_memset");
}

/* Whether text is valid UTF-8 throughout. */
static int valid_utf8(const unsigned char *s)
{
	while (*s) {
		int n = *s < 0x80	      ? 1
			: (*s & 0xe0) == 0xc0 ? 2
			: (*s & 0xf0) == 0xe0 ? 3
			: (*s & 0xf8) == 0xf0 ? 4
					      : 0;

		if (!n || (n == 2 && *s < 0xc2))
			return 0;
		for (int i = 1; i < n; i++)
			if ((s[i] & 0xc0) != 0x80)
				return 0;
		s += n;
	}
	return 1;
}

/* ---- checks shared by the tests ---- */

/* Every event has what its phase needs; every ts and dur is written with three decimals. */
static void check_fields(cJSON *doc, const char *text)
{
	const cJSON *e;
	const char *p;

	cJSON_ArrayForEach(e, events_of(doc))
	{
		const char *ph = str_of(e, "ph");

		ck_assert_ptr_nonnull(ph);
		ck_assert_msg(has_num(e, "pid"), "event without pid");
		ck_assert_ptr_nonnull(str_of(e, "name"));
		if (!strcmp(ph, "X")) {
			ck_assert(has_num(e, "tid") && has_num(e, "ts") && has_num(e, "dur"));
			ck_assert_ptr_nonnull(str_of(e, "cat"));
			ck_assert(num_of(e, "dur") >= 0);
		} else if (!strcmp(ph, "s") || !strcmp(ph, "f")) {
			ck_assert(has_num(e, "id") && has_num(e, "tid") && has_num(e, "ts"));
			ck_assert_str_eq(str_of(e, "cat"), "ac2g");
			if (!strcmp(ph, "f"))
				ck_assert_str_eq(str_of(e, "bp"), "e");
		} else if (!strcmp(ph, "b") || !strcmp(ph, "e")) {
			ck_assert(has_num(e, "id") && has_num(e, "tid") && has_num(e, "ts"));
			ck_assert_ptr_nonnull(str_of(e, "cat"));
		} else if (!strcmp(ph, "i")) {
			ck_assert(has_num(e, "ts"));
			ck_assert_ptr_nonnull(str_of(e, "s"));
		} else if (!strcmp(ph, "C")) {
			const cJSON *args = cJSON_GetObjectItem(e, "args"), *v;

			ck_assert(has_num(e, "ts") && cJSON_IsObject(args));
			cJSON_ArrayForEach(v, args) ck_assert(cJSON_IsNumber(v));
		} else if (!strcmp(ph, "M")) {
			ck_assert(cJSON_IsObject(cJSON_GetObjectItem(e, "args")));
		} else {
			ck_abort_msg("unexpected phase '%s'", ph);
		}
	}
	for (p = text; (p = strstr(p, "\"ts\":")) != NULL; p += 5) {
		const char *q = p + 5, *dot;

		if (*q == '-')
			q++;
		dot = q + strspn(q, "0123456789");
		ck_assert_msg(dot > q && dot[0] == '.' && strspn(dot + 1, "0123456789") == 3 &&
				      (dot[4] == ',' || dot[4] == '}'),
			      "ts not in fixed form: %.30s", p);
	}
	for (p = text; (p = strstr(p, "\"dur\":")) != NULL; p += 6) {
		const char *dot = p + 6 + strspn(p + 6, "0123456789");

		ck_assert_msg(dot[0] == '.' && strspn(dot + 1, "0123456789") == 3,
			      "dur not in fixed form: %.30s", p);
	}
	ck_assert_msg(valid_utf8((const unsigned char *)text), "output is not valid UTF-8");
}

struct span {
	int64_t pid, tid, ts, dur;
	int gpu, launch;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->dur > y->dur ? -1 : x->dur < y->dur;
}

/* The X events, sorted by thread, start, longest first. */
static struct span *spans_of(cJSON *doc, size_t *n)
{
	struct span *v = calloc((size_t)cJSON_GetArraySize(events_of(doc)) + 1, sizeof(*v));
	const cJSON *e;

	*n = 0;
	cJSON_ArrayForEach(e, events_of(doc))
	{
		if (!ph_is(e, "X"))
			continue;
		v[*n].pid = (int64_t)num_of(e, "pid");
		v[*n].tid = (int64_t)num_of(e, "tid");
		v[*n].ts = ns_of(e, "ts");
		v[*n].dur = ns_of(e, "dur");
		v[*n].gpu = is_gpu_cat(e);
		v[*n].launch = cat_is(e, "cuda_runtime") || cat_is(e, "cuda_driver");
		(*n)++;
	}
	qsort(v, *n, sizeof(*v), span_cmp);
	return v;
}

/* No two X events of one thread overlap partially. */
static void check_nesting(cJSON *doc)
{
	size_t n;
	struct span *v = spans_of(doc, &n);
	int64_t stack[256];
	int depth = 0;

	for (size_t i = 0; i < n; i++) {
		if (i && (v[i].pid != v[i - 1].pid || v[i].tid != v[i - 1].tid))
			depth = 0;
		while (depth && stack[depth - 1] <= v[i].ts)
			depth--;
		ck_assert_msg(!depth || v[i].ts + v[i].dur <= stack[depth - 1],
			      "partial overlap on pid %" PRId64 " tid %" PRId64 " at %" PRId64,
			      v[i].pid, v[i].tid, v[i].ts);
		ck_assert(depth < 256);
		stack[depth++] = v[i].ts + v[i].dur;
	}
	free(v);
}

/* A slice of the kind wanted on (pid, tid) that contains ts. */
static int inside(const struct span *v, size_t n, int64_t pid, int64_t tid, int64_t ts, int gpu)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].pid == pid && v[i].tid == tid && v[i].ts <= ts &&
		    ts <= v[i].ts + v[i].dur && (gpu ? v[i].gpu : v[i].launch))
			return 1;
	return 0;
}

/* Each flow pairs one s and one f; s lies in a launch slice, f at the start of GPU work. */
static int check_flows(cJSON *doc)
{
	size_t n, nflows = 0;
	struct span *v = spans_of(doc, &n);
	const cJSON *e, *g;

	cJSON_ArrayForEach(e, events_of(doc))
	{
		int64_t id;
		int ends = 0;

		if (!ph_is(e, "s"))
			continue;
		nflows++;
		id = (int64_t)num_of(e, "id");
		ck_assert_msg(inside(v, n, (int64_t)num_of(e, "pid"), (int64_t)num_of(e, "tid"),
				     ns_of(e, "ts"), 0),
			      "flow %" PRId64 " starts outside a launch slice", id);
		cJSON_ArrayForEach(g, events_of(doc))
		{
			if (!ph_is(g, "f") || (int64_t)num_of(g, "id") != id)
				continue;
			ends++;
			ck_assert_msg(inside(v, n, (int64_t)num_of(g, "pid"),
					     (int64_t)num_of(g, "tid"), ns_of(g, "ts"), 1),
				      "flow %" PRId64 " ends outside GPU work", id);
		}
		ck_assert_int_eq(ends, 1);
	}
	free(v);
	return (int)nflows;
}

/* Kernel ns per (pid, device, stream) in the output equals the trace's. */
static void check_kernel_time(cJSON *doc, const char *path)
{
	struct {
		int64_t stream, sum;
		long n;
	} want[64], got[64];
	int nw = 0, ng = 0;
	cs_trace *t = NULL;
	cs_error err = {0, ""};
	cs_iter *it = NULL;
	cs_event ev;
	const cJSON *e;

	memset(want, 0, sizeof(want));
	memset(got, 0, sizeof(got));
	ck_assert_int_eq(cs_trace_open(path, &t, &err), CS_OK);
	ck_assert_int_eq(cs_iter_open(t, CS_EV_KERNEL, NULL, &it, &err), CS_OK);
	while (cs_iter_next(it, &ev) > 0) {
		const cs_kernel *k = &ev.u.kernel;
		int i;

		if (k->start == CS_TS_UNKNOWN || k->end == CS_TS_UNKNOWN)
			continue;
		for (i = 0; i < nw && want[i].stream != k->stream_id; i++)
			;
		if (i == nw)
			want[nw++].stream = k->stream_id;
		want[i].sum += k->end - k->start;
		want[i].n++;
	}
	cs_iter_close(it);
	cs_trace_close(t);
	cJSON_ArrayForEach(e, events_of(doc))
	{
		int64_t stream;
		int i;

		if (!ph_is(e, "X") || !cat_is(e, "kernel"))
			continue;
		stream = arg_int(e, "stream", -1);
		for (i = 0; i < ng && got[i].stream != stream; i++)
			;
		if (i == ng)
			got[ng++].stream = stream;
		got[i].sum += ns_of(e, "dur");
		got[i].n++;
	}
	ck_assert_int_eq(nw, ng);
	for (int i = 0; i < nw; i++) {
		int j;

		for (j = 0; j < ng && got[j].stream != want[i].stream; j++)
			;
		ck_assert_msg(j < ng, "stream %" PRId64 " missing", want[i].stream);
		ck_assert_int_eq(got[j].n, want[i].n);
		ck_assert_msg(llabs(got[j].sum - want[i].sum) <= want[i].n,
			      "stream %" PRId64 ": %" PRId64 " ns exported, %" PRId64
			      " in the trace",
			      want[i].stream, got[j].sum, want[i].sum);
	}
}

/* The first event with this phase and name, or NULL. */
static const cJSON *find_event(cJSON *doc, const char *ph, const char *name)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, events_of(doc))
	{
		const char *n = str_of(e, "name");

		if (ph_is(e, ph) && n && !strcmp(n, name))
			return e;
	}
	return NULL;
}

static int count_events(cJSON *doc, const char *ph, const char *name)
{
	const cJSON *e;
	int n = 0;

	cJSON_ArrayForEach(e, events_of(doc))
	{
		const char *nm = str_of(e, "name");

		if (ph_is(e, ph) && (!name || (nm && !strcmp(nm, name))))
			n++;
	}
	return n;
}

/* The name a thread_name (or process_name, tid < 0) metadata event gives (pid, tid). */
static const char *meta_name(cJSON *doc, int64_t pid, int64_t tid)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, events_of(doc))
	{
		if (!ph_is(e, "M") || (int64_t)num_of(e, "pid") != pid)
			continue;
		if (tid < 0 ? strcmp(str_of(e, "name"), "process_name")
			    : strcmp(str_of(e, "name"), "thread_name") ||
				      (int64_t)num_of(e, "tid") != tid)
			continue;
		return str_of(cJSON_GetObjectItem(e, "args"), "name");
	}
	return NULL;
}

/* ---- Chrome JSON ---- */

START_TEST(test_synthetic_fields_nesting_flows)
{
	long events;
	char *text = export_json(synth_db, NULL, &events);
	cJSON *doc = parse(text);

	ck_assert_int_eq(cJSON_GetArraySize(events_of(doc)), events);
	check_fields(doc, text);
	check_nesting(doc);
	/* 4 kernels on stream 7, 2 graph kernels, a memcpy and a memset: one flow each */
	ck_assert_int_eq(check_flows(doc), 8);
	check_kernel_time(doc, synth_db);
	cJSON_Delete(doc);
	free(text);
}
END_TEST

START_TEST(test_real_traces)
{
	const char *files[] = {counts_db, train_db};

	for (int i = 0; i < 2; i++) {
		long events;
		char *text = export_json(files[i], NULL, &events);
		cJSON *doc = parse(text);

		ck_assert_int_eq(cJSON_GetArraySize(events_of(doc)), events);
		check_fields(doc, text);
		check_nesting(doc);
		ck_assert_int_gt(check_flows(doc), 0);
		check_kernel_time(doc, files[i]);
		cJSON_Delete(doc);
		free(text);
	}
}
END_TEST

START_TEST(test_unknown_timestamps_left_out)
{
	char *text = export_json(synth_db, NULL, NULL);
	cJSON *doc = parse(text);

	ck_assert_ptr_null(strstr(text, "UNKNOWN_START_KERNEL"));
	ck_assert_ptr_null(strstr(text, "UNKNOWN_END_KERNEL"));
	ck_assert_ptr_null(strstr(text, "NEVER_ENDED_RANGE"));
	ck_assert_ptr_null(strstr(text, "\"ts\":0.000"));
	/* the kernel with a known start and end next to them is there */
	ck_assert_ptr_nonnull(find_event(doc, "X", "kern_a"));
	cJSON_Delete(doc);
	free(text);
}
END_TEST

START_TEST(test_strings_escaped_and_repaired)
{
	char *text = export_json(synth_db, NULL, NULL);
	cJSON *doc = parse(text);
	const cJSON *k = find_event(doc, "X", WEIRD_KERNEL_REPAIRED);
	const cJSON *n = find_event(doc, "X", WEIRD_NVTX_REPAIRED);

	ck_assert_msg(k != NULL, "the kernel name did not come back escaped and repaired");
	ck_assert_str_eq(str_of(k, "cat"), "kernel");
	ck_assert_msg(n != NULL, "the NVTX name did not come back escaped and repaired");
	ck_assert_str_eq(str_of(n, "cat"), "user_annotation"); /* NVTX, as Kineto writes it */
	/* control characters are escaped, never raw */
	ck_assert_ptr_nonnull(strstr(text, "\\u0001"));
	ck_assert_ptr_nonnull(strstr(text, "\\n"));
	ck_assert_ptr_nonnull(strstr(text, "\\t"));
	ck_assert_str_eq(meta_name(doc, PID, -1), "python3 train.py --tag \"x\"");
	cJSON_Delete(doc);
	free(text);
}
END_TEST

START_TEST(test_overlap_lane)
{
	char *text = export_json(synth_db, NULL, NULL);
	cJSON *doc = parse(text);
	const cJSON *a = find_event(doc, "X", "kern_a"), *b = find_event(doc, "X", "kern_b");
	int64_t gpu = (int64_t)num_of(a, "pid");

	/* kern_a [2000, 3000] on stream 7 itself, kern_b [2500, 3500] on its overlap lane */
	ck_assert_int_eq((int64_t)num_of(a, "tid"), 7);
	ck_assert_int_ne((int64_t)num_of(b, "tid"), 7);
	ck_assert_int_eq(arg_int(b, "stream", -1), 7);
	ck_assert_str_eq(meta_name(doc, gpu, 7), "stream 7");
	ck_assert_str_eq(meta_name(doc, gpu, (int64_t)num_of(b, "tid")), "stream 7 (overlap)");
	ck_assert_str_eq(meta_name(doc, gpu, -1), "GPU 0 (Test GPU)");
	ck_assert_int_eq(gpu, 0); /* Kineto: the device id */
	cJSON_Delete(doc);
	free(text);
}
END_TEST

START_TEST(test_launches)
{
	char *text = export_json(synth_db, NULL, NULL);
	cJSON *doc = parse(text);
	const cJSON *e;
	int launch4 = 0, graph = 0;

	cJSON_ArrayForEach(e, events_of(doc))
	{
		if (!ph_is(e, "X") || !(cat_is(e, "cuda_runtime") || cat_is(e, "cuda_driver")))
			continue;
		if (arg_int(e, "correlation", -1) == 4)
			launch4++;
		if (arg_int(e, "correlation", -1) == 5) {
			graph++;
			ck_assert_str_eq(str_of(e, "name"), "cudaGraphLaunch");
			ck_assert_int_eq((int64_t)num_of(e, "tid"), TID2);
		}
	}
	/* the API row is the launch: no second slice for it; one slice for the whole graph */
	ck_assert_int_eq(launch4, 1);
	ck_assert_int_eq(graph, 1);
	e = find_event(doc, "X", "cudaLaunchKernel");
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(arg_int(e, "cbid", -1), 211);
	ck_assert_int_eq(count_events(doc, "X", "cudaStreamSynchronize"), 1);
	ck_assert_int_eq(count_events(doc, "X", "cudaStreamSynchronize wait"), 1);
	ck_assert_ptr_nonnull(find_event(doc, "X", "cudaMemcpyAsync"));
	ck_assert_ptr_nonnull(find_event(doc, "X", "cudaMemsetAsync"));
	ck_assert_ptr_nonnull(find_event(doc, "X", "Memcpy HtoD (Pinned -> Device)"));
	ck_assert_ptr_nonnull(find_event(doc, "X", "Memset (Device)"));
	cJSON_Delete(doc);
	free(text);
}
END_TEST

START_TEST(test_memory_counter_no_findings)
{
	static const int64_t want[] = {1000, 1500, 500, 700, 0};
	char *text = export_json(synth_db, NULL, NULL);
	cJSON *doc = parse(text);
	const cJSON *e, *f;
	int n = 0;

	cJSON_ArrayForEach(e, events_of(doc))
	{
		if (!ph_is(e, "C"))
			continue;
		ck_assert_int_lt(n, 5);
		ck_assert_int_eq(arg_int(e, "allocated", -1), want[n]);
		n++;
	}
	ck_assert_int_eq(n, 5);
	/* the row of the FINDINGS table is not drawn (docs/trace-format.md, FINDINGS) */
	ck_assert_ptr_null(find_event(doc, "i", "d2h-sync: loss.item() syncs every step"));
	cJSON_ArrayForEach(e, events_of(doc))
	{
		const cJSON *cat = cJSON_GetObjectItem(e, "cat");

		ck_assert(!cJSON_IsString(cat) || strcmp(cat->valuestring, "finding"));
	}
	/* NVTX: the mark, the range across threads as b/e on its two threads */
	e = find_event(doc, "i", "mark");
	ck_assert_ptr_nonnull(e);
	e = find_event(doc, "b", "cross");
	f = find_event(doc, "e", "cross");
	ck_assert(e && f);
	ck_assert_int_eq((int64_t)num_of(e, "id"), (int64_t)num_of(f, "id"));
	ck_assert_int_eq((int64_t)num_of(e, "tid"), PID);
	ck_assert_int_eq((int64_t)num_of(f, "tid"), TID2);
	ck_assert_int_eq(ns_of(f, "ts") - ns_of(e, "ts"), 2000);
	cJSON_Delete(doc);
	free(text);
}
END_TEST

START_TEST(test_top_level_and_metadata)
{
	char *text = export_json(synth_db, NULL, NULL);
	cJSON *doc = parse(text);
	const cJSON *dev = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "deviceProperties"), 0);
	const cJSON *dist = cJSON_GetObjectItem(doc, "distributedInfo");
	const cJSON *e;
	int64_t host_sort = -1, gpu_sort = -1;

	ck_assert_int_eq((int64_t)num_of(doc, "schemaVersion"), 1);
	ck_assert_str_eq(str_of(doc, "displayTimeUnit"), "ms");
	/* ns since the epoch do not fit a double: compare the digits */
	ck_assert_ptr_nonnull(strstr(text, "\"baseTimeNanoseconds\":1700000000000000000,"));
	ck_assert_ptr_nonnull(dev);
	ck_assert_str_eq(str_of(dev, "name"), "Test GPU");
	ck_assert_int_eq((int64_t)num_of(dev, "numSms"), 100);
	ck_assert_ptr_nonnull(dist);
	ck_assert_int_eq((int64_t)num_of(dist, "rank"), 0);
	ck_assert_int_eq((int64_t)num_of(dist, "world_size"), 2);
	cJSON_ArrayForEach(e, events_of(doc))
	{
		if (!ph_is(e, "M") || strcmp(str_of(e, "name"), "process_sort_index"))
			continue;
		if ((int64_t)num_of(e, "pid") == PID)
			host_sort = arg_int(e, "sort_index", -1);
		else
			gpu_sort = arg_int(e, "sort_index", -1);
	}
	ck_assert(host_sort >= 0 && gpu_sort > host_sort); /* host processes first */
	ck_assert_str_eq(meta_name(doc, PID, PID), "thread 100 (main)");
	ck_assert_str_eq(meta_name(doc, PID, TID2), "thread 101");
	cJSON_Delete(doc);
	free(text);
}
END_TEST

START_TEST(test_golden_counts)
{
	char *golden_path = tu_path(tu_source_root(), "tests/data/export/counts.chrome.json");
	char *golden = tu_read_file(golden_path, NULL);
	char *text = export_json(counts_db, NULL, NULL);

	ck_assert_msg(golden != NULL, "missing %s", golden_path);
	if (strcmp(text, golden)) {
		size_t i = 0;

		while (text[i] && text[i] == golden[i])
			i++;
		ck_abort_msg("output differs from %s at byte %zu: '%.60s' (expected '%.60s'); "
			     "see the header of test_export.c to refresh it",
			     golden_path, i, text + i, golden + i);
	}
	free(golden);
	free(golden_path);
	free(text);
}
END_TEST

START_TEST(test_gzip)
{
	char *gz = tu_path(tmp_dir, "out.json.gz"), *plain_path = tu_path(tmp_dir, "plain.json");
	char *out = NULL, *plain;
	const char *argv[] = {"gzip", "-dc", gz, NULL};

	ck_assert_int_eq(run_export(NULL, gz, synth_db, NULL), 0);
	ck_assert_int_eq(run_export(NULL, plain_path, synth_db, NULL), 0);
	plain = tu_read_file(plain_path, NULL);
	ck_assert_int_eq(tu_run(argv, NULL, &out, NULL), 0);
	ck_assert_str_eq(out, plain);
	free(out);
	free(plain);
	free(gz);
	free(plain_path);
}
END_TEST

/* Whether the output has GPU work with this correlation id (its launch may lie before a window). */
static int gpu_work_with(cJSON *doc, int64_t corr)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, events_of(doc)) if (ph_is(e, "X") && is_gpu_cat(e) &&
						  arg_int(e, "correlation", -1) == corr) return 1;
	return 0;
}

START_TEST(test_time_range)
{
	const char *const args[] = {"--time-range", "4us:7us", NULL};
	char *text = export_json(synth_db, args, NULL);
	cJSON *doc = parse(text);
	const cJSON *e;
	int counters = 0;

	check_fields(doc, text);
	check_nesting(doc);
	ck_assert_int_eq(check_flows(doc), 4);
	cJSON_ArrayForEach(e, events_of(doc))
	{
		int64_t ts;

		if (!ph_is(e, "X") && !ph_is(e, "C"))
			continue;
		ts = ns_of(e, "ts");
		if (ph_is(e, "X") && !((cat_is(e, "cuda_runtime") || cat_is(e, "cuda_driver")) &&
				       gpu_work_with(doc, arg_int(e, "correlation", -1))))
			ck_assert_msg(ts < 7000 && ts + ns_of(e, "dur") > 4000,
				      "'%s' [%" PRId64 ", +%" PRId64 "] is outside the window",
				      str_of(e, "name"), ts, ns_of(e, "dur"));
		if (ph_is(e, "C")) {
			/* the level at the start of the window, from an allocation before it */
			ck_assert_int_eq(ts, 4000);
			ck_assert_int_eq(arg_int(e, "allocated", -1), 1000);
			counters++;
		}
	}
	ck_assert_int_eq(counters, 1);
	ck_assert_ptr_nonnull(find_event(doc, "X", WEIRD_KERNEL_REPAIRED)); /* [4000, 4500] */
	ck_assert_int_eq(count_events(doc, "X", "kern_a"), 2); /* [5000, 5600], [6000, 6500] */
	ck_assert_int_eq(count_events(doc, "X", "kern_b"), 1); /* [6600, 7000], not [2500, 3500] */
	ck_assert_int_eq(ns_of(find_event(doc, "X", "kern_b"), "ts"), 6600);
	ck_assert_ptr_null(find_event(doc, "X", "Memcpy HtoD (Pinned -> Device)"));
	ck_assert_ptr_nonnull(find_event(doc, "X", WEIRD_NVTX_REPAIRED)); /* [500, 20000] */
	cJSON_Delete(doc);
	free(text);
}
END_TEST

START_TEST(test_time_range_units)
{
	const char *const a1[] = {"--time-range", "0.000004:0.000007", NULL};
	const char *const a2[] = {"--time-range", "4000ns:", NULL};
	char *t1 = export_json(synth_db, a1, NULL), *t2;
	const char *const a3[] = {"--time-range", "4us:7us", NULL};
	char *t3 = export_json(synth_db, a3, NULL);
	cJSON *doc;

	ck_assert_str_eq(t1, t3);
	t2 = export_json(synth_db, a2, NULL);
	doc = parse(t2);
	ck_assert_ptr_nonnull(find_event(doc, "X", "Memcpy HtoD (Pinned -> Device)"));
	ck_assert_int_eq(count_events(doc, "X", "kern_b"), 1);
	cJSON_Delete(doc);
	free(t1);
	free(t2);
	free(t3);
}
END_TEST

START_TEST(test_stdout)
{
	const char *argv[] = {tu_cuscope_bin(), "export", "-o", "-", synth_db, NULL};
	char *out = NULL, *err = NULL, *file = export_json(synth_db, NULL, NULL);

	ck_assert_int_eq(tu_run(argv, NULL, &out, &err), 0);
	ck_assert_str_eq(out, file);
	ck_assert_str_eq(err, ""); /* no summary line when the output is standard output */
	free(out);
	free(err);
	free(file);
}
END_TEST

START_TEST(test_steps)
{
	const char *const args[] = {"--steps", "0-0", NULL};
	char *out = tu_path(tmp_dir, "steps.json"), *err = NULL, *text;
	int rc = run_export(args, out, train_db, &err);
	cJSON *doc;

	ck_assert_msg(rc == 0, "export --steps failed: %s", err);
	text = tu_read_file(out, NULL);
	doc = parse(text);
	check_fields(doc, text);
	check_nesting(doc);
	ck_assert_int_gt(count_events(doc, "X", NULL), 0);
	cJSON_Delete(doc);
	free(text);
	free(err);
	free(out);
}
END_TEST

/* ---- what Holistic Trace Analysis and TensorBoard's profiler plugin read ---- */

/* The rank HTA finds in a file: the first match of "rank":\s+(\d+) in its text; -1 for none. */
static long hta_rank(const char *text)
{
	regex_t re;
	regmatch_t m[2];
	long rank = -1;

	ck_assert_int_eq(regcomp(&re, "\"rank\":[[:space:]]+([0-9]+)", REG_EXTENDED), 0);
	if (!regexec(&re, text, 2, m, 0))
		rank = strtol(text + m[1].rm_so, NULL, 10);
	regfree(&re);
	return rank;
}

/* deviceProperties as Kineto writes them: entry i is device i, with every field it writes. */
static void check_device_properties(cJSON *doc, int ndevs)
{
	static const char *const fields[] = {
		"id",
		"totalGlobalMem",
		"computeMajor",
		"computeMinor",
		"maxThreadsPerBlock",
		"maxThreadsPerMultiprocessor",
		"regsPerBlock",
		"regsPerMultiprocessor",
		"warpSize",
		"sharedMemPerBlock",
		"sharedMemPerMultiprocessor",
		"numSms",
		"sharedMemPerBlockOptin",
	};
	const cJSON *props = cJSON_GetObjectItem(doc, "deviceProperties"), *d;
	int i = 0;

	ck_assert_int_eq(cJSON_GetArraySize(props), ndevs);
	cJSON_ArrayForEach(d, props)
	{
		for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++)
			ck_assert_msg(has_num(d, fields[f]), "deviceProperties lacks %s",
				      fields[f]);
		ck_assert_ptr_nonnull(str_of(d, "name"));
		ck_assert_int_eq((int64_t)num_of(d, "id"), i);
		/* compute capability 9.0 (H100, H200) */
		ck_assert_int_eq((int64_t)num_of(d, "warpSize"), 32);
		ck_assert_int_eq((int64_t)num_of(d, "maxThreadsPerMultiprocessor"), 2048);
		ck_assert_int_eq((int64_t)num_of(d, "sharedMemPerBlockOptin"), 232448);
		i++;
	}
}

START_TEST(test_hta_rank_and_devices)
{
	char *text = export_json(synth_db, NULL, NULL);
	cJSON *doc = parse(text);

	/* the synthetic process is rank 0 of 2; a trace without ranks is rank 0 of 1 */
	ck_assert_int_eq(hta_rank(text), 0);
	check_device_properties(doc, 1);
	cJSON_Delete(doc);
	free(text);
	text = export_json(train_db, NULL, NULL);
	doc = parse(text);
	ck_assert_int_eq(hta_rank(text), 0);
	ck_assert_int_eq((int64_t)num_of(cJSON_GetObjectItem(doc, "distributedInfo"), "world_size"),
			 1);
	check_device_properties(doc, 1);
	ck_assert_int_eq(
		(int64_t)num_of(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "deviceProperties"), 0),
				"numSms"),
		132);
	cJSON_Delete(doc);
	free(text);
}
END_TEST

/* An X slice as HTA reads it: pid, tid, start and end in ns, name. */
struct xslice {
	int64_t pid, tid, ts, end;
	const char *name;
};

static int xslice_cmp(const void *a, const void *b)
{
	const struct xslice *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

/*
 * What Holistic Trace Analysis reads: CUDA calls as cuda_runtime/cuda_driver, NVTX push/pop
 * ranges as user_annotation on the host thread, and for each range a gpu_user_annotation slice on
 * each stream its GPU work ran on, from the first start to the last end of the work launched
 * inside the range on its thread. The spans are computed here from the exported launches (by
 * correlation id) and GPU slices and compared with the exported ones one for one; they nest with
 * the stream's slices (check_nesting), inside the spans of the enclosing ranges.
 */
START_TEST(test_gpu_user_annotations)
{
	const char *files[] = {counts_db, train_db};

	for (int f = 0; f < 2; f++) {
		char *text = export_json(files[f], NULL, NULL);
		cJSON *doc = parse(text);
		size_t n = (size_t)cJSON_GetArraySize(events_of(doc));
		int nr = 0, ng = 0, nw = 0, nl = 0, nwant = 0, nruntime = 0, inner = 0;
		struct xslice *ranges = calloc(n, sizeof(*ranges)), *gpu = calloc(n, sizeof(*gpu));
		struct xslice *got = calloc(n, sizeof(*got)), *want = calloc(n, sizeof(*want));
		int64_t *lcorr = calloc(n, sizeof(int64_t)), *ltid = calloc(n, sizeof(int64_t));
		int64_t *lts = calloc(n, sizeof(int64_t)), *gcorr = calloc(n, sizeof(int64_t));
		const cJSON *e;

		ck_assert(ranges && gpu && got && want && lcorr && ltid && lts && gcorr);
		check_nesting(doc);
		cJSON_ArrayForEach(e, events_of(doc))
		{
			const char *cat = str_of(e, "cat");
			const cJSON *args = cJSON_GetObjectItem(e, "args");
			struct xslice x;

			if (!ph_is(e, "X"))
				continue;
			ck_assert_ptr_nonnull(cat);
			x.pid = (int64_t)num_of(e, "pid");
			x.tid = (int64_t)num_of(e, "tid");
			x.ts = ns_of(e, "ts");
			x.end = x.ts + ns_of(e, "dur");
			x.name = str_of(e, "name");
			if (!strcmp(cat, "user_annotation") &&
			    strncmp(x.name, "ProfilerStep#", 13)) {
				ranges[nr++] = x;
			} else if (!strcmp(cat, "gpu_user_annotation")) {
				ck_assert_int_eq((int64_t)num_of(args, "stream"),
						 x.tid & 0xffffffff);
				got[ng++] = x;
			} else if (!strcmp(cat, "cuda_runtime") || !strcmp(cat, "cuda_driver")) {
				nruntime += !strcmp(cat, "cuda_runtime");
				lcorr[nl] = (int64_t)num_of(args, "correlation");
				ltid[nl] = x.tid;
				lts[nl++] = x.ts;
			} else if (!strcmp(cat, "kernel") || !strcmp(cat, "gpu_memcpy") ||
				   !strcmp(cat, "gpu_memset")) {
				gcorr[nw] = (int64_t)num_of(args, "correlation");
				gpu[nw++] = x;
			} else {
				/* no other slice claims to be a CUDA call */
				ck_assert_msg(strncmp(x.name, "cuda", 4) ||
						      !strcmp(cat, "cuda_sync"),
					      "%s in category %s", x.name, cat);
			}
		}
		ck_assert_int_gt(nr, 3);
		ck_assert_int_gt(nruntime, 0);
		for (int r = 0; r < nr; r++) {
			int first = nwant; /* this range's spans are want[first..nwant) */

			for (int g = 0; g < nw; g++) {
				int l = 0, k = first;

				while (l < nl && lcorr[l] != gcorr[g])
					l++;
				if (l == nl || ltid[l] != ranges[r].tid || lts[l] < ranges[r].ts ||
				    lts[l] > ranges[r].end)
					continue;
				while (k < nwant &&
				       (want[k].pid != gpu[g].pid || want[k].tid != gpu[g].tid))
					k++;
				if (k == nwant) {
					want[nwant] = gpu[g];
					want[nwant++].name = ranges[r].name;
					continue;
				}
				want[k].ts = gpu[g].ts < want[k].ts ? gpu[g].ts : want[k].ts;
				want[k].end = gpu[g].end > want[k].end ? gpu[g].end : want[k].end;
			}
		}
		ck_assert_int_gt(nwant, 3);
		ck_assert_int_eq(ng, nwant);
		qsort(want, (size_t)nwant, sizeof(*want), xslice_cmp);
		qsort(got, (size_t)ng, sizeof(*got), xslice_cmp);
		for (int i = 0; i < ng; i++)
			ck_assert_msg(!xslice_cmp(&want[i], &got[i]),
				      "span %s on %" PRId64 "/%" PRId64 ": %" PRId64 "..%" PRId64
				      " exported, %" PRId64 "..%" PRId64 " from the launches",
				      got[i].name, got[i].pid, got[i].tid, got[i].ts, got[i].end,
				      want[i].ts, want[i].end);
		/* a span that lies inside another one of the same stream (nested ranges) */
		for (int i = 0; i < ng; i++)
			for (int j = 0; j < ng; j++)
				inner += i != j && got[i].pid == got[j].pid &&
					 got[i].tid == got[j].tid && got[i].ts >= got[j].ts &&
					 got[i].end <= got[j].end &&
					 strcmp(got[i].name, got[j].name);
		if (files[f] == counts_db) /* its "counts" range holds the others */
			ck_assert_int_gt(inner, 0);
		cJSON_Delete(doc);
		free(text);
		free(ranges);
		free(gpu);
		free(got);
		free(want);
		free(lcorr);
		free(ltid);
		free(lts);
		free(gcorr);
	}
}
END_TEST

START_TEST(test_per_rank)
{
	char *dir = tu_tmpdir(), *out = tu_path(dir, "job.json"), *err = NULL;
	const char *const per_rank[] = {"--per-rank", NULL};

	/* one file: both ranks, the lowest first, and a note that HTA wants one per rank */
	ck_assert_int_eq(run_export(NULL, out, ranks_db, &err), 0);
	ck_assert_msg(strstr(err, "--per-rank") != NULL, "no note about --per-rank: %s", err);
	free(err);
	{
		char *text = tu_read_file(out, NULL);
		cJSON *doc = parse(text);
		const cJSON *ranks =
			cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "distributedInfo"), "ranks");

		ck_assert_int_eq(hta_rank(text), 0);
		ck_assert_int_eq(cJSON_GetArraySize(ranks), 2);
		check_device_properties(doc, 2);
		cJSON_Delete(doc);
		free(text);
	}
	ck_assert_int_eq(unlink(out), 0);
	ck_assert_int_eq(run_export(per_rank, out, ranks_db, &err), 0);
	ck_assert_int_eq(tu_count_lines(err), 2); /* a summary line per file */
	free(err);
	ck_assert_int_eq(count_files(dir), 2);
	for (int r = 0; r < 2; r++) {
		char name[32], *path, *text;
		cJSON *doc;
		const cJSON *e;
		int64_t pid = 200 + 100 * r;
		int kernels = 0;

		snprintf(name, sizeof(name), "job.rank%d.json", r);
		path = tu_path(dir, name);
		text = tu_read_file(path, NULL);
		ck_assert_msg(text != NULL, "no %s", name);
		doc = parse(text);
		check_fields(doc, text);
		ck_assert_int_eq(hta_rank(text), r);
		ck_assert_int_eq(
			(int64_t)num_of(cJSON_GetObjectItem(doc, "distributedInfo"), "world_size"),
			2);
		/* every device of the job, by id, so that entry i is device i */
		check_device_properties(doc, 2);
		cJSON_ArrayForEach(e, events_of(doc))
		{
			if (ph_is(e, "X") &&
			    (cat_is(e, "cuda_runtime") || cat_is(e, "cuda_driver")))
				ck_assert_int_eq((int64_t)num_of(e, "pid"), pid);
			if (ph_is(e, "X") && cat_is(e, "kernel")) {
				ck_assert_int_eq(arg_int(e, "device", -1), r);
				kernels++;
			}
		}
		ck_assert_int_eq(kernels, 4);
		cJSON_Delete(doc);
		free(text);
		free(path);
	}
	/* without --force the existing files stop it before anything is written */
	{
		const char *argv[] = {tu_cuscope_bin(), "export", "--per-rank", "-o", out,
				      ranks_db,		NULL};
		const char *pid_too[] = {
			tu_cuscope_bin(), "export", "--per-rank", "--pid", "200", "-o", out,
			ranks_db,	  NULL};
		const char *to_stdout[] = {tu_cuscope_bin(), "export", "--per-rank", "-o", "-",
					   ranks_db,	     NULL};
		struct tu_result res = tu_cuscope(argv);

		tu_assert_one_line_error(&res, "exists");
		ck_assert_msg(strstr(res.err, "exists") != NULL, "stderr: %s", res.err);
		tu_result_free(&res);
		res = tu_cuscope(pid_too);
		tu_assert_one_line_error(&res, "--per-rank");
		ck_assert_msg(strstr(res.err, "--pid") != NULL, "stderr: %s", res.err);
		tu_result_free(&res);
		res = tu_cuscope(to_stdout);
		tu_assert_one_line_error(&res, "--per-rank");
		ck_assert_msg(strstr(res.err, "-o") != NULL, "stderr: %s", res.err);
		tu_result_free(&res);
	}
	ck_assert_int_eq(count_files(dir), 2);
	/* a directory that is not there is made, with its parents (HTA reads a directory) */
	{
		char *sub = tu_path(dir, "traces/job/job.json"), *made;

		ck_assert_int_eq(run_export(per_rank, sub, ranks_db, &err), 0);
		free(err);
		made = tu_path(dir, "traces/job");
		ck_assert_int_eq(count_files(made), 2);
		free(made);
		free(sub);
	}
	free(out);
	free(dir);
}
END_TEST

/* TensorBoard's profiler plugin drops a step whose range intersects the next on its thread, in
 * floating-point microseconds (ts + dur as a reader adds them): every ProfilerStep#N of the
 * README's trace ends before the next one of its thread starts, read as JSON numbers. */
START_TEST(test_profiler_steps_apart)
{
	char *trace = tu_source_file("samples/rules/traces/d2h-sync-bad.db");
	char *text = export_json(trace, NULL, NULL);
	cJSON *doc = parse(text);
	const cJSON *e, *steps[256];
	int n = 0;

	cJSON_ArrayForEach(e, events_of(doc))
	{
		const char *name = str_of(e, "name");

		if (name && !strncmp(name, "ProfilerStep#", 13) && n < 256)
			steps[n++] = e;
	}
	ck_assert_int_eq(n, 45);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			double ts = num_of(steps[i], "ts"), end = ts + num_of(steps[i], "dur");
			double next = num_of(steps[j], "ts");

			if (i == j || num_of(steps[i], "pid") != num_of(steps[j], "pid") ||
			    num_of(steps[i], "tid") != num_of(steps[j], "tid") || next < ts)
				continue;
			ck_assert_msg(end < next, "%s ends at %.6f, %s starts at %.6f",
				      str_of(steps[i], "name"), end, str_of(steps[j], "name"),
				      next);
		}
	cJSON_Delete(doc);
	free(text);
	free(trace);
}
END_TEST

START_TEST(test_profiler_steps)
{
	char *text = export_json(train_db, NULL, NULL);
	cJSON *doc = parse(text);
	cs_trace *t = NULL;
	cs_error err = {0, ""};
	cs_analysis an;
	cs_steps steps;
	cs_step_opts so = {NULL, -1, 0, 0};
	const cJSON *e;
	int n = 0, last = -1;
	regex_t re;

	memset(&an, 0, sizeof(an));
	memset(&steps, 0, sizeof(steps));
	ck_assert_int_eq(cs_trace_open(train_db, &t, &err), CS_OK);
	ck_assert_int_eq(cs_analysis_load(t, &an, &err), CS_OK);
	ck_assert_int_eq(cs_steps_detect(&an, &so, &steps, &err), CS_OK);
	ck_assert_int_gt(steps.n, 3);
	/* HTA's pattern for a step's number; the plugin takes what follows '#' */
	ck_assert_int_eq(
		regcomp(&re, "^ProfilerStep[[:space:]]*#[[:space:]]*([0-9]+)$", REG_EXTENDED), 0);
	cJSON_ArrayForEach(e, events_of(doc))
	{
		const char *name = str_of(e, "name");
		regmatch_t m[2];
		int idx;

		if (!name || strncmp(name, "ProfilerStep", 12))
			continue;
		ck_assert(ph_is(e, "X"));
		ck_assert_str_eq(str_of(e, "cat"), "user_annotation");
		ck_assert_int_eq(regexec(&re, name, 2, m, 0), 0);
		idx = atoi(name + m[1].rm_so);
		ck_assert_int_eq(idx, last + 1); /* in order, every step */
		last = idx;
		ck_assert_int_lt(idx, steps.n);
		/* on the thread that launched the step's work, over the step's host span */
		ck_assert_int_eq((int64_t)num_of(e, "pid"), steps.pid);
		ck_assert_int_eq((int64_t)num_of(e, "tid"), steps.pid);
		ck_assert_int_gt(ns_of(e, "dur"), 0);
		/* from the step's first launch, or the start of a slice of the thread that the
		 * boundary would cut (an NVTX range around it), never into the step before */
		ck_assert_int_le(ns_of(e, "ts"), steps.v[idx].start + 1);
		ck_assert(idx == 0 || ns_of(e, "ts") > steps.v[idx - 1].start);
		n++;
	}
	ck_assert_int_eq(n, steps.n);
	check_nesting(doc); /* the steps cut no slice of their thread */
	{
		const char *const no_steps[] = {"--no-profiler-steps", NULL};
		char *plain = export_json(train_db, no_steps, NULL);

		ck_assert_ptr_null(strstr(plain, "ProfilerStep"));
		free(plain);
	}
	regfree(&re);
	cs_steps_free(&steps);
	cs_analysis_free(&an);
	cs_trace_close(t);
	cJSON_Delete(doc);
	free(text);
}
END_TEST

START_TEST(test_memory_events)
{
	/* Bytes of each allocation (negative: a free) and the memory in use after it */
	static const int64_t bytes[] = {1000, 500, -1000, 700, -700};
	static const int64_t total[] = {1000, 1500, 500, 700, 0};
	static const int64_t addr[] = {0x1000, 0x2000, 0x1000, 0x2000, 0x2000};
	char *text = export_json(synth_db, NULL, NULL);
	cJSON *doc = parse(text);
	const cJSON *e;
	int n = 0;

	cJSON_ArrayForEach(e, events_of(doc))
	{
		if (!ph_is(e, "i") || strcmp(str_of(e, "name"), "[memory]"))
			continue;
		ck_assert_int_lt(n, 5);
		ck_assert_str_eq(str_of(e, "s"), "t");
		ck_assert_int_eq((int64_t)num_of(e, "pid"), PID);
		ck_assert_int_eq((int64_t)num_of(e, "tid"), PID);
		ck_assert_int_eq(arg_int(e, "Bytes", 0), bytes[n]);
		ck_assert_int_eq(arg_int(e, "Total Allocated", -1), total[n]);
		ck_assert_int_eq(arg_int(e, "Total Reserved", -1), total[n]);
		ck_assert_int_eq(arg_int(e, "Addr", -1), addr[n]);
		ck_assert_int_eq(arg_int(e, "Device Type", -1), 1); /* CUDA */
		ck_assert_int_eq(arg_int(e, "Device Id", -1), 0);
		n++;
	}
	ck_assert_int_eq(n, 5); /* pinned host memory and the failed call are not there */
	cJSON_Delete(doc);
	free(text);
}
END_TEST

START_TEST(test_size_estimate)
{
	const char *files[] = {counts_db, train_db, synth_db};

	for (int i = 0; i < 3; i++) {
		cs_trace *t = NULL;
		cs_error err = {0, ""};
		cs_export_opts o;
		int64_t est;
		size_t len;
		char *text = export_json(files[i], NULL, NULL);

		len = strlen(text);
		cs_export_opts_init(&o);
		ck_assert_int_eq(cs_trace_open(files[i], &t, &err), CS_OK);
		ck_assert_int_eq(cs_export_estimate(t, &o, &est, &err), CS_OK);
		/* what the warning of a large export relies on: within a factor of two */
		ck_assert_msg(est * 2 >= (int64_t)len && est <= 2 * (int64_t)len,
			      "%s: estimated %" PRId64 " bytes, wrote %zu", files[i], est, len);
		cs_trace_close(t);
		free(text);
	}
}
END_TEST

/* ---- Perfetto protobuf: a minimal wire-format reader ---- */

struct pbr {
	const unsigned char *p, *end;
};

static int pbr_varint(struct pbr *r, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 70; shift += 7) {
		if (r->p >= r->end)
			return -1;
		*v |= (uint64_t)(*r->p & 0x7f) << shift;
		if (!(*r->p++ & 0x80))
			return 0;
	}
	return -1;
}

/* The next field: its number, wire type, and value (varint, fixed) or bytes (len). */
static int pbr_field(struct pbr *r, uint32_t *field, int *wt, uint64_t *v, struct pbr *sub)
{
	uint64_t tag;

	if (pbr_varint(r, &tag))
		return -1;
	*field = (uint32_t)(tag >> 3);
	*wt = (int)(tag & 7);
	switch (*wt) {
	case 0:
		return pbr_varint(r, v);
	case 1:
		if (r->end - r->p < 8)
			return -1;
		*v = 0;
		for (int i = 0; i < 8; i++)
			*v |= (uint64_t)r->p[i] << (8 * i);
		r->p += 8;
		return 0;
	case 2:
		if (pbr_varint(r, v) || (uint64_t)(r->end - r->p) < *v)
			return -1;
		sub->p = r->p;
		sub->end = r->p + *v;
		r->p += *v;
		return 0;
	}
	return -1;
}

struct pf_slice {
	uint64_t track, ts, flow;
	int type, seq;
	char cat[16];
};

struct pf_decoded {
	long packets;
	struct pf_slice *ev;
	size_t nev;
	uint64_t tracks[4096];
	int ntracks;
	uint64_t iids[8192];
	int niids;
	uint64_t cat_iid[16];
	char cat_name[16][16];
	int ncats;
};

static int pf_known(const uint64_t *v, int n, uint64_t x)
{
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

static void pf_interned(struct pf_decoded *d, struct pbr r)
{
	uint32_t f, f2;
	int wt, wt2;
	uint64_t v, v2;
	struct pbr sub, s2;

	while (r.p < r.end) {
		uint64_t iid = 0;
		const unsigned char *name = NULL;
		size_t len = 0;

		ck_assert_int_eq(pbr_field(&r, &f, &wt, &v, &sub), 0);
		if (wt != 2)
			continue;
		while (sub.p < sub.end) {
			ck_assert_int_eq(pbr_field(&sub, &f2, &wt2, &v2, &s2), 0);
			if (f2 == 1)
				iid = v2;
			else if (f2 == 2) {
				name = s2.p;
				len = (size_t)(s2.end - s2.p);
			}
		}
		ck_assert(iid && name);
		if (f == 2) { /* event_names */
			ck_assert(d->niids < 8192);
			d->iids[d->niids++] = iid;
		} else if (f == 1 && d->ncats < 16) { /* event_categories */
			d->cat_iid[d->ncats] = iid;
			snprintf(d->cat_name[d->ncats], 16, "%.*s", (int)len, (const char *)name);
			d->ncats++;
		}
	}
}

/* Decode a Perfetto trace; checks as it goes that tracks and names are defined before use. */
static void pf_decode(const unsigned char *data, size_t size, struct pf_decoded *d)
{
	struct pbr top = {data, data + size}, pkt, sub, s2;
	uint32_t f;
	int wt;
	uint64_t v;
	size_t cap = 1024;

	memset(d, 0, sizeof(*d));
	d->ev = malloc(cap * sizeof(*d->ev));
	while (top.p < top.end) {
		uint64_t ts = 0;
		struct pbr te = {NULL, NULL}, id = {NULL, NULL};

		ck_assert_int_eq(pbr_field(&top, &f, &wt, &v, &pkt), 0);
		ck_assert_msg(f == 1 && wt == 2, "Trace holds only packets (field 1)");
		d->packets++;
		while (pkt.p < pkt.end) {
			ck_assert_int_eq(pbr_field(&pkt, &f, &wt, &v, &sub), 0);
			if (f == 8)
				ts = v;
			else if (f == 11)
				te = sub;
			else if (f == 12)
				id = sub;
			else if (f == 60) { /* track descriptor: uuid, parent declared before */
				uint64_t uuid = 0, parent = 0;

				while (sub.p < sub.end) {
					ck_assert_int_eq(pbr_field(&sub, &f, &wt, &v, &s2), 0);
					if (f == 1)
						uuid = v;
					else if (f == 5)
						parent = v;
				}
				ck_assert(uuid);
				ck_assert(!parent || pf_known(d->tracks, d->ntracks, parent));
				ck_assert(d->ntracks < 4096);
				d->tracks[d->ntracks++] = uuid;
			}
		}
		if (id.p)
			pf_interned(d, id);
		if (te.p) {
			struct pf_slice s;

			memset(&s, 0, sizeof(s));
			s.ts = ts;
			s.seq = (int)d->nev;
			while (te.p < te.end) {
				ck_assert_int_eq(pbr_field(&te, &f, &wt, &v, &s2), 0);
				if (f == 9)
					s.type = (int)v;
				else if (f == 11)
					s.track = v;
				else if (f == 10)
					ck_assert_msg(pf_known(d->iids, d->niids, v),
						      "name iid %" PRIu64
						      " used before it was defined",
						      v);
				else if (f == 47)
					s.flow = v;
				else if (f == 3)
					for (int c = 0; c < d->ncats; c++)
						if (d->cat_iid[c] == v)
							snprintf(s.cat, sizeof(s.cat), "%s",
								 d->cat_name[c]);
			}
			ck_assert_msg(pf_known(d->tracks, d->ntracks, s.track),
				      "event on an undeclared track");
			if (d->nev == cap) {
				cap *= 2;
				d->ev = realloc(d->ev, cap * sizeof(*d->ev));
			}
			d->ev[d->nev++] = s;
		}
	}
}

static int pf_cmp(const void *a, const void *b)
{
	const struct pf_slice *x = a, *y = b;

	if (x->track != y->track)
		return x->track < y->track ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq - y->seq; /* as trace processor: ties in the order written */
}

/* Slices begin and end in pairs on each track; returns the slices of category cat. */
static long pf_check_pairs(struct pf_decoded *d, const char *cat)
{
	long depth = 0, n = 0;

	qsort(d->ev, d->nev, sizeof(*d->ev), pf_cmp);
	for (size_t i = 0; i < d->nev; i++) {
		if (i && d->ev[i].track != d->ev[i - 1].track) {
			ck_assert_int_eq(depth, 0);
			depth = 0;
		}
		if (d->ev[i].type == 1) {
			depth++;
			n += !strcmp(d->ev[i].cat, cat);
		} else if (d->ev[i].type == 2) {
			depth--;
			ck_assert_msg(depth >= 0, "an end without a begin on track %" PRIu64,
				      d->ev[i].track);
		}
	}
	ck_assert_int_eq(depth, 0);
	return n;
}

static long trace_known_kernels(const char *path)
{
	cs_trace *t = NULL;
	cs_error err = {0, ""};
	cs_iter *it = NULL;
	cs_event ev;
	long n = 0;

	ck_assert_int_eq(cs_trace_open(path, &t, &err), CS_OK);
	ck_assert_int_eq(cs_iter_open(t, CS_EV_KERNEL, NULL, &it, &err), CS_OK);
	while (cs_iter_next(it, &ev) > 0)
		n += ev.u.kernel.start != CS_TS_UNKNOWN && ev.u.kernel.end != CS_TS_UNKNOWN;
	cs_iter_close(it);
	cs_trace_close(t);
	return n;
}

START_TEST(test_perfetto)
{
	const char *files[] = {synth_db, counts_db, train_db};
	const char *const args[] = {"--format", "perfetto", NULL};

	for (int i = 0; i < 3; i++) {
		char *out = tu_path(tmp_dir, "out.pftrace"), *err = NULL, *data;
		struct pf_decoded d;
		size_t size;
		int rc = run_export(args, out, files[i], &err);
		long events;

		ck_assert_msg(rc == 0, "export failed: %s", err);
		events = summary_events(err);
		data = tu_read_file(out, &size);
		ck_assert_ptr_nonnull(data);
		pf_decode((const unsigned char *)data, size, &d);
		ck_assert_int_eq(d.packets, events);
		/* every GPU slice with a flow id shares it with a launch slice */
		for (size_t j = 0; j < d.nev; j++) {
			int found = 0;

			if (d.ev[j].type != 1 || strcmp(d.ev[j].cat, "kernel") || !d.ev[j].flow)
				continue;
			for (size_t k = 0; k < d.nev && !found; k++)
				found = d.ev[k].flow == d.ev[j].flow &&
					(!strcmp(d.ev[k].cat, "cuda_runtime") ||
					 !strcmp(d.ev[k].cat, "cuda_driver"));
			ck_assert_msg(found, "kernel flow without a launch");
		}
		ck_assert_int_eq(pf_check_pairs(&d, "kernel"), trace_known_kernels(files[i]));
		free(d.ev);
		free(data);
		free(err);
		free(out);
	}
}
END_TEST

/* ---- bad input ---- */

static int count_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static void expect_usage_error(const char *const *args, const char *out, const char *file)
{
	char *err = NULL;
	int rc = run_export(args, out, file, &err);

	ck_assert_msg(rc == 2, "exit %d, stderr: %s", rc, err);
	ck_assert_int_eq(tu_count_lines(err), 1);
	ck_assert_msg(!strncmp(err, "cuscope: ", 9), "stderr: %s", err);
	free(err);
}

START_TEST(test_bad_input)
{
	char *dir = tu_tmpdir(), *out = tu_path(dir, "x.json"), *text = tu_path(dir, "text.db");
	char *missing_dir = tu_path(dir, "no/such/dir/x.json");
	const char *const bad_format[] = {"--format", "svg", NULL};
	const char *const bad_range[] = {"--time-range", "5s:2s", NULL};
	const char *const bad_range2[] = {"--time-range", "abc", NULL};
	const char *const bad_range3[] = {"--time-range", "1parsec:2s", NULL};
	const char *const bad_steps[] = {"--steps", "3-1", NULL};
	const char *const too_many_steps[] = {"--steps", "100000-100001", NULL};
	const char *const both[] = {"--steps", "1", "--time-range", "1s:2s", NULL};

	ck_assert_int_eq(tu_write_file(text, "not a trace\n", 12), 0);
	expect_usage_error(NULL, out, "/nonexistent/run.db");
	expect_usage_error(NULL, out, text);
	expect_usage_error(bad_format, out, synth_db);
	expect_usage_error(bad_range, out, synth_db);
	expect_usage_error(bad_range2, out, synth_db);
	expect_usage_error(bad_range3, out, synth_db);
	expect_usage_error(bad_steps, out, synth_db);
	expect_usage_error(both, out, synth_db);
	expect_usage_error(too_many_steps, out, train_db);
	expect_usage_error(NULL, missing_dir, synth_db);
	expect_usage_error(NULL, "/dev/full", train_db); /* a write that fails: ENOSPC */
	/* nothing was left behind: the not-a-trace file only */
	ck_assert_int_eq(count_files(dir), 1);
	free(dir);
	free(out);
	free(text);
	free(missing_dir);
}
END_TEST

static Suite *export_suite(void)
{
	Suite *s = suite_create("export");
	TCase *tc = tcase_create("export");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_synthetic_fields_nesting_flows);
	tcase_add_test(tc, test_real_traces);
	tcase_add_test(tc, test_unknown_timestamps_left_out);
	tcase_add_test(tc, test_strings_escaped_and_repaired);
	tcase_add_test(tc, test_overlap_lane);
	tcase_add_test(tc, test_launches);
	tcase_add_test(tc, test_memory_counter_no_findings);
	tcase_add_test(tc, test_top_level_and_metadata);
	tcase_add_test(tc, test_golden_counts);
	tcase_add_test(tc, test_gzip);
	tcase_add_test(tc, test_time_range);
	tcase_add_test(tc, test_time_range_units);
	tcase_add_test(tc, test_stdout);
	tcase_add_test(tc, test_steps);
	tcase_add_test(tc, test_perfetto);
	tcase_add_test(tc, test_bad_input);
	tcase_add_test(tc, test_hta_rank_and_devices);
	tcase_add_test(tc, test_gpu_user_annotations);
	tcase_add_test(tc, test_per_rank);
	tcase_add_test(tc, test_profiler_steps);
	tcase_add_test(tc, test_profiler_steps_apart);
	tcase_add_test(tc, test_memory_events);
	tcase_add_test(tc, test_size_estimate);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	tmp_dir = tu_tmpdir();
	if (!tmp_dir) {
		fprintf(stderr, "test_export: cannot make a temporary directory\n");
		return 1;
	}
	synth_db = tu_path(tmp_dir, "synthetic.db");
	write_synthetic(synth_db);
	ranks_db = tu_path(tmp_dir, "ranks.db");
	write_ranks(ranks_db);
	counts_db = tu_path(tu_source_root(), "samples/traces/counts.db");
	train_db = tu_path(tu_source_root(), "samples/traces/train_small.db");

	sr = srunner_create(export_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
