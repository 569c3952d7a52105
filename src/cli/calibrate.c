/*
 * calibrate.c - what recording costs a kernel launch on this machine: `cuscope calibrate`, and the
 * measurement `cuscope record` makes after the program ends (stored in META launch_cost,
 * cuscope/launch_cost.h; docs/performance.md has what it measured on the H200).
 *
 * A forked process of its own (so that nothing of CUDA or CUPTI stays in cuscope's) loads the
 * driver, runs loops of launches of an empty kernel (cuLaunchKernel, one block of one thread,
 * compiled from PTX by the driver) and times each loop's wall time and process CPU time:
 *   - first with no profiler: CUPTI is not loaded yet;
 *   - then it loads the injection library with the recording's options, as the driver would for
 *     the program, calls its InitializeInjection() and switches it round by round between CUPTI
 *     attached with nothing enabled, CUPTI's kernel records alone, and everything the options
 *     record (cuscope_calibrate_switch()); the order of the three rotates every round.
 * The launching thread is kept on one CPU throughout (the library's own threads are not).
 * What recording costs a launch is the median loop with everything on less the median loop with
 * no profiler; the switched modes, paired round by round, split it into CUPTI being attached, its
 * kernel records, and the rest (callbacks, other activity kinds, cuscope's own code).
 * The process writes its measurements to a pipe; the parent kills it when it runs past its time.
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
#include "cuscope/launch_cost.h"
#include "cuscope/spool.h"

#ifdef CUSCOPE_HAVE_RECORD

enum { CAL_NONE, CAL_OFF, CAL_KERNELS, CAL_ALL, CAL_NMODES };

static const char *const mode_key[CAL_NMODES] = {"none", "attached", "kernel_records", "all"};

#define CAL_MAX_ROUNDS	64
#define CAL_NONE_ROUNDS 5
#define CAL_SYNC_EVERY	256 /* launches between waits: the queue never fills */

/* What the measuring process sends back. */
struct cal_raw {
	int ok;
	char why[256];
	char device[128];
	int rounds[CAL_NMODES];
	int launches;
	double wall[CAL_NMODES][CAL_MAX_ROUNDS]; /* ns per launch */
	double cpu[CAL_NMODES][CAL_MAX_ROUNDS];
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
};

static double now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One loop of n launches: its wall and process CPU time per launch. 0, or the failing call's
 * result. */
static int loop(const struct drv *d, void *fn, int n, double *wall, double *cpu)
{
	double w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID), w1, c1;
	int rc;

	for (int i = 0; i < n; i++) {
		rc = d->launch(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
		if (rc)
			return rc;
		if (i % CAL_SYNC_EVERY == CAL_SYNC_EVERY - 1 && (rc = d->sync()))
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
	} syms[] = {
		{"cuInit", (void **)&d->init},
		{"cuDeviceGet", (void **)&d->device_get},
		{"cuDeviceGetName", (void **)&d->device_name},
		{"cuDevicePrimaryCtxRetain", (void **)&d->ctx_retain},
		{"cuCtxSetCurrent", (void **)&d->ctx_set},
		{"cuModuleLoadData", (void **)&d->module_load},
		{"cuModuleGetFunction", (void **)&d->function_get},
		{"cuLaunchKernel", (void **)&d->launch},
		{"cuCtxSynchronize", (void **)&d->sync},
	};

	if (!h) {
		snprintf(why, cap, "cannot load the CUDA driver (libcuda.so.1)");
		return -1;
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		*syms[i].slot = dlsym(h, syms[i].name);
		if (!*syms[i].slot) {
			snprintf(why, cap, "the CUDA driver has no %s", syms[i].name);
			return -1;
		}
	}
	return 0;
}

/* Keep the calling thread on the CPU it runs on (on), or let it run anywhere again (off). */
static void pin(int on)
{
	static cpu_set_t all;
	static int saved;
	cpu_set_t one;
	int cpu = sched_getcpu();

	if (!saved)
		saved = sched_getaffinity(0, sizeof(all), &all) == 0 ? 1 : -1;
	if (saved < 0)
		return;
	if (!on) {
		sched_setaffinity(0, sizeof(all), &all);
		return;
	}
	if (cpu < 0)
		return;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	sched_setaffinity(0, sizeof(one), &one);
}

/* The measuring process: fills r (r->ok on success, else r->why). */
static void measure(struct cal_raw *r, const char *lib, int rounds, int launches)
{
	static const int switched[] = {CAL_OFF, CAL_KERNELS, CAL_ALL};
	struct drv d;
	void *ctx = NULL, *mod = NULL, *fn = NULL, *inj;
	int (*init)(void), (*sw)(int), dev = 0, rc;

	if (load_driver(&d, r->why, sizeof(r->why)))
		return;
	if ((rc = d.init(0)) || (rc = d.device_get(&dev, 0))) {
		snprintf(r->why, sizeof(r->why), "no CUDA device (cuInit or cuDeviceGet: error %d)",
			 rc);
		return;
	}
	d.device_name(r->device, (int)sizeof(r->device) - 1, dev);
	if ((rc = d.ctx_retain(&ctx, dev)) || (rc = d.ctx_set(ctx)) ||
	    (rc = d.module_load(&mod, empty_ptx)) ||
	    (rc = d.function_get(&fn, mod, "cs_calibrate_empty"))) {
		snprintf(r->why, sizeof(r->why), "cannot load a kernel on %s (CUDA error %d)",
			 r->device, rc);
		return;
	}
	r->launches = launches;
	/* the launching thread stays on one CPU: moves between CPUs would add to some loops */
	pin(1);
	/* warm up the launch path, then the loops with no profiler */
	if ((rc = loop(&d, fn, launches / 4 + 1, NULL, NULL)))
		goto launch_failed;
	for (int i = 0; i < CAL_NONE_ROUNDS; i++) {
		if ((rc = loop(&d, fn, launches, &r->wall[CAL_NONE][i], &r->cpu[CAL_NONE][i])))
			goto launch_failed;
		r->rounds[CAL_NONE]++;
	}
	inj = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	init = inj ? (int (*)(void))dlsym(inj, "InitializeInjection") : NULL;
	sw = inj ? (int (*)(int))dlsym(inj, CS_CALIBRATE_SYMBOL) : NULL;
	if (!init || !sw) {
		const char *e = dlerror();

		snprintf(r->why, sizeof(r->why), "cannot load the injection library '%s'%s%s", lib,
			 e ? ": " : "", e ? e : "");
		return;
	}
	/* the library's threads (its flush thread) may run on any CPU, as in the program */
	pin(0);
	init();
	pin(1);
	if (sw(CS_CALIBRATE_ALL)) {
		snprintf(r->why, sizeof(r->why), "the injection library did not start recording");
		return;
	}
	if ((rc = loop(&d, fn, launches / 4 + 1, NULL, NULL)))
		goto launch_failed;
	for (int i = 0; i < rounds; i++) {
		for (int j = 0; j < 3; j++) {
			int m = switched[(i + j) % 3];

			sw(m == CAL_OFF	      ? CS_CALIBRATE_OFF
			   : m == CAL_KERNELS ? CS_CALIBRATE_KERNELS
					      : CS_CALIBRATE_ALL);
			if ((rc = loop(&d, fn, launches, &r->wall[m][i], &r->cpu[m][i])))
				goto launch_failed;
			r->rounds[m]++;
		}
	}
	sw(CS_CALIBRATE_OFF);
	r->ok = 1;
	return;
launch_failed:
	snprintf(r->why, sizeof(r->why), "a launch of an empty kernel on %s failed (CUDA error %d)",
		 r->device, rc);
}

static void child_main(int fd, const char *lib, const char *options, const char *spool, int rounds,
		       int launches)
{
	struct cal_raw r;
	char *opts = malloc(strlen(options) + 64);
	const char *p = (const char *)&r;
	size_t left = sizeof(r);

	memset(&r, 0, sizeof(r));
	/* the driver must not load the library at cuInit: it is attached after the loops without */
	unsetenv("CUDA_INJECTION64_PATH");
	unsetenv("NVTX_INJECTION64_PATH");
	unsetenv(CS_ENV_RECORD_PID);
	setenv(CS_ENV_SPOOL_DIR, spool, 1);
	if (opts) {
		sprintf(opts, "%s,calibrate,quiet,no_signals", options);
		setenv(CS_ENV_OPTIONS, opts, 1);
		measure(&r, lib, rounds, launches);
	} else {
		snprintf(r.why, sizeof(r.why), "out of memory");
	}
	while (left > 0) {
		ssize_t n = write(fd, p, left);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		p += n;
		left -= (size_t)n;
	}
	/* no exit handlers: the injection library's would flush a spool that is thrown away */
	_exit(0);
}

/* Read the child's struct within the deadline: 0, or -1 (timed out or short). */
static int read_raw(int fd, struct cal_raw *r, double timeout_s)
{
	char *p = (char *)r;
	size_t got = 0;
	double deadline = now_ns(CLOCK_MONOTONIC) + timeout_s * 1e9;

	while (got < sizeof(*r)) {
		struct pollfd pfd = {fd, POLLIN, 0};
		double left = deadline - now_ns(CLOCK_MONOTONIC);
		ssize_t n;

		if (left <= 0)
			return -1;
		n = poll(&pfd, 1, (int)(left / 1e6) + 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		n = read(fd, p + got, sizeof(*r) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
	double s[CAL_MAX_ROUNDS];

	if (n <= 0)
		return 0;
	memcpy(s, v, (size_t)n * sizeof(*s));
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* Median over the rounds of a[i] - b[i] (modes measured in the same round). */
static double paired(const double *a, const double *b, int n)
{
	double d[CAL_MAX_ROUNDS];

	for (int i = 0; i < n; i++)
		d[i] = a[i] - b[i];
	return median(d, n);
}

static double round_ns(double v)
{
	return round(v * 10) / 10;
}

/* The META value from the measurements. */
static cJSON *to_json(const struct cal_raw *r)
{
	cJSON *root = cJSON_CreateObject(), *wall, *cpu, *added, *range;
	int n = r->rounds[CAL_ALL];
	double none = median(r->wall[CAL_NONE], r->rounds[CAL_NONE]);
	double lo = INFINITY, hi = -INFINITY;

	if (!root)
		return NULL;
	for (int i = 0; i < n; i++) {
		lo = fmin(lo, r->wall[CAL_ALL][i] - none);
		hi = fmax(hi, r->wall[CAL_ALL][i] - none);
	}
	cJSON_AddNumberToObject(root, "version", 1);
	cJSON_AddNumberToObject(root, "ns_per_launch",
				round_ns(fmax(0, median(r->wall[CAL_ALL], n) - none)));
	range = cJSON_AddArrayToObject(root, "ns_per_launch_range");
	cJSON_AddItemToArray(range, cJSON_CreateNumber(round_ns(lo)));
	cJSON_AddItemToArray(range, cJSON_CreateNumber(round_ns(hi)));
	cJSON_AddStringToObject(root, "device", r->device);
	cJSON_AddStringToObject(root, "method",
				"cuLaunchKernel of an empty kernel in a process of its own, a wait "
				"every 256 launches; wall time per launch, median of the rounds");
	cJSON_AddNumberToObject(root, "launches_per_round", r->launches);
	cJSON_AddNumberToObject(root, "rounds", n);
	wall = cJSON_AddObjectToObject(root, "wall_ns");
	cpu = cJSON_AddObjectToObject(root, "process_cpu_ns");
	for (int m = 0; m < CAL_NMODES; m++) {
		cJSON_AddNumberToObject(wall, mode_key[m],
					round_ns(median(r->wall[m], r->rounds[m])));
		cJSON_AddNumberToObject(cpu, mode_key[m],
					round_ns(median(r->cpu[m], r->rounds[m])));
	}
	/* the parts, each paired within its rounds but the first (none ran before CUPTI came) */
	added = cJSON_AddObjectToObject(root, "added_wall_ns");
	cJSON_AddNumberToObject(added, "attached",
				round_ns(median(r->wall[CAL_OFF], r->rounds[CAL_OFF]) - none));
	cJSON_AddNumberToObject(added, "kernel_records",
				round_ns(paired(r->wall[CAL_KERNELS], r->wall[CAL_OFF], n)));
	cJSON_AddNumberToObject(added, "rest",
				round_ns(paired(r->wall[CAL_ALL], r->wall[CAL_KERNELS], n)));
	if (!wall || !cpu || !added || !range) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

/* The signals that end a job from the terminal or by kill: while the measurement runs, they end it
 * (the measuring process takes their default action) and not cuscope, which still has a trace to
 * write. */
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define NSTOP (sizeof(stop_signals) / sizeof(stop_signals[0]))

cJSON *cli_calibrate(const struct cli_calibrate_opts *o, char *why, size_t cap)
{
	char spool[PATH_MAX];
	struct cal_raw *r = NULL;
	cJSON *out = NULL;
	int fds[2] = {-1, -1}, status = 0, rounds = o->rounds;
	struct sigaction ign, old[NSTOP];
	pid_t pid;

	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	for (size_t i = 0; i < NSTOP; i++)
		old[i].sa_handler = SIG_ERR; /* not replaced yet */

	if (rounds > CAL_MAX_ROUNDS)
		rounds = CAL_MAX_ROUNDS;
	snprintf(spool, sizeof(spool), "%s/.cuscope-calibrate-XXXXXX", o->tmp_dir);
	if (!mkdtemp(spool)) {
		snprintf(why, cap, "cannot create a directory in '%s': %s", o->tmp_dir,
			 strerror(errno));
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r || pipe2(fds, O_CLOEXEC)) {
		snprintf(why, cap, "%s", r ? strerror(errno) : "out of memory");
		goto out;
	}
	fflush(NULL);
	for (size_t i = 0; i < NSTOP; i++)
		sigaction(stop_signals[i], &ign, &old[i]);
	pid = fork();
	if (pid < 0) {
		snprintf(why, cap, "cannot fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0) {
		for (size_t i = 0; i < NSTOP; i++)
			signal(stop_signals[i], SIG_DFL);
		close(fds[0]);
		child_main(fds[1], o->lib, o->options, spool, rounds, o->launches);
	}
	close(fds[1]);
	fds[1] = -1;
	if (read_raw(fds[0], r, o->timeout_s)) {
		kill(pid, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
			snprintf(why, cap, "the measuring process died (signal %d)",
				 WTERMSIG(status));
		else
			snprintf(why, cap, "the measurement took longer than %.0f s", o->timeout_s);
		goto out;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	r->why[sizeof(r->why) - 1] = r->device[sizeof(r->device) - 1] = '\0';
	if (!r->ok) {
		snprintf(why, cap, "%s", r->why);
		goto out;
	}
	out = to_json(r);
	if (!out)
		snprintf(why, cap, "out of memory");
out:
	for (size_t i = 0; i < NSTOP; i++)
		if (old[i].sa_handler != SIG_ERR)
			sigaction(stop_signals[i], &old[i], NULL);
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	free(r);
	cli_remove_tree(spool);
	return out;
}

/* ---- cuscope calibrate ---- */

static const char calibrate_usage[] =
	"usage: cuscope calibrate [options]\n"
	"\n"
	"Measure what recording costs a kernel launch on this machine: loops of launches of an\n"
	"empty kernel on GPU 0, first with no profiler, then with cuscope's injection library\n"
	"switched between CUPTI attached and idle, CUPTI's kernel records alone, and everything\n"
	"'cuscope record' records, in turn. 'cuscope record' makes the same measurement after the\n"
	"program ends and stores it in the trace ('cuscope info' shows it).\n"
	"\n"
	"options:\n"
	"      --rounds N       rounds of each mode (default 9, at most 64)\n"
	"      --launches N     launches per loop (default 10000)\n"
	"      --no-backtrace   measure recording without host call stacks\n"
	"  -f, --format FORMAT  text (default) or json\n"
	"  -h, --help           show this help\n"
	"\n"
	"Development options of the injection library are taken from CUSCOPE_RECORD_EXTRA, as by\n"
	"'cuscope record'.\n";

static void print_text(const cJSON *j)
{
	static const char *const labels[CAL_NMODES] = {
		"no profiler", "CUPTI attached, nothing enabled", "CUPTI's kernel records alone",
		"cuscope record"};
	const cJSON *wall = cJSON_GetObjectItemCaseSensitive(j, "wall_ns");
	const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(j, "process_cpu_ns");
	const cJSON *added = cJSON_GetObjectItemCaseSensitive(j, "added_wall_ns");
	const cJSON *range = cJSON_GetObjectItemCaseSensitive(j, "ns_per_launch_range");

#define NUM(o, k) cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive((o), (k)))
	printf("%s: %d rounds of %d launches of an empty kernel\n\n",
	       cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "device")),
	       (int)NUM(j, "rounds"), (int)NUM(j, "launches_per_round"));
	printf("%-34s %12s %14s\n", "mode", "wall us", "process CPU us");
	for (int m = 0; m < CAL_NMODES; m++)
		printf("%-34s %12.3f %14.3f\n", labels[m], NUM(wall, mode_key[m]) / 1e3,
		       NUM(cpu, mode_key[m]) / 1e3);
	printf("\nrecording adds %.3f us per launch (rounds %.3f..%.3f): CUPTI attached %+.3f, "
	       "its kernel records %+.3f, the rest %+.3f\n",
	       NUM(j, "ns_per_launch") / 1e3,
	       cJSON_GetNumberValue(cJSON_GetArrayItem(range, 0)) / 1e3,
	       cJSON_GetNumberValue(cJSON_GetArrayItem(range, 1)) / 1e3,
	       NUM(added, "attached") / 1e3, NUM(added, "kernel_records") / 1e3,
	       NUM(added, "rest") / 1e3);
#undef NUM
}

int cmd_calibrate(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"rounds", required_argument, NULL, 'R'},
		{"launches", required_argument, NULL, 'L'},
		{"no-backtrace", no_argument, NULL, 'N'},
		{"format", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct cli_calibrate_opts o = {.rounds = 9, .launches = 10000, .timeout_s = 300};
	enum cli_format fmt = CLI_FORMAT_TEXT;
	int64_t v;
	int c, backtrace = 1, rc;
	char lib[PATH_MAX], why[300], *options;
	const char *tmp = getenv("TMPDIR");
	cJSON *j;

	while ((c = cli_getopt(argc, argv, "f:h", longopts)) != -1) {
		switch (c) {
		case 'R':
			if (cli_parse_int("calibrate", "--rounds", optarg, 1, CAL_MAX_ROUNDS, &v))
				return CLI_EXIT_USAGE;
			o.rounds = (int)v;
			break;
		case 'L':
			if (cli_parse_int("calibrate", "--launches", optarg, 256, 10000000, &v))
				return CLI_EXIT_USAGE;
			o.launches = (int)v;
			break;
		case 'N':
			backtrace = 0;
			break;
		case 'f':
			if (cli_parse_format("calibrate", optarg, &fmt))
				return CLI_EXIT_USAGE;
			break;
		case 'h':
			fputs(calibrate_usage, stdout);
			return cli_finish_output(CLI_EXIT_OK);
		default:
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return cli_usage_error("calibrate", "unexpected argument '%s'", argv[optind]);
	if (cli_find_inject_lib(lib, sizeof(lib))) {
		cli_error("cannot find libcuscope-inject.so (set CUSCOPE_INJECT_LIB to its path)");
		return CLI_EXIT_USAGE;
	}
	options = cli_record_options(backtrace);
	if (!options) {
		cli_error("out of memory");
		return CLI_EXIT_USAGE;
	}
	o.lib = lib;
	o.options = options;
	o.tmp_dir = tmp && *tmp ? tmp : "/tmp";
	if (isatty(2))
		fprintf(stderr, "cuscope: measuring (%d rounds)...", o.rounds);
	j = cli_calibrate(&o, why, sizeof(why));
	if (isatty(2))
		fputs("\r\033[K", stderr);
	free(options);
	if (!j) {
		cli_error("cannot measure the cost of recording: %s", why);
		return CLI_EXIT_USAGE;
	}
	if (fmt == CLI_FORMAT_JSON) {
		rc = cli_json_print(j);
	} else {
		print_text(j);
		rc = CLI_EXIT_OK;
	}
	cJSON_Delete(j);
	return cli_finish_output(rc);
}

#endif
