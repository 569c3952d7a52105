/*
 * rulesim.c - running a rule on a trace, and the simulator of synthetic traces (rulesim.h).
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rulesim.h"
#include "testutil.h"

char *tmp_dir;

/* ---- running a rule ---- */

int collect(cs_rule_ctx *ctx, cs_report_finding *f)
{
	struct found *c = ctx->priv;

	ck_assert_int_lt(c->n, 8);
	c->v[c->n] = *f;
	f->title = f->fix = NULL;
	f->steps = NULL;
	f->nsteps = 0;
	f->evidence = NULL;
	f->edit = NULL;
	c->n++;
	return 0;
}

void found_free(struct found *c)
{
	for (int i = 0; i < c->n; i++) {
		free(c->v[i].title);
		free(c->v[i].fix);
		free(c->v[i].steps);
		cJSON_Delete(c->v[i].evidence);
		cs_edit_free(c->v[i].edit);
	}
	c->n = 0;
}

void load(struct loaded *l, const char *path, const cs_step_opts *o)
{
	cs_error err = {0, ""};
	int64_t p10, p90;

	ck_assert_msg(cs_trace_open(path, &l->t, &err) == 0, "open %s: %s", path, err.msg);
	ck_assert_msg(cs_analysis_load(l->t, &l->a, &err) == 0, "load %s: %s", path, err.msg);
	ck_assert_msg(cs_steps_detect(&l->a, o, &l->s, &err) == 0, "steps %s: %s", path, err.msg);
	cs_steps_duration_stats(&l->s, &l->median, &p10, &p90);
}

void unload(struct loaded *l)
{
	cs_steps_free(&l->s);
	cs_analysis_free(&l->a);
	cs_trace_close(l->t);
}

void run_rule(struct loaded *l, const char *id, struct found *out)
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
	ck_assert_msg(r->check(&ctx, &err) == 0, "rule %s: %s", id, err.msg);
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

int64_t name_id(struct sim *m, const char *name)
{
	int64_t id = cs_writer_intern(m->w, name);

	ck_assert(id >= 0);
	return id;
}

void sim_open_gpu(struct sim *m, const char *file, const cs_device *gpu)
{
	cs_error err = {0, ""};
	cs_process p;
	cs_device d = *gpu;

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
	d.pid = PID;
	ck_assert_int_eq(cs_writer_add_device(m->w, &d), 0);
	m->h = 1 * MS;
	m->step_text = name_id(m, "step");
	m->addr = 0x7f0000000000LL;
	m->launch_ns = 5 * US;
	m->mem_stack = CS_ID_NONE;
	m->kernel_stack = CS_ID_NONE;
	m->copy_stack = CS_ID_NONE;
}

void sim_open(struct sim *m, const char *file)
{
	cs_device d;

	memset(&d, 0, sizeof(d));
	d.uuid = "GPU-00000000-0000-0000-0000-000000000000";
	d.name = "Test GPU";
	d.total_memory = 80 * GIB;
	d.sm_count = 132;
	d.compute_major = 9;
	sim_open_gpu(m, file, &d);
}

void sim_finish(struct sim *m)
{
	cs_error err = {0, ""};

	ck_assert_msg(cs_writer_finish(m->w, &err) == 0, "finish: %s", err.msg);
}

int64_t gpu_end(const struct sim *m)
{
	int64_t e = 0;

	for (int i = 0; i < 16; i++)
		if (m->g[i] > e)
			e = m->g[i];
	return e;
}

void sim_host(struct sim *m, int64_t ns)
{
	m->h += ns;
}

/* Start of GPU work launched now on a stream: after the launch and after the stream's work. */
int64_t next_start(struct sim *m, int stream)
{
	int64_t s = m->h + m->launch_ns + 1 * US;

	return s > m->g[stream] + 1 * US ? s : m->g[stream] + 1 * US;
}

void sim_kernel_shaped(struct sim *m, int stream, int64_t name, int64_t blocks, int64_t threads,
		       int64_t dur)
{
	cs_kernel k;

	memset(&k, 0, sizeof(k));
	k.launch_start = m->h;
	k.launch_end = m->h + m->launch_ns;
	k.start = next_start(m, stream);
	k.end = k.start + dur;
	k.queued = k.submitted = CS_TS_UNKNOWN;
	k.pid = PID;
	k.launch_tid = m->kernel_tid ? m->kernel_tid : TID;
	k.launch_cbid = CS_ID_NONE;
	k.stream_id = (uint32_t)stream;
	k.correlation_id = ++m->corr;
	k.grid_x = (uint32_t)blocks;
	k.grid_y = k.grid_z = 1;
	k.block_x = (uint32_t)threads;
	k.block_y = k.block_z = 1;
	k.graph_id = k.graph_node_id = CS_ID_NONE;
	k.name_id = name;
	k.stack_id = m->kernel_stack;
	ck_assert_int_eq(cs_writer_add_kernel(m->w, &k), 0);
	m->g[stream] = k.end;
	m->h = k.launch_end;
}

void sim_kernel_named(struct sim *m, int stream, int64_t name, int64_t dur)
{
	sim_kernel_shaped(m, stream, name, 64, 256, dur);
}

void sim_kernel_grid(struct sim *m, int stream, const char *name, int64_t blocks, int64_t dur)
{
	sim_kernel_shaped(m, stream, name_id(m, name), blocks, 128, dur);
}

void sim_kernel(struct sim *m, int stream, int64_t dur)
{
	sim_kernel_named(m, stream, name_id(m, "_ZN2at6native18elementwise_kernelEv"), dur);
}

/* A sync row of type on stream over [start, end] made by thread TID with stack, for no event. */
static cs_sync sync_row(int type, int stream, int64_t start, int64_t end, int64_t stack)
{
	cs_sync y = tu_sync(PID, start, end);

	y.tid = TID;
	y.stream_id = stream;
	y.type = type;
	y.stack_id = stack;
	return y;
}

/* A device-to-host copy into pinned memory (async) or pageable memory (a synchronous memcpy). */
void sim_d2h(struct sim *m, int stream, int64_t bytes, int async, int64_t stack)
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
		y = sync_row(CS_SYNC_MEMCPY, stream, c.launch_start, c.launch_end, stack);
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
void sim_h2d(struct sim *m, int stream, int64_t bytes, int pageable, int64_t hold_ns)
{
	cs_memcpy c;

	memset(&c, 0, sizeof(c));
	c.launch_start = m->h;
	c.launch_end = m->h + m->launch_ns;
	c.start = next_start(m, stream);
	if (pageable && c.start < m->h + hold_ns)
		c.start = m->h + hold_ns;
	c.end = c.start + (m->h2d_ns > 0 ? m->h2d_ns : 2 * US);
	c.pid = PID;
	c.launch_tid = TID;
	c.launch_cbid = CS_ID_NONE;
	c.stream_id = (uint32_t)stream;
	c.correlation_id = ++m->corr;
	c.copy_kind = CS_COPY_HTOD;
	c.src_kind = pageable ? CS_MEM_PAGEABLE : CS_MEM_PINNED;
	c.dst_kind = CS_MEM_DEVICE;
	c.is_async = !pageable || m->h2d_async;
	c.src_device_id = c.dst_device_id = CS_ID_NONE;
	c.bytes = bytes;
	c.graph_id = c.graph_node_id = CS_ID_NONE;
	c.stack_id = m->copy_stack;
	m->g[stream] = c.end;
	if (pageable) {
		cs_sync y;

		c.launch_end = c.end + 2 * US;
		y = sync_row(CS_SYNC_MEMCPY, stream, c.launch_start, c.launch_end, CS_ID_NONE);
		ck_assert_int_eq(cs_writer_add_sync(m->w, &y), 0);
	}
	ck_assert_int_eq(cs_writer_add_memcpy(m->w, &c), 0);
	m->h = c.launch_end;
}

/* One launch of a CUDA graph of n kernels of dur each, which run back to back on a stream. */
void sim_graph_launch(struct sim *m, int stream, int n, int64_t dur)
{
	int64_t ls = m->h, le = m->h + m->launch_ns;

	for (int i = 0; i < n; i++) {
		cs_kernel k;

		memset(&k, 0, sizeof(k));
		k.launch_start = ls;
		k.launch_end = le;
		k.start = i == 0 ? next_start(m, stream) : m->g[stream] + 1 * US;
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
		k.graph_id = 1;
		k.graph_node_id = i;
		k.name_id = name_id(m, "_ZN2at6native18elementwise_kernelEv");
		k.stack_id = CS_ID_NONE;
		ck_assert_int_eq(cs_writer_add_kernel(m->w, &k), 0);
		m->g[stream] = k.end;
	}
	m->h = le;
}

/*
 * A sync row. Host waits (stream/context/event synchronize) last until until (the GPU work they
 * wait for is done); queries and stream-wait-event take a few microseconds of host time.
 */
void sim_sync(struct sim *m, int type, int stream, int64_t until, int64_t stack)
{
	int64_t end =
		cs_sync_type_is_host_wait(type) && until > m->h ? until + 3 * US : m->h + 2 * US;
	cs_sync y = sync_row(type, stream, m->h, end, stack);

	y.event_id = type == CS_SYNC_STREAM_SYNCHRONIZE ? CS_ID_NONE : 3;
	ck_assert_int_eq(cs_writer_add_sync(m->w, &y), 0);
	m->h = y.end + 1 * US;
}

/*
 * An allocator call (API row and memory row) named after its op (cudaMalloc, cudaFree,
 * cuMemCreate, cuMemRelease); with wait, it waits for the GPU first, as cudaFree does.
 */
void sim_mem_call(struct sim *m, int op, int64_t bytes, int64_t address, int result, int64_t api_ns,
		  int wait)
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
	x.stack_id = m->mem_stack; /* recorded at the call, as the memory row's */
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
void sim_mem(struct sim *m, int op, int64_t bytes, int64_t address, int result, int64_t api_ns)
{
	sim_mem_call(m, op, bytes, address, result, api_ns,
		     op == CS_MEMOP_FREE || op == CS_MEMOP_VMM_RELEASE);
}

int64_t sim_alloc(struct sim *m, int64_t bytes)
{
	m->addr += 0x10000000;
	sim_mem(m, CS_MEMOP_ALLOC, bytes, m->addr, 0, 100 * US);
	return m->addr;
}

void sim_step_begin(struct sim *m)
{
	m->step_start = m->h;
}

void sim_step_end(struct sim *m)
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
	n.range_id = n.payload_id = CS_ID_NONE;
	ck_assert_int_eq(cs_writer_add_nvtx(m->w, &n), 0);
	sim_host(m, 10 * US);
}

/* Load a synthetic trace with its NVTX steps (2 of them warm-up) and run one rule on it. */
void run_synthetic(struct sim *m, const char *id, struct found *f, struct loaded *l)
{
	cs_step_opts o = {"step", 2, 0, 0};

	load(l, m->path, &o);
	ck_assert_int_eq(l->s.method, CS_STEPS_NVTX);
	run_rule(l, id, f);
}

/* How many rules of a synthetic trace found something; f keeps the findings of rule id. */
int synthetic_count(struct sim *m, const char *id, struct found *f)
{
	struct loaded l;

	run_synthetic(m, id, f, &l);
	unload(&l);
	return f->n;
}

int64_t synthetic_saving(struct sim *m, const char *rule)
{
	const cs_analyzer *rules[] = {cs_analyzer_find(rule), NULL};
	cs_report rep = {0};
	cs_error err = {0, ""};
	cs_step_opts o = {"step", 2, 0, 0};
	struct loaded l;
	int64_t saving = -1;

	load(&l, m->path, &o);
	ck_assert_msg(cs_report_run(&l.a, &l.s, rules, &rep, &err) == 0, "%s", err.msg);
	for (int32_t i = 0; i < rep.n; i++)
		if (strcmp(rep.v[i]->rule, rule) == 0 && rep.v[i]->nsteps > 0)
			saving = rep.v[i]->saving_ns / rep.v[i]->nsteps;
	cs_report_free(&rep);
	unload(&l);
	return saving;
}

/* A GPU-bound step: 40 kernels of 100 us queued far ahead of the GPU. */
void busy_step(struct sim *m)
{
	for (int i = 0; i < 40; i++)
		sim_kernel(m, 7, 100 * US);
}

/* One query (cudaEventQuery / cudaStreamQuery) of the host with its result: 0 done, 600 not ready.
 */
void sim_query(struct sim *m, int type, int stream, int result)
{
	cs_sync y = sync_row(type, stream, m->h, m->h + 2 * US, CS_ID_NONE);

	y.event_id = 3;
	y.result = result;
	ck_assert_int_eq(cs_writer_add_sync(m->w, &y), 0);
	m->h = y.end + 1 * US;
}

void sim_api_row(struct sim *m, const char *name, int api_kind, int cbid, uint32_t tid, int64_t dur)
{
	cs_api x;

	memset(&x, 0, sizeof(x));
	x.start = m->h;
	x.end = m->h + dur;
	x.pid = PID;
	x.tid = tid;
	x.api_kind = api_kind;
	x.cbid = cbid;
	x.correlation_id = ++m->corr;
	x.name_id = name_id(m, name);
	x.stack_id = CS_ID_NONE;
	ck_assert_int_eq(cs_writer_add_api(m->w, &x), 0);
	m->h = x.end;
}

void sim_host_func(struct sim *m, uint32_t tid)
{
	sim_api_row(m, "cuLaunchHostFunc", CS_API_DRIVER, 527, tid, 1 * US);
}

int committed_traces_expect(const char *id, const cs_step_opts *opts, int (*own)(const char *name))
{
	static const char *const dirs[] = {"samples/rules/traces", "tests/data/corpus"};
	int seen = 0;

	for (int d = 0; d < 2; d++) {
		char *dir = tu_source_file(dirs[d]);
		DIR *dh = opendir(dir);
		struct dirent *de;

		ck_assert_msg(dh != NULL, "%s", dir);
		while ((de = readdir(dh))) {
			size_t len = strlen(de->d_name);
			char *path;
			struct loaded l;
			struct found f;
			int want;

			if (len < 4 || strcmp(de->d_name + len - 3, ".db"))
				continue;
			path = tu_path(dir, de->d_name);
			want = own ? own(de->d_name) : 0;
			load(&l, path, opts);
			run_rule(&l, id, &f);
			ck_assert_msg(f.n == want, "%s: %d findings, %d expected%s%s", de->d_name,
				      f.n, want, f.n ? ": " : "", f.n ? f.v[0].title : "");
			found_free(&f);
			unload(&l);
			free(path);
			seen++;
		}
		closedir(dh);
		free(dir);
	}
	return seen;
}

int sim_main(Suite *suite, const char *prog)
{
	SRunner *sr;
	int failed;

	tmp_dir = tu_tmpdir();
	if (!tmp_dir) {
		fprintf(stderr, "%s: cannot make a temporary directory\n", prog);
		return 1;
	}
	sr = srunner_create(suite);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

/* PyTorch's blocking copy of a pageable tensor from stack: a cudaMemcpyAsync of 4 MiB queued
 * behind the GPU's work, then a synchronize of its stream that waits for the whole queue. */
void sim_blocking_copy(struct sim *m, int64_t stack)
{
	cs_memcpy c;

	memset(&c, 0, sizeof(c));
	c.launch_start = m->h;
	c.launch_end = m->h + 20 * US;
	c.start = next_start(m, 7);
	c.end = c.start + 10 * US;
	c.pid = PID;
	c.launch_tid = TID;
	c.launch_cbid = CS_ID_NONE;
	c.stream_id = 7;
	c.correlation_id = ++m->corr;
	c.copy_kind = CS_COPY_HTOD;
	c.src_kind = CS_MEM_PAGEABLE;
	c.dst_kind = CS_MEM_DEVICE;
	c.is_async = 1;
	c.src_device_id = c.dst_device_id = CS_ID_NONE;
	c.bytes = 4 * MIB;
	c.graph_id = c.graph_node_id = CS_ID_NONE;
	c.stack_id = stack;
	ck_assert_int_eq(cs_writer_add_memcpy(m->w, &c), 0);
	m->g[7] = c.end;
	m->h = c.launch_end + 1 * US;
	sim_sync(m, CS_SYNC_STREAM_SYNCHRONIZE, 7, gpu_end(m), CS_ID_NONE);
}

/* ---- call sites (test_kernel_sites, test_call_sites) ---- */

/* Two lines of a program: st[0] model.py:10 (forward), st[1] model.py:20 (normalize). */
void sim_two_stacks(struct sim *m, int64_t *st)
{
	cs_frame a = {2, 0, NULL, "forward", 0, "model.py", 10};
	cs_frame b = {2, 0, NULL, "normalize", 0, "model.py", 20};

	st[0] = cs_writer_add_stack(m->w, &a, 1);
	st[1] = cs_writer_add_stack(m->w, &b, 1);
	ck_assert(st[0] >= 0 && st[1] >= 0);
}

/* The function of sim_two_stacks' line. */
static const char *site_func(int line)
{
	return line == 10 ? "forward" : "normalize";
}

static void check_site(const char *id, const cJSON *l, const struct site_want *w, int64_t steps)
{
	int64_t n = (int64_t)cJSON_GetObjectItem(l, "count")->valuedouble;
	int64_t c = (int64_t)cJSON_GetObjectItem(l, "cost_ns")->valuedouble;

	ck_assert_int_eq(cJSON_GetObjectItem(l, "line")->valueint, w->line);
	ck_assert_str_eq(cJSON_GetObjectItem(l, "file")->valuestring, "model.py");
	ck_assert_msg(n == w->calls * steps, "%s: line %d: %lld calls in %lld steps", id, w->line,
		      (long long)n, (long long)steps);
	ck_assert_msg(c >= w->lo * steps && c <= w->hi * steps,
		      "%s: line %d: %lld ns in %lld steps (%lld per step)", id, w->line,
		      (long long)c, (long long)steps, (long long)(c / steps));
}

/*
 * Rule id's one finding on path (steps: the NVTX ranges "step", two of them warm-up) lists w0's
 * line then w1's (JSON "locations", counts and costs over the affected steps), the finding's
 * location is w0's, the text report has a `where:` line for each, in that order, and markdown lists
 * w0's first under **Where:**.
 */
void sim_expect_sites(const char *path, const char *id, const struct site_want *w0,
		      const struct site_want *w1)
{
	const char *js[] = {"cuscope",	"report", "--format", "json", "--step-range", "step",
			    "--warmup", "2",	  "--rules",  id,     path,	      NULL};
	const char *txt[] = {"cuscope", "report",  "--no-color", "--step-range", "step", "--warmup",
			     "2",	"--rules", id,		 path,		 NULL};
	const char *md[] = {"cuscope",	"report", "--format", "markdown", "--step-range", "step",
			    "--warmup", "2",	  "--rules",  id,	  path,		  NULL};
	struct tu_result j = tu_cuscope(js), t = tu_cuscope(txt), k = tu_cuscope(md);
	cJSON *doc, *f, *loc;
	char w[64], w2[64], wm[96];
	const char *p1, *p2;
	int64_t steps;

	ck_assert_msg(j.rc == 0 && t.rc == 0, "%s: %s%s", id, j.err, t.err);
	doc = cJSON_Parse(j.out);
	ck_assert_ptr_nonnull(doc);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "findings")), 1);
	f = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "findings"), 0);
	steps = cJSON_GetArraySize(cJSON_GetObjectItem(f, "steps"));
	ck_assert_msg(steps >= STEPS / 2, "%s: %lld steps", id, (long long)steps);
	loc = cJSON_GetObjectItem(f, "locations");
	ck_assert_msg(cJSON_GetArraySize(loc) == 2, "%s: %s", id, j.out);
	check_site(id, cJSON_GetArrayItem(loc, 0), w0, steps);
	check_site(id, cJSON_GetArrayItem(loc, 1), w1, steps);
	ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(f, "location"), "line")->valueint,
			 w0->line);
	snprintf(w, sizeof(w), "where:    model.py:%d in %s (", w0->line, site_func(w0->line));
	snprintf(w2, sizeof(w2), "model.py:%d in %s (", w1->line, site_func(w1->line));
	p1 = strstr(t.out, w);
	p2 = p1 ? strstr(p1 + strlen(w), w2) : NULL;
	ck_assert_msg(p1 && p2, "%s: %s", id, t.out);
	ck_assert_msg(k.rc == 0, "%s: %s", id, k.err);
	snprintf(wm, sizeof(wm), "- **Where:**\n  - `model.py:%d in %s`:", w0->line,
		 site_func(w0->line));
	ck_assert_msg(strstr(k.out, wm), "%s: %s", id, k.out);
	cJSON_Delete(doc);
	tu_result_free(&j);
	tu_result_free(&t);
	tu_result_free(&k);
}
