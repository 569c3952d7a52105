// cu_oom_retry.cu - a hand-made caching allocator at the real device limit: out of memory, free, retry,
// every step.
//
// The program takes all free device memory but ~3 GiB with one filler allocation, then runs steps that
// alternate between two streams. Each step needs 6 buffers of 384 MiB from a small per-stream cache (as
// PyTorch's allocator keeps one cache per stream): its own stream's cache is empty, the other stream's still
// holds 2.25 GiB, so one cudaMalloc fails with cudaErrorMemoryAllocation; the allocator then synchronizes,
// cudaFree()s the other stream's cached buffers (a burst of 6 releases) and retries, and allocates the rest.
// Reserved memory climbs to the device's limit and drops in every step. Labels: memory-ceiling-thrash must be
// found; empty-cache-in-loop must not.
#include <vector>

#include "corpus_cuda.h"

#define BUFS 6
static const size_t BUF = 384ull << 20;

struct cache {
	std::vector<void *> free_blocks;
};

static int retries = 0;

static void *cached_alloc(cache *mine, cache *other) {
	if (!mine->free_blocks.empty()) {
		void *p = mine->free_blocks.back();
		mine->free_blocks.pop_back();
		return p;
	}
	void *p = nullptr;
	if (cudaMalloc(&p, BUF) == cudaSuccess)
		return p;
	cudaGetLastError(); // clear the error
	retries++;
	CK(cudaDeviceSynchronize());
	for (void *q : other->free_blocks)
		CK(cudaFree(q));
	other->free_blocks.clear();
	CK(cudaMalloc(&p, BUF));
	return p;
}

__global__ void fill_kernel(float *p, size_t n, float v) {
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		p[i] = v * (float)(i & 1023);
}

__global__ void mix_kernel(const float *a, const float *b, float *c, size_t n) {
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		c[i] = a[i] * 0.5f + b[i];
}

int main(int argc, char **argv) {
	corpus_args a = corpus_parse(argc, argv);
	size_t free_b, total_b;
	CK(cudaMemGetInfo(&free_b, &total_b));
	size_t keep = 3ull << 30, filler_bytes = free_b > keep + (1ull << 30) ? free_b - keep : 0;
	void *filler = nullptr;
	while (filler_bytes > 0 && cudaMalloc(&filler, filler_bytes) != cudaSuccess) {
		cudaGetLastError();
		filler_bytes -= 256ull << 20;
	}
	cudaStream_t st[2];
	CK(cudaStreamCreateWithFlags(&st[0], cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&st[1], cudaStreamNonBlocking));
	cudaEvent_t done_ev[2];
	CK(cudaEventCreateWithFlags(&done_ev[0], cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&done_ev[1], cudaEventDisableTiming));
	cache caches[2];
	const size_t n = BUF / sizeof(float);
	double t0 = 0;
	int steady_retries_from = 0;
	for (int s = 0; s < a.warmup + a.steps; s++) {
		if (s == a.warmup) {
			CK(cudaDeviceSynchronize());
			t0 = now_s();
			steady_retries_from = retries;
		}
		int k = s % 2;
		cudaStream_t cs = st[k];
		CK(cudaStreamWaitEvent(cs, done_ev[1 - k], 0));
		float *b[BUFS];
		for (int j = 0; j < BUFS; j++) {
			b[j] = (float *)cached_alloc(&caches[k], &caches[1 - k]);
			if (j < 2)
				fill_kernel<<<528, 256, 0, cs>>>(b[j], n, 1.0f + j);
			else
				mix_kernel<<<528, 256, 0, cs>>>(b[j - 1], b[j - 2], b[j], n);
		}
		CK(cudaEventRecord(done_ev[k], cs));
		for (int j = 0; j < BUFS; j++) // back to this stream's cache, as a caching allocator does
			caches[k].free_blocks.push_back(b[j]);
	}
	CK(cudaDeviceSynchronize());
	printf("info: step_ms=%.3f filler_gib=%.2f steady_retries=%d\n", (now_s() - t0) * 1e3 / a.steps,
	       filler_bytes / 1073741824.0, retries - steady_retries_from);
	printf("done steps=%d\n", a.steps);
	if (filler)
		CK(cudaFree(filler));
	return 0;
}
