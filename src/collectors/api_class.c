/*
 * api_class.c - what each CUDA API call does, from its name (enum cs_api_class in spool.h).
 *
 * api.c classifies every runtime and driver callback id once at start-up from the names CUPTI
 * reports, so that new versions of a call (cudaFoo_v2, the _ptsz per-thread-stream variants) fall
 * into the class of their base name, and the importer needs no CUDA headers. No CUPTI calls here:
 * the unit tests link this file.
 */
#include <string.h>

#include "collector.h"

struct class_name {
	const char *name;
	uint8_t cls;
};

/* Base names (without _vNNNN, _ptsz, _ptds suffixes) and their class. */
static const struct class_name class_names[] = {
	{"cudaLaunchKernel", CS_APICLASS_LAUNCH},
	{"cudaLaunchKernelExC", CS_APICLASS_LAUNCH},
	{"__cudaLaunchKernel", CS_APICLASS_LAUNCH},
	{"cudaLaunchCooperativeKernel", CS_APICLASS_LAUNCH},
	{"cudaLaunchCooperativeKernelMultiDevice", CS_APICLASS_LAUNCH},
	{"cudaLaunch", CS_APICLASS_LAUNCH},
	{"cuLaunchKernel", CS_APICLASS_LAUNCH},
	{"cuLaunchKernelEx", CS_APICLASS_LAUNCH},
	{"cuLaunchCooperativeKernel", CS_APICLASS_LAUNCH},
	{"cuLaunchCooperativeKernelMultiDevice", CS_APICLASS_LAUNCH},
	{"cuLaunch", CS_APICLASS_LAUNCH},
	{"cuLaunchGrid", CS_APICLASS_LAUNCH},
	{"cuLaunchGridAsync", CS_APICLASS_LAUNCH},
	{"cudaGraphLaunch", CS_APICLASS_GRAPH_LAUNCH},
	{"cuGraphLaunch", CS_APICLASS_GRAPH_LAUNCH},
	{"cudaStreamSynchronize", CS_APICLASS_WAIT_STREAM},
	{"cuStreamSynchronize", CS_APICLASS_WAIT_STREAM},
	{"cudaEventSynchronize", CS_APICLASS_WAIT_EVENT},
	{"cuEventSynchronize", CS_APICLASS_WAIT_EVENT},
	{"cudaDeviceSynchronize", CS_APICLASS_WAIT_DEVICE},
	{"cudaThreadSynchronize", CS_APICLASS_WAIT_DEVICE},
	{"cuCtxSynchronize", CS_APICLASS_WAIT_DEVICE},
	{"cudaStreamQuery", CS_APICLASS_QUERY_STREAM},
	{"cuStreamQuery", CS_APICLASS_QUERY_STREAM},
	{"cudaEventQuery", CS_APICLASS_QUERY_EVENT},
	{"cuEventQuery", CS_APICLASS_QUERY_EVENT},
	{"cudaStreamWaitEvent", CS_APICLASS_STREAM_WAIT_EVENT},
	{"cuStreamWaitEvent", CS_APICLASS_STREAM_WAIT_EVENT},
	{"cudaMalloc", CS_APICLASS_ALLOC},
	{"cudaMallocAsync", CS_APICLASS_ALLOC},
	{"cudaMallocFromPoolAsync", CS_APICLASS_ALLOC},
	{"cudaMallocManaged", CS_APICLASS_ALLOC},
	{"cuMemAlloc", CS_APICLASS_ALLOC},
	{"cuMemAllocAsync", CS_APICLASS_ALLOC},
	{"cuMemAllocFromPoolAsync", CS_APICLASS_ALLOC},
	{"cuMemAllocManaged", CS_APICLASS_ALLOC},
	{"cudaFree", CS_APICLASS_FREE},
	{"cudaFreeAsync", CS_APICLASS_FREE},
	{"cuMemFree", CS_APICLASS_FREE},
	{"cuMemFreeAsync", CS_APICLASS_FREE},
	{"cuMemCreate", CS_APICLASS_VMM_CREATE},
	{"cuMemRelease", CS_APICLASS_VMM_RELEASE},
	{"cuMemMap", CS_APICLASS_VMM_MAP},
	{"cuMemUnmap", CS_APICLASS_VMM_UNMAP},
	{"cuMemAddressReserve", CS_APICLASS_VMM_RESERVE},
	{"cuMemAddressFree", CS_APICLASS_VMM_ADDRESS_FREE},
	{"cudaProfilerStart", CS_APICLASS_PROFILER_START},
	{"cuProfilerStart", CS_APICLASS_PROFILER_START},
	{"cudaProfilerStop", CS_APICLASS_PROFILER_STOP},
	{"cuProfilerStop", CS_APICLASS_PROFILER_STOP},
	{"cudaLaunchHostFunc", CS_APICLASS_HOST_FUNC},
	{"cuLaunchHostFunc", CS_APICLASS_HOST_FUNC},
	{"cudaStreamAddCallback", CS_APICLASS_HOST_FUNC},
	{"cuStreamAddCallback", CS_APICLASS_HOST_FUNC},
};

/* Copy name without version and per-thread-stream suffixes into out. */
static void api_base_name(const char *name, char *out, size_t cap)
{
	size_t n = 0;

	while (name[n] && n + 1 < cap) {
		out[n] = name[n];
		n++;
	}
	out[n] = '\0';
	for (;;) {
		char *us = strrchr(out, '_');

		if (!us || us == out)
			break;
		if ((us[1] == 'v' && us[2] >= '0' && us[2] <= '9') || strcmp(us, "_ptsz") == 0 ||
		    strcmp(us, "_ptds") == 0 || strcmp(us, "_spt") == 0)
			*us = '\0';
		else
			break;
	}
}

int cs_api_class_of(const char *name)
{
	char base[256];

	if (!name)
		return CS_APICLASS_OTHER;
	api_base_name(name, base, sizeof(base));
	for (size_t i = 0; i < sizeof(class_names) / sizeof(class_names[0]); i++)
		if (strcmp(base, class_names[i].name) == 0)
			return class_names[i].cls;
	/* Copies and sets come in many shapes (2D, 3D, ToSymbol, Peer, DtoH, ...). */
	if (strncmp(base, "cudaMemcpy", 10) == 0 || strncmp(base, "cuMemcpy", 8) == 0)
		return strstr(base, "Async") ? CS_APICLASS_MEMCPY_ASYNC : CS_APICLASS_MEMCPY_SYNC;
	if (strncmp(base, "cudaMemset", 10) == 0 || strncmp(base, "cuMemsetD", 9) == 0)
		return CS_APICLASS_MEMSET;
	return CS_APICLASS_OTHER;
}
