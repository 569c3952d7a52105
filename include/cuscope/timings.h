/*
 * timings.h - where the analysis spends its time, for benchmarks: with CUSCOPE_TIMINGS set in the
 * environment, each phase of a command (reading the trace, finding the steps, each rule, rendering)
 * adds its CPU and wall time to a named total, and the totals are printed on stderr when the
 * command ends, one line each: "timing: NAME cpu S wall S SHARE% peak MiB", where SHARE is the
 * phase's share of the command's CPU time and peak the process's peak resident memory when the
 * phase (last) ended. Without the variable every call is a
 * test of one flag.
 */
#ifndef CUSCOPE_TIMINGS_H
#define CUSCOPE_TIMINGS_H

typedef struct cs_stopwatch {
	double cpu, wall;
} cs_stopwatch;

/* 1 when CUSCOPE_TIMINGS is set (read once). */
int cs_timings_on(void);
/* Start a measurement. */
void cs_stopwatch_start(cs_stopwatch *w);
/* Add the time since cs_stopwatch_start(w) to the total called name (a static string); restarts w.
 */
void cs_timings_add(const char *name, cs_stopwatch *w);
/* Print the totals on stderr, in the order they were first added, with each one's share of the
 * command's CPU time; then forget them. */
void cs_timings_print(void);

#endif
