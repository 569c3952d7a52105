/*
 * rule_util.h - helpers the rules of src/analyzers share (private to the analyzers): severities,
 * small growing arrays, number formatting for titles, the run of the two rules about release
 * bursts, evidence and call sites, and the cache that computes the facts of facts/ (the host
 * waits, the release bursts, the launch calls) once per run.
 */
#ifndef CUSCOPE_RULE_UTIL_H
#define CUSCOPE_RULE_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/analyze.h"
#include "cache.h"
#include "d2h_waits.h"
#include "launch_ops.h"
#include "release_bursts.h"

#define RU_US 1000LL
#define RU_MS 1000000LL

/* Severity of a finding by its estimated loss share of the step: error >= 10%, warning >= 3%. */
int ru_severity(double share);

/* A growing array of int64 values. */
struct ru_i64 {
	int64_t *v;
	int64_t n;
	size_t cap;
};
int ru_i64_push(struct ru_i64 *x, int64_t v);
void ru_i64_free(struct ru_i64 *x);
/* Sort v[0..n) ascending. */
void ru_sort_i64(int64_t *v, int64_t n);

/*
 * The distribution-free 95% confidence interval of the median of v[0..n) (sorted in place), into
 * *lo and *hi: the order statistics at ranks n/2 -/+ 0.98 sqrt(n), as the number of values under
 * the true median is binomial B(n, 1/2) with a standard deviation of sqrt(n)/2 (1.96 of them on
 * either side). Few values give a wide interval (all of them under 6). Nothing when n is 0.
 */
void ru_median_interval(int64_t *v, int64_t n, int64_t *lo, int64_t *hi);

/*
 * The 95% interval of a share measured as k of n (the Wilson score interval, z = 1.96), into *lo
 * and *hi; 0 and 1 when n is 0.
 */
void ru_share_interval(int64_t k, int64_t n, double *lo, double *hi);

/* "850 ns", "12.3 us", "4.56 ms", "1.23 s" into buf; returns buf. */
const char *ru_fmt_ns(char *buf, size_t size, int64_t ns);
/* "512 B", "4.0 KiB", "1.3 GiB" into buf; returns buf. */
const char *ru_fmt_bytes(char *buf, size_t size, int64_t bytes);

/* "every step" when n is all of the steady steps, else "in 12 of 40 steps", into buf. */
const char *ru_fmt_steps(char *buf, size_t size, int32_t n, int32_t steady);

/* Steady-state step indices of the steps whose per_step value is non-zero (s->n slots). */
int ru_steps_nonzero(const cs_steps *s, const int64_t *per_step, int32_t **out, int32_t *n);

/* A pattern seen in a few steps only (every Nth step) counts when it recurs: at least this many
 * steps have it, and it costs at least RU_MIN_LOSS_SHARE of the median step over the steady state.
 */
#define RU_RARE_MIN_STEPS 2
#define RU_MIN_LOSS_SHARE 0.02

/* The steps steps[0..n) of s as a mask: s->n + 1 bytes, 1 at each of them (steps out of range left
 * out); malloc'd, NULL without memory. */
uint8_t *ru_steps_mask(const cs_steps *s, const int32_t *steps, int32_t n);

/*
 * The fix of a finding about the waits of d as an edit of the run (docs/replay.md): no wait of a
 * steady step holds the host; with copies, neither does the call of the first copy each waited
 * for. 0 or CS_ERR_NOMEM.
 */
int ru_edit_no_waits(cs_report_finding *f, const struct fact_waits *d, int copies);

/*
 * The fix of a rule about slow kernels as an edit of the run (docs/replay.md): each kernel of the
 * steps' process launched in one of the n steps for which match(k, arg) is non-zero runs its
 * recorded time times factor. 0 or CS_ERR_NOMEM.
 */
int ru_edit_kernel_time(cs_report_finding *f, const cs_analysis *a, const cs_steps *s,
			const int32_t *steps, int32_t n,
			int (*match)(const cs_a_kernel *k, void *arg), void *arg, double factor);

/* Hand a finding to the report and free it: 0, or the report's error in err. */
int ru_emit(cs_rule_ctx *ctx, cs_report_finding *f, cs_error *err);

/* ---- evidence of the rules about host waits (d2h-sync, sync-call) ---- */

/* The sync types a finding counts its waits by. */
#define RU_WAIT_TYPES 9
/*
 * The waits of d that cost GPU time, by sync type, added to e as "waits_by_type"; *best is the
 * costliest of them (-1: none). 0, or CS_ERR_NOMEM.
 */
int ru_add_wait_types(cJSON *e, const cs_analysis *a, const struct fact_waits *d, int64_t *best);
/*
 * The call sites of the waits of d that cost GPU time, merged by the wait's stack (with
 * copy_stack, by the stack of the first copy it waited for when the wait has none), most idle
 * first, as ru_sites_evidence() lists them (stack_id, count: the waits, cost_ns: their idle): at
 * most max of them added to e as "sites", and the costliest site's stack given to *stack_id. 0,
 * or CS_ERR_NOMEM.
 */
int ru_add_wait_sites(cJSON *e, const cs_analysis *a, const struct fact_waits *d, int copy_stack,
		      int max, int64_t *stack_id);
/* The median over the given steps of one int64_t field (at offset) of per-step structs of size
 * bytes each; tmp has room for n values. */
int64_t ru_median_field(const void *per_step, size_t size, const int32_t *steps, int32_t n,
			size_t offset, int64_t *tmp);

/*
 * Whether a cost seen in some steady steps is a finding, and how sure (d2h-sync, sync-call): in
 * at least min_steps steps and a 95% interval of their share that reaches min_step_share, the
 * median cost of those steps (recurring); else, in at least min_rare_steps, the total divided by
 * the steady steps (a pattern in a few steps; with skip_ends the first and the last steady step,
 * the loop's boundaries, do not count). A finding when the cost's 95% interval reaches
 * min_loss_share of step_median; near (info) when an interval holds its threshold.
 */
struct ru_recur {
	int recurring, near, near_loss, near_steps;
	int32_t steady;
	int64_t lost;			  /* per step */
	double share, share_lo, share_hi; /* lost / step_median, and its interval */
	double steps_lo, steps_hi;	  /* interval of the share of steady steps */
	double min_loss_share, min_step_share;
};
/* cost: per step index; steps (nsteps of them, may be shortened) the steady steps with a cost;
 * tmp: room for nsteps values. 1: a finding, in r; 0: none. */
int ru_recur_decide(const cs_steps *s, int64_t step_median, const int64_t *cost, int32_t *steps,
		    int32_t *nsteps, int skip_ends, int32_t min_steps, double min_step_share,
		    int32_t min_rare_steps, double min_loss_share, int64_t *tmp,
		    struct ru_recur *r);
/* The title's "; near the N% threshold (95% interval a-b%)" for the cost (loss) and for the share
 * of steps (steps), each empty unless r is near that threshold. */
void ru_recur_near_text(const struct ru_recur *r, char *loss, size_t loss_size, char *steps,
			size_t steps_size);
/* The title's "in K of N steady steps: X of GPU idle each time, Y per step over the steady state
 * (Z%)" of a pattern in a few steps (each: the cost in one of them). */
void ru_recur_rare_text(const struct ru_recur *r, int32_t nsteps, int64_t each, char *buf,
			size_t size);
/* r's shares, intervals, thresholds and margins as evidence (nsteps: the affected steps). */
void ru_recur_evidence(cJSON *e, const struct ru_recur *r, int32_t nsteps);

/* The most common non-zero value of v[0..n) (v is sorted in place), the smaller one on a tie; 0
 * when none. */
int64_t ru_mode_nonzero(int64_t *v, int32_t n);

/* ---- kernels' call sites (their names and time by name: facts/kernel_names.h) ---- */

/*
 * The call sites of the kernels that match, launched in steady steps (sites.c): merged by
 * the stack of their launch (a launch without one counted at the stack most launches of its name
 * and thread had), most GPU time first; at most max of them added to e as "sites" (stack_id,
 * count, cost_ns) and the costliest site's stack given to *stack_id (left alone when no kernel
 * has a site). 0, or CS_ERR_NOMEM.
 */
int ru_add_kernel_sites(cJSON *e, const cs_analysis *a, const cs_steps *s,
			int (*match)(const cs_a_kernel *k, void *arg), void *arg, int max,
			int64_t *stack_id);

/* One launch charged with a part of a finding's cost, for its call sites. */
struct ru_site_use {
	int64_t name_id;  /* the kernel's name id (a memcpy or memset: -1) */
	int64_t stack_id; /* of its launch; -1 when none */
	int64_t ns;	  /* the cost charged to it */
	uint32_t tid;	  /* launching thread */
	int32_t step;	  /* the step it counts in (-1: any) */
};
struct ru_sites {
	struct ru_site_use *v;
	size_t n, cap;
};
/* Charge cost_ns to a launch (stack_id CS_ID_NONE when it has none) counted in step. 0, or
 * CS_ERR_NOMEM. */
int ru_sites_add(struct ru_sites *u, int64_t name_id, uint32_t tid, int64_t stack_id, int32_t step,
		 int64_t cost_ns);
/*
 * The call sites of the launches of u, as ru_add_kernel_sites() lists those of kernels, with the
 * costs charged to them: with steps (not NULL) only the launches counted in one of
 * steps[0..nsteps). Reorders and filters u. 0, or CS_ERR_NOMEM.
 */
int ru_sites_evidence(cJSON *e, struct ru_sites *u, const int32_t *steps, int32_t nsteps, int max,
		      int64_t *stack_id);
void ru_sites_free(struct ru_sites *u);

#endif
