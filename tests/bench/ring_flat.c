/*
 * ring_flat.c - a long job through a ring (`record --ring`, src/collectors/spool_out.c): the
 * spool's disk and the process's memory stay flat however long it runs. No GPU needed.
 *
 *   build/tests/ring_flat [HOURS] [LAUNCHES_PER_S] [RING_MIB]     (defaults 8, 200 and 16)
 *
 * Simulates HOURS of a job that launches LAUNCHES_PER_S kernels a second (per launch an API record
 * with one of 20 call stacks and a kernel record with one of 40 names, handed over in batches of
 * 64 as CUPTI does; a flush every 200 ms of simulated time; the ring's clock advanced by hand) into
 * a RING_MIB ring in a temporary directory, as fast as the CPU writes it. Every simulated hour it
 * prints the records written so far, the bytes of the segments and of the main file on disk, and
 * the process's resident memory; at the end the CPU time per record.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"

#define BATCH 64

static uint64_t clock_ns;

static uint64_t now(void)
{
	return clock_ns;
}

/* Bytes of the files of dir whose names end in suffix. */
static uint64_t dir_bytes(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	uint64_t sum = 0;

	while (d && (de = readdir(d))) {
		size_t n = strlen(de->d_name), k = strlen(suffix);
		char path[4096];
		struct stat sb;

		if (n <= k || strcmp(de->d_name + n - k, suffix))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &sb) == 0)
			sum += (uint64_t)sb.st_size;
	}
	if (d)
		closedir(d);
	return sum;
}

static long rss_kib(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f && fscanf(f, "%ld %ld", &pages, &rss) != 2)
		rss = 0;
	if (f)
		fclose(f);
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static void stack(uint32_t id)
{
	struct {
		struct cs_rec_stack s;
		uint64_t pc[8];
	} r;

	memset(&r, 0, sizeof(r));
	r.s.id = id;
	r.s.depth = 8;
	for (int i = 0; i < 8; i++)
		r.pc[i] = 0x400000 + 0x1000 * id + 16 * (uint64_t)i;
	cs_out_write(&r, sizeof(r), CS_REC_STACK, 0);
}

int main(int argc, char **argv)
{
	double hours = argc > 1 ? atof(argv[1]) : 8;
	uint64_t rate = argc > 2 ? strtoull(argv[2], NULL, 10) : 200;
	uint64_t ring = (argc > 3 ? strtoull(argv[3], NULL, 10) : 16) << 20;
	uint64_t end, next_flush, next_report, records = 0, corr = 0, step;
	char dir[] = "/tmp/cuscope-ring-bench.XXXXXX", cmd[64];
	uint32_t names[40], api_name;
	struct timespec c0, c1;

	if (hours <= 0 || rate == 0 || !ring || !mkdtemp(dir)) {
		fprintf(stderr, "usage: ring_flat [HOURS] [LAUNCHES_PER_S] [RING_MIB]\n");
		return 2;
	}
	step = 1000000000ull / rate;
	clock_ns = 1700000000000000000ull;
	end = clock_ns + (uint64_t)(hours * 3600e9);
	cs_out_set_ring(ring, 0, now);
	if (cs_out_open(dir, clock_ns)) {
		fprintf(stderr, "ring_flat: cannot open a spool in %s\n", dir);
		return 1;
	}
	for (int i = 0; i < 40; i++) {
		char name[64];

		snprintf(name, sizeof(name), "_Z13kernel_%02dPfS_i", i);
		names[i] = cs_intern(name, (size_t)-1);
	}
	api_name = cs_intern("cudaLaunchKernel_v7000", (size_t)-1);
	for (uint32_t i = 1; i <= 20; i++)
		stack(i);
	printf("%8s %14s %14s %12s %10s\n", "hours", "records", "segments B", "main file B", "RSS KiB");
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	next_flush = clock_ns + 200000000ull;
	next_report = clock_ns + 3600000000000ull;
	while (clock_ns < end) {
		uint64_t first = corr + 1;

		for (int b = 0; b < BATCH; b++) {
			struct cs_rec_api a;

			memset(&a, 0, sizeof(a));
			a.start = clock_ns;
			a.end = clock_ns + 3000;
			a.correlation_id = (uint32_t)++corr;
			a.cbid = 211;
			a.domain = 1;
			a.api_class = CS_APICLASS_LAUNCH;
			a.stack_id = 1 + (uint32_t)(corr % 20);
			a.name_sid = api_name;
			cs_out_write_event(&a, sizeof(a), CS_REC_API, 1234);
			clock_ns += step;
		}
		for (uint64_t c = first; c <= corr; c++) {
			struct cs_rec_kernel k;

			memset(&k, 0, sizeof(k));
			k.start = clock_ns - (corr - c + 1) * step + 5000;
			k.end = k.start + step / 2;
			k.correlation_id = (uint32_t)c;
			k.stream_id = 7;
			k.name_sid = names[c % 40];
			cs_out_write_event(&k, sizeof(k), CS_REC_KERNEL, 0);
		}
		records += 2 * BATCH;
		if (clock_ns >= next_flush) {
			cs_out_flush();
			next_flush = clock_ns + 200000000ull;
		}
		if (clock_ns >= next_report || clock_ns >= end) {
			cs_out_flush();
			printf("%8.2f %14llu %14llu %12llu %10ld\n",
			       (double)(clock_ns - (end - (uint64_t)(hours * 3600e9))) / 3600e9,
			       (unsigned long long)records,
			       (unsigned long long)dir_bytes(dir, CS_SPOOL_SEG_SUFFIX),
			       (unsigned long long)dir_bytes(dir, CS_SPOOL_SUFFIX), rss_kib());
			fflush(stdout);
			next_report += 3600000000000ull;
		}
	}
	cs_out_close();
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	printf("%.0f ns of CPU per record (%llu records)\n",
	       ((double)(c1.tv_sec - c0.tv_sec) * 1e9 + (double)(c1.tv_nsec - c0.tv_nsec)) /
		       (double)records,
	       (unsigned long long)records);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) ? 1 : 0;
}
