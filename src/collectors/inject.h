/* inject.h - the injection library's set-up (inject.c), for its other entry point (nvtx.c). */
#ifndef CUSCOPE_INJECT_H
#define CUSCOPE_INJECT_H

/* Set up recording in this process once (spool file, fork/exit hooks, flush thread); 0 when
 * recording. */
int cs_inject_setup(void);

#endif
