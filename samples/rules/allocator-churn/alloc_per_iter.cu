// allocator-churn/alloc_per_iter.cu - a temporary buffer cudaMalloc'ed and cudaFree'd in every iteration.
//
// The classic CUDA C anti-pattern: a solver loop that needs a 64 MiB scratch buffer for each iteration
// allocates it at the top of the loop and frees it at the bottom. Each iteration runs five kernels on it:
// three compute-bound passes over its 16M floats (a chain of FMAs per element; about 100-300 us each on an
// H200, to be confirmed on the GPU) and a two-kernel reduction whose total is kept on the device (a block
// sum, then one block adding the partial sums to a running total in a fixed order, so the result does not
// depend on timing).
//
//   bad:   per iteration cudaMalloc(64 MiB), 5 kernels, cudaFree. cudaFree waits for the device to finish
//          the iteration's kernels, so the host can never queue the next iteration ahead: the GPU idles
//          while the host is in cudaFree and the next cudaMalloc, then until the first kernel is launched.
//   fixed: the buffer allocated once before the loop and freed after it; the host queues the kernels of
//          many iterations ahead and the GPU runs them back to back.
//
// Seen at the CUDA level, per steady iteration in bad mode: one cudaMalloc and one cudaFree of 64 MiB (device
// memory rows of that size), the five kernels between them, GPU idle during the two calls. A correct analyzer
// reports allocator-churn in every steady iteration of `bad`, and nothing for allocator-churn in `fixed`
// (its one cudaMalloc and cudaFree are outside the steady iterations); neither is empty-cache-in-loop or
// memory-ceiling-thrash (one release at a time, no failed allocation).
//
// Build and run (samples/rules/record_all.sh builds it with $NVCC into a temporary directory):
//
//   nvcc -O2 -arch=sm_90 -o alloc_per_iter samples/rules/allocator-churn/alloc_per_iter.cu
//   ./alloc_per_iter bad|fixed [steps (default 40)] [warmup (default 5)]
//
// Last line: `done steps=N mode=bad|fixed checksum=... us_per_iter=...` (checksum is the same in both modes
// and from run to run; us_per_iter is the wall time per steady iteration). Any failed CUDA call is reported
// on stderr and the program exits with status 1; bad arguments exit with status 2.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(call)                                                                                    \
	do {                                                                                               \
		cudaError_t err_ = (call);                                                                     \
		if (err_ != cudaSuccess) {                                                                     \
			fprintf(stderr, "alloc_per_iter: %s failed: %s (%s:%d)\n", #call, cudaGetErrorString(err_), \
			        __FILE__, __LINE__);                                                               \
			exit(1);                                                                                   \
		}                                                                                              \
	} while (0)

// a kernel launch: the launch error, if any, is reported like a failed call
#define CHECK_LAUNCH() CHECK(cudaGetLastError())

static const size_t N = (size_t)16 << 20;  // floats in the scratch buffer: 64 MiB
static const int THREADS = 256;
static const int BLOCKS = 1024;            // grid-stride loops; also the number of partial sums
static const int FMAS = 256;               // FMAs per element in each compute pass

// first pass: fill the buffer from the element index and the iteration, then a chain of FMAs
__global__ void pass_init(float *x, size_t n, int iter, int fmas)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		float v = (float)((i * 2654435761u + (unsigned)iter) & 1023u) * (1.0f / 1024.0f);
		for (int k = 0; k < fmas; k++)
			v = fmaf(v, 0.999f, 0.0005f);
		x[i] = v;
	}
}

// the other passes: a chain of FMAs on each element (contracting towards b / (1 - a): no overflow)
__global__ void pass_fma(float *x, size_t n, float a, float b, int fmas)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		float v = x[i];
		for (int k = 0; k < fmas; k++)
			v = fmaf(v, a, b);
		x[i] = v;
	}
}

// one partial sum per block, in a fixed order (tree in shared memory)
__global__ void block_sum(const float *x, size_t n, double *partial)
{
	__shared__ double s[THREADS];
	double acc = 0.0;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		acc += x[i];
	s[threadIdx.x] = acc;
	__syncthreads();
	for (int w = blockDim.x / 2; w > 0; w /= 2) {
		if ((int)threadIdx.x < w)
			s[threadIdx.x] += s[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		partial[blockIdx.x] = s[0];
}

// one thread adds the partial sums to the running total, in order
__global__ void add_total(const double *partial, int n, double *total)
{
	double acc = 0.0;
	for (int i = 0; i < n; i++)
		acc += partial[i];
	*total += acc;
}

static void iteration(float *buf, double *partial, double *total, int iter)
{
	pass_init<<<BLOCKS, THREADS>>>(buf, N, iter, FMAS);
	CHECK_LAUNCH();
	pass_fma<<<BLOCKS, THREADS>>>(buf, N, 0.998f, 0.001f, FMAS);
	CHECK_LAUNCH();
	pass_fma<<<BLOCKS, THREADS>>>(buf, N, 0.997f, 0.002f, FMAS);
	CHECK_LAUNCH();
	block_sum<<<BLOCKS, THREADS>>>(buf, N, partial);
	CHECK_LAUNCH();
	add_total<<<1, 1>>>(partial, BLOCKS, total);
	CHECK_LAUNCH();
}

static int parse_count(const char *s, const char *what, int min)
{
	char *end = NULL;
	long v = strtol(s, &end, 10);
	if (end == s || *end != '\0' || v < min || v > 1000000) {
		fprintf(stderr, "alloc_per_iter: bad %s '%s' (an integer from %d to 1000000)\n", what, s, min);
		exit(2);
	}
	return (int)v;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 4 || (strcmp(argv[1], "bad") != 0 && strcmp(argv[1], "fixed") != 0)) {
		fprintf(stderr, "usage: alloc_per_iter bad|fixed [steps] [warmup]\n");
		return 2;
	}
	const bool bad = strcmp(argv[1], "bad") == 0;
	const int steps = argc > 2 ? parse_count(argv[2], "steps", 1) : 40;
	const int warmup = argc > 3 ? parse_count(argv[3], "warmup", 0) : 5;

	double *partial = NULL, *total = NULL;
	CHECK(cudaMalloc(&partial, BLOCKS * sizeof(double)));
	CHECK(cudaMalloc(&total, sizeof(double)));
	CHECK(cudaMemset(total, 0, sizeof(double)));

	float *buf = NULL;
	if (!bad)
		CHECK(cudaMalloc(&buf, N * sizeof(float)));  // the fix: once, outside the loop

	std::chrono::steady_clock::time_point t0;
	for (int it = 0; it < warmup + steps; it++) {
		if (it == warmup) {
			CHECK(cudaDeviceSynchronize());
			t0 = std::chrono::steady_clock::now();
		}
		if (bad)
			CHECK(cudaMalloc(&buf, N * sizeof(float)));  // the anti-pattern: a new buffer every iteration
		iteration(buf, partial, total, it);
		if (bad) {
			CHECK(cudaFree(buf));  // waits for the iteration's kernels
			buf = NULL;
		}
	}
	CHECK(cudaDeviceSynchronize());
	double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();

	double checksum = 0.0;
	CHECK(cudaMemcpy(&checksum, total, sizeof(double), cudaMemcpyDeviceToHost));
	if (buf)
		CHECK(cudaFree(buf));
	CHECK(cudaFree(partial));
	CHECK(cudaFree(total));
	printf("done steps=%d mode=%s checksum=%.6e us_per_iter=%.1f\n", steps, bad ? "bad" : "fixed", checksum,
	       us / steps);
	return 0;
}
