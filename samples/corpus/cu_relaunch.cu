// cu_relaunch.cu - a host loop that relaunches a kernel every ~9 us, in two variants:
//
//   cu_relaunch starved   each kernel runs ~2 us: the GPU finishes each one long before the host launches the
//                         next, and idles ~80% of every step. Labels: launch-starvation must be found.
//   cu_relaunch fed       the same host loop, each kernel ~15 us: the launches run ahead of the GPU and the
//                         queue only grows (the host blocks when it is full). Labels: nothing of the five.
//
// A step is 200 launches (every 4th a different kernel) and one reduction; ~7 us of host bookkeeping per
// launch (plus the launch itself, ~2 us). No sync inside the loop.
#include "corpus_cuda.h"

__global__ void axpy_kernel(float *y, const float *x, float a, unsigned long long ns) {
	unsigned long long t0 = gtime();
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float v = y[i];
	do
		v = a * x[i] + v * 0.5f;
	while (gtime() - t0 < ns);
	y[i] = v;
}

__global__ void scale_kernel(float *y, float s, unsigned long long ns) {
	unsigned long long t0 = gtime();
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float v = y[i];
	do
		v *= s;
	while (gtime() - t0 < ns);
	y[i] = v;
}

__global__ void reduce_kernel(const float *y, float *out, int n) {
	__shared__ float s[256];
	float acc = 0;
	for (int i = threadIdx.x; i < n; i += 256)
		acc += y[i];
	s[threadIdx.x] = acc;
	__syncthreads();
	for (int k = 128; k > 0; k >>= 1) {
		if (threadIdx.x < k)
			s[threadIdx.x] += s[threadIdx.x + k];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		*out = s[0];
}

int main(int argc, char **argv) {
	corpus_args a = corpus_parse(argc, argv);
	bool fed = !strcmp(a.mode, "fed");
	if (!fed && strcmp(a.mode, "starved")) {
		fprintf(stderr, "usage: cu_relaunch starved|fed [--steps N]\n");
		return 2;
	}
	const int n = 64 * 256, per_step = 200;
	unsigned long long ns = fed ? 15000 : 2000;
	float *x, *y, *out, h;
	CK(cudaMalloc(&x, n * sizeof(float)));
	CK(cudaMalloc(&y, n * sizeof(float)));
	CK(cudaMalloc(&out, sizeof(float)));
	CK(cudaMemset(x, 0, n * sizeof(float)));
	CK(cudaMemset(y, 0, n * sizeof(float)));
	CK(cudaDeviceSynchronize());
	double t0 = 0;
	for (int s = 0; s < a.warmup + a.steps; s++) {
		if (s == a.warmup) {
			CK(cudaDeviceSynchronize());
			t0 = now_s();
		}
		for (int j = 0; j < per_step; j++) {
			if (j % 4 == 3)
				scale_kernel<<<64, 256>>>(y, 0.99f, ns);
			else
				axpy_kernel<<<64, 256>>>(y, x, 0.01f, ns);
			spin_us(7); // per-launch host bookkeeping
		}
		reduce_kernel<<<1, 256>>>(y, out, n);
	}
	CK(cudaDeviceSynchronize());
	double ms = (now_s() - t0) * 1e3 / a.steps;
	CK(cudaMemcpy(&h, out, sizeof h, cudaMemcpyDeviceToHost));
	CK(cudaGetLastError());
	printf("info: step_ms=%.3f\n", ms);
	printf("done steps=%d mode=%s launches_per_step=%d\n", a.steps, a.mode, per_step + 1);
	return 0;
}
