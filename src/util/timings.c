/* timings.c - named totals of CPU and wall time for benchmarks (include/cuscope/timings.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "cuscope/timings.h"

#define TIMINGS_MAX 64

static struct {
	const char *name;
	double cpu, wall;
	long peak_kb; /* the process's peak resident memory when the phase last ended */
} totals[TIMINGS_MAX];
static int ntotals;
static int on = -1;

int cs_timings_on(void)
{
	if (on < 0) {
		const char *v = getenv("CUSCOPE_TIMINGS");

		on = v && *v && strcmp(v, "0") != 0;
	}
	return on;
}

static double clock_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void cs_stopwatch_start(cs_stopwatch *w)
{
	if (!cs_timings_on())
		return;
	w->cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	w->wall = clock_s(CLOCK_MONOTONIC);
}

void cs_timings_add(const char *name, cs_stopwatch *w)
{
	double cpu, wall;
	int i;

	if (!cs_timings_on())
		return;
	cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	wall = clock_s(CLOCK_MONOTONIC);
	for (i = 0; i < ntotals; i++)
		if (!strcmp(totals[i].name, name))
			break;
	if (i == ntotals) {
		if (ntotals == TIMINGS_MAX)
			return;
		totals[ntotals++].name = name;
	}
	{
		struct rusage ru;

		if (getrusage(RUSAGE_SELF, &ru) == 0)
			totals[i].peak_kb = ru.ru_maxrss;
	}
	totals[i].cpu += cpu - w->cpu;
	totals[i].wall += wall - w->wall;
	w->cpu = cpu;
	w->wall = wall;
}

void cs_timings_print(void)
{
	double all = 0;

	if (!cs_timings_on())
		return;
	all = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	for (int i = 0; i < ntotals; i++)
		fprintf(stderr, "timing: %-28s cpu %8.3f s wall %8.3f s %5.1f%%  peak %6ld MiB\n",
			totals[i].name, totals[i].cpu, totals[i].wall,
			all > 0 ? totals[i].cpu / all * 100 : 0.0, totals[i].peak_kb / 1024);
	fprintf(stderr, "timing: %-28s cpu %8.3f s\n", "(whole command)", all);
	ntotals = 0;
}
