// cu_rare_field_dump.cu - a GPU-bound stencil simulation that dumps its whole field every 15th step.
//
// Each step: 8 diffusion sweeps over a 8192x8192 field (a few ms of GPU work, queued far ahead). Every 15th
// step the host copies the whole 256 MiB field back with a synchronous cudaMemcpy into pageable memory and
// computes a checksum of it (a "checkpoint"): tens of milliseconds of copy and host work during which nothing
// else is queued. 3 of 40 steady steps (7.5%), each costing several steps' worth of GPU time. Labels: d2h-sync
// must be found (rare, not cheap).
#include "corpus_cuda.h"

#define N 8192

__global__ void diffuse_kernel(const float *u, float *v) {
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
	if (x >= N || y >= N)
		return;
	int i = y * N + x;
	float c = u[i];
	float l = x > 0 ? u[i - 1] : c, r = x < N - 1 ? u[i + 1] : c;
	float d = y > 0 ? u[i - N] : c, t = y < N - 1 ? u[i + N] : c;
	v[i] = c + 0.1f * (l + r + d + t - 4.0f * c);
}

int main(int argc, char **argv) {
	corpus_args a = corpus_parse(argc, argv);
	size_t cells = (size_t)N * N, bytes = cells * sizeof(float);
	float *u, *v;
	CK(cudaMalloc(&u, bytes));
	CK(cudaMalloc(&v, bytes));
	float *h = (float *)malloc(bytes);
	for (size_t i = 0; i < cells; i++)
		h[i] = (i % 4099 == 0) ? 100.0f : 0.0f;
	CK(cudaMemcpy(u, h, bytes, cudaMemcpyHostToDevice));
	dim3 blk(32, 8), grd(N / 32, N / 8);
	double sum = 0, t0 = 0;
	int dumps = 0;
	for (int s = 0; s < a.warmup + a.steps; s++) {
		if (s == a.warmup) {
			CK(cudaDeviceSynchronize());
			t0 = now_s();
		}
		for (int k = 0; k < 8; k++) {
			diffuse_kernel<<<grd, blk>>>(u, v);
			float *t = u;
			u = v;
			v = t;
		}
		if (s % 15 == 14) {
			CK(cudaMemcpy(h, u, bytes, cudaMemcpyDeviceToHost));
			double cs = 0;
			for (size_t i = 0; i < cells; i++)
				cs += h[i];
			sum += cs;
			dumps++;
		}
	}
	CK(cudaDeviceSynchronize());
	printf("info: step_ms=%.3f\n", (now_s() - t0) * 1e3 / a.steps);
	printf("done steps=%d dumps=%d checksum=%.1f\n", a.steps, dumps, sum);
	return 0;
}
