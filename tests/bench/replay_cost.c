/*
 * replay_cost.c - benchmark, not a test: what the run's dependency model and its replay
 * (src/analyzers/facts/deps.c, docs/replay.md) add to a report, on any trace.
 *
 *	replay_cost TRACE
 *
 * Loads the trace and finds its steps as `cuscope report` does, then builds the model of the
 * steps' process, replays it as recorded and once with every host wait of the steady steps
 * dropped (an edit of the size d2h-sync or sync-call makes), and prints each phase's CPU time and
 * the peak memory when it ended (docs/performance.md, "Replay").
 */
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuscope/analyze.h"
#include "cuscope/timings.h"
#include "deps.h"

int main(int argc, char **argv)
{
	cs_trace *t;
	cs_analysis a;
	cs_steps s;
	cs_error err = {0, ""};
	struct fact_deps *d = NULL;
	struct fact_deps_stats st;
	cs_stopwatch w;
	cs_edit *e = NULL;
	int64_t base = 0, ed = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: replay_cost TRACE\n");
		return 2;
	}
	setenv("CUSCOPE_TIMINGS", "1", 1);
	/* as cuscope's main() does: large arrays reused from the heap, not mapped and faulted in
	 * again */
	mallopt(M_MMAP_MAX, 0);
	mallopt(M_TRIM_THRESHOLD, INT_MAX);
	cs_stopwatch_start(&w);
	if (cs_trace_open(argv[1], &t, &err) < 0 || cs_analysis_load(t, &a, &err) < 0 ||
	    cs_steps_detect(&a, NULL, &s, &err) < 0) {
		fprintf(stderr, "replay_cost: %s\n", err.msg);
		return 1;
	}
	cs_timings_add("loading and finding the steps", &w);
	if (fact_deps_build(&a, &s, FACT_DEPS_UNPROFILED, &d) || !d) {
		fprintf(stderr, "replay_cost: no model (no GPU work, or no memory)\n");
		return 1;
	}
	cs_timings_add("building the model", &w);
	if (fact_deps_replay(d, NULL, NULL, &base))
		return 1;
	cs_timings_add("replaying it as recorded", &w);
	for (int64_t i = 0; i < a.nsyncs; i++)
		if (a.syncs[i].pid == s.pid && a.syncs[i].host_wait &&
		    cs_steps_find(&s, a.syncs[i].start) >= s.warmup &&
		    cs_edit_add(&e, CS_EDIT_NO_WAIT, CS_EDIT_SYNC, i, 0))
			return 1;
	if (fact_deps_replay(d, e, NULL, &ed))
		return 1;
	cs_timings_add("replaying it without the waits", &w);
	fact_deps_stats(d, &st);
	printf("%lld calls, %lld GPU operations, %d threads, %d streams, %lld edit items; span %lld "
	       "-> %lld ns\n",
	       (long long)st.calls, (long long)st.ops, st.threads, st.streams,
	       (long long)(e ? e->n : 0), (long long)base, (long long)ed);
	cs_timings_print();
	cs_edit_free(e);
	fact_deps_free(d);
	cs_steps_free(&s);
	cs_analysis_free(&a);
	cs_trace_close(t);
	return 0;
}
