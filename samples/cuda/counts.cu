/*
 * counts.cu - a CUDA program whose every recordable action is counted, to check a trace against.
 *
 * It launches kernels through every path a program can take (<<<>>>, cudaLaunchKernel,
 * cudaLaunchKernelEx, cuLaunchKernel, a cooperative launch, a CUDA graph captured from a stream and
 * replayed), copies pageable and pinned memory both ways (synchronously and not), sets memory,
 * allocates and frees device memory (one allocation fails on purpose), waits on the host in each
 * way the runtime offers, queries streams and events, makes streams wait for events, brackets a
 * section with cudaProfilerStart/Stop and annotates everything with NVTX. Each wrapper below does
 * one CUDA call and counts what it did, so the counts cannot drift from the code.
 *
 * The last stdout line is "expect key=value ..." (keys: tests/gpu/check_trace.py). Keys written
 * "scope:key" hold only for a recording with that option: "prof:" for --capture=profiler-api,
 * "api:" for --api=all. Lines starting with "info:" may change from run to run; every other line
 * must not.
 *
 * Build (both must give the same counts):
 *   nvcc -O2 -arch=sm_90 -o counts counts.cu -lcuda -ldl
 *   nvcc -O2 -arch=sm_90 --default-stream per-thread -o counts_ptsz counts.cu -lcuda -ldl
 * Record:
 *   cuscope record -o counts.db -- ./counts
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include <cooperative_groups.h>
#include <cuda.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

namespace cg = cooperative_groups;

#define N	   (1 << 16)	       /* floats per buffer */
#define NB	   (N * sizeof(float)) /* bytes per buffer */
#define THREADS	   256
#define GRAPH_RUNS 3

/* ---- checking every call ---- */

static void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("counts: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

#define CHECK(call)                                                            \
	do {                                                                   \
		cudaError_t e_ = (call);                                       \
		if (e_ != cudaSuccess)                                         \
			die("%s:%d: %s failed: %s", __FILE__, __LINE__, #call, \
			    cudaGetErrorString(e_));                           \
	} while (0)

#define CHECK_CU(call)                                                                         \
	do {                                                                                   \
		CUresult r_ = (call);                                                          \
		if (r_ != CUDA_SUCCESS) {                                                      \
			const char *s_ = NULL;                                                 \
			cuGetErrorString(r_, &s_);                                             \
			die("%s:%d: %s failed: %s", __FILE__, __LINE__, #call, s_ ? s_ : "?"); \
		}                                                                              \
	} while (0)

/* ---- what was done, counted by the wrappers ---- */

static struct tally {
	long kernels, kernels_graph, graph_launches, k_scale, k_add, k_coop;
	long chevron, launch_kernel, launch_ex, cu_launch, coop_launch; /* launch APIs */
	long htod, dtoh, dtod, bytes_htod, bytes_dtoh, bytes_dtod;
	long memcpy_calls, memcpy_async_calls; /* cudaMemcpy, cudaMemcpyAsync */
	long memset, bytes_memset, memset_calls, memset_async_calls;
	long wait_memcpy, wait_stream, wait_event, wait_device;
	long stream_queries, event_queries, stream_wait_events;
	long mallocs, malloc_async, frees, free_async, alloc_failed, pinned_allocs;
	long nvtx_ranges, nvtx_start_end, nvtx_cross_thread, nvtx_marks, nvtx_domain_ranges;
	long profiler_starts, profiler_stops;
	/* inside the cudaProfilerStart/Stop section */
	long prof_kernels, prof_waits, prof_marks;
	int in_profiled_section;
} t;

/* ---- kernels ---- */

__global__ void cs_scale(float *x, float a, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		x[i] *= a;
}

__global__ void cs_add(float *y, const float *x, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		y[i] += x[i];
}

/* Rotate x left by one element through tmp: needs every block's writes before any block reads. */
__global__ void cs_coop_rotate(float *x, float *tmp, int n)
{
	cg::grid_group grid = cg::this_grid();
	int stride = gridDim.x * blockDim.x;

	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		tmp[i] = x[i];
	grid.sync();
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		x[i] = tmp[(i + 1) % n];
}

/* The host mirror of every buffer: what the device must hold. */
static float *m_a, *m_b, *m_c, *m_d, *m_tmp;

static void mirror_scale(float *x, float a, int n)
{
	for (int i = 0; i < n; i++)
		x[i] *= a;
}

static void mirror_add(float *y, const float *x, int n)
{
	for (int i = 0; i < n; i++)
		y[i] += x[i];
}

static void count_kernel(long *per_name)
{
	t.kernels++;
	(*per_name)++;
	if (t.in_profiled_section)
		t.prof_kernels++;
}

static dim3 grid_of(int n)
{
	return dim3((n + THREADS - 1) / THREADS);
}

/* <<<>>> launches */
static void scale_chevron(float *d, float *m, float a, cudaStream_t s)
{
	cs_scale<<<grid_of(N), THREADS, 0, s>>>(d, a, N);
	CHECK(cudaGetLastError());
	t.chevron++;
	count_kernel(&t.k_scale);
	mirror_scale(m, a, N);
}

static void add_chevron(float *dy, float *my, const float *dx, const float *mx, cudaStream_t s)
{
	cs_add<<<grid_of(N), THREADS, 0, s>>>(dy, dx, N);
	CHECK(cudaGetLastError());
	t.chevron++;
	count_kernel(&t.k_add);
	mirror_add(my, mx, N);
}

/* cudaLaunchKernel called explicitly */
static void scale_launch_kernel(float *d, float *m, float a, cudaStream_t s)
{
	int n = N;
	void *args[] = {&d, &a, &n};

	CHECK(cudaLaunchKernel((const void *)cs_scale, grid_of(N), dim3(THREADS), args, 0, s));
	t.launch_kernel++;
	count_kernel(&t.k_scale);
	mirror_scale(m, a, N);
}

/* cudaLaunchKernelEx (cudaLaunchKernelExC underneath) with one launch attribute */
static void add_launch_ex(float *dy, float *my, const float *dx, const float *mx, cudaStream_t s)
{
	cudaLaunchConfig_t cfg = {};
	cudaLaunchAttribute attr[1] = {};

	attr[0].id = cudaLaunchAttributePriority;
	attr[0].val.priority = 0;
	cfg.gridDim = grid_of(N);
	cfg.blockDim = dim3(THREADS);
	cfg.dynamicSmemBytes = 0;
	cfg.stream = s;
	cfg.attrs = attr;
	cfg.numAttrs = 1;
	CHECK(cudaLaunchKernelEx(&cfg, cs_add, dy, dx, (int)N));
	t.launch_ex++;
	count_kernel(&t.k_add);
	mirror_add(my, mx, N);
}

/* cuLaunchKernel through the driver API, on the CUfunction the runtime registered for cs_scale */
static void scale_cu_launch(float *d, float *m, float a, cudaStream_t s)
{
	cudaFunction_t fn;
	int n = N;
	void *args[] = {&d, &a, &n};

	CHECK(cudaGetFuncBySymbol(&fn, (const void *)cs_scale));
	CHECK_CU(cuLaunchKernel((CUfunction)fn, grid_of(N).x, 1, 1, THREADS, 1, 1, 0, (CUstream)s,
				args, NULL));
	t.cu_launch++;
	count_kernel(&t.k_scale);
	mirror_scale(m, a, N);
}

/* cudaLaunchCooperativeKernel: rotate x (tmp becomes the old x) */
static void rotate_coop(float *dx, float *mx, float *dtmp, float *mtmp, cudaStream_t s)
{
	cudaDeviceProp prop;
	int per_sm = 0, blocks, n = N;
	void *args[] = {&dx, &dtmp, &n};

	CHECK(cudaGetDeviceProperties(&prop, 0));
	if (!prop.cooperativeLaunch)
		die("device 0 does not support cooperative launches");
	CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, cs_coop_rotate, THREADS, 0));
	blocks = per_sm * prop.multiProcessorCount;
	if (blocks < 1)
		die("cs_coop_rotate cannot run on this device");
	if (blocks > 64)
		blocks = 64;
	CHECK(cudaLaunchCooperativeKernel((const void *)cs_coop_rotate, dim3(blocks), dim3(THREADS),
					  args, 0, s));
	t.coop_launch++;
	count_kernel(&t.k_coop);
	memcpy(mtmp, mx, NB);
	for (int i = 0; i < N; i++)
		mx[i] = mtmp[(i + 1) % N];
}

/* ---- copies, sets, waits ---- */

/* One copy; synchronous ones to or from the host make the host wait. */
static void copy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, int async,
		 cudaStream_t s)
{
	if (async) {
		CHECK(cudaMemcpyAsync(dst, src, bytes, kind, s));
		t.memcpy_async_calls++;
	} else {
		CHECK(cudaMemcpy(dst, src, bytes, kind));
		t.memcpy_calls++;
		if (kind != cudaMemcpyDeviceToDevice)
			t.wait_memcpy++;
	}
	switch (kind) {
	case cudaMemcpyHostToDevice:
		t.htod++;
		t.bytes_htod += (long)bytes;
		break;
	case cudaMemcpyDeviceToHost:
		t.dtoh++;
		t.bytes_dtoh += (long)bytes;
		break;
	case cudaMemcpyDeviceToDevice:
		t.dtod++;
		t.bytes_dtod += (long)bytes;
		break;
	default:
		die("copy: unexpected kind %d", (int)kind);
	}
}

static void set(void *dst, int value, size_t bytes, int async, cudaStream_t s)
{
	if (async) {
		CHECK(cudaMemsetAsync(dst, value, bytes, s));
		t.memset_async_calls++;
	} else {
		CHECK(cudaMemset(dst, value, bytes));
		t.memset_calls++;
	}
	t.memset++;
	t.bytes_memset += (long)bytes;
}

static void wait_device(void)
{
	CHECK(cudaDeviceSynchronize());
	t.wait_device++;
	if (t.in_profiled_section)
		t.prof_waits++;
}

static void wait_stream(cudaStream_t s)
{
	CHECK(cudaStreamSynchronize(s));
	t.wait_stream++;
}

static void wait_event(cudaEvent_t e)
{
	CHECK(cudaEventSynchronize(e));
	t.wait_event++;
}

/* The GPU-side wait: stream s waits for event e (recorded on from) */
static void stream_wait(cudaStream_t s, cudaEvent_t e, cudaStream_t from)
{
	CHECK(cudaEventRecord(e, from));
	CHECK(cudaStreamWaitEvent(s, e, 0));
	t.stream_wait_events++;
}

/* Queries of work that is done: they must answer cudaSuccess. */
static void query_stream(cudaStream_t s)
{
	CHECK(cudaStreamQuery(s));
	t.stream_queries++;
}

static void query_event(cudaEvent_t e)
{
	CHECK(cudaEventQuery(e));
	t.event_queries++;
}

static float *dev_alloc(void)
{
	void *p = NULL;

	CHECK(cudaMalloc(&p, NB));
	t.mallocs++;
	return (float *)p;
}

static void dev_free(void *p)
{
	CHECK(cudaFree(p));
	t.frees++;
}

/* ---- NVTX ---- */

static void push(const char *name)
{
	nvtxRangePushA(name);
}

static void pop(void)
{
	/* No check of the value: without a tool attached NVTX returns a negative one. */
	nvtxRangePop();
	t.nvtx_ranges++;
}

static void mark(const char *name)
{
	nvtxMarkA(name);
	t.nvtx_marks++;
	if (t.in_profiled_section)
		t.prof_marks++;
}

static void *end_range_thread(void *arg)
{
	nvtxRangeEnd(*(nvtxRangeId_t *)arg);
	return NULL;
}

/* ---- checking results ---- */

static double checksum(const float *x, int n)
{
	double s = 0;

	for (int i = 0; i < n; i++)
		s += (double)x[i] * (double)((i % 13) + 1);
	return s;
}

static void verify(const char *what, const float *got, const float *want, int n)
{
	for (int i = 0; i < n; i++)
		if (got[i] != want[i])
			die("%s: element %d is %g, expected %g", what, i, (double)got[i],
			    (double)want[i]);
	printf("result %s checksum=%.0f ok\n", what, checksum(want, n));
}

static float *host_alloc(void)
{
	float *p = (float *)malloc(NB);

	if (!p)
		die("out of host memory");
	return p;
}

int main(void)
{
	float *h_page, *h_page_out, *h_pin, *h_pin_out;
	float *d_a, *d_b, *d_c, *d_d, *d_tmp = NULL;
	cudaStream_t s1, s2,
		s0 = 0; /* s0: the default stream (per-thread with --default-stream per-thread) */
	cudaEvent_t ev1, ev2, ev3;
	cudaGraph_t graph;
	cudaGraphExec_t graph_exec;
	nvtxDomainHandle_t domain;
	nvtxStringHandle_t domain_text;
	nvtxEventAttributes_t attr;
	nvtxRangeId_t r_async, r_cross;
	pthread_t thr;
	cudaDeviceProp prop;
	cudaError_t e;
	void *huge = NULL;

	mark("begin");
	push("counts"); /* depth 0, around everything */

	/* -- setup -- */
	push("setup");
	CHECK(cudaSetDevice(0));
	CHECK(cudaGetDeviceProperties(&prop, 0));
	printf("info: device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
	CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&ev1, cudaEventDisableTiming));
	CHECK(cudaEventCreateWithFlags(&ev2, cudaEventDisableTiming));
	CHECK(cudaEventCreateWithFlags(&ev3, cudaEventDisableTiming));
	d_a = dev_alloc();
	d_b = dev_alloc();
	d_c = dev_alloc();
	d_d = dev_alloc();
	/* 1 PiB: must fail, and leaves no sticky error */
	e = cudaMalloc(&huge, (size_t)1 << 50);
	if (e != cudaErrorMemoryAllocation)
		die("cudaMalloc(1 PiB) returned %s, expected cudaErrorMemoryAllocation",
		    cudaGetErrorName(e));
	if (cudaGetLastError() != cudaErrorMemoryAllocation)
		die("cudaGetLastError did not report the failed cudaMalloc");
	t.alloc_failed++;
	CHECK(cudaGetLastError());
	CHECK(cudaMallocHost((void **)&h_pin, NB));
	CHECK(cudaMallocHost((void **)&h_pin_out, NB));
	t.pinned_allocs += 2;
	h_page = host_alloc();
	h_page_out = host_alloc();
	m_a = host_alloc();
	m_b = host_alloc();
	m_c = host_alloc();
	m_d = host_alloc();
	m_tmp = host_alloc();
	for (int i = 0; i < N; i++) {
		h_page[i] = (float)(i % 7);
		h_pin[i] = (float)(i % 5);
	}
	pop();

	/* start/end range on this thread, from the copies to the end of the graph */
	r_async = nvtxRangeStartA("copies-to-graph");

	/* -- copies -- */
	push("copies");
	copy(d_a, h_page, NB, cudaMemcpyHostToDevice, 0, s0); /* sync, pageable */
	memcpy(m_a, h_page, NB);
	copy(d_b, h_pin, NB, cudaMemcpyHostToDevice, 0, s0); /* sync, pinned */
	memcpy(m_b, h_pin, NB);
	copy(d_c, h_pin, NB / 2, cudaMemcpyHostToDevice, 1, s1); /* async, pinned */
	copy(d_c + N / 2, h_page + N / 2, NB / 2, cudaMemcpyHostToDevice, 1,
	     s1); /* async, pageable */
	memcpy(m_c, h_pin, NB / 2);
	memcpy(m_c + N / 2, h_page + N / 2, NB / 2);
	wait_stream(s1);
	copy(d_d, d_a, NB, cudaMemcpyDeviceToDevice, 0, s0); /* sync API, device to device */
	memcpy(m_d, m_a, NB);
	wait_device(); /* a device-to-device cudaMemcpy does not wait for the copy */
	copy(d_d, d_c, NB / 4, cudaMemcpyDeviceToDevice, 1, s1);
	memcpy(m_d, m_c, NB / 4);
	wait_stream(s1);
	pop();

	/* -- sets -- */
	push("memsets");
	set(d_c, 0, NB / 2, 1, s1);
	memset(m_c, 0, NB / 2);
	wait_stream(s1);
	set(d_b + N / 2, 0, NB / 2, 0, s0);
	memset(m_b + N / 2, 0, NB / 2);
	wait_device();
	pop();

	/* -- launches -- */
	nvtxEventAttributes_t la;

	memset(&la, 0, sizeof(la));
	la.version = NVTX_VERSION;
	la.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	la.colorType = NVTX_COLOR_ARGB;
	la.color = 0xff2080c0;
	la.messageType = NVTX_MESSAGE_TYPE_ASCII;
	la.message.ascii = "launches";
	nvtxRangePushEx(&la);
	scale_chevron(d_a, m_a, 2.0f, s0);
	add_chevron(d_a, m_a, d_b, m_b, s0);
	stream_wait(s1, ev1, s0); /* s1 waits for the default stream's two kernels */
	add_chevron(d_c, m_c, d_a, m_a, s1);
	scale_launch_kernel(d_c, m_c, 2.0f, s1);
	add_launch_ex(d_d, m_d, d_c, m_c, s1);
	scale_cu_launch(d_d, m_d, 2.0f, s1);
	rotate_coop(d_a, m_a, d_b, m_b, s1);
	CHECK(cudaEventRecord(ev2, s1));
	wait_event(ev2);
	query_event(ev2);
	query_event(ev2);
	query_stream(s1);
	query_stream(s1);
	pop();

	/* a range of another domain, its text a registered string */
	domain = nvtxDomainCreateA("cuscope.counts");
	domain_text = nvtxDomainRegisterStringA(domain, "domain-range");
	memset(&attr, 0, sizeof(attr));
	attr.version = NVTX_VERSION;
	attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	attr.message.registered = domain_text;
	nvtxDomainRangePushEx(domain, &attr);
	nvtxDomainRangePop(domain);
	t.nvtx_ranges++;
	t.nvtx_domain_ranges++;

	/* -- graph: captured from s2, replayed -- */
	push("graph");
	CHECK(cudaStreamBeginCapture(s2, cudaStreamCaptureModeThreadLocal));
	cs_scale<<<grid_of(N), THREADS, 0, s2>>>(d_d, 2.0f, N);
	CHECK(cudaGetLastError());
	cs_add<<<grid_of(N), THREADS, 0, s2>>>(d_d, d_c, N);
	CHECK(cudaGetLastError());
	t.chevron += 2; /* launch calls that run nothing themselves */
	CHECK(cudaStreamEndCapture(s2, &graph));
	CHECK(cudaGraphInstantiate(&graph_exec, graph, 0));
	stream_wait(s2, ev3, s1);
	for (int r = 0; r < GRAPH_RUNS; r++) {
		CHECK(cudaGraphLaunch(graph_exec, s2));
		t.graph_launches++;
		t.kernels += 2;
		t.kernels_graph += 2;
		t.k_scale++;
		t.k_add++;
		mirror_scale(m_d, 2.0f, N);
		mirror_add(m_d, m_c, N);
	}
	wait_stream(s2);
	pop();
	nvtxRangeEnd(r_async);
	t.nvtx_start_end++;

	/* -- stream-ordered allocation -- */
	push("async-alloc");
	CHECK(cudaMallocAsync((void **)&d_tmp, NB, s1));
	t.malloc_async++;
	copy(d_tmp, d_d, NB, cudaMemcpyDeviceToDevice, 1, s1);
	memcpy(m_tmp, m_d, NB);
	add_chevron(d_tmp, m_tmp, d_c, m_c, s1);
	copy(h_pin_out, d_tmp, NB, cudaMemcpyDeviceToHost, 1, s1); /* async, pinned */
	CHECK(cudaFreeAsync(d_tmp, s1));
	t.free_async++;
	wait_stream(s1);
	verify("tmp", h_pin_out, m_tmp, N);
	pop();

	/* -- the profiled section: what --capture=profiler-api keeps -- */
	push("profiled");
	wait_device(); /* nothing of before runs inside the section */
	CHECK(cudaProfilerStart());
	t.profiler_starts++;
	t.in_profiled_section = 1;
	mark("profiled-section");
	scale_chevron(d_a, m_a, 2.0f, s1);
	add_chevron(d_a, m_a, d_c, m_c, s1);
	scale_chevron(d_a, m_a, 1.0f, s1);
	wait_device(); /* nothing of the section runs after it */
	t.in_profiled_section = 0;
	CHECK(cudaProfilerStop());
	t.profiler_stops++;
	pop();

	/* -- results -- */
	push("results");
	copy(h_page_out, d_a, NB, cudaMemcpyDeviceToHost, 0, s0); /* sync, pageable */
	verify("a", h_page_out, m_a, N);
	copy(h_pin_out, d_d, NB, cudaMemcpyDeviceToHost, 0, s0); /* sync, pinned */
	verify("d", h_pin_out, m_d, N);
	copy(h_page_out, d_c, NB / 2, cudaMemcpyDeviceToHost, 1, s1); /* async, pageable */
	wait_stream(s1);
	verify("c", h_page_out, m_c, N / 2);
	pop();

	/* a start/end range that another thread ends */
	r_cross = nvtxRangeStartA("cross-thread");
	if (pthread_create(&thr, NULL, end_range_thread, &r_cross) || pthread_join(thr, NULL))
		die("cannot run the thread that ends an NVTX range");
	t.nvtx_start_end++;
	t.nvtx_cross_thread++;

	/* -- teardown -- */
	CHECK(cudaGraphExecDestroy(graph_exec));
	CHECK(cudaGraphDestroy(graph));
	dev_free(d_a);
	dev_free(d_b);
	dev_free(d_c);
	dev_free(d_d);
	CHECK(cudaFreeHost(h_pin));
	CHECK(cudaFreeHost(h_pin_out));
	CHECK(cudaEventDestroy(ev1));
	CHECK(cudaEventDestroy(ev2));
	CHECK(cudaEventDestroy(ev3));
	CHECK(cudaStreamDestroy(s1));
	CHECK(cudaStreamDestroy(s2));
	pop(); /* counts */
	mark("end");

	if (t.k_scale + t.k_add + t.k_coop != t.kernels)
		die("kernel tally is inconsistent");
	printf("kernels %ld (graph %ld), copies %ld/%ld/%ld, sets %ld\n", t.kernels,
	       t.kernels_graph, t.htod, t.dtoh, t.dtod, t.memset);
	/* The last line: what the trace must hold (see tests/gpu/check_trace.py for the keys). */
	printf("expect kernels=%ld kernels_graph=%ld graph_launches=%ld graphs=1 "
	       "graph_launch_sizes_equal=1"
	       " kname.cs_scale=%ld kname.cs_add=%ld kname.cs_coop_rotate=%ld",
	       t.kernels, t.kernels_graph, t.graph_launches, t.k_scale, t.k_add, t.k_coop);
	printf(" memcpy_htod=%ld memcpy_dtoh=%ld memcpy_dtod=%ld bytes_htod=%ld bytes_dtoh=%ld"
	       " bytes_dtod=%ld memset=%ld bytes_memset=%ld",
	       t.htod, t.dtoh, t.dtod, t.bytes_htod, t.bytes_dtoh, t.bytes_dtod, t.memset,
	       t.bytes_memset);
	printf(" host_waits=%ld host_waits_memcpy=%ld host_waits_stream=%ld host_waits_event=%ld"
	       " host_waits_device=%ld stream_queries=%ld event_queries=%ld stream_wait_events=%ld",
	       t.wait_memcpy + t.wait_stream + t.wait_event + t.wait_device, t.wait_memcpy,
	       t.wait_stream, t.wait_event, t.wait_device, t.stream_queries, t.event_queries,
	       t.stream_wait_events);
	printf(" allocs=%ld alloc_failed=%ld frees=%ld pinned_allocs~=%ld",
	       t.mallocs + t.malloc_async, t.alloc_failed, t.frees + t.free_async, t.pinned_allocs);
	printf(" nvtx_ranges=%ld nvtx_depth=2 nvtx_start_end=%ld nvtx_cross_thread=%ld "
	       "nvtx_marks=%ld"
	       " nvtx_open=0 nvtx_text.domain-range=%ld",
	       t.nvtx_ranges, t.nvtx_start_end, t.nvtx_cross_thread, t.nvtx_marks,
	       t.nvtx_domain_ranges);
	printf(" processes_cuda=1 api.cudaMalloc=%ld api.cudaMallocAsync=%ld api.cudaFree=%ld"
	       " api.cudaFreeAsync=%ld api.cudaMemcpy=%ld api.cudaStreamSynchronize=%ld"
	       " api.cudaEventSynchronize=%ld api.cudaDeviceSynchronize=%ld api.cudaStreamQuery=%ld"
	       " api.cudaEventQuery=%ld api.cudaStreamWaitEvent=%ld api.cudaProfilerStart=%ld"
	       " api.cudaProfilerStop=%ld",
	       t.mallocs + t.alloc_failed, t.malloc_async, t.frees, t.free_async, t.memcpy_calls,
	       t.wait_stream, t.wait_event, t.wait_device, t.stream_queries, t.event_queries,
	       t.stream_wait_events, t.profiler_starts, t.profiler_stops);
	printf(" prof:kernels=%ld prof:host_waits=%ld prof:nvtx_marks=%ld prof:memcpy_htod=0"
	       " prof:memcpy_dtoh=0",
	       t.prof_kernels, t.prof_waits, t.prof_marks);
	/* nvcc 13 compiles <<<>>> into a call of cudaLaunchKernel: both count there. */
	printf(" api:api.cudaLaunchKernel=%ld"
	       " api:api.cudaLaunchKernelExC=%ld api:api.cuLaunchKernel=%ld"
	       " api:api.cudaLaunchCooperativeKernel=%ld api:api.cudaGraphLaunch=%ld"
	       " api:api.cudaMemcpyAsync=%ld api:api.cudaMemset=%ld api:api.cudaMemsetAsync=%ld"
	       " api:kernels=%ld api:memcpy_htod=%ld\n",
	       t.chevron + t.launch_kernel, t.launch_ex, t.cu_launch, t.coop_launch,
	       t.graph_launches, t.memcpy_async_calls, t.memset_calls, t.memset_async_calls,
	       t.kernels, t.htod);
	return 0;
}
