/*
 * host_probe.c - how fast the host runs, measured by `cuscope record` just before it starts the
 * program and just after the program ends, by work that does not depend on the program: a fixed
 * CPU workload and the bare launch of an empty kernel (no profiler, calibrate.c's bare process).
 * A host-bound program's step is host work, which takes longer on a slower host; the gate compares
 * such runs at equal host speed with these probes (cuscope/host_speed.h, docs/ci.md).
 *
 * The CPU work: blocks of a fixed number of steps of a xorshift generator that indexes a 256 KiB
 * table, each load depending on the last (the interpreter-like mix of arithmetic, branches and
 * cache-resident loads that a Python host spends its step on); ns per 1,000 steps, the median of
 * the blocks. About 60 ms. The launch: loops of launches of an empty kernel with a wait every 256,
 * ns per launch, the median of the loops; about 60 ms after the driver's start (a few hundred ms).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "cuscope/host_speed.h"
#include "cuscope/sort.h"

#ifdef CUSCOPE_HAVE_RECORD

#define CPU_TABLE  (1u << 16) /* 32-bit entries: 256 KiB */
#define CPU_STEPS  (1u << 19) /* steps per block */
#define CPU_BLOCKS 15
#define LAUNCH_LOOPS	5
#define LAUNCH_PER_LOOP 4000
#define LAUNCH_TIMEOUT_S 30.0

static double mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One block of the CPU work; its result keeps the compiler from dropping it. */
static uint32_t cpu_block(uint32_t *table, uint64_t seed)
{
	uint64_t x = seed | 1;
	uint32_t j = 0;

	for (uint32_t i = 0; i < CPU_STEPS; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		j = table[(j ^ (uint32_t)x) & (CPU_TABLE - 1)];
		if (j & 1)
			table[(uint32_t)(x >> 40) & (CPU_TABLE - 1)] += j >> 1;
		else
			table[(uint32_t)(x >> 24) & (CPU_TABLE - 1)] ^= (uint32_t)x;
	}
	return j;
}

/* Median of v[0..n) (reordered), and the interquartile range over it in *spread: a block that
 * another process interrupted moves neither. */
static double median_spread(double *v, int n, double *spread)
{
	double med;

	cs_sort_double(v, (size_t)n);
	med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	*spread = med > 0 ? (v[(3 * n) / 4] - v[n / 4]) / med : 0;
	return med;
}

static void probe_cpu(struct cli_host_probe *p)
{
	uint32_t *table = malloc(CPU_TABLE * sizeof(*table));
	volatile uint32_t sink = 0;
	double t[CPU_BLOCKS];

	if (!table)
		return;
	for (uint32_t i = 0; i < CPU_TABLE; i++)
		table[i] = i * 2654435761u;
	sink += cpu_block(table, 1); /* warm the table and the clock up */
	for (int b = 0; b < CPU_BLOCKS; b++) {
		double t0 = mono_ns();

		sink += cpu_block(table, (uint64_t)b + 2);
		t[b] = (mono_ns() - t0) / (CPU_STEPS / 1000.0);
	}
	(void)sink;
	free(table);
	p->cpu_ns = median_spread(t, CPU_BLOCKS, &p->cpu_spread);
}

static void probe_launch(struct cli_host_probe *p)
{
	double w[LAUNCH_LOOPS];

	if (cli_bare_launch_loops(LAUNCH_LOOPS, LAUNCH_PER_LOOP, LAUNCH_TIMEOUT_S, w, p->device,
				  sizeof(p->device), p->why, sizeof(p->why)))
		return;
	p->launch_ns = median_spread(w, LAUNCH_LOOPS, &p->launch_spread);
}

void cli_host_probe(struct cli_host_probe *p, int launch)
{
	memset(p, 0, sizeof(*p));
	probe_cpu(p);
	if (launch)
		probe_launch(p);
}

/* "key": {"before": v[0], "after": v[1]} where have[] (none: no key). 0, or -1 (out of memory). */
static int add_pair(cJSON *root, const char *key, const double v[2], const int have[2],
		    double scale)
{
	static const char *const when[2] = {"before", "after"};
	cJSON *o = NULL;

	for (int w = 0; w < 2; w++) {
		if (!have[w])
			continue;
		if (!o && !(o = cJSON_AddObjectToObject(root, key)))
			return -1;
		if (!cJSON_AddNumberToObject(o, when[w], round(v[w] * scale) / scale))
			return -1;
	}
	return 0;
}

char *cli_host_probe_json(const struct cli_host_probe *before, const struct cli_host_probe *after)
{
	const struct cli_host_probe *pr[2] = {before, after};
	double cpu[2] = {0, 0}, cpu_sp[2] = {0, 0}, la[2] = {0, 0}, la_sp[2] = {0, 0};
	int has_cpu[2] = {0, 0}, has_la[2] = {0, 0};
	const char *device = NULL;
	cJSON *root;
	char *s = NULL;

	for (int w = 0; w < 2; w++) {
		if (!pr[w])
			continue;
		has_cpu[w] = pr[w]->cpu_ns > 0;
		has_la[w] = pr[w]->launch_ns > 0;
		cpu[w] = pr[w]->cpu_ns;
		cpu_sp[w] = pr[w]->cpu_spread;
		la[w] = pr[w]->launch_ns;
		la_sp[w] = pr[w]->launch_spread;
		if (has_la[w])
			device = pr[w]->device;
	}
	if (!has_cpu[0] && !has_cpu[1] && !has_la[0] && !has_la[1])
		return NULL;
	root = cJSON_CreateObject();
	if (!root)
		return NULL;
	if (!cJSON_AddNumberToObject(root, "version", CS_HOST_SPEED_VERSION) ||
	    !cJSON_AddStringToObject(
		    root, "method",
		    "cpu_ns: ns per 1000 steps of a xorshift generator indexing a 256 KiB table, "
		    "median of 15 blocks; launch_ns: wall ns per cuLaunchKernel of an empty kernel "
		    "in a process without a profiler, a wait every 256, median of 5 loops of 4000; "
		    "spread: interquartile range / median; before and after the program") ||
	    (device && !cJSON_AddStringToObject(root, "device", device)) ||
	    add_pair(root, "cpu_ns", cpu, has_cpu, 10) ||
	    add_pair(root, "cpu_spread", cpu_sp, has_cpu, 1000) ||
	    add_pair(root, "launch_ns", la, has_la, 10) ||
	    add_pair(root, "launch_spread", la_sp, has_la, 1000))
		goto out;
	s = cJSON_PrintUnformatted(root);
out:
	cJSON_Delete(root);
	return s;
}

#endif
