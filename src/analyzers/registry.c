/*
 * registry.c - every analyzer cuscope has, in the order `cuscope report --list-rules` shows them:
 * its id, summary, guide passage, check function and the shared facts it reads. Adding a rule is
 * an entry here, its id and check function in rules.h and one file in src/analyzers/ that defines
 * the function.
 */
#include <string.h>

#include "cuscope/analyze.h"

#include "rules.h"

const cs_analyzer *const cs_analyzers[] = {
	&(const cs_analyzer){
		RULE_ID_D2H_SYNC,
		"a device-to-host copy and a host wait in every step drain the GPU, which idles "
		"until the host launches again",
		"000 #12, 002 3.2",
		cs_rule_d2h_sync_check,
		CS_FACT_LAUNCH_CALLS | CS_FACT_WAITS,
	},
	&(const cs_analyzer){
		RULE_ID_EMPTY_CACHE_IN_LOOP,
		"the allocator's cache is emptied inside the steps (torch.cuda.empty_cache()) and "
		"allocated again with slow cudaMalloc calls",
		"000 #6",
		cs_rule_empty_cache_in_loop_check,
		0,
	},
	&(const cs_analyzer){
		RULE_ID_MEMORY_CEILING_THRASH,
		"the working set is at the memory limit: every step the allocator frees its cache, "
		"waits and allocates again",
		"000 #10, 002 3.5",
		cs_rule_memory_ceiling_thrash_check,
		0,
	},
	&(const cs_analyzer){
		RULE_ID_LAUNCH_STARVATION,
		"the GPU keeps running out of work inside the steps: the host launches kernels "
		"slower than they run",
		"000 #12, 001 6.3-6.4",
		cs_rule_launch_starvation_check,
		CS_FACT_LAUNCH_CALLS | CS_FACT_WAITS,
	},
	&(const cs_analyzer){
		RULE_ID_CUDA_CORE_SCAN,
		"scan kernels (cumsum over a long dimension) take a large share of the step on the "
		"CUDA cores; a triangular-matrix matmul runs on the tensor cores",
		"000 #13",
		cs_rule_cuda_core_scan_check,
		0,
	},
	&(const cs_analyzer){
		RULE_ID_SYNC_CALL,
		"an explicit synchronize (device, stream or event) in every step, with no copy to "
		"wait for, drains the GPU, which idles until the host launches again",
		"000 #12, 002 3.2",
		cs_rule_sync_call_check,
		CS_FACT_WAITS,
	},
	&(const cs_analyzer){
		RULE_ID_PAGEABLE_MEMCPY,
		"copies from or to pageable host memory in every step (non_blocking=True ones too) "
		"hold the host, which launches nothing meanwhile, and the GPU idles",
		"000 #7, 001 6.1.2",
		cs_rule_pageable_memcpy_check,
		CS_FACT_WAITS,
	},
	&(const cs_analyzer){
		RULE_ID_ALLOCATOR_CHURN,
		"device memory allocated and freed through the steady steps (shapes that change "
		"every step), outside any release burst; the GPU idles while the host is in the "
		"allocator calls",
		"000 #5, 002 3.5",
		cs_rule_allocator_churn_check,
		0,
	},
	&(const cs_analyzer){
		RULE_ID_UNFUSED_OPTIMIZER,
		"the optimizer step runs a few small kernels per parameter tensor (foreach=False), "
		"launched one by one, where multi-tensor or fused kernels would do it in a handful",
		"001 6.5.2",
		cs_rule_unfused_optimizer_check,
		CS_FACT_LAUNCH_ORDER,
	},
	&(const cs_analyzer){
		RULE_ID_ZERO_GRAD_MEMSET,
		"every gradient is written with zeros each step (zero_grad(set_to_none=False)): "
		"fill kernels or memsets that releasing the gradients would not need",
		"001 6.4",
		cs_rule_zero_grad_memset_check,
		CS_FACT_LAUNCH_ORDER,
	},
	&(const cs_analyzer){
		RULE_ID_RANK_STRAGGLER,
		"one rank of a multi-process job is consistently the slowest and the others wait "
		"for it in their collectives",
		"000 #4, #14",
		cs_rule_rank_straggler_check,
		0,
	},
	&(const cs_analyzer){
		RULE_ID_COMM_NOT_OVERLAPPED,
		"NCCL kernels run with no compute on other streams beside them: the step waits for "
		"the communication in full",
		"000 #4, #14",
		cs_rule_comm_not_overlapped_check,
		0,
	},
	&(const cs_analyzer){
		RULE_ID_SMALL_ALLREDUCE_BUCKETS,
		"many small NCCL all-reduces per step, each paying NCCL's fixed latency: buckets "
		"too small or gradients not contiguous",
		"000 #3, #14",
		cs_rule_small_allreduce_buckets_check,
		0,
	},
	&(const cs_analyzer){
		RULE_ID_GATHER_LIST_CAT,
		"an NCCL all-gather into a list of tensors, then torch.cat of the list: two extra "
		"copies of the gathered data",
		"000 #1",
		cs_rule_gather_list_cat_check,
		0,
	},
	&(const cs_analyzer){
		RULE_ID_UNFUSED_ELEMENTWISE,
		"chains of same-size element-wise kernels back to back on one stream, each reading "
		"and writing the whole tensor, that one fused kernel (torch.compile) would replace",
		"000 #11, 001 6.2.2, 001 9.3",
		cs_rule_unfused_elementwise_check,
		0,
	},
	&(const cs_analyzer){
		RULE_ID_NO_TENSOR_CORES,
		"GEMMs and convolutions on the float32 SIMT path (CUDA cores) take a real share of "
		"the step on a GPU with tensor cores: no bf16 autocast, TF32 off",
		"000 #13, 002 3.4, 001 9.1",
		cs_rule_no_tensor_cores_check,
		0,
	},
	&(const cs_analyzer){
		RULE_ID_DATALOADER_STALL,
		"the GPU idles at the start of the steps while the training thread, making no CUDA "
		"call, prepares the next batch",
		"001 5.4, 6.1",
		cs_rule_dataloader_stall_check,
		0,
	},
	&(const cs_analyzer){
		RULE_ID_HOST_CREATED_TENSOR,
		"tensors made on the host and copied to the device inside every step "
		"(torch.rand(n).cuda()) while the GPU idles, where creating them on the device "
		"would do",
		"002 3.3",
		cs_rule_host_created_tensor_check,
		0,
	},
	&(const cs_analyzer){
		RULE_ID_INDEX_SELECT_EMBEDDING,
		"embedding lookups written as index_select, whose backward adds the rows with "
		"atomics (index_add_) where nn.Embedding sorts them (information: not faster on "
		"every GPU)",
		"000 #2",
		cs_rule_index_select_embedding_check,
		0,
	},
	&(const cs_analyzer){
		RULE_ID_LOW_UTILIZATION,
		"the GPU is busy less than half of the step; a summary naming the other rules' "
		"findings that explain the idle, largest first",
		"000 #12, 001 6.2.1, 6.3-6.4",
		cs_rule_low_utilization_check,
		0,
	},
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
	return r->check == cs_rule_low_utilization_check;
}
