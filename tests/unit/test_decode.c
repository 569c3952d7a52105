/*
 * test_decode.c - the injection library's decoders and spool writer, without a GPU.
 *
 * CUPTI activity records are built here by hand, decoded by the collectors into the spool file
 * exactly as inside a profiled process, imported, and read back from the trace: what CUPTI said
 * must arrive in the trace. Also: API classification by name, string interning under threads, the
 * spool writer under load, and a forked child writing nothing.
 */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cupti.h>

#include "collector.h"
#include "cuscope/import.h"
#include "cuscope/json.h"
#include "cuscope/trace.h"
#include "testutil.h"

#define BASE 1700000000000000000ull /* a CUPTI timestamp: ns since the epoch */

/* The capture window lives in inject.c, which needs libcupti: keep everything at or after
 * keep_from. */
static uint64_t keep_from;
int cs_capture_keep(uint64_t ts)
{
	return ts >= keep_from;
}

static char *spool_dir;

static void open_spool(void)
{
	spool_dir = tu_tmpdir();
	ck_assert_ptr_nonnull(spool_dir);
	cs_capture_configure(0, 0, 0);
	ck_assert_int_eq(cs_out_open(spool_dir, BASE), 0);
	cs_write_clock_record(BASE);
}

/* Close the spool, import it and open the trace. */
static cs_trace *import_spool(cs_import_stats *st)
{
	char *out = tu_path(spool_dir, "t.db");
	cs_error err = {0};
	cs_trace *t = NULL;
	cs_import_stats local;

	cs_out_close();
	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	ck_assert_msg(cs_import_dir(spool_dir, out, NULL, st, &err) == 0, "import: %s", err.msg);
	ck_assert_msg(cs_trace_open(out, &t, &err) == 0, "open: %s", err.msg);
	free(out);
	return t;
}

static int next_event(cs_trace *t, enum cs_event_kind kind, cs_event *ev)
{
	static cs_iter *it;
	static enum cs_event_kind it_kind;
	cs_error err = {0};
	int rc;

	if (!t) {
		if (it)
			cs_iter_close(it);
		it = NULL;
		return 0;
	}
	if (!it || it_kind != kind) {
		if (it)
			cs_iter_close(it);
		cs_filter f = cs_filter_all();
		ck_assert_int_eq(cs_iter_open(t, kind, &f, &it, &err), 0);
		it_kind = kind;
	}
	rc = cs_iter_next(it, ev);
	ck_assert_int_ge(rc, 0);
	return rc;
}

static void write_api(uint32_t corr, int cls, uint64_t start, uint64_t end, uint32_t tid)
{
	struct cs_rec_api r;

	memset(&r, 0, sizeof(r));
	r.start = start;
	r.end = end;
	r.correlation_id = corr;
	r.cbid = 211;
	r.domain = 1;
	r.api_class = (uint8_t)cls;
	r.name_sid = cs_intern("cudaLaunchKernel_v7000", (size_t)-1);
	cs_out_write_event(&r, sizeof(r), CS_REC_API, tid);
}

START_TEST(kernel_fields_arrive)
{
	CUpti_ActivityKernel10 k;
	cs_trace *t;
	cs_event ev;

	open_spool();
	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = BASE + 5000;
	k.end = BASE + 7500;
	k.deviceId = 0;
	k.contextId = 1;
	k.streamId = 7;
	k.correlationId = 42;
	k.gridX = 128;
	k.gridY = 2;
	k.gridZ = 1;
	k.blockX = 256;
	k.blockY = 1;
	k.blockZ = 1;
	k.registersPerThread = 32;
	k.staticSharedMemory = 1024;
	k.dynamicSharedMemory = 4096;
	k.name = "_Z6kernelPf";
	write_api(42, CS_APICLASS_LAUNCH, BASE + 1000, BASE + 3000, 1234);
	ck_assert(cs_decode_activity(&k));
	t = import_spool(NULL);
	ck_assert_int_eq(next_event(t, CS_EV_KERNEL, &ev), 1);
	ck_assert_int_eq(ev.u.kernel.start, 5000);
	ck_assert_int_eq(ev.u.kernel.end, 7500);
	ck_assert_int_eq(ev.u.kernel.launch_start, 1000);
	ck_assert_int_eq(ev.u.kernel.launch_end, 3000);
	ck_assert_int_eq(ev.u.kernel.launch_tid, 1234);
	ck_assert_int_eq(ev.u.kernel.stream_id, 7);
	ck_assert_int_eq(ev.u.kernel.correlation_id, 42);
	ck_assert_int_eq(ev.u.kernel.grid_x, 128);
	ck_assert_int_eq(ev.u.kernel.grid_y, 2);
	ck_assert_int_eq(ev.u.kernel.block_x, 256);
	ck_assert_int_eq(ev.u.kernel.registers_per_thread, 32);
	ck_assert_int_eq(ev.u.kernel.static_shared_memory, 1024);
	ck_assert_int_eq(ev.u.kernel.dynamic_shared_memory, 4096);
	ck_assert_int_eq(ev.u.kernel.queued, CS_TS_UNKNOWN);
	ck_assert_int_eq(ev.u.kernel.graph_id, CS_ID_NONE);
	ck_assert_str_eq(ev.u.kernel.name, "_Z6kernelPf");
	ck_assert_int_eq(next_event(t, CS_EV_KERNEL, &ev), 0);
	next_event(NULL, CS_EV_KERNEL, NULL);
	cs_trace_close(t);
}
END_TEST

START_TEST(reused_name_pointer_keeps_content)
{
	/* A module unloaded and another loaded at the same address: the name pointer is reused. */
	char name[64];
	CUpti_ActivityKernel10 k;
	cs_trace *t;
	cs_event ev;

	open_spool();
	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.name = name;
	strcpy(name, "first_kernel");
	k.start = BASE + 100;
	k.end = BASE + 200;
	k.correlationId = 1;
	cs_decode_activity(&k);
	strcpy(name, "second_kernel");
	k.start = BASE + 300;
	k.end = BASE + 400;
	k.correlationId = 2;
	cs_decode_activity(&k);
	t = import_spool(NULL);
	ck_assert_int_eq(next_event(t, CS_EV_KERNEL, &ev), 1);
	ck_assert_str_eq(ev.u.kernel.name, "first_kernel");
	ck_assert_int_eq(next_event(t, CS_EV_KERNEL, &ev), 1);
	ck_assert_str_eq(ev.u.kernel.name, "second_kernel");
	next_event(NULL, CS_EV_KERNEL, NULL);
	cs_trace_close(t);
}
END_TEST

START_TEST(unknown_timestamps_stay_unknown)
{
	CUpti_ActivityKernel10 k;
	cs_import_stats st;
	cs_trace *t;
	cs_event ev;

	open_spool();
	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.name = "k";
	k.correlationId = 9;
	k.start = BASE + 1000;
	k.end = BASE + 500; /* end before start */
	cs_decode_activity(&k);
	t = import_spool(&st);
	ck_assert_int_eq(next_event(t, CS_EV_KERNEL, &ev), 1);
	ck_assert_int_eq(ev.u.kernel.start, 1000);
	ck_assert_int_eq(ev.u.kernel.end, CS_TS_UNKNOWN);
	ck_assert_int_ge(st.unknown_timestamps, 1);
	next_event(NULL, CS_EV_KERNEL, NULL);
	cs_trace_close(t);
}
END_TEST

START_TEST(memcpy_memset_memory_sync_device)
{
	CUpti_ActivityMemcpy6 m;
	CUpti_ActivityMemset4 s;
	CUpti_ActivityMemory4 a;
	CUpti_ActivitySynchronization2 y;
	CUpti_ActivityDevice5 d;
	cs_trace *t;
	cs_event ev;

	open_spool();
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
	m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
	m.bytes = 4096;
	m.start = BASE + 2000;
	m.end = BASE + 2600;
	m.correlationId = 77;	     /* the driver call's id */
	m.runtimeCorrelationId = 76; /* the runtime call's id, which the API callback saw */
	m.streamId = 7;
	write_api(76, CS_APICLASS_MEMCPY_SYNC, BASE + 1900, BASE + 2700, 55);
	cs_decode_activity(&m);

	memset(&s, 0, sizeof(s));
	s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	s.bytes = 1 << 20;
	s.value = 0;
	s.start = BASE + 3000;
	s.end = BASE + 3100;
	s.correlationId = 80;
	s.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	cs_decode_activity(&s);

	memset(&a, 0, sizeof(a));
	a.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
	a.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
	a.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	a.address = 0x7f0000000000ull;
	a.bytes = 2 << 20;
	a.timestamp = BASE + 100;
	a.correlationId = 5;
	cs_decode_activity(&a);

	memset(&y, 0, sizeof(y));
	y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
	y.start = BASE + 4000;
	y.end = BASE + 9000;
	y.correlationId = 90;
	y.streamId = 7;
	y.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
	cs_decode_activity(&y);

	memset(&d, 0, sizeof(d));
	d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
	d.id = 0;
	d.name = "NVIDIA H200";
	d.globalMemorySize = 150000000000ull;
	d.numMultiprocessors = 132;
	d.computeCapabilityMajor = 9;
	d.computeCapabilityMinor = 0;
	for (int i = 0; i < 16; i++)
		d.uuid.bytes[i] = (char)(0x10 + i);
	cs_decode_activity(&d);

	t = import_spool(NULL);
	ck_assert_int_eq(next_event(t, CS_EV_MEMCPY, &ev), 1);
	ck_assert_int_eq(ev.u.memcpy.copy_kind, CS_COPY_DTOH);
	ck_assert_int_eq(ev.u.memcpy.dst_kind, CS_MEM_PAGEABLE);
	ck_assert_int_eq(ev.u.memcpy.bytes, 4096);
	ck_assert_int_eq(ev.u.memcpy.correlation_id, 76);
	ck_assert_int_eq(ev.u.memcpy.launch_start, 1900);
	ck_assert_int_eq(ev.u.memcpy.is_async, 0);
	ck_assert_int_eq(next_event(t, CS_EV_MEMSET, &ev), 1);
	ck_assert_int_eq(ev.u.memset.bytes, 1 << 20);
	ck_assert_int_eq(ev.u.memset.start, 3000);
	ck_assert_int_eq(next_event(t, CS_EV_MEMORY, &ev), 1);
	ck_assert_int_eq(ev.u.memory.op, CS_MEMOP_ALLOC);
	ck_assert_int_eq(ev.u.memory.bytes, 2 << 20);
	ck_assert(ev.u.memory.address == 0x7f0000000000ull);
	ck_assert_int_eq(ev.u.memory.stream_id, CS_ID_NONE);
	/* The synchronous DtoH copy made the host wait; the stream sync did too. */
	int waits = 0, memcpy_waits = 0;
	while (next_event(t, CS_EV_SYNC, &ev) == 1) {
		ck_assert(cs_sync_type_is_host_wait(ev.u.sync.type));
		waits++;
		if (ev.u.sync.type == CS_SYNC_MEMCPY) {
			memcpy_waits++;
			ck_assert_int_eq(ev.u.sync.start, 1900);
			ck_assert_int_eq(ev.u.sync.end, 2700);
			ck_assert_int_eq(ev.u.sync.tid, 55);
		} else {
			ck_assert_int_eq(ev.u.sync.type, CS_SYNC_STREAM_SYNCHRONIZE);
			ck_assert_int_eq(ev.u.sync.stream_id, 7);
			ck_assert_int_eq(ev.u.sync.end - ev.u.sync.start, 5000);
		}
	}
	ck_assert_int_eq(waits, 2);
	ck_assert_int_eq(memcpy_waits, 1);
	next_event(NULL, CS_EV_KERNEL, NULL);
	cs_trace_close(t);
}
END_TEST

static int device_seen;
static int check_device(const cs_device *dv, void *arg)
{
	(void)arg;
	ck_assert_str_eq(dv->name, "NVIDIA H200");
	ck_assert_int_eq(dv->sm_count, 132);
	ck_assert_int_eq(dv->compute_major, 9);
	ck_assert(dv->total_memory == 150000000000ll);
	ck_assert_str_eq(dv->uuid, "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f");
	device_seen++;
	return 0;
}

/*
 * A copy between two GPUs comes as a MEMCPY2 record: it becomes a peer copy with its source and
 * destination devices, joined to the cudaMemcpyPeer call that made it; it is not a host wait.
 */
START_TEST(peer_copy_record)
{
	CUpti_ActivityMemcpyPtoP4 p;
	cs_trace *t;
	cs_event ev;

	open_spool();
	memset(&p, 0, sizeof(p));
	p.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
	p.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
	p.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	p.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	p.bytes = 16384;
	p.start = BASE + 5000;
	p.end = BASE + 5400;
	p.deviceId = 0;
	p.srcDeviceId = 0;
	p.dstDeviceId = 1;
	p.streamId = 7;
	p.correlationId = 90;
	write_api(90, CS_APICLASS_MEMCPY_SYNC, BASE + 4900, BASE + 5500, 55);
	ck_assert_int_eq(cs_decode_activity(&p), 1);
	t = import_spool(NULL);
	ck_assert_int_eq(next_event(t, CS_EV_MEMCPY, &ev), 1);
	ck_assert_int_eq(ev.u.memcpy.copy_kind, CS_COPY_PTOP);
	ck_assert_int_eq(ev.u.memcpy.src_device_id, 0);
	ck_assert_int_eq(ev.u.memcpy.dst_device_id, 1);
	ck_assert_int_eq(ev.u.memcpy.bytes, 16384);
	ck_assert_int_eq(ev.u.memcpy.start, 5000);
	ck_assert_int_eq(ev.u.memcpy.launch_start, 4900);
	ck_assert_int_eq(ev.u.memcpy.launch_tid, 55);
	ck_assert_int_eq(next_event(t, CS_EV_MEMCPY, &ev), 0);
	ck_assert_int_eq(next_event(t, CS_EV_SYNC, &ev), 0);
	next_event(NULL, 0, NULL);
	cs_trace_close(t);
}
END_TEST

START_TEST(device_record)
{
	CUpti_ActivityDevice5 d;
	cs_error err = {0};
	cs_trace *t;

	open_spool();
	memset(&d, 0, sizeof(d));
	d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
	d.name = "NVIDIA H200";
	d.globalMemorySize = 150000000000ull;
	d.numMultiprocessors = 132;
	d.computeCapabilityMajor = 9;
	for (int i = 0; i < 16; i++)
		d.uuid.bytes[i] = (char)(0x10 + i);
	cs_decode_activity(&d);
	t = import_spool(NULL);
	device_seen = 0;
	ck_assert_int_eq(cs_trace_each_device(t, check_device, NULL, &err), 0);
	ck_assert_int_eq(device_seen, 1);
	cs_trace_close(t);
}
END_TEST

START_TEST(capture_window_drops_outside)
{
	CUpti_ActivityKernel10 k;
	cs_trace *t;
	cs_event ev;
	int n = 0;

	open_spool();
	cs_capture_configure(BASE + 10000, 0, 0);
	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.name = "k";
	for (int i = 0; i < 10; i++) {
		k.start = BASE + 2000ull * (uint64_t)i + 1;
		k.end = k.start + 100;
		k.correlationId = (uint32_t)i + 1;
		cs_decode_activity(&k);
	}
	t = import_spool(NULL);
	while (next_event(t, CS_EV_KERNEL, &ev) == 1)
		n++;
	ck_assert_int_eq(n, 5); /* starts 10001, 12001, ..., 18001 */
	next_event(NULL, CS_EV_KERNEL, NULL);
	cs_trace_close(t);
}
END_TEST

START_TEST(capture_ranges_by_time_and_correlation)
{
	/* Calls 1..10 before the range, 11..20 inside, 21.. after; a kernel of call 15 runs late.
	 */
	cs_capture_configure(0, 0, 1);
	ck_assert(!cs_capture_keep_host(BASE + 50)); /* no range yet */
	cs_capture_note_corr(10);
	cs_capture_begin(BASE + 100);
	cs_capture_note_corr(20);
	cs_capture_end(BASE + 200);
	cs_capture_note_corr(30);
	ck_assert(cs_capture_keep_host(BASE + 150));
	ck_assert(!cs_capture_keep_host(BASE + 99));
	ck_assert(!cs_capture_keep_host(BASE + 201));
	ck_assert(cs_capture_keep_gpu(15, BASE + 900)); /* launched inside, ran after */
	ck_assert(cs_capture_keep_gpu(11, BASE + 150));
	ck_assert(cs_capture_keep_gpu(20, BASE + 150));
	ck_assert(!cs_capture_keep_gpu(10, BASE + 150)); /* launched before */
	ck_assert(!cs_capture_keep_gpu(21, BASE + 150)); /* launched after */
	/* A second range; the first still answers. */
	cs_capture_begin(BASE + 300);
	cs_capture_note_corr(40);
	ck_assert(cs_capture_keep_gpu(35, BASE + 310)); /* open range */
	ck_assert(cs_capture_keep_host(BASE + 5000));
	cs_capture_end(BASE + 400);
	ck_assert(!cs_capture_keep_gpu(25, BASE + 310));
	ck_assert(cs_capture_keep_gpu(12, BASE + 310));
	ck_assert(!cs_capture_keep_host(BASE + 5000));
	/* Thousands of ranges (a step range every step): recent ones keep working. */
	for (uint32_t i = 0; i < 10000; i++) {
		cs_capture_note_corr(1000 + 10 * i);
		cs_capture_begin(BASE + 10000 + 100ull * i);
		cs_capture_note_corr(1000 + 10 * i + 5);
		cs_capture_end(BASE + 10000 + 100ull * i + 50);
	}
	ck_assert(cs_capture_keep_gpu(1000 + 10 * 9999 + 3, BASE));
	ck_assert(!cs_capture_keep_gpu(1000 + 10 * 9999 + 8, BASE));
	ck_assert(cs_capture_keep_host(BASE + 10000 + 100ull * 9999 + 25));
	ck_assert(!cs_capture_keep_host(BASE + 10000 + 100ull * 9999 + 75));
}
END_TEST

START_TEST(api_classes_from_names)
{
	ck_assert_int_eq(cs_api_class_of("cudaLaunchKernel_v7000"), CS_APICLASS_LAUNCH);
	ck_assert_int_eq(cs_api_class_of("cudaLaunchKernel_ptsz_v7000"), CS_APICLASS_LAUNCH);
	ck_assert_int_eq(cs_api_class_of("__cudaLaunchKernel"), CS_APICLASS_LAUNCH);
	ck_assert_int_eq(cs_api_class_of("__cudaLaunchKernel_ptsz"), CS_APICLASS_LAUNCH);
	ck_assert_int_eq(cs_api_class_of("cuLaunchKernelEx"), CS_APICLASS_LAUNCH);
	ck_assert_int_eq(cs_api_class_of("cuLaunchKernelEx_ptsz"), CS_APICLASS_LAUNCH);
	ck_assert_int_eq(cs_api_class_of("cudaGraphLaunch_v10000"), CS_APICLASS_GRAPH_LAUNCH);
	ck_assert_int_eq(cs_api_class_of("cudaMemcpy_v3020"), CS_APICLASS_MEMCPY_SYNC);
	ck_assert_int_eq(cs_api_class_of("cuMemcpyDtoH_v2"), CS_APICLASS_MEMCPY_SYNC);
	ck_assert_int_eq(cs_api_class_of("cudaMemcpyAsync_ptsz_v7000"), CS_APICLASS_MEMCPY_ASYNC);
	ck_assert_int_eq(cs_api_class_of("cuMemcpyHtoDAsync_v2_ptsz"), CS_APICLASS_MEMCPY_ASYNC);
	ck_assert_int_eq(cs_api_class_of("cudaMemsetAsync_v3020"), CS_APICLASS_MEMSET);
	ck_assert_int_eq(cs_api_class_of("cudaStreamSynchronize_v3020"), CS_APICLASS_WAIT_STREAM);
	ck_assert_int_eq(cs_api_class_of("cudaEventSynchronize_v3020"), CS_APICLASS_WAIT_EVENT);
	ck_assert_int_eq(cs_api_class_of("cudaDeviceSynchronize_v3020"), CS_APICLASS_WAIT_DEVICE);
	ck_assert_int_eq(cs_api_class_of("cuCtxSynchronize"), CS_APICLASS_WAIT_DEVICE);
	ck_assert_int_eq(cs_api_class_of("cudaStreamQuery_v3020"), CS_APICLASS_QUERY_STREAM);
	ck_assert_int_eq(cs_api_class_of("cudaEventQuery_v3020"), CS_APICLASS_QUERY_EVENT);
	ck_assert_int_eq(cs_api_class_of("cudaStreamWaitEvent_v3020"),
			 CS_APICLASS_STREAM_WAIT_EVENT);
	ck_assert_int_eq(cs_api_class_of("cudaMalloc_v3020"), CS_APICLASS_ALLOC);
	ck_assert_int_eq(cs_api_class_of("cuMemAlloc_v2"), CS_APICLASS_ALLOC);
	ck_assert_int_eq(cs_api_class_of("cudaFreeAsync_v11020"), CS_APICLASS_FREE);
	ck_assert_int_eq(cs_api_class_of("cuMemFree_v2"), CS_APICLASS_FREE);
	ck_assert_int_eq(cs_api_class_of("cuMemCreate"), CS_APICLASS_VMM_CREATE);
	ck_assert_int_eq(cs_api_class_of("cuMemRelease"), CS_APICLASS_VMM_RELEASE);
	ck_assert_int_eq(cs_api_class_of("cuMemMap"), CS_APICLASS_VMM_MAP);
	ck_assert_int_eq(cs_api_class_of("cuMemUnmap"), CS_APICLASS_VMM_UNMAP);
	ck_assert_int_eq(cs_api_class_of("cuMemAddressReserve"), CS_APICLASS_VMM_RESERVE);
	ck_assert_int_eq(cs_api_class_of("cudaProfilerStart_v4000"), CS_APICLASS_PROFILER_START);
	ck_assert_int_eq(cs_api_class_of("cuLaunchHostFunc_ptsz"), CS_APICLASS_HOST_FUNC);
	ck_assert_int_eq(cs_api_class_of("cudaLaunchHostFunc_v10000"), CS_APICLASS_HOST_FUNC);
	ck_assert_int_eq(cs_api_class_of("cuStreamAddCallback"), CS_APICLASS_HOST_FUNC);
	/* Look-alikes that are something else. */
	ck_assert_int_eq(cs_api_class_of("cudaMallocHost_v3020"), CS_APICLASS_OTHER);
	ck_assert_int_eq(cs_api_class_of("cuMemAllocHost_v2"), CS_APICLASS_OTHER);
	ck_assert_int_eq(cs_api_class_of("cuMemFreeHost"), CS_APICLASS_OTHER);
	ck_assert_int_eq(cs_api_class_of("cudaStreamCreate_v3020"), CS_APICLASS_OTHER);
	ck_assert_int_eq(cs_api_class_of("cudaEventRecord_v3020"), CS_APICLASS_OTHER);
	ck_assert_int_eq(cs_api_class_of("cuMemMapArrayAsync"), CS_APICLASS_OTHER);
	ck_assert_int_eq(cs_api_class_of(NULL), CS_APICLASS_OTHER);
}
END_TEST

#define INTERN_THREADS 4
#define INTERN_STRINGS 2000

static uint32_t intern_ids[INTERN_THREADS][INTERN_STRINGS];

static void *intern_worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	char buf[32];

	for (int i = 0; i < INTERN_STRINGS; i++) {
		int j = (i * 7 + me * 13) % INTERN_STRINGS;

		snprintf(buf, sizeof(buf), "name-%d", j);
		intern_ids[me][j] = cs_intern(buf, (size_t)-1);
	}
	return NULL;
}

START_TEST(intern_is_consistent_across_threads)
{
	pthread_t th[INTERN_THREADS];
	cs_trace_summary sum;
	cs_error err = {0};
	cs_trace *t;

	open_spool();
	for (int i = 0; i < INTERN_THREADS; i++)
		pthread_create(&th[i], NULL, intern_worker, (void *)(intptr_t)i);
	for (int i = 0; i < INTERN_THREADS; i++)
		pthread_join(th[i], NULL);
	for (int j = 0; j < INTERN_STRINGS; j++) {
		ck_assert_uint_gt(intern_ids[0][j], 0);
		for (int i = 1; i < INTERN_THREADS; i++)
			ck_assert_uint_eq(intern_ids[i][j], intern_ids[0][j]);
	}
	t = import_spool(NULL);
	ck_assert_int_eq(cs_trace_get_summary(t, &sum, &err), 0);
	/* Each string once; the importer interns nothing it was not given but may add its own few.
	 */
	ck_assert_int_ge(sum.strings, INTERN_STRINGS);
	ck_assert_int_lt(sum.strings, INTERN_STRINGS + 50);
	cs_trace_close(t);
}
END_TEST

#define LOAD_THREADS	4
#define LOAD_PER_THREAD 250000

static void *load_worker(void *arg)
{
	struct cs_rec_kernel r;
	uint32_t sid = cs_intern("load_kernel", (size_t)-1);
	int me = (int)(intptr_t)arg;

	for (int i = 0; i < LOAD_PER_THREAD; i++) {
		memset(&r, 0, sizeof(r));
		r.start = BASE + 1000ull * (uint64_t)i + (uint64_t)me;
		r.end = r.start + 500;
		r.correlation_id = (uint32_t)(me * LOAD_PER_THREAD + i + 1);
		r.stream_id = (uint32_t)me;
		r.name_sid = sid;
		cs_out_write(&r, sizeof(r), CS_REC_KERNEL, 0);
	}
	return NULL;
}

START_TEST(writer_under_load_loses_nothing)
{
	pthread_t th[LOAD_THREADS];
	struct rusage before, after;
	cs_import_stats st;
	cs_trace *t;

	open_spool();
	getrusage(RUSAGE_SELF, &before);
	for (int i = 0; i < LOAD_THREADS; i++)
		pthread_create(&th[i], NULL, load_worker, (void *)(intptr_t)i);
	for (int i = 0; i < LOAD_THREADS; i++)
		pthread_join(th[i], NULL);
	getrusage(RUSAGE_SELF, &after);
	/* The writer holds two fixed buffers whatever the volume (1M records, ~100 MB here). */
	ck_assert_int_lt(after.ru_maxrss - before.ru_maxrss, 32 * 1024);
	ck_assert_uint_eq(cs_out_dropped(), 0);
	t = import_spool(&st);
	ck_assert_int_eq(st.counts[CS_EV_KERNEL], LOAD_THREADS * LOAD_PER_THREAD);
	cs_trace_close(t);
}
END_TEST

/* ---- the flush thread writes the file ---- */

static atomic_int drain_wakes;

static void count_wake(void)
{
	atomic_fetch_add(&drain_wakes, 1);
}

/* Bytes in the spool directory's spool file (the only file in it before the import). */
static off_t spool_bytes(void)
{
	char cmd[4200], buf[64] = "";
	FILE *p;

	snprintf(cmd, sizeof(cmd), "cat '%s'/* | wc -c", spool_dir);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), p));
	pclose(p);
	return (off_t)atoll(buf);
}

static void write_kernels(int from, int n)
{
	for (int i = from; i < from + n; i++) {
		struct cs_rec_kernel k;

		memset(&k, 0, sizeof(k));
		k.start = BASE + 1000ull * (uint64_t)i;
		k.end = k.start + 100;
		k.correlation_id = (uint32_t)i + 1;
		cs_out_write(&k, sizeof(k), CS_REC_KERNEL, 0);
	}
}

/*
 * With a flush thread to wake, the thread that fills the shared buffer half way wakes it once and
 * writes nothing itself; cs_out_drain() (the flush thread's) writes it. A buffer that fills up
 * before the flush thread comes is written by the thread that filled it: nothing is lost.
 */
START_TEST(half_full_buffer_is_written_by_the_flush_thread)
{
	const int half = (int)((1u << 20) / sizeof(struct cs_rec_kernel)) + 16; /* > 1 MiB */
	cs_import_stats st;
	off_t before;
	cs_trace *t;

	open_spool();
	atomic_store(&drain_wakes, 0);
	cs_out_set_drain_wake(count_wake);
	cs_out_drain(); /* the header and clock record out */
	before = spool_bytes();
	write_kernels(0, half);
	ck_assert_int_eq(atomic_load(&drain_wakes), 1);
	ck_assert_int_eq(spool_bytes(), before); /* the writer wrote nothing */
	write_kernels(half, 100);
	ck_assert_int_eq(atomic_load(&drain_wakes), 1); /* once per buffer */
	cs_out_drain();
	ck_assert_int_gt(spool_bytes(), before + (off_t)half * (off_t)sizeof(struct cs_rec_kernel));
	/* no one drains now: the writer fills the buffer (a wake at its half) and writes it itself,
	 * then half fills the next one (a wake) */
	before = spool_bytes();
	write_kernels(half + 100, 3 * half);
	ck_assert_int_eq(atomic_load(&drain_wakes), 3);
	ck_assert_int_gt(spool_bytes(), before);
	cs_out_set_drain_wake(NULL);
	t = import_spool(&st);
	ck_assert_int_eq(st.counts[CS_EV_KERNEL], 4 * half + 100);
	cs_trace_close(t);
}
END_TEST

/* ---- per-thread staging of events ---- */

#define STAGE_THREADS	 6
#define STAGE_PER_THREAD 40000

static atomic_int stage_workers_left;

/* Each thread defines a name of its own and writes kernels and their launches under it. */
static void *stage_worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	char name[32];
	uint32_t sid;

	snprintf(name, sizeof(name), "staged_kernel_%d", me);
	sid = cs_intern(name, (size_t)-1);
	for (int i = 0; i < STAGE_PER_THREAD; i++) {
		struct cs_rec_kernel k;
		uint32_t corr = (uint32_t)(me * STAGE_PER_THREAD + i + 1);

		write_api(corr, CS_APICLASS_LAUNCH, BASE + 1000ull * (uint64_t)i,
			  BASE + 1000ull * (uint64_t)i + 10, (uint32_t)(100 + me));
		memset(&k, 0, sizeof(k));
		k.start = BASE + 1000ull * (uint64_t)i + 500;
		k.end = k.start + 100;
		k.correlation_id = corr;
		k.stream_id = (uint32_t)me;
		k.name_sid = sid;
		cs_out_write_event(&k, sizeof(k), CS_REC_KERNEL, 0);
	}
	atomic_fetch_sub(&stage_workers_left, 1);
	return NULL;
}

START_TEST(staged_events_arrive_whole_and_after_their_names)
{
	pthread_t th[STAGE_THREADS];
	int64_t per_thread[STAGE_THREADS] = {0};
	cs_import_stats st;
	cs_trace *t;
	cs_event ev;
	int64_t n = 0;

	open_spool();
	cs_out_set_staging(1);
	atomic_store(&stage_workers_left, STAGE_THREADS);
	for (int i = 0; i < STAGE_THREADS; i++)
		pthread_create(&th[i], NULL, stage_worker, (void *)(intptr_t)i);
	/* the flush thread's part: move what the threads staged while they write */
	while (atomic_load(&stage_workers_left) > 0)
		cs_out_flush();
	for (int i = 0; i < STAGE_THREADS; i++)
		pthread_join(th[i], NULL);
	ck_assert_uint_eq(cs_out_dropped(), 0);
	t = import_spool(&st);
	ck_assert_int_eq(st.counts[CS_EV_KERNEL], STAGE_THREADS * STAGE_PER_THREAD);
	while (next_event(t, CS_EV_KERNEL, &ev) == 1) {
		const char *name = cs_trace_string(t, ev.u.kernel.name_id);
		int me;

		/* the name defined by the thread, the launch of that thread */
		ck_assert_msg(name && sscanf(name, "staged_kernel_%d", &me) == 1 && me >= 0 &&
				      me < STAGE_THREADS,
			      "kernel %lld: name '%s'", (long long)ev.u.kernel.correlation_id,
			      name ? name : "(none)");
		ck_assert_int_eq(ev.u.kernel.launch_tid, 100 + me);
		per_thread[me]++;
		n++;
	}
	for (int i = 0; i < STAGE_THREADS; i++)
		ck_assert_int_eq(per_thread[i], STAGE_PER_THREAD);
	ck_assert_int_eq(n, STAGE_THREADS * STAGE_PER_THREAD);
	next_event(NULL, CS_EV_KERNEL, NULL);
	cs_trace_close(t);
}
END_TEST

static void *short_worker(void *arg)
{
	write_api((uint32_t)(intptr_t)arg, CS_APICLASS_WAIT_DEVICE, BASE + 10, BASE + 20, 7);
	return NULL;
}

START_TEST(staging_buffers_of_exited_threads_are_freed)
{
	struct rusage before, after;
	cs_import_stats st;
	cs_trace *t;

	open_spool();
	cs_out_set_staging(1);
	getrusage(RUSAGE_SELF, &before);
	/* 2,000 threads that make one call each and exit (16 KiB of staging each if kept) */
	for (int i = 0; i < 2000; i++) {
		pthread_t th;

		ck_assert_int_eq(pthread_create(&th, NULL, short_worker, (void *)(intptr_t)(i + 1)),
				 0);
		pthread_join(th, NULL);
		if (i % 50 == 49)
			cs_out_flush();
	}
	getrusage(RUSAGE_SELF, &after);
#ifndef __SANITIZE_ADDRESS__ /* AddressSanitizer holds freed memory back: no measure there */
	ck_assert_int_lt(after.ru_maxrss - before.ru_maxrss, 8 * 1024);
#endif
	t = import_spool(&st);
	ck_assert_int_eq(st.counts[CS_EV_SYNC], 2000); /* each wait, though no activity came */
	cs_trace_close(t);
}
END_TEST

/* Types of the records of this process's spool file, in file order; returns how many. */
static int spool_record_types(uint16_t *types, int cap)
{
	char name[64], *path;
	struct cs_spool_header h;
	struct cs_rec r;
	FILE *f;
	int n = 0;

	snprintf(name, sizeof(name), "%d%s", (int)getpid(), CS_SPOOL_SUFFIX);
	path = tu_path(spool_dir, name);
	f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fread(&h, sizeof(h), 1, f), 1);
	fseek(f, (long)h.header_size, SEEK_SET);
	while (n < cap && fread(&r, sizeof(r), 1, f) == 1 && r.size >= sizeof(r)) {
		types[n++] = r.type;
		fseek(f, (long)r.size - (long)sizeof(r), SEEK_CUR);
	}
	fclose(f);
	free(path);
	return n;
}

START_TEST(end_record_follows_staged_events)
{
	struct cs_rec_end end;
	cs_import_stats st;
	cs_trace *t;
	uint16_t types[256];
	int n;

	open_spool();
	cs_out_set_staging(1);
	for (int i = 0; i < 100; i++)
		write_api((uint32_t)i + 1, CS_APICLASS_WAIT_DEVICE, BASE + 10ull * (uint64_t)i,
			  BASE + 10ull * (uint64_t)i + 5, 7);
	/* nothing flushed: the END record itself must move them out first */
	memset(&end, 0, sizeof(end));
	end.timestamp = BASE + 5000;
	end.records = cs_out_records();
	cs_out_write(&end, sizeof(end), CS_REC_END, 7);
	cs_out_close();
	n = spool_record_types(types, 256);
	ck_assert_int_gt(n, 100);
	ck_assert_uint_eq(types[n - 1], CS_REC_END);
	t = import_spool(&st);
	ck_assert_int_eq(st.counts[CS_EV_SYNC], 100);
	cs_trace_close(t);
}
END_TEST

START_TEST(size_limit_counts_what_it_cuts)
{
	struct cs_rec_kernel r;
	struct cs_rec_dropped d;
	cs_import_stats st;
	cs_trace *t;
	uint32_t sid;

	open_spool();
	sid = cs_intern("k", (size_t)-1);
	cs_out_set_limit(64 * 1024);
	for (int i = 0; i < 5000; i++) {
		memset(&r, 0, sizeof(r));
		r.start = BASE + 1000ull * (uint64_t)i;
		r.end = r.start + 500;
		r.correlation_id = (uint32_t)i + 1;
		r.name_sid = sid;
		cs_out_write(&r, sizeof(r), CS_REC_KERNEL, 0);
	}
	ck_assert_uint_gt(cs_out_dropped(), 4000);
	/* The count of what was cut is written past the limit. */
	memset(&d, 0, sizeof(d));
	d.count = cs_out_dropped();
	cs_out_write(&d, sizeof(d), CS_REC_DROPPED, 0);
	t = import_spool(&st);
	ck_assert_int_gt(st.counts[CS_EV_KERNEL], 100);
	ck_assert_int_lt(st.counts[CS_EV_KERNEL], 1000);
	ck_assert_int_eq(st.counts[CS_EV_KERNEL] + st.dropped, 5000);
	cs_trace_close(t);
}
END_TEST

/* --size-limit with staging: what the threads staged counts against the limit too. */
#define LIMIT_RECORDS 50 /* per thread: about 3 KiB, less than a staging buffer */

static pthread_barrier_t limit_barrier;

static void *limit_worker(void *arg)
{
	uint32_t sid = cs_intern("limit_kernel", (size_t)-1);
	int me = (int)(intptr_t)arg;

	for (int i = 0; i < LIMIT_RECORDS; i++) {
		struct cs_rec_kernel k;

		memset(&k, 0, sizeof(k));
		k.start = BASE + 1000ull * (uint64_t)i;
		k.end = k.start + 100;
		k.correlation_id = (uint32_t)(me * LIMIT_RECORDS + i + 1);
		k.name_sid = sid;
		cs_out_write_event(&k, sizeof(k), CS_REC_KERNEL, 0);
	}
	/* every thread has staged its records before any leaves (and commits them) */
	pthread_barrier_wait(&limit_barrier);
	return NULL;
}

START_TEST(size_limit_counts_staged_events)
{
	pthread_t th[STAGE_THREADS];
	struct cs_rec_dropped d;
	char name[64], *path;
	struct stat sb;
	cs_import_stats st;
	cs_trace *t;

	open_spool();
	cs_out_set_limit(8 * 1024);
	cs_out_set_staging(1);
	pthread_barrier_init(&limit_barrier, NULL, STAGE_THREADS);
	for (int i = 0; i < STAGE_THREADS; i++)
		pthread_create(&th[i], NULL, limit_worker, (void *)(intptr_t)i);
	for (int i = 0; i < STAGE_THREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&limit_barrier);
	ck_assert_uint_gt(cs_out_dropped(), 0);
	memset(&d, 0, sizeof(d));
	d.count = cs_out_dropped();
	cs_out_write(&d, sizeof(d), CS_REC_DROPPED, 0);
	cs_out_close();
	snprintf(name, sizeof(name), "%d%s", (int)getpid(), CS_SPOOL_SUFFIX);
	path = tu_path(spool_dir, name);
	ck_assert_int_eq(stat(path, &sb), 0);
	/* the limit and the DROPPED record: not a staging buffer's worth per thread over */
	ck_assert_msg(sb.st_size <= 8 * 1024 + 256, "%lld bytes", (long long)sb.st_size);
	t = import_spool(&st);
	ck_assert_int_eq(st.dropped, (int64_t)d.count);
	ck_assert_int_eq(st.counts[CS_EV_KERNEL] + st.dropped, STAGE_THREADS * LIMIT_RECORDS);
	cs_trace_close(t);
	free(path);
}
END_TEST

START_TEST(forked_child_writes_nothing)
{
	struct stat before, after;
	char *path;
	pid_t pid;
	int status;
	char name[64];

	open_spool();
	cs_out_set_staging(1);
	/* the parent's thread has a staging buffer, with an event in it, when it forks */
	write_api(1, CS_APICLASS_WAIT_DEVICE, BASE + 10, BASE + 20, 7);
	cs_out_flush();
	write_api(2, CS_APICLASS_WAIT_DEVICE, BASE + 30, BASE + 40, 7);
	snprintf(name, sizeof(name), "%d.cuspool", (int)getpid());
	path = tu_path(spool_dir, name);
	ck_assert_int_eq(stat(path, &before), 0);
	cs_out_atfork_prepare();
	pid = fork();
	if (pid == 0) {
		struct cs_rec_clock c;

		cs_out_atfork_child();
		memset(&c, 0, sizeof(c));
		for (int i = 0; i < 1000; i++) {
			cs_out_write(&c, sizeof(c), CS_REC_CLOCK, 0);
			write_api(100 + (uint32_t)i, CS_APICLASS_WAIT_DEVICE, BASE + 50, BASE + 60,
				  7);
		}
		cs_out_flush();
		cs_out_close();
		_exit(cs_out_dropped() >= 2000 ? 0 : 1);
	}
	cs_out_atfork_parent();
	waitpid(pid, &status, 0);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(stat(path, &after), 0);
	ck_assert_int_eq(after.st_size, before.st_size);
	/* and the parent's staged event still arrives */
	cs_out_flush();
	ck_assert_int_eq(stat(path, &after), 0);
	ck_assert_int_gt(after.st_size, before.st_size);
	cs_out_close();
	free(path);
}
END_TEST

/* ---- the ring (record --ring) ---- */

#define RING_BYTES (256u << 10)
#define RING_ITERS 40000 /* about 5 MiB of records: twenty rings */
#define RING_NAMES 50	 /* kernel names, all defined in the first iterations */
#define RING_BATCH 64	 /* kernels are handed over in batches, after their launches */

static uint64_t ring_clock;

static uint64_t ring_now(void)
{
	return ring_clock;
}

/* Bytes of the files of dir whose names end in suffix. */
static uint64_t dir_bytes(const char *dir, const char *suffix, int *files)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	uint64_t sum = 0;

	ck_assert_ptr_nonnull(d);
	*files = 0;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name), k = strlen(suffix);
		struct stat sb;
		char *path;

		if (n <= k || strcmp(de->d_name + n - k, suffix))
			continue;
		path = tu_path(dir, de->d_name);
		if (stat(path, &sb) == 0) {
			sum += (uint64_t)sb.st_size;
			(*files)++;
		}
		free(path);
	}
	closedir(d);
	return sum;
}

static uint64_t ring_kernel_start(uint32_t i)
{
	return BASE + 1000ull * i + 300;
}

static void ring_kernel(uint32_t i)
{
	CUpti_ActivityKernel10 k;
	char name[32];

	memset(&k, 0, sizeof(k));
	snprintf(name, sizeof(name), "ring_kernel_%u", i % RING_NAMES);
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = ring_kernel_start(i);
	k.end = k.start + 400;
	k.correlationId = i + 1;
	k.streamId = 7;
	k.name = name;
	cs_decode_activity(&k);
}

/* A stack of one Python frame, written once at the start (into the main file). */
static uint32_t ring_stack(void)
{
	struct {
		struct cs_rec_stack s;
		struct cs_rec_pyframe f;
	} r;

	memset(&r, 0, sizeof(r));
	r.s.id = 1;
	r.s.py_depth = 1;
	r.f.file_sid = cs_intern("train.py", (size_t)-1);
	r.f.func_sid = cs_intern("step", (size_t)-1);
	r.f.line = 42;
	cs_out_write(&r, sizeof(r), CS_REC_STACK, 0);
	return 1;
}

/* `cuscope info` on the trace import_spool() wrote: its ring line has want (NULL: none), and the
 * JSON its ring object. */
static void assert_info_ring(const char *want)
{
	char *db = tu_path(spool_dir, "t.db");
	const char *text[] = {NULL, "info", db, NULL};
	const char *json[] = {NULL, "info", "--format", "json", db, NULL};
	struct tu_result r = tu_cuscope(text);

	ck_assert_int_eq(r.rc, 0);
	if (want)
		ck_assert_msg(strstr(r.out, "\nring              ") && strstr(r.out, want), "%s",
			      r.out);
	else
		ck_assert_msg(!strstr(r.out, "\nring "), "%s", r.out);
	tu_result_free(&r);
	r = tu_cuscope(json);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_int_eq(!!strstr(r.out, "\"ring\":"), !!want);
	tu_result_free(&r);
	free(db);
}

/*
 * A long stream through a small ring: the disk stays within the ring and one segment, and the
 * trace holds exactly the events that started after the window's start (none missing after it,
 * none before it), with their names and stacks, and META says what was cut.
 */
START_TEST(ring_keeps_the_last_window)
{
	uint64_t max_segs = 0, main_bytes;
	uint32_t stack, first = 0;
	int64_t base;
	cs_import_stats st;
	int files, kernels = 0;
	const char *meta;
	cJSON *ring, *procs;
	cs_trace *t;
	cs_event ev;

	ring_clock = BASE;
	cs_out_set_ring(RING_BYTES, 0, ring_now);
	open_spool();
	stack = ring_stack();
	for (uint32_t i = 0; i < RING_ITERS; i++) {
		struct cs_rec_api r;

		ring_clock = BASE + 1000ull * i + 100;
		memset(&r, 0, sizeof(r));
		r.start = BASE + 1000ull * i;
		r.end = r.start + 100;
		r.correlation_id = i + 1;
		r.cbid = 211;
		r.domain = 1;
		r.api_class = CS_APICLASS_LAUNCH;
		r.stack_id = stack;
		r.name_sid = cs_intern("cudaLaunchKernel_v7000", (size_t)-1);
		cs_out_write_event(&r, sizeof(r), CS_REC_API, 1234);
		if ((i + 1) % RING_BATCH == 0)
			for (uint32_t k = i + 1 - RING_BATCH; k <= i; k++)
				ring_kernel(k);
		if (i % 500 == 0) {
			uint64_t segs;

			cs_out_flush();
			segs = dir_bytes(spool_dir, CS_SPOOL_SEG_SUFFIX, &files);
			if (segs > max_segs)
				max_segs = segs;
		}
	}
	cs_out_flush();
	main_bytes = dir_bytes(spool_dir, CS_SPOOL_SUFFIX, &files);
	ck_assert_int_eq(files, 1);
	/* the ring and one segment, whatever the length of the run */
	ck_assert_msg(max_segs <= RING_BYTES + RING_BYTES / 4, "%llu bytes of segments",
		      (unsigned long long)max_segs);
	ck_assert_uint_ge(max_segs, RING_BYTES);
	/* the main file holds the definitions only: the names, the stack, a few counts */
	ck_assert_msg(main_bytes < 16 * 1024, "%llu bytes in the main file",
		      (unsigned long long)main_bytes);

	t = import_spool(&st);
	meta = cs_trace_meta(t, CS_META_RING);
	ck_assert_ptr_nonnull(meta);
	ring = cJSON_Parse(meta);
	ck_assert_ptr_nonnull(ring);
	ck_assert_int_eq(cs_json_get_int(ring, "size_bytes", -1), RING_BYTES);
	ck_assert_int_gt(cs_json_get_int(ring, "segments_dropped", 0), 10);
	ck_assert_int_gt(cs_json_get_int(ring, "records_dropped", 0), 30000);
	base = (int64_t)(strtoull(cs_trace_meta(t, "time_base_ns"), NULL, 10) - BASE);
	/* the trace starts at the window's start */
	ck_assert_int_eq(cs_json_get_int(ring, "window_start_ns", -1), 0);
	procs = cJSON_GetObjectItemCaseSensitive(ring, "processes");
	ck_assert_int_eq(cJSON_GetArraySize(procs), 1);
	/* every kernel that started after the window's start, and only those, with its name, its
	 * launch and the launch's stack */
	while (next_event(t, CS_EV_KERNEL, &ev) == 1) {
		char want[32];
		const cs_frame *frames;
		int nframes;
		cs_error err = {0};
		uint32_t i = ev.u.kernel.correlation_id - 1;

		if (!kernels++) {
			int64_t w = cs_json_get_int(ring, "window_start_ns", -1);

			first = i;
			ck_assert_int_gt(ev.u.kernel.start, w);
			ck_assert_int_gt(ev.u.kernel.launch_start, w);
			/* the kernel before it was left out: its launch came before the window */
			ck_assert_int_le((int64_t)(1000ull * (i - 1)) - base, w);
		}
		ck_assert_uint_eq(i, first + (uint32_t)kernels - 1);
		snprintf(want, sizeof(want), "ring_kernel_%u", i % RING_NAMES);
		ck_assert_str_eq(ev.u.kernel.name, want);
		/* every kernel kept has its launch, and the launch its stack */
		ck_assert_int_eq(ev.u.kernel.launch_start, (int64_t)(1000ull * i) - base);
		ck_assert_int_ge(
			cs_trace_get_stack(t, ev.u.kernel.stack_id, &frames, &nframes, &err), 0);
		ck_assert_int_eq(nframes, 1);
		ck_assert_str_eq(frames[0].symbol, "step");
		ck_assert_str_eq(frames[0].file, "train.py");
	}
	next_event(NULL, CS_EV_KERNEL, NULL);
	ck_assert_uint_eq(first + (uint32_t)kernels, RING_ITERS);
	/* at least the ring's size of records is kept: 4 segments, less what the cut left out */
	ck_assert_int_ge((int64_t)kernels *
				 (sizeof(struct cs_rec_api) + sizeof(struct cs_rec_kernel)),
			 RING_BYTES * 3 / 4);
	ck_assert_int_eq(st.counts[CS_EV_KERNEL], kernels);
	ck_assert_int_eq(st.dropped, 0);
	cJSON_Delete(ring);
	cs_trace_close(t);
	assert_info_ring("the last 256.0 KiB of each process; kept ");
}
END_TEST

/* A duration ring: segments cover a quarter of it; those closed more than it ago are deleted. */
START_TEST(ring_by_duration_keeps_the_last_seconds)
{
	const uint64_t dur = 4000000; /* 4 ms of CUPTI time: 4000 iterations */
	cs_import_stats st;
	int files, kernels = 0;
	cs_trace *t;
	cs_event ev;

	ring_clock = BASE;
	cs_out_set_ring(0, dur, ring_now);
	open_spool();
	for (uint32_t i = 0; i < 20000; i++) {
		ring_clock = BASE + 1000ull * i;
		ring_kernel(i);
		if (i % 100 == 0)
			cs_out_flush();
	}
	cs_out_flush();
	/* 4 ms in segments of 1 ms, and the one being written */
	dir_bytes(spool_dir, CS_SPOOL_SEG_SUFFIX, &files);
	ck_assert_int_le(files, 6);
	t = import_spool(&st);
	while (next_event(t, CS_EV_KERNEL, &ev) == 1)
		kernels++;
	next_event(NULL, CS_EV_KERNEL, NULL);
	/* at least the last 4 ms, at most a segment (1 ms) and a flush more */
	ck_assert_int_ge(kernels, 4000);
	ck_assert_int_le(kernels, 5200);
	ck_assert_ptr_nonnull(cs_trace_meta(t, CS_META_RING));
	cs_trace_close(t);
}
END_TEST

/* Without a ring the file is version 1, one file, and no ring meta. */
START_TEST(no_ring_no_segments)
{
	char name[64], *path;
	struct cs_spool_header h;
	int files;
	size_t len;
	cs_trace *t;

	open_spool();
	ring_kernel(1);
	cs_out_flush();
	ck_assert_uint_eq(dir_bytes(spool_dir, CS_SPOOL_SEG_SUFFIX, &files), 0);
	snprintf(name, sizeof(name), "%d%s", (int)getpid(), CS_SPOOL_SUFFIX);
	path = tu_path(spool_dir, name);
	free(tu_read_file(path, &len));
	ck_assert_uint_ge(len, sizeof(h));
	{
		char *data = tu_read_file(path, &len);

		memcpy(&h, data, sizeof(h));
		free(data);
	}
	ck_assert_uint_eq(h.version, CS_SPOOL_VERSION);
	t = import_spool(NULL);
	ck_assert_ptr_null(cs_trace_meta(t, CS_META_RING));
	cs_trace_close(t);
	assert_info_ring(NULL);
	free(path);
}
END_TEST

static Suite *decode_suite(void)
{
	Suite *s = suite_create("decode");
	TCase *tc = tcase_create("decode");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, kernel_fields_arrive);
	tcase_add_test(tc, reused_name_pointer_keeps_content);
	tcase_add_test(tc, unknown_timestamps_stay_unknown);
	tcase_add_test(tc, memcpy_memset_memory_sync_device);
	tcase_add_test(tc, peer_copy_record);
	tcase_add_test(tc, device_record);
	tcase_add_test(tc, capture_window_drops_outside);
	tcase_add_test(tc, capture_ranges_by_time_and_correlation);
	tcase_add_test(tc, api_classes_from_names);
	tcase_add_test(tc, intern_is_consistent_across_threads);
	tcase_add_test(tc, writer_under_load_loses_nothing);
	tcase_add_test(tc, half_full_buffer_is_written_by_the_flush_thread);
	tcase_add_test(tc, staged_events_arrive_whole_and_after_their_names);
	tcase_add_test(tc, staging_buffers_of_exited_threads_are_freed);
	tcase_add_test(tc, end_record_follows_staged_events);
	tcase_add_test(tc, size_limit_counts_staged_events);
	tcase_add_test(tc, size_limit_counts_what_it_cuts);
	tcase_add_test(tc, forked_child_writes_nothing);
	tcase_add_test(tc, ring_keeps_the_last_window);
	tcase_add_test(tc, ring_by_duration_keeps_the_last_seconds);
	tcase_add_test(tc, no_ring_no_segments);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(decode_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
