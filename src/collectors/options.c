/*
 * options.c - the injection library's options: their defaults, and what CUSCOPE_OPTIONS sets, read
 * once by the set-up (inject.c) before this process records; the library's files read them in
 * opts, the callbacks (api.c, nvtx.c) through the accessors here.
 *
 * Options come from CUSCOPE_OPTIONS, a comma-separated list set by `cuscope record`:
 *   api=all          record every runtime and driver API call
 *   census           count calls per API id, and the flushes with their time and CPU time, and
 *                    print them at exit (for development)
 *   latency          turn on CUPTI latency timestamps (kernel queued/submitted; costs about 3%)
 *   limit=BYTES      stop recording once the spool file reaches BYTES
 *   ring_bytes=BYTES keep only the last BYTES of the events, in segments (spool_out.c); the
 *                    limit is then ignored
 *   ring_ns=NS       keep only the events of the last NS nanoseconds, in segments
 *   window=T0:T1     record only GPU work and calls that start in [T0, T1) (CLOCK_REALTIME ns;
 *                    0 = open)
 *   capture=profiler record only between cudaProfilerStart and cudaProfilerStop
 *   capture=nvtx:PAT record only inside NVTX ranges whose text matches PAT (fnmatch)
 *   hang_after_ms=N  (record --hang-after) a thread in a wait, or spinning on a query, for N ms
 *                    with no GPU work completed since makes a notice for record (hang.c)
 *   slow_step=K      (record --dump-on slow-step) a step over K x the median of the recent ones
 *                    makes a notice for record to dump (slow_step.c)
 *   step_pattern=PAT the steps of slow_step: NVTX ranges whose text matches PAT (default step*)
 *   backtrace        capture stacks at waits, copies, allocations and frees, and at kernel
 *                    launches once per call site (stacks.c)
 *   no_launch_stacks with backtrace: no stacks at kernel launches (to measure what they cost)
 *   buffers=N        CUPTI device buffers per context (default 8; 3.2 MB each)
 *   buffer_kb=N      size of the activity buffers handed to CUPTI, KiB (default 4096; 64..65536):
 *                    CUPTI returns a buffer only once every record in it has completed, so
 *                    smaller ones let a flush take what completed while later work still runs
 *   flush_ms=N       flush period (default 200)
 *   wait_flush_ms=N  longest time between flushes after host waits (default 20; 0: no flush
 *                    after waits)
 *   wait_flush_budget=N  the waiting threads flush themselves only while those flushes take at
 *                    most N thousandths of the program's time, saved up for at most 1 s
 *                    (flush_budget.c); past that, a wait that would flush on the waiting thread
 *                    wakes the flush thread to flush at once instead (default 2; 0: no limit)
 *   no_signals       leave signal dispositions alone (no flush when a default-action signal ends
 *                    the process)
 *   quiet            no messages on stderr
 *   no_staging       events go straight to the shared spool buffer, not through a staging buffer
 *                    per thread (spool_out.c)
 *   no_callbacks, no_memory, no_sync, no_nvtx, cb=runtime, cb=driver, no_pool
 *                    leave one source or mechanism out (to measure what each costs)
 *   cb_noop          the API callbacks are enabled but return at once (CUPTI's cost of them
 *                    without cuscope's code; records no API calls)
 *   pinned           CUPTI keeps its kernel, copy and set records in pinned host memory
 *                    (CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED) instead of device memory
 *   no_memcpy2       no MEMCPY2 activity (copies between GPUs)
 *   zero_all         a completed activity buffer is zeroed whole for reuse, not only its valid
 *                    bytes (to measure what that costs)
 *   clock=cupti      the callbacks time calls with cuptiGetTimestamp() even where the TSC could
 *                    be read (clock.c)
 *   check_tails      count the completed activity buffers with a byte that is not zero past
 *                    their valid bytes (scans each buffer: slow) and print it at exit
 *   sync_activity    synchronization records from CUPTI's SYNCHRONIZATION activity (with the
 *                    CUDA event ids) instead of from the wait and query callbacks (api.c); that
 *                    activity costs every kernel launch, the callbacks only the waits
 *   calibrate        the process is `cuscope record`'s measurement of what recording costs a
 *                    launch: cuscope_calibrate_switch() may turn recording on and off
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "options.h"

#define ACTIVITY_BUFFER_SIZE (4u << 20) /* the default; buffer_kb=N */

struct inject_options opts = {.cupti_buffers = 8,
			      .buffer_size = ACTIVITY_BUFFER_SIZE,
			      .flush_ms = 200,
			      .wait_flush_ms = 20,
			      .wait_flush_budget = 2,
			      .cb_domains = 3,
			      .staging = 1};

int cs_capture_profiler_api(void)
{
	return opts.capture_profiler;
}

const char *cs_capture_nvtx_pattern(void)
{
	return opts.capture_nvtx;
}

void parse_options(void)
{
	const char *env = getenv(CS_ENV_OPTIONS);
	char *copy, *tok, *save = NULL;

	if (!env)
		return;
	copy = strdup(env);
	if (!copy)
		return;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (strcmp(tok, "api=all") == 0)
			opts.api_all = 1;
		else if (strcmp(tok, "census") == 0)
			opts.census = 1;
		else if (strcmp(tok, "latency") == 0)
			opts.latency = 1;
		else if (strcmp(tok, "quiet") == 0)
			opts.quiet = 1;
		else if (strcmp(tok, "no_callbacks") == 0)
			opts.no_callbacks = 1;
		else if (strcmp(tok, "cb_noop") == 0)
			opts.cb_noop = 1;
		else if (strcmp(tok, "sync_activity") == 0)
			opts.sync_activity = 1;
		else if (strcmp(tok, "backtrace") == 0)
			opts.backtrace = 1;
		else if (strcmp(tok, "no_launch_stacks") == 0)
			opts.no_launch_stacks = 1;
		else if (strcmp(tok, "pinned") == 0)
			opts.pinned = 1;
		else if (strcmp(tok, "no_memcpy2") == 0)
			opts.no_memcpy2 = 1;
		else if (strcmp(tok, "no_pool") == 0)
			opts.no_pool = 1;
		else if (strcmp(tok, "no_staging") == 0)
			opts.staging = 0;
		else if (strcmp(tok, "cb=runtime") == 0)
			opts.cb_domains = 1;
		else if (strcmp(tok, "cb=driver") == 0)
			opts.cb_domains = 2;
		else if (strcmp(tok, "no_memory") == 0)
			opts.no_memory = 1;
		else if (strcmp(tok, "no_sync") == 0)
			opts.no_sync = 1;
		else if (strcmp(tok, "no_nvtx") == 0)
			opts.no_nvtx = 1;
		else if (strcmp(tok, "capture=profiler") == 0)
			opts.capture_profiler = 1;
		else if (strncmp(tok, "capture=nvtx:", 13) == 0)
			opts.capture_nvtx = strdup(tok + 13);
		else if (strncmp(tok, "hang_after_ms=", 14) == 0)
			opts.hang_after_ms = strtoull(tok + 14, NULL, 10);
		else if (strncmp(tok, "slow_step=", 10) == 0)
			opts.slow_step = strtod(tok + 10, NULL);
		else if (strncmp(tok, "step_pattern=", 13) == 0)
			opts.step_pattern = strdup(tok + 13);
		else if (strncmp(tok, "limit=", 6) == 0)
			opts.limit = strtoull(tok + 6, NULL, 10);
		else if (strncmp(tok, "ring_bytes=", 11) == 0)
			opts.ring_bytes = strtoull(tok + 11, NULL, 10);
		else if (strncmp(tok, "ring_ns=", 8) == 0)
			opts.ring_ns = strtoull(tok + 8, NULL, 10);
		else if (strncmp(tok, "buffers=", 8) == 0)
			opts.cupti_buffers = strtoull(tok + 8, NULL, 10);
		else if (strncmp(tok, "buffer_kb=", 10) == 0)
			opts.buffer_size = (size_t)strtoull(tok + 10, NULL, 10) << 10;
		else if (strcmp(tok, "zero_all") == 0)
			opts.zero_all = 1;
		else if (strcmp(tok, "check_tails") == 0)
			opts.check_tails = 1;
		else if (strcmp(tok, "clock=cupti") == 0)
			opts.clock_cupti = 1;
		else if (strncmp(tok, "flush_ms=", 9) == 0)
			opts.flush_ms = (unsigned)strtoul(tok + 9, NULL, 10);
		else if (strncmp(tok, "wait_flush_ms=", 14) == 0)
			opts.wait_flush_ms = (unsigned)strtoul(tok + 14, NULL, 10);
		else if (strncmp(tok, "wait_flush_budget=", 18) == 0)
			opts.wait_flush_budget = (unsigned)strtoul(tok + 18, NULL, 10);
		else if (strcmp(tok, "no_signals") == 0)
			opts.no_signals = 1;
		else if (strcmp(tok, "calibrate") == 0)
			opts.calibrate = 1;
		else if (strncmp(tok, "window=", 7) == 0) {
			char *colon;

			opts.window_t0 = strtoull(tok + 7, &colon, 10);
			if (*colon == ':')
				opts.window_t1 = strtoull(colon + 1, NULL, 10);
		}
	}
	free(copy);
	if (opts.flush_ms < 10)
		opts.flush_ms = 10;
	if (opts.cupti_buffers < 1)
		opts.cupti_buffers = 1;
	if (opts.wait_flush_budget > 1000)
		opts.wait_flush_budget = 1000;
	if (opts.buffer_size < (64u << 10))
		opts.buffer_size = 64u << 10;
	if (opts.buffer_size > (64u << 20))
		opts.buffer_size = 64u << 20;
}

int cs_inject_nvtx_enabled(void)
{
	return !opts.no_nvtx;
}
