/*
 * decode_cost.c - what cuscope's own code costs per kernel record on the flush thread: decoding a
 * CUPTI kernel activity record (the kernel name's string id from the name cache, the capture
 * window) and writing it into the spool (src/collectors/kernels.c, spool_out.c). No GPU needed:
 * the records are built here, with 64 long kernel names in turn, the way a training step repeats
 * its kernels. Not a test: it prints the thread CPU time per record (docs/performance.md).
 *
 *   build/tests/decode_cost [RECORDS] [ROUNDS]      (defaults 2000000 and 3)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#include "collector.h"

#define NAMES 64
#define BATCH 4096 /* records per CUPTI buffer, about */

/* The capture window lives in inject.c, which needs libcupti: keep everything. */
int cs_capture_keep(uint64_t ts)
{
	(void)ts;
	return 1;
}

static double thread_cpu(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ns of thread CPU per record for n records decoded into a fresh spool directory; < 0 on error. */
static double run(long n, CUpti_ActivityKernel10 *k)
{
	char dir[] = "/tmp/cuscope-decode-bench.XXXXXX", path[128];
	double t0, t1;

	if (!mkdtemp(dir))
		return -1;
	cs_capture_configure(0, 0, 0);
	if (cs_out_open(dir, 1000))
		return -1;
	cs_write_clock_record(1000);
	t0 = thread_cpu();
	for (long i = 0; i < n; i++) {
		CUpti_ActivityKernel10 *r = &k[i % BATCH];

		r->start = 2000 + (uint64_t)i * 10;
		r->end = r->start + 5;
		r->correlationId = (uint32_t)i + 1;
		cs_decode_activity(r);
		if (i % BATCH == BATCH - 1)
			cs_out_flush(); /* the end of a CUPTI buffer */
	}
	t1 = thread_cpu();
	cs_out_close();
	/* the spool directory holds this process's file */
	snprintf(path, sizeof(path), "%s/%d.cuspool", dir, (int)getpid());
	unlink(path);
	if (rmdir(dir))
		fprintf(stderr, "decode_cost: %s is left behind\n", dir);
	return (t1 - t0) * 1e9 / (double)n;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	int rounds = argc > 2 ? atoi(argv[2]) : 3;
	static char names[NAMES][192];
	CUpti_ActivityKernel10 *k = calloc(BATCH, sizeof(*k));

	if (!k || n <= 0 || rounds <= 0) {
		fprintf(stderr, "usage: decode_cost [RECORDS] [ROUNDS]\n");
		return 2;
	}
	for (int i = 0; i < NAMES; i++)
		snprintf(names[i], sizeof(names[i]),
			 "void at::native::vectorized_elementwise_kernel<4, "
			 "at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, %d, "
			 "std::array<char*, 3ul>)",
			 i);
	for (int i = 0; i < BATCH; i++) {
		k[i].kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
		k[i].name = names[i % NAMES];
		k[i].gridX = 128;
		k[i].gridY = k[i].gridZ = 1;
		k[i].blockX = 256;
		k[i].blockY = k[i].blockZ = 1;
		k[i].streamId = 7;
	}
	for (int r = 1; r <= rounds; r++) {
		double ns = run(n, k);

		if (ns < 0) {
			fprintf(stderr, "decode_cost: cannot open a spool in /tmp\n");
			return 1;
		}
		printf("round %d: %.1f ns of thread CPU per kernel record (decode and spool "
		       "write), "
		       "%ld records\n",
		       r, ns, n);
	}
	free(k);
	return 0;
}
