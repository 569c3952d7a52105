/*
 * clock_cost.c - what one timestamp costs on this machine, for each clock the launch callbacks could
 * read: cuptiGetTimestamp(), clock_gettime() of CLOCK_MONOTONIC and CLOCK_MONOTONIC_RAW, and the TSC.
 *
 *   cc -O2 -o clock_cost clock_cost.c -I$CUDA/include -L$CUDA/lib64 -lcupti    (CUDA=/usr/local/cuda)
 *   ./clock_cost [CALLS]          (default 2,000,000 calls per clock, 3 rounds)
 *
 * Prints the kernel's clock source and, per clock, ns per call (median of the rounds).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

#include <cupti.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static volatile uint64_t sink;

static double time_clock(int which, long n)
{
	double t0 = now();
	struct timespec ts;
	uint64_t v;

	for (long i = 0; i < n; i++) {
		switch (which) {
		case 0:
			cuptiGetTimestamp(&v);
			break;
		case 1:
			clock_gettime(CLOCK_MONOTONIC, &ts);
			v = (uint64_t)ts.tv_nsec;
			break;
		case 2:
			clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
			v = (uint64_t)ts.tv_nsec;
			break;
		default:
			v = __rdtsc();
			break;
		}
		sink += v;
	}
	return (now() - t0) / (double)n;
}

int main(int argc, char **argv)
{
	static const char *const names[] = {"cuptiGetTimestamp", "CLOCK_MONOTONIC", "CLOCK_MONOTONIC_RAW",
					    "rdtsc"};
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	char src[64] = "?";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");

	if (f) {
		if (fscanf(f, "%63s", src) != 1)
			src[0] = '?';
		fclose(f);
	}
	printf("clocksource: %s\n", src);
	for (int c = 0; c < 4; c++) {
		double r[3];

		for (int k = 0; k < 3; k++)
			r[k] = time_clock(c, n);
		/* median of three */
		double m = r[0] > r[1] ? (r[1] > r[2] ? r[1] : (r[0] > r[2] ? r[2] : r[0]))
				       : (r[0] > r[2] ? r[0] : (r[1] > r[2] ? r[2] : r[1]));
		printf("%-22s %8.1f ns per call\n", names[c], m);
	}
	return 0;
}
