/*
 * memcpy.c - memory copies and sets: CUPTI MEMCPY and MEMSET activity records into spool records.
 *
 * A copy's correlationId is that of the driver call; runtimeCorrelationId that of the runtime call
 * around it, which is the one api.c records when the program used the runtime. The record carries
 * the runtime id when there is one, so that the importer can join the copy to the call that made
 * it. Copies between two GPUs (cudaMemcpyPeer, and copies between devices' memory with peer access)
 * come as MEMCPY2 records instead, with the source and destination devices.
 */
#include <string.h>

#include <cupti.h>

#include "collector.h"

/* The fields that CUpti_ActivityMemcpy6 and CUpti_ActivityMemcpyPtoP4 share, into a spool record.
 */
#define COPY_FIELDS(r, m, corr)                        \
	do {                                           \
		(r)->start = (m)->start;               \
		(r)->end = (m)->end;                   \
		(r)->bytes = (m)->bytes;               \
		(r)->graph_node_id = (m)->graphNodeId; \
		(r)->graph_id = (m)->graphId;          \
		(r)->correlation_id = (corr);          \
		(r)->device_id = (m)->deviceId;        \
		(r)->context_id = (m)->contextId;      \
		(r)->stream_id = (m)->streamId;        \
		(r)->copy_kind = (m)->copyKind;        \
		(r)->src_kind = (m)->srcKind;          \
		(r)->dst_kind = (m)->dstKind;          \
		(r)->flags = (m)->flags;               \
	} while (0)

void cs_decode_memcpy(const void *activity)
{
	const CUpti_ActivityMemcpy6 *m = activity;
	struct cs_rec_memcpy r;

	uint32_t corr = m->runtimeCorrelationId ? m->runtimeCorrelationId : m->correlationId;

	cs_hang_gpu_done(m->end, corr);
	if (!cs_capture_keep_gpu(corr, m->start))
		return;
	memset(&r, 0, sizeof(r));
	COPY_FIELDS(&r, m, corr);
	r.src_device = UINT32_MAX;
	r.dst_device = UINT32_MAX;
	cs_out_write_event(&r, sizeof(r), CS_REC_MEMCPY, 0);
}

void cs_decode_memcpy_peer(const void *activity)
{
	const CUpti_ActivityMemcpyPtoP4 *m = activity;
	struct cs_rec_memcpy r;

	if (!cs_capture_keep_gpu(m->correlationId, m->start))
		return;
	memset(&r, 0, sizeof(r));
	COPY_FIELDS(&r, m, m->correlationId);
	r.src_device = m->srcDeviceId;
	r.dst_device = m->dstDeviceId;
	cs_out_write_event(&r, sizeof(r), CS_REC_MEMCPY, 0);
}

void cs_decode_memset(const void *activity)
{
	const CUpti_ActivityMemset4 *m = activity;
	struct cs_rec_memset r;

	cs_hang_gpu_done(m->end, m->correlationId);
	if (!cs_capture_keep_gpu(m->correlationId, m->start))
		return;
	memset(&r, 0, sizeof(r));
	r.start = m->start;
	r.end = m->end;
	r.bytes = m->bytes;
	r.graph_node_id = m->graphNodeId;
	r.graph_id = m->graphId;
	r.correlation_id = m->correlationId;
	r.device_id = m->deviceId;
	r.context_id = m->contextId;
	r.stream_id = m->streamId;
	r.value = m->value;
	r.flags = m->flags;
	r.mem_kind = m->memoryKind;
	cs_out_write_event(&r, sizeof(r), CS_REC_MEMSET, 0);
}
