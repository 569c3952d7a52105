/* api.h - the CUDA runtime and driver API callbacks (api.c), for the life cycle (inject.c). */
#ifndef CUSCOPE_API_H
#define CUSCOPE_API_H

#include <stdint.h>

#include <cupti.h>

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

#endif
