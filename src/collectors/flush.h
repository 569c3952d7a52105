/*
 * flush.h - whether this process records, and the flushes after host waits (flush.c): what the
 * API callbacks call, and the state that inject.c's set-up, flush thread and shutdown share with
 * them.
 */
#ifndef CUSCOPE_FLUSH_H
#define CUSCOPE_FLUSH_H

#include <stdatomic.h>
#include <stdint.h>

#include "flush_budget.h"

/* 1 while this process records (set up, not forked away, not shut down). */
int cs_inject_active(void);
/* At the exit of a host wait (synchronize, synchronous copy or set) at CUPTI time now: hand what
 * completed to the spool file, at once or soon (flush.c says when). */
void cs_inject_after_wait(uint64_t now);

/* ---- the state, set up and ended by inject.c, which runs the flush thread (hidden, as the
 * library's own: read as directly as the statics of one file) ---- */
#pragma GCC visibility push(hidden)
extern atomic_int active;     /* recording in this process */
extern atomic_int subscribed; /* CUPTI is ours in this process */
extern int flush_thread_started;
extern int wake_fd; /* the flush thread sleeps in poll() on it; wake() it */
/* The flushes after waits: the last one's end (CUPTI ns), one pending for the flush thread, due at
 * once, the waiting threads' budget (of what they may take at once, WAIT_FLUSH_SAVED_NS's share),
 * and the flag that lets one thread flush at a time. */
extern _Atomic uint64_t wait_flush_end;
extern atomic_int wait_flush_pending;
extern atomic_int wait_flush_urgent;
extern struct cs_flush_budget wait_budget;
#define WAIT_FLUSH_SAVED_NS 1000000000ull
extern atomic_flag wait_flush_busy;
/* census: the flushes after waits on the waiting threads [0], on the flush thread [1], and the
 * periodic ones [2] (census_add_flush) */
extern _Atomic uint64_t census_flushes[3], census_flush_ns[3], census_flush_cpu_ns[3];
extern _Atomic uint64_t census_flushall_ns[3];

/* Write 1 to an eventfd (async-signal-safe). */
void wake(int fd);
/* The time after a flush after a wait before the next one, CUPTI ns. */
uint64_t wait_flush_gap(void);
/* The calling thread's CPU time, ns. */
uint64_t thread_cpu_ns(void);
/* census: one flush of kind k that took wall_ns (flushall_ns of it in cuptiActivityFlushAll) and
 * began when the thread's CPU time was cpu0. */
void census_add_flush(int k, uint64_t wall_ns, uint64_t flushall_ns, uint64_t cpu0);
/* Hand everything complete now to the spool file; under wait_flush_busy. Returns the time it took,
 * ns. */
uint64_t flush_completed(int on_flush_thread);
#pragma GCC visibility pop

#endif
