/*
 * timed_loop.cu - GPU work spread evenly over a known time, for checking `cuscope record --delay/--duration`.
 *
 *   timed_loop [SECONDS]      (default 6)
 *
 * For SECONDS seconds after CUDA is initialized, every 5 ms: one small kernel, one 4-byte copy to the
 * host (synchronous) and a sleep. Recorded with --delay 2 --duration 2, the trace must hold about 2 s of
 * those iterations and nothing outside the window (tests/gpu/check_trace.py --window 2:2). The number of
 * iterations is printed on an "info:" line (it varies); the last line is what the trace must hold.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime.h>

#define CHECK(call)                                                                                \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "timed_loop: %s:%d: %s failed: %s\n", __FILE__, __LINE__,  \
				#call, cudaGetErrorString(e_));                                    \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

__global__ void bump(int *x)
{
	x[threadIdx.x] += 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 6.0, t_end;
	struct timespec pause = {0, 5 * 1000 * 1000};
	long iterations = 0;
	int *d, h = 0;

	CHECK(cudaMalloc(&d, 32 * sizeof(int)));
	CHECK(cudaMemset(d, 0, 32 * sizeof(int)));
	t_end = now_s() + seconds;
	while (now_s() < t_end) {
		bump<<<1, 32>>>(d);
		CHECK(cudaGetLastError());
		CHECK(cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost));
		iterations++;
		nanosleep(&pause, NULL);
	}
	CHECK(cudaFree(d));
	printf("info: iterations=%ld value=%d\n", iterations, h);
	/* a 2 s window of 5 ms iterations holds about 350; at least 100 even on a slow machine */
	printf("expect window:kernels>=100 window:memcpy_dtoh>=100\n");
	return h == iterations ? 0 : 1;
}
