// corpus_cuda.h - what the CUDA programs of the accuracy corpus share (header only).
//
// Conventions as for the Python programs (docs/accuracy.md): `--steps N` / `--warmup W` (defaults 40 and 5),
// no NVTX, lines that vary from run to run start with "info:", the last line is `done steps=N ...`.
// Build: nvcc -O2 -arch=sm_90 -o NAME NAME.cu (tests/gpu/corpus.sh builds them all).
#pragma once
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(call)                                                                                       \
	do {                                                                                               \
		cudaError_t e_ = (call);                                                                       \
		if (e_ != cudaSuccess) {                                                                       \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));     \
			exit(1);                                                                                   \
		}                                                                                              \
	} while (0)

struct corpus_args {
	int steps, warmup;
	const char *mode; // first argument that is not an option, or ""
};

static inline corpus_args corpus_parse(int argc, char **argv) {
	corpus_args a = {40, 5, ""};
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			a.steps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--warmup") && i + 1 < argc)
			a.warmup = atoi(argv[++i]);
		else if (argv[i][0] != '-')
			a.mode = argv[i];
		else {
			fprintf(stderr, "usage: %s [MODE] [--steps N] [--warmup W]\n", argv[0]);
			exit(2);
		}
	}
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		printf("info: skipped: no CUDA device\n");
		exit(77);
	}
	return a;
}

static inline double now_s(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Busy host work of a fixed duration (stands for host-side processing: bookkeeping, logging, parsing).
static inline void spin_us(double us) {
	double end = now_s() + us * 1e-6;
	while (now_s() < end) {
	}
}

// GPU nanosecond clock.
__device__ __forceinline__ unsigned long long gtime(void) {
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

// A kernel that keeps its threads busy for about `ns` nanoseconds and writes something, so that it is not
// optimised away (GPU work of a known duration).
__global__ void busy_kernel(float *out, unsigned long long ns) {
	unsigned long long t0 = gtime();
	float x = threadIdx.x;
	while (gtime() - t0 < ns)
		x = x * 0.999f + 1.0f;
	if (threadIdx.x == 0)
		out[blockIdx.x] = x;
}
