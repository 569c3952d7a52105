/*
 * edge_cases.cu - CUDA C programs that stress the recorder where samples/cuda/counts.cu does not.
 *
 *   edge_cases threads [THREADS] [KERNELS]   host threads launching and copying at once, each on its
 *                                            own stream (defaults 8 and 2000)
 *   edge_cases copies                        2D copies and sets, symbol copies, a pitched, a managed and
 *                                            a host-mapped allocation, an async copy to pageable memory
 *   edge_cases reset                         work, cudaDeviceReset, more work in the new context
 *   edge_cases fault                         a kernel dereferences a bad address: the context is lost,
 *                                            the program exits with status 3
 *   edge_cases nosync_exit                   returns from main with a kernel still running
 *   edge_cases multi_gpu                     kernels, copies and sets on two GPUs and a peer copy
 *                                            between them (exit status 77 with fewer than 2 GPUs)
 *
 * Each mode checks its own results and prints, as its last stdout line, what a trace of it must hold
 * ("expect key=value ...", keys: tests/gpu/check_trace.py). Lines starting with "info:" may change
 * from run to run.
 *
 *   nvcc -O2 -arch=sm_90 -o edge_cases edge_cases.cu
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#define CHECK(call)                                                                                \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "edge_cases: line %d: %s failed: %s\n", __LINE__, #call,   \
				cudaGetErrorString(e_));                                           \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define N 4096 /* ints per buffer */

__global__ void cs_inc(int *a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		a[i]++;
}

__global__ void cs_spin(long long cycles)
{
	long long t0 = clock64();

	while (clock64() - t0 < cycles)
		;
}

__global__ void cs_bad_store(int *p)
{
	*p = 1;
}

__device__ int cs_symbol[N];

static void die(const char *what)
{
	fprintf(stderr, "edge_cases: %s\n", what);
	exit(1);
}

static void check_all(const int *h, int n, int want, const char *what)
{
	for (int i = 0; i < n; i++)
		if (h[i] != want) {
			fprintf(stderr, "edge_cases: %s: element %d is %d, expected %d\n", what, i, h[i],
				want);
			exit(1);
		}
}

/* ---- threads ---- */

struct worker {
	int kernels;
	int ok;
};

static void *worker_main(void *arg)
{
	struct worker *w = (struct worker *)arg;
	cudaStream_t s;
	int *h, *d;

	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaHostAlloc((void **)&h, N * sizeof(int), cudaHostAllocDefault));
	CHECK(cudaMalloc((void **)&d, N * sizeof(int)));
	memset(h, 0, N * sizeof(int));
	CHECK(cudaMemcpyAsync(d, h, N * sizeof(int), cudaMemcpyHostToDevice, s));
	for (int k = 0; k < w->kernels; k++)
		cs_inc<<<N / 256, 256, 0, s>>>(d, N);
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpyAsync(h, d, N * sizeof(int), cudaMemcpyDeviceToHost, s));
	CHECK(cudaStreamSynchronize(s));
	check_all(h, N, w->kernels, "threads");
	CHECK(cudaFree(d));
	CHECK(cudaFreeHost(h));
	CHECK(cudaStreamDestroy(s));
	w->ok = 1;
	return NULL;
}

static int mode_threads(int nthreads, int kernels)
{
	pthread_t th[64];
	struct worker w[64];
	long nb = (long)nthreads * N * (long)sizeof(int);

	if (nthreads < 1 || nthreads > 64 || kernels < 1)
		die("threads: THREADS must be 1..64 and KERNELS at least 1");
	CHECK(cudaFree(0));
	for (int i = 0; i < nthreads; i++) {
		w[i].kernels = kernels;
		w[i].ok = 0;
		if (pthread_create(&th[i], NULL, worker_main, &w[i]))
			die("cannot start a thread");
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		if (!w[i].ok)
			die("a thread failed");
	}
	printf("threads %d, %d kernels each: ok\n", nthreads, kernels);
	printf("expect kernels=%ld kname.cs_inc=%ld memcpy_htod=%d memcpy_dtoh=%d bytes_htod=%ld "
	       "bytes_dtoh=%ld memcpy_async=%d allocs=%d frees=%d host_waits_stream=%d "
	       "host_waits=%d static_allocs=1 dropped=0\n",
	       (long)nthreads * kernels, (long)nthreads * kernels, nthreads, nthreads, nb, nb,
	       2 * nthreads, nthreads, nthreads, nthreads, nthreads);
	return 0;
}

/* ---- copies ---- */

static int mode_copies(void)
{
	const size_t w = 256 * sizeof(int), rows = 16; /* a 2D block: 16 rows of 1 KiB */
	int *h = (int *)calloc(N, sizeof(int)), *h2 = (int *)calloc(N, sizeof(int));
	int *d, *d2, *pitched, *managed, *mapped_h, *mapped_d;
	size_t pitch;
	cudaStream_t s;

	if (!h || !h2)
		die("out of memory");
	CHECK(cudaStreamCreate(&s));
	CHECK(cudaMalloc((void **)&d, N * sizeof(int)));
	CHECK(cudaMalloc((void **)&d2, N * sizeof(int)));
	CHECK(cudaMallocPitch((void **)&pitched, &pitch, w, rows));
	CHECK(cudaMallocManaged((void **)&managed, N * sizeof(int), cudaMemAttachGlobal));
	CHECK(cudaHostAlloc((void **)&mapped_h, N * sizeof(int), cudaHostAllocMapped));
	CHECK(cudaHostGetDevicePointer((void **)&mapped_d, mapped_h, 0));

	/* 2D: a set of the whole block, then a copy of the host rows into it (HtoD, w * rows bytes) */
	CHECK(cudaMemset2D(pitched, pitch, 0, w, rows));
	for (int i = 0; i < N; i++)
		h[i] = 7;
	CHECK(cudaMemcpy2D(pitched, pitch, h, w, w, rows, cudaMemcpyHostToDevice));
	cs_inc<<<(int)(w * rows / sizeof(int) / 256), 256>>>(pitched, 0); /* n = 0: touches nothing */
	CHECK(cudaMemcpy2D(h2, w, pitched, pitch, w, rows, cudaMemcpyDeviceToHost));
	check_all(h2, (int)(w * rows / sizeof(int)), 7, "2D copy");

	/* symbols: HtoD and DtoH, N ints each */
	CHECK(cudaMemcpyToSymbol(cs_symbol, h, N * sizeof(int)));
	CHECK(cudaMemcpyFromSymbol(h2, cs_symbol, N * sizeof(int)));
	check_all(h2, N, 7, "symbol copy");

	/* device to device, then an async copy into pageable memory (the runtime makes it wait) */
	CHECK(cudaMemcpy(d, h, N * sizeof(int), cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(d2, d, N * sizeof(int), cudaMemcpyDeviceToDevice));
	cs_inc<<<N / 256, 256, 0, s>>>(d2, N);
	CHECK(cudaMemcpyAsync(h2, d2, N * sizeof(int), cudaMemcpyDeviceToHost, s));
	CHECK(cudaStreamSynchronize(s));
	check_all(h2, N, 8, "pageable async copy");

	/* managed and mapped memory: kernels write where the host reads, no copies */
	memset(managed, 0, N * sizeof(int));
	memset(mapped_h, 0, N * sizeof(int));
	cs_inc<<<N / 256, 256>>>(managed, N);
	cs_inc<<<N / 256, 256>>>(mapped_d, N);
	CHECK(cudaDeviceSynchronize());
	check_all(managed, N, 1, "managed memory");
	check_all(mapped_h, N, 1, "mapped memory");

	CHECK(cudaFree(d));
	CHECK(cudaFree(d2));
	CHECK(cudaFree(pitched));
	CHECK(cudaFree(managed));
	CHECK(cudaFreeHost(mapped_h));
	CHECK(cudaStreamDestroy(s));
	free(h);
	free(h2);
	printf("copies: ok\n");
	/* HtoD: 2D, symbol, plain; DtoH: 2D, symbol, async-to-pageable; DtoD: 1 */
	printf("expect kernels=4 memcpy_htod=3 memcpy_dtoh=3 memcpy_dtod=1 bytes_htod=%zu bytes_dtoh=%zu "
	       "bytes_dtod=%zu memset=1 bytes_memset=%zu memcpy_async=1 host_waits_stream=1 "
	       "host_waits_device=1 allocs>=3 frees>=3 dropped=0\n",
	       w * rows + 2 * N * sizeof(int), w * rows + 2 * N * sizeof(int), N * sizeof(int),
	       w * rows);
	return 0;
}

/* ---- reset ---- */

static int run_kernels(int n)
{
	int *d, *h = (int *)calloc(N, sizeof(int));

	if (!h)
		die("out of memory");
	CHECK(cudaMalloc((void **)&d, N * sizeof(int)));
	CHECK(cudaMemset(d, 0, N * sizeof(int)));
	for (int k = 0; k < n; k++)
		cs_inc<<<N / 256, 256>>>(d, N);
	CHECK(cudaMemcpy(h, d, N * sizeof(int), cudaMemcpyDeviceToHost));
	check_all(h, N, n, "reset");
	CHECK(cudaFree(d));
	free(h);
	return n;
}

static int mode_reset(void)
{
	int k = run_kernels(10);

	CHECK(cudaDeviceReset());
	k += run_kernels(5); /* a new primary context */
	CHECK(cudaDeviceReset());
	printf("reset: ok\n");
	/* the module's __device__ variable: loaded once per context */
	printf("expect kernels=%d memcpy_dtoh=2 memset=2 allocs=2 frees=2 static_allocs=2 dropped=0\n",
	       k);
	return 0;
}

/* ---- fault ---- */

static int mode_fault(void)
{
	int k = run_kernels(5);
	cudaError_t e;

	cs_bad_store<<<1, 1>>>((int *)(uintptr_t)0x10);
	e = cudaDeviceSynchronize();
	printf("fault: %s\n", cudaGetErrorName(e));
	/* the kernels before the fault ran and are recorded; the faulting one may be lost with the
	 * context */
	printf("expect kernels>=%d kname.cs_inc=%d\n", k, k);
	fflush(stdout);
	return e == cudaErrorIllegalAddress ? 3 : 1;
}

/* ---- nosync_exit ---- */

static int mode_nosync_exit(void)
{
	int k = run_kernels(20);

	cs_spin<<<1, 1>>>(1000000000ll); /* about half a second; main returns while it runs */
	CHECK(cudaGetLastError());
	printf("nosync_exit: returning with a kernel running\n");
	printf("expect kernels>=%d kname.cs_inc=%d\n", k, k);
	return 0;
}

/* ---- multi_gpu ---- */

static int mode_multi_gpu(void)
{
	const int kernels[2] = {5, 7};
	static int h[N];
	int *d[2], ndev = 0, peer = 0;

	CHECK(cudaGetDeviceCount(&ndev));
	if (ndev < 2) {
		fprintf(stderr, "multi_gpu: needs 2 GPUs, found %d\n", ndev);
		return 77;
	}
	for (int dev = 0; dev < 2; dev++) {
		CHECK(cudaSetDevice(dev));
		CHECK(cudaMalloc(&d[dev], N * sizeof(int)));
		CHECK(cudaMemset(d[dev], 0, N * sizeof(int)));
		for (int k = 0; k < kernels[dev]; k++)
			cs_inc<<<(N + 255) / 256, 256>>>(d[dev], N);
		CHECK(cudaGetLastError());
		CHECK(cudaMemcpy(h, d[dev], N * sizeof(int), cudaMemcpyDeviceToHost));
		check_all(h, N, kernels[dev], "multi_gpu: device buffer");
	}
	CHECK(cudaSetDevice(0));
	CHECK(cudaDeviceCanAccessPeer(&peer, 0, 1));
	if (peer)
		CHECK(cudaDeviceEnablePeerAccess(1, 0));
	CHECK(cudaMemcpyPeer(d[1], 1, d[0], 0, N * sizeof(int)));
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaSetDevice(1));
	CHECK(cudaMemcpy(h, d[1], N * sizeof(int), cudaMemcpyDeviceToHost));
	check_all(h, N, kernels[0], "multi_gpu: peer copy");
	for (int dev = 0; dev < 2; dev++) {
		CHECK(cudaSetDevice(dev));
		CHECK(cudaFree(d[dev]));
	}
	printf("info: peer access %s\n", peer ? "on" : "off");
	printf("expect kernels=%d kernels_device.0=%d kernels_device.1=%d memcpy_ptop=1 "
	       "memcpy=4 memcpy_dtoh=3 memcpy_device.0>=1 memcpy_device.1>=2 memset=2 allocs=2 frees=2 devices=2 dropped=0\n",
	       kernels[0] + kernels[1], kernels[0], kernels[1]);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(mode, "threads") == 0)
		return mode_threads(argc > 2 ? atoi(argv[2]) : 8, argc > 3 ? atoi(argv[3]) : 2000);
	if (strcmp(mode, "copies") == 0)
		return mode_copies();
	if (strcmp(mode, "reset") == 0)
		return mode_reset();
	if (strcmp(mode, "fault") == 0)
		return mode_fault();
	if (strcmp(mode, "nosync_exit") == 0)
		return mode_nosync_exit();
	if (strcmp(mode, "multi_gpu") == 0)
		return mode_multi_gpu();
	fprintf(stderr, "usage: edge_cases threads [THREADS] [KERNELS] | copies | reset | fault | "
			"nosync_exit | multi_gpu\n");
	return 2;
}
