/*
 * cache.h - the run's cache of the facts (src/analyzers/facts/): what several rules compute alike
 * from the loaded arrays and steps of one process, computed when a rule first asks for it and
 * kept for the other rules of the run (private to the analyzers). A fact never includes it: the
 * cache calls the facts with their inputs, the rules read the facts through it.
 */
#ifndef CUSCOPE_CACHE_H
#define CUSCOPE_CACHE_H

#include <stdint.h>

#include "cuscope/analyze.h"
#include "cuscope/ranks.h"
#include "d2h_waits.h"
#include "h2d_stalls.h"
#include "release_bursts.h"

struct fact_idle_scan;
struct fact_launch_calls;
struct fact_launch_op;

/*
 * The device-to-host waits (d2h-sync, launch-starvation), the other host waits (sync-call,
 * pageable-memcpy), the waits of pageable copies and the release bursts (the two memory rules) of
 * one analysis and its steps (one process), each computed when a rule first asks for it and kept
 * for the other rules of the run. cs_report_run() keeps one for its run in ctx->cache; a rule run
 * with no cache in its context gets its own, a zeroed one it frees with ru_cache_free().
 */
struct cs_rule_cache {
	int have_d2h, have_mem, have_api_cost, have_h2d, have_host_waits, have_copy_wait;
	int have_floor;
	struct fact_floor floor; /* the waits' floor (fact_gpu_floor), once have_floor is set */
	struct fact_waits d2h;
	struct fact_h2d_stalls h2d; /* fact_h2d_stalls(), once have_h2d is set */
	struct fact_bursts mem;	    /* and its allocator call costs once have_api_cost is set */
	struct fact_waits sync_waits, copy_waits; /* ru_cached_host_waits() */
	int64_t *copy_wait; /* fact_pageable_copy_waits() of the steps' process */
	/* ru_cached_idle_by_cause(): steps->n * CS_IDLE_NCAUSES (NULL until asked); the report
	 * takes it for its GPU idle line (cs_report_process.idle_by_cause) */
	int64_t *idle;
	struct fact_launch_calls *launch_calls; /* ru_cached_launch_calls(), NULL until asked */
	struct fact_launch_op *ops;		/* ru_cached_launch_ops(), once have_ops is set */
	int64_t nops;
	int have_ops;
	cs_rank_step *measures; /* ru_rank_measures() of a process not in a rank view, or NULL */
	/* the replay of the run (facts/deps.h) after the rules: the steady steps' mean time
	 * replayed as recorded and with every finding's fix, ns; 0 when nothing was replayed */
	int64_t replay_step_ns, fix_all_step_ns;
};
void ru_cache_free(struct cs_rule_cache *c);
/* Free the facts of c (enum cs_fact_flag) that are not in keep; asked again, they are computed
 * again. */
void ru_cache_trim(struct cs_rule_cache *c, unsigned keep);
/* cs_report_run_with() with the cache given, which keeps what the rules computed (the caller
 * frees it with ru_cache_free()). */
int ru_report_run_cached(const cs_analysis *a, const cs_steps *s,
			 const struct cs_report_processes *procs, const cs_analyzer *const *rules,
			 struct cs_rule_cache *cache, cs_report *out, cs_error *err);
/* fact_gpu_floor() of the steps' process (with its launch lag), which both waits' facts and the
 * idle scan take, as ru_cached_d2h(): computed once. */
int ru_cached_floor(cs_rule_ctx *ctx, struct cs_rule_cache *own, const struct fact_floor **out);
/* fact_d2h_waits() of ctx's analysis and steps, from ctx->cache, else from own: 0 or CS_ERR_NOMEM.
 */
int ru_cached_d2h(cs_rule_ctx *ctx, struct cs_rule_cache *own, const struct fact_waits **out);
/* fact_host_waits() of the steps' process (facts/d2h_waits.h), as ru_cached_d2h(): the first rule
 * to ask computes them, with the cached ru_cached_pageable_copy_waits(); read-only. Either pointer
 * may be NULL. 0 or CS_ERR_NOMEM. */
int ru_cached_host_waits(cs_rule_ctx *ctx, struct cs_rule_cache *own,
			 const struct fact_waits **sync, const struct fact_waits **copy);
/* fact_h2d_stalls() of ctx's analysis and steps, as ru_cached_d2h(). */
int ru_cached_h2d_stalls(cs_rule_ctx *ctx, struct cs_rule_cache *own,
			 const struct fact_h2d_stalls **out);

/* cs_steps_idle_by_cause() of ctx's analysis and steps (facts/idle_by_cause.h, with the cached
 * device-to-host waits and launch calls), as ru_cached_d2h(): steps->n * CS_IDLE_NCAUSES entries.
 */
int ru_cached_idle_by_cause(cs_rule_ctx *ctx, struct cs_rule_cache *own, const int64_t **out);
/* ru_cached_idle_by_cause(), made when it is not cached yet from the scan sc a rule prepared
 * (fact_idle_scan_prepare()), or a scan of its own when sc is NULL. */
int ru_cached_idle_by_cause_from(cs_rule_ctx *ctx, struct cs_rule_cache *own,
				 const struct fact_idle_scan *sc, const int64_t **out);
/* fact_launch_calls() of the steps' process (facts/launch_calls.h), as ru_cached_d2h(). */
int ru_cached_launch_calls(cs_rule_ctx *ctx, struct cs_rule_cache *own,
			   const struct fact_launch_calls **out);
/* fact_launch_ops() of ctx's analysis and steps, as ru_cached_d2h(); read-only. */
int ru_cached_launch_ops(cs_rule_ctx *ctx, struct cs_rule_cache *own,
			 const struct fact_launch_op **out, int64_t *n);

/*
 * The measures of the steps of ctx's process (cs_rank_steps_measure(), steps->n of them into m):
 * from its entry in the report's rank view when it has one (*vp the view, *me the entry), else
 * measured when a rule first asks and kept as ru_cached_d2h() keeps its fact (*vp NULL or the
 * view, *me -1). 0, or a negative error set in err.
 */
int ru_rank_measures(cs_rule_ctx *ctx, struct cs_rule_cache *own, cs_rank_step *m,
		     const cs_rank_view **vp, int32_t *me, cs_error *err);

/* fact_pageable_copy_waits() of the steps' process, as ru_cached_d2h(): a->ncopies entries. */
int ru_cached_pageable_copy_waits(cs_rule_ctx *ctx, struct cs_rule_cache *own, const int64_t **out);
/*
 * fact_release_bursts() of the steps' process (facts/release_bursts.h), as ru_cached_d2h(); with
 * api, also the allocator call costs (fact_bursts_api_cost()). 0 or CS_ERR_NOMEM.
 */
int ru_cached_bursts(cs_rule_ctx *ctx, struct cs_rule_cache *own, int api,
		     const struct fact_bursts **out);

#endif
