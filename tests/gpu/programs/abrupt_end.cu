/*
 * abrupt_end.cu - a GPU-bound loop that ends abruptly right after a synchronize, for checking that a trace
 * keeps every kernel the program launched (tests/gpu/abrupt.sh).
 *
 *   abrupt_end MODE [KERNELS] [SPIN_US]
 *
 * Launches KERNELS (default 400) kernels that each spin SPIN_US (default 500) microseconds on one stream,
 * with no wait in between (the host runs far ahead of the GPU), then cudaDeviceSynchronize(), prints
 * "kernels N pid P" (flushed) and ends by MODE:
 *   normal  return from main            term  raise(SIGTERM)         int  raise(SIGINT)
 *   hup     raise(SIGHUP)               exit  _exit(3) (no exit handlers)
 *   wait    print "synced" and sleep until killed from outside (SIGKILL)
 *   handler install its own SIGTERM handler first (which exits 5), then raise(SIGTERM)
 *   syncloop (a benchmark) KERNELS times: one kernel of SPIN_US, then cudaStreamSynchronize; prints
 *           "us_per_iter=X"
 * No signal handler of its own is installed except in "handler" mode, so SIGINT, SIGTERM and SIGHUP keep
 * their default action.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime.h>

#define CHECK(call)                                                                                \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "abrupt_end: %s failed: %s\n", #call,                      \
				cudaGetErrorString(e_));                                           \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

__global__ void spin(long long cycles, int *out)
{
	long long t0 = clock64();

	while (clock64() - t0 < cycles)
		;
	if (threadIdx.x == 0)
		out[blockIdx.x] += 1;
}

static void own_handler(int sig)
{
	(void)sig;
	_exit(5);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "normal";
	int n = argc > 2 ? atoi(argv[2]) : 400;
	long spin_us = argc > 3 ? atol(argv[3]) : 500;
	int *d, clock_khz = 0;

	CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
	CHECK(cudaMalloc(&d, 64 * sizeof(int)));
	CHECK(cudaDeviceSynchronize());
	if (!strcmp(mode, "syncloop")) {
		struct timespec t0, t1;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int i = 0; i < n; i++) {
			spin<<<1, 32>>>((long long)clock_khz * spin_us / 1000, d);
			CHECK(cudaStreamSynchronize(0));
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		printf("info: us_per_iter=%.3f\n",
		       ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / n);
		return 0;
	}
	if (!strcmp(mode, "handler"))
		signal(SIGTERM, own_handler);
	for (int i = 0; i < n; i++)
		spin<<<1, 32>>>((long long)clock_khz * spin_us / 1000, d);
	CHECK(cudaGetLastError());
	CHECK(cudaDeviceSynchronize());
	printf("kernels %d pid %d\n", n, (int)getpid());
	fflush(stdout);
	if (!strcmp(mode, "term") || !strcmp(mode, "handler"))
		raise(SIGTERM);
	else if (!strcmp(mode, "int"))
		raise(SIGINT);
	else if (!strcmp(mode, "hup"))
		raise(SIGHUP);
	else if (!strcmp(mode, "exit"))
		_exit(3);
	else if (!strcmp(mode, "wait")) {
		printf("synced\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	return 0;
}
