/*
 * nvtx_payload_cost.c - what an NVTX range costs the calling thread under `cuscope record`, with
 * and without a payload of NVTX's payload extension (one as NCCL sends with each call:
 * communicator, message size, reduction). Benchmark, not a test; no GPU needed:
 *
 *     build/cuscope record -o /tmp/nvtx.db --force -- build/tests/nvtx_payload_cost [N] [ROUNDS]
 *
 * Alternates ROUNDS (default 5) blocks of N (default 200000) push/pop pairs in domain "NCCL", one
 * block plain and one with the payload, and prints the median ns of thread CPU per pair of each.
 * The payloads vary over 8 sizes, as a job's buckets do.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nvtx_nccl_schema.h"

static double cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double block(nvtxDomainHandle_t d, nvtxStringHandle_t name, long n, int payload)
{
	struct allreduce ar = {0x5eed, 0, 0};
	nvtxPayloadData_t pd = {SCHEMA_ALLREDUCE, sizeof(ar), &ar};
	nvtxEventAttributes_t a = nccl_range_attr(name, &pd, payload ? 1 : 0);
	double t0 = cpu_ns();

	for (long i = 0; i < n; i++) {
		ar.bytes = (size_t)4096 << (i & 7);
		nvtxDomainRangePushEx(d, &a);
		nvtxDomainRangePop(d);
	}
	return (cpu_ns() - t0) / (double)n;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	nvtxDomainHandle_t d = nvtxDomainCreateA("NCCL");
	nvtxStringHandle_t name = nvtxDomainRegisterStringA(d, "ncclAllReduce");
	double *plain, *with;

	if (n < 1 || rounds < 1 || rounds > 1000) {
		fprintf(stderr, "usage: nvtx_payload_cost [N >= 1] [ROUNDS 1..1000]\n");
		return 2;
	}
	plain = calloc((size_t)rounds, sizeof(*plain));
	with = calloc((size_t)rounds, sizeof(*with));
	if (!plain || !with)
		return 1;
	register_nccl_allreduce(d);
	block(d, name, n / 10 + 1, 1);	   /* warm-up: the strings interned */
	for (int r = 0; r < rounds; r++) { /* plain first in even rounds */
		if (r & 1) {
			with[r] = block(d, name, n, 1);
			plain[r] = block(d, name, n, 0);
		} else {
			plain[r] = block(d, name, n, 0);
			with[r] = block(d, name, n, 1);
		}
	}
	qsort(plain, (size_t)rounds, sizeof(*plain), cmp);
	qsort(with, (size_t)rounds, sizeof(*with), cmp);
	printf("push/pop pairs per block: %ld, rounds: %d\n", n, rounds);
	printf("plain:        %.0f ns per pair (median; %.0f..%.0f)\n", plain[rounds / 2], plain[0],
	       plain[rounds - 1]);
	printf("with payload: %.0f ns per pair (median; %.0f..%.0f)\n", with[rounds / 2], with[0],
	       with[rounds - 1]);
	free(plain);
	free(with);
	return 0;
}
