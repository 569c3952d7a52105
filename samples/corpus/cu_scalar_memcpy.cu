// cu_scalar_memcpy.cu - a Jacobi solver that reads its 4-byte residual with a synchronous cudaMemcpy every
// iteration.
//
// 2D Jacobi sweeps on a 2048x2048 grid (tens of microseconds of GPU work per sweep) with the residual reduced
// into one float, and `cudaMemcpy(&res, d_res, 4, cudaMemcpyDeviceToHost)` after each sweep to test
// convergence on the host (it never converges in the run); a step is 10 sweeps. The synchronous copy of a
// scalar waits for the sweep; the GPU then idles while the host checks, logs, and launches the next memset
// and sweep: the idle after each wait is of the order of the sweep itself, maybe under 20 us. No cudaStreamSynchronize or cudaDeviceSynchronize in the loop: the copy is the wait. Labels:
// d2h-sync must be found.
#include "corpus_cuda.h"

#define N 2048

__global__ void jacobi_kernel(const float *u, float *v, const float *f, float *res) {
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
	float d = 0; // boundary cells stay fixed; every lane takes part in the warp reduction
	if (x >= 1 && y >= 1 && x < N - 1 && y < N - 1) {
		int i = y * N + x;
		float nv = 0.25f * (u[i - 1] + u[i + 1] + u[i - N] + u[i + N] - f[i]);
		v[i] = nv;
		d = fabsf(nv - u[i]);
	}
	// one atomic per warp
	for (int o = 16; o > 0; o >>= 1)
		d = fmaxf(d, __shfl_down_sync(0xffffffff, d, o));
	if ((threadIdx.x & 31) == 0)
		atomicMax((int *)res, __float_as_int(d)); // non-negative floats order like ints
}

int main(int argc, char **argv) {
	corpus_args a = corpus_parse(argc, argv);
	const int iters_per_step = 10;
	float *u, *v, *f, *res;
	size_t bytes = (size_t)N * N * sizeof(float);
	CK(cudaMalloc(&u, bytes));
	CK(cudaMalloc(&v, bytes));
	CK(cudaMalloc(&f, bytes));
	CK(cudaMalloc(&res, sizeof(float)));
	CK(cudaMemset(u, 0, bytes));
	CK(cudaMemset(v, 0, bytes));
	float *hf = (float *)malloc(bytes);
	for (int i = 0; i < N * N; i++)
		hf[i] = (i % 977 == 0) ? 1.0f : 0.0f;
	CK(cudaMemcpy(f, hf, bytes, cudaMemcpyHostToDevice));
	dim3 blk(32, 8), grd(N / 32, N / 8);
	char log[128];
	float r = 0;
	double t0 = 0;
	for (int s = 0; s < a.warmup + a.steps; s++) {
		if (s == a.warmup) {
			CK(cudaDeviceSynchronize());
			t0 = now_s();
		}
		for (int k = 0; k < iters_per_step; k++) {
			CK(cudaMemsetAsync(res, 0, sizeof(float)));
			jacobi_kernel<<<grd, blk>>>(u, v, f, res);
			float *t = u;
			u = v;
			v = t;
			CK(cudaMemcpy(&r, res, sizeof r, cudaMemcpyDeviceToHost)); // the wait
			snprintf(log, sizeof log, "iter %d residual %.6e", s * iters_per_step + k, r);
			if (r < 1e-12f)
				break;
		}
	}
	CK(cudaDeviceSynchronize());
	printf("info: step_ms=%.3f %s\n", (now_s() - t0) * 1e3 / a.steps, log);
	printf("done steps=%d sweeps_per_step=%d\n", a.steps, iters_per_step);
	return 0;
}
