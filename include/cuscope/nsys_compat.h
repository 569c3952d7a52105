/*
 * nsys_compat.h - a copy of a trace with the names of the Nsight Systems SQLite export added, so
 * that SQL written for nsys runs on it (`cuscope export --format nsys-sqlite`,
 * docs/trace-format.md "Nsight Systems names").
 *
 * The copy stays a cuscope trace of the same schema version, which every command reads: what it
 * adds are columns at the end of event tables, rows of the launch calls in
 * CUPTI_ACTIVITY_KIND_RUNTIME, strings, and tables of their own (ENUM_*, ThreadNames), none of
 * which changes what an older reader reads. The trace itself is never changed.
 */
#ifndef CUSCOPE_NSYS_COMPAT_H
#define CUSCOPE_NSYS_COMPAT_H

#include <stdint.h>

#include "cuscope/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Write the copy of the trace at src to out: under a temporary name beside out, renamed onto it
 * at the end (an existing out is replaced; nothing is left behind on failure). *bytes: the size
 * written (may be NULL). 0 or a negative cs_err code with a one-line message in err.
 */
int cs_nsys_compat_write(const char *src, const char *out, int64_t *bytes, cs_error *err);

/* nsys's globalPid and globalTid of a process and thread: pid and tid in 24 bits each. */
static inline int64_t cs_nsys_global_tid(uint32_t pid, uint32_t tid)
{
	return ((int64_t)(pid & 0xffffff) << 24) | (int64_t)(tid & 0xffffff);
}

#ifdef __cplusplus
}
#endif
#endif
