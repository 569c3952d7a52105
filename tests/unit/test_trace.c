/*
 * test_trace.c - the trace store: every field of every record written and read back (NULL and
 * unknown values too), string, frame and stack deduplication, iterator order and filters, the
 * summary, the writer's temporary file, overwrite refusal, the on-disk size of a kernel, and each
 * kind of bad input cs_trace_open must refuse.
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cuscope/strbuf.h"
#include "cuscope/trace.h"
#include "testutil.h"

/* ---- helpers ---- */

static char *new_trace_path(const char *name)
{
	char *dir = tu_tmpdir();

	ck_assert_ptr_nonnull(dir);
	char *p = tu_path(dir, name);

	free(dir);
	return p;
}

static cs_trace_writer *open_writer(const char *path)
{
	cs_trace_writer *w = NULL;
	cs_error err = {0};

	ck_assert_msg(cs_writer_open(path, 0, &w, &err) == CS_OK, "writer open: %s", err.msg);
	return w;
}

static void finish_writer(cs_trace_writer *w)
{
	cs_error err = {0};

	ck_assert_msg(cs_writer_finish(w, &err) == CS_OK, "writer finish: %s", err.msg);
}

static cs_trace *open_trace(const char *path)
{
	cs_trace *t = NULL;
	cs_error err = {0};

	ck_assert_msg(cs_trace_open(path, &t, &err) == CS_OK, "trace open: %s", err.msg);
	return t;
}

static int count_dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static char *dir_of(const char *path)
{
	char *d = strdup(path);
	char *slash = strrchr(d, '/');

	*slash = '\0';
	return d;
}

static int64_t sql_int(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int64_t v = -1;

	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static void sql_exec(const char *path, const char *sql)
{
	sqlite3 *db = NULL;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static cs_kernel plain_kernel(int64_t start, int64_t end)
{
	cs_kernel k;

	memset(&k, 0, sizeof(k));
	k.start = start;
	k.end = end;
	k.queued = k.submitted = k.launch_start = k.launch_end = CS_TS_UNKNOWN;
	k.pid = 100;
	k.launch_cbid = CS_ID_NONE;
	k.graph_id = k.graph_node_id = k.name_id = k.stack_id = CS_ID_NONE;
	return k;
}

/* ---- names ---- */

START_TEST(test_names)
{
	ck_assert_str_eq(cs_copy_kind_name(CS_COPY_HTOD), "HtoD");
	ck_assert_str_eq(cs_copy_kind_name(CS_COPY_DTOH), "DtoH");
	ck_assert_str_eq(cs_copy_kind_name(CS_COPY_DTOD), "DtoD");
	ck_assert_str_eq(cs_copy_kind_name(CS_COPY_HTOH), "HtoH");
	ck_assert_str_eq(cs_copy_kind_name(CS_COPY_PTOP), "PtoP");
	ck_assert_str_eq(cs_copy_kind_name(999), "unknown");
	ck_assert_str_eq(cs_mem_kind_name(CS_MEM_PINNED), "pinned");
	ck_assert_str_eq(cs_mem_kind_name(-3), "unknown");
	ck_assert_str_eq(cs_mem_op_name(CS_MEMOP_FREE), "free");
	ck_assert_str_eq(cs_mem_op_name(CS_MEMOP_VMM_MAP), "vmm_map");
	ck_assert_str_eq(cs_sync_type_name(CS_SYNC_STREAM_SYNCHRONIZE), "stream_synchronize");
	ck_assert_str_eq(cs_sync_type_name(77), "unknown");
	ck_assert_str_eq(cs_event_kind_table(CS_EV_KERNEL), "CUPTI_ACTIVITY_KIND_KERNEL");
	ck_assert_str_eq(cs_event_kind_table(CS_EV_NVTX), "NVTX_EVENTS");
	ck_assert_ptr_null(cs_event_kind_table(CS_EV_COUNT));
	ck_assert_str_eq(cs_event_kind_name(CS_EV_KERNEL), "kernels");
	ck_assert_str_eq(cs_event_kind_name(CS_EV_COUNT), "unknown");
	for (int k = 0; k < CS_EV_COUNT; k++) {
		ck_assert_ptr_nonnull(cs_event_kind_table(k));
		ck_assert_ptr_nonnull(cs_event_kind_name(k));
	}

	ck_assert_int_eq(cs_sync_type_is_host_wait(CS_SYNC_EVENT_SYNCHRONIZE), 1);
	ck_assert_int_eq(cs_sync_type_is_host_wait(CS_SYNC_STREAM_SYNCHRONIZE), 1);
	ck_assert_int_eq(cs_sync_type_is_host_wait(CS_SYNC_CONTEXT_SYNCHRONIZE), 1);
	ck_assert_int_eq(cs_sync_type_is_host_wait(CS_SYNC_MEMCPY), 1);
	ck_assert_int_eq(cs_sync_type_is_host_wait(CS_SYNC_STREAM_WAIT_EVENT), 0);
	ck_assert_int_eq(cs_sync_type_is_host_wait(CS_SYNC_EVENT_QUERY), 0);
	ck_assert_int_eq(cs_sync_type_is_host_wait(CS_SYNC_STREAM_QUERY), 0);
	ck_assert_int_eq(cs_sync_type_is_host_wait(CS_SYNC_UNKNOWN), 0);
}
END_TEST

/* Which memory rows move the device memory counter of the exporter and the viewer. */
START_TEST(test_mem_count)
{
	int vmm = -1;

	ck_assert_int_eq(cs_mem_count_of(CS_MEMOP_ALLOC, CS_MEM_DEVICE, 0, 0, 64, &vmm),
			 CS_MEMCOUNT_ALLOC);
	ck_assert_int_eq(vmm, 0);
	ck_assert_int_eq(cs_mem_count_of(CS_MEMOP_ALLOC, CS_MEM_MANAGED, 0, 1, 64, &vmm),
			 CS_MEMCOUNT_ALLOC);
	ck_assert_int_eq(cs_mem_count_of(CS_MEMOP_VMM_CREATE, CS_MEM_UNKNOWN, 0, 0, 64, &vmm),
			 CS_MEMCOUNT_ALLOC);
	ck_assert_int_eq(vmm, 1);
	ck_assert_int_eq(cs_mem_count_of(CS_MEMOP_FREE, CS_MEM_UNKNOWN, 0, 0, 0, &vmm),
			 CS_MEMCOUNT_FREE);
	ck_assert_int_eq(vmm, 0);
	ck_assert_int_eq(cs_mem_count_of(CS_MEMOP_VMM_RELEASE, CS_MEM_UNKNOWN, 0, 0, 0, &vmm),
			 CS_MEMCOUNT_FREE);
	ck_assert_int_eq(vmm, 1);
	/* host memory, arrays, static data, no size, a failed call, no device, mappings */
	ck_assert_int_eq(cs_mem_count_of(CS_MEMOP_ALLOC, CS_MEM_PINNED, 0, 0, 64, &vmm), 0);
	ck_assert_int_eq(cs_mem_count_of(CS_MEMOP_ALLOC, CS_MEM_ARRAY, 0, 0, 64, &vmm), 0);
	ck_assert_int_eq(cs_mem_count_of(CS_MEMOP_ALLOC, CS_MEM_DEVICE_STATIC, 0, 0, 64, &vmm), 0);
	ck_assert_int_eq(cs_mem_count_of(CS_MEMOP_ALLOC, CS_MEM_DEVICE, 0, 0, 0, &vmm), 0);
	ck_assert_int_eq(cs_mem_count_of(CS_MEMOP_VMM_CREATE, CS_MEM_UNKNOWN, 0, 0, -1, &vmm), 0);
	ck_assert_int_eq(cs_mem_count_of(CS_MEMOP_ALLOC, CS_MEM_DEVICE, 2, 0, 64, &vmm), 0);
	ck_assert_int_eq(cs_mem_count_of(CS_MEMOP_FREE, CS_MEM_DEVICE, 1, 0, 0, &vmm), 0);
	ck_assert_int_eq(cs_mem_count_of(CS_MEMOP_FREE, CS_MEM_DEVICE, 0, -1, 0, &vmm), 0);
	ck_assert_int_eq(cs_mem_count_of(CS_MEMOP_VMM_MAP, CS_MEM_DEVICE, 0, 0, 64, &vmm), 0);
	ck_assert_int_eq(cs_mem_count_of(CS_MEMOP_VMM_RESERVE, CS_MEM_DEVICE, 0, 0, 64, &vmm), 0);
	ck_assert_int_eq(cs_mem_count_of(0, CS_MEM_DEVICE, 0, 0, 64, &vmm), CS_MEMCOUNT_NONE);
}
END_TEST

/* ---- round trip of every field ---- */

/* Values that differ per field; "full" records have every optional value set, "empty" ones none. */
static cs_kernel full_kernel(int64_t name_id, int64_t stack_id)
{
	cs_kernel k = {
		.start = 1000001,
		.end = 1000002,
		.queued = 1000003,
		.submitted = 1000004,
		.launch_start = 1000005,
		.launch_end = 1000006,
		.pid = 4000007,
		.launch_tid = 4000008,
		.launch_cbid = 309,
		.launch_api_kind = CS_API_DRIVER,
		.device_id = 3,
		.context_id = 11,
		.stream_id = 12,
		.correlation_id = 0xfedcba9876543210ULL,
		.grid_x = 13,
		.grid_y = 14,
		.grid_z = 15,
		.block_x = 16,
		.block_y = 17,
		.block_z = 18,
		.registers_per_thread = 19,
		.static_shared_memory = 20,
		.dynamic_shared_memory = 21,
		.graph_id = 22,
		.graph_node_id = 0x123456789aLL,
		.name_id = name_id,
		.stack_id = stack_id,
	};
	return k;
}

static cs_memcpy full_memcpy(int64_t stack_id)
{
	cs_memcpy m = {
		.start = 2000001,
		.end = 2000002,
		.launch_start = 2000003,
		.launch_end = 2000004,
		.pid = 4000007,
		.launch_tid = 4000009,
		.launch_cbid = 41,
		.device_id = 1,
		.context_id = 31,
		.stream_id = 32,
		.correlation_id = 33,
		.copy_kind = CS_COPY_PTOP,
		.src_kind = CS_MEM_DEVICE,
		.dst_kind = CS_MEM_PINNED,
		.is_async = 1,
		.src_device_id = 4,
		.dst_device_id = 5,
		.bytes = 0x7123456789LL,
		.graph_id = 34,
		.graph_node_id = 35,
		.stack_id = stack_id,
	};
	return m;
}

static cs_memset full_memset(void)
{
	cs_memset m = {
		.start = 3000001,
		.end = 3000002,
		.launch_start = 3000003,
		.launch_end = 3000004,
		.pid = 4000007,
		.launch_tid = 51,
		.launch_cbid = 52,
		.device_id = 2,
		.context_id = 53,
		.stream_id = 54,
		.correlation_id = 55,
		.mem_kind = CS_MEM_MANAGED,
		.is_async = 1,
		.value = 0xdeadbeef,
		.bytes = 56,
		.graph_id = 57,
		.graph_node_id = 58,
		.stack_id = CS_ID_NONE,
	};
	return m;
}

static cs_memory full_memory(void)
{
	cs_memory m = {
		.start = 4000001,
		.pid = 4000007,
		.tid = 61,
		.device_id = 6,
		.context_id = 62,
		.stream_id = 63,
		.correlation_id = 64,
		.op = CS_MEMOP_VMM_MAP,
		.mem_kind = CS_MEM_DEVICE,
		.is_vmm = 1,
		.result = 2,
		.cbid = 65,
		.address = 0xffff800000001000ULL,
		.bytes = 1LL << 40,
		.stack_id = 66,
	};
	return m;
}

static cs_sync full_sync(void)
{
	cs_sync s = {
		.start = 5000001,
		.end = 5000002,
		.pid = 4000007,
		.tid = 71,
		.device_id = 7,
		.context_id = 72,
		.stream_id = 73,
		.event_id = 74,
		.correlation_id = 75,
		.type = CS_SYNC_EVENT_SYNCHRONIZE,
		.cbid = 76,
		.api_kind = CS_API_RUNTIME,
		.result = -77,
		.stack_id = 78,
	};
	return s;
}

static cs_api full_api(int64_t name_id)
{
	cs_api a = {
		.start = 6000001,
		.end = 6000002,
		.pid = 4000007,
		.tid = 81,
		.api_kind = CS_API_DRIVER,
		.cbid = 82,
		.correlation_id = 83,
		.result = 84,
		.name_id = name_id,
		.stack_id = 85,
	};
	return a;
}

static cs_nvtx full_nvtx(int64_t domain_id, int64_t text_id)
{
	cs_nvtx n = {
		.start = 7000001,
		.end = 7000002,
		.pid = 4000007,
		.tid = 91,
		.end_tid = 92,
		.type = CS_NVTX_STARTEND,
		.depth = 93,
		.domain_id = domain_id,
		.text_id = text_id,
		.range_id = 94,
		.color = 0xff00ff95,
		.category = 96,
		.payload_id = text_id,
	};
	return n;
}

/*
 * check_kernel(), check_memcpy(), ...: every column of columns.def read back as written, and
 * full_columns_<kind>(): the "full" record has a value in every column (not what a missing one
 * reads as), so that a new column is round-tripped once it is in columns.def and its full_*().
 */
/* clang-format off */
#define CS_EVENT_TABLE(KIND, name) \
	static void check_##name(const cs_##name *a, const cs_##name *b) \
	{
#define CS_COLUMN(KIND, column, field, ctype, TYPE, base, late, label, UNIT) \
		ck_assert_msg((int64_t)a->field == (int64_t)b->field, \
			      #KIND "." #column ": %lld read, %lld written", \
			      (long long)a->field, (long long)b->field);
#define CS_EVENT_TABLE_END(KIND, name) }
#include "cuscope/columns.def"

#define MISSING_TS    CS_TS_UNKNOWN
#define MISSING_END   CS_TS_UNKNOWN
#define MISSING_INT   0
#define MISSING_ID    CS_ID_NONE
#define MISSING_U64   0
#define MISSING_BYTES 0
#define CS_EVENT_TABLE(KIND, name) \
	static void full_columns_##name(const cs_##name *r) \
	{
#define CS_COLUMN(KIND, column, field, ctype, TYPE, base, late, label, UNIT) \
		ck_assert_msg((int64_t)r->field != (int64_t)MISSING_##TYPE, \
			      #KIND "." #column " has no value in the full record");
#define CS_EVENT_TABLE_END(KIND, name) }
#include "cuscope/columns.def"

#define CS_EVENT_TABLE(KIND, name) \
	static void cleared_##name(const cs_##name *r) \
	{
#define CS_COLUMN(KIND, column, field, ctype, TYPE, base, late, label, UNIT) \
		ck_assert_msg((int64_t)r->field == (int64_t)MISSING_##TYPE, \
			      #KIND "." #column " is not missing after cs_event_clear");
#define CS_EVENT_TABLE_END(KIND, name) }
#include "cuscope/columns.def"

/* info_<kind>(): cs_event_columns() and cs_event_value() say what columns.def says, column by
 * column, of an event that holds r. */
#define CS_EVENT_TABLE(KIND, name) \
	static void info_##name(const cs_##name *r) \
	{ \
		cs_event ev = {.kind = CS_EV_##KIND}; \
		int n; \
		const cs_column_info *c = cs_event_columns(CS_EV_##KIND, &n); \
		ev.u.name = *r; \
		ck_assert_int_eq(n, CS_COL_##KIND##_COUNT);
#define CS_COLUMN(KIND, column, field, ctype, TYPE, base, late, text, UNIT) \
		ck_assert_str_eq(c[CS_COL_##KIND##_##column].name, #column); \
		ck_assert_str_eq(c[CS_COL_##KIND##_##column].label, text); \
		ck_assert_int_eq(c[CS_COL_##KIND##_##column].unit, CS_COLUNIT_##UNIT); \
		ck_assert_int_eq(c[CS_COL_##KIND##_##column].has_none, \
				 MISSING_##TYPE == CS_TS_UNKNOWN || MISSING_##TYPE == CS_ID_NONE); \
		ck_assert_msg(cs_event_value(&ev, CS_COL_##KIND##_##column) == (int64_t)r->field, \
			      #KIND "." #column ": cs_event_value() is not the field");
#define CS_EVENT_TABLE_END(KIND, name) }
#include "cuscope/columns.def"
/* clang-format on */

/* Collected by the each_* callbacks. */
struct collected {
	int n;
	cs_process p[4];
	char *cmd[4];
	cs_device d[4];
	char *uuid[4], *name[4];
	cs_stream s[4];
};

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int collect_process(const cs_process *p, void *arg)
{
	struct collected *c = arg;

	c->p[c->n] = *p;
	c->cmd[c->n] = dup_or_null(p->command_line);
	c->n++;
	return 0;
}

static int collect_device(const cs_device *d, void *arg)
{
	struct collected *c = arg;

	c->d[c->n] = *d;
	c->uuid[c->n] = dup_or_null(d->uuid);
	c->name[c->n] = dup_or_null(d->name);
	c->n++;
	return 0;
}

static int collect_stream(const cs_stream *s, void *arg)
{
	struct collected *c = arg;

	c->s[c->n++] = *s;
	return 0;
}

/* The next event of a kind, which must exist. */
static cs_event next_event(cs_iter *it)
{
	cs_event ev;

	ck_assert_int_eq(cs_iter_next(it, &ev), 1);
	return ev;
}

START_TEST(test_roundtrip_every_field)
{
	char *path = new_trace_path("rt.db");
	cs_trace_writer *w = open_writer(path);
	cs_error err = {0};
	int64_t kname, aname, dom, text;
	cs_frame fr[2] = {
		{.kind = 1,
		 .pc = 0xfffffffffffff001ULL,
		 .module = "/lib/libfoo.so",
		 .symbol = "foo()",
		 .offset = 17},
		{.kind = 2, .symbol = "train_step", .file = "train.py", .line = 42},
	};
	int64_t stack;

	/* Processes: one with every value, one with every optional value missing. */
	cs_process p1 = {.pid = 4000007,
			 .ppid = 4000001,
			 .start = 11,
			 .end = 12,
			 .command_line = "python train.py --epochs 1",
			 .rank = 3,
			 .local_rank = 1,
			 .world_size = 8,
			 .exit_code = 137,
			 .used_cuda = 1,
			 .dropped_records = 13,
			 .cupti_device_bytes = 14};
	cs_process p2 = {.pid = 5,
			 .ppid = 6,
			 .start = CS_TS_UNKNOWN,
			 .end = CS_TS_UNKNOWN,
			 .command_line = NULL,
			 .rank = CS_ID_NONE,
			 .local_rank = CS_ID_NONE,
			 .world_size = CS_ID_NONE,
			 .exit_code = CS_ID_NONE,
			 .used_cuda = 0,
			 .dropped_records = 7,
			 .cupti_device_bytes = 0};
	cs_device d1 = {.pid = 4000007,
			.device_id = 0,
			.uuid = "GPU-01234567-89ab-cdef-0123-456789abcdef",
			.name = "NVIDIA H200",
			.total_memory = 150000000000LL,
			.sm_count = 132,
			.compute_major = 9,
			.compute_minor = 0,
			.core_clock_khz = 1980000,
			.memory_bandwidth = 4800000000000LL};
	cs_device d2 = {.pid = 4000007, .device_id = 1, .uuid = NULL, .name = NULL};
	cs_stream s1 = {.pid = 4000007,
			.device_id = 0,
			.context_id = 1,
			.stream_id = 7,
			.is_default = 1,
			.priority = -2};
	cs_stream s2 = {.pid = 4000007,
			.device_id = 1,
			.context_id = 2,
			.stream_id = 13,
			.is_default = 0,
			.priority = 0};

	ck_assert_int_eq(cs_writer_set_meta(w, "command", "python train.py"), CS_OK);
	ck_assert_int_eq(cs_writer_set_meta(w, "host", "first"), CS_OK);
	ck_assert_int_eq(cs_writer_set_meta(w, "host", "gpu-node-1"), CS_OK); /* replaced */
	ck_assert_int_eq(cs_writer_set_meta_int(w, "time_base_ns", 1234567890123456789LL), CS_OK);
	ck_assert_int_eq(cs_writer_set_meta(w, "empty", NULL), CS_OK);

	kname = cs_writer_intern(w, "_Z6kernelPfi");
	aname = cs_writer_intern(w, "cudaLaunchKernel");
	dom = cs_writer_intern(w, "my_domain");
	text = cs_writer_intern(w, "forward");
	ck_assert_int_ge(kname, 0);
	stack = cs_writer_add_stack(w, fr, 2);
	ck_assert_int_ge(stack, 0);

	ck_assert_int_eq(cs_writer_add_process(w, &p1), CS_OK);
	ck_assert_int_eq(cs_writer_add_process(w, &p2), CS_OK);
	ck_assert_int_eq(cs_writer_add_device(w, &d1), CS_OK);
	ck_assert_int_eq(cs_writer_add_device(w, &d2), CS_OK);
	ck_assert_int_eq(cs_writer_add_stream(w, &s1), CS_OK);
	ck_assert_int_eq(cs_writer_add_stream(w, &s2), CS_OK);

	/* Events: one with every value, then one (later) with every optional value missing. */
	cs_kernel k1 = full_kernel(kname, stack), k2 = k1;
	k2.start += 100;
	k2.end = k2.queued = k2.submitted = k2.launch_start = k2.launch_end = CS_TS_UNKNOWN;
	k2.launch_cbid = CS_ID_NONE;
	k2.launch_api_kind = 0;
	k2.device_id = CS_ID_NONE;
	k2.graph_id = k2.graph_node_id = k2.name_id = k2.stack_id = CS_ID_NONE;
	k2.correlation_id = 0;
	ck_assert_int_eq(cs_writer_add_kernel(w, &k1), CS_OK);
	ck_assert_int_eq(cs_writer_add_kernel(w, &k2), CS_OK);

	cs_memcpy c1 = full_memcpy(stack), c2 = c1;
	c2.start += 100;
	c2.end = c2.launch_start = c2.launch_end = CS_TS_UNKNOWN;
	c2.launch_cbid = c2.src_device_id = c2.dst_device_id = CS_ID_NONE;
	c2.graph_id = c2.graph_node_id = c2.stack_id = CS_ID_NONE;
	ck_assert_int_eq(cs_writer_add_memcpy(w, &c1), CS_OK);
	ck_assert_int_eq(cs_writer_add_memcpy(w, &c2), CS_OK);

	cs_memset m1 = full_memset(), m2 = m1;
	m1.stack_id = stack;
	m2.start += 100;
	m2.end = m2.launch_start = m2.launch_end = CS_TS_UNKNOWN;
	m2.launch_cbid = CS_ID_NONE;
	m2.graph_id = m2.graph_node_id = CS_ID_NONE;
	ck_assert_int_eq(cs_writer_add_memset(w, &m1), CS_OK);
	ck_assert_int_eq(cs_writer_add_memset(w, &m2), CS_OK);

	cs_memory y1 = full_memory(), y2 = y1;
	y2.start += 100;
	y2.stream_id = y2.cbid = y2.stack_id = CS_ID_NONE;
	y2.op = CS_MEMOP_FREE;
	y2.bytes = 0;
	ck_assert_int_eq(cs_writer_add_memory(w, &y1), CS_OK);
	ck_assert_int_eq(cs_writer_add_memory(w, &y2), CS_OK);

	cs_sync s_1 = full_sync(), s_2 = s_1;
	s_2.start += 100;
	s_2.end = CS_TS_UNKNOWN;
	s_2.stream_id = s_2.event_id = s_2.cbid = s_2.stack_id = CS_ID_NONE;
	ck_assert_int_eq(cs_writer_add_sync(w, &s_1), CS_OK);
	ck_assert_int_eq(cs_writer_add_sync(w, &s_2), CS_OK);

	cs_api a1 = full_api(aname), a2 = a1;
	a2.start += 100;
	a2.end = CS_TS_UNKNOWN;
	a2.cbid = CS_ID_NONE;
	a2.name_id = a2.stack_id = CS_ID_NONE;
	ck_assert_int_eq(cs_writer_add_api(w, &a1), CS_OK);
	ck_assert_int_eq(cs_writer_add_api(w, &a2), CS_OK);

	cs_nvtx n1 = full_nvtx(dom, text), n2 = n1;
	n2.start += 100;
	n2.end = CS_TS_UNKNOWN;
	n2.domain_id = n2.range_id = CS_ID_NONE;
	n2.type = CS_NVTX_PUSHPOP;
	ck_assert_int_eq(cs_writer_add_nvtx(w, &n1), CS_OK);
	ck_assert_int_eq(cs_writer_add_nvtx(w, &n2), CS_OK);

	/* the full records have a value in every column */
	full_columns_kernel(&k1);
	full_columns_memcpy(&c1);
	full_columns_memset(&m1);
	full_columns_memory(&y1);
	full_columns_sync(&s_1);
	full_columns_api(&a1);
	full_columns_nvtx(&n1);

	finish_writer(w);

	cs_trace *t = open_trace(path);
	ck_assert_str_eq(cs_trace_path(t), path);
	ck_assert_int_eq(cs_trace_schema_version(t), CS_SCHEMA_VERSION);
	ck_assert_str_eq(cs_trace_meta(t, "schema_version"), "2");
	ck_assert_str_eq(cs_trace_meta(t, "cuscope_version"), CUSCOPE_VERSION);
	ck_assert_ptr_nonnull(cs_trace_meta(t, "created"));
	ck_assert_int_eq(strlen(cs_trace_meta(t, "created")), 20);
	ck_assert_str_eq(cs_trace_meta(t, "command"), "python train.py");
	ck_assert_str_eq(cs_trace_meta(t, "host"), "gpu-node-1");
	ck_assert_str_eq(cs_trace_meta(t, "time_base_ns"), "1234567890123456789");
	ck_assert_ptr_null(cs_trace_meta(t, "empty"));
	ck_assert_ptr_null(cs_trace_meta(t, "no such key"));

	struct collected *c = calloc(1, sizeof(*c));
	ck_assert_int_eq(cs_trace_each_process(t, collect_process, c, &err), CS_OK);
	ck_assert_int_eq(c->n, 2);
	for (int i = 0; i < 2; i++) {
		const cs_process *e = i ? &p2 : &p1, *g = &c->p[i];

		ck_assert_uint_eq(g->pid, e->pid);
		ck_assert_uint_eq(g->ppid, e->ppid);
		ck_assert_int_eq(g->start, e->start);
		ck_assert_int_eq(g->end, e->end);
		if (e->command_line)
			ck_assert_str_eq(c->cmd[i], e->command_line);
		else
			ck_assert_ptr_null(c->cmd[i]);
		ck_assert_int_eq(g->rank, e->rank);
		ck_assert_int_eq(g->local_rank, e->local_rank);
		ck_assert_int_eq(g->world_size, e->world_size);
		ck_assert_int_eq(g->exit_code, e->exit_code);
		ck_assert_int_eq(g->used_cuda, e->used_cuda);
		ck_assert_int_eq(g->dropped_records, e->dropped_records);
		ck_assert_int_eq(g->cupti_device_bytes, e->cupti_device_bytes);
		free(c->cmd[i]);
	}

	memset(c, 0, sizeof(*c));
	ck_assert_int_eq(cs_trace_each_device(t, collect_device, c, &err), CS_OK);
	ck_assert_int_eq(c->n, 2);
	for (int i = 0; i < 2; i++) {
		const cs_device *e = i ? &d2 : &d1, *g = &c->d[i];

		ck_assert_uint_eq(g->pid, e->pid);
		ck_assert_int_eq(g->device_id, e->device_id);
		if (e->uuid) {
			ck_assert_str_eq(c->uuid[i], e->uuid);
			ck_assert_str_eq(c->name[i], e->name);
		} else {
			ck_assert_ptr_null(c->uuid[i]);
			ck_assert_ptr_null(c->name[i]);
		}
		ck_assert_int_eq(g->total_memory, e->total_memory);
		ck_assert_int_eq(g->sm_count, e->sm_count);
		ck_assert_int_eq(g->compute_major, e->compute_major);
		ck_assert_int_eq(g->compute_minor, e->compute_minor);
		ck_assert_int_eq(g->core_clock_khz, e->core_clock_khz);
		ck_assert_int_eq(g->memory_bandwidth, e->memory_bandwidth);
		free(c->uuid[i]);
		free(c->name[i]);
	}

	memset(c, 0, sizeof(*c));
	ck_assert_int_eq(cs_trace_each_stream(t, collect_stream, c, &err), CS_OK);
	ck_assert_int_eq(c->n, 2);
	for (int i = 0; i < 2; i++) {
		const cs_stream *e = i ? &s2 : &s1, *g = &c->s[i];

		ck_assert_uint_eq(g->pid, e->pid);
		ck_assert_int_eq(g->device_id, e->device_id);
		ck_assert_uint_eq(g->context_id, e->context_id);
		ck_assert_uint_eq(g->stream_id, e->stream_id);
		ck_assert_int_eq(g->is_default, e->is_default);
		ck_assert_int_eq(g->priority, e->priority);
	}

	free(c);

	/* The stack. */
	const cs_frame *frames;
	int n;
	ck_assert_int_eq(cs_trace_get_stack(t, stack, &frames, &n, &err), CS_OK);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(frames[0].kind, 1);
	ck_assert_uint_eq(frames[0].pc, 0xfffffffffffff001ULL);
	ck_assert_str_eq(frames[0].module, "/lib/libfoo.so");
	ck_assert_str_eq(frames[0].symbol, "foo()");
	ck_assert_uint_eq(frames[0].offset, 17);
	ck_assert_ptr_null(frames[0].file);
	ck_assert_int_eq(frames[0].line, 0);
	ck_assert_int_eq(frames[1].kind, 2);
	ck_assert_uint_eq(frames[1].pc, 0);
	ck_assert_ptr_null(frames[1].module);
	ck_assert_str_eq(frames[1].symbol, "train_step");
	ck_assert_str_eq(frames[1].file, "train.py");
	ck_assert_int_eq(frames[1].line, 42);
	ck_assert_int_eq(cs_trace_get_stack(t, CS_ID_NONE, &frames, &n, &err), CS_OK);
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(cs_trace_get_stack(t, 12345, &frames, &n, &err), CS_OK);
	ck_assert_int_eq(n, 0);

	/* Every event kind. */
	cs_iter *it;
	cs_event ev;

	ck_assert_int_eq(cs_iter_open(t, CS_EV_KERNEL, NULL, &it, &err), CS_OK);
	ev = next_event(it);
	ck_assert_int_eq(ev.kind, CS_EV_KERNEL);
	check_kernel(&ev.u.kernel, &k1);
	ck_assert_str_eq(ev.u.kernel.name, "_Z6kernelPfi");
	ev = next_event(it);
	check_kernel(&ev.u.kernel, &k2);
	ck_assert_ptr_null(ev.u.kernel.name);
	ck_assert_int_eq(cs_iter_next(it, &ev), 0);
	ck_assert_int_eq(cs_iter_next(it, &ev), 0);
	cs_iter_close(it);

	ck_assert_int_eq(cs_iter_open(t, CS_EV_MEMCPY, NULL, &it, &err), CS_OK);
	ev = next_event(it);
	ck_assert_int_eq(ev.kind, CS_EV_MEMCPY);
	check_memcpy(&ev.u.memcpy, &c1);
	ev = next_event(it);
	check_memcpy(&ev.u.memcpy, &c2);
	ck_assert_int_eq(cs_iter_next(it, &ev), 0);
	cs_iter_close(it);

	ck_assert_int_eq(cs_iter_open(t, CS_EV_MEMSET, NULL, &it, &err), CS_OK);
	ev = next_event(it);
	check_memset(&ev.u.memset, &m1);
	ev = next_event(it);
	check_memset(&ev.u.memset, &m2);
	ck_assert_int_eq(cs_iter_next(it, &ev), 0);
	cs_iter_close(it);

	ck_assert_int_eq(cs_iter_open(t, CS_EV_MEMORY, NULL, &it, &err), CS_OK);
	ev = next_event(it);
	check_memory(&ev.u.memory, &y1);
	ev = next_event(it);
	check_memory(&ev.u.memory, &y2);
	ck_assert_int_eq(cs_iter_next(it, &ev), 0);
	cs_iter_close(it);

	ck_assert_int_eq(cs_iter_open(t, CS_EV_SYNC, NULL, &it, &err), CS_OK);
	ev = next_event(it);
	check_sync(&ev.u.sync, &s_1);
	ev = next_event(it);
	check_sync(&ev.u.sync, &s_2);
	ck_assert_int_eq(cs_iter_next(it, &ev), 0);
	cs_iter_close(it);

	ck_assert_int_eq(cs_iter_open(t, CS_EV_API, NULL, &it, &err), CS_OK);
	ev = next_event(it);
	check_api(&ev.u.api, &a1);
	ck_assert_str_eq(ev.u.api.name, "cudaLaunchKernel");
	ev = next_event(it);
	check_api(&ev.u.api, &a2);
	ck_assert_ptr_null(ev.u.api.name);
	ck_assert_int_eq(cs_iter_next(it, &ev), 0);
	cs_iter_close(it);

	ck_assert_int_eq(cs_iter_open(t, CS_EV_NVTX, NULL, &it, &err), CS_OK);
	ev = next_event(it);
	check_nvtx(&ev.u.nvtx, &n1);
	ck_assert_str_eq(ev.u.nvtx.text, "forward");
	ck_assert_str_eq(ev.u.nvtx.domain, "my_domain");
	ev = next_event(it);
	check_nvtx(&ev.u.nvtx, &n2);
	ck_assert_str_eq(ev.u.nvtx.text, "forward");
	ck_assert_ptr_null(ev.u.nvtx.domain);
	ck_assert_int_eq(cs_iter_next(it, &ev), 0);
	cs_iter_close(it);

	cs_trace_close(t);

	/* Unknown values are NULL in the file, not sentinel numbers. */
	ck_assert_int_eq(
		sql_int(path,
			"SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE end IS NULL AND "
			"queued IS NULL AND launchCbid IS NULL AND graphId IS NULL AND nameId IS "
			"NULL "
			"AND stackId IS NULL"),
		1);
	ck_assert_int_eq(
		sql_int(path,
			"SELECT count(*) FROM PROCESSES WHERE start IS NULL AND rank IS NULL AND "
			"exitCode IS NULL AND commandLine IS NULL"),
		1);
	free(path);
}
END_TEST

/* An event cleared has every column missing, whatever it held, and its kind. */
START_TEST(test_event_clear)
{
	cs_event ev;

	for (int k = 0; k < CS_EV_COUNT; k++) {
		memset(&ev, 0x5a, sizeof(ev));
		cs_event_clear(&ev, k);
		ck_assert_int_eq(ev.kind, k);
	}
	memset(&ev, 0x5a, sizeof(ev));
	cs_event_clear(&ev, CS_EV_KERNEL);
	cleared_kernel(&ev.u.kernel);
	ck_assert_ptr_null(ev.u.kernel.name);
	cs_event_clear(&ev, CS_EV_MEMCPY);
	cleared_memcpy(&ev.u.memcpy);
	cs_event_clear(&ev, CS_EV_MEMSET);
	cleared_memset(&ev.u.memset);
	cs_event_clear(&ev, CS_EV_MEMORY);
	cleared_memory(&ev.u.memory);
	cs_event_clear(&ev, CS_EV_SYNC);
	cleared_sync(&ev.u.sync);
	cs_event_clear(&ev, CS_EV_API);
	cleared_api(&ev.u.api);
	cs_event_clear(&ev, CS_EV_NVTX);
	cleared_nvtx(&ev.u.nvtx);
	ck_assert_ptr_null(ev.u.nvtx.text);
	ck_assert_ptr_null(ev.u.nvtx.domain);
}
END_TEST

/*
 * The columns as people see them: every column has a label and a unit, a DIM comes as x, y, z in a
 * row under one label, the names of the enumerations' values are the trace's own, and
 * cs_event_value() reads each column's field.
 */
START_TEST(test_column_info)
{
	cs_kernel k = full_kernel(7, 9);
	cs_memcpy mc = full_memcpy(9);
	cs_memset ms = full_memset();
	cs_memory mm = full_memory();
	cs_sync sy = full_sync();
	cs_api ap = full_api(7);
	cs_nvtx nv = full_nvtx(5, 6);
	int n;

	info_kernel(&k);
	info_memcpy(&mc);
	info_memset(&ms);
	info_memory(&mm);
	info_sync(&sy);
	info_api(&ap);
	info_nvtx(&nv);
	for (int kind = 0; kind < CS_EV_COUNT; kind++) {
		const cs_column_info *c = cs_event_columns(kind, &n);

		ck_assert_int_gt(n, 0);
		for (int i = 0; i < n; i++) {
			size_t len = strlen(c[i].name);

			ck_assert_msg(c[i].label && c[i].label[0], "%s has no label", c[i].name);
			ck_assert_str_ne(cs_column_unit_name(c[i].unit), "");
			/* printable, and as it is in JSON (the exporters write it unescaped) */
			for (const char *p = c[i].label; *p; p++)
				ck_assert_msg(*p >= ' ' && *p <= '~' && *p != '"' && *p != '\\',
					      "%s: label %s", c[i].name, c[i].label);
			/* a column of several tables is labelled alike in each */
			for (int other = 0; other < kind; other++) {
				int m;
				const cs_column_info *o = cs_event_columns(other, &m);

				for (int j = 0; j < m; j++)
					if (!strcmp(o[j].name, c[i].name)) {
						ck_assert_str_eq(o[j].label, c[i].label);
						ck_assert_int_eq(o[j].unit, c[i].unit);
					}
			}
			if (c[i].unit != CS_COLUNIT_DIM)
				continue;
			/* x, y, z in a row, one label */
			ck_assert_msg(i + 2 < n && c[i].name[len - 1] == 'X', "%s", c[i].name);
			ck_assert_int_eq(c[i + 1].unit, CS_COLUNIT_DIM);
			ck_assert_int_eq(c[i + 2].unit, CS_COLUNIT_DIM);
			ck_assert_int_eq(c[i + 1].name[len - 1], 'Y');
			ck_assert_int_eq(c[i + 2].name[len - 1], 'Z');
			ck_assert_int_eq(strncmp(c[i].name, c[i + 2].name, len - 1), 0);
			ck_assert_str_eq(c[i].label, c[i + 1].label);
			ck_assert_str_eq(c[i].label, c[i + 2].label);
			i += 2;
		}
	}
	ck_assert_ptr_null(cs_event_columns(CS_EV_COUNT, &n));
	ck_assert_int_eq(n, 0);
	ck_assert_str_eq(cs_column_unit_name(CS_COLUNIT_NS), "ns");
	ck_assert_str_eq(cs_column_unit_name(CS_COLUNIT_BYTES), "bytes");
	ck_assert_str_eq(cs_column_value_name(CS_COLUNIT_COPY_KIND, CS_COPY_DTOH), "DtoH");
	ck_assert_str_eq(cs_column_value_name(CS_COLUNIT_MEM_KIND, CS_MEM_PINNED), "pinned");
	ck_assert_str_eq(cs_column_value_name(CS_COLUNIT_MEM_OP, CS_MEMOP_FREE), "free");
	ck_assert_str_eq(cs_column_value_name(CS_COLUNIT_SYNC_TYPE, CS_SYNC_STREAM_SYNCHRONIZE),
			 "stream_synchronize");
	ck_assert_str_eq(cs_column_value_name(CS_COLUNIT_COPY_KIND, (int64_t)1 << 40), "unknown");
	ck_assert_ptr_null(cs_column_value_name(CS_COLUNIT_CODE, 1));
	ck_assert_ptr_null(cs_column_value_name(CS_COLUNIT_ID, 1));
}
END_TEST

/* ---- strings ---- */

START_TEST(test_intern)
{
	char *path = new_trace_path("strings.db");
	cs_trace_writer *w = open_writer(path);
	char buf1[] = "volta_sgemm_128x64_nn", buf2[] = "volta_sgemm_128x64_nn";
	int64_t a, b, c, d, e, ids[10000];
	char s[64];

	a = cs_writer_intern(w, buf1);
	b = cs_writer_intern(w, buf2);
	c = cs_writer_intern(w, "volta_sgemm_128x64_nt");
	ck_assert_int_ge(a, 0);
	ck_assert_int_eq(a, b);
	ck_assert_int_ne(a, c);
	/* Length-limited: "volta" from a longer buffer is the same as "volta". */
	d = cs_writer_intern_len(w, buf1, 5);
	e = cs_writer_intern(w, "volta");
	ck_assert_int_eq(d, e);
	ck_assert_int_ne(d, a);
	ck_assert_int_eq(cs_writer_intern_len(w, "", 0), cs_writer_intern(w, ""));
	ck_assert_int_lt(cs_writer_intern(w, NULL), 0);

	for (int i = 0; i < 10000; i++) {
		snprintf(s, sizeof(s), "kernel_%d", i);
		ids[i] = cs_writer_intern(w, s);
		ck_assert_int_ge(ids[i], 0);
	}
	for (int i = 0; i < 10000; i++) {
		snprintf(s, sizeof(s), "kernel_%d", i);
		ck_assert_int_eq(cs_writer_intern(w, s), ids[i]);
	}
	/* the writer's own copy, by id */
	ck_assert_str_eq(cs_writer_string(w, a), "volta_sgemm_128x64_nn");
	ck_assert_str_eq(cs_writer_string(w, d), "volta");
	ck_assert_str_eq(cs_writer_string(w, ids[9999]), "kernel_9999");
	ck_assert_ptr_null(cs_writer_string(w, CS_ID_NONE));
	ck_assert_ptr_null(cs_writer_string(w, 0));
	ck_assert_ptr_null(cs_writer_string(w, ids[9999] + 1));
	finish_writer(w);

	cs_trace *t = open_trace(path);
	cs_trace_summary sum;
	cs_error err = {0};

	ck_assert_str_eq(cs_trace_string(t, a), "volta_sgemm_128x64_nn");
	ck_assert_str_eq(cs_trace_string(t, c), "volta_sgemm_128x64_nt");
	ck_assert_str_eq(cs_trace_string(t, d), "volta");
	for (int i = 0; i < 10000; i++) {
		snprintf(s, sizeof(s), "kernel_%d", i);
		ck_assert_str_eq(cs_trace_string(t, ids[i]), s);
		for (int j = i + 1; j < i + 3 && j < 10000; j++)
			ck_assert_int_ne(ids[i], ids[j]);
	}
	ck_assert_ptr_null(cs_trace_string(t, CS_ID_NONE));
	ck_assert_ptr_null(cs_trace_string(t, 1000000));
	ck_assert_int_eq(cs_trace_get_summary(t, &sum, &err), CS_OK);
	ck_assert_int_eq(sum.strings, 10000 + 4);
	cs_trace_close(t);
	free(path);
}
END_TEST

/* ---- stacks ---- */

START_TEST(test_stack_dedup)
{
	char *path = new_trace_path("stacks.db");
	cs_trace_writer *w = open_writer(path);
	char mod1[] = "/usr/lib/libtorch.so", mod2[] = "/usr/lib/libtorch.so";
	cs_frame a[3] = {
		{.kind = 1, .pc = 0x1000, .module = mod1, .symbol = "at::mm", .offset = 16},
		{.kind = 2, .symbol = "forward", .file = "model.py", .line = 10},
		{.kind = 2, .symbol = "main", .file = "train.py", .line = 99},
	};
	cs_frame b[3] = {
		{.kind = 1, .pc = 0x1000, .module = mod2, .symbol = "at::mm", .offset = 16},
		{.kind = 2, .symbol = "forward", .file = "model.py", .line = 10},
		{.kind = 2, .symbol = "main", .file = "train.py", .line = 99},
	};
	cs_frame rev[3] = {a[2], a[1], a[0]};
	cs_frame other_line[3] = {a[0], a[1], a[2]};
	int64_t sa, sb, srev, sline, sshort;

	other_line[2].line = 100;
	sa = cs_writer_add_stack(w, a, 3);
	sb = cs_writer_add_stack(w, b, 3);
	srev = cs_writer_add_stack(w, rev, 3);
	sline = cs_writer_add_stack(w, other_line, 3);
	sshort = cs_writer_add_stack(w, a, 2);
	ck_assert_int_ge(sa, 0);
	ck_assert_int_eq(sa, sb);
	ck_assert_int_ne(sa, srev);
	ck_assert_int_ne(sa, sline);
	ck_assert_int_ne(srev, sline);
	ck_assert_int_ne(sa, sshort);
	ck_assert_int_eq(cs_writer_add_stack(w, rev, 3), srev);
	ck_assert_int_lt(cs_writer_add_stack(w, a, 0), 0);
	finish_writer(w);

	/* 4 distinct frames (3 + the other line), 4 distinct stacks of 3+3+3+2 rows. */
	ck_assert_int_eq(sql_int(path, "SELECT count(*) FROM STACK_FRAMES"), 4);
	ck_assert_int_eq(sql_int(path, "SELECT count(*) FROM STACKS"), 11);

	cs_trace *t = open_trace(path);
	cs_error err = {0};
	cs_trace_summary sum;
	const cs_frame *f;
	int n;

	ck_assert_int_eq(cs_trace_get_stack(t, srev, &f, &n, &err), CS_OK);
	ck_assert_int_eq(n, 3);
	ck_assert_str_eq(f[0].symbol, "main");
	ck_assert_str_eq(f[1].symbol, "forward");
	ck_assert_str_eq(f[2].symbol, "at::mm");
	ck_assert_str_eq(f[2].module, "/usr/lib/libtorch.so");
	ck_assert_int_eq(cs_trace_get_stack(t, sshort, &f, &n, &err), CS_OK);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(cs_trace_get_summary(t, &sum, &err), CS_OK);
	ck_assert_int_eq(sum.stacks, 4);
	cs_trace_close(t);
	free(path);
}
END_TEST

/* ---- iterators ---- */

START_TEST(test_iter_order)
{
	char *path = new_trace_path("order.db");
	cs_trace_writer *w = open_writer(path);
	/* Out of order, with ties (kept in insertion order: told apart by correlation id). */
	int64_t starts[] = {50, 10, 30, 10, 70, 30, 20, 10};
	uint64_t expect[] = {1, 3, 7, 6, 2, 5, 0, 4};
	cs_iter *it;
	cs_event ev;
	cs_error err = {0};

	for (int i = 0; i < 8; i++) {
		cs_kernel k = plain_kernel(starts[i], starts[i] + 5);

		k.correlation_id = (uint64_t)i;
		ck_assert_int_eq(cs_writer_add_kernel(w, &k), CS_OK);
	}
	/* An event with an unknown start comes first. */
	cs_api a = {.start = CS_TS_UNKNOWN,
		    .end = 40,
		    .cbid = CS_ID_NONE,
		    .name_id = CS_ID_NONE,
		    .stack_id = CS_ID_NONE};
	cs_api b = a;
	b.start = 5;
	ck_assert_int_eq(cs_writer_add_api(w, &b), CS_OK);
	ck_assert_int_eq(cs_writer_add_api(w, &a), CS_OK);
	finish_writer(w);

	cs_trace *t = open_trace(path);
	ck_assert_int_eq(cs_iter_open(t, CS_EV_KERNEL, NULL, &it, &err), CS_OK);
	for (int i = 0; i < 8; i++) {
		ev = next_event(it);
		ck_assert_uint_eq(ev.u.kernel.correlation_id, expect[i]);
	}
	ck_assert_int_eq(cs_iter_next(it, &ev), 0);
	cs_iter_close(it);

	ck_assert_int_eq(cs_iter_open(t, CS_EV_API, NULL, &it, &err), CS_OK);
	ev = next_event(it);
	ck_assert_int_eq(ev.u.api.start, CS_TS_UNKNOWN);
	ev = next_event(it);
	ck_assert_int_eq(ev.u.api.start, 5);
	ck_assert_int_eq(cs_iter_next(it, &ev), 0);
	cs_iter_close(it);

	/* Empty tables iterate to nothing. */
	ck_assert_int_eq(cs_iter_open(t, CS_EV_NVTX, NULL, &it, &err), CS_OK);
	ck_assert_int_eq(cs_iter_next(it, &ev), 0);
	cs_iter_close(it);
	ck_assert_int_eq(cs_iter_open(t, CS_EV_COUNT, NULL, &it, &err), CS_ERR_INVALID);
	cs_trace_close(t);
	free(path);
}
END_TEST

/* Correlation ids of the kernels a filter returns, as a string "1,2,3". */
static void ids_of(cs_trace *t, enum cs_event_kind kind, const cs_filter *f, char *out, size_t len)
{
	cs_iter *it;
	cs_event ev;
	cs_error err = {0};
	size_t n = 0;
	int rc;

	out[0] = '\0';
	ck_assert_msg(cs_iter_open(t, kind, f, &it, &err) == CS_OK, "%s", err.msg);
	while ((rc = cs_iter_next(it, &ev)) == 1) {
		uint64_t id = kind == CS_EV_KERNEL   ? ev.u.kernel.correlation_id
			      : kind == CS_EV_MEMORY ? ev.u.memory.correlation_id
						     : ev.u.api.correlation_id;

		n += (size_t)snprintf(out + n, len - n, "%s%llu", n ? "," : "",
				      (unsigned long long)id);
	}
	ck_assert_int_eq(rc, 0);
	cs_iter_close(it);
}

START_TEST(test_iter_filters)
{
	char *path = new_trace_path("filters.db");
	cs_trace_writer *w = open_writer(path);
	cs_error err = {0};
	char got[256];
	struct {
		int64_t start, end;
		uint32_t pid;
		int32_t dev;
		uint32_t stream;
	} ks[] = {
		{0, 100, 1, 0, 7}, /* 1: long, overlaps everything up to 100 */
		{10, 20, 1, 0, 7}, /* 2 */
		{20, 30, 2, 1, 8}, /* 3 */
		{30, 40, 2, 1, 7}, /* 4 */
		{40, 40, 1, 0, 8}, /* 5: zero length */
		{50, 60, 1, 1, 7}, /* 6 */
	};

	for (int i = 0; i < 6; i++) {
		cs_kernel k = plain_kernel(ks[i].start, ks[i].end);

		k.pid = ks[i].pid;
		k.device_id = ks[i].dev;
		k.stream_id = ks[i].stream;
		k.correlation_id = (uint64_t)i + 1;
		ck_assert_int_eq(cs_writer_add_kernel(w, &k), CS_OK);
	}
	for (int i = 0; i < 4; i++) {
		cs_memory m = {.start = i * 10,
			       .pid = 1,
			       .device_id = i % 2,
			       .stream_id = i == 3 ? CS_ID_NONE : 7,
			       .correlation_id = (uint64_t)i + 1,
			       .cbid = CS_ID_NONE,
			       .stack_id = CS_ID_NONE};

		ck_assert_int_eq(cs_writer_add_memory(w, &m), CS_OK);
	}
	for (int i = 0; i < 3; i++) {
		cs_api a = {.start = i * 10,
			    .end = i * 10 + 5,
			    .pid = (uint32_t)(1 + i % 2),
			    .correlation_id = (uint64_t)i + 1,
			    .cbid = 1,
			    .name_id = CS_ID_NONE,
			    .stack_id = CS_ID_NONE};

		ck_assert_int_eq(cs_writer_add_api(w, &a), CS_OK);
	}
	finish_writer(w);

	cs_trace *t = open_trace(path);
	cs_filter f = cs_filter_all();

	ck_assert_int_eq(f.t0, CS_TS_UNKNOWN);
	ck_assert_int_eq(f.t1, CS_TS_UNKNOWN);
	ck_assert_int_eq(f.pid, -1);
	ck_assert_int_eq(f.device_id, -1);
	ck_assert_int_eq(f.stream_id, -1);
	ids_of(t, CS_EV_KERNEL, &f, got, sizeof(got));
	ck_assert_str_eq(got, "1,2,3,4,5,6");

	/* [20, 40): 1 (0-100), 3 (20-30), 4 (30-40); not 2 (ends at 20), not 5 (at 40). */
	f.t0 = 20;
	f.t1 = 40;
	ids_of(t, CS_EV_KERNEL, &f, got, sizeof(got));
	ck_assert_str_eq(got, "1,3,4");
	/* A zero-length event at t0 is inside. */
	f.t0 = 40;
	f.t1 = 41;
	ids_of(t, CS_EV_KERNEL, &f, got, sizeof(got));
	ck_assert_str_eq(got, "1,5");
	/* Open bounds. */
	f.t0 = 55;
	f.t1 = CS_TS_UNKNOWN;
	ids_of(t, CS_EV_KERNEL, &f, got, sizeof(got));
	ck_assert_str_eq(got, "1,6");
	f.t0 = CS_TS_UNKNOWN;
	f.t1 = 20;
	ids_of(t, CS_EV_KERNEL, &f, got, sizeof(got));
	ck_assert_str_eq(got, "1,2");
	f.t0 = 100;
	f.t1 = 200;
	ids_of(t, CS_EV_KERNEL, &f, got, sizeof(got));
	ck_assert_str_eq(got, "");

	f = cs_filter_all();
	f.pid = 2;
	ids_of(t, CS_EV_KERNEL, &f, got, sizeof(got));
	ck_assert_str_eq(got, "3,4");
	f = cs_filter_all();
	f.device_id = 1;
	ids_of(t, CS_EV_KERNEL, &f, got, sizeof(got));
	ck_assert_str_eq(got, "3,4,6");
	f = cs_filter_all();
	f.stream_id = 8;
	ids_of(t, CS_EV_KERNEL, &f, got, sizeof(got));
	ck_assert_str_eq(got, "3,5");
	f = cs_filter_all();
	f.device_id = 1;
	f.stream_id = 7;
	f.t0 = 35;
	f.t1 = 60;
	ids_of(t, CS_EV_KERNEL, &f, got, sizeof(got));
	ck_assert_str_eq(got, "4,6");

	/* Memory events are instants: [10, 30) holds those at 10 and 20. */
	f = cs_filter_all();
	f.t0 = 10;
	f.t1 = 30;
	ids_of(t, CS_EV_MEMORY, &f, got, sizeof(got));
	ck_assert_str_eq(got, "2,3");
	f = cs_filter_all();
	f.stream_id = 7;
	ids_of(t, CS_EV_MEMORY, &f, got, sizeof(got));
	ck_assert_str_eq(got, "1,2,3");
	f.device_id = 0;
	ids_of(t, CS_EV_MEMORY, &f, got, sizeof(got));
	ck_assert_str_eq(got, "1,3");

	/* API calls have no device or stream: those filters do not apply. */
	f = cs_filter_all();
	f.device_id = 5;
	f.stream_id = 5;
	ids_of(t, CS_EV_API, &f, got, sizeof(got));
	ck_assert_str_eq(got, "1,2,3");
	f.pid = 2;
	ids_of(t, CS_EV_API, &f, got, sizeof(got));
	ck_assert_str_eq(got, "2");

	/* No filter pointer means everything. */
	ids_of(t, CS_EV_KERNEL, NULL, got, sizeof(got));
	ck_assert_str_eq(got, "1,2,3,4,5,6");
	cs_trace_close(t);
	(void)err;
	free(path);
}
END_TEST

/* Random events and windows: the window search must return exactly what a scan of every event
 * would. */
START_TEST(test_iter_window_random)
{
	enum { N = 3000 };
	char *path = new_trace_path("random.db");
	cs_trace_writer *w = open_writer(path);
	static int64_t st[N], en[N];
	cs_error err = {0};
	unsigned seed = 12345;

	for (int i = 0; i < N; i++) {
		seed = seed * 1103515245u + 12345u;
		st[i] = (seed >> 8) % 100000;
		seed = seed * 1103515245u + 12345u;
		en[i] = st[i] + ((seed >> 8) % 50 == 0 ? 20000 : (seed >> 8) % 300);
		cs_kernel k = plain_kernel(st[i], en[i]);

		k.correlation_id = (uint64_t)i;
		ck_assert_int_eq(cs_writer_add_kernel(w, &k), CS_OK);
	}
	finish_writer(w);

	cs_trace *t = open_trace(path);
	for (int q = 0; q < 200; q++) {
		cs_filter f = cs_filter_all();
		cs_iter *it;
		cs_event ev;
		int expect = 0, got = 0, rc;
		int64_t prev = INT64_MIN;

		seed = seed * 1103515245u + 12345u;
		f.t0 = (seed >> 8) % 110000 - 5000;
		seed = seed * 1103515245u + 12345u;
		f.t1 = f.t0 + (seed >> 8) % 3000;
		for (int i = 0; i < N; i++)
			if (st[i] < f.t1 && (en[i] > f.t0 || st[i] >= f.t0))
				expect++;
		ck_assert_int_eq(cs_iter_open(t, CS_EV_KERNEL, &f, &it, &err), CS_OK);
		while ((rc = cs_iter_next(it, &ev)) == 1) {
			int i = (int)ev.u.kernel.correlation_id;

			ck_assert(st[i] < f.t1 && (en[i] > f.t0 || st[i] >= f.t0));
			ck_assert_int_ge(ev.u.kernel.start, prev);
			prev = ev.u.kernel.start;
			got++;
		}
		ck_assert_int_eq(rc, 0);
		ck_assert_int_eq(got, expect);
		cs_iter_close(it);
	}
	cs_trace_close(t);
	free(path);
}
END_TEST

/* ---- summary ---- */

START_TEST(test_summary)
{
	char *path = new_trace_path("summary.db");
	cs_trace_writer *w = open_writer(path);
	cs_trace_summary s;
	cs_error err = {0};
	cs_frame fr = {.kind = 2, .symbol = "f", .file = "a.py", .line = 1};
	cs_process p = {.pid = 1,
			.start = CS_TS_UNKNOWN,
			.end = CS_TS_UNKNOWN,
			.rank = CS_ID_NONE,
			.local_rank = CS_ID_NONE,
			.world_size = CS_ID_NONE,
			.exit_code = 0,
			.dropped_records = 5};
	cs_device d = {.pid = 1, .device_id = 0, .name = "GPU"};
	cs_stream st = {.pid = 1, .device_id = 0, .stream_id = 7};

	ck_assert_int_eq(cs_writer_add_process(w, &p), CS_OK);
	p.pid = 2;
	p.dropped_records = 7;
	ck_assert_int_eq(cs_writer_add_process(w, &p), CS_OK);
	ck_assert_int_eq(cs_writer_add_device(w, &d), CS_OK);
	ck_assert_int_eq(cs_writer_add_stream(w, &st), CS_OK);
	st.stream_id = 8;
	ck_assert_int_eq(cs_writer_add_stream(w, &st), CS_OK);
	ck_assert_int_ge(cs_writer_add_stack(w, &fr, 1), 0);
	ck_assert_int_ge(cs_writer_intern(w, "name"), 0);
	for (int i = 0; i < 3; i++) {
		cs_kernel k = plain_kernel(1000 + i * 10, 1005 + i * 10);

		ck_assert_int_eq(cs_writer_add_kernel(w, &k), CS_OK);
	}
	cs_memcpy c = full_memcpy(CS_ID_NONE);
	c.start = 500;
	c.end = 600;
	ck_assert_int_eq(cs_writer_add_memcpy(w, &c), CS_OK);
	cs_nvtx n = full_nvtx(CS_ID_NONE, CS_ID_NONE);
	n.start = 900;
	n.end = 5000;
	ck_assert_int_eq(cs_writer_add_nvtx(w, &n), CS_OK);
	n.start = 950;
	n.end = CS_TS_UNKNOWN;
	ck_assert_int_eq(cs_writer_add_nvtx(w, &n), CS_OK);
	cs_memory m = full_memory();
	m.start = 6000;
	ck_assert_int_eq(cs_writer_add_memory(w, &m), CS_OK);
	finish_writer(w);

	cs_trace *t = open_trace(path);
	ck_assert_int_eq(cs_trace_get_summary(t, &s, &err), CS_OK);
	ck_assert_int_eq(s.start, 500);
	ck_assert_int_eq(s.end, 6000);
	ck_assert_int_eq(s.counts[CS_EV_KERNEL], 3);
	ck_assert_int_eq(s.counts[CS_EV_MEMCPY], 1);
	ck_assert_int_eq(s.counts[CS_EV_MEMSET], 0);
	ck_assert_int_eq(s.counts[CS_EV_MEMORY], 1);
	ck_assert_int_eq(s.counts[CS_EV_SYNC], 0);
	ck_assert_int_eq(s.counts[CS_EV_API], 0);
	ck_assert_int_eq(s.counts[CS_EV_NVTX], 2);
	ck_assert_int_eq(s.processes, 2);
	ck_assert_int_eq(s.devices, 1);
	ck_assert_int_eq(s.streams, 2);
	ck_assert_int_eq(s.strings, 3); /* f, a.py, name */
	ck_assert_int_eq(s.stacks, 1);
	ck_assert_int_eq(s.findings, 0);
	ck_assert_int_eq(s.dropped_records, 12);
	cs_trace_close(t);
	/* the FINDINGS table is there, empty, for older readers; its rows are counted, and a file
	 * without it opens */
	ck_assert_int_eq(sql_int(path, "SELECT count(*) FROM FINDINGS"), 0);
	sql_exec(path, "INSERT INTO FINDINGS(rule) VALUES('x')");
	t = open_trace(path);
	ck_assert_int_eq(cs_trace_get_summary(t, &s, &err), CS_OK);
	ck_assert_int_eq(s.findings, 1);
	cs_trace_close(t);
	sql_exec(path, "DROP TABLE FINDINGS");
	t = open_trace(path);
	ck_assert_int_eq(cs_trace_get_summary(t, &s, &err), CS_OK);
	ck_assert_int_eq(s.findings, 0);
	ck_assert_int_eq(s.processes, 2);
	cs_trace_close(t);
	free(path);

	/* An empty trace. */
	path = new_trace_path("empty.db");
	w = open_writer(path);
	finish_writer(w);
	t = open_trace(path);
	ck_assert_int_eq(cs_trace_get_summary(t, &s, &err), CS_OK);
	ck_assert_int_eq(s.start, CS_TS_UNKNOWN);
	ck_assert_int_eq(s.end, CS_TS_UNKNOWN);
	for (int k = 0; k < CS_EV_COUNT; k++)
		ck_assert_int_eq(s.counts[k], 0);
	ck_assert_int_eq(s.processes + s.devices + s.streams + s.strings + s.stacks + s.findings,
			 0);
	ck_assert_int_eq(s.dropped_records, 0);
	cs_trace_close(t);
	free(path);
}
END_TEST

/* ---- writer files ---- */

START_TEST(test_abort_leaves_nothing)
{
	char *path = new_trace_path("aborted.db");
	char *dir = dir_of(path);
	cs_trace_writer *w = open_writer(path);
	cs_kernel k = plain_kernel(1, 2);

	ck_assert_int_eq(cs_writer_add_kernel(w, &k), CS_OK);
	ck_assert_int_gt(count_dir_entries(dir), 0); /* the temporary files */
	cs_writer_abort(w);
	ck_assert_int_eq(count_dir_entries(dir), 0);
	ck_assert(!tu_file_exists(path));
	cs_writer_abort(NULL);
	free(dir);
	free(path);
}
END_TEST

/* Entries of dir whose name starts with prefix. */
static int count_prefixed(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, prefix, strlen(prefix));
	closedir(d);
	return n;
}

START_TEST(test_finish_renames)
{
	char *path = new_trace_path("final.db");
	char *dir = dir_of(path);
	cs_trace_writer *w = open_writer(path);
	cs_kernel k = plain_kernel(1, 2);

	ck_assert_int_eq(cs_writer_add_kernel(w, &k), CS_OK);
	/* the file and its staging database, under temporary names */
	ck_assert_int_eq(count_prefixed(dir, "final.db.tmp."), 2);
	ck_assert(!tu_file_exists(path));
	finish_writer(w);
	ck_assert(tu_file_exists(path));
	ck_assert_int_eq(count_prefixed(dir, "final.db.tmp."), 0);
	ck_assert_int_eq(count_dir_entries(dir), 1);
	free(dir);
	free(path);
}
END_TEST

/*
 * Links planted at the names the writer's temporaries used to have (PATH.tmp.PID and
 * PATH.tmp.PID.stage) are not followed: the files they point to stay as they were.
 */
START_TEST(test_planted_links_not_followed)
{
	char *path = new_trace_path("final.db");
	char *dir = dir_of(path), *victim = tu_path(dir, "victim"), *got;
	char tmp[4200], stage[4300];
	cs_trace_writer *w;
	cs_kernel k = plain_kernel(1, 2);
	size_t len;

	ck_assert_int_eq(tu_write_file(victim, "precious\n", 9), 0);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	snprintf(stage, sizeof(stage), "%s.stage", tmp);
	ck_assert_int_eq(symlink(victim, tmp), 0);
	ck_assert_int_eq(symlink(victim, stage), 0);
	w = open_writer(path);
	ck_assert_int_eq(cs_writer_add_kernel(w, &k), CS_OK);
	finish_writer(w);
	got = tu_read_file(victim, &len);
	ck_assert(got && len == 9 && !memcmp(got, "precious\n", 9));
	free(got);
	cs_trace_close(open_trace(path));
	free(victim);
	free(dir);
	free(path);
}
END_TEST

START_TEST(test_overwrite)
{
	char *path = new_trace_path("exists.db");
	cs_trace_writer *w = NULL;
	cs_error err = {0};
	char expect[4200];
	cs_trace *t;
	char *dir;

	ck_assert_int_eq(tu_write_file(path, "old", 3), 0);
	ck_assert_int_eq(cs_writer_open(path, 0, &w, &err), CS_ERR_EXISTS);
	ck_assert_ptr_null(w);
	ck_assert_int_eq(err.code, CS_ERR_EXISTS);
	snprintf(expect, sizeof(expect), "'%s' exists (use --force to overwrite)", path);
	ck_assert_str_eq(err.msg, expect);
	ck_assert_int_eq(cs_writer_open(path, 1, &w, &err), CS_OK);
	finish_writer(w);
	t = open_trace(path);
	cs_trace_close(t);

	/* A file that appears while the writer runs is not replaced either. */
	free(path);
	path = new_trace_path("race.db");
	ck_assert_int_eq(cs_writer_open(path, 0, &w, &err), CS_OK);
	ck_assert_int_eq(tu_write_file(path, "new", 3), 0);
	ck_assert_int_eq(cs_writer_finish(w, &err), CS_ERR_EXISTS);
	ck_assert_ptr_nonnull(strstr(err.msg, "exists (use --force to overwrite)"));
	dir = dir_of(path);
	ck_assert_int_eq(count_dir_entries(dir), 1);
	free(dir);
	free(path);
}
END_TEST

/* ---- size on disk ---- */

START_TEST(test_kernel_size)
{
	enum { N = 200000 };
	char *path = new_trace_path("size.db");
	cs_trace_writer *w = open_writer(path);
	int64_t names[200];
	char s[128];
	unsigned seed = 7;
	int64_t t = 59000000000LL; /* late in a minute-long run: 6-byte timestamps */
	struct stat sb;
	double per_kernel;

	for (int i = 0; i < 200; i++) {
		snprintf(s, sizeof(s),
			 "void at::native::elementwise_kernel<128, 4, %d>(int, float*)", i);
		names[i] = cs_writer_intern(w, s);
	}
	for (int i = 0; i < N; i++) {
		cs_kernel k = plain_kernel(0, 0);

		seed = seed * 1103515245u + 12345u;
		t += 3000 + (seed >> 8) % 4000;
		k.start = t;
		k.end = t + 2000 + (seed >> 4) % 48000;
		k.launch_start = t - 5000 - (seed >> 12) % 100000;
		k.launch_end = k.launch_start + 3000;
		k.pid = 1234567;
		k.launch_tid = 1234570;
		k.launch_cbid = 211;
		k.launch_api_kind = CS_API_RUNTIME;
		k.device_id = 0;
		k.context_id = 1;
		k.stream_id = 7;
		k.correlation_id = 100000 + (uint64_t)i * 3;
		k.grid_x = 1 << (seed % 12);
		k.grid_y = k.grid_z = 1;
		k.block_x = 128 << (seed % 3);
		k.block_y = k.block_z = 1;
		k.registers_per_thread = 16 + (int)(seed % 100);
		k.static_shared_memory = seed % 3 ? 0 : 4096;
		k.name_id = names[(seed >> 16) % 200];
		ck_assert_int_eq(cs_writer_add_kernel(w, &k), CS_OK);
	}
	finish_writer(w);
	ck_assert_int_eq(stat(path, &sb), 0);
	per_kernel = (double)sb.st_size / N;
	printf("trace: %d kernels, %lld bytes, %.1f bytes per kernel\n", N, (long long)sb.st_size,
	       per_kernel);
	ck_assert_msg(per_kernel <= 80.0, "%.1f bytes per kernel", per_kernel);

	/* A window in the middle is found without reading the whole table, and is right. */
	cs_trace *tr = open_trace(path);
	cs_filter f = cs_filter_all();
	cs_iter *it;
	cs_event ev;
	cs_error err = {0};
	int n = 0;

	f.t0 = 59000000000LL + 500000000LL;
	f.t1 = f.t0 + 1000000;
	ck_assert_int_eq(cs_iter_open(tr, CS_EV_KERNEL, &f, &it, &err), CS_OK);
	while (cs_iter_next(it, &ev) == 1) {
		ck_assert(ev.u.kernel.start < f.t1 && ev.u.kernel.end > f.t0);
		ck_assert_ptr_nonnull(ev.u.kernel.name);
		n++;
	}
	cs_iter_close(it);
	ck_assert_int_gt(n, 150);
	ck_assert_int_lt(n, 350);
	cs_trace_close(tr);
	free(path);
}
END_TEST

static int pick_none(int i)
{
	(void)i;
	return 0;
}

static int pick_one(int i)
{
	return i == 10000;
}

static int pick_all(int i)
{
	(void)i;
	return 1;
}

/* Size of a trace of n kernels; those with index i where pick(i) have a graph and a stack. */
static off_t kernels_file_size(int n, int (*pick)(int))
{
	char *path = new_trace_path("late.db");
	cs_trace_writer *w = open_writer(path);
	struct stat sb;
	int picked = 0;

	for (int i = 0; i < n; i++) {
		cs_kernel k =
			plain_kernel(3000000000LL + i * 5000LL, 3000000000LL + i * 5000LL + 4000);

		k.launch_start = k.start - 20000;
		k.launch_end = k.launch_start + 3000;
		k.launch_tid = 100;
		if (pick(i)) {
			picked++;
			k.graph_id = 7;
			k.graph_node_id = 70;
			k.stack_id = 700;
		}
		ck_assert_int_eq(cs_writer_add_kernel(w, &k), CS_OK);
	}
	finish_writer(w);
	ck_assert_int_eq(stat(path, &sb), 0);
	/* whichever way they were stored, the late columns read back on the rows that have them */
	ck_assert_int_eq(sql_int(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE "
				       "graphId = 7 AND graphNodeId = 70 AND stackId = 700"),
			 picked);
	ck_assert_int_eq(sql_int(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE "
				       "graphId IS NULL AND stackId IS NULL AND queued IS NULL"),
			 n - picked);
	ck_assert_int_eq(sql_int(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE "
				       "start = 3000000000 + (rowid - 1) * 5000"),
			 n);
	unlink(path);
	free(path);
	return sb.st_size;
}

/*
 * Version 2 stores times relative to the row's start (or launch) and adds the rarely set columns
 * after the rows: what a reader sees is what was written, whichever of the times are unknown, in
 * time order even when rows arrive out of it, and one kernel of a CUDA graph among thousands of
 * eager ones does not make every row longer.
 */
START_TEST(test_stored_layout)
{
	char *path = new_trace_path("layout.db");
	cs_trace_writer *w = open_writer(path);
	cs_kernel k[5];
	cs_trace *t;
	cs_iter *it;
	cs_event ev;
	cs_error err = {0};
	/* arrival order; time order is 4 (start unknown), 0, 3, 1, 2 */
	const int64_t starts[5] = {1000, 9000000000LL, 9000500000LL, 5000, CS_TS_UNKNOWN};
	const int order[5] = {4, 0, 3, 1, 2};

	for (int i = 0; i < 5; i++) {
		k[i] = plain_kernel(starts[i],
				    starts[i] == CS_TS_UNKNOWN ? 8000000000LL : starts[i] + 1500);
		k[i].pid = 4000000;
		k[i].launch_tid = 4000000 + i;
		k[i].launch_start = 500 + i;
		k[i].launch_end = 900 + i;
		k[i].correlation_id = 10 + i;
	}
	k[1].end = CS_TS_UNKNOWN;	   /* start known, end not */
	k[2].launch_start = CS_TS_UNKNOWN; /* launch end known, its start not */
	k[2].queued = 9000400000LL;	   /* late columns on one row */
	k[2].submitted = 9000450000LL;
	k[2].graph_id = 3;
	k[2].stack_id = 5;
	k[3].launch_end = CS_TS_UNKNOWN;
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(cs_writer_add_kernel(w, &k[i]), CS_OK);
	finish_writer(w);

	t = open_trace(path);
	ck_assert_int_eq(cs_iter_open(t, CS_EV_KERNEL, NULL, &it, &err), CS_OK);
	for (int j = 0; j < 5; j++) {
		const cs_kernel *want = &k[order[j]];

		ck_assert_int_eq(cs_iter_next(it, &ev), 1);
		ck_assert_int_eq(ev.u.kernel.correlation_id, want->correlation_id);
		ck_assert_int_eq(ev.u.kernel.start, want->start);
		ck_assert_int_eq(ev.u.kernel.end, want->end);
		ck_assert_int_eq(ev.u.kernel.launch_start, want->launch_start);
		ck_assert_int_eq(ev.u.kernel.launch_end, want->launch_end);
		ck_assert_int_eq(ev.u.kernel.launch_tid, want->launch_tid);
		ck_assert_int_eq(ev.u.kernel.queued, want->queued);
		ck_assert_int_eq(ev.u.kernel.submitted, want->submitted);
		ck_assert_int_eq(ev.u.kernel.graph_id, want->graph_id);
		ck_assert_int_eq(ev.u.kernel.stack_id, want->stack_id);
	}
	ck_assert_int_eq(cs_iter_next(it, &ev), 0);
	cs_iter_close(it);
	cs_trace_close(t);
	/* stored: relative where the base is known, as written where it is not */
	ck_assert_int_eq(sql_int(path, "SELECT endRel FROM CUPTI_ACTIVITY_KIND_KERNEL_DATA "
				       "WHERE correlationId = 14"),
			 8000000000LL);
	ck_assert_int_eq(sql_int(path, "SELECT endRel FROM CUPTI_ACTIVITY_KIND_KERNEL_DATA "
				       "WHERE correlationId = 10"),
			 1500);
	ck_assert_int_eq(sql_int(path, "SELECT launchTidRel FROM CUPTI_ACTIVITY_KIND_KERNEL_DATA "
				       "WHERE correlationId = 13"),
			 3);
	/* the view answers SQL the way version 1's table did */
	ck_assert_int_eq(sql_int(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE "
				       "launchEnd = 902 AND launchStart IS NULL AND queued = "
				       "9000400000 AND graphId = 3 AND rowid = 5"),
			 1);
	free(path);

	/*
	 * The late columns take 5 bytes of record header and 4 of values in a row that has them
	 * (NULLs included up to the last), none in one that does not; one row that has them costs
	 * that row's bytes, not a byte on every row (it is rewritten with them), and when every row
	 * has them they are stored inline from the start.
	 */
	off_t none = kernels_file_size(20000, pick_none), one = kernels_file_size(20000, pick_one),
	      all = kernels_file_size(20000, pick_all);
	ck_assert_msg(all - none >= 20000 * 7, "%lld against %lld bytes", (long long)all,
		      (long long)none);
	ck_assert_msg(one - none <= 4096, "%lld against %lld bytes", (long long)one,
		      (long long)none);
}
END_TEST

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * What a trace says the program did, without its times, ids and addresses: one sorted line per
 * event. Two recordings of the deterministic samples/cuda/counts.cu give the same text.
 */
static char *trace_signature(const char *path)
{
	cs_trace *t = open_trace(path);
	cs_strbuf out = CS_STRBUF_INIT;
	cs_error err = {0};
	char *text;

	for (int kind = 0; kind < CS_EV_COUNT; kind++) {
		cs_iter *it;
		cs_event ev;
		char **lines = NULL;
		size_t n = 0, cap = 0;

		ck_assert_int_eq(cs_iter_open(t, kind, NULL, &it, &err), CS_OK);
		while (cs_iter_next(it, &ev) == 1) {
			char line[512];
			const cs_kernel *k = &ev.u.kernel;
			const cs_memcpy *c = &ev.u.memcpy;
			const cs_memset *m = &ev.u.memset;
			const cs_memory *a = &ev.u.memory;
			const cs_sync *y = &ev.u.sync;
			const cs_nvtx *v = &ev.u.nvtx;

			switch (ev.kind) {
			case CS_EV_KERNEL:
				snprintf(line, sizeof(line),
					 "kernel %s %d %d %d launch %d %d graph %d", k->name,
					 k->grid_x, k->block_x, k->dynamic_shared_memory,
					 k->launch_cbid, k->launch_start != CS_TS_UNKNOWN,
					 k->graph_id != CS_ID_NONE);
				break;
			case CS_EV_MEMCPY:
				snprintf(line, sizeof(line), "memcpy %d %d %d %d %lld launch %d",
					 c->copy_kind, c->src_kind, c->dst_kind, c->is_async,
					 (long long)c->bytes, c->launch_cbid);
				break;
			case CS_EV_MEMSET:
				snprintf(line, sizeof(line), "memset %d %u %lld launch %d",
					 m->is_async, m->value, (long long)m->bytes,
					 m->launch_cbid);
				break;
			case CS_EV_MEMORY:
				snprintf(line, sizeof(line), "memory %d %d %d %d %lld", a->op,
					 a->mem_kind, a->result, a->cbid, (long long)a->bytes);
				break;
			case CS_EV_SYNC:
				snprintf(line, sizeof(line), "sync %d %d %d", y->type, y->cbid,
					 y->end != CS_TS_UNKNOWN);
				break;
			case CS_EV_NVTX:
				snprintf(line, sizeof(line), "nvtx %d %d %s %s %d", v->type,
					 v->depth, v->text ? v->text : "-",
					 v->domain ? v->domain : "-", v->end != CS_TS_UNKNOWN);
				break;
			default:
				snprintf(line, sizeof(line), "api %d %s", ev.u.api.cbid,
					 ev.u.api.name ? ev.u.api.name : "-");
			}
			if (n == cap) {
				cap = cap ? 2 * cap : 64;
				lines = realloc(lines, cap * sizeof(*lines));
				ck_assert_ptr_nonnull(lines);
			}
			lines[n++] = strdup(line);
		}
		cs_iter_close(it);
		if (n)
			qsort(lines, n, sizeof(*lines), cmp_str);
		for (size_t i = 0; i < n; i++) {
			cs_strbuf_printf(&out, "%s\n", lines[i]);
			free(lines[i]);
		}
		free(lines);
	}
	cs_trace_close(t);
	ck_assert(!out.failed);
	text = strdup(cs_strbuf_str(&out));
	cs_strbuf_free(&out);
	return text;
}

/*
 * A version 1 file (tests/data/v1/counts.db, recorded before version 2) is read as before, and says
 * what the version 2 recording of the same program (samples/traces/counts.db) says, event for
 * event; the one is a plain table, the other a view over stored offsets.
 */
START_TEST(test_reads_version_1)
{
	char *v1 = tu_path(tu_source_root(), "tests/data/v1/counts.db");
	char *v2 = tu_path(tu_source_root(), "samples/traces/counts.db");
	cs_trace *t1 = open_trace(v1), *t2 = open_trace(v2);
	char *s1, *s2;

	ck_assert_int_eq(cs_trace_schema_version(t1), 1);
	ck_assert_int_eq(cs_trace_schema_version(t2), 2);
	cs_trace_close(t1);
	cs_trace_close(t2);
	s1 = trace_signature(v1);
	s2 = trace_signature(v2);
	ck_assert_msg(strlen(s1) > 1000, "%zu bytes", strlen(s1));
	ck_assert_str_eq(s1, s2);
	ck_assert_int_eq(sql_int(v1, "SELECT count(*) FROM sqlite_master WHERE type = 'view'"), 0);
	ck_assert_int_eq(sql_int(v2, "SELECT count(*) FROM sqlite_master WHERE type = 'view'"),
			 CS_EV_COUNT);
	free(s1);
	free(s2);
	free(v1);
	free(v2);
}
END_TEST

static int count_graph_nodes(const int64_t *v, void *arg)
{
	int64_t *c = arg;

	c[0]++;
	c[1] += v[CS_COL_KERNEL_graphNodeId] == CS_ID_NONE;
	c[2] += v[CS_COL_KERNEL_gridX] > 0;
	return 0;
}

/*
 * A file written before a column was added to its table (here: a version 1 file without
 * graphNodeId) reads the column as missing, and every other value as it is.
 */
START_TEST(test_reads_a_file_without_a_column)
{
	char *v1 = tu_path(tu_source_root(), "tests/data/v1/counts.db");
	char *path = new_trace_path("old-columns.db"), *data;
	static const int cols[] = {CS_COL_KERNEL_graphNodeId, CS_COL_KERNEL_gridX};
	int64_t counts[3] = {0, 0, 0};
	cs_error err = {0};
	cs_trace *a, *b;
	cs_iter *ia, *ib;
	cs_event ea, eb;
	size_t len;
	int n = 0, rc;

	data = tu_read_file(v1, &len);
	ck_assert_ptr_nonnull(data);
	ck_assert_int_eq(tu_write_file(path, data, len), 0);
	free(data);
	sql_exec(path, "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN graphNodeId");
	a = open_trace(v1);
	b = open_trace(path);
	ck_assert_int_eq(cs_iter_open(a, CS_EV_KERNEL, NULL, &ia, &err), CS_OK);
	ck_assert_int_eq(cs_iter_open(b, CS_EV_KERNEL, NULL, &ib, &err), CS_OK);
	while ((rc = cs_iter_next(ia, &ea)) == 1) {
		ck_assert_int_eq(cs_iter_next(ib, &eb), 1);
		ck_assert_int_eq(eb.u.kernel.graph_node_id, CS_ID_NONE);
		eb.u.kernel.graph_node_id = ea.u.kernel.graph_node_id;
		check_kernel(&eb.u.kernel, &ea.u.kernel);
		n++;
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(cs_iter_next(ib, &eb), 0);
	ck_assert_int_gt(n, 0);
	cs_iter_close(ia);
	cs_iter_close(ib);
	ck_assert_int_eq(cs_trace_scan(b, CS_EV_KERNEL, cols, 2, count_graph_nodes, counts, &err),
			 CS_OK);
	ck_assert_int_eq(counts[0], n);
	ck_assert_int_eq(counts[1], n);
	ck_assert_int_eq(counts[2], n);
	cs_trace_close(a);
	cs_trace_close(b);
	free(path);
	free(v1);
}
END_TEST

/* ---- the timeline overview ---- */

/*
 * Kernels on two streams (one of them arriving out of time order) and host waits: the busy time
 * of each track summed over its bins is its kernel (wait) time, and its events are counted once.
 */
START_TEST(test_overview_busy)
{
	char *path = new_trace_path("overview.db");
	cs_trace_writer *w = open_writer(path);
	cs_trace *t;
	cs_overview *o = NULL;
	cs_error err = {0};
	int64_t kernel_ns[2] = {0, 0}, waits_ns = 0, nk[2] = {0, 0};
	unsigned seed = 3;
	int seen = 0;

	cs_writer_set_overview_min_events(w, 0); /* 3,050 events: below the default */
	for (int i = 0; i < 3000; i++) {
		int st = i % 3 == 0;
		/* stream 7 in time order, stream 9 backwards */
		int64_t start = st ? 1000 + (int64_t)(2999 - i) * 70000 : 5000 + (int64_t)i * 40000;
		cs_kernel k;

		seed = seed * 1103515245u + 12345u;
		k = plain_kernel(start, start + 1000 + (seed >> 8) % 30000);
		k.device_id = 0;
		k.stream_id = st ? 9 : 7;
		ck_assert_int_eq(cs_writer_add_kernel(w, &k), CS_OK);
		kernel_ns[st] += k.end - k.start;
		nk[st]++;
	}
	for (int i = 0; i < 50; i++) {
		cs_sync sy = full_sync();

		sy.start = 100000 + (int64_t)i * 2000000;
		sy.end = sy.start + 777777;
		sy.type = CS_SYNC_STREAM_SYNCHRONIZE;
		sy.stack_id = CS_ID_NONE;
		ck_assert_int_eq(cs_writer_add_sync(w, &sy), CS_OK);
		waits_ns += sy.end - sy.start;
	}
	finish_writer(w);

	t = open_trace(path);
	ck_assert_int_eq(cs_trace_read_overview(t, &o, &err), 0);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(o->nbins, 4096);
	ck_assert_int_gt(o->bin_ns, 0);
	for (int32_t i = 0; i < o->ntracks; i++) {
		const cs_overview_track *tr = &o->tracks[i];
		int64_t busy = 0, events = 0;

		for (int32_t b = 0; b < tr->nbins; b++) {
			ck_assert_int_ge(tr->bins[b].bin, b ? tr->bins[b - 1].bin + 1 : 0);
			ck_assert_int_lt(tr->bins[b].bin, o->nbins);
			busy += tr->bins[b].busy;
			events += tr->bins[b].events;
		}
		ck_assert_int_eq(busy, tr->busy);
		ck_assert_int_eq(events, tr->events);
		if (tr->kind == CS_OV_STREAM) {
			int st = tr->stream_id == 9;

			ck_assert_int_eq(tr->pid, 100);
			ck_assert_int_eq(tr->device_id, 0);
			ck_assert_msg(busy == kernel_ns[st], "stream %lld: busy %lld, kernels %lld",
				      (long long)tr->stream_id, (long long)busy,
				      (long long)kernel_ns[st]);
			ck_assert_int_eq(events, nk[st]);
			seen |= 1 << st;
		} else {
			ck_assert_int_eq(tr->kind, CS_OV_WAITS);
			ck_assert_int_eq(busy, waits_ns);
			ck_assert_int_eq(events, 50);
			seen |= 4;
		}
	}
	ck_assert_int_eq(seen, 7);
	ck_assert_int_eq(o->ntracks, 3);
	cs_overview_free(o);
	cs_trace_close(t);
	free(path);
}
END_TEST

/*
 * Overview rows that disagree with the tracks' bin counts (a track id 0.5 or a blob, which the
 * count per track does not see but a plain integer read takes for track 0; the same bin twice; a
 * bin past the last; negative busy time): the overview is refused as damaged, and the fill never
 * writes past the bins allocated (this crashed, or failed under AddressSanitizer, before).
 */
START_TEST(test_overview_hostile)
{
	static const char *const crafted[] = {
		/* 4096 rows of track 0.5 after track 0's own */
		"WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 4095) "
		"INSERT INTO TIMELINE_OVERVIEW SELECT 0.5, i, 1, 1 FROM n",
		"WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 4095) "
		"INSERT INTO TIMELINE_OVERVIEW SELECT x'00', i, 1, 1 FROM n",
		"INSERT INTO TIMELINE_OVERVIEW VALUES ('0.5', 7, 1, 1)",
		"INSERT INTO TIMELINE_OVERVIEW VALUES (0, 1.5, 1, 1)",
		"UPDATE TIMELINE_OVERVIEW SET trackId = 0.25",
		/* the same bin twice: a table without the primary key */
		"CREATE TABLE ov AS SELECT * FROM TIMELINE_OVERVIEW; DROP TABLE TIMELINE_OVERVIEW; "
		"CREATE TABLE TIMELINE_OVERVIEW(trackId, bin, busy, events); "
		"INSERT INTO TIMELINE_OVERVIEW SELECT * FROM ov; "
		"INSERT INTO TIMELINE_OVERVIEW SELECT * FROM ov",
		"UPDATE TIMELINE_OVERVIEW SET bin = bin + 4096",
		"UPDATE TIMELINE_OVERVIEW SET busy = -1",
		"UPDATE TIMELINE_OVERVIEW SET events = 1 << 62",
		"UPDATE META SET value = '4611686018427387904' WHERE key = 'overview_bin_ns'",
	};
	char *path = new_trace_path("ov_hostile.db"), *copy = new_trace_path("ov_crafted.db");
	cs_trace_writer *w = open_writer(path);
	cs_overview *o = NULL;
	cs_error err = {0};
	cs_trace *t;
	size_t len;
	char *bytes;

	cs_writer_set_overview_min_events(w, 0);
	for (int i = 0; i < 100; i++) {
		cs_kernel k = plain_kernel(1000 + (int64_t)i * 5000, 3000 + (int64_t)i * 5000);

		k.stream_id = 7;
		ck_assert_int_eq(cs_writer_add_kernel(w, &k), CS_OK);
	}
	finish_writer(w);
	t = open_trace(path);
	ck_assert_int_eq(cs_trace_read_overview(t, &o, &err), 0);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(o->ntracks, 1);
	ck_assert_int_gt(o->tracks[0].nbins, 100); /* each kernel spans several bins */
	cs_overview_free(o);
	cs_trace_close(t);
	bytes = tu_read_file(path, &len);
	ck_assert_ptr_nonnull(bytes);

	for (size_t i = 0; i < sizeof(crafted) / sizeof(crafted[0]); i++) {
		ck_assert_int_eq(tu_write_file(copy, bytes, len), 0);
		sql_exec(copy, crafted[i]);
		t = open_trace(copy);
		o = (cs_overview *)1;
		memset(&err, 0, sizeof(err));
		ck_assert_msg(cs_trace_read_overview(t, &o, &err) == CS_ERR_CORRUPT,
			      "crafted overview %zu read", i);
		ck_assert_ptr_null(o);
		ck_assert_msg(strstr(err.msg, "inconsistent timeline overview"), "%s", err.msg);
		cs_trace_close(t);
	}
	free(bytes);
	free(copy);
	free(path);
}
END_TEST

/*
 * A kernel view that joins its table with itself four times (200^4 rows) keeps the row count and
 * last rowid of the table, so the file opens; reading the kernels then stops at the work limit
 * within seconds (CS_ERR_NOT_TRACE), and the next query runs with a limit of its own.
 */
START_TEST(test_work_limit)
{
	char *path = new_trace_path("joined.db");
	cs_trace_writer *w = open_writer(path);
	cs_strbuf sql = CS_STRBUF_INIT;
	const char *c = "start,end,queued,submitted,launchStart,launchEnd,pid,launchTid,launchCbid,"
			"launchApiKind,deviceId,contextId,streamId,correlationId,gridX,gridY,gridZ,"
			"blockX,blockY,blockZ,registersPerThread,staticSharedMemory,"
			"dynamicSharedMemory,graphId,graphNodeId,nameId,stackId";
	cs_trace_summary sum;
	cs_error err = {0};
	cs_iter *it = NULL;
	cs_event ev;
	cs_trace *t;
	time_t t0;
	int rc, n = 0;

	for (int i = 0; i < 200; i++) {
		cs_kernel k = plain_kernel(1000 + (int64_t)i * 5000, 3000 + (int64_t)i * 5000);

		ck_assert_int_eq(cs_writer_add_kernel(w, &k), CS_OK);
	}
	finish_writer(w);
	cs_strbuf_puts(&sql, "DROP VIEW CUPTI_ACTIVITY_KIND_KERNEL; CREATE VIEW "
			     "CUPTI_ACTIVITY_KIND_KERNEL AS SELECT a.rowid AS rowid");
	while (*c) {
		size_t len = strcspn(c, ",");

		cs_strbuf_printf(&sql, ", a.start AS %.*s", (int)len, c);
		c += len + (c[len] == ',');
	}
	cs_strbuf_puts(&sql,
		       " FROM CUPTI_ACTIVITY_KIND_KERNEL_DATA a, CUPTI_ACTIVITY_KIND_KERNEL_DATA "
		       "b, CUPTI_ACTIVITY_KIND_KERNEL_DATA c, CUPTI_ACTIVITY_KIND_KERNEL_DATA d");
	sql_exec(path, cs_strbuf_str(&sql));
	cs_strbuf_free(&sql);

	t = open_trace(path);
	t0 = time(NULL);
	ck_assert_int_eq(cs_iter_open(t, CS_EV_KERNEL, NULL, &it, &err), CS_OK);
	while ((rc = cs_iter_next(it, &ev)) > 0)
		n++;
	ck_assert_int_eq(rc, CS_ERR_NOT_TRACE);
	ck_assert_int_gt(n, 200); /* the rows of the join came, until the limit */
	ck_assert_int_lt(time(NULL) - t0, 20);
	cs_iter_close(it);
	/* the limit is per query: the next one runs */
	ck_assert_int_eq(cs_trace_get_summary(t, &sum, &err), CS_OK);
	ck_assert_int_eq(sum.counts[CS_EV_KERNEL], 200);
	cs_trace_close(t);
	free(path);
}
END_TEST

struct scan_starts {
	int64_t start[64];
	int n;
};

static int scan_start(const int64_t *v, void *arg)
{
	struct scan_starts *r = arg;

	if (r->n < 64)
		r->start[r->n] = v[CS_COL_KERNEL_start];
	r->n++;
	return 0;
}

/*
 * The bulk scan hands rows over in rowid order whatever the file's view does: through one step of
 * its aggregate when the view is read by one walk of its table in rowid order (a trace as written),
 * row by row through the ordered statement when the view sorts its rows itself.
 */
START_TEST(test_scan_order)
{
	char *path = new_trace_path("sorted_view.db");
	cs_trace_writer *w = open_writer(path);
	static const int cols[] = {CS_COL_KERNEL_start, CS_COL_KERNEL_end};
	struct scan_starts r;
	cs_error err = {0};
	cs_trace *t;

	for (int i = 0; i < 50; i++) {
		cs_kernel k = plain_kernel(1000 + (int64_t)i * 5000, 3000 + (int64_t)i * 5000);

		ck_assert_int_eq(cs_writer_add_kernel(w, &k), CS_OK);
	}
	finish_writer(w);
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1)
			sql_exec(path, "DROP VIEW CUPTI_ACTIVITY_KIND_KERNEL; CREATE VIEW "
				       "CUPTI_ACTIVITY_KIND_KERNEL AS SELECT rowid AS rowid, start AS "
				       "start, start + endRel AS end FROM "
				       "CUPTI_ACTIVITY_KIND_KERNEL_DATA ORDER BY start DESC");
		t = open_trace(path);
		memset(&r, 0, sizeof(r));
		ck_assert_int_eq(cs_trace_scan(t, CS_EV_KERNEL, cols, 2, scan_start, &r, &err),
				 CS_OK);
		ck_assert_int_eq(r.n, 50);
		for (int i = 0; i < 50; i++)
			ck_assert_int_eq(r.start[i], 1000 + (int64_t)i * 5000);
		memset(&r, 0, sizeof(r));
		ck_assert_int_eq(cs_trace_scan_rows(t, CS_EV_KERNEL, 10, 20, cols, 2, scan_start, &r,
						    &err),
				 CS_OK);
		ck_assert_int_eq(r.n, 10);
		for (int i = 0; i < 10; i++)
			ck_assert_int_eq(r.start[i], 1000 + (int64_t)(i + 10) * 5000);
		cs_trace_close(t);
	}
	free(path);
}
END_TEST

/* One track the many-tracks test writes, and what the overview should say of it. */
struct ov_expect {
	int kind;
	uint32_t pid;
	int64_t a, b; /* device, stream; or tid, depth */
	int64_t events, busy;
	int seen;
};

static void ov_expect_add(struct ov_expect *e, int *n, int kind, uint32_t pid, int64_t a, int64_t b,
			  int64_t start, int64_t end)
{
	for (int i = 0; i < *n; i++) {
		if (e[i].kind == kind && e[i].pid == pid && e[i].a == a && e[i].b == b) {
			e[i].events++;
			e[i].busy += end - start; /* a track's events never overlap here */
			return;
		}
	}
	e[(*n)++] = (struct ov_expect){kind, pid, a, b, 1, end - start, 0};
}

/* Where a kernel, memcpy or memset of test_overview_many_tracks runs, and when. */
#define OV_ON_STREAM(ev)                                                         \
	((ev).start = start, (ev).end = end, (ev).pid = pid, (ev).device_id = d, \
	 (ev).stream_id = st)

/*
 * Hundreds of tracks of every kind (more than the 64 the writer's track array starts with, so that
 * it grows while the tables' last tracks are held), their events interleaved so that consecutive
 * rows are on different tracks: two pids, devices 0 and 1 with streams 0 to 39 each, host threads
 * 0 to 19 with waits, API calls and NVTX depths 0 to 2. Keys that share fields (tid 0 and device
 * 0, depth 1 and stream 1, the same tid in both pids) are still tracks of their own. Each track's
 * events and busy time are its own.
 */
START_TEST(test_overview_many_tracks)
{
	enum { PIDS = 2, DEVICES = 2, STREAMS = 40, TIDS = 20, DEPTHS = 3, ROUNDS = 5 };
	int max = PIDS * (DEVICES * STREAMS + TIDS * (2 + DEPTHS)), n = 0;
	struct ov_expect *e = calloc((size_t)max, sizeof(*e));
	char *path = new_trace_path("overview_tracks.db");
	cs_trace_writer *w = open_writer(path);
	cs_overview *o = NULL;
	cs_error err = {0};
	cs_trace *t;

	ck_assert_ptr_nonnull(e);
	cs_writer_set_overview_min_events(w, 0);
	for (int r = 0; r < ROUNDS; r++) {
		int64_t base = 1000000 + (int64_t)r * 10000000, j = 0;

		for (uint32_t pid = 100; pid < 100 + PIDS; pid++) {
			for (int d = 0; d < DEVICES; d++) {
				for (int st = 0; st < STREAMS; st++, j++) {
					int64_t start = base + j * 1000,
						end = start + 100 + j % 700;
					cs_kernel k = plain_kernel(start, end);
					cs_memcpy mc = full_memcpy(CS_ID_NONE);
					cs_memset ms = full_memset();
					int rc;

					/* a kernel, a copy or a memset, by turns */
					switch ((r + st) % 3) {
					case 0:
						OV_ON_STREAM(k);
						rc = cs_writer_add_kernel(w, &k);
						break;
					case 1:
						OV_ON_STREAM(mc);
						rc = cs_writer_add_memcpy(w, &mc);
						break;
					default:
						OV_ON_STREAM(ms);
						rc = cs_writer_add_memset(w, &ms);
						break;
					}
					ck_assert_int_eq(rc, CS_OK);
					ov_expect_add(e, &n, CS_OV_STREAM, pid, d, st, start, end);
				}
			}
			for (uint32_t tid = 0; tid < TIDS; tid++, j++) {
				int64_t start = base + j * 1000;
				cs_sync sy = full_sync();
				cs_api a = full_api(CS_ID_NONE);

				sy.start = start;
				sy.end = start + 300 + tid;
				sy.pid = pid;
				sy.tid = tid;
				sy.type = CS_SYNC_STREAM_SYNCHRONIZE;
				sy.stack_id = CS_ID_NONE;
				ck_assert_int_eq(cs_writer_add_sync(w, &sy), CS_OK);
				ov_expect_add(e, &n, CS_OV_WAITS, pid, tid, 0, sy.start, sy.end);
				a.start = start + 400;
				a.end = a.start + 200 + tid;
				a.pid = pid;
				a.tid = tid;
				a.stack_id = CS_ID_NONE;
				ck_assert_int_eq(cs_writer_add_api(w, &a), CS_OK);
				ov_expect_add(e, &n, CS_OV_API, pid, tid, 0, a.start, a.end);
				for (int depth = 0; depth < DEPTHS; depth++) {
					cs_nvtx nv = full_nvtx(CS_ID_NONE, CS_ID_NONE);

					nv.start = start + 100 * depth;
					nv.end = nv.start + 50 + depth;
					nv.pid = pid;
					nv.tid = nv.end_tid = tid;
					nv.depth = depth;
					ck_assert_int_eq(cs_writer_add_nvtx(w, &nv), CS_OK);
					ov_expect_add(e, &n, CS_OV_NVTX, pid, tid, depth, nv.start,
						      nv.end);
				}
			}
		}
	}
	finish_writer(w);
	ck_assert_int_eq(n, max);

	t = open_trace(path);
	ck_assert_int_eq(cs_trace_read_overview(t, &o, &err), 0);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(o->ntracks, n);
	for (int32_t i = 0; i < o->ntracks; i++) {
		const cs_overview_track *tr = &o->tracks[i];
		int gpu = tr->kind == CS_OV_STREAM;
		int64_t a = gpu ? tr->device_id : (int64_t)tr->tid,
			b = gpu ? tr->stream_id : tr->depth;
		int64_t busy = 0, events = 0;
		struct ov_expect *x = NULL;

		for (int k = 0; k < n && !x; k++)
			if (e[k].kind == tr->kind && e[k].pid == tr->pid && e[k].a == a &&
			    e[k].b == b)
				x = &e[k];
		ck_assert_msg(x, "unexpected track: kind %d pid %u %lld %lld", tr->kind, tr->pid,
			      (long long)a, (long long)b);
		ck_assert_int_eq(x->seen, 0);
		x->seen = 1;
		for (int32_t k = 0; k < tr->nbins; k++) {
			busy += tr->bins[k].busy;
			events += tr->bins[k].events;
		}
		ck_assert_msg(
			tr->events == x->events && tr->busy == x->busy,
			"kind %d pid %u %lld %lld: %lld events, busy %lld; expected %lld, %lld",
			tr->kind, tr->pid, (long long)a, (long long)b, (long long)tr->events,
			(long long)tr->busy, (long long)x->events, (long long)x->busy);
		ck_assert_int_eq(busy, x->busy);
		ck_assert_int_eq(events, x->events);
	}
	cs_overview_free(o);
	cs_trace_close(t);
	free(path);
	free(e);
}
END_TEST

/* A small trace gets no overview by default; one at the threshold does. */
START_TEST(test_overview_only_for_large_traces)
{
	for (int big = 0; big <= 1; big++) {
		char *path = new_trace_path(big ? "ov_big.db" : "ov_small.db");
		cs_trace_writer *w = open_writer(path);
		cs_overview *o = (cs_overview *)1;
		cs_error err = {0};
		cs_trace *t;
		int n = 1000;

		if (big)
			cs_writer_set_overview_min_events(w, n);
		for (int i = 0; i < n; i++) {
			cs_kernel k =
				plain_kernel(1000 + (int64_t)i * 5000, 3000 + (int64_t)i * 5000);

			ck_assert_int_eq(cs_writer_add_kernel(w, &k), CS_OK);
		}
		finish_writer(w);
		t = open_trace(path);
		ck_assert_int_eq(cs_trace_read_overview(t, &o, &err), 0);
		if (big) {
			ck_assert_ptr_nonnull(o);
			ck_assert_int_eq(o->ntracks, 1);
			ck_assert_int_eq(o->tracks[0].events, n);
			cs_overview_free(o);
		} else {
			ck_assert_ptr_null(o);
		}
		cs_trace_close(t);
		free(path);
	}
}
END_TEST

/* A trace written before the overview existed: none, and the rest reads as before. */
START_TEST(test_overview_absent)
{
	char *path = tu_path(tu_source_root(), "samples/traces/train_small.db");
	cs_trace *t = open_trace(path);
	cs_overview *o = (cs_overview *)1;
	cs_trace_summary sum;
	cs_error err = {0};

	ck_assert_int_eq(cs_trace_read_overview(t, &o, &err), 0);
	ck_assert_ptr_null(o);
	ck_assert_int_eq(cs_trace_get_summary(t, &sum, &err), 0);
	ck_assert_int_gt(sum.counts[CS_EV_KERNEL], 0);
	cs_trace_close(t);
	free(path);
}
END_TEST

/* ---- bad input at open ---- */

static void expect_open_error(const char *path, int code, const char *reason)
{
	cs_trace *t = (cs_trace *)1;
	cs_error err = {0};
	char expect[4200];

	ck_assert_int_eq(cs_trace_open(path, &t, &err), code);
	ck_assert_ptr_null(t);
	ck_assert_int_eq(err.code, code);
	snprintf(expect, sizeof(expect), "cannot open '%s': %s", path, reason);
	ck_assert_str_eq(err.msg, expect);
	ck_assert_ptr_null(strchr(err.msg, '\n'));
}

START_TEST(test_open_missing)
{
	char *path = new_trace_path("missing.db");

	expect_open_error(path, CS_ERR_NOT_FOUND, "no such file");
	free(path);
}
END_TEST

START_TEST(test_open_text_file)
{
	char *path = new_trace_path("text.db");
	const char *text = "this is not a database, just some text\nsecond line\n";

	ck_assert_int_eq(tu_write_file(path, text, strlen(text)), 0);
	expect_open_error(path, CS_ERR_NOT_SQLITE, "not a cuscope trace (not an SQLite database)");
	ck_assert_int_eq(tu_write_file(path, "x", 1), 0);
	expect_open_error(path, CS_ERR_NOT_SQLITE, "not a cuscope trace (not an SQLite database)");
	free(path);
}
END_TEST

START_TEST(test_open_empty_file)
{
	char *path = new_trace_path("empty.db");

	ck_assert_int_eq(tu_write_file(path, "", 0), 0);
	expect_open_error(path, CS_ERR_NOT_SQLITE, "not a cuscope trace (empty file)");
	free(path);
}
END_TEST

START_TEST(test_open_sqlite_without_meta)
{
	char *path = new_trace_path("other.db");

	sql_exec(path, "CREATE TABLE t(a INTEGER); INSERT INTO t VALUES(1)");
	expect_open_error(path, CS_ERR_NOT_TRACE, "not a cuscope trace (no META table)");
	sql_exec(path, "CREATE TABLE META(key TEXT PRIMARY KEY, value TEXT)");
	expect_open_error(path, CS_ERR_NOT_TRACE, "not a cuscope trace (no schema_version)");
	free(path);
}
END_TEST

START_TEST(test_open_newer_schema)
{
	char *path = new_trace_path("newer.db");
	cs_trace_writer *w = open_writer(path);

	finish_writer(w);
	sql_exec(path, "UPDATE META SET value = '3' WHERE key = 'schema_version'");
	expect_open_error(path, CS_ERR_NEWER_SCHEMA,
			  "written by a newer cuscope (schema 3, this build reads 2)");
	sql_exec(path, "UPDATE META SET value = 'abc' WHERE key = 'schema_version'");
	expect_open_error(path, CS_ERR_NOT_TRACE, "not a cuscope trace (bad schema_version 'abc')");
	free(path);
}
END_TEST

START_TEST(test_open_truncated)
{
	char *path = new_trace_path("cut.db");
	cs_trace_writer *w = open_writer(path);
	size_t len;
	char *data;

	for (int i = 0; i < 20000; i++) {
		cs_kernel k = plain_kernel(i * 100, i * 100 + 50);

		k.correlation_id = (uint64_t)i;
		ck_assert_int_eq(cs_writer_add_kernel(w, &k), CS_OK);
	}
	for (int i = 0; i < 2000; i++) {
		char s[32];

		snprintf(s, sizeof(s), "string %d", i);
		ck_assert_int_ge(cs_writer_intern(w, s), 0);
	}
	finish_writer(w);
	data = tu_read_file(path, &len);
	ck_assert_ptr_nonnull(data);
	ck_assert_int_gt(len, 100000);

	/* Half, and half rounded down to a whole page: both are caught at open. */
	ck_assert_int_eq(tu_write_file(path, data, len / 2), 0);
	expect_open_error(path, CS_ERR_CORRUPT, "truncated or damaged file");
	ck_assert_int_eq(tu_write_file(path, data, len / 2 / 8192 * 8192), 0);
	expect_open_error(path, CS_ERR_CORRUPT, "truncated or damaged file");
	/* Only the header. */
	ck_assert_int_eq(tu_write_file(path, data, 60), 0);
	expect_open_error(path, CS_ERR_CORRUPT, "truncated or damaged file");
	free(data);
	free(path);
}
END_TEST

START_TEST(test_open_missing_table)
{
	char *path = new_trace_path("damaged.db");
	cs_trace_writer *w = open_writer(path);

	finish_writer(w);
	sql_exec(path, "DROP VIEW NVTX_EVENTS");
	expect_open_error(path, CS_ERR_CORRUPT, "damaged file (table NVTX_EVENTS is missing)");
	free(path);
}
END_TEST

/*
 * Open a damaged file and read everything: each step either works or fails with a code. Returns the
 * number of failed reads, or -1 when the open itself refused the file.
 */
static int read_damaged(const char *path)
{
	cs_trace *t = NULL;
	cs_error err = {0};
	cs_trace_summary sum;
	int rc = cs_trace_open(path, &t, &err), failures = 0;

	if (rc) {
		ck_assert_int_lt(rc, 0);
		ck_assert_ptr_null(t);
		ck_assert_ptr_nonnull(strstr(err.msg, "cannot open"));
		return -1;
	}
	cs_trace_get_summary(t, &sum, &err);
	for (int k = 0; k < CS_EV_COUNT; k++) {
		cs_iter *it;
		cs_event ev;

		if (cs_iter_open(t, k, NULL, &it, &err)) {
			failures++;
			continue;
		}
		while ((rc = cs_iter_next(it, &ev)) == 1)
			;
		if (rc < 0)
			failures++;
		cs_iter_close(it);
	}
	cs_trace_close(t);
	return failures;
}

/* A file damaged in the middle (not truncated): never a crash, and the damage is reported. */
START_TEST(test_damaged_pages)
{
	char *path = new_trace_path("garbled.db");
	cs_trace_writer *w = open_writer(path);
	size_t len;
	char *data, *copy;

	for (int i = 0; i < 20000; i++) {
		cs_kernel k = plain_kernel(i * 100, i * 100 + 50);
		cs_api a = {.start = i * 100,
			    .end = i * 100 + 10,
			    .cbid = 1,
			    .name_id =
				    cs_writer_intern(w, i % 2 ? "cudaLaunchKernel" : "cudaMemcpy"),
			    .stack_id = CS_ID_NONE};

		ck_assert_int_eq(cs_writer_add_kernel(w, &k), CS_OK);
		ck_assert_int_eq(cs_writer_add_api(w, &a), CS_OK);
	}
	finish_writer(w);
	data = tu_read_file(path, &len);
	ck_assert_ptr_nonnull(data);
	copy = malloc(len);
	ck_assert_ptr_nonnull(copy);

	/* One page in the middle: the open's checks do not read it, the iteration does. */
	memcpy(copy, data, len);
	for (size_t i = 0; i < 8192; i++)
		copy[len / 2 / 8192 * 8192 + i] = (char)(i * 131 + 7);
	ck_assert_int_eq(tu_write_file(path, copy, len), 0);
	ck_assert_int_gt(read_damaged(path), 0);

	/* One page in seven, past the schema pages. */
	memcpy(copy, data, len);
	for (size_t off = 8192 * 3; off + 8192 <= len; off += 8192 * 7)
		for (size_t i = 0; i < 8192; i++)
			copy[off + i] = (char)(i * 131 + 7);
	ck_assert_int_eq(tu_write_file(path, copy, len), 0);
	ck_assert_int_ne(read_damaged(path), 0);
	free(copy);
	free(data);
	free(path);
}
END_TEST

START_TEST(test_writer_bad_directory)
{
	char *dir = tu_tmpdir();
	char *path = tu_path(dir, "no/such/dir/x.db");
	cs_trace_writer *w = (cs_trace_writer *)1;
	cs_error err = {0};
	char expect[4200];

	ck_assert_int_eq(cs_writer_open(path, 0, &w, &err), CS_ERR_IO);
	ck_assert_ptr_null(w);
	snprintf(expect, sizeof(expect), "cannot create '%s': ", path);
	ck_assert_msg(strncmp(err.msg, expect, strlen(expect)) == 0, "%s", err.msg);
	ck_assert_int_eq(count_dir_entries(dir), 0);
	free(path);
	free(dir);
}
END_TEST

START_TEST(test_bad_arguments)
{
	cs_trace_writer *w = NULL;
	cs_trace *t = NULL;
	cs_error err = {0};

	ck_assert_int_eq(cs_writer_open(NULL, 0, &w, &err), CS_ERR_INVALID);
	ck_assert_int_eq(cs_trace_open(NULL, &t, &err), CS_ERR_INVALID);
	ck_assert_int_eq(cs_writer_add_kernel(NULL, NULL), CS_ERR_INVALID);
	ck_assert_int_eq(cs_writer_finish(NULL, &err), CS_ERR_INVALID);
	ck_assert_ptr_null(cs_trace_meta(NULL, "x"));
	ck_assert_ptr_null(cs_trace_string(NULL, 1));
	cs_trace_close(NULL);
	cs_iter_close(NULL);

	char *dir = tu_tmpdir();
	ck_assert_int_eq(cs_writer_open(dir, 1, &w, &err), CS_ERR_INVALID);
	ck_assert_int_eq(cs_trace_open(dir, &t, &err), CS_ERR_IO);
	free(dir);
}
END_TEST

static Suite *trace_suite(void)
{
	Suite *s = suite_create("trace");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_mem_count);
	tcase_add_test(tc, test_roundtrip_every_field);
	tcase_add_test(tc, test_event_clear);
	tcase_add_test(tc, test_column_info);
	tcase_add_test(tc, test_intern);
	tcase_add_test(tc, test_stack_dedup);
	tcase_add_test(tc, test_iter_order);
	tcase_add_test(tc, test_iter_filters);
	tcase_add_test(tc, test_iter_window_random);
	tcase_add_test(tc, test_summary);
	tcase_add_test(tc, test_abort_leaves_nothing);
	tcase_add_test(tc, test_finish_renames);
	tcase_add_test(tc, test_planted_links_not_followed);
	tcase_add_test(tc, test_overwrite);
	tcase_add_test(tc, test_kernel_size);
	tcase_add_test(tc, test_stored_layout);
	tcase_add_test(tc, test_reads_version_1);
	tcase_add_test(tc, test_reads_a_file_without_a_column);
	tcase_add_test(tc, test_overview_busy);
	tcase_add_test(tc, test_overview_absent);
	tcase_add_test(tc, test_overview_only_for_large_traces);
	tcase_add_test(tc, test_overview_many_tracks);
	tcase_add_test(tc, test_overview_hostile);
	tcase_add_test(tc, test_work_limit);
	tcase_add_test(tc, test_scan_order);
	tcase_add_test(tc, test_open_missing);
	tcase_add_test(tc, test_open_text_file);
	tcase_add_test(tc, test_open_empty_file);
	tcase_add_test(tc, test_open_sqlite_without_meta);
	tcase_add_test(tc, test_open_newer_schema);
	tcase_add_test(tc, test_open_truncated);
	tcase_add_test(tc, test_open_missing_table);
	tcase_add_test(tc, test_damaged_pages);
	tcase_add_test(tc, test_writer_bad_directory);
	tcase_add_test(tc, test_bad_arguments);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(trace_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
