/*
 * cli.h - what the cuscope commands share: the command entry points, exit codes, error printing,
 * the option parsing conventions and the output helpers of format.c (wall-clock times, the
 * terminal's width, colour, JSON on stdout); units, tables and JSON items are those of src/util
 * (cuscope/units.h, cuscope/table.h, cuscope/json.h).
 *
 * Every command is `int cmd_NAME(int argc, char **argv)` with argv[0] the command's name; it
 * returns the process exit code. Primary output goes to stdout, errors to stderr as one line
 * "cuscope: <message>".
 */
#ifndef CUSCOPE_CLI_H
#define CUSCOPE_CLI_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "cuscope/json.h"
#include "cuscope/model.h"
#include "cuscope/table.h"
#include "cuscope/trace.h"
#include "cuscope/units.h"
#include "cuscope/utf8.h"

/* Exit codes. */
#define CLI_EXIT_OK	  0
#define CLI_EXIT_FINDINGS 1 /* findings or gate failures (report, gate) */
#define CLI_EXIT_USAGE	  2 /* bad input or bad usage */
#define CLI_EXIT_INCONCLUSIVE 3 /* gate: nothing regressed but what the host's speed explains */

/* ---- commands (one file each) ---- */

int cmd_record(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_gate(int argc, char **argv);
int cmd_view(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_dump(int argc, char **argv);

/* ---- dumps of a running recording (cmd_dump.c, hang_report.c) ---- */

/* record --hang-after's default, seconds. */
#define CLI_HANG_AFTER_S 300

struct cs_import_stats;
/* "wrote FILE (size, N processes; kernels N, ...)" on stderr, after an import (cmd_import.c). */
void cli_import_summary(const char *out, const struct cs_import_stats *st, double launch_ns);
/* Write the session file of a recording into its spool directory: the output (made absolute), the
 * command, CUSCOPE_OPTIONS, the start (CLOCK_REALTIME ns) and this process's id. 0 or -1. */
int cli_session_write(const char *spool, const char *output, const char *command,
		      const char *options, uint64_t start_rt);
/* Dump the recording of spool into output (NULL: "<recording's output>.dump-N.db"); waits at most
 * timeout_s for its processes. Says what it wrote unless quiet, and puts its path into written
 * (cap bytes, when not NULL); returns a CLI_EXIT_ code. */
int cli_dump(const char *spool, const char *output, int force, double timeout_s, int quiet,
	     char *written, size_t cap);
/* The notices the processes of the recording at spool left, in one read of the directory: *slow
 * = 1 for a slow-step notice ("slow.<pid>.<n>", src/collectors/slow_step.c), *hang = 1 for a hang
 * notice ("hang.<pid>", src/collectors/hang.c). */
void cli_notices(const char *spool, int *slow, int *hang);
/* The length of path without the extension of its last component (".db" of "a/x.db"; none of
 * "a.b/x"): where "<stem>.dump-N.db" and "<stem>.hang.txt" are made. */
int cli_path_stem(const char *path);
/* The fields of /proc/PID/stat after the command's name ("S 1234 ...": state, parent, ...) read
 * into buf, or NULL when the process is gone. */
const char *cli_proc_stat(long pid, char *buf, size_t cap);
/* Write the hang report of the notices in spool (which it removes) to out, with what the dump
 * (NULL when none was written) tells of the streams and NCCL; returns the notices read. */
int cli_hang_report(FILE *out, const char *spool, const char *command, const char *dump);
/* Add to each hang notice in spool the native call stack of each thread it names as waiting
 * ("native TID FUNC+0xOFF<TAB>MODULE" lines, or "native_error TID TEXT"), read by tracing that
 * thread for a moment (native_stack.c); returns the threads read. */
int cli_hang_native(const char *spool);

/* ---- native stacks of another process's threads (native_stack.c) ---- */
/* The native call stack of thread tid of process pid, innermost first, as "native TID FUNC+0xOFF
 * <TAB>MODULE" lines into out; returns the frames, 0 with err set when it could not be read. */
int cli_native_stack(long pid, long tid, char *out, size_t cap, char *err, size_t errcap);
/* Detach the threads that had not stopped when their stack was asked for, once they have. */
void cli_native_release(void);
/* Detach thread tid, stopped for the stack reader (a stop its caller's waitpid() took, with
 * status: a signal for the program in it is delivered). */
void cli_native_detach(long tid, int status);
/* 1 with *status set when a wait of the stack reader took the end of thread pid (the program's
 * first thread, whose end its parent waits for). */
int cli_native_reaped(long pid, int *status);

/* ---- recording (cmd_record.c, calibrate.c, cmd_calibrate.c) ---- */

/* The injection library: $CUSCOPE_INJECT_LIB, beside the executable or in its lib dir. 0, or -1
 * after saying it cannot be found. */
int cli_find_inject_lib(char *out, size_t cap);
/* The options a recording with default flags passes the injection library (CUSCOPE_OPTIONS), with
 * host call stacks or without; malloc'd, NULL without memory. */
char *cli_record_options(int backtrace);

/* What `cuscope calibrate` and record's measurement run by default: rounds of the five loops, and
 * launches per loop. */
#define CLI_CALIBRATE_ROUNDS   9
#define CLI_CALIBRATE_LAUNCHES 10000
/* The most rounds it runs (--rounds). */
#define CLI_CALIBRATE_MAX_ROUNDS 64

struct cli_calibrate_opts {
	const char *lib;     /* the injection library */
	const char *options; /* CUSCOPE_OPTIONS of the recording measured */
	const char *tmp_dir; /* where the measuring process's spool directory is made */
	const char
		*progress; /* what a terminal's progress line says (cuscope/progress.h), or NULL */
	int rounds, launches;
	double timeout_s;
};
/*
 * Measure what recording costs a launch (calibrate.c): the META launch_cost value as JSON, or NULL
 * with why set.
 */
cJSON *cli_calibrate(const struct cli_calibrate_opts *o, char *why, size_t cap);
/* cli_calibrate()'s value as `cuscope calibrate` prints it: each mode's time per launch and what
 * recording adds, in its parts. */
void cli_calibrate_print(const cJSON *j);
/*
 * Loops of launches of an empty kernel in a process without a profiler (calibrate.c): after one to
 * warm up, `loops` loops of `launches`, their wall ns per launch in wall[]; device (dcap bytes) the
 * GPU's name. 0, or -1 with why set (no driver, no GPU, a failed launch, past timeout_s).
 */
int cli_bare_launch_loops(int loops, int launches, double timeout_s, double *wall, char *device,
			  size_t dcap, char *why, size_t cap);
/*
 * The host-speed probe (host_probe.c): a fixed CPU workload and, with launch, the bare launch of an
 * empty kernel. cli_host_probe() measures into *p; cli_host_probe_json() makes META host_speed
 * (cuscope/host_speed.h) of the probes before and after the program (after may be NULL), or NULL
 * when neither measured anything.
 */
struct cli_host_probe {
	double cpu_ns, cpu_spread;	 /* ns per unit of the CPU work; 0: not measured */
	double launch_ns, launch_spread; /* ns per bare launch; 0: not measured */
	char device[128];
	char why[256]; /* why the launch was not measured */
};
void cli_host_probe(struct cli_host_probe *p, int launch);
char *cli_host_probe_json(const struct cli_host_probe *before, const struct cli_host_probe *after);
/* Remove a directory and what it holds (what can be removed). */
void cli_remove_tree(const char *dir);

/* ---- errors ---- */

/* Print "cuscope: <message>" and a newline on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * Print "cuscope: <message>; try 'cuscope CMD --help'" on stderr, one line, and return
 * CLI_EXIT_USAGE. cmd NULL points at 'cuscope --help'.
 */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * The one rule of every output (cs_output_check(), docs/security.md): 0 when path ("-" is stdout)
 * may be written; else one line ("'X' exists; use --force to replace it", "cannot write 'X': not
 * a regular file") and CLI_EXIT_USAGE. file_only: the output is a file that is renamed into place
 * (a trace), so a device or a FIFO is refused too.
 */
int cli_output_check(const char *path, int force, int file_only);

/* ---- option parsing ---- */

/*
 * Start parsing a command's options: resets getopt so that every command parses its own argv from
 * argv[1]. Call once before the first cli_getopt().
 */
void cli_getopt_begin(void);
/*
 * getopt_long with the shared conventions: options may come before, between or after the operands
 * (which getopt_long moves to the end, from optind on), "--" ends the options, and an unknown
 * option or a missing argument prints one line naming it and returns '?'; an unknown long option
 * close to a known one is suggested ("unknown option '--formt'; did you mean '--format'?").
 * shortopts is the usual getopt string without the leading '+' or ':'. argv[0] is the command's
 * name.
 */
int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts);
/*
 * For a command that runs another program (record): option parsing stops at the first operand,
 * the program, whose own options follow it. Called before cli_getopt_begin().
 */
void cli_getopt_options_first(void);

/* Output format of a command. */
enum cli_format {
	CLI_FORMAT_TEXT = 0,
	CLI_FORMAT_JSON,
};
/* Parse a --format value among text|json; prints the error and returns CLI_EXIT_USAGE on a bad one.
 */
int cli_parse_format(const char *cmd, const char *arg, enum cli_format *out);
/*
 * Parse an integer option value in [min, max]; prints "invalid value 'ARG' for OPTION" and returns
 * CLI_EXIT_USAGE on a bad one, 0 otherwise.
 */
int cli_parse_int(const char *cmd, const char *option, const char *arg, int64_t min, int64_t max,
		  int64_t *out);
/*
 * A time range "START:END" (either side may be left out, not both), each side a number with an
 * optional unit (s, the default; ms, us, ns), in ns: *t0 and *t1, CS_TS_UNKNOWN for a side left
 * out. 0, or -1 when bad (END not after START); prints nothing.
 */
int cli_parse_time_range(const char *arg, int64_t *t0, int64_t *t1);
/*
 * A size "4G", "512M", "4GiB", "1.5G" or a number of bytes (K, M, G, T are powers of 1024), at
 * least 1 byte; prints "invalid value 'ARG' for OPTION" and returns CLI_EXIT_USAGE on a bad one.
 */
int cli_parse_size(const char *cmd, const char *option, const char *arg, int64_t *out);
/* The smallest --max-memory. */
#define CLI_MAX_MEMORY_MIN (INT64_C(1) << 20)
/* --max-memory's value arg into *out: a size of at least CLI_MAX_MEMORY_MIN. 0, or CLI_EXIT_USAGE
 * after one line saying why it is bad. */
int cli_parse_max_memory(const char *cmd, const char *arg, int64_t *out);
/*
 * Take --max-memory (CLI_OPT_MAX_MEMORY) or --window (CLI_OPT_WINDOW), with its value arg, into o
 * (the memory limit and window of cs_analysis_load_opts()). 0, or CLI_EXIT_USAGE after one line
 * saying why the value is bad (or c is another option: nothing printed).
 */
int cli_load_option(const char *cmd, int c, const char *arg, cs_load_opts *o);
/* The window w of the trace at path, as one note on stderr (for the commands that print no
 * header): nothing when w is the whole trace. */
void cli_note_window(const char *path, const cs_load_window *w);

/*
 * The one FILE operand left after the options (argv[optind..argc)): NULL after printing a usage
 * error when it is missing or followed by extra arguments.
 */
const char *cli_single_file(const char *cmd, int argc, char **argv);

/* ---- the options of diff and gate ---- */

/*
 * What `cuscope diff` and `cuscope gate` both take to load a trace, as the values of their long
 * options: --fold, --step-range PAT, --warmup N and --rank N|slowest.
 */
enum {
	CLI_OPT_FOLD = 512,
	CLI_OPT_STEP_RANGE,
	CLI_OPT_WARMUP,
	CLI_OPT_RANK,
	CLI_OPT_MAX_MEMORY,
	CLI_OPT_WINDOW,
};

struct cs_run_opts;
/* A --warmup of asked steps that the steps of the trace at path (process pid: steps found, used
 * taken as warm-up) cannot all give: a note on stderr that says how many were. Nothing when asked
 * is -1 (not given) or fits. The second: for every run of a comparison (diff, gate). */
void cli_note_warmup(int64_t asked, const char *path, uint32_t pid, int32_t steps, int32_t used);
struct cs_comparison;
void cli_note_comparison_warmup(int64_t asked, const struct cs_comparison *c);
/* cli_note_window() for each run of a comparison (diff, gate). */
void cli_note_comparison_windows(const struct cs_comparison *c);

/*
 * Take the option c that cli_getopt returned, with its value arg, into o. 0 when it was one of
 * them; CLI_EXIT_USAGE when its value is bad (the error printed) or c is another option (nothing
 * printed: the '?' of an unknown option was reported by cli_getopt).
 */
int cli_run_option(const char *cmd, int c, const char *arg, struct cs_run_opts *o);

/* ---- traces ---- */

/*
 * Open a trace for reading; on failure prints "cuscope: cannot open 'PATH': <reason>" and returns
 * CLI_EXIT_USAGE.
 */
int cli_open_trace(const char *path, cs_trace **out, int flags);
/* Print "cuscope: cannot read 'PATH': <reason>" for a failure after the trace was opened. */
int cli_trace_error(const char *path, int code, const cs_error *err);

/*
 * Whether the trace has process pid (its row, or events of it); pid < 0 (every process) passes.
 * 0, or CLI_EXIT_USAGE after printing "cuscope: no process PID in 'PATH'" or a read error.
 */
int cli_check_pid(cs_trace *t, const char *path, int64_t pid);

/* ---- formatting (format.c) ---- */

/* Durations, sizes and counts: cs_fmt_duration() and the others of cuscope/units.h. */

/* Wall-clock time of ns since the epoch, local time: "2025-01-02 03:04:05.678 +0100". */
char *cli_fmt_walltime(char *buf, size_t size, int64_t ns);
/* Wall-clock time of ns since the epoch, UTC, ISO 8601: "2025-01-02T02:04:05.678Z". */
char *cli_fmt_walltime_iso(char *buf, size_t size, int64_t ns);

/*
 * Width to fit text output in: requested when >= 0 (0 = no limit, from --width), else the
 * terminal's width when stdout is a terminal, else 0 (no limit: a pipe or a file gets whole lines).
 */
int cli_output_width(int requested);

/* ---- colour ---- */

/* 1 when output to stdout is to be coloured: a terminal, no --no-color (no_color_opt) and no
 * NO_COLOR in the environment. */
int cli_use_color(int no_color_opt);

/* ---- JSON ---- */

/* Print the document (indented) and a newline on stdout; 0, or CLI_EXIT_USAGE without memory. */
int cli_json_print(const cJSON *root);
/* The same on f. */
int cli_json_fprint(FILE *f, const cJSON *root);

/* Flush stdout at the end of a command: a closed pipe is not an error, other write errors are. */
int cli_finish_output(int rc);

#endif
