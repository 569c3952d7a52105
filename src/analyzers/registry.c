/*
 * registry.c - every analyzer cuscope has, in the order `cuscope report --list-rules` shows them.
 * Adding a rule is one line here and one file in src/analyzers/ that defines its cs_analyzer.
 */
#include <string.h>

#include "cuscope/analyze.h"

extern const cs_analyzer cs_rule_d2h_sync;
extern const cs_analyzer cs_rule_empty_cache_in_loop;
extern const cs_analyzer cs_rule_memory_ceiling_thrash;
extern const cs_analyzer cs_rule_launch_starvation;
extern const cs_analyzer cs_rule_cuda_core_scan;
extern const cs_analyzer cs_rule_sync_call;
extern const cs_analyzer cs_rule_pageable_memcpy;
extern const cs_analyzer cs_rule_allocator_churn;
extern const cs_analyzer cs_rule_unfused_optimizer;
extern const cs_analyzer cs_rule_zero_grad_memset;
extern const cs_analyzer cs_rule_rank_straggler;
extern const cs_analyzer cs_rule_comm_not_overlapped;
extern const cs_analyzer cs_rule_small_allreduce_buckets;
extern const cs_analyzer cs_rule_gather_list_cat;
extern const cs_analyzer cs_rule_unfused_elementwise;
extern const cs_analyzer cs_rule_no_tensor_cores;
extern const cs_analyzer cs_rule_dataloader_stall;
extern const cs_analyzer cs_rule_host_created_tensor;
extern const cs_analyzer cs_rule_index_select_embedding;
extern const cs_analyzer cs_rule_low_utilization;

const cs_analyzer *const cs_analyzers[] = {
	&cs_rule_d2h_sync,
	&cs_rule_empty_cache_in_loop,
	&cs_rule_memory_ceiling_thrash,
	&cs_rule_launch_starvation,
	&cs_rule_cuda_core_scan,
	&cs_rule_sync_call,
	&cs_rule_pageable_memcpy,
	&cs_rule_allocator_churn,
	&cs_rule_unfused_optimizer,
	&cs_rule_zero_grad_memset,
	&cs_rule_rank_straggler,
	&cs_rule_comm_not_overlapped,
	&cs_rule_small_allreduce_buckets,
	&cs_rule_gather_list_cat,
	&cs_rule_unfused_elementwise,
	&cs_rule_no_tensor_cores,
	&cs_rule_dataloader_stall,
	&cs_rule_host_created_tensor,
	&cs_rule_index_select_embedding,
	&cs_rule_low_utilization,
	NULL,
};

const cs_analyzer *cs_analyzer_find(const char *id)
{
	if (!id)
		return NULL;
	for (const cs_analyzer *const *r = cs_analyzers; *r; r++)
		if (!strcmp((*r)->id, id))
			return *r;
	return NULL;
}

int cs_analyzer_after_others(const cs_analyzer *r)
{
	return r == &cs_rule_low_utilization;
}
