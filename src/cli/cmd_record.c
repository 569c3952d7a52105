/*
 * cmd_record.c - `cuscope record`: run a CUDA program under the injection library and write its
 * trace.
 *
 * record points CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH at libcuscope-inject.so, gives
 * every process of the job one spool directory beside the output, runs the command, forwards the
 * signals sent to it (not those the terminal sends to the whole process group, which the program
 * gets anyway), waits for the job's processes (it is their subreaper, so spawned workers and ranks
 * are waited for too, for a bounded time), imports the spool files into one trace and returns the
 * program's exit status (128+signal when killed).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cuscope/gpu_links.h"
#include "cuscope/import.h"
#include "cuscope/host_speed.h"
#include "cuscope/launch_cost.h"
#include "cuscope/spool.h"
#include "cuscope/strbuf.h"

#ifdef CUSCOPE_HAVE_RECORD

#define INJECT_LIB_NAME "libcuscope-inject.so"

static const char record_usage[] =
	"usage: cuscope record [options] [--] COMMAND [ARGS...]\n"
	"\n"
	"Run COMMAND with CUDA activity recorded, and write the trace of every CUDA process of the "
	"job\n"
	"(forked, spawned, torchrun ranks) into one file. Returns COMMAND's exit status.\n"
	"\n"
	"options:\n"
	"  -o, --output FILE        trace to write (default cuscope.db)\n"
	"      --force              overwrite FILE if it exists\n"
	"      --api=default|all    all: record every CUDA runtime and driver API call (large "
	"traces);\n"
	"                           default: launches, copies, waits, allocations, profiler "
	"start/stop\n"
	"      --delay SEC          record only after SEC seconds\n"
	"      --duration SEC       record for SEC seconds (after the delay)\n"
	"      --capture=all|profiler-api|nvtx:PATTERN\n"
	"                           profiler-api: record only between cudaProfilerStart and\n"
	"                           cudaProfilerStop (torch.cuda.profiler.start()/stop());\n"
	"                           nvtx:PATTERN: only inside NVTX ranges whose text matches the\n"
	"                           shell pattern (e.g. 'nvtx:step*'); GPU work is kept when it "
	"was\n"
	"                           launched inside the range\n"
	"      --size-limit SIZE    stop recording a process once its spool data reaches SIZE\n"
	"                           (e.g. 500M, 4G; default no limit); what is cut is counted as "
	"dropped\n"
	"      --ring SIZE|DURATION keep only the last SIZE (e.g. 2GiB, 512M) or DURATION (e.g. "
	"30s,\n"
	"                           5m, 2h; m is minutes) of each process's events, in bounded "
	"disk,\n"
	"                           for a job of any length; the trace holds that window, less "
	"the\n"
	"                           step cut at its start (docs/recording.md)\n"
	"      --backtrace          capture the host call stack (native and Python frames) at\n"
	"                           waits, copies, allocations and frees, and once per call site\n"
	"                           at kernel launches, so that findings name their lines (the\n"
	"                           default)\n"
	"      --no-backtrace       capture no host call stacks\n"
	"      --latency-timestamps record kernel queued/submitted times (costs about 3% of step "
	"time)\n"
	"      --cupti-buffers N    CUPTI device buffers per context, 3.2 MB each (default 8)\n"
	"      --wait SEC           after COMMAND exits, wait at most SEC seconds for the "
	"processes it\n"
	"                           started (default 10)\n"
	"      --dump-on TRIGGER    write a dump of the job (its trace so far, or the ring's "
	"window)\n"
	"                           when TRIGGER happens, and go on (repeat for several):\n"
	"                           signal=SIG: on signal SIG to this process (e.g. signal=USR2:\n"
	"                           kill -USR2 <record pid>), which is then not passed on;\n"
	"                           slow-step=K[:PATTERN]: when a step takes more than K times "
	"the\n"
	"                           median of the recent steps, steps being the NVTX ranges "
	"whose\n"
	"                           text matches PATTERN (default 'step*'); 'cuscope dump PID'\n"
	"                           dumps any recording (docs/recording.md)\n"
	"      --hang-after SEC     when a thread has waited for the GPU (or spun on a query) for "
	"SEC\n"
	"                           seconds and no GPU work has completed since, write a dump "
	"and a\n"
	"                           hang report beside the output (default 300; 0: never)\n"
	"      --keep-spool         keep the spool directory after the import\n"
	"      --no-calibrate       do not measure what recording costs a launch after COMMAND\n"
	"                           ends (about 3 s of empty-kernel launches on GPU 0; the\n"
	"                           trace keeps it for launch-starvation and 'cuscope info')\n"
	"      --no-host-probe      do not measure the host's speed before and after COMMAND\n"
	"                           (a fixed CPU workload and empty-kernel launches, about\n"
	"                           0.5 s each time; 'cuscope gate' compares host-bound runs\n"
	"                           at equal host speed with it)\n"
	"  -q, --quiet              no summary line\n"
	"  -h, --help               show this help\n"
	"\n"
	"The CUDA driver loads the injection library at cuInit through CUDA_INJECTION64_PATH, so "
	"record\n"
	"cannot run under another tool that sets it (Nsight Systems, another cuscope).\n";

struct record_opts {
	const char *output;
	const char *capture_nvtx; /* pattern, or NULL */
	int force, api_all, capture_profiler, latency, keep_spool, quiet, backtrace, calibrate;
	int host_probe;
	int dump_signal;	  /* --dump-on signal=SIG, 0 when none */
	double slow_step;	  /* --dump-on slow-step=K, 0 when none */
	double hang_after;	  /* --hang-after SEC, 0 when off */
	const char *step_pattern; /* its steps' NVTX pattern, NULL: step* */
	double delay, duration, wait_s;
	uint64_t size_limit;
	uint64_t ring_bytes, ring_ns; /* --ring: one of them */
	int64_t cupti_buffers;
};

static volatile sig_atomic_t child_pid;
static volatile sig_atomic_t dump_asked;

static void child_ended(int sig)
{
	(void)sig;
}

static void ask_dump(int sig)
{
	(void)sig;
	dump_asked = 1;
}

/* --dump-on slow-step=K[:PATTERN]: K above 1 (at most 1000); the pattern without a comma. */
static int parse_slow_step(const char *arg, double *k, const char **pattern)
{
	const char *v = arg + strlen("slow-step=");
	char *end;

	*k = strtod(v, &end);
	if (end == v || !(*k > 1.0) || *k > 1000 || (*end && *end != ':') ||
	    (*end == ':' && (!end[1] || strchr(end + 1, ','))))
		return cli_usage_error("record",
				       "invalid value '%s' for --dump-on (slow-step=K or "
				       "slow-step=K:PATTERN, K a number above 1, PATTERN without "
				       "commas)",
				       arg);
	*pattern = *end == ':' ? end + 1 : NULL;
	return 0;
}

/* --dump-on TRIGGER: signal=SIG (a name, with or without SIG, or a number), or
 * slow-step=K[:PATTERN]. */
static int parse_dump_on(const char *arg, int *sig, double *k, const char **pattern)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP},
		     {"WINCH", SIGWINCH}, {"PWR", SIGPWR},  {"URG", SIGURG}};
	const char *v;
	char *end;
	long n;

	if (!strncmp(arg, "slow-step=", 10))
		return parse_slow_step(arg, k, pattern);
	if (strncmp(arg, "signal=", 7))
		return cli_usage_error(
			"record", "invalid value '%s' for --dump-on (signal=SIG or slow-step=K)",
			arg);
	v = arg + 7;
	if (!strncmp(v, "SIG", 3))
		v += 3;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(v, names[i].name)) {
			*sig = names[i].sig;
			return 0;
		}
	n = strtol(v, &end, 10);
	if (*v && !*end && n > 0 && n < SIGRTMAX && n != SIGKILL && n != SIGSTOP &&
	    n != SIGCHLD && n != SIGINT && n != SIGTERM && n != SIGQUIT) {
		*sig = (int)n;
		return 0;
	}
	return cli_usage_error("record",
			       "invalid signal '%s' for --dump-on (USR1, USR2, HUP, WINCH, PWR, URG "
			       "or a number other than INT, TERM, QUIT, KILL, STOP, CHLD)",
			       arg + 7);
}

static void forward_signal(int sig, siginfo_t *info, void *ctx)
{
	(void)ctx;
	/* The terminal signals the whole foreground group: the program has it already. */
	if (info && info->si_code == SI_KERNEL)
		return;
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

static int parse_seconds(const char *opt, const char *arg, double *out)
{
	char *end;
	double v = strtod(arg, &end);

	if (end == arg || *end || v < 0 || v > 1e7)
		return cli_usage_error("record", "invalid value '%s' for %s", arg, opt);
	*out = v;
	return 0;
}

static int parse_size(const char *opt, const char *arg, uint64_t *out)
{
	char *end;
	double v = strtod(arg, &end);
	double mult = 1;

	if (end == arg || v <= 0)
		goto bad;
	switch (*end) {
	case 'k':
	case 'K':
		mult = 1024.0;
		end++;
		break;
	case 'm':
	case 'M':
		mult = 1024.0 * 1024;
		end++;
		break;
	case 'g':
	case 'G':
		mult = 1024.0 * 1024 * 1024;
		end++;
		break;
	case 't':
	case 'T':
		mult = 1024.0 * 1024 * 1024 * 1024;
		end++;
		break;
	}
	if (*end == 'i' || *end == 'B')
		end += *end == 'i' ? 1 : 0;
	if (*end == 'B')
		end++;
	if (*end)
		goto bad;
	*out = (uint64_t)(v * mult);
	return 0;
bad:
	return cli_usage_error("record", "invalid value '%s' for %s", arg, opt);
}

/* The smallest ring: its segments (a quarter) must hold many of the largest records (64 KiB). */
#define RING_MIN_BYTES (1ull << 20)
#define RING_MIN_NS    1000000000ull

/*
 * --ring SIZE|DURATION: a duration ends in s, m (minutes), min, h or d; a size in K, M, G or T,
 * with or without i and B (parse_size). Lower-case m is minutes, so 512m is not a size.
 */
static int parse_ring(const char *arg, uint64_t *bytes, uint64_t *ns)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = {{"s", 1e9}, {"m", 60e9}, {"min", 60e9}, {"h", 3600e9}, {"d", 86400e9}};
	char *end;
	double v = strtod(arg, &end);

	*bytes = *ns = 0;
	if (end == arg || !(v > 0) || v > 1e15)
		goto bad;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit) == 0) {
			if (v * units[i].ns < (double)RING_MIN_NS || v * units[i].ns > 1e7 * 1e9)
				return cli_usage_error("record",
						       "--ring %s: a duration ring must be from 1s "
						       "to 115d",
						       arg);
			*ns = (uint64_t)(v * units[i].ns);
			return 0;
		}
	}
	if (!*end || !strchr("KkMGgTt", *end))
		goto bad;
	if (parse_size("--ring", arg, bytes))
		return -1;
	if (*bytes < RING_MIN_BYTES)
		return cli_usage_error("record", "--ring %s: a size ring must be at least 1MiB",
				       arg);
	return 0;
bad:
	return cli_usage_error("record",
			       "invalid value '%s' for --ring: give a size (2GiB, 512M) or a "
			       "duration (30s, 5m, 2h)",
			       arg);
}

/* The injection library: $CUSCOPE_INJECT_LIB, beside the executable (build tree) or in its lib dir.
 */
static int find_inject_lib(char *out, size_t cap)
{
	static const char *const rel[] = {
		INJECT_LIB_NAME,
		"../lib/cuscope/" INJECT_LIB_NAME,
		"../lib/x86_64-linux-gnu/cuscope/" INJECT_LIB_NAME,
		"../lib64/cuscope/" INJECT_LIB_NAME,
	};
	const char *env = getenv("CUSCOPE_INJECT_LIB");
	char exe[PATH_MAX], dir[PATH_MAX];
	ssize_t n;

	if (env && *env) {
		snprintf(out, cap, "%s", env);
		return access(out, R_OK) == 0 ? 0 : -1;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = '\0';
	snprintf(dir, sizeof(dir), "%s", dirname(exe));
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		char cand[PATH_MAX + 64];

		snprintf(cand, sizeof(cand), "%s/%s", dir, rel[i]);
		if (access(cand, R_OK) == 0 && realpath(cand, out))
			return 0;
	}
	return -1;
}

int cli_find_inject_lib(char *out, size_t cap)
{
	if (find_inject_lib(out, cap) == 0)
		return 0;
	cli_error("cannot find %s (set CUSCOPE_INJECT_LIB to its path)", INJECT_LIB_NAME);
	return -1;
}

static uint64_t now_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double now_monotonic(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Reap the job's other processes (we are their subreaper) for at most wait_s seconds: 0 when
 * none is left, 1 when some still run. */
static int reap_descendants(double wait_s)
{
	double deadline = now_monotonic() + wait_s;

	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);

		if (p < 0 && errno == ECHILD)
			return 0;
		if (p > 0)
			continue;
		if (now_monotonic() >= deadline)
			return 1;
		usleep(20000);
	}
}

static void import_progress(uint64_t done, uint64_t total, void *arg)
{
	(void)arg;
	if (total)
		fprintf(stderr, "\rcuscope: importing %3d%%", (int)(done * 100 / total));
}

/* The slow-step notices of the processes ("slow.<pid>.<n>", slow_step.c): each one read, said,
 * removed and dumped (one dump for the notices found together). */
static void dump_slow_steps(const char *spool, const struct record_opts *o)
{
	DIR *d = opendir(spool);
	struct dirent *de;
	int found = 0;

	while (d && (de = readdir(d))) {
		char path[PATH_MAX + 300];
		unsigned long long dur = 0, median = 0;
		FILE *f;

		if (strncmp(de->d_name, "slow.", 5))
			continue;
		snprintf(path, sizeof(path), "%s/%s", spool, de->d_name);
		f = fopen(path, "r");
		if (f && fscanf(f, "%llu %llu", &dur, &median) == 2 && !o->quiet)
			cli_error("process %ld: a step took %.1f ms, %.1f times the median of the "
				  "recent steps (%.1f ms): dumping",
				  strtol(de->d_name + 5, NULL, 10), (double)dur / 1e6,
				  median ? (double)dur / (double)median : 0.0, (double)median / 1e6);
		if (f)
			fclose(f);
		unlink(path);
		found = 1;
	}
	if (d)
		closedir(d);
	if (found)
		cli_dump(spool, NULL, 0, 10.0, o->quiet, NULL, 0);
}

/* How long a hang notice waits for those of other processes that hang with it. */
#define HANG_SETTLE_MS 500

/* A process left a hang notice: dump, then write the hang report beside the dump (or the output)
 * as "<stem>.hang.txt" and show it on stderr. */
static void dump_hang(const char *spool, const char *command, const struct record_opts *o)
{
	char dump[PATH_MAX + 64] = "", txt[PATH_MAX + 80], line[512];
	const char *base;
	FILE *f;

	/* processes that hang together (ranks in one collective, a stream waiting for another
	 * process's event) begin their waits within moments of each other, and each writes its
	 * notice at its next flush period (200 ms): theirs are given SETTLE to come, so that one
	 * report covers them all (a program that ends meanwhile cuts the sleep short) */
	struct timespec settle = {0, HANG_SETTLE_MS * 1000 * 1000};

	nanosleep(&settle, NULL);
	if (!o->quiet)
		cli_error("a thread has waited for the GPU for over %g s and no GPU work has completed "
			  "since: dumping",
			  o->hang_after);
	cli_hang_native(spool); /* first: the threads are still where they wait */
	if (cli_dump(spool, NULL, 0, 10.0, o->quiet, dump, sizeof(dump)))
		dump[0] = '\0';
	base = dump[0] ? dump : o->output;
	snprintf(txt, sizeof(txt), "%.*s.hang.txt", cli_path_stem(base), base);
	f = fopen(txt, "w");
	if (!f) {
		cli_error("cannot write '%s': %s", txt, strerror(errno));
		cli_hang_report(stderr, spool, command, dump[0] ? dump : NULL);
		return;
	}
	cli_hang_report(f, spool, command, dump[0] ? dump : NULL);
	if (fclose(f) == 0 && !o->quiet && (f = fopen(txt, "r"))) {
		while (fgets(line, sizeof(line), f))
			fprintf(stderr, "cuscope: %s", line);
		fclose(f);
		cli_error("hang report written to '%s'", txt);
	}
}

/* Wait for the program; meanwhile, dump when asked by --dump-on's signal, a slow step's notice or
 * a hang notice (looked for every 200 ms, with slow-step or --hang-after). */
static void wait_program(pid_t pid, int *status, const char *spool, const char *command,
			 const struct record_opts *o)
{
	int poll = o->slow_step > 0 || o->hang_after > 0;
	struct sigaction chld, old_chld;

	/* the program's end interrupts the sleep below: no 200 ms added to every recording */
	memset(&chld, 0, sizeof(chld));
	chld.sa_handler = child_ended;
	sigemptyset(&chld.sa_mask);
	if (poll)
		sigaction(SIGCHLD, &chld, &old_chld);
	for (;;) {
		pid_t r = waitpid(pid, status, poll ? WNOHANG : 0);

		if (r == pid && WIFSTOPPED(*status)) {
			/* a stop for the hang report's stack reader, seen here first */
			cli_native_detach(pid, *status);
			continue;
		}
		if (r < 0 && errno == ECHILD && cli_native_reaped(pid, status))
			break; /* the stack reader's wait took the program's end */
		if (r == pid || (r < 0 && errno != EINTR))
			break;
		cli_native_release();
		if (dump_asked) {
			dump_asked = 0;
			cli_dump(spool, NULL, 0, 10.0, o->quiet, NULL, 0);
		}
		if (poll && r == 0) {
			struct timespec ts = {0, 200 * 1000 * 1000};
			int slow, hang;

			cli_notices(spool, &slow, &hang);
			if (slow && o->slow_step > 0)
				dump_slow_steps(spool, o);
			if (hang && o->hang_after > 0)
				dump_hang(spool, command, o);
			nanosleep(&ts, NULL);
		}
	}
	if (poll)
		sigaction(SIGCHLD, &old_chld, NULL);
}

static int check_environment(const char *lib)
{
	static const char *const vars[] = {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"};

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);

		if (!v || !*v)
			continue;
		if (strcmp(v, lib) == 0 || strstr(v, INJECT_LIB_NAME))
			cli_error(
				"%s is already set to cuscope's library: cuscope record cannot run "
				"inside another cuscope record",
				vars[i]);
		else
			cli_error("%s is already set to '%s' by another tool; unset it to record "
				  "with "
				  "cuscope",
				  vars[i], v);
		return CLI_EXIT_USAGE;
	}
	return 0;
}

/* The injection library's options; calibration: those that decide what a launch costs while
 * recording (no window, capture or size limit: the calibration records throughout). */
static char *build_options(const struct record_opts *o, uint64_t start_rt, int calibration)
{
	cs_strbuf sb = CS_STRBUF_INIT;

	cs_strbuf_puts(&sb, "v=1");
	if (o->api_all)
		cs_strbuf_puts(&sb, ",api=all");
	if (o->latency)
		cs_strbuf_puts(&sb, ",latency");
	if (o->backtrace)
		cs_strbuf_puts(&sb, ",backtrace");
	if (o->capture_profiler && !calibration)
		cs_strbuf_puts(&sb, ",capture=profiler");
	if (o->capture_nvtx && !calibration)
		cs_strbuf_printf(&sb, ",capture=nvtx:%s", o->capture_nvtx);
	if (o->size_limit && !calibration)
		cs_strbuf_printf(&sb, ",limit=%llu", (unsigned long long)o->size_limit);
	if (o->ring_bytes && !calibration)
		cs_strbuf_printf(&sb, ",ring_bytes=%llu", (unsigned long long)o->ring_bytes);
	if (o->ring_ns && !calibration)
		cs_strbuf_printf(&sb, ",ring_ns=%llu", (unsigned long long)o->ring_ns);
	if (o->cupti_buffers > 0)
		cs_strbuf_printf(&sb, ",buffers=%lld", (long long)o->cupti_buffers);
	if (o->hang_after > 0 && !calibration)
		cs_strbuf_printf(&sb, ",hang_after_ms=%llu",
				 (unsigned long long)(o->hang_after * 1000.0 + 0.5));
	if (o->slow_step > 0 && !calibration)
		cs_strbuf_printf(&sb, ",slow_step=%g", o->slow_step);
	if (o->step_pattern && !calibration)
		cs_strbuf_printf(&sb, ",step_pattern=%s", o->step_pattern);
	if ((o->delay > 0 || o->duration > 0) && !calibration) {
		uint64_t t0 = o->delay > 0 ? start_rt + (uint64_t)(o->delay * 1e9) : 0;
		uint64_t t1 =
			o->duration > 0 ? (t0 ? t0 : start_rt) + (uint64_t)(o->duration * 1e9) : 0;

		cs_strbuf_printf(&sb, ",window=%llu:%llu", (unsigned long long)t0,
				 (unsigned long long)t1);
	}
	/* Options for development (census, flush_ms, ...) that have no command-line flag. */
	if (getenv("CUSCOPE_RECORD_EXTRA") && *getenv("CUSCOPE_RECORD_EXTRA"))
		cs_strbuf_printf(&sb, ",%s", getenv("CUSCOPE_RECORD_EXTRA"));
	if (sb.failed) {
		cs_strbuf_free(&sb);
		return NULL;
	}
	return sb.buf;
}

char *cli_record_options(int backtrace)
{
	struct record_opts o = {.backtrace = backtrace};

	return build_options(&o, 0, 1);
}

/*
 * What recording cost a launch in this run, measured once the job is over (calibrate.c): the META
 * launch_cost value, or NULL (the reason said, but for a job that wrote nothing or was ended by a
 * signal: whoever stopped it wants the trace, not two more seconds).
 */
static char *measure_launch_cost(const struct record_opts *o, const char *lib, const char *outdir,
				 const char *spool, int others_left, int interrupted)
{
	struct cli_calibrate_opts co = {
		.lib = lib,
		.tmp_dir = outdir,
		.rounds = CLI_CALIBRATE_ROUNDS,
		.launches = CLI_CALIBRATE_LAUNCHES,
		.timeout_s = 30,
		.progress = o->quiet ? NULL : "measuring what recording costs a launch"};
	char why[300], *options, *s = NULL;
	cJSON *j;

	if (!o->calibrate || !cs_import_dir_has_spool(spool) || interrupted)
		return NULL;
	if (others_left) {
		if (!o->quiet)
			cli_error(
				"the cost of recording a launch is not measured: processes of the "
				"job still run");
		return NULL;
	}
	options = build_options(o, 0, 1);
	if (!options)
		return NULL;
	co.options = options;
	j = cli_calibrate(&co, why, sizeof(why));
	if (j)
		s = cJSON_PrintUnformatted(j);
	else if (!o->quiet)
		cli_error("the cost of recording a launch is not measured: %s", why);
	cJSON_Delete(j);
	free(options);
	return s;
}

/*
 * META host_speed of the probes: the one before the program (probe[0], zeroed when not run) and
 * one after it, run here unless the job was stopped by a signal, left processes running (they
 * would compete with the probe) or recorded nothing. NULL when nothing was measured.
 */
static char *host_speed_meta(const struct record_opts *o, struct cli_host_probe probe[2],
			     const char *spool, int others_left, int interrupted)
{
	int after = o->host_probe && !interrupted && !others_left &&
		    cs_import_dir_has_spool(spool);

	if (!o->host_probe)
		return NULL;
	if (after)
		cli_host_probe(&probe[1], probe[0].launch_ns > 0);
	return cli_host_probe_json(&probe[0], after ? &probe[1] : NULL);
}

static char *join_command(char **argv)
{
	cs_strbuf sb = CS_STRBUF_INIT;

	for (int i = 0; argv[i]; i++) {
		if (i)
			cs_strbuf_puts(&sb, " ");
		cs_strbuf_puts(&sb, argv[i]);
	}
	return sb.buf ? sb.buf : strdup("");
}

int cmd_record(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"force", no_argument, NULL, 'f'},
		{"api", required_argument, NULL, 'A'},
		{"delay", required_argument, NULL, 'D'},
		{"duration", required_argument, NULL, 'U'},
		{"capture", required_argument, NULL, 'C'},
		{"size-limit", required_argument, NULL, 'L'},
		{"ring", required_argument, NULL, 'R'},
		{"latency-timestamps", no_argument, NULL, 'T'},
		{"backtrace", no_argument, NULL, 'S'},
		{"no-backtrace", no_argument, NULL, 'N'},
		{"cupti-buffers", required_argument, NULL, 'B'},
		{"wait", required_argument, NULL, 'W'},
		{"keep-spool", no_argument, NULL, 'K'},
		{"no-calibrate", no_argument, NULL, 'M'},
		{"no-host-probe", no_argument, NULL, 'P'},
		{"dump-on", required_argument, NULL, 'd'},
		{"hang-after", required_argument, NULL, 'H'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct record_opts o = {
		.output = "cuscope.db", .wait_s = 10, .backtrace = 1, .calibrate = 1,
			    .host_probe = 1, .hang_after = CLI_HANG_AFTER_S};
	char lib[PATH_MAX], outdir[PATH_MAX], spool[PATH_MAX + 32], host[256] = "";
	struct cli_host_probe probe[2];
	char *options = NULL, *command = NULL, *outcopy;
	struct sigaction sa, old_sa[8], old_dump_sa;
	static const int fwd_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
	cs_import_stats st;
	double launch_ns = 0;
	cs_error err = {0};
	uint64_t start_rt;
	int c, status = 0, exit_code = CLI_EXIT_USAGE, rc, exec_pipe[2], others_left;
	pid_t pid;
	struct stat sb;

	cli_getopt_begin();
	while ((c = cli_getopt(argc, argv, "o:fqh", longopts)) != -1) {
		switch (c) {
		case 'o':
			o.output = optarg;
			break;
		case 'f':
			o.force = 1;
			break;
		case 'A':
			if (strcmp(optarg, "all") == 0)
				o.api_all = 1;
			else if (strcmp(optarg, "default") != 0)
				return cli_usage_error("record", "invalid value '%s' for --api",
						       optarg);
			break;
		case 'D':
			if (parse_seconds("--delay", optarg, &o.delay))
				return CLI_EXIT_USAGE;
			break;
		case 'U':
			if (parse_seconds("--duration", optarg, &o.duration))
				return CLI_EXIT_USAGE;
			break;
		case 'W':
			if (parse_seconds("--wait", optarg, &o.wait_s))
				return CLI_EXIT_USAGE;
			break;
		case 'C':
			if (strcmp(optarg, "profiler-api") == 0)
				o.capture_profiler = 1;
			else if (strncmp(optarg, "nvtx:", 5) == 0 && optarg[5] &&
				 !strchr(optarg, ','))
				o.capture_nvtx = optarg + 5;
			else if (strcmp(optarg, "all") != 0)
				return cli_usage_error("record", "invalid value '%s' for --capture",
						       optarg);
			break;
		case 'L':
			if (parse_size("--size-limit", optarg, &o.size_limit))
				return CLI_EXIT_USAGE;
			break;
		case 'R':
			if (parse_ring(optarg, &o.ring_bytes, &o.ring_ns))
				return CLI_EXIT_USAGE;
			break;
		case 'T':
			o.latency = 1;
			break;
		case 'S':
			o.backtrace = 1;
			break;
		case 'N':
			o.backtrace = 0;
			break;
		case 'B':
			if (cli_parse_int("record", "--cupti-buffers", optarg, 1, 250,
					  &o.cupti_buffers))
				return CLI_EXIT_USAGE;
			break;
		case 'K':
			o.keep_spool = 1;
			break;
		case 'M':
			o.calibrate = 0;
			break;
		case 'P':
			o.host_probe = 0;
			break;
		case 'H':
			if (parse_seconds("--hang-after", optarg, &o.hang_after))
				return CLI_EXIT_USAGE;
			break;
		case 'd':
			if (parse_dump_on(optarg, &o.dump_signal, &o.slow_step, &o.step_pattern))
				return CLI_EXIT_USAGE;
			break;
		case 'q':
			o.quiet = 1;
			break;
		case 'h':
			fputs(record_usage, stdout);
			return cli_finish_output(CLI_EXIT_OK);
		default:
			return CLI_EXIT_USAGE;
		}
	}
	if (optind >= argc)
		return cli_usage_error("record", "no command to run");
	if ((o.ring_bytes || o.ring_ns) && o.size_limit)
		return cli_usage_error(
			"record", "--ring and --size-limit cannot be used together: a ring keeps "
				  "the last SIZE, --size-limit the first");
	if (!o.force && stat(o.output, &sb) == 0) {
		cli_error("'%s' exists (use --force to overwrite)", o.output);
		return CLI_EXIT_USAGE;
	}
	outcopy = strdup(o.output);
	snprintf(outdir, sizeof(outdir), "%s", outcopy ? dirname(outcopy) : ".");
	free(outcopy);
	if (access(outdir, W_OK) != 0) {
		cli_error("cannot write '%s': %s", o.output, strerror(errno));
		return CLI_EXIT_USAGE;
	}
	if (cli_find_inject_lib(lib, sizeof(lib)))
		return CLI_EXIT_USAGE;
	if (check_environment(lib))
		return CLI_EXIT_USAGE;
	snprintf(spool, sizeof(spool), "%s/.cuscope-spool-XXXXXX", outdir);
	if (!mkdtemp(spool)) {
		cli_error("cannot create a spool directory in '%s': %s", outdir, strerror(errno));
		return CLI_EXIT_USAGE;
	}
	/* the host's speed before the program: nothing of it runs yet, nothing of ours is set */
	memset(probe, 0, sizeof(probe));
	if (o.host_probe)
		cli_host_probe(&probe[0], 1);
	start_rt = now_realtime_ns();
	options = build_options(&o, start_rt, 0);
	command = join_command(argv + optind);
	if (!options || !command) {
		cli_error("out of memory");
		rc = CLI_EXIT_USAGE;
		goto out_spool;
	}
	if (cli_session_write(spool, o.output, command, options, start_rt))
		cli_error("warning: cannot write the session file in '%s' (%s); 'cuscope dump' will "
			  "not find this recording",
			  spool, strerror(errno));
	{
		char pidbuf[32];

		snprintf(pidbuf, sizeof(pidbuf), "%d", (int)getpid());
		setenv("CUDA_INJECTION64_PATH", lib, 1);
		setenv("NVTX_INJECTION64_PATH", lib, 1);
		setenv(CS_ENV_SPOOL_DIR, spool, 1);
		setenv(CS_ENV_OPTIONS, options, 1);
		setenv(CS_ENV_RECORD_PID, pidbuf, 1);
	}
	/* Orphans of the job (spawned workers, ranks) are reparented to us, so that we can wait for
	 * them. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	fflush(NULL);
	/* A close-on-exec pipe tells the parent whether exec failed (the child then writes errno).
	 */
	if (pipe2(exec_pipe, O_CLOEXEC)) {
		cli_error("cannot start '%s': %s", argv[optind], strerror(errno));
		rc = CLI_EXIT_USAGE;
		goto out_spool;
	}
	if (o.dump_signal) {
		/* before the program starts, which may send it at once; no SA_RESTART: the signal
		 * ends the wait below, which then dumps; exec gives the program the default back */
		struct sigaction ds;

		memset(&ds, 0, sizeof(ds));
		ds.sa_handler = ask_dump;
		sigemptyset(&ds.sa_mask);
		sigaction(o.dump_signal, &ds, &old_dump_sa);
	}
	pid = fork();
	if (pid < 0) {
		cli_error("cannot start '%s': %s", argv[optind], strerror(errno));
		rc = CLI_EXIT_USAGE;
		goto out_spool;
	}
	if (pid == 0) {
		int e;

		close(exec_pipe[0]);
		execvp(argv[optind], argv + optind);
		e = errno;
		if (write(exec_pipe[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(e == ENOENT ? 127 : 126);
	}
	close(exec_pipe[1]);
	{
		int e = 0;
		ssize_t n;

		while ((n = read(exec_pipe[0], &e, sizeof(e))) < 0 && errno == EINTR)
			;
		close(exec_pipe[0]);
		if (n == (ssize_t)sizeof(e)) {
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			cli_error("cannot run '%s': %s", argv[optind], strerror(e));
			exit_code = e == ENOENT ? 127 : 126;
			rc = 0;
			goto out_spool;
		}
	}
	child_pid = pid;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(fwd_signals) / sizeof(fwd_signals[0]); i++)
		if (fwd_signals[i] != o.dump_signal)
			sigaction(fwd_signals[i], &sa, &old_sa[i]);
	wait_program(pid, &status, spool, command, &o);
	others_left = reap_descendants(o.wait_s);
	for (size_t i = 0; i < sizeof(fwd_signals) / sizeof(fwd_signals[0]); i++)
		if (fwd_signals[i] != o.dump_signal)
			sigaction(fwd_signals[i], &old_sa[i], NULL);
	if (o.dump_signal)
		sigaction(o.dump_signal, &old_dump_sa, NULL);
	child_pid = 0;
	if (WIFEXITED(status))
		exit_code = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		exit_code = 128 + WTERMSIG(status);
	else
		exit_code = 1;

	gethostname(host, sizeof(host) - 1);
	{
		char exitbuf[32], startbuf[32];
		/* the GPUs' PCIe links, where the driver lists them: a pageable copy's cost */
		char *links = cs_gpu_links_read("/proc", "/sys");
		/* the host's speed after it (not after a signal or with processes left) */
		char *speed = host_speed_meta(&o, probe, spool, others_left, WIFSIGNALED(status));
		/* what recording cost a launch: launch-starvation's cost net of it */
		char *cost = measure_launch_cost(&o, lib, outdir, spool, others_left,
						 WIFSIGNALED(status));
		const char *meta[20] = {"command",
					command,
					"host",
					host,
					"exit_code",
					exitbuf,
					"record_start_realtime_ns",
					startbuf,
					"api",
					o.api_all ? "all" : "default",
					"record_options",
					options};
		size_t nmeta = 12;
		cs_import_opts io = {.overwrite = o.force, .meta = meta};

		if (links) {
			meta[nmeta++] = "gpu_links";
			meta[nmeta++] = links;
		}
		if (cost) {
			meta[nmeta++] = CS_META_LAUNCH_COST;
			meta[nmeta++] = cost;
		}
		if (speed) {
			meta[nmeta++] = CS_META_HOST_SPEED;
			meta[nmeta++] = speed;
		}
		snprintf(exitbuf, sizeof(exitbuf), "%d", exit_code);
		snprintf(startbuf, sizeof(startbuf), "%llu", (unsigned long long)start_rt);
		if (isatty(2) && !o.quiet)
			io.progress = import_progress;
		memset(&st, 0, sizeof(st));
		rc = cs_import_dir(spool, o.output, &io, &st, &err);
		launch_ns = cs_launch_cost_ns(cost);
		free(links);
		free(cost);
		free(speed);
		if (io.progress)
			fputs("\r\033[K", stderr);
	}
	if (rc == CS_ERR_NOT_FOUND) {
		cli_error("no CUDA activity was recorded ('%s' never initialized CUDA); no trace "
			  "written",
			  argv[optind]);
		rc = 0;
		goto out_spool;
	}
	if (rc) {
		cli_error(
			"%s (the spool files are kept in '%s'; 'cuscope import -o %s %s' retries)",
			err.msg, spool, o.output, spool);
		o.keep_spool = 1;
		goto out;
	}
	if (!o.quiet)
		cli_import_summary(o.output, &st, launch_ns);
out_spool:
	if (!o.keep_spool)
		cli_remove_tree(spool);
	else if (rc == 0)
		cli_error("spool files kept in '%s'", spool);
out:
	free(options);
	free(command);
	return exit_code;
}

#endif
