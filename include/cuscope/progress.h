/*
 * progress.h - a progress line on a terminal for the long commands (import, stats, report,
 * export): "cuscope: exporting 'run.db'... 45% 12 s", rewritten in place on standard error by a
 * thread of its own, at most four times a second, once the work has taken half a second; erased
 * when the work ends. Nothing at all when standard error is not a terminal (a pipe, a file, CI),
 * so that the outputs the tests and scripts read stay as they are.
 */
#ifndef CUSCOPE_PROGRESS_H
#define CUSCOPE_PROGRESS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cs_progress cs_progress;

/* Show what (copied) on standard error when it is a terminal; NULL otherwise, or without memory.
 * Every call below takes NULL and does nothing with it. */
cs_progress *cs_progress_start(const char *what);
/* The same on fd, when force is set or fd is a terminal, first after delay_ms and then at most
 * every interval_ms (cs_progress_start: 500 and 250). */
cs_progress *cs_progress_start_fd(int fd, const char *what, int force, int delay_ms,
				  int interval_ms);
/* Work done so far of total (0: unknown, then done is shown as a count). Any thread may call it. */
void cs_progress_set(cs_progress *p, int64_t done, int64_t total);
/* What it is doing now (copied; at most 80 bytes are kept). */
void cs_progress_phase(cs_progress *p, const char *what);
/* Stop the thread, erase the line if one was shown, free p. */
void cs_progress_end(cs_progress *p);

#ifdef __cplusplus
}
#endif
#endif
