/*
 * h2d_rules.h - what the two rules of the host-to-device stalls (dataloader-stall,
 * host-created-tensor; the stalls: facts/h2d_stalls.h) share: their run, their per-step sums,
 * and the end of their finding: the steps, the call sites of the copies they charge and the fix
 * as an edit of the run.
 */
#ifndef CUSCOPE_H2D_RULES_H
#define CUSCOPE_H2D_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/analyze.h"
#include "h2d_stalls.h"

struct ru_recur;

/* A recurring pattern: stalls in at least this share of the steady steps ... */
#define RU_H2D_MIN_STEP_SHARE 0.5
/* ... and in at least this many of them. */
#define RU_H2D_MIN_STEPS 3
/* host-created-tensor's tensors, not a scalar or a flag: copies of at least this many bytes. */
#define RU_HOST_TENSOR_MIN_BYTES (64 * 1024)
/* A copy host-created-tensor counts: a tensor's (RU_HOST_TENSOR_MIN_BYTES), from pageable
 * memory (a fresh CPU tensor is never pinned). */
static inline int ru_host_tensor_copy(const cs_a_copy *c)
{
	return c->src_kind == CS_MEM_PAGEABLE && c->bytes >= RU_HOST_TENSOR_MIN_BYTES;
}
/* The call sites listed at most. */
#define RU_H2D_MAX_SITES 5

/* The stalls a rule owns, summed in one step. */
struct ru_h2d_sum {
	int64_t idle_ns;    /* GPU idle while the launching thread made no CUDA call: the cost */
	int64_t stretch_ns; /* the longest of its stretches without CUDA calls */
	int64_t copies;	    /* host-to-device copies that ended a stall */
	int64_t bytes;	    /* their bytes */
	int64_t pageable;   /* of them from pageable memory */
	int64_t copy;	    /* index in a->copies of the copy after the longest stretch, or -1 */
};

/* Those sums over the affected steps of a finding. */
struct ru_h2d_median {
	int64_t idle_ns, stretch_ns, copies, bytes; /* the medians of the steps' sums */
	int64_t pageable,
		all;  /* the copies from pageable memory, and all of them, in those steps */
	int32_t best; /* the step of the longest stretch that ended at a copy; -1: none */
};

/* A stall that a rule owns: non-zero when it charges y. */
typedef int (*ru_h2d_own_fn)(const cs_analysis *a, const struct fact_h2d_stall *y);

/* What a rule that charges the host-to-device stalls (dataloader-stall, host-created-tensor) gives
 * ru_run_h2d_rule(). */
struct ru_h2d_rule {
	const char *id; /* the rule's, its findings' */
	ru_h2d_own_fn own;
	/*
	 * The finding's title into buf (size bytes), m the medians of the affected steps: when r
	 * recurs, near1 and near2 are ru_recur_near_text()'s words; else rare is
	 * ru_recur_rare_text()'s (NULL when r recurs), and near1.
	 */
	void (*title)(char *buf, size_t size, const struct ru_h2d_median *m,
		      const struct ru_recur *r, const char *near1, const char *near2,
		      const char *rare);
	const char *fix;      /* the finding's fix when r recurs */
	const char *rare_fix; /* ... and when it does not; NULL: fix */
	/* the rule's own evidence in f (sum by step index, m): 0 or CS_ERR_NOMEM */
	int (*evidence)(const cs_analysis *a, cs_report_finding *f, const struct fact_h2d_stalls *h,
			const struct ru_h2d_sum *sum, const struct ru_h2d_median *m);
	int device; /* the fix makes the data on the device */
};

/*
 * The whole run of such a rule: the stalls (cached) that own() keeps summed by step, their idle
 * the cost; the recurrence (ru_recur_find() with RU_H2D_MIN_STEPS, RU_H2D_MIN_STEP_SHARE,
 * RU_RARE_MIN_STEPS and RU_MIN_LOSS_SHARE) and, when it recurs, the finding of the rule's id
 * (ru_recur_finding()) about the affected steps, its title and fix the rule's, its first and last
 * those steps' (ru_finding_span()), then its evidence: the rule's own, the steady and affected
 * steps and r's evidence (ru_recur_evidence()); the call sites of the copies that ended the stalls
 * own() keeps in those steps, each charged its stall's idle, as ru_sites_evidence() lists them (at
 * most RU_H2D_MAX_SITES, f's stack the costliest site's, left alone without stacks); the fix as an
 * edit of the run (docs/replay.md): the host time without a CUDA call before each of those copies
 * (the batch or the tensor being made) is gone from the launching thread and, with device, the copy
 * becomes the launch of a kernel that makes the data on the device (its call an asynchronous
 * launch). The finding is handed to the report (ru_emit()). 0, or the error, set in err.
 */
int ru_run_h2d_rule(cs_rule_ctx *ctx, const struct ru_h2d_rule *rule, cs_error *err);

#endif
