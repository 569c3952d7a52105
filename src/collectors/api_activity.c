/*
 * api_activity.c - the frequent calls (launches, graph launches, asynchronous copies, sets) from
 * CUPTI's API activity records instead of callbacks.
 *
 * A callback costs the launching thread CUPTI's dispatch into cuscope at enter and at exit, two
 * timestamps and a locked append to the spool buffer; for a runtime launch CUPTI also calls back for
 * the driver call inside it. An API activity record (cuptiActivityEnableRuntimeApi/DriverApi, per
 * call id) is written by CUPTI into its own buffer and decoded here, on the thread that completes
 * buffers, into the same CS_REC_API a callback writes. api.c decides which ids come this way
 * (cs_api_activity_route); calls whose arguments or stacks are recorded stay on callbacks.
 *
 * A runtime call that makes a driver call (cudaLaunchKernel calls cuLaunchKernel) can leave a
 * record for each when both ids are traced. The program made the runtime call, so the driver record
 * of a call that ran inside a runtime call of the same thread is dropped: whichever of the two comes
 * first, the driver record is held per thread until the thread's next runtime record shows whether
 * it was nested; the last held one of each thread is written by cs_api_activity_finish().
 */
#include <pthread.h>
#include <string.h>

#include <cupti.h>

#include "collector.h"

#define ROUTE_MAX   4096 /* callback ids per domain: far above CUPTI's (about 800) */
#define THREAD_SLOTS 256 /* per-thread nesting state, direct-mapped by thread id */

struct route {
	uint32_t name_sid; /* 0: this id does not come as an activity record */
	uint8_t cls;
};

struct api_thread {
	uint32_t tid; /* 0: free slot */
	int held;     /* a driver record waits in rec */
	struct cs_rec_api rec;
	uint64_t rt_start, rt_end; /* the thread's latest runtime record */
};

static struct route routes[2][ROUTE_MAX]; /* [0] runtime, [1] driver */
static struct api_thread threads[THREAD_SLOTS];
static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER;
static int no_fold; /* development: write nested driver records too */

void cs_api_activity_set_fold(int fold)
{
	no_fold = !fold;
}

void cs_api_activity_route(int driver, uint32_t cbid, int cls, uint32_t name_sid)
{
	if (cbid < ROUTE_MAX) {
		routes[!!driver][cbid].cls = (uint8_t)cls;
		routes[!!driver][cbid].name_sid = name_sid;
	}
}

static void emit(struct cs_rec_api *r, uint32_t tid);

/* The thread's slot; a thread that finds its slot taken by another one takes it over, writing what
 * the other held (threads come and go; two busy at once in one slot are rare). */
static struct api_thread *thread_slot(uint32_t tid)
{
	struct api_thread *th = &threads[(tid * 2654435761u) % THREAD_SLOTS];

	if (th->tid != tid) {
		if (th->held)
			emit(&th->rec, th->tid);
		memset(th, 0, sizeof(*th));
		th->tid = tid;
	}
	return th;
}

static void emit(struct cs_rec_api *r, uint32_t tid)
{
	if (cs_capture_keep_host(r->start))
		cs_out_write(r, sizeof(*r), CS_REC_API, tid);
}

/* 1 when [s, e] lies within [rs, re], all known. */
static int nested(uint64_t s, uint64_t e, uint64_t rs, uint64_t re)
{
	return s && rs && s >= rs && e <= re;
}

void cs_decode_api_activity(const void *activity)
{
	const CUpti_ActivityAPI *a = activity;
	int driver = a->kind == CUPTI_ACTIVITY_KIND_DRIVER;
	struct api_thread *th;
	struct cs_rec_api r;

	if (a->cbid >= ROUTE_MAX || !routes[driver][a->cbid].name_sid)
		return;
	memset(&r, 0, sizeof(r));
	/* CUPTI writes 0 for both when it could not time the call: stored as unknown (0). */
	r.start = a->start;
	r.end = a->end;
	r.correlation_id = a->correlationId;
	r.cbid = a->cbid;
	r.result = (int32_t)a->returnValue;
	r.name_sid = routes[driver][a->cbid].name_sid;
	r.domain = driver ? 2 : 1;
	r.api_class = routes[driver][a->cbid].cls;

	pthread_mutex_lock(&api_lock);
	th = thread_slot(a->threadId);
	if (no_fold) {
		emit(&r, a->threadId);
	} else if (!driver) {
		if (th->held && !nested(th->rec.start, th->rec.end, r.start, r.end))
			emit(&th->rec, th->tid);
		th->held = 0;
		th->rt_start = r.start;
		th->rt_end = r.end;
		emit(&r, th->tid);
	} else if (!nested(r.start, r.end, th->rt_start, th->rt_end)) {
		if (th->held)
			emit(&th->rec, th->tid);
		th->rec = r;
		th->held = 1;
	}
	pthread_mutex_unlock(&api_lock);
}

void cs_api_activity_finish(void)
{
	pthread_mutex_lock(&api_lock);
	for (size_t i = 0; i < THREAD_SLOTS; i++) {
		if (threads[i].held)
			emit(&threads[i].rec, threads[i].tid);
		threads[i].held = 0;
	}
	pthread_mutex_unlock(&api_lock);
}
