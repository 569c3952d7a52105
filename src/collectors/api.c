/*
 * api.c - CUDA runtime and driver API callbacks: the host side of launches, waits, copies and
 * allocations.
 *
 * Callbacks are enabled only on the API ids that a class in enum cs_api_class names (all ids with
 * --api=all). At enter the callback stores the time (cs_clock_now(), clock.c) in CUPTI's per-call
 * scratch; at exit it writes one CS_REC_API with both times, the return code and, for memory calls,
 * the address/handle and size. A driver call made inside a runtime call (cudaLaunchKernel calls
 * cuLaunchKernel) is skipped: the runtime call is what the program made and what the GPU records
 * correlate with.
 *
 * The classes are decided once at start-up from the API names CUPTI reports, so the importer needs
 * no CUDA headers and new API versions (cudaFoo_v2) fall into the class of their base name.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti.h>

#include "api.h"
#include "collector.h"
#include "flush.h"
#include "options.h"

#define RT_MAX	CUPTI_RUNTIME_TRACE_CBID_SIZE
#define DRV_MAX CUPTI_DRIVER_TRACE_CBID_SIZE

static uint8_t rt_class[RT_MAX], drv_class[DRV_MAX];
static uint8_t rt_wait[RT_MAX], drv_wait[DRV_MAX]; /* the host waits for the GPU in this call */
static uint32_t rt_name[RT_MAX], drv_name[DRV_MAX];
static _Atomic uint32_t rt_count[RT_MAX], drv_count[DRV_MAX]; /* census mode */
static uint8_t rt_ptsz[RT_MAX], drv_ptsz[DRV_MAX]; /* per-thread default stream variant (_ptsz) */
static int api_all, api_census, api_stacks, api_noop, api_syncs;
static _Atomic uint64_t census_cb_calls,
	census_cb_ns; /* census: calls of the callback, time in it */
/* The library's time after the end of each recorded call, per enum cs_tail_kind */
static _Atomic uint64_t tail_calls[CS_TAIL_KINDS], tail_ns[CS_TAIL_KINDS];

/* The calls whose stack is captured at every call with --backtrace: what analyzers blame. Kernel
 * launches get one per call site (cs_stack_capture_launch). */
static int class_wants_stack(int cls)
{
	switch (cls) {
	case CS_APICLASS_MEMCPY_SYNC:
	case CS_APICLASS_MEMCPY_ASYNC:
	case CS_APICLASS_WAIT_STREAM:
	case CS_APICLASS_WAIT_EVENT:
	case CS_APICLASS_WAIT_DEVICE:
	case CS_APICLASS_ALLOC:
	case CS_APICLASS_FREE:
	case CS_APICLASS_VMM_CREATE:
	case CS_APICLASS_VMM_RELEASE:
	case CS_APICLASS_VMM_MAP:
	case CS_APICLASS_VMM_UNMAP:
		return 1;
	default:
		return 0;
	}
}

/* Depth of runtime calls on this thread: driver calls inside them are not recorded. */
static __thread int tls_rt_depth __attribute__((tls_model("initial-exec")));

/* Argument layouts shared by the calls of one class (see generated_cuda_meta.h). */
struct args_out_ptr_size {
	uint64_t *ptr; /* out: the address or handle */
	size_t size;
};
struct args_ptr_size {
	uint64_t ptr;
	size_t size;
};

static void api_fill_args(struct cs_rec_api *r, int cls, const void *params, int ok)
{
	if (!params)
		return;
	switch (cls) {
	case CS_APICLASS_ALLOC:
	case CS_APICLASS_VMM_CREATE:
	case CS_APICLASS_VMM_RESERVE: {
		const struct args_out_ptr_size *a = params;

		r->arg_bytes = a->size;
		if (ok && a->ptr)
			r->arg_address = *a->ptr;
		break;
	}
	case CS_APICLASS_FREE:
	case CS_APICLASS_VMM_RELEASE:
		r->arg_address = *(const uint64_t *)params;
		break;
	case CS_APICLASS_VMM_MAP:
	case CS_APICLASS_VMM_UNMAP:
	case CS_APICLASS_VMM_ADDRESS_FREE: {
		const struct args_ptr_size *a = params;

		r->arg_address = a->ptr;
		r->arg_bytes = a->size;
		break;
	}
	case CS_APICLASS_WAIT_STREAM:
	case CS_APICLASS_WAIT_EVENT:
	case CS_APICLASS_QUERY_STREAM:
	case CS_APICLASS_QUERY_EVENT:
		/* the stream or event handle */
		r->arg_address = *(const uint64_t *)params;
		break;
	}
}

/* The type of CS_REC_SYNC a call of a class makes (the importer sets the query types from the
 * class); 0 for calls that are not synchronizations. */
static uint32_t sync_type_of(int cls)
{
	switch (cls) {
	case CS_APICLASS_WAIT_STREAM:
	case CS_APICLASS_QUERY_STREAM:
		return CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
	case CS_APICLASS_WAIT_EVENT:
	case CS_APICLASS_QUERY_EVENT:
		return CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE;
	case CS_APICLASS_WAIT_DEVICE:
		return CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
	case CS_APICLASS_STREAM_WAIT_EVENT:
		return CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT;
	default:
		return 0;
	}
}

/*
 * The synchronization record of a wait, query or stream-wait-event call, made here from the call
 * instead of by CUPTI's SYNCHRONIZATION activity (which costs every kernel launch, docs/
 * performance.md): the call's times, the context and, for the calls that name a stream (their
 * first argument), CUPTI's id of that stream. No CUDA event id: CUPTI has no call that maps an
 * event handle to it.
 */
static void api_write_sync(const CUpti_CallbackData *cb, int cls, int ptsz,
			   const struct cs_rec_api *a)
{
	struct cs_rec_sync r;
	uint32_t id;

	memset(&r, 0, sizeof(r));
	r.start = a->start;
	r.end = a->end;
	r.type = sync_type_of(cls);
	r.correlation_id = a->correlation_id;
	r.context_id = cb->contextUid;
	r.stream_id = UINT32_MAX;
	r.cuda_event_id = UINT32_MAX;
	if ((cls == CS_APICLASS_WAIT_STREAM || cls == CS_APICLASS_QUERY_STREAM ||
	     cls == CS_APICLASS_STREAM_WAIT_EVENT) &&
	    cb->functionParams && cb->context &&
	    cuptiGetStreamIdEx(cb->context, *(CUstream const *)cb->functionParams, (uint8_t)ptsz,
			       &id) == CUPTI_SUCCESS)
		r.stream_id = id;
	cs_out_write_event(&r, sizeof(r), CS_REC_SYNC, cs_tid());
}

/* Count what this exit callback took after the call's end (end: the time read at its top). */
static void tail_add(int cls, uint64_t end)
{
	uint64_t now = cs_clock_now();
	int k = cls == CS_APICLASS_LAUNCH || cls == CS_APICLASS_GRAPH_LAUNCH ? CS_TAIL_LAUNCH
		: class_wants_stack(cls)				      ? CS_TAIL_STACK
									      : CS_TAIL_OTHER;

	atomic_fetch_add_explicit(&tail_calls[k], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&tail_ns[k], now > end ? now - end : 0, memory_order_relaxed);
}

void cs_api_write_call_tails(void)
{
	struct cs_rec_call_tails r;

	memset(&r, 0, sizeof(r));
	for (int k = 0; k < CS_TAIL_KINDS; k++) {
		r.calls[k] = atomic_load_explicit(&tail_calls[k], memory_order_relaxed);
		r.ns[k] = atomic_load_explicit(&tail_ns[k], memory_order_relaxed);
	}
	cs_out_write(&r, sizeof(r), CS_REC_CALL_TAILS, cs_tid());
}

const char *cs_api_call_name(int domain, uint32_t cbid)
{
	const char *name = NULL;

	if (cuptiGetCallbackName(domain == 1 ? CUPTI_CB_DOMAIN_RUNTIME_API
					     : CUPTI_CB_DOMAIN_DRIVER_API,
				 cbid, &name) != CUPTI_SUCCESS)
		return NULL;
	return name;
}

/* At a call's exit, for --hang-after (hang.c): a wait ends; a query that says "not ready" (600 in
 * both APIs) begins or goes on spinning, any other answer ends it; a launch is counted. */
static void hang_note(const CUpti_CallbackData *cb, int cls, int runtime, CUpti_CallbackId cbid,
		      uint64_t start)
{
	int result = cb->functionReturnValue ? *(const int *)cb->functionReturnValue : 0;

	if (runtime ? rt_wait[cbid] : drv_wait[cbid])
		cs_hang_leave();
	else if (cls == CS_APICLASS_QUERY_STREAM || cls == CS_APICLASS_QUERY_EVENT)
		result == 600 ? cs_hang_enter(CS_HANG_QUERY, runtime ? 1 : 2, cbid, cb->correlationId,
					      start)
			      : cs_hang_leave();
	else if (cls == CS_APICLASS_LAUNCH || cls == CS_APICLASS_GRAPH_LAUNCH)
		/* a graph launch names no kernel: the call's name says what it was */
		cs_hang_launched(cb->correlationId,
				 cls == CS_APICLASS_GRAPH_LAUNCH ? cb->functionName : cb->symbolName);
}

static void api_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
	const CUpti_CallbackData *cb = data;
	int runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
	struct cs_rec_api r;
	uint64_t now;
	int cls;

	if (!runtime && domain != CUPTI_CB_DOMAIN_DRIVER_API)
		return;
	if (runtime) {
		if (cbid >= RT_MAX)
			return;
		if (cb->callbackSite == CUPTI_API_ENTER)
			tls_rt_depth++;
		else
			tls_rt_depth--;
	} else if (tls_rt_depth > 0 || cbid >= DRV_MAX) {
		return;
	}
	if (!cs_inject_active())
		return;
	now = cs_clock_now();
	if (cb->callbackSite == CUPTI_API_ENTER) {
		if (cb->correlationData)
			*cb->correlationData = now;
		if (runtime ? rt_wait[cbid] : drv_wait[cbid])
			cs_hang_enter(CS_HANG_WAIT, runtime ? 1 : 2, cbid, cb->correlationId, now);
		cs_capture_note_corr(cb->correlationId);
		if (api_census)
			atomic_fetch_add(runtime ? &rt_count[cbid] : &drv_count[cbid], 1);
		return;
	}
	cls = runtime ? rt_class[cbid] : drv_class[cbid];
	memset(&r, 0, sizeof(r));
	r.start = cb->correlationData ? *cb->correlationData : 0;
	if (cs_hang_on())
		hang_note(cb, cls, runtime, cbid, r.start);
	r.end = now > r.start ? now : r.start; /* a new clock anchor between them (clock.c) */
	if (cls == CS_APICLASS_PROFILER_START && cs_capture_profiler_api())
		cs_capture_begin(r.start);
	if (!cs_capture_keep_host(r.start)) {
		if (runtime ? rt_wait[cbid] : drv_wait[cbid])
			cs_inject_after_wait(now);
		return;
	}
	r.correlation_id = cb->correlationId;
	r.cbid = cbid;
	r.result = cb->functionReturnValue ? *(const int *)cb->functionReturnValue : 0;
	r.name_sid = runtime ? rt_name[cbid] : drv_name[cbid];
	r.domain = runtime ? 1 : 2;
	r.api_class = (uint8_t)cls;
	api_fill_args(&r, cls, cb->functionParams, r.result == 0);
	if ((api_stacks & 1) && class_wants_stack(cls))
		r.stack_id = cs_stack_capture();
	else if ((api_stacks & 2) && (cls == CS_APICLASS_LAUNCH || cls == CS_APICLASS_GRAPH_LAUNCH))
		/* the first argument tells the kernel (cudaLaunchKernel's func, cuLaunchKernel's
		 * f) or the graph apart; the Ex launches pass their config first, which is enough
		 * to sample by */
		r.stack_id = cs_stack_capture_launch(
			cb->functionParams ? *(const void *const *)cb->functionParams : NULL);
	cs_out_write_event(&r, sizeof(r), CS_REC_API, cs_tid());
	if (api_syncs && sync_type_of(cls))
		api_write_sync(cb, cls, runtime ? rt_ptsz[cbid] : drv_ptsz[cbid], &r);
	if (cls == CS_APICLASS_PROFILER_STOP && cs_capture_profiler_api())
		cs_capture_end(r.end);
	/* after the call's own record, so that the flush takes it along */
	if (runtime ? rt_wait[cbid] : drv_wait[cbid])
		cs_inject_after_wait(now);
	tail_add(cls, now);
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void CUPTIAPI cs_api_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			      const void *data)
{
	uint64_t t0;

	(void)userdata;
	if (api_noop)
		return;
	if (!api_census) {
		api_callback(domain, cbid, data);
		return;
	}
	t0 = monotonic_ns();
	api_callback(domain, cbid, data);
	atomic_fetch_add(&census_cb_ns, monotonic_ns() - t0);
	atomic_fetch_add(&census_cb_calls, 1);
}

/* 1 for the calls in which the host waits for the GPU: synchronizations, and the copies and sets
 * without Async in their name. */
static int class_is_wait(int cls, const char *name)
{
	switch (cls) {
	case CS_APICLASS_WAIT_STREAM:
	case CS_APICLASS_WAIT_EVENT:
	case CS_APICLASS_WAIT_DEVICE:
	case CS_APICLASS_MEMCPY_SYNC:
		return 1;
	case CS_APICLASS_MEMSET:
		return strstr(name, "Async") == NULL;
	default:
		return 0;
	}
}

static int api_enable_domain(CUpti_SubscriberHandle sub, CUpti_CallbackDomain domain, int max,
			     uint8_t *classes, uint8_t *waits, uint8_t *ptsz, uint32_t *names)
{
	int enabled = 0;

	for (int id = 1; id < max; id++) {
		const char *name = NULL;
		int cls;

		if (cuptiGetCallbackName(domain, (uint32_t)id, &name) != CUPTI_SUCCESS || !name)
			continue;
		cls = cs_api_class_of(name);
		classes[id] = (uint8_t)cls;
		waits[id] = (uint8_t)class_is_wait(cls, name);
		ptsz[id] = strstr(name, "_ptsz") != NULL || strstr(name, "_ptds") != NULL;
		/* Queries are recorded: CUPTI reports them as synchronizations, and only the call
		 * tells that they are not waits. */
		if (cls == CS_APICLASS_OTHER && !api_all && !api_census)
			continue;
		names[id] = cs_intern(name, (size_t)-1);
		if (cuptiEnableCallback(1, sub, domain, (CUpti_CallbackId)id) == CUPTI_SUCCESS)
			enabled++;
	}
	return enabled;
}

int cs_api_enable(CUpti_SubscriberHandle sub, int all, int census, int domains, int stacks,
		  int noop, int syncs)
{
	int n = 0;

	api_noop = noop;
	api_syncs = syncs;
	api_stacks = stacks;
	api_all = all;
	api_census = census;
	if (domains & 1)
		n += api_enable_domain(sub, CUPTI_CB_DOMAIN_RUNTIME_API, RT_MAX, rt_class, rt_wait,
				       rt_ptsz, rt_name);
	if (domains & 2)
		n += api_enable_domain(sub, CUPTI_CB_DOMAIN_DRIVER_API, DRV_MAX, drv_class,
				       drv_wait, drv_ptsz, drv_name);
	return n;
}

static void census_print_domain(const char *label, CUpti_CallbackDomain domain,
				_Atomic uint32_t *counts, int max, const uint8_t *classes)
{
	for (int id = 1; id < max; id++) {
		uint32_t n = atomic_load(&counts[id]);
		const char *name = NULL;

		if (!n)
			continue;
		cuptiGetCallbackName(domain, (uint32_t)id, &name);
		fprintf(stderr, "cuscope census: %s %4d %-48s class=%-2d calls=%u\n", label, id,
			name ? name : "?", classes[id], n);
	}
}

void cs_api_census_report(void)
{
	if (!api_census)
		return;
	census_print_domain("runtime", CUPTI_CB_DOMAIN_RUNTIME_API, rt_count, RT_MAX, rt_class);
	census_print_domain("driver", CUPTI_CB_DOMAIN_DRIVER_API, drv_count, DRV_MAX, drv_class);
	fprintf(stderr, "cuscope census: callbacks %llu, %.1f ns each in cuscope's code\n",
		(unsigned long long)atomic_load(&census_cb_calls),
		census_cb_calls ? (double)atomic_load(&census_cb_ns) / (double)census_cb_calls
				: 0.0);
}
