/*
 * gate.h - comparing a trace with one or several baselines: the metrics of a run, normalised per
 * steady-state training step (metrics.c), their differences, most significant first (diff.c,
 * `cuscope diff`), the statistics that test timing changes (stats.c), the thresholds that turn a
 * difference into a regression, with their JSON configuration (config.c, `cuscope gate`), and
 * the comparison both commands start with (comparison.c). Their renderers are the report's.
 *
 * The metrics, their units and default thresholds are listed in docs/ci.md; the comparison rules
 * (per-step normalisation, trimmed means, step alignment, finding matching) in
 * docs/commands/diff.md.
 */
#ifndef CUSCOPE_GATE_H
#define CUSCOPE_GATE_H

#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "cuscope/error.h"
#include "cuscope/model.h"
#include "cuscope/units.h"

/* ---- metrics ---- */

/* The units of metrics: enum cs_metric_unit (cuscope/units.h). */

/* How a metric is judged (docs/ci.md, "Default thresholds"). */
enum cs_metric_kind {
	CS_KIND_WALL = 0, /* wall-clock timing: follows the host's speed in a host-bound run */
	CS_KIND_GPU,	  /* GPU time of kernels */
	CS_KIND_COUNT,	  /* a count per step */
	CS_KIND_BYTES,	  /* bytes per step, peak memory */
	CS_KIND_FINDINGS, /* the analyzers' findings */
};
/* "wall", "GPU", "count", "bytes", "findings" */
const char *cs_metric_kind_name(int kind);

/* What the gate compares; the order is the order of docs/ci.md. */
enum cs_metric_id {
	CS_GM_STEP_TIME = 0, /* median step time */
	CS_GM_GPU_BUSY,	     /* GPU busy share of the step time */
	CS_GM_KERNEL_TOTAL,  /* GPU time of all kernels per step */
	CS_GM_LAUNCHES,	     /* kernel launches per step */
	CS_GM_KERNEL_TIME,   /* GPU time per step of one kernel name */
	CS_GM_KERNEL_COUNT,  /* launches per step of one kernel name */
	CS_GM_HTOD_COUNT,
	CS_GM_HTOD_BYTES,
	CS_GM_DTOH_COUNT,
	CS_GM_DTOH_BYTES,
	CS_GM_DTOD_COUNT,
	CS_GM_DTOD_BYTES,
	CS_GM_OTHER_COUNT, /* memcpys of the other directions (HtoH, peer, arrays) */
	CS_GM_OTHER_BYTES,
	CS_GM_MEMSET_COUNT,
	CS_GM_MEMSET_BYTES,
	CS_GM_PAGEABLE_COUNT, /* memcpys whose host memory is pageable, per step */
	CS_GM_HOST_WAITS,  /* host waits (stream/context/event synchronize, sync memcpy) per step */
	CS_GM_D2H_SYNCS,   /* host waits for a device-to-host copy per step */
	CS_GM_ALLOCS,	   /* device allocations per steady-state step */
	CS_GM_FREES,	   /* device memory releases per steady-state step */
	CS_GM_PEAK_MEMORY, /* highest device memory allocated, bytes */
	CS_GM_FINDINGS,	   /* findings of the analyzers; the gate counts the new ones */
	CS_GM_HOST_GAP,	   /* host-bound: host time before one launch of the step (cs_run.gaps) */
	CS_GM_COUNT
};

/*
 * When a change is a regression: worse by more than abs (in the metric's unit: ns, bytes, count
 * per step, share 0..1) and by more than rel (a fraction of the base value; a base of 0 passes the
 * relative test). rel == abs == 0 means any worsening ("exact" metrics). min_share: kernel_time
 * only, the share of the GPU kernel time a kernel needs (in base or new) to be gated.
 */
typedef struct cs_threshold {
	int gate; /* 0: shown and ranked by diff, never fails the gate */
	double rel;
	double abs;
	double min_share;
} cs_threshold;

typedef struct cs_metric_def {
	const char *id;	   /* config and JSON name: "step_time" */
	const char *label; /* "step time (median)" */
	int unit;	   /* enum cs_metric_unit */
	int higher_is_worse;
	cs_threshold def; /* the default threshold */
	int kind;	  /* enum cs_metric_kind */
} cs_metric_def;

const cs_metric_def *cs_metric_get(int id);

/* ---- a run: the metrics of one trace ---- */

enum cs_copy_dir {
	CS_DIR_HTOD = 0,
	CS_DIR_DTOH,
	CS_DIR_DTOD,
	CS_DIR_OTHER,
	CS_DIR_MEMSET,
	CS_NDIRS
};

typedef struct cs_run_kernel {
	char *name;	       /* as compared: the trace's name, or folded */
	double time_per_step;  /* ns */
	double count_per_step; /* launches */
	double share;	       /* of the GPU time of all kernels in steady steps, 0..1 */
	double once;	       /* share of the steady steps that launched it exactly once */
	/* its GPU time in the steady steps that launched it: sample_ns[i] in steady step
	 * sample_step[i] (ascending), nsamples of them; 0 in every other steady step. Kept sparse:
	 * a trace of 50,000 kernel names and 3,845 steps would take 1.5 GB as full rows. */
	int32_t *sample_step;
	double *sample_ns;
	int32_t nsamples;
	/* cs_run.gaps: the host time before the place-th launch (1-based) of name in the step */
	int32_t place;
} cs_run_kernel;

typedef struct cs_run_finding {
	char *rule;
	int severity;
	char *title;
	int64_t lost_ns_per_step;
	int near; /* its evidence says near_threshold: the rule's 95% interval holds its threshold
		   */
} cs_run_finding;

/* A run shares its GPU when another process's kernels run during more than this share of its
 * kernel time (docs/ci.md). */
#define CS_SHARED_GPU 0.05

/* Fewest timed launch calls whose median is taken as a run's host-speed index: the median of n
 * calls whose durations vary by 30% is known to about 1.25 * 30% / sqrt(n), 5% at 50, well
 * inside the host-bound floor. */
#define CS_HOST_INDEX_MIN 50

typedef struct cs_run {
	char *path;
	cs_load_window window; /* the window of the trace analysed (with cs_run_opts.max_memory) */
	char *command; /* meta "command", or NULL */
	int method;    /* enum cs_step_method */
	int32_t steps, warmup, steady, period;
	uint32_t pid;
	char detail[160];			 /* how the steps were found */
	int64_t step_median, step_p10, step_p90; /* ns, steady state */
	int timing;				 /* enum cs_step_timing */
	double gpu_busy;			 /* share of steady step time */
	/* per steady step (steady values each): step time (ns), GPU busy share, kernel time (ns) */
	double *step_samples, *busy_samples, *kernel_samples;
	double kernel_total, launches; /* per step */
	cs_run_kernel *kernels;	       /* by name */
	int32_t nkernels;
	/* the host's time before each launch of the step on the launch pace's thread, one entry
	 * per place (the place-th launch of a kernel name in the step), by name and place: its
	 * time_per_step the trimmed mean of that time, count_per_step the share of the steady
	 * steps that have the place (docs/ci.md, "Host time at one place") */
	cs_run_kernel *gaps;
	int32_t ngaps;
	double copy_count[CS_NDIRS], copy_bytes[CS_NDIRS]; /* per step */
	double pageable; /* memcpys from or to pageable host memory, per step */
	double host_waits, d2h_syncs, allocs, frees; /* per step */
	/* the median duration of the steady steps' kernel launch calls (ns; 0: fewer than
	 * CS_HOST_INDEX_MIN of them timed): the same CPU work in every run of a program, so an
	 * index of how fast its host ran (docs/ci.md, "Host-bound runs") */
	double launch_call;
	/* the host's launch pace: the median time from one kernel launch to the next on the thread
	 * that launched most of the steady steps' kernels (ns; 0: fewer than CS_HOST_INDEX_MIN
	 * intervals). In a host-bound loop every op costs the host about this much, so it follows
	 * the host's speed, while work added to a step in one place (a stretch without launches)
	 * leaves it as it was: the gate's host-speed index (docs/ci.md, "Host-bound runs") */
	double launch_pace;
	/* record's host-speed probes (cuscope/host_speed.h): each kind's index, the mean of its
	 * measurements before and after the program (ns; 0: not measured), and how far the probe
	 * moved by itself (a share: before against after, the spread of its blocks) */
	double probe_ns[2], probe_noise[2];
	double plain[CS_GM_COUNT]; /* count metrics: the plain (untrimmed) mean per steady step */
	int64_t peak_memory;	   /* bytes; the highest of any process and device */
	/* share of the steps' process's steady kernel time during which kernels of another process
	 * ran on the same device (two ranks time-sharing a GPU): its GPU times follow their work */
	double shared_gpu;
	cs_run_finding *findings; /* most costly first */
	int32_t nfindings;
	int rank_select; /* enum cs_rank_select the run was loaded with */
	int32_t rank;	 /* with a rank_select, the rank compared (the process `pid`) */
} cs_run;

/* Which process of a trace gives the steps that diff and gate compare (--rank). */
enum cs_rank_select {
	CS_RANK_DEFAULT = 0, /* the process with the most kernels */
	CS_RANK_N,	     /* the process of rank cs_run_opts.rank (PROCESSES.rank) */
	CS_RANK_SLOWEST,     /* the rank with the longest median step of its own */
};

typedef struct cs_run_opts {
	const char *step_range; /* NVTX step ranges (cs_step_opts), or NULL */
	int warmup;		/* -1 = default */
	int fold;		/* fold kernel names (cs_kernel_fold) */
	double confidence;	/* cs_comparison_load: the test level; 0 = the config's */
	int rank_select;	/* enum cs_rank_select */
	int32_t rank;		/* with CS_RANK_N */
	int64_t max_memory;	/* the model's memory limit (cs_load_opts.max_bytes); 0 = none */
} cs_run_opts;

/*
 * Read the trace at path, find its steps and run the analyzers, and fill out with its metrics.
 * Per-step values are means over the steady-state steps without the 10% highest and 10% lowest
 * values (docs/commands/diff.md). With o->rank_select, the steps (and the findings) are those
 * of the selected rank's process. Errors: those of cs_trace_open(), CS_ERR_INVALID for a step
 * range that matches nothing or a rank the trace does not have (the message names the ranks
 * present), CS_ERR_NOMEM.
 */
int cs_run_load(const char *path, const cs_run_opts *o, cs_run *out, cs_error *err);
void cs_run_free(cs_run *r);
/* The kernel named name, or NULL. */
const cs_run_kernel *cs_run_kernel_find(const cs_run *r, const char *name);
/* The host time before the place-th launch of name in the step (cs_run.gaps), or NULL. */
const cs_run_kernel *cs_run_gap_find(const cs_run *r, const char *name, int32_t place);

/*
 * A kernel name with its template noise folded (malloc'd; NULL without memory): demangled, the
 * return type, parameters and template arguments dropped, anonymous namespace hashes and
 * number/hex suffixes removed. The rules are in docs/commands/diff.md.
 */
char *cs_kernel_fold(const char *name);

/* ---- thresholds and their configuration ---- */

typedef struct cs_kernel_rule {
	char *pattern; /* fnmatch pattern of the kernel name (folded when folding) */
	cs_threshold t;
} cs_kernel_rule;

typedef struct cs_gate_config {
	cs_threshold t[CS_GM_COUNT];
	cs_kernel_rule *kernels; /* first match wins */
	int32_t nkernels;
	int fold;	   /* -1: not set */
	char *step_range;  /* NULL: not set */
	int warmup;	   /* -1: not set */
	double confidence; /* a timing change fails only at this one-sided confidence (0.99) */
	double host_bound; /* a baseline whose GPU busy share is below this is host-bound (0.4) */
	double host_floor; /* its wall metrics, against one baseline, fail only past this (0.3) */
} cs_gate_config;

/* The default thresholds, no kernel rules, nothing set. */
void cs_gate_config_defaults(cs_gate_config *c);
/*
 * Read a JSON config (schema in docs/ci.md) over the defaults in c. Unknown keys and metrics,
 * values of the wrong type or unit are errors (CS_ERR_INVALID, CS_ERR_NOT_FOUND, CS_ERR_IO) with
 * a one-line message naming the file and what is wrong.
 */
int cs_gate_config_load(const char *path, cs_gate_config *c, cs_error *err);
void cs_gate_config_free(cs_gate_config *c);
/* The threshold of a kernel: the first matching kernel rule, else the kernel_time threshold. */
const cs_threshold *cs_gate_kernel_threshold(const cs_gate_config *c, const char *name);

/* ---- the difference of two runs ---- */

typedef struct cs_diff_row {
	int metric;	    /* enum cs_metric_id */
	const char *kernel; /* kernel rows: the name (lives as long as the runs) */
	int32_t place;	    /* host_gap rows: the place-th launch of kernel in the step */
	double base, new_;  /* in the metric's unit, per compared step (base: of the baselines) */
	double delta;	    /* new_ - base */
	double rel;	    /* delta / base; 0 when base is 0 */
	cs_threshold t;	    /* the threshold that applies */
	int gated;	    /* t applies to the gate (a kernel: gate and share >= min_share) */
	int worse;	    /* past the threshold, in the bad direction (and significant: timing) */
	int better;	    /* past the threshold, in the good direction */
	double score;	    /* how far past the threshold (> 1: past it); the sort key */
	/* timing rows (wall and GPU kinds): the statistical test (docs/ci.md) */
	int tested;	   /* 1: confidence holds the test's result */
	double confidence; /* one-sided confidence that new is worse, 0..1 */
	double spread;	   /* run-to-run standard deviation of the baselines' values (2+ of them) */
	double margin;	   /* what the change must pass to be beyond that spread (2+ baselines) */
	int host_wall;	  /* a wall metric of a host-bound baseline alone: the host floor applies */
	double host_rel;  /* host_wall with a host-speed ratio: the relative change once it is taken
			   * out (the step time divided by it, the GPU busy share multiplied) */
	double host_base; /* several host-bound baselines: their mean at their mean host speed */
	int shared; /* a GPU-time metric (or GPU busy) of a shared GPU against one baseline: not
		     * gated */
	/* a wall metric of host-bound runs that fails as recorded and passes at the baseline's
	 * host speed, which the host-speed probes say differs: neither worse nor passed */
	int inconclusive;
} cs_diff_row;

/* A finding of base or new, matched to the other run's (NULL when none matched). */
typedef struct cs_diff_finding {
	const cs_run_finding *base, *new_;
} cs_diff_finding;

typedef struct cs_diff {
	const cs_run *base, *new_;  /* base: the first baseline */
	const cs_run *const *bases; /* every baseline (nbases >= 1) */
	int32_t nbases;
	double *base_scales;	      /* each baseline's steps compared per step found */
	double base_scale, new_scale; /* steps compared per step found: 1, or k (step alignment) */
	int comparable;		      /* 0: steps in one run, none in the other */
	char note[320];	     /* why the runs are not comparable, the alignment, few steady steps */
	char test_note[320]; /* how timing changes were tested (one baseline, or several) */
	char host_note[640]; /* the baselines are host-bound: what that means for wall metrics */
	char shared_note[320]; /* a run shares its GPU with another process: what that means */
	int shared_gpu;	       /* either run shares its GPU (shared_gpu past CS_SHARED_GPU) */
	double confidence;     /* the level timing changes are tested at */
	int host_bound;	       /* the baselines' GPU busy share is under the config's host_bound */
	double base_busy;      /* the baselines' GPU busy share (their median) */
	double host_floor;     /* the config's host_floor */
	/* host-bound baselines: new's launch pace over the baseline's (several: over their mean),
	 * how much slower new's host ran (0: a run has no launch pace, or the gate is not of that
	 * kind) */
	double host_speed;
	/* several host-bound baselines with host_speed: each one's launch pace over their mean
	 * (nbases of them); NULL otherwise */
	double *host_speeds;
	/* record's host-speed probes in every run: 1 + their kind (CS_PROBE_CPU, CS_PROBE_LAUNCH),
	 * 0 without; new's index over the baselines' mean, the probes' own noise (a share), the ratio
	 * past it. They mark inconclusive checks and do not set host_speed (diff.c, probe_speeds()) */
	int probe;
	double probe_ratio;
	double probe_noise;
	int probe_differs;
	cs_diff_row *rows; /* most significant first */
	int32_t nrows;
	cs_diff_finding *findings; /* new, then fixed, then persisting */
	int32_t nfindings, nnew, nfixed;
	int32_t nnew_gated;	/* new findings that are not near their rule's threshold */
	int32_t checks, failed; /* gated rows and those worse than their threshold */
	int32_t inconclusive;	/* gated rows explained by the host's speed alone */
} cs_diff;

/*
 * Compare new_ against the nbases (>= 1) baselines under the thresholds of c. The runs and the
 * array must outlive the diff. Returns 0 or CS_ERR_NOMEM.
 */
int cs_diff_compute(const cs_run *const *bases, int32_t nbases, const cs_run *new_,
		    const cs_gate_config *c, cs_diff *out, cs_error *err);
void cs_diff_free(cs_diff *d);

/* What `cuscope diff` and `cuscope gate` compare: the config, the runs and their diff. */
typedef struct cs_comparison {
	cs_gate_config cfg;
	cs_run *bases; /* nbases baselines */
	const cs_run **base_ptrs;
	int32_t nbases;
	cs_run new_;
	cs_diff d; /* points into the runs: a loaded comparison is not copied */
} cs_comparison;

/*
 * What both commands start with: the config at config_path (NULL: the defaults), the runs of the
 * nbases (>= 1) base_paths and of new_path with the options of o (NULL fields, warmup -1 and fold
 * 0 take the config's; confidence > 0 overrides the config's), then the diff of the new run
 * against the baselines. Errors carry a one-line message naming the file; on error nothing is
 * left to free.
 */
int cs_comparison_load(const char *config_path, const cs_run_opts *o, const char *const *base_paths,
		       int32_t nbases, const char *new_path, cs_comparison *out, cs_error *err);
void cs_comparison_free(cs_comparison *c);

/*
 * Label of a row in a table of per-step values: the metric's, or "kernel time" / "kernel
 * launches" for a kernel row (followed by the kernel's name).
 */
const char *cs_diff_row_label(const cs_diff_row *r);
/* The kernel of a kernel or host_gap row as shown (demangled, shortened): "NAME", or "launch K of
 * NAME" for a host_gap row; written into buf. */
const char *cs_diff_row_kernel(char *buf, size_t size, const cs_diff_row *r);
/* The rank a run compares, for people: "rank 1", "rank 1, the slowest", or "" by default. */
const char *cs_run_rank_label(const cs_run *r, char *buf, size_t size);
/* What became of a finding: 0 new (only in the new run), 1 fixed (only in the base), 2 in both. */
int cs_diff_finding_status(const cs_diff_finding *m);

/*
 * The threshold of a row for people: cs_threshold_format's, and for a wall metric of a host-bound
 * baseline alone the host floor after it ("+2% and +200 us, host-bound +30%"). Returns buf.
 */
char *cs_diff_row_threshold(char *buf, size_t size, const cs_diff *d, const cs_diff_row *r);
/* A confidence (0..1) for people: "97.5%", ">99.9%" from 0.9995 on, "<0.1%". Returns buf. */
char *cs_confidence_format(char *buf, size_t size, double c);
/*
 * The threshold t of a metric for people: "+5% and +200 us", "any increase", "-5 pt", "any new
 * finding", "not gated". Returns buf.
 */
char *cs_threshold_format(char *buf, size_t size, int metric, const cs_threshold *t);

/* The renderers of a diff (JSON, markdown, JUnit, text) are the report's: src/report/report.h. */

/* ---- statistics (stats.c; docs/ci.md) ---- */

/* Yuen's test of two samples: the 10%-trimmed means compared with Welch's t. */
typedef struct cs_stat_test {
	int valid;	       /* 0: fewer than 2 values in a sample */
	double mean_x, mean_y; /* the trimmed means */
	double se;	       /* standard error of mean_y - mean_x */
	double t, df;	       /* (mean_y - mean_x) / se, Welch-Satterthwaite degrees of freedom */
} cs_stat_test;

/* P(T <= t) for Student's t with df degrees of freedom; NaN for a bad argument. */
double cs_stat_t_cdf(double t, double df);
/* The p quantile of Student's t (0 < p < 1), by bisection; NaN for a bad argument. */
double cs_stat_t_quantile(double p, double df);
/* Yuen's test of y against x (nx and ny values). Returns 0 or CS_ERR_NOMEM. */
int cs_stat_yuen(const double *x, int32_t nx, const double *y, int32_t ny, cs_stat_test *out);
/* The sample standard deviation of n values (0 below 2). */
double cs_stat_sd(const double *v, int32_t n);
/* The median of n values (0 for none); sorts v. */
double cs_stat_median(double *v, int64_t n);

#endif
