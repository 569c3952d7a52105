/*
 * ranks.h - the ranks of a data-parallel job side by side: per-rank step measures (compute,
 * NCCL communication, the share of it overlapped with compute, host waits, the idle gap before
 * the step), and the cross-rank view that aligns the ranks' steps by index and names the slowest
 * rank of each step with the cause the trace shows.
 *
 * A rank waits for the slowest one inside its collectives: the fast ranks' NCCL kernels run
 * long, so step times come out alike on every rank. What tells ranks apart is each rank's own
 * time: the step time less its exposed communication (NCCL kernel time with no compute of the
 * same process running beside it), which holds the waiting.
 */
#ifndef CUSCOPE_RANKS_H
#define CUSCOPE_RANKS_H

#include <stdint.h>

#include "cuscope/analyze.h"

/* 1 when a kernel name (mangled, demangled or plain) is an NCCL kernel: its function name starts
 * with ncclKernel or ncclDevKernel. */
int cs_is_nccl_kernel(const char *name);

/* What one step of one process holds, ns. */
typedef struct cs_rank_step {
	int64_t time;	    /* cs_step_time */
	int64_t compute_ns; /* GPU time of the kernels that are not NCCL's, launched in the step */
	int64_t comm_ns;    /* GPU time of NCCL kernels launched in the step */
	int64_t comm_overlap_ns; /* of comm_ns, the part with a compute kernel of the process
				  * running on another stream */
	int64_t comm_exposed_ns; /* comm_ns - comm_overlap_ns */
	int64_t comm_kernels;	 /* NCCL kernels launched in the step */
	int64_t host_wait_ns;	 /* host waits (synchronize calls) inside the step's host span */
	int64_t idle_before_ns;	 /* GPU idle from the previous step's last GPU end to this step's
				  * first GPU start (0 for the first step) */
	int64_t own_ns;		 /* time - comm_exposed_ns, at least 0 */
} cs_rank_step;

/*
 * Measure every step of s (of process s->pid) into out (s->n slots). 0, or CS_ERR_NOMEM.
 */
int cs_rank_steps_measure(const cs_analysis *a, const cs_steps *s, cs_rank_step *out,
			  cs_error *err);

/* Why a rank's step took longer than the other ranks' (the largest excess over their median). */
enum cs_rank_cause {
	CS_RANK_CAUSE_NONE = 0,	   /* not the slowest, or no excess that explains half of it */
	CS_RANK_CAUSE_COMPUTE,	   /* more kernel time */
	CS_RANK_CAUSE_HOST_WAIT,   /* a longer host wait */
	CS_RANK_CAUSE_IDLE_BEFORE, /* a longer GPU idle before the step (input pipeline, host work)
				    */
	CS_RANK_CAUSE_SHARED_GPU,  /* the rank shares its GPU with another process of the job */
};
/* "none", "compute", "host_wait", "idle_before_step", "shared_gpu". */
const char *cs_rank_cause_name(int cause);

typedef struct cs_rank_entry {
	uint32_t pid;
	int32_t rank, local_rank; /* CS_ID_NONE when not set */
	int32_t shares_gpu;	  /* another process of the view ran on the same GPU (UUID) */
	const cs_steps *steps;	  /* borrowed from the processes the view was built from */
	cs_rank_step *m;	  /* steps->n measures (owned) */
} cs_rank_entry;

/* One step index, across the ranks. */
typedef struct cs_rank_row {
	int32_t index;
	int32_t steady;	   /* a steady step on every rank */
	int32_t slowest;   /* entry of the largest own time */
	int64_t behind_ns; /* its own time less the median own time of the other ranks */
	int32_t cause;	   /* enum cs_rank_cause */
	int64_t cause_ns;  /* the excess of that cause over the other ranks' median */
} cs_rank_row;

typedef struct cs_rank_view {
	cs_rank_entry *v;
	int32_t n;
	cs_rank_row *rows; /* step indices that every rank has */
	int32_t nrows;
} cs_rank_view;

/*
 * Build the view of the processes of procs that have steps (each with its own steps). A view of
 * fewer than two such processes has no rows. 0, or CS_ERR_NOMEM; v is zeroed first and freed
 * with cs_rank_view_free() in every case.
 */
int cs_rank_view_build(const cs_analysis *a, const cs_report_processes *procs, cs_rank_view *v,
		       cs_error *err);
void cs_rank_view_free(cs_rank_view *v);

/* A rank that is consistently the slowest (docs/rules/rank-straggler.md). */
typedef struct cs_rank_straggler {
	int32_t entry;	   /* in the view; -1 when none */
	int32_t slowest;   /* steady steps in which it is the slowest */
	int32_t steady;	   /* steady rows */
	int64_t behind_ns; /* median over the steady rows of its own time less the others' median */
	int64_t behind_lo, behind_hi; /* 95% interval of that median */
	int64_t own_median;	      /* median own time of the other ranks, ns */
	int32_t cause;		      /* the most frequent cause of its slowest steps */
	int32_t cause_steps;	      /* steps with that cause */
} cs_rank_straggler;

/*
 * The straggler of the view: the rank most often the slowest among the steady rows, kept when the
 * 95% interval of its share of the slowest places lies above 1/n (what ranks of equal speed give)
 * and the 95% interval of its median lag lies above 0, unless it shares its GPU with another
 * process of the view (contention). 1 when found, else 0 (out->entry is -1).
 */
int cs_rank_view_straggler(const cs_rank_view *v, cs_rank_straggler *out);

#endif
