/*
 * memory.c - device memory: CUPTI MEMORY2 activity records (allocations and releases) into
 * CS_REC_MEMORY.
 *
 * The VMM calls PyTorch's expandable segments use (cuMemCreate, cuMemMap, ...) and failed
 * allocations are seen by the API callbacks in api.c, which carry the address, handle and size of
 * each call.
 */
#include <string.h>

#include <cupti.h>

#include "collector.h"

void cs_decode_memory(const void *activity)
{
	const CUpti_ActivityMemory4 *m = activity;
	struct cs_rec_memory r;

	if (!cs_capture_keep_gpu(m->correlationId, m->timestamp))
		return;
	memset(&r, 0, sizeof(r));
	r.timestamp = m->timestamp;
	r.address = m->address;
	r.bytes = m->bytes;
	r.stream_id = m->isAsync ? m->streamId : UINT64_MAX;
	r.correlation_id = m->correlationId;
	r.device_id = m->deviceId;
	r.context_id = m->contextId;
	r.op = (uint8_t)m->memoryOperationType;
	r.mem_kind = (uint8_t)m->memoryKind;
	r.is_async = (uint8_t)m->isAsync;
	cs_out_write_event(&r, sizeof(r), CS_REC_MEMORY, 0);
}
