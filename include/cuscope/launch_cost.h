/*
 * launch_cost.h - what recording costs a kernel launch, as `cuscope record` measures it after the
 * program (src/cli/calibrate.c) and stores it in the trace's META launch_cost; launch-starvation
 * states its cost net of it, `info` shows it.
 *
 * The measurement runs loops of launches of an empty kernel in a process of its own, first with no
 * profiler, then with the injection library attached and switched between modes round by round.
 */
#ifndef CUSCOPE_LAUNCH_COST_H
#define CUSCOPE_LAUNCH_COST_H

#include <stddef.h>

/* What the calibration process switches on between its loops (cuscope_calibrate_switch()). */
enum cs_calibrate_mode {
	CS_CALIBRATE_OFF = 0,		  /* CUPTI attached, nothing enabled */
	CS_CALIBRATE_KERNELS = 1,	  /* CUPTI's kernel records alone */
	CS_CALIBRATE_ALL = 2,		  /* everything the recording's options enable */
	CS_CALIBRATE_EMPTY_CALLBACKS = 3, /* the same, the API callbacks returning at once */
};

/* The injection library's switch: int cuscope_calibrate_switch(int mode), 0 when done. */
#define CS_CALIBRATE_SYMBOL "cuscope_calibrate_switch"

/* The META key, and the version of its value that this cuscope writes (and reads, with older). */
#define CS_META_LAUNCH_COST    "launch_cost"
#define CS_LAUNCH_COST_VERSION 2

/*
 * Nanoseconds of wall time that recording adds to a launch, from a launch_cost value (its
 * "ns_per_launch"); 0 when the value is missing, malformed or not a finite number >= 0.
 */
double cs_launch_cost_ns(const char *json);
/* The same of a value already parsed (NULL: 0). */
struct cJSON;
double cs_launch_cost_ns_of(const struct cJSON *value);

/*
 * Read a file that `cuscope calibrate --format json` wrote, for a trace's META launch_cost
 * (`cuscope import --launch-cost`): the value, compact and malloc'd, or NULL with what is wrong in
 * why (cap bytes): the file cannot be read, is not JSON, has no ns_per_launch, or is of a newer
 * version.
 */
char *cs_launch_cost_load(const char *path, char *why, size_t cap);

/*
 * The cost of recording beyond a launch's calibrated one: META call_tails, written by the importer
 * from each process's CS_REC_CALL_TAILS (docs/trace-format.md):
 *   {"PID": {"launch": {"calls": N, "ns": T}, "stack": {...}, "other": {...}}, ...}
 * the time the library spent on the program's threads after the end of the calls it recorded, per
 * kind of call (enum cs_tail_kind: launches, calls with a stack captured, the others).
 */
#define CS_META_CALL_TAILS "call_tails"
/* Its kinds, in the order of enum cs_tail_kind (spool.h): "launch", "stack", "other". */
enum {
	CS_CALL_TAIL_LAUNCH = 0, /* kernel and graph launches */
	CS_CALL_TAIL_STACK = 1,	 /* waits, copies, allocations, frees: their stack is captured */
	CS_CALL_TAIL_OTHER = 2,	 /* the other recorded calls (a memset among them) */
};
#define CS_CALL_TAIL_KINDS 3

/*
 * The mean of that time per call of each kind for process pid, in ns (mean_ns[CS_CALL_TAIL_KINDS]):
 * 1 when the value has the process, else 0 with mean_ns all 0 (no value, malformed, another
 * process; a kind without calls or with a value that is not a finite number >= 0 reads as 0).
 */
int cs_call_tails_mean(const char *json, unsigned pid, double *mean_ns);
/* The cuscope_code part of a launch_cost value (what the library's own code adds to a launch, in
 * ns; 0 when missing): the part of the calibrated cost that call_tails also counts. */
double cs_launch_cost_own_code_ns(const char *json);

/*
 * What CUPTI adds to a blocking call that waits for the GPU, in ns, from a launch_cost value's
 * "waits" (calibrate.c): *copy for a synchronous copy back, *sync for a synchronize; 0 when
 * missing (values of cuscope before 2026-12-07), malformed or negative.
 */
void cs_launch_cost_wait_ns(const char *json, double *copy, double *sync);

/* The words for a part of the cost, a key of the value's "added_wall_ns" ("kernel_records": "its
 * kernel records"); the key itself when unknown. */
const char *cs_launch_cost_part_label(const char *key);

#endif
