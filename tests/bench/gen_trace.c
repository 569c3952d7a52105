/*
 * gen_trace.c - write a large synthetic training trace for the `cuscope report` speed benchmark
 * (scripts/bench-report, docs/performance.md "Report speed"). Not a test: it only writes a file.
 *
 *	gen_trace [--events N] [--names N] [--overview-min N] [--streams N] [--processes N] OUTPUT
 *
 * The trace is one process that runs 500 setup kernels, then trains for as many steps as the
 * event budget allows. A step holds 2,600 events: 2,000 kernels (10% of them on a second stream,
 * 14 with a name never seen before, the way JIT-compiled and autotuned variants appear), 80
 * memcpys (the batch in, the loss out, device copies), 80 memsets, 200 device allocations and
 * frees, 40 host waits, 120 API calls and 80 NVTX ranges (the step, its phases and its layers).
 * Kernels dominate as in a recorded training trace; every step ends with a device-to-host copy
 * that the host waits for. Kernel names are long mangled-looking strings: --names of them in all
 * (50,000 by default). --overview-min sets the writer's threshold for the timeline overview
 * (cs_writer_set_overview_min_events; 0: always). --streams spreads the second stream's kernels
 * over N - 1 streams in turn (2 by default), for a trace with many overview tracks. --processes
 * deals the steps to N processes in turn (ranks 0 to N - 1, pids 4242, 4342, ...; the setup is the
 * first one's), for the report of a job of several processes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/trace.h"

#define PID	    4242 /* the first process; the others every 100 pids */
#define PID_STEP    100
#define STREAM_MAIN 7
#define STREAM_COMM 13

#define STEP_KERNELS	2000
#define STEP_UNIQUE	14 /* kernels with a name of their own, per step */
#define STEP_COMM_EVERY 10 /* one kernel in ten runs on the second stream */
#define STEP_MEMCPY	80
#define STEP_MEMSET	80
#define STEP_MEMORY	200
#define STEP_SYNC	40
#define STEP_API	120
#define STEP_NVTX	80
#define STEP_EVENTS \
	(STEP_KERNELS + STEP_MEMCPY + STEP_MEMSET + STEP_MEMORY + STEP_SYNC + STEP_API + STEP_NVTX)
#define VOCABULARY    1150 /* names of the steady step sequence */
#define SETUP_KERNELS 500  /* before the first step, with 100 names of their own */
#define USAGE                                                                                      \
	"usage: gen_trace [--events N] [--names N] [--overview-min N] [--streams N] [--processes " \
	"N] OUTPUT\n"

struct gen {
	cs_trace_writer *w;
	uint64_t rng;
	int64_t host;	      /* host clock, ns */
	int64_t *stream_free; /* when each stream's queue drains: the main one, then the others */
	int64_t streams;
	uint64_t comm_seq; /* kernels sent to the other streams so far */
	uint64_t corr;
	int64_t *vocab;	    /* string ids of the vocabulary */
	int64_t names_left; /* fresh names still to make */
	int64_t unique_seq;
	int64_t api_names[4];
	int64_t nvtx_names[8];
	int64_t stacks[16];
	int64_t processes;
	uint32_t pid; /* of the events being written; their thread is pid + 1 */
};

static uint32_t rnd(struct gen *g)
{
	g->rng ^= g->rng << 13;
	g->rng ^= g->rng >> 7;
	g->rng ^= g->rng << 17;
	return (uint32_t)(g->rng >> 11);
}

static int fail(struct gen *g, const char *what)
{
	fprintf(stderr, "gen_trace: %s: %s\n", what, g->w ? cs_writer_errmsg(g->w) : "");
	return 1;
}

static int64_t name_id(struct gen *g, const char *fmt, int64_t n)
{
	char buf[256];

	snprintf(buf, sizeof(buf), fmt, (long long)n, (long long)(n * 7919 % 100003));
	return cs_writer_intern(g->w, buf);
}

static int add_kernel(struct gen *g, int64_t nm, int comm, int64_t base_ns)
{
	cs_kernel k;
	int64_t s = comm ? 1 + (int64_t)(g->comm_seq++ % (uint64_t)(g->streams - 1)) : 0;
	int64_t dur = base_ns + rnd(g) % (base_ns / 4 + 1);

	memset(&k, 0, sizeof(k));
	k.launch_start = g->host;
	k.launch_end = g->host + 2500 + rnd(g) % 1000;
	k.queued = k.submitted = CS_TS_UNKNOWN;
	k.start = k.launch_end + 1500 > g->stream_free[s] ? k.launch_end + 1500 : g->stream_free[s];
	k.end = k.start + dur;
	g->stream_free[s] = k.end + 800;
	k.pid = g->pid;
	k.launch_tid = g->pid + 1;
	k.launch_cbid = 211;
	k.launch_api_kind = CS_API_RUNTIME;
	k.stream_id = comm ? STREAM_COMM + (s - 1) : STREAM_MAIN;
	k.correlation_id = ++g->corr;
	k.grid_x = 108 + (int32_t)(rnd(g) % 1000);
	k.grid_y = k.grid_z = 1;
	k.block_x = 256;
	k.block_y = k.block_z = 1;
	k.registers_per_thread = 32;
	k.graph_id = k.graph_node_id = CS_ID_NONE;
	k.name_id = nm;
	k.stack_id = CS_ID_NONE;
	g->host = k.launch_end + 1500 + rnd(g) % 3000;
	return cs_writer_add_kernel(g->w, &k);
}

static int add_copy(struct gen *g, int kind, int64_t bytes, int async)
{
	cs_memcpy m;
	int64_t dur = 1500 + bytes / 20;

	memset(&m, 0, sizeof(m));
	m.launch_start = g->host;
	m.launch_end = g->host + 3000;
	m.start = m.launch_end + 1000 > g->stream_free[0] ? m.launch_end + 1000 : g->stream_free[0];
	m.end = m.start + dur;
	g->stream_free[0] = m.end + 500;
	m.pid = g->pid;
	m.launch_tid = g->pid + 1;
	m.launch_cbid = async ? 41 : 31;
	m.stream_id = STREAM_MAIN;
	m.correlation_id = ++g->corr;
	m.copy_kind = kind;
	m.src_kind = kind == CS_COPY_HTOD ? CS_MEM_PINNED : CS_MEM_DEVICE;
	m.dst_kind = kind == CS_COPY_DTOH ? CS_MEM_PAGEABLE : CS_MEM_DEVICE;
	m.is_async = async;
	m.src_device_id = m.dst_device_id = CS_ID_NONE;
	m.bytes = bytes;
	m.graph_id = m.graph_node_id = CS_ID_NONE;
	m.stack_id = kind == CS_COPY_DTOH ? g->stacks[1] : CS_ID_NONE;
	g->host = m.launch_end + 2000;
	if (!async && m.end > g->host)
		g->host = m.end + 2000; /* a synchronous copy: the host waited */
	return cs_writer_add_memcpy(g->w, &m);
}

static int add_memset(struct gen *g)
{
	cs_memset m;

	memset(&m, 0, sizeof(m));
	m.launch_start = g->host;
	m.launch_end = g->host + 2000;
	m.start = m.launch_end + 1000 > g->stream_free[0] ? m.launch_end + 1000 : g->stream_free[0];
	m.end = m.start + 1200 + rnd(g) % 2000;
	g->stream_free[0] = m.end + 500;
	m.pid = g->pid;
	m.launch_tid = g->pid + 1;
	m.launch_cbid = 51;
	m.stream_id = STREAM_MAIN;
	m.correlation_id = ++g->corr;
	m.mem_kind = CS_MEM_DEVICE;
	m.is_async = 1;
	m.bytes = 4096 * (1 + rnd(g) % 256);
	m.graph_id = m.graph_node_id = CS_ID_NONE;
	m.stack_id = CS_ID_NONE;
	g->host = m.launch_end + 1500;
	return cs_writer_add_memset(g->w, &m);
}

static int add_memory(struct gen *g, int op, uint64_t address, int64_t bytes)
{
	cs_memory m;

	memset(&m, 0, sizeof(m));
	m.start = g->host;
	m.pid = g->pid;
	m.tid = g->pid + 1;
	m.stream_id = CS_ID_NONE;
	m.correlation_id = ++g->corr;
	m.op = op;
	m.mem_kind = CS_MEM_DEVICE;
	m.cbid = op == CS_MEMOP_ALLOC ? 20 : 22;
	m.address = address;
	m.bytes = bytes;
	m.stack_id = g->stacks[2 + rnd(g) % 8];
	g->host += 1200;
	return cs_writer_add_memory(g->w, &m);
}

static int add_sync(struct gen *g, int type)
{
	cs_sync s;

	memset(&s, 0, sizeof(s));
	s.start = g->host;
	s.end = g->stream_free[0] > g->host ? g->stream_free[0] : g->host + 800;
	s.pid = g->pid;
	s.tid = g->pid + 1;
	s.stream_id = type == CS_SYNC_STREAM_SYNCHRONIZE ? STREAM_MAIN : CS_ID_NONE;
	s.event_id = type == CS_SYNC_EVENT_SYNCHRONIZE ? 5 : CS_ID_NONE;
	s.correlation_id = ++g->corr;
	s.type = type;
	s.cbid = 131;
	s.api_kind = CS_API_RUNTIME;
	s.stack_id = g->stacks[0];
	g->host = s.end + 1500;
	return cs_writer_add_sync(g->w, &s);
}

static int add_api(struct gen *g, int which)
{
	cs_api a;

	memset(&a, 0, sizeof(a));
	a.start = g->host;
	a.end = g->host + 1500 + rnd(g) % 4000;
	a.pid = g->pid;
	a.tid = g->pid + 1;
	a.api_kind = CS_API_RUNTIME;
	a.cbid = 20 + which;
	a.correlation_id = ++g->corr;
	a.name_id = g->api_names[which];
	a.stack_id = CS_ID_NONE;
	g->host = a.end + 500;
	return cs_writer_add_api(g->w, &a);
}

static int add_nvtx(struct gen *g, int64_t start, int64_t end, int depth, int64_t text)
{
	cs_nvtx n;

	memset(&n, 0, sizeof(n));
	n.start = start;
	n.end = end;
	n.pid = g->pid;
	n.tid = g->pid + 1;
	n.end_tid = g->pid + 1;
	n.type = CS_NVTX_PUSHPOP;
	n.depth = depth;
	n.domain_id = CS_ID_NONE;
	n.text_id = text;
	n.range_id = n.payload_id = CS_ID_NONE;
	return cs_writer_add_nvtx(g->w, &n);
}

/* The steady kernel sequence of a step: symbols into the vocabulary, some repeated in runs. */
static void make_sequence(struct gen *g, int32_t *seq, int n)
{
	int32_t next = 40;

	for (int i = 0; i < n; i++) {
		uint32_t r = rnd(g) % 100;

		/* a few hot names (elementwise, gemm) repeat; the others each once, so that every
		 * name of the vocabulary runs */
		if (r < 40 || next == VOCABULARY)
			seq[i] = (int32_t)(rnd(g) % 40);
		else
			seq[i] = next++;
	}
}

static int write_step(struct gen *g, int64_t step, const int32_t *seq, const int64_t *base_ns)
{
	int64_t step_start = g->host, phase_start = g->host, layer_start = g->host;
	int nvtx_left = STEP_NVTX - 1, copies = 0, memsets = 0, memory = 0, syncs = 0, apis = 0;
	char text[32];
	int64_t step_text;
	int rc = 0, unique = 0;

	snprintf(text, sizeof(text), "step%lld", (long long)step);
	step_text = cs_writer_intern(g->w, text);
	if (step_text < 0)
		return (int)step_text;
	rc = add_copy(g, CS_COPY_HTOD, 4 << 20, 1); /* the batch */
	copies++;
	for (int i = 0; i < STEP_KERNELS && !rc; i++) {
		int64_t nm;

		if (unique < STEP_UNIQUE && i % (STEP_KERNELS / STEP_UNIQUE) == 17) {
			if (g->names_left > 0) {
				nm = name_id(
					g,
					"void at::native::jit_variant_%lld_kernel<float, "
					"at::native::ReduceOp<%lld>, 4, 2>(at::TensorIterator)",
					g->unique_seq++);
				g->names_left--;
			} else {
				nm = g->vocab[rnd(g) % VOCABULARY];
			}
			unique++;
			if (nm < 0)
				return (int)nm;
			rc = add_kernel(g, nm, 0, 5000);
			continue;
		}
		rc = add_kernel(g, g->vocab[seq[i]], i % STEP_COMM_EVERY == 5, base_ns[seq[i]]);
		/* the other events, spread over the step */
		if (!rc && copies < STEP_MEMCPY - 1 && i % 26 == 3)
			rc = add_copy(g, CS_COPY_DTOD, 65536 * (1 + rnd(g) % 64), 1), copies++;
		if (!rc && memsets < STEP_MEMSET && i % 25 == 4)
			rc = add_memset(g), memsets++;
		if (!rc && memory + 1 < STEP_MEMORY && i % 20 == 6) {
			uint64_t addr = 0x7f0000000000ull + (uint64_t)(rnd(g) % 4096) * 0x200000;
			int64_t bytes = 2 << 20;

			rc = add_memory(g, CS_MEMOP_ALLOC, addr, bytes);
			if (!rc)
				rc = add_memory(g, CS_MEMOP_FREE, addr, 0);
			memory += 2;
		}
		if (!rc && syncs < STEP_SYNC - 1 && i % 50 == 9)
			rc = add_sync(g, CS_SYNC_EVENT_SYNCHRONIZE), syncs++;
		if (!rc && apis < STEP_API && i % 16 == 10)
			rc = add_api(g, (int)(rnd(g) % 4)), apis++;
		if (!rc && nvtx_left > 3 && i % 26 == 25) {
			/* a layer range; every 500 kernels also a phase range */
			rc = add_nvtx(g, layer_start, g->host, 2, g->nvtx_names[4 + rnd(g) % 4]);
			layer_start = g->host;
			nvtx_left--;
			if (!rc && i % 500 == 499 && nvtx_left > 3) {
				rc = add_nvtx(g, phase_start, g->host, 1,
					      g->nvtx_names[(i / 500) % 4]);
				phase_start = g->host;
				nvtx_left--;
			}
		}
	}
	/* the loss comes back to the host, which waits for it */
	while (!rc && copies < STEP_MEMCPY - 1)
		rc = add_copy(g, CS_COPY_DTOD, 65536, 1), copies++;
	while (!rc && memsets < STEP_MEMSET)
		rc = add_memset(g), memsets++;
	while (!rc && memory < STEP_MEMORY)
		rc = add_memory(g, CS_MEMOP_ALLOC, 0x7e0000000000ull + (uint64_t)memory * 4096,
				4096),
		memory++;
	while (!rc && apis < STEP_API)
		rc = add_api(g, apis % 4), apis++;
	while (!rc && nvtx_left > 0)
		rc = add_nvtx(g, layer_start, g->host, 2, g->nvtx_names[4]), nvtx_left--;
	if (!rc)
		rc = add_copy(g, CS_COPY_DTOH, 4, 0);
	while (!rc && syncs < STEP_SYNC)
		rc = add_sync(g, CS_SYNC_STREAM_SYNCHRONIZE), syncs++;
	if (!rc)
		rc = add_nvtx(g, step_start, g->host, 0, step_text);
	return rc;
}

static int setup(struct gen *g, int64_t names)
{
	static const char *const apis[] = {"cudaMalloc_v3020", "cudaFree_v3020",
					   "cudaStreamSynchronize_v3020", "cudaEventRecord_v3020"};
	static const char *const nvtx[] = {"forward",	 "backward",  "optimizer",  "data",
					   "layer.attn", "layer.mlp", "layer.norm", "layer.embed"};
	cs_process p;
	cs_device d;
	cs_frame f[3];

	for (int64_t i = 0; i < g->processes; i++) {
		char uuid[64];

		memset(&p, 0, sizeof(p));
		p.pid = PID + (uint32_t)(PID_STEP * i);
		p.ppid = 1;
		p.start = 0;
		p.end = CS_TS_UNKNOWN;
		p.command_line = "python3 train.py --synthetic";
		p.rank = p.local_rank = p.world_size = CS_ID_NONE;
		if (g->processes > 1) {
			p.rank = p.local_rank = (int32_t)i;
			p.world_size = (int32_t)g->processes;
		}
		p.exit_code = 0;
		p.used_cuda = 1;
		if (cs_writer_add_process(g->w, &p))
			return 1;
		memset(&d, 0, sizeof(d));
		d.pid = p.pid;
		snprintf(uuid, sizeof(uuid), "GPU-00000000-1111-2222-3333-%012lld",
			 444444444444LL + i);
		d.uuid = uuid;
		d.name = "NVIDIA H200";
		d.total_memory = 150754820096LL;
		d.sm_count = 132;
		d.compute_major = 9;
		if (cs_writer_add_device(g->w, &d))
			return 1;
	}
	for (int i = 0; i < 4; i++)
		if ((g->api_names[i] = cs_writer_intern(g->w, apis[i])) < 0)
			return 1;
	for (int i = 0; i < 8; i++)
		if ((g->nvtx_names[i] = cs_writer_intern(g->w, nvtx[i])) < 0)
			return 1;
	for (int i = 0; i < 16; i++) {
		char file[64];

		memset(f, 0, sizeof(f));
		f[0].kind = 1;
		f[0].pc = 0x7f1234560000ull + (uint64_t)i * 64;
		f[0].module = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
		f[0].symbol = "cuMemcpyDtoH_v2";
		f[1].kind = 2;
		f[1].symbol = "item";
		f[1].file = "/usr/lib/python3/dist-packages/torch/_tensor.py";
		f[1].line = 100;
		snprintf(file, sizeof(file), "/home/user/train%d.py", i);
		f[2].kind = 2;
		f[2].symbol = "train_step";
		f[2].file = file;
		f[2].line = 40 + i;
		if ((g->stacks[i] = cs_writer_add_stack(g->w, f, 3)) < 0)
			return 1;
	}
	g->vocab = malloc(VOCABULARY * sizeof(*g->vocab));
	if (!g->vocab)
		return 1;
	for (int64_t i = 0; i < VOCABULARY; i++)
		if ((g->vocab[i] =
			     name_id(g,
				     "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_%lld_"
				     "FunctorIfEESt5arrayIPcLm%lldEEEEviT0_T1_",
				     i)) < 0)
			return 1;
	g->names_left = names > VOCABULARY + 100 ? names - VOCABULARY - 100 : 0;
	return 0;
}

int main(int argc, char **argv)
{
	struct gen g;
	int64_t events = 10000000, names = 50000, overview_min = CS_OVERVIEW_MIN_EVENTS,
		streams = 2, processes = 1, steps, base_ns[VOCABULARY];
	int32_t *seq;
	const char *out = NULL;
	cs_error err = {0, ""};

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--events") && i + 1 < argc)
			events = strtoll(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--names") && i + 1 < argc)
			names = strtoll(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--overview-min") && i + 1 < argc)
			overview_min = strtoll(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--streams") && i + 1 < argc && atoll(argv[i + 1]) >= 2)
			streams = strtoll(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--processes") && i + 1 < argc &&
			 atoll(argv[i + 1]) >= 1 && atoll(argv[i + 1]) <= 1000)
			processes = strtoll(argv[++i], NULL, 10);
		else if (argv[i][0] != '-' && !out)
			out = argv[i];
		else {
			fputs(USAGE, stderr);
			return 2;
		}
	}
	if (!out) {
		fputs(USAGE, stderr);
		return 2;
	}
	memset(&g, 0, sizeof(g));
	g.processes = processes;
	g.pid = PID;
	g.rng = 0x9e3779b97f4a7c15ull;
	g.host = 1000000;
	g.streams = streams;
	g.stream_free = calloc((size_t)streams, sizeof(*g.stream_free));
	if (!g.stream_free)
		return fail(&g, "out of memory");
	if (cs_writer_open(out, 1, &g.w, &err)) {
		fprintf(stderr, "gen_trace: %s\n", err.msg);
		return 1;
	}
	cs_writer_set_meta(g.w, "command", "python3 train.py --synthetic");
	cs_writer_set_overview_min_events(g.w, overview_min);
	if (setup(&g, names))
		return fail(&g, "setup");
	seq = malloc(STEP_KERNELS * sizeof(*seq));
	if (!seq)
		return fail(&g, "out of memory");
	make_sequence(&g, seq, STEP_KERNELS);
	for (int i = 0; i < VOCABULARY; i++)
		base_ns[i] = 2000 + rnd(&g) % 30000;
	steps = (events - SETUP_KERNELS) / STEP_EVENTS;
	if (steps < 1)
		steps = 1;
	/* setup before the loop: weight initialization, a few kernels each */
	for (int i = 0; i < SETUP_KERNELS; i++) {
		int64_t nm =
			name_id(&g, "void at::native::init_kernel_%lld<float, %lld>(float*, long)",
				i % 100);

		if (nm < 0 || add_kernel(&g, nm, 0, 3000))
			return fail(&g, "write");
	}
	for (int64_t s = 0; s < steps; s++) {
		g.pid = PID + (uint32_t)(PID_STEP * (s % processes));
		if (write_step(&g, s, seq, base_ns))
			return fail(&g, "write");
	}
	if (cs_writer_finish(g.w, &err)) {
		fprintf(stderr, "gen_trace: %s\n", err.msg);
		return 1;
	}
	printf("%lld steps, %lld events, %lld kernel names\n", (long long)steps,
	       (long long)(steps * STEP_EVENTS), (long long)(VOCABULARY + g.unique_seq));
	free(seq);
	free(g.vocab);
	free(g.stream_free);
	return 0;
}
