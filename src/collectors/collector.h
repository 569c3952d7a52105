/*
 * collector.h - shared state and helpers of the injection library (libcuscope-inject.so).
 *
 * The library runs inside the profiled process. Collectors turn CUPTI activity records, API
 * callbacks and NVTX calls into the compact records of include/cuscope/spool.h and append them to
 * the process's spool file through spool_out.c. Nothing here touches SQLite; nothing here calls the
 * CUDA runtime or driver.
 */
#ifndef CUSCOPE_COLLECTOR_H
#define CUSCOPE_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/spool.h"

/* ---- spool_out.c: the per-process spool file ---- */

/* Open "<dir>/<pid>.cuspool" and write its header. 0 on success. */
int cs_out_open(const char *dir, uint64_t cupti_ns);
/* Before cs_out_open: keep only the last bytes (or, bytes 0, the last ns of CUPTI time) of the
 * events, in segments (spool_out.c); now reads CUPTI time. Both 0: no ring (the default). */
void cs_out_set_ring(uint64_t bytes, uint64_t ns, uint64_t (*now)(void));
/* Append one record (h.size bytes). Thread safe; never blocks on a reader. */
void cs_out_write(void *rec, size_t size, uint16_t type, uint32_t tid);
/* Append one event record (API call, GPU activity): like cs_out_write, through the calling thread's
 * staging buffer when staging is on. Never for a definition that other records refer to. */
void cs_out_write_event(void *rec, size_t size, uint16_t type, uint32_t tid);
/* Per-thread staging of events on (1) or off (0, the default). */
void cs_out_set_staging(int on);
/* Write what is buffered to the file. */
void cs_out_flush(void);
/* Have wake called (on the writing thread, once per buffer) when the shared buffer is half full:
 * it is to make the flush thread call cs_out_drain(). NULL: the thread that fills the buffer writes
 * it. */
void cs_out_set_drain_wake(void (*wake)(void));
/* Write the shared buffer out (what was staged per thread stays there). */
void cs_out_drain(void);
/* A dump (`cuscope dump`): write what is staged and buffered, then put the process's files as
 * they are into dir under their own names: without a ring the file is linked (*main_len: its
 * length now, what the dump holds of it); with one the main file is copied and the segments
 * linked, the current segment closed first unless empty (the next one is opened). Thread safe;
 * 0 on success, -1 when the file is not open or a copy or link failed. */
int cs_out_snapshot(const char *dir, uint64_t *main_len);
/* The process's (main) spool file, NULL when none is open. */
const char *cs_out_path(void);

/* ---- dump.c: dumps on request ---- */

/* After cs_out_open into dir: serve dumps when under `cuscope record`. */
void cs_dump_setup(const char *dir);
/* On the flush thread, once per flush period (now: CUPTI ns): serve the dumps asked for since the
 * last look. */
void cs_dump_poll(uint64_t now);

/* ---- slow_step.c: --dump-on slow-step=K ---- */

/* Judge the NVTX ranges matching pattern as steps: one over k x the recent median writes a notice
 * into spool for `cuscope record` to dump. Off unless called with k > 1. */
void cs_slow_step_setup(const char *spool, double k, const char *pattern);
/* The steps' pattern, NULL when off. */
const char *cs_slow_step_pattern(void);
/* A step ended (CUPTI ns); 1 when it made a notice. Thread safe. */
int cs_slow_step_end(uint64_t start, uint64_t end);

/* ---- hang.c: --hang-after SEC ---- */

#define CS_HANG_WAIT  1 /* in a wait */
#define CS_HANG_QUERY 2 /* spinning on a query that says "not ready" */
/* Follow waits from now on: a hang is after ns in a wait with no GPU work completed since it
 * began; namer gives a call's name (domain 1 runtime, 2 driver). Off unless called with after > 0. */
void cs_hang_setup(const char *dir, uint64_t after, const char *(*namer)(int domain, uint32_t cbid));
int cs_hang_on(void);
/* Python frames of the waiting threads in the notice: state() gives the calling thread's
 * interpreter state (0: none), kept at each wait; frames(state, thread, buf, cap) writes the
 * frames of that blocked thread as "frame TID LINE FILE<TAB>FUNC" lines (tid given in the
 * buffer's first line), returning the bytes written. Either may be NULL. */
void cs_hang_set_python(uintptr_t (*state)(void),
			size_t (*frames)(uintptr_t ts, uint64_t thread, uint32_t tid, char *buf,
					 size_t cap));
/* The calling thread begins waiting (start: CUPTI ns) or leaves its wait. */
void cs_hang_enter(int kind, int domain, uint32_t cbid, uint32_t corr, uint64_t start);
void cs_hang_leave(void);
/* GPU work that ended at end (CUPTI ns) was delivered; a launch of correlation id corr was made,
 * of the kernel named kernel (CUPTI's symbolName, kept as a pointer; NULL when not known). */
void cs_hang_gpu_done(uint64_t end, uint32_t corr);
void cs_hang_launched(uint32_t corr, const char *kernel);
/* On the flush thread, once per flush period: write the notice "hang.<pid>" for a hang not yet
 * reported; 1 when it did. */
int cs_hang_poll(uint64_t now);
/* Flush and close; later writes are dropped. */
void cs_out_close(void);
/* Stop writing after this many bytes (0 = no limit); records past it are counted as dropped. */
void cs_out_set_limit(uint64_t bytes);
/* Records written (staged ones included; exact when no thread is writing) and records dropped so
 * far. */
uint64_t cs_out_records(void);
uint64_t cs_out_dropped(void);
/* Count records lost elsewhere (CUPTI) so that they show in the trace. */
void cs_out_add_dropped(uint64_t n);
/* fork() handlers: the child stops writing (it gets no file of its own: CUDA is unusable there). */
void cs_out_atfork_prepare(void);
void cs_out_atfork_parent(void);
void cs_out_atfork_child(void);

/* Intern a string by content; returns its process-local id (> 0), writing a CS_REC_STRING the first
 * time. Thread safe. len may be (size_t)-1 for a NUL-terminated string. 0 when out of memory. */
uint32_t cs_intern(const char *s, size_t len);

/* The calling thread's Linux thread id (cached). */
uint32_t cs_tid(void);

/* ---- clock.c: the host time of callback records, in CUPTI's time base (CLOCK_REALTIME ns) ---- */
/* Decide once per process whether the TSC may be read (want_tsc, an invariant TSC and a kernel that
 * keeps time with it) and take the first anchor; 1 when it may. */
int cs_clock_init(int want_tsc);
/* Take a new anchor (the flush thread, once per flush period). */
void cs_clock_anchor(void);
/* An anchor: CUPTI time rt at TSC value tsc, and ns per tick as a 32.32 fixed-point multiplier (0:
 * no rate yet). */
struct cs_clock_anchor {
	uint64_t tsc, rt, mult;
};
/* cs_clock_anchor()'s rule: the anchor after last once the pair (tsc, rt) is taken, in *next; 0
 * (last stays) when the pair is too close to last to tell a rate. A rate no TSC has, one that moved
 * by more than 0.05% from last's, or a clock that went back keeps last's rate with the new pair. */
int cs_clock_next(const struct cs_clock_anchor *last, uint64_t tsc, uint64_t rt,
		  struct cs_clock_anchor *next);
/* Now, in CUPTI time: the TSC converted once a rate is known, else cuptiGetTimestamp(). */
uint64_t cs_clock_now(void);
/* 1 when cs_clock_now() reads the TSC now. */
int cs_clock_uses_tsc(void);

/* ---- decoders of CUPTI activity records (one file per source) ---- */
struct CUpti_Activity;
/* kernels.c */
void cs_decode_kernel(const void *activity);
/* memcpy.c */
void cs_decode_memcpy(const void *activity);
void cs_decode_memcpy_peer(const void *activity);
void cs_decode_memset(const void *activity);
/* memory.c */
void cs_decode_memory(const void *activity);
/* sync.c */
void cs_decode_sync(const void *activity);
/* procinfo.c */
void cs_decode_device(const void *activity);
void cs_write_process_record(void);
void cs_write_clock_record(uint64_t cupti_ns);

/* Decode one activity record of any kind cuscope enables; returns 1 when the kind was known. */
int cs_decode_activity(const void *activity);

/* ---- what to capture (inject.c): records outside it are discarded ---- */
/* capture.c: the window [t0, t1) in CUPTI time (0 = open); ranged: only inside capture ranges. */
void cs_capture_configure(uint64_t t0, uint64_t t1, int ranged);
/* 1 when a host event (API call, NVTX) at ts (CUPTI clock) is captured. */
int cs_capture_keep_host(uint64_t ts);
/* 1 when GPU work launched by the call with correlation id corr, started at ts, is captured: inside
 * --delay/--duration by its GPU time, inside a capture range (profiler start/stop, NVTX) by its
 * launch. */
int cs_capture_keep_gpu(uint32_t corr, uint64_t ts);
/* A capture range (cudaProfilerStart/Stop, an NVTX range matching --capture=nvtx:PATTERN) begins or
 * ends at ts. */
void cs_capture_begin(uint64_t ts);
void cs_capture_end(uint64_t ts);
/* The correlation id of the latest API call seen (for capture ranges). */
void cs_capture_note_corr(uint32_t corr);
/* options.c: the --capture=nvtx:PATTERN pattern, or NULL. */
const char *cs_capture_nvtx_pattern(void);

/* ---- nvtx_payload.c: NVTX's payload extension ---- */
struct nvtxEventAttributes_v2;
/* An event's payload as a JSON object, interned (cs_intern): a plain number as {"value":N}; an
 * extended payload (NVTX_PAYLOAD_TYPE_EXT) by the entries of its registered schemas, as
 * {"NAME":VALUE,...}. 0 when there is none or it cannot be read. */
uint32_t cs_nvtx_payload_sid(const struct nvtxEventAttributes_v2 *a);

/* ---- stacks.c ---- */
/* Get ready to capture stacks (call outside CUDA callbacks); python: also read Python frames. 0 on
 * success. */
int cs_stacks_init(int python);
/* 1 when Python frames are read. */
int cs_stacks_python(void);
/* Capture the calling thread's stack, write it the first time it is seen, and return its
 * process-local id (0 when none). */
uint32_t cs_stack_capture(void);
/* The stack of a kernel launch: captured once per Python call site (keyed by its frames), or on a
 * thread without Python frames for a sample of the launches of each kernel function fn; 0 for the
 * launches that get none (stacks.c explains the sampling). */
uint32_t cs_stack_capture_launch(const void *fn);
void cs_stacks_atfork_prepare(void);
void cs_stacks_atfork_parent(void);
void cs_stacks_atfork_child(void);

/* ---- api.c ---- */
/* Classify a callback by the API's name (enum cs_api_class). */
int cs_api_class_of(const char *name);

#endif
