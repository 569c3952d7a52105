/*
 * spool_contention.c - what writing an event into the spool costs a launching thread while the
 * flush thread writes decoded GPU records at the same time, with and without per-thread staging
 * (src/collectors/spool_out.c). No GPU needed.
 *
 *   build/tests/spool_contention [RECORDS] [ROUNDS]      (defaults 2000000 and 3)
 *
 * One thread writes RECORDS API records as fast as it can (a launch loop's callbacks); another
 * writes kernel records in bursts of 20,000 every 2 ms and flushes (the flush thread decoding
 * CUPTI's buffers). Each round runs staging off, then on, into a spool file in a temporary
 * directory, and prints the CPU time per API record of the writing thread and of the process.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"

static atomic_int done;

static double cpu_of(clockid_t clk)
{
	struct timespec t;

	clock_gettime(clk, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *decoder(void *arg)
{
	struct cs_rec_kernel k;
	uint64_t i = 0;

	(void)arg;
	while (!atomic_load(&done)) {
		struct timespec pause = {0, 2000000};

		for (int j = 0; j < 20000; j++) {
			memset(&k, 0, sizeof(k));
			k.correlation_id = (uint32_t)++i;
			k.start = i;
			k.end = i + 1;
			cs_out_write_event(&k, sizeof(k), CS_REC_KERNEL, 0);
		}
		nanosleep(&pause, NULL);
		cs_out_flush();
	}
	return NULL;
}

/* One run into a fresh spool directory: ns per API record of the writing thread and process. */
static int run(long n, int staging, double *thread_ns, double *proc_ns)
{
	char dir[] = "/tmp/cuscope-spool-bench.XXXXXX";
	char cmd[64];
	struct cs_rec_api r;
	pthread_t th;
	double t0, p0;

	if (!mkdtemp(dir) || cs_out_open(dir, 1))
		return -1;
	cs_capture_configure(0, 0, 0);
	cs_out_set_staging(staging);
	atomic_store(&done, 0);
	if (pthread_create(&th, NULL, decoder, NULL))
		return -1;
	t0 = cpu_of(CLOCK_THREAD_CPUTIME_ID);
	p0 = cpu_of(CLOCK_PROCESS_CPUTIME_ID);
	for (long i = 0; i < n; i++) {
		memset(&r, 0, sizeof(r));
		r.correlation_id = (uint32_t)i;
		r.start = (uint64_t)i;
		r.end = (uint64_t)i + 1;
		r.api_class = 1;
		cs_out_write_event(&r, sizeof(r), CS_REC_API, 1234);
	}
	*thread_ns = (cpu_of(CLOCK_THREAD_CPUTIME_ID) - t0) / (double)n * 1e9;
	*proc_ns = (cpu_of(CLOCK_PROCESS_CPUTIME_ID) - p0) / (double)n * 1e9;
	atomic_store(&done, 1);
	pthread_join(th, NULL);
	cs_out_close();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	int rounds = argc > 2 ? atoi(argv[2]) : 3;

	if (n < 1 || rounds < 1) {
		fprintf(stderr, "usage: spool_contention [RECORDS] [ROUNDS]\n");
		return 2;
	}
	printf("%-8s %-8s %22s %22s\n", "round", "staging", "writing thread ns/rec",
	       "process ns/rec");
	for (int r = 1; r <= rounds; r++) {
		for (int staging = 0; staging <= 1; staging++) {
			double t, p;

			if (run(n, staging, &t, &p)) {
				fprintf(stderr, "spool_contention: cannot write a spool file in /tmp\n");
				return 1;
			}
			printf("%-8d %-8s %22.1f %22.1f\n", r, staging ? "on" : "off", t, p);
		}
	}
	return 0;
}
