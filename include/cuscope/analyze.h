/*
 * analyze.h - the analysis: the rules that turn the model of a trace (model.h: its events loaded
 * once into compact arrays; steps.h: its training steps) into findings.
 *
 * `cuscope report` loads a trace (cs_analysis_load), finds its steps (cs_steps_detect), runs the
 * analyzers of the registry (src/analyzers/registry.c) and prints the findings, most costly first.
 * Analyzers never query SQLite themselves: every analyzer works on the model's arrays.
 */
#ifndef CUSCOPE_ANALYZE_H
#define CUSCOPE_ANALYZE_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "cuscope/error.h"
#include "cuscope/model.h"
#include "cuscope/steps.h"
#include "cuscope/trace.h"

/*
 * Why the GPU idled in a step while the host had not launched its next work yet: the causes the
 * launch-starvation rule splits a starved gap into (docs/rules/launch-starvation.md), each
 * nanosecond to one of them. CS_IDLE_D2H is the idle after a device-to-host wait that d2h-sync
 * charges.
 */
enum cs_idle_cause {
	CS_IDLE_LAUNCH = 0, /* launch overhead: launch calls one by one */
	CS_IDLE_HOST,	    /* host work between launches */
	CS_IDLE_WAIT,	    /* host waits */
	CS_IDLE_INPUT,	    /* the input pipeline: before a batch's host-to-device copies */
	CS_IDLE_PAGEABLE,   /* a pageable copy call holding the host */
	CS_IDLE_D2H,	    /* after a device-to-host wait (d2h-sync) */
	CS_IDLE_ALLOC,	    /* a device allocator call holding the host (allocator-churn) */
	CS_IDLE_NCAUSES,
};
/* The evidence key of a cause: "launch_overhead", "host_work", "host_wait", "input_pipeline",
 * "pageable_copy", "after_d2h_sync", "allocator_call". */
const char *cs_idle_cause_name(int cause);
/*
 * The GPU idle of each steady-state step of s that the host caused, by cause, as launch-starvation
 * measures it: idle[i * CS_IDLE_NCAUSES + cause] in ns for step i (s->n * CS_IDLE_NCAUSES slots,
 * overwritten; warm-up steps get 0). Unlike the rule, which charges a gap to the step of the work
 * that ends it, each piece of a gap goes to the step whose span holds it, so that a step's causes
 * fit in its own idle time. Idle while work was already queued (a dependency between streams, the
 * GPU's own gap) is in none of them. 0, or CS_ERR_NOMEM.
 */
int cs_steps_idle_by_cause(const cs_analysis *a, const cs_steps *s, int64_t *idle, cs_error *err);

/* ---- fixes as edits of the run (docs/replay.md) ---- */

/* What a fix changes in the run: each item names a recorded element (its target) and what
 * becomes of it, or of the host call that holds it. */
enum cs_edit_kind {
	CS_EDIT_NO_WAIT = 1, /* the call holding the target no longer waits for the GPU: it takes
			      * what such a call takes when it does not wait */
	CS_EDIT_DROP_CALL,   /* the call holding the target is not made (no time, no wait) */
	CS_EDIT_CALL_TIME,   /* the call holding the target takes value ns and does not wait */
	CS_EDIT_GPU_TIME,    /* the target's GPU work (a kernel, copy or memset) takes value ns */
	CS_EDIT_HOST_CUT,    /* the host time before the call holding the target shrinks by value */
	CS_EDIT_ASYNC,	     /* the call holding the target becomes an asynchronous launch: it takes
			      * what the process's launch calls take (their median) and waits for
			      * nothing */
	CS_EDIT_GPU_GAP,     /* the target's GPU work follows the work before it on its stream after
			      * value ns, when that work was queued ahead of it (a CUDA graph's
			      * nodes follow each other so) */
};
/* What an edit item's index is an index of. */
enum cs_edit_target {
	CS_EDIT_KERNEL = 0, /* a->kernels */
	CS_EDIT_COPY,	    /* a->copies */
	CS_EDIT_SYNC,	    /* a->syncs */
	CS_EDIT_API,	    /* a->apis */
};
typedef struct cs_edit_item {
	int32_t kind;	/* enum cs_edit_kind */
	int32_t target; /* enum cs_edit_target */
	int64_t index;
	int64_t value; /* ns, where the kind takes one */
} cs_edit_item;
typedef struct cs_edit {
	cs_edit_item *v;
	int64_t n;
	size_t cap;
} cs_edit;
/* Add an item to *e (allocated on first use): 0 or CS_ERR_NOMEM. */
int cs_edit_add(cs_edit **e, int kind, int target, int64_t index, int64_t value);
/* Append every item of src to *dst: 0 or CS_ERR_NOMEM. */
int cs_edit_merge(cs_edit **dst, const cs_edit *src);
void cs_edit_free(cs_edit *e);

/* ---- findings ---- */

enum cs_severity {
	CS_SEV_INFO = 1,
	CS_SEV_WARNING = 2,
	CS_SEV_ERROR = 3,
};
const char *cs_severity_name(int sev); /* "info", "warning", "error" */
int cs_severity_parse(const char *s);  /* -1 when unknown */

typedef struct cs_report_finding {
	const char *rule; /* static: the analyzer's id */
	int32_t severity;
	char *title;	/* one line: what is wrong, with the main number ("loss.item() syncs every
			   step") */
	char *fix;	/* one or two sentences */
	int32_t *steps; /* steady-state step indices it occurs in, ascending */
	int32_t nsteps;
	int64_t first, last;	  /* time span of the evidence */
	int64_t lost_ns_per_step; /* estimated GPU time lost per affected step */
	double step_share;	  /* lost_ns_per_step / median step time, 0..1 */
	/* the steps lost_ns_per_step is counted over: 0 for the affected steps; the steady steps
	 * for a pattern of a few steps, whose cost is spread over the steady state (evidence
	 * "recurring": false; emit sets it) */
	int32_t lost_steps;
	int64_t stack_id; /* where, when the trace has backtraces; CS_ID_NONE otherwise */
	cJSON *evidence;  /* object: counts, bytes, kernel names, times (owned) */
	/*
	 * The process the finding is of: its steps, figures, evidence and stack (emit fills it
	 * from the steps' process). When cs_report_run_processes() found the same finding in
	 * several processes, these are of the one where it costs most; procs lists them all.
	 */
	uint32_t pid;
	struct cs_finding_proc *procs; /* owned; NULL until cs_report_run_processes() */
	int32_t nprocs;
	/*
	 * The fix as an edit of the run (owned; NULL when the rule states none), and what
	 * replaying the run with it saves: saving_ns over the steady steps in all (the report sets
	 * lost_ns_per_step and step_share from it), saving_share of their time; saving_ns is -1
	 * until a replay measured it.
	 */
	cs_edit *edit;
	int64_t saving_ns;
	double saving_share;
} cs_report_finding;

/* One process a finding was found in, with what it costs there. */
typedef struct cs_finding_proc {
	uint32_t pid;
	int32_t rank, local_rank; /* CS_ID_NONE when not set */
	int32_t *steps;		  /* steady-state steps of that process's own steps (owned) */
	int32_t nsteps;
	int64_t lost_ns_per_step;
	double step_share;
	int32_t lost_steps; /* as the finding's */
	int64_t first, last;
	int32_t severity;
} cs_finding_proc;

/* What an analyzer gets. */
typedef struct cs_rule_ctx {
	const cs_analysis *a;
	const cs_steps *steps;
	int64_t step_median; /* ns, steady state */
	/* Add a finding; the context takes ownership of f's heap members. */
	int (*emit)(struct cs_rule_ctx *ctx, cs_report_finding *f);
	void *priv;
	/*
	 * What several analyzers compute alike from a and steps (src/analyzers/cache.h), kept
	 * by cs_report_run() for the analyzers of one run; NULL when an analyzer runs on its own.
	 */
	struct cs_rule_cache *cache;
	/* Every process of the report with its steps (the cross-rank rules compare them), when
	 * cs_report_run_processes() runs the rules; NULL otherwise. */
	const struct cs_report_processes *procs;
	/* The findings of the run so far (of every process: filter on pid), for the analyzers
	 * that run after the others (cs_analyzer_after_others()); NULL when an analyzer runs on
	 * its own. */
	const struct cs_report *found;
} cs_rule_ctx;

/*
 * The large facts of a process that the rules of one report share (src/analyzers/facts/), as
 * flags: a report keeps each while a rule still to run names it in its facts, and frees it after
 * the last one. A rule that reads a fact it does not name gets it computed again.
 */
enum cs_fact_flag {
	CS_FACT_LAUNCH_CALLS = 1, /* the process's launch calls by start (facts/launch_calls.h) */
	CS_FACT_LAUNCH_ORDER = 2, /* its GPU work in launch order per thread (fact_launch_ops) */
	/* its host waits: the device-to-host ones (facts/d2h_waits.h), the others and the waits
	 * of pageable copies (ru_cached_host_waits) */
	CS_FACT_WAITS = 4,
};

typedef struct cs_analyzer {
	const char *id;	     /* "d2h-sync" */
	const char *summary; /* one line for --list-rules */
	const char *source;  /* guide passage: "000 #12, 002 3.2" */
	/* look for the pattern in ctx's steps and emit what is found: 0, or a cs_err code */
	int (*check)(cs_rule_ctx *ctx, cs_error *err);
	unsigned facts; /* enum cs_fact_flag: the shared facts it reads */
} cs_analyzer;

/* The registry (src/analyzers/registry.c): every analyzer, NULL-terminated. */
extern const cs_analyzer *const cs_analyzers[];
const cs_analyzer *cs_analyzer_find(const char *id);
/* 1 when r summarizes the other rules' findings (registry.c lists them): a run calls it after
 * every other analyzer, with their findings in ctx->found. */
int cs_analyzer_after_others(const cs_analyzer *r);

/*
 * An analyzer reports a finding so:
 *	f = cs_finding_new(id, sev, title, fix); fill steps, times, lost_ns_per_step, evidence;
 *	rc = ctx->emit(ctx, f); cs_finding_free(f);
 * emit moves f's heap members into the report (f keeps none of them, on success and on failure),
 * sorts f's steps, and fills step_share from ctx->step_median when it was left 0.
 */

/* Allocate a finding with its strings copied and an empty evidence object. */
cs_report_finding *cs_finding_new(const char *rule, int severity, const char *title,
				  const char *fix);
void cs_finding_free(cs_report_finding *f);
/* Set f->steps to a copy of n step indices (sorted, duplicates dropped); 0 or CS_ERR_NOMEM. */
int cs_finding_set_steps(cs_report_finding *f, const int32_t *steps, int32_t n);
/* Estimated GPU time lost in all in one process of a finding. */
int64_t cs_finding_proc_total_lost(const cs_finding_proc *p);
/* Estimated GPU time lost in all: lost_ns_per_step * nsteps (or * lost_steps when set)
 * (lost_ns_per_step without steps), held at INT64_MAX. cs_lost_total takes the two numbers (a
 * finding's, or one of its processes'). */
int64_t cs_lost_total(int64_t lost_ns_per_step, int32_t nsteps);
int64_t cs_finding_total_lost(const cs_report_finding *f);

/* ---- running the analyzers ---- */

/* The findings of a report, most costly first once sorted. */
typedef struct cs_report {
	cs_report_finding **v;
	int32_t n, cap;
} cs_report;

/*
 * Run the analyzers of rules (NULL-terminated; NULL = the whole registry) on a loaded trace and its
 * steps, add their findings to out (zeroed by the caller, or kept from an earlier run) and sort
 * them (cs_report_sort). An analyzer that fails stops the run: its error is returned, with the
 * findings so far left in out.
 */
int cs_report_run(const cs_analysis *a, const cs_steps *s, const cs_analyzer *const *rules,
		  cs_report *out, cs_error *err);
/* The same, with every process of the report and its steps given to the rules (ctx->procs). */
int cs_report_run_with(const cs_analysis *a, const cs_steps *s,
		       const struct cs_report_processes *procs, const cs_analyzer *const *rules,
		       cs_report *out, cs_error *err);
/* Most costly first: total lost time descending, then severity, rule id, first time. */
void cs_report_sort(cs_report *r);
void cs_report_free(cs_report *r);

/* ---- every process ---- */

/* A process analysed by cs_report_run_processes(), with its own steps. */
typedef struct cs_report_process {
	uint32_t pid;
	int32_t rank, local_rank; /* RANK and LOCAL_RANK of the PROCESSES table; CS_ID_NONE */
	cs_steps steps;
	/* cs_steps_idle_by_cause() of steps when a rule computed it, for the report to reuse (the
	 * GPU idle line); NULL otherwise. Owned. */
	int64_t *idle_by_cause;
	/* The replay of its run (docs/replay.md): the steady steps' mean time replayed as recorded
	 * and with the fix of every finding that states one applied together, ns; 0 when the
	 * findings stated no fix. */
	int64_t replay_step_ns, fix_all_step_ns;
} cs_report_process;

typedef struct cs_report_processes {
	cs_report_process *v; /* by rank, then by pid (processes without a rank after) */
	int32_t n;
	int32_t primary; /* index of the process the default step detection picks (or o->pid) */
	/* The processes that communicate side by side (include/cuscope/ranks.h), built once for
	 * the rules and the report when two or more processes have steps; NULL otherwise. Owned. */
	struct cs_rank_view *ranks;
} cs_report_processes;

/*
 * Find the steps of every CUDA process (every process that launched kernels, copies or memsets,
 * and the process cs_steps_detect() picks by default), each with cs_steps_detect() on its own pid,
 * and run the rules on each (docs/steps.md). With o->pid set, only that process. With
 * o->step_range and no o->pid, the pattern must match in some process (else CS_ERR_INVALID, as
 * cs_steps_detect() says); a process in which it matches nothing gets the automatic detection.
 *
 * Findings are tagged with their pid; the same finding (same rule, same stack frames and kernel
 * names) of several processes becomes one, of the process where it costs most (highest severity,
 * then most time lost in all), with procs naming every process and its cost. out is sorted.
 * On failure, procs and out keep what was done (procs->n is 0 when the steps of the first process
 * could not be found); the caller frees both in every case.
 */
int cs_report_run_processes(const cs_analysis *a, const cs_step_opts *o,
			    const cs_analyzer *const *rules, cs_report_processes *procs,
			    cs_report *out, cs_error *err);
/* The same, with the steps cs_steps_detect(a, o) gave (copied), not found again. */
int cs_report_run_processes_from(const cs_analysis *a, const cs_step_opts *o,
				 const cs_steps *primary, const cs_analyzer *const *rules,
				 cs_report_processes *procs, cs_report *out, cs_error *err);
void cs_report_processes_free(cs_report_processes *p);
/* The process of pid in p, or NULL. */
const cs_report_process *cs_report_process_find(const cs_report_processes *p, uint32_t pid);

#endif
