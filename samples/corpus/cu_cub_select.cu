// cu_cub_select.cu - negative: stream compaction with CUB every step, the count never leaves the GPU.
//
// Each step: a scoring kernel over 16M items, `cub::DeviceSelect::Flagged` keeping the items over a threshold
// (CUB's select kernels, whose template arguments name ScanTileState: the look-back machinery of a scan), then
// a kernel that processes the selected items, reading their count from device memory (grid-stride up to
// *d_count). No DtoH copy, no host wait in the loop, no prefix sum of the program's data. Labels: nothing of
// the five (cuda-core-scan and d2h-sync must not).
#include <cub/cub.cuh>

#include "corpus_cuda.h"

__global__ void score_kernel(const float *x, float *score, char *flag, int n, float shift) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		float s = sinf(x[i] + shift) * x[i];
		score[i] = s;
		flag[i] = s > 0.5f;
	}
}

__global__ void use_selected_kernel(const float *sel, const int *count, float *acc) {
	float local = 0;
	int c = *count;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < c; i += gridDim.x * blockDim.x)
		local += sqrtf(sel[i]);
	for (int o = 16; o > 0; o >>= 1)
		local += __shfl_down_sync(0xffffffff, local, o);
	if ((threadIdx.x & 31) == 0)
		atomicAdd(acc, local);
}

int main(int argc, char **argv) {
	corpus_args a = corpus_parse(argc, argv);
	const int n = 16 << 20;
	float *x, *score, *sel, *acc;
	char *flag;
	int *count;
	CK(cudaMalloc(&x, n * sizeof(float)));
	CK(cudaMalloc(&score, n * sizeof(float)));
	CK(cudaMalloc(&sel, n * sizeof(float)));
	CK(cudaMalloc(&flag, n));
	CK(cudaMalloc(&count, sizeof(int)));
	CK(cudaMalloc(&acc, sizeof(float)));
	CK(cudaMemset(acc, 0, sizeof(float)));
	float *h = (float *)malloc(n * sizeof(float));
	for (int i = 0; i < n; i++)
		h[i] = (float)((i * 2654435761u) % 10000) * 1e-3f;
	CK(cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice));
	void *tmp = nullptr;
	size_t tmp_bytes = 0;
	CK(cub::DeviceSelect::Flagged(tmp, tmp_bytes, score, flag, sel, count, n));
	CK(cudaMalloc(&tmp, tmp_bytes));
	double t0 = 0;
	for (int s = 0; s < a.warmup + a.steps; s++) {
		if (s == a.warmup) {
			CK(cudaDeviceSynchronize());
			t0 = now_s();
		}
		score_kernel<<<(n + 255) / 256, 256>>>(x, score, flag, n, 0.01f * (s % 10));
		CK(cub::DeviceSelect::Flagged(tmp, tmp_bytes, score, flag, sel, count, n));
		use_selected_kernel<<<264, 256>>>(sel, count, acc);
	}
	float r;
	CK(cudaMemcpy(&r, acc, sizeof r, cudaMemcpyDeviceToHost));
	printf("info: step_ms=%.3f acc=%.4e\n", (now_s() - t0) * 1e3 / a.steps, r);
	printf("done steps=%d\n", a.steps);
	return 0;
}
