// cu_row_cumsum.cu - a hand-written prefix sum over 16 rows of 2^20 elements takes most of each step.
//
// Each step: a row-wise running total (`row_cumsum_kernel`: one block per row, each thread walking a
// contiguous chunk of 4096 elements serially, then a block-wide combine of the chunk totals) followed by a
// light elementwise normalisation and a reduction. Only 16 blocks run on the whole GPU; the scan is bound by
// each thread's serial walk. Labels: cuda-core-scan must be found (a custom kernel, no PyTorch).
#include "corpus_cuda.h"

#define ROWS 16
#define COLS (1 << 20)
#define THREADS 256
#define CHUNK (COLS / THREADS)

__global__ void row_cumsum_kernel(const float *in, float *out) {
	__shared__ float tot[THREADS];
	const float *r = in + (size_t)blockIdx.x * COLS + threadIdx.x * CHUNK;
	float *o = out + (size_t)blockIdx.x * COLS + threadIdx.x * CHUNK;
	float acc = 0;
	for (int i = 0; i < CHUNK; i++) {
		acc += r[i];
		o[i] = acc;
	}
	tot[threadIdx.x] = acc;
	__syncthreads();
	if (threadIdx.x == 0)
		for (int t = 1; t < THREADS; t++)
			tot[t] += tot[t - 1];
	__syncthreads();
	float base = threadIdx.x ? tot[threadIdx.x - 1] : 0;
	for (int i = 0; i < CHUNK; i++)
		o[i] += base;
}

__global__ void normalise_kernel(float *x, size_t n) {
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = x[i] / (float)((i % COLS) + 1);
}

__global__ void sum_kernel(const float *x, size_t n, float *out) {
	float acc = 0;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		acc += x[i];
	for (int o = 16; o > 0; o >>= 1)
		acc += __shfl_down_sync(0xffffffff, acc, o);
	if ((threadIdx.x & 31) == 0)
		atomicAdd(out, acc);
}

int main(int argc, char **argv) {
	corpus_args a = corpus_parse(argc, argv);
	size_t n = (size_t)ROWS * COLS;
	float *in, *out, *tot;
	CK(cudaMalloc(&in, n * sizeof(float)));
	CK(cudaMalloc(&out, n * sizeof(float)));
	CK(cudaMalloc(&tot, sizeof(float)));
	float *h = (float *)malloc(n * sizeof(float));
	for (size_t i = 0; i < n; i++)
		h[i] = (float)(i % 7) - 3.0f;
	CK(cudaMemcpy(in, h, n * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMemset(tot, 0, sizeof(float)));
	double t0 = 0;
	for (int s = 0; s < a.warmup + a.steps; s++) {
		if (s == a.warmup) {
			CK(cudaDeviceSynchronize());
			t0 = now_s();
		}
		row_cumsum_kernel<<<ROWS, THREADS>>>(in, out);
		normalise_kernel<<<(unsigned)((n + 255) / 256), 256>>>(out, n);
		sum_kernel<<<264, 256>>>(out, n, tot);
	}
	float r;
	CK(cudaMemcpy(&r, tot, sizeof r, cudaMemcpyDeviceToHost));
	printf("info: step_ms=%.3f total=%.4e\n", (now_s() - t0) * 1e3 / a.steps, r);
	printf("done steps=%d\n", a.steps);
	return 0;
}
