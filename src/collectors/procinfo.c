/*
 * procinfo.c - process and device information, and clock pairs.
 *
 * The process record carries the command line and the ranks of a distributed job (RANK, LOCAL_RANK,
 * WORLD_SIZE); devices come from CUPTI's DEVICE activity records (name, memory, SMs, compute
 * capability, UUID: with CUDA_VISIBLE_DEVICES set per rank every process calls its GPU device 0).
 * Clock records pair CUPTI's timestamp with CLOCK_REALTIME and CLOCK_MONOTONIC_RAW so that a trace
 * maps to wall time.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#include "collector.h"

static int env_int(const char *name)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (!v || !*v)
		return -1;
	n = strtol(v, &end, 10);
	return *end ? -1 : (int)n;
}

void cs_write_process_record(void)
{
	char buf[8192];
	struct cs_rec_process *r = (struct cs_rec_process *)buf;
	char *cmd = buf + sizeof(*r);
	size_t cap = sizeof(buf) - sizeof(*r) - 8, n = 0;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

	memset(r, 0, sizeof(*r));
	if (fd >= 0) {
		ssize_t got;

		while (n < cap && (got = read(fd, cmd + n, cap - n)) > 0)
			n += (size_t)got;
		close(fd);
	}
	while (n > 0 && cmd[n - 1] == '\0')
		n--;
	for (size_t i = 0; i < n; i++)
		if (cmd[i] == '\0')
			cmd[i] = ' ';
	r->pid = (uint32_t)getpid();
	r->ppid = (uint32_t)getppid();
	r->rank = env_int("RANK");
	r->local_rank = env_int("LOCAL_RANK");
	r->world_size = env_int("WORLD_SIZE");
	r->cmdline_len = (uint32_t)n;
	cs_out_write(r, sizeof(*r) + n, CS_REC_PROCESS, cs_tid());
}

void cs_write_clock_record(uint64_t cupti_ns)
{
	struct cs_rec_clock r;
	struct timespec rt, mr;

	memset(&r, 0, sizeof(r));
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC_RAW, &mr);
	r.cupti_ns = cupti_ns;
	r.realtime_ns = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
	r.monotonic_raw_ns = (uint64_t)mr.tv_sec * 1000000000ull + (uint64_t)mr.tv_nsec;
	cs_out_write(&r, sizeof(r), CS_REC_CLOCK, 0);
}

void cs_decode_device(const void *activity)
{
	const CUpti_ActivityDevice5 *d = activity;
	char buf[1024];
	struct cs_rec_device *r = (struct cs_rec_device *)buf;
	size_t n = d->name ? strlen(d->name) : 0;

	if (n > sizeof(buf) - sizeof(*r) - 8)
		n = sizeof(buf) - sizeof(*r) - 8;
	memset(r, 0, sizeof(*r));
	r->device_id = d->id;
	r->sm_count = (int32_t)d->numMultiprocessors;
	r->compute_major = (int32_t)d->computeCapabilityMajor;
	r->compute_minor = (int32_t)d->computeCapabilityMinor;
	r->core_clock_khz = (int32_t)d->coreClockRate;
	r->total_memory = d->globalMemorySize;
	/* globalMemoryBandwidth is in KB/s */
	r->memory_bandwidth = d->globalMemoryBandwidth * 1000ull;
	memcpy(r->uuid, d->uuid.bytes, sizeof(r->uuid));
	r->name_len = (uint32_t)n;
	if (n)
		memcpy(buf + sizeof(*r), d->name, n);
	cs_out_write(r, sizeof(*r) + n, CS_REC_DEVICE, 0);
}

int cs_decode_activity(const void *activity)
{
	const CUpti_Activity *a = activity;

	switch (a->kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
	case CUPTI_ACTIVITY_KIND_KERNEL:
		cs_decode_kernel(a);
		return 1;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		cs_decode_memcpy(a);
		return 1;
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		cs_decode_memcpy_peer(a);
		return 1;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		cs_decode_memset(a);
		return 1;
	case CUPTI_ACTIVITY_KIND_MEMORY2:
		cs_decode_memory(a);
		return 1;
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		cs_decode_sync(a);
		return 1;
	case CUPTI_ACTIVITY_KIND_DEVICE:
		cs_decode_device(a);
		return 1;
	default:
		return 0;
	}
}
