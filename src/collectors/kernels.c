/*
 * kernels.c - kernels: CUPTI CONCURRENT_KERNEL activity records into CS_REC_KERNEL.
 *
 * Kernel names are interned by content (modules get unloaded and their name addresses reused); a
 * small cache keyed by CUPTI's name pointer, checked against the content, saves hashing the same
 * long C++ name for every launch. The host time of each launch comes from the API callbacks in
 * api.c, joined on the correlation id by the importer.
 */
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "collector.h"

#define NAME_CACHE 256

struct name_cache_entry {
	const char *ptr;
	const char *text; /* our copy, to check the content behind a reused pointer */
	uint32_t sid;
};

/* Only the activity-buffer thread decodes, so the cache needs no lock. */
static struct name_cache_entry name_cache[NAME_CACHE];

static uint32_t kernel_name_sid(const char *name)
{
	struct name_cache_entry *e;
	size_t slot;

	if (!name)
		return cs_intern("<unknown>", (size_t)-1);
	slot = ((uintptr_t)name >> 4) & (NAME_CACHE - 1);
	e = &name_cache[slot];
	if (e->ptr == name && e->text && strcmp(e->text, name) == 0)
		return e->sid;
	e->sid = cs_intern(name, (size_t)-1);
	e->ptr = name;
	free((void *)e->text);
	e->text = strdup(name);
	return e->sid;
}

void cs_decode_kernel(const void *activity)
{
	const CUpti_ActivityKernel10 *k = activity;
	struct cs_rec_kernel r;

	cs_hang_gpu_done(k->end, k->correlationId);
	if (!cs_capture_keep_gpu(k->correlationId, k->start))
		return;
	memset(&r, 0, sizeof(r));
	r.start = k->start;
	r.end = k->end;
	r.queued = k->queued == CUPTI_TIMESTAMP_UNKNOWN ? 0 : k->queued;
	r.submitted = k->submitted == CUPTI_TIMESTAMP_UNKNOWN ? 0 : k->submitted;
	r.graph_node_id = k->graphNodeId;
	r.graph_id = k->graphId;
	r.correlation_id = k->correlationId;
	r.device_id = k->deviceId;
	r.context_id = k->contextId;
	r.stream_id = k->streamId;
	r.name_sid = kernel_name_sid(k->name);
	r.grid[0] = k->gridX;
	r.grid[1] = k->gridY;
	r.grid[2] = k->gridZ;
	r.block[0] = k->blockX;
	r.block[1] = k->blockY;
	r.block[2] = k->blockZ;
	r.static_shared = k->staticSharedMemory;
	r.dynamic_shared = k->dynamicSharedMemory;
	r.registers = k->registersPerThread;
	r.launch_type = k->launchType;
	cs_out_write_event(&r, sizeof(r), CS_REC_KERNEL, 0);
}
