/*
 * pageable_copies.h - a fact of the analysis: the host wait each host-to-device copy from pageable
 * memory made right after its call. pageable-memcpy charges those waits, and the host waits
 * (facts/d2h_waits.h) tell them from the explicit ones.
 *
 * A fact takes what it is made of as parameters and knows nothing of the rules' cache; the cache
 * (cache.h, ru_cached_pageable_copy_waits) computes it once per process and run.
 */
#ifndef CUSCOPE_FACT_PAGEABLE_COPIES_H
#define CUSCOPE_FACT_PAGEABLE_COPIES_H

#include <stdint.h>

#include "cuscope/analyze.h"

/*
 * The wait each host-to-device copy from pageable memory of process pid made right after its call:
 * the first host wait of the same thread that starts after the copy call ended, with no launch call
 * (kernel, copy, memset) of that thread between them. That is how PyTorch copies a pageable tensor
 * to the GPU without non_blocking: the copy, then a synchronize of its stream, which waits for
 * everything queued before it. (*wait_of)[c] is the sync index of copy c's wait, or -1;
 * a->ncopies entries, freed with free(). 0, or CS_ERR_NOMEM.
 */
int fact_pageable_copy_waits(const cs_analysis *a, uint32_t pid, int64_t **wait_of);

#endif
