/*
 * test_rules17.c - the sync-call rule on synthetic traces: an explicit synchronize that drains the
 * GPU every step (found, with its cost, stack and near-threshold info), one whose GPU stays busy
 * (not found), a synchronize after a device-to-host copy (d2h-sync's only, never both), a
 * synchronize right after a `.item()` (the idle is d2h-sync's), the caching allocator's wait
 * before releasing memory (the memory rules'), a synchronous memcpy (not an explicit wait), a
 * synchronize every 10th step (rare, cheap: silent) and a costly one every 10th step (found as a
 * rare pattern); and on the committed traces of samples/rules/traces and tests/data/corpus, where
 * no program calls a synchronize inside its steps (no finding).
 *
 * The rules run through the analysis API, as in test_rules.c.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/analyze.h"
#include "testutil.h"

#define PID 4242
#define TID 4242
#define US  1000LL
#define MS  1000000LL
#define MIB (1024LL * 1024)
#define GIB (1024LL * MIB)

static char *tmp_dir;

/* ---- running a rule ---- */

struct found {
	cs_report_finding v[8];
	int n;
};

static int collect(cs_rule_ctx *ctx, cs_report_finding *f)
{
	struct found *c = ctx->priv;

	ck_assert_int_lt(c->n, 8);
	c->v[c->n] = *f;
	f->title = f->fix = NULL;
	f->steps = NULL;
	f->nsteps = 0;
	f->evidence = NULL;
	c->n++;
	return 0;
}

static void found_free(struct found *c)
{
	for (int i = 0; i < c->n; i++) {
		free(c->v[i].title);
		free(c->v[i].fix);
		free(c->v[i].steps);
		cJSON_Delete(c->v[i].evidence);
	}
	c->n = 0;
}

struct loaded {
	cs_trace *t;
	cs_analysis a;
	cs_steps s;
	int64_t median;
};

static void load(struct loaded *l, const char *path, const cs_step_opts *o)
{
	cs_error err = {0, ""};
	int64_t p10, p90;

	ck_assert_msg(cs_trace_open(path, &l->t, &err) == 0, "open %s: %s", path, err.msg);
	ck_assert_msg(cs_analysis_load(l->t, &l->a, &err) == 0, "load %s: %s", path, err.msg);
	ck_assert_msg(cs_steps_detect(&l->a, o, &l->s, &err) == 0, "steps %s: %s", path, err.msg);
	cs_steps_duration_stats(&l->s, &l->median, &p10, &p90);
}

static void unload(struct loaded *l)
{
	cs_steps_free(&l->s);
	cs_analysis_free(&l->a);
	cs_trace_close(l->t);
}

static void run_rule(struct loaded *l, const char *id, struct found *out)
{
	const cs_analyzer *r = cs_analyzer_find(id);
	cs_rule_ctx ctx;
	cs_error err = {0, ""};

	ck_assert_msg(r != NULL, "no rule %s", id);
	memset(out, 0, sizeof(*out));
	memset(&ctx, 0, sizeof(ctx));
	ctx.a = &l->a;
	ctx.steps = &l->s;
	ctx.step_median = l->median;
	ctx.emit = collect;
	ctx.priv = out;
	ck_assert_msg(r->run(&ctx, &err) == 0, "rule %s: %s", id, err.msg);
	for (int i = 0; i < out->n; i++) {
		const cs_report_finding *f = &out->v[i];

		ck_assert_str_eq(f->rule, id);
		ck_assert(f->severity >= CS_SEV_INFO && f->severity <= CS_SEV_ERROR);
		ck_assert(f->title && f->title[0] && f->fix && f->fix[0]);
		ck_assert(cJSON_IsObject(f->evidence));
		ck_assert(f->lost_ns_per_step >= 0);
		/* findings are about steady-state steps only */
		for (int32_t j = 0; j < f->nsteps; j++) {
			ck_assert(f->steps[j] >= 0 && f->steps[j] < l->s.n);
			ck_assert_msg(!l->s.v[f->steps[j]].warmup, "%s: warm-up step %d", id,
				      f->steps[j]);
		}
	}
}

/* ---- synthetic traces ---- */

/*
 * A small simulator of one process: a host clock and, per stream, the end of the GPU work queued
 * on it. Launches take launch_ns of host time; GPU work starts after its launch and after the
 * stream's previous work. Steps are NVTX ranges named "step".
 */
struct sim {
	cs_trace_writer *w;
	char *path;
	int64_t h;     /* host time */
	int64_t g[16]; /* per stream: end of its GPU work */
	uint64_t corr;
	int64_t step_start;
	int64_t step_text;
	int64_t addr;
	int64_t launch_ns;
	int64_t mem_stack; /* stack of the memory rows written */
	int mem_kind;	   /* of the memory rows written; 0: device */
};

static int64_t name_id(struct sim *m, const char *name)
{
	int64_t id = cs_writer_intern(m->w, name);

	ck_assert(id >= 0);
	return id;
}

static void sim_open(struct sim *m, const char *file)
{
	cs_error err = {0, ""};
	cs_process p;
	cs_device d;

	memset(m, 0, sizeof(*m));
	m->path = tu_path(tmp_dir, file);
	ck_assert_msg(cs_writer_open(m->path, 1, &m->w, &err) == 0, "writer: %s", err.msg);
	memset(&p, 0, sizeof(p));
	p.pid = PID;
	p.start = p.end = CS_TS_UNKNOWN;
	p.rank = p.local_rank = p.world_size = CS_ID_NONE;
	p.exit_code = 0;
	p.used_cuda = 1;
	ck_assert_int_eq(cs_writer_add_process(m->w, &p), 0);
	memset(&d, 0, sizeof(d));
	d.pid = PID;
	d.uuid = "GPU-00000000-0000-0000-0000-000000000000";
	d.name = "Test GPU";
	d.total_memory = 80 * GIB;
	d.sm_count = 132;
	d.compute_major = 9;
	ck_assert_int_eq(cs_writer_add_device(m->w, &d), 0);
	m->h = 1 * MS;
	m->step_text = name_id(m, "step");
	m->addr = 0x7f0000000000LL;
	m->launch_ns = 5 * US;
	m->mem_stack = CS_ID_NONE;
}

static void sim_finish(struct sim *m)
{
	cs_error err = {0, ""};

	ck_assert_msg(cs_writer_finish(m->w, &err) == 0, "finish: %s", err.msg);
}

static int64_t gpu_end(const struct sim *m)
{
	int64_t e = 0;

	for (int i = 0; i < 16; i++)
		if (m->g[i] > e)
			e = m->g[i];
	return e;
}

static void sim_host(struct sim *m, int64_t ns)
{
	m->h += ns;
}

/* Start of GPU work launched now on a stream: after the launch and after the stream's work. */
static int64_t next_start(struct sim *m, int stream)
{
	int64_t s = m->h + m->launch_ns + 1 * US;

	return s > m->g[stream] + 1 * US ? s : m->g[stream] + 1 * US;
}

static void sim_kernel_named(struct sim *m, int stream, int64_t name, int64_t dur)
{
	cs_kernel k;

	memset(&k, 0, sizeof(k));
	k.launch_start = m->h;
	k.launch_end = m->h + m->launch_ns;
	k.start = next_start(m, stream);
	k.end = k.start + dur;
	k.queued = k.submitted = CS_TS_UNKNOWN;
	k.pid = PID;
	k.launch_tid = TID;
	k.launch_cbid = CS_ID_NONE;
	k.stream_id = (uint32_t)stream;
	k.correlation_id = ++m->corr;
	k.grid_x = 64;
	k.grid_y = k.grid_z = 1;
	k.block_x = 256;
	k.block_y = k.block_z = 1;
	k.graph_id = k.graph_node_id = CS_ID_NONE;
	k.name_id = name;
	k.stack_id = CS_ID_NONE;
	ck_assert_int_eq(cs_writer_add_kernel(m->w, &k), 0);
	m->g[stream] = k.end;
	m->h = k.launch_end;
}

static void sim_kernel(struct sim *m, int stream, int64_t dur)
{
	sim_kernel_named(m, stream, name_id(m, "_ZN2at6native18elementwise_kernelEv"), dur);
}

/* A device-to-host copy into pinned memory (async) or pageable memory (a synchronous memcpy). */
static void sim_d2h(struct sim *m, int stream, int64_t bytes, int async, int64_t stack)
{
	cs_memcpy c;

	memset(&c, 0, sizeof(c));
	c.launch_start = m->h;
	c.launch_end = m->h + m->launch_ns;
	c.start = next_start(m, stream);
	c.end = c.start + 2 * US;
	c.pid = PID;
	c.launch_tid = TID;
	c.launch_cbid = CS_ID_NONE;
	c.stream_id = (uint32_t)stream;
	c.correlation_id = ++m->corr;
	c.copy_kind = CS_COPY_DTOH;
	c.src_kind = CS_MEM_DEVICE;
	c.dst_kind = async ? CS_MEM_PINNED : CS_MEM_PAGEABLE;
	c.is_async = async;
	c.src_device_id = c.dst_device_id = CS_ID_NONE;
	c.bytes = bytes;
	c.graph_id = c.graph_node_id = CS_ID_NONE;
	c.stack_id = stack;
	m->g[stream] = c.end;
	if (!async) {
		/* the host waits in the memcpy call until the copy is done: a sync row of its own
		 */
		cs_sync y;

		c.launch_end = c.end + 2 * US;
		memset(&y, 0, sizeof(y));
		y.start = c.launch_start;
		y.end = c.launch_end;
		y.pid = PID;
		y.tid = TID;
		y.stream_id = stream;
		y.event_id = CS_ID_NONE;
		y.type = CS_SYNC_MEMCPY;
		y.cbid = CS_ID_NONE;
		y.api_kind = CS_API_RUNTIME;
		y.stack_id = stack;
		ck_assert_int_eq(cs_writer_add_sync(m->w, &y), 0);
	}
	ck_assert_int_eq(cs_writer_add_memcpy(m->w, &c), 0);
	m->h = c.launch_end;
}

/*
 * A host-to-device copy on a stream: from pinned memory, launched asynchronously; or from
 * pageable memory, a call that holds the host for hold_ns while the driver stages the data, then
 * waits for the copy (a sync row of its own, as sim_d2h).
 */
static void sim_h2d(struct sim *m, int stream, int64_t bytes, int pageable, int64_t hold_ns)
{
	cs_memcpy c;

	memset(&c, 0, sizeof(c));
	c.launch_start = m->h;
	c.launch_end = m->h + m->launch_ns;
	c.start = next_start(m, stream);
	if (pageable && c.start < m->h + hold_ns)
		c.start = m->h + hold_ns;
	c.end = c.start + 2 * US;
	c.pid = PID;
	c.launch_tid = TID;
	c.launch_cbid = CS_ID_NONE;
	c.stream_id = (uint32_t)stream;
	c.correlation_id = ++m->corr;
	c.copy_kind = CS_COPY_HTOD;
	c.src_kind = pageable ? CS_MEM_PAGEABLE : CS_MEM_PINNED;
	c.dst_kind = CS_MEM_DEVICE;
	c.is_async = !pageable;
	c.src_device_id = c.dst_device_id = CS_ID_NONE;
	c.bytes = bytes;
	c.graph_id = c.graph_node_id = CS_ID_NONE;
	c.stack_id = CS_ID_NONE;
	m->g[stream] = c.end;
	if (pageable) {
		cs_sync y;

		c.launch_end = c.end + 2 * US;
		memset(&y, 0, sizeof(y));
		y.start = c.launch_start;
		y.end = c.launch_end;
		y.pid = PID;
		y.tid = TID;
		y.stream_id = stream;
		y.event_id = CS_ID_NONE;
		y.type = CS_SYNC_MEMCPY;
		y.cbid = CS_ID_NONE;
		y.api_kind = CS_API_RUNTIME;
		y.stack_id = CS_ID_NONE;
		ck_assert_int_eq(cs_writer_add_sync(m->w, &y), 0);
	}
	ck_assert_int_eq(cs_writer_add_memcpy(m->w, &c), 0);
	m->h = c.launch_end;
}

/*
 * A sync row. Host waits (stream/context/event synchronize) last until until (the GPU work they
 * wait for is done); queries and stream-wait-event take a few microseconds of host time.
 */
static void sim_sync(struct sim *m, int type, int stream, int64_t until, int64_t stack)
{
	cs_sync y;

	memset(&y, 0, sizeof(y));
	y.start = m->h;
	y.end = cs_sync_type_is_host_wait(type) && until > m->h ? until + 3 * US : m->h + 2 * US;
	y.pid = PID;
	y.tid = TID;
	y.stream_id = stream;
	y.event_id = type == CS_SYNC_STREAM_SYNCHRONIZE ? CS_ID_NONE : 3;
	y.type = type;
	y.cbid = CS_ID_NONE;
	y.api_kind = CS_API_RUNTIME;
	y.stack_id = stack;
	ck_assert_int_eq(cs_writer_add_sync(m->w, &y), 0);
	m->h = y.end + 1 * US;
}

/*
 * An allocator call (API row and memory row) named after its op (cudaMalloc, cudaFree,
 * cuMemCreate, cuMemRelease); with wait, it waits for the GPU first, as cudaFree does.
 */
static void sim_mem_call(struct sim *m, int op, int64_t bytes, int64_t address, int result,
			 int64_t api_ns, int wait)
{
	int is_free = op == CS_MEMOP_FREE || op == CS_MEMOP_VMM_RELEASE;
	const char *name = op == CS_MEMOP_VMM_CREATE	? "cuMemCreate"
			   : op == CS_MEMOP_VMM_RELEASE ? "cuMemRelease"
			   : is_free			? "cudaFree_v3020"
							: "cudaMalloc_v3020";
	cs_api x;
	cs_memory r;

	memset(&x, 0, sizeof(x));
	x.start = m->h;
	x.end = m->h + api_ns;
	if (wait && gpu_end(m) + api_ns > x.end)
		x.end = gpu_end(m) + api_ns;
	x.pid = PID;
	x.tid = TID;
	x.api_kind = CS_API_RUNTIME;
	x.cbid = is_free ? 22 : 20;
	x.correlation_id = ++m->corr;
	x.result = result;
	x.name_id = name_id(m, name);
	x.stack_id = CS_ID_NONE;
	ck_assert_int_eq(cs_writer_add_api(m->w, &x), 0);
	memset(&r, 0, sizeof(r));
	r.start = x.end - 1 * US;
	r.pid = PID;
	r.tid = TID;
	r.stream_id = CS_ID_NONE;
	r.correlation_id = x.correlation_id;
	r.op = op;
	r.mem_kind = m->mem_kind ? m->mem_kind : CS_MEM_DEVICE;
	r.result = result;
	r.cbid = x.cbid;
	r.address = (uint64_t)address;
	r.bytes = bytes;
	r.stack_id = m->mem_stack;
	ck_assert_int_eq(cs_writer_add_memory(m->w, &r), 0);
	m->h = x.end + 1 * US;
}

/* An allocator call; frees wait for the GPU first, as cudaFree does. */
static void sim_mem(struct sim *m, int op, int64_t bytes, int64_t address, int result,
		    int64_t api_ns)
{
	sim_mem_call(m, op, bytes, address, result, api_ns,
		     op == CS_MEMOP_FREE || op == CS_MEMOP_VMM_RELEASE);
}

static int64_t sim_alloc(struct sim *m, int64_t bytes)
{
	m->addr += 0x10000000;
	sim_mem(m, CS_MEMOP_ALLOC, bytes, m->addr, 0, 100 * US);
	return m->addr;
}

static void sim_step_begin(struct sim *m)
{
	m->step_start = m->h;
}

static void sim_step_end(struct sim *m)
{
	cs_nvtx n;

	memset(&n, 0, sizeof(n));
	n.start = m->step_start;
	n.end = m->h;
	n.pid = PID;
	n.tid = n.end_tid = TID;
	n.type = CS_NVTX_PUSHPOP;
	n.depth = 0;
	n.domain_id = CS_ID_NONE;
	n.text_id = m->step_text;
	n.range_id = CS_ID_NONE;
	ck_assert_int_eq(cs_writer_add_nvtx(m->w, &n), 0);
	sim_host(m, 10 * US);
}

/* Load a synthetic trace with its NVTX steps (2 of them warm-up) and run one rule on it. */
static void run_synthetic(struct sim *m, const char *id, struct found *f, struct loaded *l)
{
	cs_step_opts o = {"step", 2, 0};

	load(l, m->path, &o);
	ck_assert_int_eq(l->s.method, CS_STEPS_NVTX);
	run_rule(l, id, f);
}

/* How many rules of a synthetic trace found something; f keeps the findings of rule id. */
static int synthetic_count(struct sim *m, const char *id, struct found *f)
{
	struct loaded l;

	run_synthetic(m, id, f, &l);
	unload(&l);
	return f->n;
}

#define STEPS 20

/* A GPU-bound step: 40 kernels of 100 us queued far ahead of the GPU. */
static void busy_step(struct sim *m)
{
	for (int i = 0; i < 40; i++)
		sim_kernel(m, 7, 100 * US);
}

/* ---- d2h-sync ---- */

/* ---- sync-call ---- */

/* A step of the GPU-bound loop that ends with an explicit wait of type on stream 7 for all the
 * queued work, then host_ns of Python before the next launch. */
static void sync_step(struct sim *m, int type, int64_t host_ns, int64_t stack)
{
	sim_step_begin(m);
	busy_step(m);
	sim_sync(m, type, 7, gpu_end(m), stack);
	sim_host(m, host_ns);
	sim_kernel(m, 7, 100 * US);
	sim_step_end(m);
}

START_TEST(test_sync_call_drain)
{
	struct sim m;
	struct found f;
	struct loaded l;
	cs_frame fr = {2, 0, NULL, "train_step", 0, "train.py", 57};
	int64_t stack;
	cJSON *types, *ex;

	sim_open(&m, "sync_drain.db");
	stack = cs_writer_add_stack(m.w, &fr, 1);
	ck_assert(stack >= 0);
	for (int s = 0; s < STEPS; s++)
		sync_step(&m, CS_SYNC_CONTEXT_SYNCHRONIZE, 300 * US, stack);
	sim_finish(&m);
	run_synthetic(&m, "sync-call", &f, &l);
	ck_assert_int_eq(f.n, 1);
	ck_assert_int_eq(f.v[0].nsteps, STEPS - 2);
	ck_assert_int_eq(f.v[0].stack_id, stack);
	/* the 300 us of Python plus the launch, of a ~4.4 ms step */
	ck_assert_msg(f.v[0].lost_ns_per_step > 290 * US && f.v[0].lost_ns_per_step < 340 * US,
		      "lost %lld", (long long)f.v[0].lost_ns_per_step);
	ck_assert_int_eq(f.v[0].severity, CS_SEV_WARNING);
	ck_assert(strstr(f.v[0].title, "synchronize") != NULL);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(f.v[0].evidence, "near_threshold")));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(f.v[0].evidence, "recurring")));
	types = cJSON_GetObjectItem(f.v[0].evidence, "waits_by_type");
	ck_assert_int_eq(cJSON_GetObjectItem(types, "context_synchronize")->valueint, STEPS - 2);
	ex = cJSON_GetObjectItem(f.v[0].evidence, "costliest_wait");
	ck_assert(cJSON_IsObject(ex));
	ck_assert(cJSON_GetObjectItem(ex, "idle_ns")->valuedouble > 290 * US);
	ck_assert_int_eq(cJSON_GetObjectItem(f.v[0].evidence, "draining_waits_per_step")->valueint,
			 1);
	found_free(&f);
	/* no copy to wait for: not d2h-sync's */
	run_rule(&l, "d2h-sync", &f);
	ck_assert_int_eq(f.n, 0);
	unload(&l);
	free(m.path);
}
END_TEST

/* Stream and event synchronize are found alike. */
START_TEST(test_sync_call_stream_and_event)
{
	static const int types[] = {CS_SYNC_STREAM_SYNCHRONIZE, CS_SYNC_EVENT_SYNCHRONIZE};

	for (int t = 0; t < 2; t++) {
		struct sim m;
		struct found f;

		sim_open(&m, t ? "sync_event.db" : "sync_stream.db");
		for (int s = 0; s < STEPS; s++)
			sync_step(&m, types[t], 300 * US, CS_ID_NONE);
		sim_finish(&m);
		ck_assert_int_eq(synthetic_count(&m, "sync-call", &f), 1);
		ck_assert_int_eq(f.v[0].nsteps, STEPS - 2);
		found_free(&f);
		free(m.path);
	}
}
END_TEST

/* A wait for a short kernel on a side stream while the main stream's queue keeps the GPU busy:
 * nothing drained, no cost, however long the host then takes. */
START_TEST(test_sync_call_side_stream_busy)
{
	struct sim m;
	struct found f;

	sim_open(&m, "sync_side.db");
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		busy_step(&m);
		sim_kernel(&m, 8, 10 * US);
		sim_sync(&m, CS_SYNC_STREAM_SYNCHRONIZE, 8, m.g[8], CS_ID_NONE);
		sim_host(&m, 300 * US);
		sim_kernel(&m, 7, 100 * US);
		sim_step_end(&m);
	}
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "sync-call", &f), 0);
	free(m.path);
}
END_TEST

/* The wait of `.item()` (a device-to-host copy, then a stream synchronize) is d2h-sync's; followed
 * at once by a torch.cuda.synchronize(), the idle is still d2h-sync's alone. */
START_TEST(test_sync_call_not_d2h)
{
	for (int extra = 0; extra < 2; extra++) {
		struct sim m;
		struct found f;
		struct loaded l;

		sim_open(&m, extra ? "sync_item_then_sync.db" : "sync_item.db");
		for (int s = 0; s < STEPS; s++) {
			sim_step_begin(&m);
			busy_step(&m);
			sim_d2h(&m, 7, 4, 1, CS_ID_NONE);
			sim_sync(&m, CS_SYNC_STREAM_SYNCHRONIZE, 7, m.g[7], CS_ID_NONE);
			if (extra)
				sim_sync(&m, CS_SYNC_CONTEXT_SYNCHRONIZE, 7, gpu_end(&m),
					 CS_ID_NONE);
			sim_host(&m, 300 * US);
			sim_kernel(&m, 7, 100 * US);
			sim_step_end(&m);
		}
		sim_finish(&m);
		run_synthetic(&m, "d2h-sync", &f, &l);
		ck_assert_int_eq(f.n, 1);
		found_free(&f);
		run_rule(&l, "sync-call", &f);
		ck_assert_msg(f.n == 0, "extra %d: %s", extra, f.n ? f.v[0].title : "");
		unload(&l);
		free(m.path);
	}
}
END_TEST

/* A synchronize before the next step's device-to-host copy: the synchronize's idle is its own
 * (the copy is the next work), the copy's wait is d2h-sync's; both found, their costs apart. */
START_TEST(test_sync_call_then_item)
{
	struct sim m;
	struct found f, g;
	struct loaded l;

	sim_open(&m, "sync_then_item.db");
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		busy_step(&m);
		sim_sync(&m, CS_SYNC_CONTEXT_SYNCHRONIZE, 7, gpu_end(&m), CS_ID_NONE);
		sim_host(&m, 200 * US);
		sim_d2h(&m, 7, 4, 1, CS_ID_NONE);
		sim_sync(&m, CS_SYNC_STREAM_SYNCHRONIZE, 7, m.g[7], CS_ID_NONE);
		sim_host(&m, 300 * US);
		sim_kernel(&m, 7, 100 * US);
		sim_step_end(&m);
	}
	sim_finish(&m);
	run_synthetic(&m, "sync-call", &f, &l);
	run_rule(&l, "d2h-sync", &g);
	ck_assert_int_eq(f.n, 1);
	ck_assert_int_eq(g.n, 1);
	ck_assert_msg(f.v[0].lost_ns_per_step > 190 * US && f.v[0].lost_ns_per_step < 240 * US,
		      "sync-call lost %lld", (long long)f.v[0].lost_ns_per_step);
	ck_assert_msg(g.v[0].lost_ns_per_step > 290 * US && g.v[0].lost_ns_per_step < 340 * US,
		      "d2h-sync lost %lld", (long long)g.v[0].lost_ns_per_step);
	found_free(&f);
	found_free(&g);
	unload(&l);
	free(m.path);
}
END_TEST

/* The caching allocator's wait before it releases its cache (empty_cache(), a retry at the memory
 * ceiling): the memory rules', not an explicit synchronize. */
START_TEST(test_sync_call_allocator_wait)
{
	struct sim m;
	struct found f;

	sim_open(&m, "sync_allocator.db");
	for (int s = 0; s < STEPS; s++) {
		int64_t addr[4];

		sim_step_begin(&m);
		for (int i = 0; i < 4; i++)
			addr[i] = sim_alloc(&m, 64 * MIB);
		busy_step(&m);
		sim_sync(&m, CS_SYNC_EVENT_SYNCHRONIZE, 7, gpu_end(&m), CS_ID_NONE);
		for (int i = 0; i < 4; i++)
			sim_mem(&m, CS_MEMOP_FREE, 0, addr[i], 0, 50 * US);
		sim_host(&m, 100 * US);
		sim_kernel(&m, 7, 100 * US);
		sim_step_end(&m);
	}
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "sync-call", &f), 0);
	free(m.path);
}
END_TEST

/* A synchronous memcpy from pageable memory is a copy, not an explicit synchronize. */
START_TEST(test_sync_call_sync_memcpy)
{
	struct sim m;
	struct found f;

	sim_open(&m, "sync_memcpy.db");
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		busy_step(&m);
		sim_h2d(&m, 7, 4 * MIB, 1, 50 * US);
		sim_host(&m, 300 * US);
		sim_kernel(&m, 7, 100 * US);
		sim_step_end(&m);
	}
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "sync-call", &f), 0);
	free(m.path);
}
END_TEST

/* A synchronize every 10th step: cheap (300 us after it) it stays silent; followed by 20 ms of
 * host work (a checkpoint's bookkeeping) it is found as a pattern of a few steps. */
START_TEST(test_sync_call_every_tenth_step)
{
	for (int costly = 0; costly < 2; costly++) {
		struct sim m;
		struct found f;

		sim_open(&m, costly ? "sync_tenth_costly.db" : "sync_tenth.db");
		for (int s = 0; s < 32; s++) {
			if (s % 10 == 5) {
				sync_step(&m, CS_SYNC_CONTEXT_SYNCHRONIZE,
					  costly ? 20 * MS : 300 * US, CS_ID_NONE);
				continue;
			}
			sim_step_begin(&m);
			busy_step(&m);
			sim_kernel(&m, 7, 100 * US);
			sim_step_end(&m);
		}
		sim_finish(&m);
		ck_assert_int_eq(synthetic_count(&m, "sync-call", &f), costly);
		if (costly) {
			ck_assert_int_eq(f.v[0].nsteps, 3);
			ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(f.v[0].evidence, "recurring")));
			/* 3 x ~20 ms over 30 steady steps */
			ck_assert_msg(f.v[0].lost_ns_per_step > 1900 * US &&
					      f.v[0].lost_ns_per_step < 2200 * US,
				      "lost %lld", (long long)f.v[0].lost_ns_per_step);
			found_free(&f);
		}
		free(m.path);
	}
}
END_TEST

/* An idle after the wait of about 2% of the step, spread from step to step: the interval of the
 * median holds the threshold, and the finding is info with its margin. */
START_TEST(test_sync_call_near_threshold)
{
	struct sim m;
	struct found f;
	cJSON *e;

	sim_open(&m, "sync_near.db");
	for (int s = 0; s < 40; s++)
		sync_step(&m, CS_SYNC_CONTEXT_SYNCHRONIZE, (50 + (s * 37) % 70) * US, CS_ID_NONE);
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "sync-call", &f), 1);
	ck_assert_int_eq(f.v[0].severity, CS_SEV_INFO);
	e = f.v[0].evidence;
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(e, "near_threshold")));
	ck_assert(cJSON_GetObjectItem(e, "loss_share_low")->valuedouble < 0.02);
	ck_assert(cJSON_GetObjectItem(e, "loss_share_high")->valuedouble >= 0.02);
	ck_assert(strstr(f.v[0].title, "near the 2% threshold") != NULL);
	found_free(&f);
	free(m.path);
}
END_TEST

/* The committed traces: no program of samples/rules or of the corpus calls a synchronize inside
 * its steady steps (their synchronizes are in setup, after the warm-up and after the loop, or the
 * allocator's), so the rule finds nothing in any of them. */
START_TEST(test_sync_call_committed_traces)
{
	static const char *const dirs[] = {"samples/rules/traces", "tests/data/corpus"};
	int seen = 0;

	for (int d = 0; d < 2; d++) {
		char *dir = tu_source_file(dirs[d]);
		char cmd[4096];
		FILE *p;
		char line[1024];

		snprintf(cmd, sizeof(cmd), "ls '%s'/*.db", dir);
		p = popen(cmd, "r");
		ck_assert(p != NULL);
		while (fgets(line, sizeof(line), p)) {
			struct loaded l;
			struct found f;
			cs_step_opts o = {NULL, -1, 0};

			line[strcspn(line, "\n")] = 0;
			load(&l, line, &o);
			run_rule(&l, "sync-call", &f);
			if (strstr(line, "pt_sync_no_copy"))
				/* a torch.cuda.synchronize() every step: the rule's own pattern */
				ck_assert_msg(f.n == 1, "%s: %d findings", line, f.n);
			else
				ck_assert_msg(f.n == 0, "%s: %s", line, f.n ? f.v[0].title : "");
			found_free(&f);
			unload(&l);
			seen++;
		}
		pclose(p);
		free(dir);
	}
	ck_assert_int_ge(seen, 30);
}
END_TEST

static Suite *rules17_suite(void)
{
	Suite *s = suite_create("rules17");
	TCase *tc = tcase_create("sync-call");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_sync_call_drain);
	tcase_add_test(tc, test_sync_call_stream_and_event);
	tcase_add_test(tc, test_sync_call_side_stream_busy);
	tcase_add_test(tc, test_sync_call_not_d2h);
	tcase_add_test(tc, test_sync_call_then_item);
	tcase_add_test(tc, test_sync_call_allocator_wait);
	tcase_add_test(tc, test_sync_call_sync_memcpy);
	tcase_add_test(tc, test_sync_call_every_tenth_step);
	tcase_add_test(tc, test_sync_call_near_threshold);
	tcase_add_test(tc, test_sync_call_committed_traces);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	tmp_dir = tu_tmpdir();
	if (!tmp_dir) {
		fprintf(stderr, "test_rules17: cannot make a temporary directory\n");
		return 1;
	}
	sr = srunner_create(rules17_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
