/*
 * edits.h - the fixes of findings as edits of the run (docs/replay.md) that several rules make
 * alike: no host wait, work not launched, a kernel that runs faster; and the steps a finding names
 * as a mask.
 * Those of one family of rules are with its run (h2d_rules.h, mem_rules.h).
 */
#ifndef CUSCOPE_EDITS_H
#define CUSCOPE_EDITS_H

#include <stdint.h>

#include "cuscope/analyze.h"
#include "d2h_waits.h"
#include "launch_ops.h"

/*
 * The call holding target index (CS_EDIT_KERNEL, CS_EDIT_COPY) is not made: its work is not
 * launched and runs no time; with host, neither does the host's time before the call on its
 * thread (the dispatch the fix does not run). 0 or CS_ERR_NOMEM.
 */
int ru_edit_not_launched(cs_edit **e, int target, int64_t index, int host);

/* The steps steps[0..n) of s as a mask: s->n + 1 bytes, 1 at each of them (steps out of range left
 * out); malloc'd, NULL without memory. */
uint8_t *ru_steps_mask(const cs_steps *s, const int32_t *steps, int32_t n);

/*
 * The fix of a finding about the waits of d as an edit of the run (docs/replay.md): no wait of a
 * steady step holds the host; with copies, neither does the call of the first copy each waited
 * for, and a read that follows the step's previous read with no kernel launched between (the
 * elements of one result read one by one) is not made at all, nor the host's work before it: the
 * result is read once; nor is a read that sizes nonzero() with CUB's count and selection. ops:
 * the launch order of the steady steps (fact_launch_ops(), NULL: none known). 0 or
 * CS_ERR_NOMEM.
 */
int ru_edit_no_waits(cs_report_finding *f, const cs_analysis *a, const struct fact_waits *d,
		     int copies, const struct fact_launch_op *ops, int64_t nops);

/*
 * The fix of a rule about slow kernels as an edit of the run (docs/replay.md): each kernel of the
 * steps' process launched in one of the n steps for which match(k, arg) is non-zero runs its
 * recorded time times factor. 0 or CS_ERR_NOMEM.
 */
int ru_edit_kernel_time(cs_report_finding *f, const cs_analysis *a, const cs_steps *s,
			const int32_t *steps, int32_t n,
			int (*match)(const cs_a_kernel *k, void *arg), void *arg, double factor);

/* The same with each kernel's new time given by time_of(k, its index in a->kernels, arg): -1
 * leaves the kernel as it ran. */
int ru_edit_kernel_times(cs_report_finding *f, const cs_analysis *a, const cs_steps *s,
			 const int32_t *steps, int32_t n,
			 int64_t (*time_of)(const cs_a_kernel *k, int64_t i, void *arg), void *arg);

#endif
