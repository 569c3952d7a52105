/* inject.h - the injection library's life cycle, options and capture window (inject.c, api.c). */
#ifndef CUSCOPE_INJECT_H
#define CUSCOPE_INJECT_H

#include <stdint.h>

#include <cupti.h>

/* 1 while this process records (set up, not forked away, not shut down). */
int cs_inject_active(void);
/* 1 when --capture=profiler-api: cudaProfilerStart/Stop delimit what is recorded. */
int cs_capture_profiler_api(void);

void CUPTIAPI cs_api_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			      const void *data);
/* Enable the callbacks cuscope records in the domains given (1 runtime, 2 driver, 3 both); stacks:
 * 1 at waits, copies, allocations and frees, 2 at kernel launches (per call site); returns how many
 * ids were enabled. */
int cs_api_enable(CUpti_SubscriberHandle sub, int all, int census, int domains, int stacks,
		  int noop, int syncs);
/* Print the per-API call counts of census mode on stderr. */
void cs_api_census_report(void);
/* Write the CS_REC_CALL_TAILS of the calls recorded so far (before the process's end record). */
void cs_api_write_call_tails(void);
/* The name of a runtime (domain 1) or driver (2) call, NULL when unknown (hang.c's namer). */
const char *cs_api_call_name(int domain, uint32_t cbid);

/* Set up recording in this process once (spool file, fork/exit hooks, flush thread); 0 when
 * recording. */
int cs_inject_setup(void);
/* At the exit of a host wait (synchronize, synchronous copy or set) at CUPTI time now: hand what
 * completed to the spool file, at once or soon (inject.c says when). */
void cs_inject_after_wait(uint64_t now);
/* 0 when NVTX recording was turned off (option no_nvtx). */
int cs_inject_nvtx_enabled(void);

#endif
