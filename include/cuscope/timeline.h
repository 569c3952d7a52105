/*
 * timeline.h - the one timeline model: which track an event goes on, what the track is called and
 * where it sorts, and the device memory in use over time. `cuscope export`, `cuscope view`, the
 * trace writer's overview and `cuscope gate` all take it from here (docs/architecture.md).
 */
#ifndef CUSCOPE_TIMELINE_H
#define CUSCOPE_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/u64map.h"

/* ---- tracks ---- */

/*
 * The kinds of track, keyed by (kind, pid, a, b). The first four are stored in the trace as the
 * overview's kind (TIMELINE_OVERVIEW_TRACKS.kind, CS_OV_* in cuscope/trace.h: the same values).
 */
enum cs_tl_kind {
	CS_TL_STREAM = 1, /* kernels, memcpys, memsets: a = device, b = stream */
	CS_TL_WAITS = 2,  /* host waits (cs_sync_type_is_host_wait): a = tid */
	CS_TL_API = 3,	  /* CUDA API calls: a = tid */
	CS_TL_NVTX = 4,	  /* NVTX ranges: a = tid, b = nesting depth (cs_tl_nvtx_depth) */
	CS_TL_MEMORY = 5, /* device memory in use: a = device */
	CS_TL_LAUNCH = 6, /* the launch calls of GPU work, from its launch times: a = launch tid */
	CS_TL_KINDS = 7,
};

struct cs_tl_key {
	int kind; /* enum cs_tl_kind */
	uint32_t pid;
	int64_t a, b;
};

/* The nesting depth an NVTX range is drawn at: 0 to 15 (deeper ranges share the last). */
int cs_tl_nvtx_depth(int64_t depth);

/* The short name of a kind ("stream", "thread", "api", "nvtx", "memory", "launch"). */
const char *cs_tl_kind_name(int kind);

/* The name of the track of key, as one line ("GPU 0 stream 7", "thread 12 waits"). */
void cs_tl_track_name(const struct cs_tl_key *k, char *out, size_t size);

/*
 * Display order: GPUs first (a device's streams, then its memory), then host threads; by pid,
 * device, stream or thread; on one host thread NVTX, API calls, launches, waits.
 */
int cs_tl_key_cmp(const struct cs_tl_key *x, const struct cs_tl_key *y);

/* A 64-bit hash of a key, never 0. */
uint64_t cs_tl_key_hash(const struct cs_tl_key *k);

/* The host thread row of (pid, tid): its name ("thread 12 (main)", "unknown thread" for tid 0) and
 * order among the threads of its process (the main thread first, then by tid, the unknown last). */
void cs_tl_thread_name(uint32_t pid, uint32_t tid, char *out, size_t size);
int64_t cs_tl_thread_order(uint32_t pid, uint32_t tid);

/* ---- device memory in use ---- */

/*
 * A memory row (CUDA_GPU_MEMORY_USAGE_EVENTS) as the counter reads it. start: CS_TS_UNKNOWN rows
 * do not count.
 */
struct cs_tl_mem_row {
	int64_t start;
	uint32_t pid;
	int32_t device;
	int op, mem_kind, result;
	uint64_t address;
	int64_t bytes;
};

/* The memory in use of one process on one device. */
struct cs_tl_mem_level {
	uint32_t pid;
	int32_t device;
	int64_t level, peak;	/* bytes; peak: the highest level so far */
	struct u64map live[2];	/* address -> int64_t bytes: allocations, VMM handles */
};

typedef struct {
	struct cs_tl_mem_level *v; /* in order of first change */
	size_t n, cap;
} cs_tl_mem;

/* What one row did to its counter. */
struct cs_tl_mem_change {
	size_t level;  /* index in m->v */
	int kind;      /* CS_MEMCOUNT_ALLOC or CS_MEMCOUNT_FREE */
	int64_t bytes; /* the row's size: + for an allocation, - for the free of a live one */
	int64_t delta; /* the change of the level (an allocation that replaces one: new - old) */
};

void cs_tl_mem_init(cs_tl_mem *m);
void cs_tl_mem_free(cs_tl_mem *m);

/*
 * Apply one row, in time order: 1 when it changed a level (*out says how; m->v[out->level] holds
 * the level after it), 0 when it does not count, CS_ERR_NOMEM. Which rows count is
 * cs_mem_count_of's rule: an allocation adds its bytes and stays live under (pid, device, address,
 * VMM or not); the same address allocated again replaces the live one (its free was not seen); a
 * free takes back the live allocation and is ignored without one (memory allocated before the
 * trace), so a level never goes below zero. Sums saturate.
 */
int cs_tl_mem_apply(cs_tl_mem *m, const struct cs_tl_mem_row *r, struct cs_tl_mem_change *out);

/* The level of (pid, device); NULL when no row changed it yet. */
struct cs_tl_mem_level *cs_tl_mem_level_of(cs_tl_mem *m, uint32_t pid, int32_t device);

#endif
