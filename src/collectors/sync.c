/*
 * sync.c - synchronizations: CUPTI SYNCHRONIZATION activity records into CS_REC_SYNC, with the
 * development option sync_activity only. By default the wait, query and stream-wait-event callbacks
 * write CS_REC_SYNC themselves (api.c): the activity costs every kernel launch.
 *
 * The record says what was waited for (stream, event, context) and how long; the API callback with
 * the same correlation id says which call waited. Event and stream queries are not waits: the
 * importer tells them apart by the API class, and cuptiActivityEnableAllSyncRecords is left off so
 * that CUPTI reports only waits.
 */
#include <string.h>

#include <cupti.h>

#include "collector.h"

void cs_decode_sync(const void *activity)
{
	const CUpti_ActivitySynchronization2 *s = activity;
	struct cs_rec_sync r;

	if (!cs_capture_keep_gpu(s->correlationId, s->start))
		return;
	memset(&r, 0, sizeof(r));
	r.start = s->start;
	r.end = s->end;
	r.type = (uint32_t)s->type;
	r.correlation_id = s->correlationId;
	r.context_id = s->contextId;
	r.stream_id = s->streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? UINT32_MAX : s->streamId;
	r.cuda_event_id =
		s->cudaEventId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? UINT32_MAX : s->cudaEventId;
	cs_out_write_event(&r, sizeof(r), CS_REC_SYNC, 0);
}
