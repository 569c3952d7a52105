/*
 * launch_loop.cu - a host-bound loop of empty-kernel launches, to measure what a profiler adds to
 * each launch.
 *
 *   launch_loop [LAUNCHES] [SYNC_EVERY]      (defaults 200000 and 256)
 *
 * The device is set to blocking synchronization and the loop waits for the GPU every SYNC_EVERY
 * launches (well below the launch queue's depth), so that the process's CPU time is the cost of the
 * launches themselves rather than time spun waiting for a full queue. Prints the process CPU time
 * (getrusage: user + system) and the wall time per launch of the timed loop on "info:" lines, and
 * as its last line the counts a trace of it must hold.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include <cuda_runtime.h>

#define WARMUP 1000

#define CHECK(call)                                                                                \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "launch_loop: %s:%d: %s failed: %s\n", __FILE__, __LINE__, \
				#call, cudaGetErrorString(e_));                                    \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

__global__ void cs_empty(void)
{
}

static double cpu_seconds_of(int who)
{
	struct rusage ru;

	getrusage(who, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static double wall_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Launch n empty kernels, waiting for the GPU every sync_every of them; returns the waits made. */
static long launch(long n, long sync_every)
{
	long waits = 0;

	for (long i = 0; i < n; i++) {
		cs_empty<<<1, 1>>>();
		if ((i + 1) % sync_every == 0) {
			CHECK(cudaGetLastError());
			CHECK(cudaDeviceSynchronize());
			waits++;
		}
	}
	CHECK(cudaGetLastError());
	CHECK(cudaDeviceSynchronize());
	return waits + 1;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	long sync_every = argc > 2 ? atol(argv[2]) : 256;
	double cpu0, tcpu0, wall0, cpu, tcpu, wall;
	long waits;

	if (n < 1 || sync_every < 1) {
		fprintf(stderr, "usage: launch_loop [LAUNCHES] [SYNC_EVERY]\n");
		return 2;
	}
	CHECK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
	CHECK(cudaSetDevice(0));
	waits = launch(WARMUP, sync_every);

	cpu0 = cpu_seconds_of(RUSAGE_SELF);
	tcpu0 = cpu_seconds_of(RUSAGE_THREAD);
	wall0 = wall_seconds();
	waits += launch(n, sync_every);
	cpu = cpu_seconds_of(RUSAGE_SELF) - cpu0;
	tcpu = cpu_seconds_of(RUSAGE_THREAD) - tcpu0;
	wall = wall_seconds() - wall0;

	printf("launches=%ld sync_every=%ld\n", n, sync_every);
	/* Process CPU time (all threads: the profiler's own count) and the launching thread's
	 * alone. */
	printf("info: cpu_us_per_launch=%.3f thread_cpu_us_per_launch=%.3f wall_us_per_launch=%.3f "
	       "cpu_s=%.3f wall_s=%.3f\n",
	       cpu * 1e6 / (double)n, tcpu * 1e6 / (double)n, wall * 1e6 / (double)n, cpu, wall);
	printf("expect kernels=%ld kname.cs_empty=%ld host_waits=%ld host_waits_device=%ld "
	       "memcpy_htod=0"
	       " memcpy_dtoh=0 processes_cuda=1\n",
	       n + WARMUP, n + WARMUP, waits, waits);
	return 0;
}
