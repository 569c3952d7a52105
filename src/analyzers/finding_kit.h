/*
 * finding_kit.h - what the rules of src/analyzers build their findings with (private to the
 * analyzers): the titles' numbers and step counts, medians and modes of per-step values, and the
 * hand-over of a finding to the report. What they derive from the run is in facts/ (read through
 * cache.h); the severity of a share and the 95% intervals are estimates.h, the decision of a
 * recurring cost recurrence.h, call sites sites.h, edits of the run edits.h.
 */
#ifndef CUSCOPE_FINDING_KIT_H
#define CUSCOPE_FINDING_KIT_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/analyze.h"

#define RU_US 1000LL
#define RU_MS 1000000LL

/* "850 ns", "12.3 us", "4.56 ms", "1.23 s" into buf; returns buf. */
const char *ru_fmt_ns(char *buf, size_t size, int64_t ns);
/* "512 B", "4.0 KiB", "1.3 GiB" into buf; returns buf. */
const char *ru_fmt_bytes(char *buf, size_t size, int64_t bytes);

/* "every step" when n is all of the steady steps, else "in 12 of 40 steps", into buf. */
const char *ru_fmt_steps(char *buf, size_t size, int32_t n, int32_t steady);

/* Steady-state step indices of the steps whose per_step value is non-zero (s->n slots). */
int ru_steps_nonzero(const cs_steps *s, const int64_t *per_step, int32_t **out, int32_t *n);

/* Room in r for one more finding: r->v grown (its room doubled, from 16) when it is full. 0, or
 * CS_ERR_NOMEM with r as it was. */
int ru_report_room(cs_report *r);

/* Hand a finding to the report and free it: 0, or the report's error in err. */
int ru_emit(cs_rule_ctx *ctx, cs_report_finding *f, cs_error *err);

/*
 * A new finding (cs_finding_new()) of rule, with severity, title and fix, about the steady steps
 * steps[0..nsteps), which lose lost ns per step: those steps and lost_ns_per_step set, the rest as
 * cs_finding_new() leaves it. NULL without memory.
 */
cs_report_finding *ru_finding_new(const char *rule, int severity, const char *title,
				  const char *fix, const int32_t *steps, int32_t nsteps,
				  int64_t lost);

/*
 * f's first and last: the start of the step steps[0] of s and the end of the step
 * steps[nsteps - 1]; the start and the end of the trace of a when nsteps is 0.
 */
void ru_finding_span(cs_report_finding *f, const cs_analysis *a, const cs_steps *s,
		     const int32_t *steps, int32_t nsteps);

/*
 * ru_finding_new() about steps[0..nsteps) of ctx's steps, its first and last those steps'
 * (ru_finding_span()). NULL without memory.
 */
cs_report_finding *ru_step_finding(const cs_rule_ctx *ctx, const char *rule, int severity,
				   const char *title, const char *fix, const int32_t *steps,
				   int32_t nsteps, int64_t lost);

/*
 * The end of a rule's check: with rc 0, f handed to the report (ru_emit(); nothing when f is
 * NULL: no finding); with rc an error code (negative), f freed and err set to it as "out of
 * memory", unless a callee has set err already. Returns 0 or the error.
 */
int ru_finish(cs_rule_ctx *ctx, cs_report_finding *f, int rc, cs_error *err);

/* The median over the given steps of one int64_t field (at offset) of per-step structs of size
 * bytes each; tmp has room for n values. */
int64_t ru_median_field(const void *per_step, size_t size, const int32_t *steps, int32_t n,
			size_t offset, int64_t *tmp);

/* A per-step field whose median over a finding's steps is in its evidence. */
struct ru_median_key {
	const char *key; /* the evidence's name for it */
	size_t offset;	 /* of the int64_t field in the per-step struct */
};
/*
 * The medians over the steps steps[0..n) of fields of per-step structs of size bytes each (by
 * step index), added to e as keys[0..nkeys) name them, in that order (ru_median_field(); tmp has
 * room for n values).
 */
void ru_add_medians(cJSON *e, const struct ru_median_key *keys, size_t nkeys, const void *per_step,
		    size_t size, const int32_t *steps, int32_t n, int64_t *tmp);

/* A value of a finding's evidence: the number, or the string when that is not NULL. */
struct ru_field {
	const char *key;
	double number;
	const char *string;
};
/* fields[0..n) added to e, in that order. 0, or CS_ERR_NOMEM when one could not be. */
int ru_add_fields(cJSON *e, const struct ru_field *fields, size_t n);

/* The span [*first, *last] widened to take in [t0, t1]; *first 0 is none yet. */
void ru_widen(int64_t *first, int64_t *last, int64_t t0, int64_t t1);

struct fact_name_time;
/*
 * The kernels of names[0..n) (facts/kernel_names.h), the first max of them, added to e as
 * "kernels": each its "name", with note its note(name_id, arg) as "evidence", its time "ns",
 * "launches", and their means "mean_ns" and "mean_blocks" per launch. 0 or CS_ERR_NOMEM.
 */
int ru_add_kernel_names(cJSON *e, const cs_analysis *a, const struct fact_name_time *names,
			int32_t n, int32_t max,
			const char *(*note)(int64_t name_id, const void *arg), const void *arg);

/* The most common non-zero value of v[0..n) (v is sorted in place), the smaller one on a tie; 0
 * when none. */
int64_t ru_mode_nonzero(int64_t *v, int32_t n);

#endif
