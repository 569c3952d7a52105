/*
 * names.c - names of the trace store's enums: event kinds (and their tables), copy directions,
 * memory kinds, memory operations and synchronization types, as reports, exporters and the CLI
 * print them; and what two readers must read alike from them: which waits are host waits, which
 * memory rows move the device memory counter.
 */
#include <stddef.h>

#include "cuscope/trace.h"

static const char *const event_tables[CS_EV_COUNT] = {
	[CS_EV_KERNEL] = "CUPTI_ACTIVITY_KIND_KERNEL",
	[CS_EV_MEMCPY] = "CUPTI_ACTIVITY_KIND_MEMCPY",
	[CS_EV_MEMSET] = "CUPTI_ACTIVITY_KIND_MEMSET",
	[CS_EV_MEMORY] = "CUDA_GPU_MEMORY_USAGE_EVENTS",
	[CS_EV_SYNC] = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
	[CS_EV_API] = "CUPTI_ACTIVITY_KIND_RUNTIME",
	[CS_EV_NVTX] = "NVTX_EVENTS",
};

static const char *const event_names[CS_EV_COUNT] = {
	[CS_EV_KERNEL] = "kernels", [CS_EV_MEMCPY] = "memcpy", [CS_EV_MEMSET] = "memset",
	[CS_EV_MEMORY] = "memory",  [CS_EV_SYNC] = "sync",     [CS_EV_API] = "api",
	[CS_EV_NVTX] = "nvtx",
};

/* NULL for a kind out of range, so that no SQL is ever built with a made-up table name. */
const char *cs_event_kind_table(enum cs_event_kind kind)
{
	if ((int)kind < 0 || kind >= CS_EV_COUNT)
		return NULL;
	return event_tables[kind];
}

const char *cs_event_kind_name(enum cs_event_kind kind)
{
	if ((int)kind < 0 || kind >= CS_EV_COUNT)
		return "unknown";
	return event_names[kind];
}

const char *cs_copy_kind_name(int kind)
{
	switch (kind) {
	case CS_COPY_HTOD:
		return "HtoD";
	case CS_COPY_DTOH:
		return "DtoH";
	case CS_COPY_HTOA:
		return "HtoA";
	case CS_COPY_ATOH:
		return "AtoH";
	case CS_COPY_ATOA:
		return "AtoA";
	case CS_COPY_ATOD:
		return "AtoD";
	case CS_COPY_DTOA:
		return "DtoA";
	case CS_COPY_DTOD:
		return "DtoD";
	case CS_COPY_HTOH:
		return "HtoH";
	case CS_COPY_PTOP:
		return "PtoP";
	}
	return "unknown";
}

const char *cs_mem_kind_name(int kind)
{
	switch (kind) {
	case CS_MEM_PAGEABLE:
		return "pageable";
	case CS_MEM_PINNED:
		return "pinned";
	case CS_MEM_DEVICE:
		return "device";
	case CS_MEM_ARRAY:
		return "array";
	case CS_MEM_MANAGED:
		return "managed";
	case CS_MEM_DEVICE_STATIC:
		return "device_static";
	case CS_MEM_MANAGED_STATIC:
		return "managed_static";
	}
	return "unknown";
}

const char *cs_mem_op_name(int op)
{
	switch (op) {
	case CS_MEMOP_ALLOC:
		return "alloc";
	case CS_MEMOP_FREE:
		return "free";
	case CS_MEMOP_VMM_CREATE:
		return "vmm_create";
	case CS_MEMOP_VMM_RELEASE:
		return "vmm_release";
	case CS_MEMOP_VMM_MAP:
		return "vmm_map";
	case CS_MEMOP_VMM_UNMAP:
		return "vmm_unmap";
	case CS_MEMOP_VMM_RESERVE:
		return "vmm_reserve";
	case CS_MEMOP_VMM_ADDRESS_FREE:
		return "vmm_address_free";
	}
	return "unknown";
}

const char *cs_sync_type_name(int type)
{
	switch (type) {
	case CS_SYNC_EVENT_SYNCHRONIZE:
		return "event_synchronize";
	case CS_SYNC_STREAM_WAIT_EVENT:
		return "stream_wait_event";
	case CS_SYNC_STREAM_SYNCHRONIZE:
		return "stream_synchronize";
	case CS_SYNC_CONTEXT_SYNCHRONIZE:
		return "context_synchronize";
	case CS_SYNC_MEMCPY:
		return "memcpy";
	case CS_SYNC_EVENT_QUERY:
		return "event_query";
	case CS_SYNC_STREAM_QUERY:
		return "stream_query";
	case CS_SYNC_HOST_FUNC:
		return "host_function";
	}
	return "unknown";
}

int cs_sync_type_is_host_wait(int type)
{
	switch (type) {
	case CS_SYNC_EVENT_SYNCHRONIZE:
	case CS_SYNC_STREAM_SYNCHRONIZE:
	case CS_SYNC_CONTEXT_SYNCHRONIZE:
	case CS_SYNC_MEMCPY:
	case CS_SYNC_HOST_FUNC:
		return 1;
	}
	return 0;
}
