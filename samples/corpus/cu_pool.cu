// cu_pool.cu - a host thread pool: 4 C++ threads, each launching on its own stream, in two variants:
//
//   cu_pool clean    every thread launches 6 kernels of ~60 us (264 blocks: each fills the GPU) per step,
//                    with no sync until the end; the streams' kernels interleave in an order that changes
//                    from run to run. GPU-bound. Labels: nothing of the five.
//   cu_pool reader   the same, but thread 3 ends each of its steps by copying a 4-byte result to pinned host
//                    memory and waiting for its stream (cudaMemcpyAsync + cudaStreamSynchronize), then ~100 us
//                    of host work: its own stream drains every step, while the other three threads keep the
//                    GPU busy the whole time. Labels: nothing of the five (d2h-sync must not: the GPU never
//                    idles after the waits).
#include <thread>
#include <vector>

#include "corpus_cuda.h"

static void worker(int t, bool reader, corpus_args a, float *scratch, float *result, float *host) {
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	for (int step = 0; step < a.warmup + a.steps; step++) {
		for (int k = 0; k < 6; k++)
			busy_kernel<<<264, 256, 0, s>>>(scratch + t * 264, 60000);
		if (reader && t == 3) {
			CK(cudaMemcpyAsync(host, result, sizeof(float), cudaMemcpyDeviceToHost, s));
			CK(cudaStreamSynchronize(s));
			spin_us(100); // looks at the value, logs it
		} else {
			spin_us(20);
		}
	}
	CK(cudaStreamSynchronize(s));
	CK(cudaStreamDestroy(s));
}

int main(int argc, char **argv) {
	corpus_args a = corpus_parse(argc, argv);
	bool reader = !strcmp(a.mode, "reader");
	if (!reader && strcmp(a.mode, "clean")) {
		fprintf(stderr, "usage: cu_pool clean|reader [--steps N]\n");
		return 2;
	}
	float *scratch, *result, *host;
	CK(cudaMalloc(&scratch, 4 * 264 * sizeof(float)));
	CK(cudaMalloc(&result, sizeof(float)));
	CK(cudaMemset(result, 0, sizeof(float)));
	CK(cudaMallocHost(&host, sizeof(float)));
	CK(cudaDeviceSynchronize());
	double t0 = now_s();
	std::vector<std::thread> pool;
	for (int t = 0; t < 4; t++)
		pool.emplace_back(worker, t, reader, a, scratch, result, host);
	for (auto &th : pool)
		th.join();
	CK(cudaDeviceSynchronize());
	printf("info: ms_per_step=%.3f\n", (now_s() - t0) * 1e3 / (a.warmup + a.steps));
	printf("done steps=%d mode=%s threads=4\n", a.steps, a.mode);
	return 0;
}
