// c_devsync_long.cu - cudaDeviceSynchronize after every iteration of one long kernel (a sync-call pattern that
// costs ~nothing).
//
// Each iteration runs one compute-bound kernel of about two milliseconds (a long chain of FMAs per element
// over 4 Mi floats).
//
//   bad:   `cudaDeviceSynchronize()` after each iteration. CUDA level: one device synchronize per iteration;
//          after it the GPU idles only until the next kernel is launched (microseconds of a multi-millisecond
//          iteration).
//   fixed: no synchronize inside the loop.
//
// Expected saving: about zero. Rule "none": the sync-call pattern is there; a finding should predict no
// measurable saving.
//
//   c_devsync_long bad|fixed|ab [--steps 30] [--rounds 5] [--warmup 4]
#include "savings_cu.h"

static const int N = 4 << 20, THREADS = 256, FMAS = 16384;

__global__ void long_chain(float *x, int n, float a, float b)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		float v = x[i];
		for (int k = 0; k < FMAS; k++)
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
		long_chain<<<(N + THREADS - 1) / THREADS, THREADS>>>(x, N, 0.9999f, 0.0001f);
		CHECK_LAUNCH();
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
