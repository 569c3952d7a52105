/*
 * cupti_cost.cu - what each CUPTI mechanism adds to a kernel launch, measured inside one process.
 *
 *   cupti_cost [ROUNDS] [LAUNCHES]       (defaults 15 and 100000; build: nvcc -O2 ... -lcupti)
 *
 * Measuring a profiler's cost per launch across processes (tests/gpu/launch_variants.sh) is noisy on
 * a shared machine: runs of the same program differ by 10-20% in CPU time. Here one process subscribes
 * to CUPTI itself and runs the same loop of empty-kernel launches (the launch_loop.cu loop: waits for
 * the GPU every 256 launches, blocking sync) under each configuration in turn, round after round, with
 * the configurations in a rotating order; CUPTI activity kinds and callbacks are turned on and off
 * between the loops. For each configuration it prints the median over the rounds of the CPU time per
 * launch of the launching thread and of the process, and the median of its difference to the
 * configuration without anything, taken in the same round. Activity buffers are plain 4 MiB
 * buffers, read and dropped on completion (counted, not decoded), and flushed after every loop,
 * outside the timed part. It also says how many kernel records carry the correlation id that the
 * launch callbacks saw, in the runtime and in the driver domain. Before the rounds (no CUPTI, subscribed,
 * buffer callbacks registered) and after them (nothing enabled, unsubscribed, after cuptiFinalize) the
 * same loop is timed in sequence ("phase:" lines): what CUPTI costs a launch once it is attached.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>
#include <cupti.h>

#define BUF_SIZE (4u << 20)
#define SYNC_EVERY 256

#define CHECK_CUDA(call)                                                                           \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "cupti_cost: %s failed: %s\n", #call,                      \
				cudaGetErrorString(e_));                                           \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)
#define CHECK_CUPTI(call)                                                                          \
	do {                                                                                       \
		CUptiResult r_ = (call);                                                           \
		if (r_ != CUPTI_SUCCESS) {                                                         \
			const char *s_ = "?";                                                      \
			cuptiGetResultString(r_, &s_);                                             \
			fprintf(stderr, "cupti_cost: %s failed: %s\n", #call, s_);                 \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

__global__ void cs_empty(void)
{
}

static const CUpti_CallbackId rt_launch_id = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
static const CUpti_CallbackId drv_launch_id = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
static long records;
static int callback_work; /* 0: return at once; 1: take a timestamp at enter and exit */

/* Correlation ids the launch callbacks saw, by domain (a bit per id, modulo the map's size), and
 * how many kernel records carry one of them: whether the driver call inside cudaLaunchKernel has
 * the kernel's correlation id, so that driver callbacks alone could time runtime launches. */
#define SEEN_BITS (1u << 24)
static unsigned char seen_rt[SEEN_BITS / 8], seen_drv[SEEN_BITS / 8];
static long kernels_read, kernels_rt_corr, kernels_drv_corr;

static void seen_set(unsigned char *map, uint32_t id)
{
	id &= SEEN_BITS - 1;
	map[id / 8] |= (unsigned char)(1u << (id % 8));
}

static int seen_has(const unsigned char *map, uint32_t id)
{
	id &= SEEN_BITS - 1;
	return map[id / 8] >> (id % 8) & 1;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = (uint8_t *)aligned_alloc(8, BUF_SIZE);
	*size = *buffer ? BUF_SIZE : 0;
	*max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
				      size_t valid)
{
	CUpti_Activity *rec = NULL;

	(void)ctx;
	(void)stream;
	(void)size;
	while (valid && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
		records++;
		if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
			uint32_t id = ((const CUpti_ActivityKernel10 *)rec)->correlationId;

			kernels_read++;
			kernels_rt_corr += seen_has(seen_rt, id);
			kernels_drv_corr += seen_has(seen_drv, id);
		}
	}
	free(buffer);
}

static void CUPTIAPI on_api(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			    const void *data)
{
	const CUpti_CallbackData *cb = (const CUpti_CallbackData *)data;
	uint64_t now;

	(void)userdata;
	if (cbid == rt_launch_id && domain == CUPTI_CB_DOMAIN_RUNTIME_API)
		seen_set(seen_rt, cb->correlationId);
	else if (cbid == drv_launch_id && domain == CUPTI_CB_DOMAIN_DRIVER_API)
		seen_set(seen_drv, cb->correlationId);
	if (!callback_work)
		return;
	cuptiGetTimestamp(&now);
	if (cb->callbackSite == CUPTI_API_ENTER && cb->correlationData)
		*cb->correlationData = now;
}

enum {
	K = 1,		/* CONCURRENT_KERNEL */
	MEM2 = 2,	/* MEMORY2 */
	SYNC = 4,	/* SYNCHRONIZATION */
	CPYSET = 8,	/* MEMCPY, MEMSET */
	CB = 16,	/* callbacks on cudaLaunchKernel and cuLaunchKernel */
	CBTS = 32,	/* ... taking timestamps */
	APIACT = 64,	/* API activity records for cudaLaunchKernel and cuLaunchKernel */
	CBSYNC = 128,	/* callbacks on cudaDeviceSynchronize */
	CBDRV = 256,	/* callbacks on cuLaunchKernel only (the driver call inside the launch) */
};

static const struct config {
	const char *name;
	int flags;
} configs[] = {
	{"nothing", 0},
	{"kernel activity", K},
	{"kernel + memcpy/memset activity", K | CPYSET},
	{"kernel + MEMORY2 activity", K | MEM2},
	{"kernel + SYNCHRONIZATION activity", K | SYNC},
	{"kernel + launch callbacks (empty)", K | CB},
	{"kernel + launch callbacks (timestamps)", K | CB | CBTS},
	{"kernel + launch API activity records", K | APIACT},
	{"kernel + driver launch callbacks only (timestamps)", K | CBDRV | CBTS},
	{"kernel + launch and sync callbacks (timestamps)", K | CB | CBTS | CBSYNC},
	{"all activity kinds + launch callbacks (cuscope today)", K | CPYSET | MEM2 | SYNC | CB | CBTS | CBSYNC},
};
#define NCONFIG (int)(sizeof(configs) / sizeof(configs[0]))

static CUpti_SubscriberHandle sub;
static CUpti_CallbackId rt_sync = CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020;

static void set_kind(CUpti_ActivityKind kind, int on)
{
	if (on)
		CHECK_CUPTI(cuptiActivityEnable(kind));
	else
		CHECK_CUPTI(cuptiActivityDisable(kind));
}

static void apply(int f)
{
	set_kind(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, f & K);
	set_kind(CUPTI_ACTIVITY_KIND_MEMORY2, f & MEM2);
	set_kind(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, f & SYNC);
	set_kind(CUPTI_ACTIVITY_KIND_MEMCPY, f & CPYSET);
	set_kind(CUPTI_ACTIVITY_KIND_MEMSET, f & CPYSET);
	CHECK_CUPTI(cuptiEnableCallback(!!(f & CB), sub, CUPTI_CB_DOMAIN_RUNTIME_API, rt_launch_id));
	CHECK_CUPTI(cuptiEnableCallback(!!(f & (CB | CBDRV)), sub, CUPTI_CB_DOMAIN_DRIVER_API,
					drv_launch_id));
	CHECK_CUPTI(cuptiEnableCallback(!!(f & CBSYNC), sub, CUPTI_CB_DOMAIN_RUNTIME_API, rt_sync));
	callback_work = !!(f & CBTS);
	CHECK_CUPTI(cuptiActivityEnableRuntimeApi(rt_launch_id, !!(f & APIACT)));
	CHECK_CUPTI(cuptiActivityEnableDriverApi(drv_launch_id, !!(f & APIACT)));
}

static double now_of(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The timed loop; thread and process CPU seconds per launch. */
static void run_loop(long n, double *thread_us, double *proc_us)
{
	double t0 = now_of(CLOCK_THREAD_CPUTIME_ID), p0 = now_of(CLOCK_PROCESS_CPUTIME_ID);

	for (long i = 0; i < n; i++) {
		cs_empty<<<1, 1>>>();
		if ((i + 1) % SYNC_EVERY == 0)
			CHECK_CUDA(cudaDeviceSynchronize());
	}
	CHECK_CUDA(cudaDeviceSynchronize());
	*thread_us = (now_of(CLOCK_THREAD_CPUTIME_ID) - t0) / (double)n * 1e6;
	*proc_us = (now_of(CLOCK_PROCESS_CPUTIME_ID) - p0) / (double)n * 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The states CUPTI passes through before and after the rotating rounds, measured in sequence (they
 * cannot alternate): rounds loops, the median CPU per launch of the thread and the process. */
static void phase(const char *name, int rounds, long n)
{
	double t[1024], p[1024];

	for (int r = 0; r < rounds; r++)
		run_loop(n, &t[r], &p[r]);
	printf("phase: %-50s thread %.3f process %.3f\n", name, median(t, rounds), median(p, rounds));
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 15;
	long n = argc > 2 ? atol(argv[2]) : 100000;
	double *th, *pr, tmp[2][1024];

	if (rounds < 1 || rounds > 1024 || n < SYNC_EVERY) {
		fprintf(stderr, "usage: cupti_cost [ROUNDS (1..1024)] [LAUNCHES (>= %d)]\n", SYNC_EVERY);
		return 2;
	}
	th = (double *)calloc((size_t)rounds * NCONFIG, sizeof(double));
	pr = (double *)calloc((size_t)rounds * NCONFIG, sizeof(double));
	CHECK_CUDA(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
	CHECK_CUDA(cudaFree(0));
	run_loop(n / 10, &tmp[0][0], &tmp[1][0]); /* warm the launch path */
	phase("no CUPTI (before subscribing)", rounds, n);
	CHECK_CUPTI(cuptiSubscribe(&sub, on_api, NULL));
	phase("subscribed, no activity API called yet", rounds, n);
	CHECK_CUPTI(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
	phase("activity buffer callbacks registered", rounds, n);
	for (int c = 0; c < NCONFIG; c++) { /* warm every path once */
		double a, b;

		apply(configs[c].flags);
		run_loop(n / 10, &a, &b);
	}
	for (int r = 0; r < rounds; r++) {
		for (int j = 0; j < NCONFIG; j++) {
			int c = (j + r) % NCONFIG;

			apply(configs[c].flags);
			run_loop(n, &th[c * rounds + r], &pr[c * rounds + r]);
			apply(0);
			CHECK_CUPTI(cuptiActivityFlushAll(1));
		}
	}
	printf("%-56s %14s %14s %14s %14s\n", "configuration (us of CPU per launch, median)", "thread",
	       "added", "process", "added");
	for (int c = 0; c < NCONFIG; c++) {
		double mt, mp, at, ap;

		for (int r = 0; r < rounds; r++) {
			tmp[0][r] = th[c * rounds + r] - th[r];
			tmp[1][r] = pr[c * rounds + r] - pr[r];
		}
		at = median(tmp[0], rounds);
		ap = median(tmp[1], rounds);
		memcpy(tmp[0], th + c * rounds, sizeof(double) * (size_t)rounds);
		memcpy(tmp[1], pr + c * rounds, sizeof(double) * (size_t)rounds);
		mt = median(tmp[0], rounds);
		mp = median(tmp[1], rounds);
		printf("%-56s %14.3f %+14.3f %14.3f %+14.3f\n", configs[c].name, mt, at, mp, ap);
	}
	apply(0);
	CHECK_CUPTI(cuptiActivityFlushAll(1));
	phase("after the rounds, nothing enabled", rounds, n);
	CHECK_CUPTI(cuptiUnsubscribe(sub));
	phase("unsubscribed", rounds, n);
	CHECK_CUPTI(cuptiFinalize());
	phase("after cuptiFinalize", rounds, n);
	printf("info: %d rounds of %ld launches per configuration; %ld activity records read\n", rounds,
	       n, records);
	printf("kernel records: %ld; with the correlation id of a cudaLaunchKernel callback: %ld; of a "
	       "cuLaunchKernel callback: %ld\n",
	       kernels_read, kernels_rt_corr, kernels_drv_corr);
	return 0;
}
