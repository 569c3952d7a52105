// c_malloc_uneven.cu - cudaMalloc/cudaFree of a scratch buffer in every iteration, iterations of uneven length
// (allocator-churn; measured in separate runs).
//
// A solver loop whose iterations differ: iteration i works on n_i = (4 + 7i mod 13) Mi floats (16 to 64 MiB)
// with p_i = 1 + 3i mod 4 compute passes (a chain of FMAs per element, tens of microseconds each), then a
// block-sum reduction whose total is added to a running sum on the device.
//
//   bad:   the scratch buffer is cudaMalloc'ed at the top of each iteration (its size n_i) and cudaFree'd at
//          the bottom. CUDA level, per iteration: one cudaMalloc and one cudaFree of 16 to 64 MiB; cudaFree
//          waits for the device to finish the iteration's kernels, so the host can never queue the next
//          iteration ahead, and the GPU idles during the free, the next malloc and until the next launch.
//   fixed: one buffer of the largest size (64 MiB) allocated before the loop, freed after it; the host queues
//          many iterations ahead and the GPU runs them back to back.
//
// Expected saving: moderate (the driver calls and the drained queue, per iteration of a few hundred
// microseconds). Marked `separate` in pairs.json: the driver's and device's memory state after one variant's
// allocations could change the other's, so measure.sh alternates separate processes.
//
//   c_malloc_uneven bad|fixed|ab [--steps 30] [--rounds 5] [--warmup 4]
#include "savings_cu.h"

static const size_t MI = (size_t)1 << 20;
static const size_t MAX_N = 16 * MI;  // floats: 64 MiB
static const int THREADS = 256, BLOCKS = 1024, FMAS = 48;

__global__ void pass_init(float *x, size_t n, int iter)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		x[i] = (float)((i * 2654435761u + (unsigned)iter) & 1023u) * (1.0f / 1024.0f);
}

__global__ void pass_fma(float *x, size_t n, float a, float b)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		float v = x[i];
		for (int k = 0; k < FMAS; k++)
			v = fmaf(v, a, b);
		x[i] = v;
	}
}

__global__ void reduce_add(const float *x, size_t n, double *total)
{
	__shared__ double s[THREADS];
	double acc = 0;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		acc += x[i];
	s[threadIdx.x] = acc;
	__syncthreads();
	for (int w = THREADS / 2; w > 0; w /= 2) {
		if ((int)threadIdx.x < w)
			s[threadIdx.x] += s[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(total, s[0]);
}

struct MallocLoop : Variant {
	bool bad;
	float *buf = nullptr;
	double *total = nullptr;
	explicit MallocLoop(bool b) : bad(b)
	{
		CHECK(cudaMalloc(&total, sizeof(double)));
		CHECK(cudaMemset(total, 0, sizeof(double)));
		if (!bad)
			CHECK(cudaMalloc(&buf, MAX_N * sizeof(float)));
	}
	~MallocLoop()
	{
		if (buf)
			cudaFree(buf);
		cudaFree(total);
	}
	void step(int i) override
	{
		size_t n = (4 + (size_t)((7 * i) % 13)) * MI;
		int passes = 1 + (3 * i) % 4;
		float *x = buf;
		if (bad)
			CHECK(cudaMalloc(&x, n * sizeof(float)));
		pass_init<<<BLOCKS, THREADS>>>(x, n, i);
		CHECK_LAUNCH();
		for (int p = 0; p < passes; p++) {
			pass_fma<<<BLOCKS, THREADS>>>(x, n, 0.999f, 0.0005f);
			CHECK_LAUNCH();
		}
		reduce_add<<<BLOCKS, THREADS>>>(x, n, total);
		CHECK_LAUNCH();
		if (bad)
			CHECK(cudaFree(x));
	}
	double checksum() override
	{
		double h = 0;
		CHECK(cudaMemcpy(&h, total, sizeof(double), cudaMemcpyDeviceToHost));
		return h;
	}
};

static Variant *make(bool bad) { return new MallocLoop(bad); }

int main(int argc, char **argv) { return pair_main(argc, argv, make); }
