/* options.h - the injection library's options, from CUSCOPE_OPTIONS (options.c). */
#ifndef CUSCOPE_OPTIONS_H
#define CUSCOPE_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

struct inject_options {
	int api_all, census, latency, quiet, capture_profiler;
	char *capture_nvtx;			       /* fnmatch pattern */
	double slow_step;			       /* --dump-on slow-step=K; 0 off */
	uint64_t hang_after_ms;			       /* --hang-after; 0 off */
	char *step_pattern;			       /* its steps' NVTX pattern */
	int no_callbacks, no_memory, no_sync, no_nvtx; /* for measuring what each source costs */
	int cb_noop;	      /* callbacks enabled, returning at once: CUPTI's own cost of them */
	int sync_activity;    /* sync records from CUPTI's activity, not from the wait callbacks */
	int cb_domains;	      /* 1 runtime, 2 driver, 3 both (default) */
	int backtrace;	      /* capture stacks at waits, copies, allocations and frees */
	int no_launch_stacks; /* ... but not at kernel launches */
	int pinned;	      /* CUPTI's records in pinned host memory, not device memory */
	int no_memcpy2;	      /* no MEMCPY2 activity */
	int no_pool;	      /* fresh, unzeroed activity buffers from malloc (the CUPTI default) */
	int zero_all;	      /* a completed buffer zeroed whole, not only where CUPTI wrote */
	int check_tails;      /* count completed buffers with a byte written past the valid ones */
	int staging;	      /* events through per-thread staging buffers (spool_out.c) */
	uint64_t limit;
	uint64_t ring_bytes, ring_ns;  /* record --ring: one of them, or neither */
	uint64_t window_t0, window_t1; /* realtime ns */
	size_t cupti_buffers;
	size_t buffer_size; /* of the activity buffers handed to CUPTI, bytes */
	unsigned flush_ms;
	unsigned wait_flush_ms;	    /* 0: no flush after waits */
	unsigned wait_flush_budget; /* permille of the time the waiting threads' flushes may take */
	int no_signals;
	int calibrate; /* the calibration process (cuscope_calibrate_switch) */
	int clock_cupti; /* callbacks read cuptiGetTimestamp(), never the TSC (clock.c) */
};

/* This process's options: the defaults until parse_options() (inject.c's set-up, once). Hidden,
 * as the library's own, so that its files read it as directly as a static of their own. */
#pragma GCC visibility push(hidden)
extern struct inject_options opts;
#pragma GCC visibility pop

/* Read CUSCOPE_OPTIONS into opts. */
void parse_options(void);
/* 1 when --capture=profiler-api: cudaProfilerStart/Stop delimit what is recorded. */
int cs_capture_profiler_api(void);
/* 0 when NVTX recording was turned off (option no_nvtx). */
int cs_inject_nvtx_enabled(void);

#endif
