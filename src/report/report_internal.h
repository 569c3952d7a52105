/*
 * report_internal.h - what the renderers of the report (text.c, json.c, markdown.c) share, from
 * common.c: labels, step runs, costs and source locations in words.
 */
#ifndef CUSCOPE_REPORT_INTERNAL_H
#define CUSCOPE_REPORT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "report.h"

#define EVIDENCE_KEYS_SHOWN 8  /* evidence keys shown without --verbose */
#define STEP_RUNS_SHOWN	    6  /* runs of the step list shown without --verbose */
#define ALSO_SHOWN	    4  /* other processes of a finding shown without --verbose */
#define LABEL_WIDTH	    10 /* labels of a finding's fields */
#define HEADER_LABEL_WIDTH  11 /* labels of the header */
#define UNENDED_SHOWN	    3  /* processes named in the text and markdown headers */

/* one or many by n */
const char *report_plural(int64_t n, const char *one, const char *many);
/* The steps of a finding as runs: "3-29", "3-10, 12, 14-29"; at most max_runs (0 = all). */
void report_step_runs(char *buf, size_t size, const int32_t *steps, int32_t n, int max_runs);
/* "rank 1 (pid 1202)", "local rank 0 (pid 1202)" or "pid 1202". */
const char *report_proc_label(char *buf, size_t size, uint32_t pid, int32_t rank,
			      int32_t local_rank);
/* The entry of pid among a finding's processes, or NULL. */
const cs_finding_proc *report_finding_proc(const cs_report_finding *f, uint32_t pid);
/* The steps a finding's step indices and figures refer to: those of its process. */
const cs_steps *report_finding_steps(const struct report_view *v, const cs_report_finding *f);
/* The label of a finding's process. */
const char *report_finding_label(char *buf, size_t size, const struct report_view *v,
				 const cs_report_finding *f);
/* "2.10 ms per step (15.0%) in 40 steps, 84.0 ms in all" for one process of a finding. */
const char *report_proc_cost(char *buf, size_t size, const cs_finding_proc *p);
/* The frame that stands for a stack: the innermost in the user's code (docs/commands/report.md). */
const cs_frame *report_location_frame(const cs_frame *f, int n);
/* The last component of a path. */
const char *report_base_name(const char *path);
/* "file:line in function", "function (module)" or "" (malloc'd, cleaned). */
char *report_frame_text(const cs_frame *f, int full_module);
/* Does the stack borrow the Python frames of the thread waiting in backward()? */
int report_stack_borrowed(const cs_frame *f, int n, const cs_frame *loc);
/* The text of a stack's location (report_frame_text of its location frame, or backward() at it for
 * autograd's engine thread); NULL when there is none (malloc'd). */
char *report_where_text(const cs_frame *f, int n);

/* One call site of a finding: where its stacks point, how many calls, what they cost. */
struct report_site {
	char *where;	       /* report_where_text() of its stacks */
	char *file, *function; /* of the location frame of its first stack; NULL when none */
	int line;
	int64_t count;	 /* calls (waits) made there */
	int64_t cost_ns; /* their cost, over the whole trace */
};
/*
 * The call sites of a finding that names several: its evidence's "sites" array (stack_id, count,
 * cost_ns: ru_sites_evidence()), merged by location text, costliest first. 0 when the
 * finding has fewer than two sites with a location (then its stack_id says where). *out is freed
 * with report_sites_free(); *total gets the cost of all the sites.
 */
int report_sites(cs_trace *t, const cs_report_finding *f, struct report_site **out, int64_t *total);
void report_sites_free(struct report_site *v, int n);
/* The sites the text and markdown reports list without -v. */
#define REPORT_SITES_SHOWN 3
/* "pid N ended without its end record: records after T may be missing" */
const char *report_unended_text(char *buf, size_t size, const cs_unended *u);
/* What was found in process pid, in words (malloc'd; NULL without memory). */
char *report_proc_findings(const struct report_view *v, uint32_t pid);
/* The steps of a process in words. */
const char *report_proc_steps_text(char *buf, size_t size, const cs_steps *s);

/* The GPU idle of a process's steady steps that its host caused, as launch-starvation splits it
 * (cs_steps_idle_by_cause), in shares of the steps' time summed as the GPU busy share is. */
struct report_host_idle {
	int known; /* 0: no steps */
	double total;
	double share[CS_IDLE_NCAUSES];
	/* the rest of the GPU's idle: its next work was already queued (the GPU's own gap from one
	 * kernel to the next, a wait on another stream's work): 1 - busy share - total, >= 0 */
	double queued;
};
/* An idle cause (enum cs_idle_cause) in words: "launch overhead", "allocator calls"; "?" past the
 * last. The text header, the HTML header and the HTML charts' legends use these. */
const char *report_idle_cause_words(int cause);
/* Causes under this share are left out of the words. */
#define REPORT_HOST_IDLE_SHOWN 0.005
/* The idle with work queued is named from this share of the step: below it, the gaps of a busy
 * GPU between kernels it runs back to back. */
#define REPORT_QUEUED_IDLE_SHOWN 0.05
/* The findings' savings are said to overlap when they add up to more than every fix together
 * saves by this share of the step (rounding of the replays aside). */
#define REPORT_OVERLAP_SHOWN 0.01
/* Fill *out for the steps s (those of a process of v->procs); 0, or CS_ERR_NOMEM. */
int report_host_idle(const struct report_view *v, const cs_steps *s, struct report_host_idle *out);

/* "46.7% of the step waiting for the host: launch overhead 39.6%, host work 6.5%" (causes of at
 * least REPORT_HOST_IDLE_SHOWN, largest first). */
const char *report_host_idle_text(char *buf, size_t size, const struct report_host_idle *h);
/* "every fix below together: 11.6 ms a step instead of 12.0 ms (-3.7%), replayed": the mean steady
 * step replayed with every finding's fix against replayed as recorded (docs/replay.md). */
const char *report_fix_all_text(char *buf, size_t size, int64_t replayed_ns, int64_t fixed_ns,
				double sum_share);
/*
 * The idle of the "GPU idle:" line that no finding of process pid explains, from
 * REPORT_IDLE_EXPLAINED of the step, each with why its rule did not report it ("no finding for
 * launch overhead 8.1% and host work 6.0%: launch-starvation reports when the host's idle is at
 * least the GPU's busy time, here 14.1% against 84.2%"), or NULL when every such share has a
 * finding (low-utilization's explains them all).
 */
#define REPORT_IDLE_EXPLAINED 0.05
const char *report_idle_unexplained_text(const struct report_view *v, uint32_t pid, double busy,
					 const struct report_host_idle *h, char *buf, size_t size);
/*
 * The findings' own replayed savings of process pid added up, as shares of its mean steady step
 * (saving_share; findings without a replayed saving left out): beside the saving of every fix
 * together it says whether they overlap (report_fix_all_text()).
 */
double report_savings_sum(const struct report_view *v, uint32_t pid);
/* The share of the step that a finding's cost is: a replayed saving's of the mean steady step as
 * replayed (the share the header's "if fixed" line gives for every fix together), otherwise the
 * rule's of the median step. A cost in a few steps only is spread over all the steady steps, so
 * the mean, which holds those steps, is what it is a share of. */
double report_cost_share(const cs_report_finding *f);

/* A process's steps in words for the header's list of processes: report_proc_steps_text(), and
 * ", waiting for the host 14.3%" when the host left the GPU idle that much of them (at least
 * REPORT_HOST_IDLE_SHOWN). */
const char *report_proc_line_text(const struct report_view *v, char *buf, size_t size,
				  const cs_steps *s);

#endif
