/*
 * rulesim.h - what the rule tests share: running one rule through the analysis API
 * (cs_analysis_load, cs_steps_detect, a cs_rule_ctx whose emit keeps the findings) and a small
 * simulator that writes synthetic traces of one process. Each rule's tests (test_rules*.c) link
 * rulesim.c.
 */
#ifndef CUSCOPE_TESTS_RULESIM_H
#define CUSCOPE_TESTS_RULESIM_H

#include <stdint.h>

#include <check.h>

#include "cuscope/analyze.h"

#define PID   4242
#define TID   4242
#define US    1000LL
#define MS    1000000LL
#define MIB   (1024LL * 1024)
#define GIB   (1024LL * MIB)
#define STEPS 20

/* the test program's temporary directory (set in its main, before any sim_open) */
extern char *tmp_dir;

struct found {
	cs_report_finding v[8];
	int n;
};

struct loaded {
	cs_trace *t;
	cs_analysis a;
	cs_steps s;
	int64_t median;
};

/*
 * A small simulator of one process: a host clock and, per stream, the end of the GPU work queued
 * on it. Launches take launch_ns of host time; GPU work starts after its launch and after the
 * stream's previous work. Steps are NVTX ranges named "step".
 */
struct sim {
	cs_trace_writer *w;
	char *path;
	int64_t h;     /* host time */
	int64_t g[16]; /* per stream: end of its GPU work */
	uint64_t corr;
	int64_t step_start;
	int64_t step_text;
	int64_t addr;
	int64_t launch_ns;
	int64_t mem_stack;    /* stack of the memory rows written */
	int64_t kernel_stack; /* stack of the kernels' launches (sim_kernel_named) */
	int64_t copy_stack;   /* stack of the host-to-device copies' calls (sim_h2d) */
	int mem_kind;	      /* of the memory rows written; 0: device */
	int h2d_async;	      /* sim_h2d: a pageable copy asked for with cudaMemcpyAsync */
	uint32_t kernel_tid;  /* thread that launches the kernels (sim_kernel_shaped); 0: TID */
	int64_t h2d_ns;	      /* sim_h2d: the copy's own time on the GPU; 0: 2 us */
};

int collect(cs_rule_ctx *ctx, cs_report_finding *f);
void found_free(struct found *c);
void load(struct loaded *l, const char *path, const cs_step_opts *o);
void unload(struct loaded *l);
/* Runs rule id on a loaded trace and checks what every finding must hold. */
void run_rule(struct loaded *l, const char *id, struct found *out);

int64_t name_id(struct sim *m, const char *name);
/* A synthetic trace of one process (PID) on an H200-like GPU (132 SMs, compute capability 9.0). */
void sim_open(struct sim *m, const char *file);
/* The same on the GPU gpu describes (its pid is set here). */
void sim_open_gpu(struct sim *m, const char *file, const cs_device *gpu);
void sim_finish(struct sim *m);
int64_t gpu_end(const struct sim *m);
void sim_host(struct sim *m, int64_t ns);
int64_t next_start(struct sim *m, int stream);
/* A kernel of blocks blocks of threads threads (its launch's stack: m->kernel_stack). */
void sim_kernel_shaped(struct sim *m, int stream, int64_t name, int64_t blocks, int64_t threads,
		       int64_t dur);
/* 64 blocks of 256 threads. */
void sim_kernel_named(struct sim *m, int stream, int64_t name, int64_t dur);
/* blocks blocks of 128 threads, the name as text. */
void sim_kernel_grid(struct sim *m, int stream, const char *name, int64_t blocks, int64_t dur);
void sim_kernel(struct sim *m, int stream, int64_t dur);
void sim_d2h(struct sim *m, int stream, int64_t bytes, int async, int64_t stack);
void sim_h2d(struct sim *m, int stream, int64_t bytes, int pageable, int64_t hold_ns);
void sim_graph_launch(struct sim *m, int stream, int n, int64_t dur);
void sim_sync(struct sim *m, int type, int stream, int64_t until, int64_t stack);
void sim_mem_call(struct sim *m, int op, int64_t bytes, int64_t address, int result, int64_t api_ns,
		  int wait);
void sim_mem(struct sim *m, int op, int64_t bytes, int64_t address, int result, int64_t api_ns);
int64_t sim_alloc(struct sim *m, int64_t bytes);
void sim_step_begin(struct sim *m);
void sim_step_end(struct sim *m);
void sim_query(struct sim *m, int type, int stream, int result);
/* A cuLaunchHostFunc call of thread tid (1 us) at the host's time. */
/* An API row of the call name on thread tid, taking dur from the host clock (no stack). */
void sim_api_row(struct sim *m, const char *name, int api_kind, int cbid, uint32_t tid,
		 int64_t dur);
void sim_host_func(struct sim *m, uint32_t tid);
/* Loads a synthetic trace with its NVTX steps (2 of them warm-up) and runs one rule on it. */
void run_synthetic(struct sim *m, const char *id, struct found *f, struct loaded *l);
/* How many findings rule id makes on a synthetic trace; f keeps them. */
int synthetic_count(struct sim *m, const char *id, struct found *f);
void busy_step(struct sim *m);
/* The replayed saving of rule id per affected step on a synthetic trace (its NVTX steps, 2 of them
 * warm-up); -1 when it has no finding. */
int64_t synthetic_saving(struct sim *m, const char *id);

/*
 * Rule id on every trace committed in samples/rules/traces and tests/data/corpus (steps found with
 * opts, NULL for the defaults): each must give as many findings as own(file name) says (0 for
 * every trace when own is NULL). Returns how many traces it ran on.
 */
int committed_traces_expect(const char *id, const cs_step_opts *opts, int (*own)(const char *name));

/* PyTorch's blocking copy of a pageable tensor (4 MiB, stream 7, its stack: stack), then the
 * synchronize of its stream that waits for the whole queue. */
void sim_blocking_copy(struct sim *m, int64_t stack);
/* Two lines of a program: st[0] model.py:10 (forward), st[1] model.py:20 (normalize). */
void sim_two_stacks(struct sim *m, int64_t *st);
/* What a call site is expected to be: its line, calls per affected step, cost per affected step
 * within [lo, hi]. */
struct site_want {
	int line;
	int64_t calls, lo, hi;
};
/*
 * Rule id's one finding on path (steps: the NVTX ranges "step", two of them warm-up) lists w0's
 * line then w1's (JSON "locations", counts and costs over the affected steps), the finding's
 * location is w0's, the text report has a `where:` line for each with its function, in that order,
 * and markdown lists w0's first under **Where:**.
 */
void sim_expect_sites(const char *path, const char *id, const struct site_want *w0,
		      const struct site_want *w1);
/* A rule test program's main: make tmp_dir, run the suite; its exit status. */
int sim_main(Suite *suite, const char *prog);

#endif
