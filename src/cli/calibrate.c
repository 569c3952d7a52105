/*
 * calibrate.c - what recording costs a kernel launch on this machine: the measurement that
 * `cuscope calibrate` (cmd_calibrate.c) prints and `cuscope record` makes after the program ends
 * (stored in META launch_cost, cuscope/launch_cost.h; docs/commands/calibrate.md says how and what
 * it found on the H200).
 *
 * Two processes of their own (forked, so that nothing of CUDA or CUPTI stays in cuscope's) load the
 * driver and an empty kernel (compiled from PTX by the driver) on GPU 0 and time loops of launches
 * of it (cuLaunchKernel, one block of one thread) when told to, one at a time:
 *   - the bare process never loads CUPTI: the launch with no profiler;
 *   - the recorded process loads the injection library with the recording's options, as the driver
 *     would for the program, calls its InitializeInjection(), and before each loop switches it
 *     (cuscope_calibrate_switch()) to CUPTI attached with nothing enabled, CUPTI's kernel records
 *     alone, everything with the API callbacks returning at once, or everything.
 * Every round runs the five loops, the order rotating from round to round, both launching threads
 * kept on the same CPU (the library's own threads are not), so that a loop with no profiler is
 * always next to the loops with it. What recording costs a launch is the median over the rounds of
 * the loop with everything less the loop with no profiler of the same round, in wall time per
 * launch; the parts are the medians of the differences between the modes, each in its round.
 * Each round also times two loops of waits with no profiler and with everything but the library's
 * own code (the API callbacks returning at once): a launch then a synchronous 4-byte copy back
 * (cuMemcpyDtoH) or a cuCtxSynchronize, each waiting for the kernel just launched. What CUPTI adds
 * to such a wait is that loop's difference less the launch loop's, in the same round: the time
 * before a blocking call returns that the recorder's own code (call_tails) does not count.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cuscope/gate.h"
#include "cuscope/launch_cost.h"
#include "cuscope/progress.h"
#include "cuscope/spool.h"

#ifdef CUSCOPE_HAVE_RECORD

/* What a loop does each time: launch; launch then copy 4 bytes back; launch then synchronize. */
enum { CAL_LAUNCH, CAL_COPY, CAL_SYNC, CAL_NKINDS };
/* A loop of waits runs launches / CAL_WAIT_DIVISOR times (a wait takes several launches' time);
 * a copy loop answers CAL_NO_COPY where the driver cannot copy back. */
#define CAL_WAIT_DIVISOR 8
#define CAL_NO_COPY	 (-2)

/* The loops of a round: the first in the bare process, the others in the recorded one. */
enum { CAL_NONE, CAL_OFF, CAL_KERNELS, CAL_EMPTY_CB, CAL_ALL, CAL_NMODES };

static const char *const mode_key[CAL_NMODES] = {"none", "attached", "kernel_records",
						 "empty_callbacks", "all"};
static const int mode_switch[CAL_NMODES] = {-1, CS_CALIBRATE_OFF, CS_CALIBRATE_KERNELS,
					    CS_CALIBRATE_EMPTY_CALLBACKS, CS_CALIBRATE_ALL};
/* The parts of the cost: the keys of added_wall_ns, each the difference of two modes. */
static const struct {
	const char *key;
	int hi, lo;
} parts[] = {
	{"attached", CAL_OFF, CAL_NONE},
	{"kernel_records", CAL_KERNELS, CAL_OFF},
	{"other_kinds_and_callbacks", CAL_EMPTY_CB, CAL_KERNELS},
	{"cuscope_code", CAL_ALL, CAL_EMPTY_CB},
};
#define CAL_NPARTS (int)(sizeof(parts) / sizeof(parts[0]))

#define CAL_MAX_ROUNDS CLI_CALIBRATE_MAX_ROUNDS
#define CAL_SYNC_EVERY 256 /* launches between waits: the queue never fills */

/* What a measuring process says once it is ready, and in answer to a loop. */
struct hello {
	int ok;
	char why[256];
	char device[128];
};
struct command {
	int mode; /* enum; -1: exit */
	int launches;
	int kind; /* CAL_LAUNCH, CAL_COPY, CAL_SYNC */
};
struct answer {
	int rc;		  /* CUDA error of the loop, 0 */
	double wall, cpu; /* ns per launch */
};

/* An empty kernel, as PTX the driver compiles for whatever GPU it finds. */
static const char empty_ptx[] = ".version 6.0\n"
				".target sm_50\n"
				".address_size 64\n"
				".visible .entry cs_calibrate_empty()\n"
				"{\n"
				"\tret;\n"
				"}\n";

/* The driver calls used, by symbol (no CUDA headers nor libcuda at link time). */
struct drv {
	int (*init)(unsigned);
	int (*device_get)(int *, int);
	int (*device_name)(char *, int, int);
	int (*ctx_retain)(void **, int);
	int (*ctx_set)(void *);
	int (*module_load)(void **, const void *);
	int (*function_get)(void **, void *, const char *);
	int (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
		      void *, void **, void **);
	int (*sync)(void);
	int (*mem_alloc)(unsigned long long *, size_t);
	int (*copy_dtoh)(void *, unsigned long long, size_t);
};

static double now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One loop of n launches of kind (each followed by a copy back from dev or a synchronize): its
 * wall and process CPU time per iteration. 0, or the failing call's result. */
static int loop(const struct drv *d, void *fn, int kind, unsigned long long dev, int n,
		double *wall, double *cpu)
{
	double w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID), w1, c1;
	int rc, value = 0;

	for (int i = 0; i < n; i++) {
		rc = d->launch(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
		if (rc)
			return rc;
		if (kind == CAL_COPY)
			rc = dev ? d->copy_dtoh(&value, dev, sizeof(value)) : CAL_NO_COPY;
		else if (kind == CAL_SYNC || i % CAL_SYNC_EVERY == CAL_SYNC_EVERY - 1)
			rc = d->sync();
		if (rc)
			return rc;
	}
	w1 = now_ns(CLOCK_MONOTONIC);
	c1 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	if (wall)
		*wall = (w1 - w0) / n;
	if (cpu)
		*cpu = (c1 - c0) / n;
	return d->sync();
}

static int load_driver(struct drv *d, char *why, size_t cap)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	struct {
		const char *name;
		void **slot;
		int optional; /* the copies are for the waits' loops alone, skipped without them */
	} syms[] = {
		{"cuInit", (void **)&d->init, 0},
		{"cuDeviceGet", (void **)&d->device_get, 0},
		{"cuDeviceGetName", (void **)&d->device_name, 0},
		{"cuDevicePrimaryCtxRetain", (void **)&d->ctx_retain, 0},
		{"cuCtxSetCurrent", (void **)&d->ctx_set, 0},
		{"cuModuleLoadData", (void **)&d->module_load, 0},
		{"cuModuleGetFunction", (void **)&d->function_get, 0},
		{"cuLaunchKernel", (void **)&d->launch, 0},
		{"cuCtxSynchronize", (void **)&d->sync, 0},
		{"cuMemAlloc_v2", (void **)&d->mem_alloc, 1},
		{"cuMemcpyDtoH_v2", (void **)&d->copy_dtoh, 1},
	};

	if (!h) {
		snprintf(why, cap, "cannot load the CUDA driver (libcuda.so.1)");
		return -1;
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		*syms[i].slot = dlsym(h, syms[i].name);
		if (!*syms[i].slot && !syms[i].optional) {
			snprintf(why, cap, "the CUDA driver has no %s", syms[i].name);
			return -1;
		}
	}
	return 0;
}

/* The median of a mode's rounds (v stays in round order: the modes are paired by round). */
static double median(const double *v, int n)
{
	double s[CAL_MAX_ROUNDS];

	memcpy(s, v, (size_t)n * sizeof(*s));
	return cs_stat_median(s, n);
}

/* Median over the rounds of the difference of two modes, each round's with each round's. */
static double paired(double (*wall)[CAL_MAX_ROUNDS], int hi, int lo, int n)
{
	double d[CAL_MAX_ROUNDS];

	for (int i = 0; i < n; i++)
		d[i] = wall[hi][i] - wall[lo][i];
	return cs_stat_median(d, n);
}

static double round_ns(double v)
{
	return round(v * 10) / 10;
}

/* The META value from the rounds' loops (n rounds; wall and cpu in ns per launch). */
static cJSON *to_json(const char *device, int n, int launches, double (*wall)[CAL_MAX_ROUNDS],
		      double (*cpu)[CAL_MAX_ROUNDS])
{
	cJSON *root = cJSON_CreateObject(), *w, *c, *added, *range;
	double lo = INFINITY, hi = -INFINITY;

	if (!root)
		return NULL;
	for (int i = 0; i < n; i++) {
		lo = fmin(lo, wall[CAL_ALL][i] - wall[CAL_NONE][i]);
		hi = fmax(hi, wall[CAL_ALL][i] - wall[CAL_NONE][i]);
	}
	cJSON_AddNumberToObject(root, "version", CS_LAUNCH_COST_VERSION);
	cJSON_AddNumberToObject(root, "ns_per_launch",
				round_ns(fmax(0, paired(wall, CAL_ALL, CAL_NONE, n))));
	range = cJSON_AddArrayToObject(root, "ns_per_launch_range");
	cJSON_AddItemToArray(range, cJSON_CreateNumber(round_ns(lo)));
	cJSON_AddItemToArray(range, cJSON_CreateNumber(round_ns(hi)));
	cJSON_AddStringToObject(root, "device", device);
	cJSON_AddStringToObject(
		root, "method",
		"cuLaunchKernel of an empty kernel, a wait every 256 launches; a "
		"process without and one with the injection library, loops "
		"alternating on one CPU; wall time per launch, median over the rounds "
		"of the difference within a round");
	cJSON_AddNumberToObject(root, "launches_per_round", launches);
	cJSON_AddNumberToObject(root, "rounds", n);
	w = cJSON_AddObjectToObject(root, "wall_ns");
	c = cJSON_AddObjectToObject(root, "process_cpu_ns");
	for (int m = 0; m < CAL_NMODES; m++) {
		cJSON_AddNumberToObject(w, mode_key[m], round_ns(median(wall[m], n)));
		cJSON_AddNumberToObject(c, mode_key[m], round_ns(median(cpu[m], n)));
	}
	added = cJSON_AddObjectToObject(root, "added_wall_ns");
	for (int k = 0; k < CAL_NPARTS; k++)
		cJSON_AddNumberToObject(added, parts[k].key,
					round_ns(paired(wall, parts[k].hi, parts[k].lo, n)));
	if (!w || !c || !added || !range) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

/*
 * Add the waits' loops to the value: "waits": {"iterations": n, "copy": {...}, "sync": {...}}, each
 * with its loops' median wall time per iteration ("wall_ns": "none", "empty_callbacks") and
 * "added_ns": the median over the rounds of what CUPTI added to an iteration less what it added
 * to a launch in the same round (the time it adds to the wait itself). 0 or -1 (no memory).
 */
static int add_waits(cJSON *root, int n, int iterations, double (*wall)[CAL_MAX_ROUNDS],
		     double (*waits)[2][CAL_MAX_ROUNDS])
{
	static const char *const key[CAL_NKINDS - 1] = {"copy", "sync"};
	cJSON *w = cJSON_AddObjectToObject(root, "waits");

	if (!w || !cJSON_AddNumberToObject(w, "iterations", iterations) ||
	    !cJSON_AddStringToObject(
		    w, "method",
		    "a launch of an empty kernel then a wait for it (cuMemcpyDtoH of "
		    "4 bytes, cuCtxSynchronize), no profiler and CUPTI with the "
		    "callbacks returning at once; added_ns: the difference per "
		    "iteration less the launch loops' in the same round, median over "
		    "the rounds"))
		return -1;
	for (int k = 0; k < CAL_NKINDS - 1; k++) {
		cJSON *o = cJSON_AddObjectToObject(w, key[k]), *ww;
		double d[CAL_MAX_ROUNDS];

		if (!o || !(ww = cJSON_AddObjectToObject(o, "wall_ns")))
			return -1;
		for (int r = 0; r < n; r++)
			d[r] = (waits[k][1][r] - waits[k][0][r]) -
			       (wall[CAL_EMPTY_CB][r] - wall[CAL_NONE][r]);
		if (!cJSON_AddNumberToObject(ww, "none", round_ns(median(waits[k][0], n))) ||
		    !cJSON_AddNumberToObject(ww, "empty_callbacks",
					     round_ns(median(waits[k][1], n))) ||
		    !cJSON_AddNumberToObject(o, "added_ns", round_ns(cs_stat_median(d, n))))
			return -1;
	}
	return 0;
}

/* The signals that end a job from the terminal or by kill: while the measurement runs, they end it
 * (the measuring processes take their default action) and not cuscope, which still has a trace to
 * write. */
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define NSTOP (sizeof(stop_signals) / sizeof(stop_signals[0]))

/* Keep the calling thread on cpu (-1: unknown, left as it is). */
static void pin_to(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* Read (out 0) or write (out 1) n bytes through a pipe before the deadline (CLOCK_MONOTONIC ns):
 * 0, or -1 (timed out, closed, the other end gone). */
static int pipe_io(int fd, void *buf, size_t n, double deadline, int out)
{
	char *p = buf;

	while (n > 0) {
		struct pollfd pfd = {fd, out ? POLLOUT : POLLIN, 0};
		double left = deadline - now_ns(CLOCK_MONOTONIC);
		ssize_t k;

		if (left <= 0)
			return -1;
		k = poll(&pfd, 1, (int)(left / 1e6) + 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		k = out ? write(fd, p, n) : read(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int read_full(int fd, void *buf, size_t n, double deadline)
{
	return pipe_io(fd, buf, n, deadline, 0);
}

/* A message of a few bytes: a pipe takes it at once unless the reader is gone. */
static int write_full(int fd, void *buf, size_t n)
{
	return pipe_io(fd, buf, n, now_ns(CLOCK_MONOTONIC) + 60e9, 1);
}

/*
 * A measuring process: set up, say so, then run the loops it is told to until told to exit. lib
 * NULL: the bare process. cpu: where its launching thread runs.
 */
static void worker_main(int in, int out, const char *lib, int cpu)
{
	struct hello h;
	struct command c;
	struct drv d;
	void *ctx = NULL, *mod = NULL, *fn = NULL;
	unsigned long long buf = 0;
	int (*init)(void) = NULL, (*sw)(int) = NULL, dev = 0, rc;

	memset(&h, 0, sizeof(h));
	if (!lib) {
		/* the bare process never has CUPTI, whatever the caller's environment holds */
		unsetenv("CUDA_INJECTION64_PATH");
		unsetenv("NVTX_INJECTION64_PATH");
	}
	if (load_driver(&d, h.why, sizeof(h.why)))
		goto say;
	if ((rc = d.init(0)) || (rc = d.device_get(&dev, 0))) {
		snprintf(h.why, sizeof(h.why), "no CUDA device (cuInit or cuDeviceGet: error %d)",
			 rc);
		goto say;
	}
	d.device_name(h.device, (int)sizeof(h.device) - 1, dev);
	if ((rc = d.ctx_retain(&ctx, dev)) || (rc = d.ctx_set(ctx)) ||
	    (rc = d.module_load(&mod, empty_ptx)) ||
	    (rc = d.function_get(&fn, mod, "cs_calibrate_empty"))) {
		snprintf(h.why, sizeof(h.why), "cannot load a kernel on %s (CUDA error %d)",
			 h.device, rc);
		goto say;
	}
	/* the device integer the copies read back; without it the copy loops answer an error */
	if (!d.mem_alloc || !d.copy_dtoh || d.mem_alloc(&buf, sizeof(int)))
		buf = 0;
	if (lib) {
		void *inj = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

		init = inj ? (int (*)(void))dlsym(inj, "InitializeInjection") : NULL;
		sw = inj ? (int (*)(int))dlsym(inj, CS_CALIBRATE_SYMBOL) : NULL;
		if (!init || !sw) {
			const char *e = dlerror();

			snprintf(h.why, sizeof(h.why), "cannot load the injection library '%s'%s%s",
				 lib, e ? ": " : "", e ? e : "");
			goto say;
		}
		init();
		if (sw(CS_CALIBRATE_OFF)) {
			snprintf(h.why, sizeof(h.why),
				 "the injection library did not start recording");
			goto say;
		}
	}
	/* after the driver's and the library's threads started: they run anywhere */
	pin_to(cpu);
	h.ok = 1;
say:
	if (write_full(out, &h, sizeof(h)) || !h.ok)
		_exit(0);
	while (read_full(in, &c, sizeof(c), now_ns(CLOCK_MONOTONIC) + 600e9) == 0 && c.mode >= 0) {
		struct answer a = {0, 0, 0};

		if (sw)
			sw(mode_switch[c.mode]);
		a.rc = loop(&d, fn, c.kind, buf, c.launches, &a.wall, &a.cpu);
		if (write_full(out, &a, sizeof(a)))
			break;
	}
	if (sw)
		sw(CS_CALIBRATE_OFF);
	/* no exit handlers: the injection library's would flush a spool that is thrown away */
	_exit(0);
}

struct worker {
	pid_t pid;
	int to, from; /* the parent's ends of its pipes */
};

/* Start a measuring process (the signals that stop a job end it: see cli_calibrate()). 0 or -1. */
static int worker_start(struct worker *w, const struct worker *other, const char *lib, int cpu)
{
	int down[2], up[2];

	if (pipe2(down, O_CLOEXEC))
		return -1;
	if (pipe2(up, O_CLOEXEC)) {
		close(down[0]);
		close(down[1]);
		return -1;
	}
	fflush(NULL);
	w->pid = fork();
	if (w->pid == 0) {
		for (size_t i = 0; i < NSTOP; i++)
			signal(stop_signals[i], SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		close(down[1]);
		close(up[0]);
		if (other && other->pid > 0) {
			close(other->to);
			close(other->from);
		}
		worker_main(down[0], up[1], lib, cpu);
	}
	close(down[0]);
	close(up[1]);
	w->to = down[1];
	w->from = up[0];
	if (w->pid < 0) {
		close(w->to);
		close(w->from);
		return -1;
	}
	return 0;
}

/* Tell it to exit (or kill it), and reap it. */
static void worker_stop(struct worker *w, int kill_it)
{
	struct command quit = {-1, 0, 0};
	int st;

	if (w->pid <= 0)
		return;
	if (kill_it || write_full(w->to, &quit, sizeof(quit)))
		kill(w->pid, SIGKILL);
	close(w->to);
	close(w->from);
	while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
		;
	w->pid = 0;
}

/* Run one loop in a worker; the answer, or -1 (why said). */
static int run_loop_in(struct worker *w, int mode, int kind, int launches, double deadline,
		       struct answer *a, const char *device, char *why, size_t cap)
{
	struct command c = {mode, launches, kind};

	if (write_full(w->to, &c, sizeof(c)) || read_full(w->from, a, sizeof(*a), deadline)) {
		a->rc = 0; /* no answer: not a CUDA error (the caller tells them apart) */
		snprintf(why, cap,
			 now_ns(CLOCK_MONOTONIC) >= deadline
				 ? "the measurement took too long"
				 : "a measuring process ended before its loops");
		return -1;
	}
	if (a->rc) {
		snprintf(why, cap, "a %s on %s failed (CUDA error %d)",
			 kind == CAL_LAUNCH ? "launch of an empty kernel"
			 : kind == CAL_COPY ? "copy of 4 bytes after a launch"
					    : "synchronize after a launch",
			 device, a->rc);
		return -1;
	}
	return 0;
}

cJSON *cli_calibrate(const struct cli_calibrate_opts *o, char *why, size_t cap)
{
	static double wall[CAL_NMODES][CAL_MAX_ROUNDS], cpu[CAL_NMODES][CAL_MAX_ROUNDS];
	static double wait_wall[CAL_NKINDS - 1][2][CAL_MAX_ROUNDS];
	char spool[PATH_MAX], *opts = NULL;
	struct worker bare = {0, -1, -1}, rec = {0, -1, -1};
	struct hello hb, hr;
	struct answer a;
	struct sigaction ign, old[NSTOP], old_pipe;
	double deadline = now_ns(CLOCK_MONOTONIC) + o->timeout_s * 1e9;
	int rounds = o->rounds < CAL_MAX_ROUNDS ? o->rounds : CAL_MAX_ROUNDS, failed = 1;
	int waits_n = o->launches / CAL_WAIT_DIVISOR + 1, waits_ok = 1;
	int at = sched_getcpu();
	cs_progress *pg = NULL;
	cJSON *out = NULL;

	snprintf(spool, sizeof(spool), "%s/.cuscope-calibrate-XXXXXX", o->tmp_dir);
	if (!mkdtemp(spool)) {
		snprintf(why, cap, "cannot create a directory in '%s': %s", o->tmp_dir,
			 strerror(errno));
		return NULL;
	}
	opts = malloc(strlen(o->options) + 64);
	if (!opts) {
		snprintf(why, cap, "out of memory");
		cli_remove_tree(spool);
		return NULL;
	}
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	for (size_t i = 0; i < NSTOP; i++)
		sigaction(stop_signals[i], &ign, &old[i]);
	/* a measuring process that died makes the next command to it fail, not end cuscope (record
	 * runs with the SIGPIPE disposition it inherited) */
	sigaction(SIGPIPE, &ign, &old_pipe);
	/*
	 * The environment both processes start with: the driver must not load the library at cuInit
	 * (the recorded process attaches it itself), and the library writes its spool file into a
	 * directory of its own that is thrown away.
	 */
	unsetenv("CUDA_INJECTION64_PATH");
	unsetenv("NVTX_INJECTION64_PATH");
	unsetenv(CS_ENV_RECORD_PID);
	setenv(CS_ENV_SPOOL_DIR, spool, 1);
	sprintf(opts, "%s,calibrate,quiet,no_signals", o->options);
	setenv(CS_ENV_OPTIONS, opts, 1);
	if (worker_start(&bare, NULL, NULL, at) || worker_start(&rec, &bare, o->lib, at)) {
		snprintf(why, cap, "cannot start a measuring process: %s", strerror(errno));
		goto out;
	}
	if (read_full(bare.from, &hb, sizeof(hb), deadline) ||
	    read_full(rec.from, &hr, sizeof(hr), deadline)) {
		snprintf(why, cap, "a measuring process did not start (in %.0f s)", o->timeout_s);
		goto out;
	}
	hb.why[sizeof(hb.why) - 1] = hr.why[sizeof(hr.why) - 1] = '\0';
	hb.device[sizeof(hb.device) - 1] = '\0';
	if (!hb.ok || !hr.ok) {
		snprintf(why, cap, "%s", !hb.ok ? hb.why : hr.why);
		goto out;
	}
	/* a progress line (a thread of its own: after the forks) on a terminal */
	pg = o->progress ? cs_progress_start(o->progress) : NULL;
	/* a round to warm every mode up, not counted; then the rounds, the order rotating */
	for (int r = -1; r < rounds; r++) {
		cs_progress_set(pg, r + 1, rounds + 1);
		for (int j = 0; j < CAL_NMODES; j++) {
			int m = (r + 1 + j) % CAL_NMODES;

			if (run_loop_in(m == CAL_NONE ? &bare : &rec, m, CAL_LAUNCH,
					r < 0 ? o->launches / 4 + 1 : o->launches, deadline, &a,
					hb.device, why, cap))
				goto out;
			if (r >= 0) {
				wall[m][r] = a.wall;
				cpu[m][r] = a.cpu;
			}
		}
		/* the waits: no profiler and CUPTI's part, in an order alternating by round; a
		 * wait that fails (its process answered) leaves the launch's measurement whole,
		 * without the waits */
		for (int j = 0; waits_ok && j < 2 * (CAL_NKINDS - 1); j++) {
			int kind = 1 + j / 2, m = (j + r) % 2 ? CAL_EMPTY_CB : CAL_NONE;

			if (run_loop_in(m == CAL_NONE ? &bare : &rec, m, kind, waits_n, deadline,
					&a, hb.device, why, cap)) {
				if (!a.rc)
					goto out;
				waits_ok = 0;
				why[0] = '\0';
				break;
			}
			if (r >= 0)
				wait_wall[kind - 1][m == CAL_NONE ? 0 : 1][r] = a.wall;
		}
	}
	failed = 0;
	out = to_json(hb.device, rounds, o->launches, wall, cpu);
	if (out && waits_ok && add_waits(out, rounds, waits_n, wall, wait_wall)) {
		cJSON_Delete(out);
		out = NULL;
	}
	if (!out)
		snprintf(why, cap, "out of memory");
out:
	cs_progress_end(pg);
	worker_stop(&bare, failed);
	worker_stop(&rec, failed);
	for (size_t i = 0; i < NSTOP; i++)
		sigaction(stop_signals[i], &old[i], NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	unsetenv(CS_ENV_SPOOL_DIR);
	unsetenv(CS_ENV_OPTIONS);
	free(opts);
	cli_remove_tree(spool);
	return out;
}

/*
 * The bare launch alone (the host-speed probe of record, host_probe.c): a process without a
 * profiler runs one loop of launches to warm up, then `loops` loops of `launches`; their wall time
 * per launch in wall[0..loops). The caller's signals are left as they are (nothing to keep: no
 * trace is being written). 0, or -1 with why set.
 */
int cli_bare_launch_loops(int loops, int launches, double timeout_s, double *wall, char *device,
			  size_t dcap, char *why, size_t cap)
{
	struct worker bare = {0, -1, -1};
	struct hello h;
	struct answer a;
	struct sigaction ign, old_pipe;
	double deadline = now_ns(CLOCK_MONOTONIC) + timeout_s * 1e9;
	int failed = 1;

	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, &old_pipe);
	if (worker_start(&bare, NULL, NULL, -1)) {
		snprintf(why, cap, "cannot start a measuring process: %s", strerror(errno));
		goto out;
	}
	if (read_full(bare.from, &h, sizeof(h), deadline)) {
		snprintf(why, cap, "the measuring process did not start (in %.0f s)", timeout_s);
		goto out;
	}
	h.why[sizeof(h.why) - 1] = h.device[sizeof(h.device) - 1] = '\0';
	if (!h.ok) {
		snprintf(why, cap, "%s", h.why);
		goto out;
	}
	snprintf(device, dcap, "%s", h.device);
	for (int r = -1; r < loops; r++) {
		if (run_loop_in(&bare, CAL_NONE, CAL_LAUNCH, r < 0 ? launches / 4 + 1 : launches,
				deadline, &a, h.device, why, cap))
			goto out;
		if (r >= 0)
			wall[r] = a.wall;
	}
	failed = 0;
out:
	worker_stop(&bare, failed);
	sigaction(SIGPIPE, &old_pipe, NULL);
	return failed ? -1 : 0;
}

/* ---- its text ---- */

void cli_calibrate_print(const cJSON *j)
{
	static const char *const labels[CAL_NMODES] = {
		"no profiler", "CUPTI attached, nothing enabled", "CUPTI's kernel records alone",
		"everything, callbacks returning at once", "cuscope record"};
	const cJSON *wall = cJSON_GetObjectItemCaseSensitive(j, "wall_ns");
	const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(j, "process_cpu_ns");
	const cJSON *added = cJSON_GetObjectItemCaseSensitive(j, "added_wall_ns");
	const cJSON *range = cJSON_GetObjectItemCaseSensitive(j, "ns_per_launch_range");
	const cJSON *p;

#define NUM(o, k) cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive((o), (k)))
	printf("%s: %d rounds of %d launches of an empty kernel\n\n",
	       cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "device")),
	       (int)NUM(j, "rounds"), (int)NUM(j, "launches_per_round"));
	printf("%-42s %10s %15s\n", "mode", "wall us", "process CPU us");
	for (int m = 0; m < CAL_NMODES; m++)
		printf("%-42s %10.3f %15.3f\n", labels[m], NUM(wall, mode_key[m]) / 1e3,
		       NUM(cpu, mode_key[m]) / 1e3);
	printf("\nrecording adds %.3f us per launch (rounds %.3f..%.3f); per part, the median over "
	       "the rounds:\n",
	       NUM(j, "ns_per_launch") / 1e3,
	       cJSON_GetNumberValue(cJSON_GetArrayItem(range, 0)) / 1e3,
	       cJSON_GetNumberValue(cJSON_GetArrayItem(range, 1)) / 1e3);
	cJSON_ArrayForEach(p, added)
	{
		printf("  %-40s %+10.3f\n", cs_launch_cost_part_label(p->string),
		       cJSON_GetNumberValue(p) / 1e3);
	}
	{
		const cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "waits");
		static const char *const key[] = {"copy", "sync"};
		static const char *const label[] = {"a synchronous 4-byte copy back",
						    "a synchronize"};

		if (cJSON_IsObject(w)) {
			printf("\na launch then a wait, %d times (wall us per iteration):\n",
			       (int)NUM(w, "iterations"));
			for (int k = 0; k < 2; k++) {
				const cJSON *o = cJSON_GetObjectItemCaseSensitive(w, key[k]);
				const cJSON *ww = cJSON_GetObjectItemCaseSensitive(o, "wall_ns");

				printf("  %-32s %8.3f without, %8.3f with CUPTI: %+.3f us a wait\n",
				       label[k], NUM(ww, "none") / 1e3,
				       NUM(ww, "empty_callbacks") / 1e3, NUM(o, "added_ns") / 1e3);
			}
		}
	}
#undef NUM
}

#endif
