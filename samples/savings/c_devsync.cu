// c_devsync.cu - cudaDeviceSynchronize at the end of every iteration of short kernels (sync-call).
//
// Each iteration runs 40 short kernels (a few FMAs over 1 Mi floats, a few microseconds each) on the default
// stream; the host launches them about as fast as the GPU runs them.
//
//   bad:   `cudaDeviceSynchronize()` after each iteration (as a loop written "to be safe", or to time it). CUDA
//          level: one device synchronize per iteration, no copy: the host waits for the GPU to drain, then the
//          GPU idles until the next iteration's first kernel is launched, and the next iteration's launches no
//          longer run ahead of its kernels.
//   fixed: no synchronize inside the loop.
//
// Expected saving: small to moderate (one launch latency and the lost overlap per iteration of a few hundred
// microseconds).
//
//   c_devsync bad|fixed|ab [--steps 30] [--rounds 5] [--warmup 4]
#include "savings_cu.h"

static const int N = 1 << 20, THREADS = 256, KERNELS = 40;

__global__ void axpb(float *x, int n, float a, float b)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		float v = x[i];
		for (int k = 0; k < 4; k++)
			v = fmaf(v, a, b);
		x[i] = v;
	}
}

struct Loop : Variant {
	bool bad;
	float *x = nullptr;
	explicit Loop(bool b) : bad(b)
	{
		CHECK(cudaMalloc(&x, N * sizeof(float)));
		CHECK(cudaMemset(x, 0, N * sizeof(float)));
	}
	~Loop() { cudaFree(x); }
	void step(int) override
	{
		for (int k = 0; k < KERNELS; k++) {
			axpb<<<(N + THREADS - 1) / THREADS, THREADS>>>(x, N, 0.999f, 0.001f);
			CHECK_LAUNCH();
		}
		if (bad)
			CHECK(cudaDeviceSynchronize());  // every iteration
	}
	double checksum() override
	{
		float h = 0;
		CHECK(cudaMemcpy(&h, x + 12345, sizeof(float), cudaMemcpyDeviceToHost));
		return h;
	}
};

static Variant *make(bool bad) { return new Loop(bad); }

int main(int argc, char **argv) { return pair_main(argc, argv, make); }
