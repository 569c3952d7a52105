/*
 * deps.h - a fact of the analysis: the dependencies of one process's run, and a replay of them.
 *
 * The model (docs/replay.md): each host thread is a chain of CUDA calls, each call preceded by the
 * host time since the previous one; each stream is a chain of GPU work, each piece with its
 * recorded duration. The edges between them: a piece of GPU work starts no earlier than the call
 * that launched it, after its stream's previous work, and after the work of another stream it was
 * seen to wait for; a call that blocks (a synchronize, a blocking or pageable copy, an allocator
 * call with its implicit sync, a launch into a full queue, a query loop's last query) ends after
 * the work it was seen to wait for. Every latency of an edge comes from the trace: the recorded one
 * where the edge decided the time, the process's typical one where it did not.
 *
 * A replay is a discrete-event simulation of that model, with or without edits (enum cs_edit_kind:
 * what a rule's fix changes). Replaying the model unedited gives the recorded times back; a
 * finding's saving is the difference between the step times of the two replays.
 */
#ifndef CUSCOPE_FACT_DEPS_H
#define CUSCOPE_FACT_DEPS_H

#include <stdint.h>

#include "cuscope/analyze.h"

struct fact_deps; /* opaque */

/* How to build the model. */
enum fact_deps_flag {
	/* the run without the profiler: each launch call takes what recording added to it less
	 * (the trace's META launch_cost, measured by `record` after the program) and the host time
	 * after each call the recorder's mean time after a call of its kind (META call_tails,
	 * measured on every call), so that a replay predicts the program as it runs alone */
	FACT_DEPS_UNPROFILED = 1,
};

/*
 * Build the model of the process of steps s (which also say how step times are measured), with
 * flags (enum fact_deps_flag). 0, CS_ERR_NOMEM; *out is NULL when the process has no GPU work.
 */
int fact_deps_build(const cs_analysis *a, const cs_steps *s, unsigned flags,
		    struct fact_deps **out);
void fact_deps_free(struct fact_deps *d);

/*
 * Replay the model with the edits of e (NULL: none) and write each step's time (as cs_step_time()
 * measures it, of the replayed times; the recorded one for a step outside the model's window)
 * into step_ns (s->n slots, or NULL), and into *span the time the model's steps but the last took
 * in all (fact_deps_span_steps() of them): from the first launch of the first to the later of the
 * first launch of the last and the end of the GPU work launched before it. The span is what a fix
 * saves: unlike a step's time it holds both the host's and the GPU's part, whichever sets the pace
 * once the fix is in. The model holds the steady steps, or a window of 200 of them in the middle
 * of a longer run. 0 or CS_ERR_NOMEM.
 */
int fact_deps_replay(const struct fact_deps *d, const cs_edit *e, int64_t *step_ns, int64_t *span);
/* How many steps the span counts (0: too few steady steps for one). */
int32_t fact_deps_span_steps(const struct fact_deps *d);

/* What the model knows about the process, for tests and the evidence. */
struct fact_deps_stats {
	int64_t calls, ops, waits;	/* call groups, GPU work, calls that waited for GPU work */
	int64_t cross_edges;		/* GPU work seen waiting for another stream's */
	int64_t host_edges;		/* calls seen woken by another thread's */
	int64_t launch_lat, stream_gap; /* the typical latencies of a launch and between two
					 * pieces of queued work of a stream, ns */
	int64_t unexplained_ns;		/* GPU start delays no edge explains */
	int32_t threads, streams;
};
void fact_deps_stats(const struct fact_deps *d, struct fact_deps_stats *out);

#endif
