/*
 * release_bursts.h - a fact of the analysis: the reserved device memory of one process and the
 * release bursts of its device memory allocator, with what surrounds each (a failed allocation,
 * the allocation after it, the phase of the step), and the allocator calls whose cost they are
 * charged. empty-cache-in-loop and memory-ceiling-thrash tell the bursts apart; allocator-churn
 * and launch-starvation read the allocator calls.
 *
 * A fact takes what it is made of as parameters and knows nothing of the rules' cache; the cache
 * (cache.h, ru_cached_bursts) computes the bursts and their call costs once per process and run.
 */
#ifndef CUSCOPE_FACT_RELEASE_BURSTS_H
#define CUSCOPE_FACT_RELEASE_BURSTS_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/analyze.h"

/* ---- release bursts of the device memory allocator ---- */

/* A burst: at least this many releases with no allocation between them. */
#define FACT_BURST_MIN_RELEASES 3

struct fact_burst {
	int64_t first, last;	  /* memory row indices of the first and last release */
	int64_t t_first, t_last;  /* their times */
	int32_t step;		  /* steady step of the first release, or -1 */
	int64_t releases;	  /* releases in the burst */
	int64_t bytes;		  /* bytes released */
	int32_t failed_before;	  /* failed allocations just before the burst */
	int64_t failed_bytes;	  /* the largest of them */
	int64_t failed_row;	  /* memory row of the last of them, or -1 */
	int64_t next_alloc;	  /* memory row of the next allocation, or -1 */
	int64_t next_alloc_bytes; /* its bytes */
	int launches_before_next; /* GPU work launched between the burst and that allocation */
	int64_t prev_alloc_t;	  /* the allocation (or failed one) before the burst; or unknown */
	int launches_since_alloc; /* kernels launched since then, up to half a step + 1 */
	int phase_switch;	  /* in a step whose work is not the regular step's, or right after
				   * one: at a switch of phase (train/eval), see fact_release_bursts() */
	int64_t realloc_bytes;	  /* bytes allocated after the burst, until the next burst */
	int64_t t_realloc_end;	  /* time of the last of those allocations (0: none) */
	int64_t reserved_before;  /* reserved device memory when the burst began */
	int64_t reserved_after;	  /* and when it ended */
	int retry;		  /* the allocator's free-and-retry: see fact_release_bursts() */
	int direct; /* a retry proven by a failed allocation: see fact_release_bursts() */
};

struct fact_bursts {
	struct fact_burst *v;
	int32_t n;
	int64_t reserved_peak;	 /* highest reserved device memory in steady steps */
	int64_t reserved_start;	 /* reserved when the first steady step began */
	int64_t steady_allocs;	 /* allocations in steady steps */
	int64_t steady_releases; /* releases in steady steps */
	int64_t steady_failed;	 /* failed allocations in steady steps */
	int64_t device_total;	 /* a->device_memory_total */
	int uncached; /* allocations under FACT_SEGMENT_MIN_BYTES in most steady steps: no cache */
	/* filled by fact_bursts_api_cost() (a rule asks for it once it reports): */
	int64_t *api_idle;  /* per step: GPU idle while the host was in allocator calls */
	int64_t *api_host;  /* per step: host time in allocator calls */
	int32_t *api_calls; /* per step: allocator calls */
	int have_api;	    /* the trace has API rows for allocator calls */
};

/*
 * Reserved device memory of the steps' process (allocations minus releases; with expandable
 * segments physical memory created minus released, the allocation records of mapped pages not
 * counted twice), its release bursts, and what surrounds each burst. A burst is a retry of the
 * caching allocator when a failed allocation comes right before it, or when it interrupts
 * allocating (fewer kernels launched since the previous allocation than half a regular step's:
 * the median kernels of the steady steps) and is followed at once (no GPU work launched in
 * between) by an allocation that would not have fit under the highest reserved level; a backtrace
 * of the first release, when the trace has one, decides instead (emptyCache, or the allocator's
 * release_cached_blocks). A retry is direct when a failed allocation came before it and an
 * allocation follows it with no GPU work launched in between: the driver refused, the allocator
 * released and asked again. A failed allocation stays pending across a run of fewer than
 * FACT_BURST_MIN_RELEASES releases (the pages created for the failed request, released before the
 * allocator frees its cache), until an allocation succeeds or a burst takes it. A burst is at a
 * phase switch when its step, or the step before, has another kernel count than the steady steps'
 * median (the work of another phase, an evaluation or a checkpoint, ran in it).
 */
int fact_release_bursts(const cs_analysis *a, const cs_steps *s, struct fact_bursts *out);
/* The smallest block a caching allocator asks the driver for: PyTorch's small-block segments are
 * 2 MiB and its larger requests are rounded up to 2 MiB; a program that allocates less than this,
 * step after step, allocates tensor by tensor (PYTORCH_NO_CUDA_MEMORY_CACHING=1, a C program's
 * cudaMalloc per buffer), and fact_release_bursts() marks it uncached and keeps only its direct
 * retries. */
#define FACT_SEGMENT_MIN_BYTES (1ll << 20)
void fact_bursts_free(struct fact_bursts *m);
/* Per step (s->n slots, into m): the allocator calls of the steps' process (fact_alloc_calls()),
 * the host time in them and the GPU idle they cost (fact_alloc_call_idle()); have_api when there
 * is any. 0, or CS_ERR_NOMEM. */
int fact_bursts_api_cost(const cs_analysis *a, const cs_steps *s, struct fact_bursts *m);

/* GPU idle of the process while a burst released memory (from its first to its last release). */
int64_t fact_burst_idle(const cs_analysis *a, uint32_t pid, const struct fact_burst *b);
/*
 * GPU time lost per step to the allocator calls: the GPU idle during them when the trace has
 * their API rows, else the idle during the step's bursts. Fills per_step (s->n slots) for the
 * steps where keep(burst) holds for one of the step's bursts, 0 elsewhere.
 */
void fact_bursts_step_cost(const cs_analysis *a, const cs_steps *s, const struct fact_bursts *m,
			   int (*keep)(const struct fact_burst *b), int64_t *per_step);

/*
 * Median over the bursts for which keep() holds of the int64_t field at offset in struct fact_burst
 * (offsetof(struct fact_burst, bytes), ...); tmp has room for m->n values.
 */
int64_t fact_bursts_median(const struct fact_bursts *m, int (*keep)(const struct fact_burst *b),
			   size_t offset, int64_t *tmp);

/* What both memory rules say of the bursts they keep: medians over the affected steps (lost,
 * calls, host) and over the kept bursts (the rest). */
struct fact_bursts_summary {
	int64_t lost;	/* GPU idle per affected step (fact_bursts_step_cost) */
	double share;	/* lost / the median step */
	int64_t bursts; /* bursts kept */
	int64_t releases, bytes, reserved_before, reserved_after; /* per kept burst */
	int64_t calls, host; /* allocator calls, and the host time in them, per affected step */
	int64_t total;	     /* the cost summed over the affected steps */
	int64_t steady_ns;   /* the steady steps' durations, summed */
	double steady_share; /* total / steady_ns: the share of the steady state lost */
	int (*keep)(const struct fact_burst *b); /* the bursts the finding is about */
	/* the share of steady steps with such a burst, its 95% interval, the rule's threshold for
	 * it, and whether the interval holds the threshold (the finding is then info) */
	double step_share, step_share_lo, step_share_hi, min_step_share;
	int near;
	int rare;	   /* in a few steps only, reported for its cost over the steady state */
	int64_t lost_each; /* with rare: the mean cost in an affected step */
	int64_t *tmp;	   /* scratch for a rule's own medians: room for m->n and s->n values */
};
/*
 * The medians of sum over the n affected steps (cost per step, as fact_bursts_step_cost() fills it)
 * and over the bursts keep() holds; step_median is the steady steps' median time. sum->tmp is
 * allocated for the rule (freed by it). The fields of the rule's decision (step_share and on)
 * are left 0. 0, or CS_ERR_NOMEM.
 */
int fact_bursts_summarize(const cs_steps *s, int64_t step_median, const struct fact_bursts *m,
			  int (*keep)(const struct fact_burst *b), const int64_t *cost,
			  const int32_t *steps, int32_t n, struct fact_bursts_summary *sum);
/*
 * What bursts in a few steps cost in all: each one's disruption window, from its first release to
 * the last allocation that filled the cache again (before the next burst), is charged the GPU idle
 * in it beyond the idle share of the steady steps without a burst (hit marks the steps with one:
 * s->n entries).
 */
int64_t fact_bursts_rare_total(const cs_analysis *a, const cs_steps *s, const struct fact_bursts *m,
			       int (*keep)(const struct fact_burst *b), const uint8_t *hit);

/* ---- the allocator calls ---- */

/* Indices in a->apis, as fact_alloc_calls() lists them. */
struct fact_alloc_calls {
	int64_t *v;
	int64_t n;
	size_t cap;
	/* where fact_alloc_call_idle()'s last searches of the kernels and copies ended */
	int64_t kernel_hint, copy_hint;
};
/* Name of an allocator API (cudaMalloc, cudaFree, cuMemCreate, ...): 1 when it is one. */
int fact_is_alloc_api(const char *name);
/* fact_is_alloc_api() without the pinned host memory calls (cudaMallocHost, cudaFreeHost, ...). */
int fact_is_device_alloc_api(const char *name);
/* The indices in a->apis of pid's allocator calls with known times (start <= end), by start:
 * every one (fact_is_alloc_api()), or with device_only the device memory ones
 * (fact_is_device_alloc_api()); appended to out. 0, or CS_ERR_NOMEM. */
int fact_alloc_calls(const cs_analysis *a, uint32_t pid, int device_only,
		     struct fact_alloc_calls *out);
void fact_alloc_calls_free(struct fact_alloc_calls *c);
/* The GPU idle the allocator call calls->v[k] (a list of fact_alloc_calls()) cost: from its
 * start to the first GPU work of its process that starts after it (a cudaFree waits for the
 * device, and the host then launches into an empty queue), bounded by the next call of the list:
 * the call's own time less the GPU work running during it, and the relaunch after it. */
int64_t fact_alloc_call_idle(const cs_analysis *a, struct fact_alloc_calls *calls, int64_t k);

#endif
