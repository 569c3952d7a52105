// c_memcpy_scalar.cu - a synchronous cudaMemcpy of the residual every iteration vs cudaMemcpyAsync into
// pinned memory read one iteration late (d2h-sync).
//
// A Jacobi-style solver on a 1-D grid of 2 Mi floats: each iteration runs 8 smoothing sweeps (one short
// memory-bound kernel each, a few microseconds) and a residual reduction into a device scalar; the host reads
// the residual to decide whether to stop (the tolerance is never reached here, so both variants run every
// iteration).
//
//   bad:   `cudaMemcpy(&res, d_res, 4, cudaMemcpyDeviceToHost)` after each iteration. CUDA level: one 4-byte
//          device-to-host copy into pageable memory per iteration, which waits for the iteration's kernels:
//          the host launches nothing while it waits, and the GPU idles from the copy until the next
//          iteration's first kernel arrives; the host's launch time and the GPU's kernel time no longer
//          overlap.
//   fixed: `cudaMemcpyAsync` of the residual into a pinned double buffer plus an event per iteration; the host
//          waits (cudaEventSynchronize) for the PREVIOUS iteration's event only, while the current iteration
//          is queued: the stop test is one iteration late, and the GPU never drains.
//
// Expected saving: moderate (iterations of tens of microseconds, as long as their launches).
//
//   c_memcpy_scalar bad|fixed|ab [--steps 30] [--rounds 5] [--warmup 4]
#include "savings_cu.h"

static const int N = 2 << 20, THREADS = 256, SWEEPS = 8;

__global__ void sweep(const float *in, float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		float l = in[i > 0 ? i - 1 : i], r = in[i < n - 1 ? i + 1 : i];
		out[i] = 0.5f * in[i] + 0.25f * (l + r);
	}
}

__global__ void residual(const float *a, const float *b, int n, float *res)
{
	__shared__ float s[THREADS];
	float acc = 0;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		acc += fabsf(a[i] - b[i]);
	s[threadIdx.x] = acc;
	__syncthreads();
	for (int w = THREADS / 2; w > 0; w /= 2) {
		if ((int)threadIdx.x < w)
			s[threadIdx.x] += s[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(res, s[0]);
}

__global__ void init(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = (float)((i * 2654435761u) & 1023u) * (1.0f / 1024.0f);
}

struct Solver : Variant {
	bool bad;
	float *x = nullptr, *y = nullptr, *res = nullptr, *pinned = nullptr;
	cudaEvent_t ev[2];
	int pending = -1;
	double seen = 0;  // the residuals the host read
	explicit Solver(bool b) : bad(b)
	{
		CHECK(cudaMalloc(&x, N * sizeof(float)));
		CHECK(cudaMalloc(&y, N * sizeof(float)));
		CHECK(cudaMalloc(&res, sizeof(float)));
		CHECK(cudaMallocHost(&pinned, 2 * sizeof(float)));
		for (auto &e : ev)
			CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
		init<<<(N + THREADS - 1) / THREADS, THREADS>>>(x, N);
		CHECK_LAUNCH();
	}
	~Solver()
	{
		cudaFree(x);
		cudaFree(y);
		cudaFree(res);
		cudaFreeHost(pinned);
		for (auto &e : ev)
			cudaEventDestroy(e);
	}
	void begin() override { pending = -1; }
	void step(int i) override
	{
		for (int s = 0; s < SWEEPS; s++) {
			sweep<<<(N + THREADS - 1) / THREADS, THREADS>>>(x, y, N);
			CHECK_LAUNCH();
			std::swap(x, y);
		}
		CHECK(cudaMemsetAsync(res, 0, sizeof(float)));
		residual<<<264, THREADS>>>(x, y, N, res);
		CHECK_LAUNCH();
		if (bad) {
			float r = 0;
			CHECK(cudaMemcpy(&r, res, sizeof(float), cudaMemcpyDeviceToHost));  // waits for the iteration
			seen += r;
			if (r < 0)  // the stop test (never true)
				exit(3);
			return;
		}
		int slot = i % 2;
		CHECK(cudaMemcpyAsync(&pinned[slot], res, sizeof(float), cudaMemcpyDeviceToHost, 0));
		CHECK(cudaEventRecord(ev[slot], 0));
		if (pending >= 0) {  // the previous iteration's residual: one iteration back in the queue
			CHECK(cudaEventSynchronize(ev[pending]));
			seen += pinned[pending];
			if (pinned[pending] < 0)
				exit(3);
		}
		pending = slot;
	}
	double checksum() override { return seen; }
};

static Variant *make(bool bad) { return new Solver(bad); }

int main(int argc, char **argv) { return pair_main(argc, argv, make); }
