/*
 * rules.h - the rules of src/analyzers/, one file each: the id each one's findings carry and its
 * check function, which the registry (registry.c) pairs with its summary and guide passage.
 */
#ifndef CS_ANALYZERS_RULES_H
#define CS_ANALYZERS_RULES_H

#include "cuscope/analyze.h"

#define RULE_ID_D2H_SYNC		"d2h-sync"
#define RULE_ID_EMPTY_CACHE_IN_LOOP	"empty-cache-in-loop"
#define RULE_ID_MEMORY_CEILING_THRASH	"memory-ceiling-thrash"
#define RULE_ID_LAUNCH_STARVATION	"launch-starvation"
#define RULE_ID_CUDA_CORE_SCAN		"cuda-core-scan"
#define RULE_ID_SYNC_CALL		"sync-call"
#define RULE_ID_PAGEABLE_MEMCPY		"pageable-memcpy"
#define RULE_ID_ALLOCATOR_CHURN		"allocator-churn"
#define RULE_ID_UNFUSED_OPTIMIZER	"unfused-optimizer"
#define RULE_ID_ZERO_GRAD_MEMSET	"zero-grad-memset"
#define RULE_ID_RANK_STRAGGLER		"rank-straggler"
#define RULE_ID_COMM_NOT_OVERLAPPED	"comm-not-overlapped"
#define RULE_ID_SMALL_ALLREDUCE_BUCKETS "small-allreduce-buckets"
#define RULE_ID_GATHER_LIST_CAT		"gather-list-cat"
#define RULE_ID_UNFUSED_ELEMENTWISE	"unfused-elementwise"
#define RULE_ID_NO_TENSOR_CORES		"no-tensor-cores"
#define RULE_ID_DATALOADER_STALL	"dataloader-stall"
#define RULE_ID_HOST_CREATED_TENSOR	"host-created-tensor"
#define RULE_ID_INDEX_SELECT_EMBEDDING	"index-select-embedding"
#define RULE_ID_LOW_UTILIZATION		"low-utilization"

/* Each looks for its pattern in ctx's steps and emits what it finds: 0, or a cs_err code. */
int cs_rule_d2h_sync_check(cs_rule_ctx *ctx, cs_error *err);
int cs_rule_empty_cache_in_loop_check(cs_rule_ctx *ctx, cs_error *err);
int cs_rule_memory_ceiling_thrash_check(cs_rule_ctx *ctx, cs_error *err);
int cs_rule_launch_starvation_check(cs_rule_ctx *ctx, cs_error *err);
int cs_rule_cuda_core_scan_check(cs_rule_ctx *ctx, cs_error *err);
int cs_rule_sync_call_check(cs_rule_ctx *ctx, cs_error *err);
int cs_rule_pageable_memcpy_check(cs_rule_ctx *ctx, cs_error *err);
int cs_rule_allocator_churn_check(cs_rule_ctx *ctx, cs_error *err);
int cs_rule_unfused_optimizer_check(cs_rule_ctx *ctx, cs_error *err);
int cs_rule_zero_grad_memset_check(cs_rule_ctx *ctx, cs_error *err);
int cs_rule_rank_straggler_check(cs_rule_ctx *ctx, cs_error *err);
int cs_rule_comm_not_overlapped_check(cs_rule_ctx *ctx, cs_error *err);
int cs_rule_small_allreduce_buckets_check(cs_rule_ctx *ctx, cs_error *err);
int cs_rule_gather_list_cat_check(cs_rule_ctx *ctx, cs_error *err);
int cs_rule_unfused_elementwise_check(cs_rule_ctx *ctx, cs_error *err);
int cs_rule_no_tensor_cores_check(cs_rule_ctx *ctx, cs_error *err);
int cs_rule_dataloader_stall_check(cs_rule_ctx *ctx, cs_error *err);
int cs_rule_host_created_tensor_check(cs_rule_ctx *ctx, cs_error *err);
int cs_rule_index_select_embedding_check(cs_rule_ctx *ctx, cs_error *err);
int cs_rule_low_utilization_check(cs_rule_ctx *ctx, cs_error *err);

#endif
