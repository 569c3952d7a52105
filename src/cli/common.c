/*
 * common.c - what every cuscope command shares (declared in cli.h): error lines, the option parsing
 * conventions, opening a trace, checking a --pid, flushing stdout into a pipe.
 */
#include <ctype.h>
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cuscope/analyze.h"
#include "cuscope/files.h"
#include "cuscope/gate.h"

void cli_error(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("cuscope: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_output_check(const char *path, int force, int file_only)
{
	int direct = 0;

	if (!strcmp(path, "-") && !file_only)
		return 0;
	if (cs_output_check(path, force, &direct) == 0 && !(direct && file_only))
		return 0;
	if (direct)
		errno = CS_ENOTREG;
	if (errno == EEXIST)
		cli_error("'%s' exists; use --force to replace it", path);
	else
		cli_error("cannot write '%s': %s", path, cs_file_strerror(errno));
	return CLI_EXIT_USAGE;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("cuscope: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (cmd)
		fprintf(stderr, "; try 'cuscope %s --help'\n", cmd);
	else
		fputs("; try 'cuscope --help'\n", stderr);
	return CLI_EXIT_USAGE;
}

static int is_long_option(const struct option *longopts, const char *name, size_t len)
{
	for (; longopts && longopts->name; longopts++)
		if (strlen(longopts->name) == len && !strncmp(longopts->name, name, len))
			return 1;
	return 0;
}

/* Edit distance (insertions, deletions, substitutions, swaps of neighbours) of a[0..n) and b. */
static size_t edit_distance(const char *a, size_t n, const char *b)
{
	size_t m = strlen(b), prev2[64], prev[64], cur[64];

	if (n >= 63 || m >= 63)
		return (size_t)-1;
	for (size_t j = 0; j <= m; j++)
		prev[j] = j;
	for (size_t i = 1; i <= n; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= m; j++) {
			size_t d = prev[j - 1] + (a[i - 1] != b[j - 1]);

			if (prev[j] + 1 < d)
				d = prev[j] + 1;
			if (cur[j - 1] + 1 < d)
				d = cur[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    prev2[j - 2] + 1 < d)
				d = prev2[j - 2] + 1;
			cur[j] = d;
		}
		memcpy(prev2, prev, sizeof(prev));
		memcpy(prev, cur, sizeof(cur));
	}
	return prev[m];
}

/*
 * The long option closest to name[0..len) (without its "--"): within an edit distance of a third
 * of its length (at least 1, at most 3), or the only one it is a prefix of. NULL when none is
 * close.
 */
static const char *closest_long_option(const struct option *longopts, const char *name, size_t len)
{
	const char *best = NULL;
	size_t best_d = (size_t)-1, limit = len / 3;

	if (limit < 1)
		limit = 1;
	if (limit > 3)
		limit = 3;
	for (const struct option *o = longopts; o && o->name; o++) {
		size_t d = edit_distance(name, len, o->name);

		if (d < best_d) {
			best_d = d;
			best = o->name;
		}
	}
	if (best && best_d <= limit)
		return best;
	/* an ambiguous abbreviation ("--st" for --steps and --step-range): the first it begins */
	for (const struct option *o = longopts; len && o && o->name; o++)
		if (!strncmp(o->name, name, len))
			return o->name;
	return NULL;
}

static int options_in_order; /* stop at the first operand (record: its COMMAND) */

void cli_getopt_begin(void)
{
	optind = 0; /* glibc: 0 re-initializes, also forgetting the position inside clustered
		       options */
	opterr = 0;
}

void cli_getopt_options_first(void)
{
	options_in_order = 1;
}

int cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts)
{
	char spec[128];
	const char *word;
	int c;

	/*
	 * Options may come anywhere among the operands (GNU order: getopt_long moves the operands
	 * to the end, and "--" ends the options), except for a command that runs a program, whose
	 * own options follow it.
	 */
	snprintf(spec, sizeof(spec), "%s:%s", options_in_order ? "+" : "", shortopts);
	c = getopt_long(argc, argv, spec, longopts, NULL);
	if (c != '?' && c != ':')
		return c;
	/* A long option is the word before optind ("--name" or "--name=value"); optopt names a
	 * short one. */
	word = optind > 0 && optind <= argc ? argv[optind - 1] : "";
	if (!strncmp(word, "--", 2)) {
		int len = (int)strcspn(word, "=");
		const char *near;

		char ambiguous[512] = "";
		int nprefix = 0;

		/* a prefix of several long options (a unique one is the option itself, as in GNU
		 * getopt_long and git) */
		for (const struct option *o = longopts; len > 2 && o && o->name; o++)
			if (!strncmp(o->name, word + 2, (size_t)len - 2)) {
				size_t used = strlen(ambiguous);

				snprintf(ambiguous + used, sizeof(ambiguous) - used, "%s--%s",
					 nprefix ? ", " : "", o->name);
				nprefix++;
			}
		if (c == ':')
			cli_usage_error(argv[0], "option '%.*s' needs a value", len, word);
		else if (nprefix > 1 && !is_long_option(longopts, word + 2, (size_t)len - 2))
			cli_usage_error(argv[0], "option '%.*s' is ambiguous: %s", len, word,
					ambiguous);
		else if (word[len] == '=' && is_long_option(longopts, word + 2, (size_t)len - 2))
			cli_usage_error(argv[0], "option '%.*s' takes no value", len, word);
		else if ((near = closest_long_option(longopts, word + 2, (size_t)len - 2)) != NULL)
			cli_error("unknown option '%.*s'; did you mean '--%s'?", len, word, near);
		else
			cli_usage_error(argv[0], "unknown option '%.*s'", len, word);
	} else if (c == ':') {
		cli_usage_error(argv[0], "option '-%c' needs a value", optopt);
	} else {
		cli_usage_error(argv[0], "unknown option '-%c'", optopt);
	}
	return '?';
}

int cli_parse_format(const char *cmd, const char *arg, enum cli_format *out)
{
	if (!strcmp(arg, "text")) {
		*out = CLI_FORMAT_TEXT;
	} else if (!strcmp(arg, "json")) {
		*out = CLI_FORMAT_JSON;
	} else {
		return cli_usage_error(cmd, "invalid value '%s' for --format (text or json)", arg);
	}
	return 0;
}

int cli_parse_int(const char *cmd, const char *option, const char *arg, int64_t min, int64_t max,
		  int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max)
		return cli_usage_error(cmd, "invalid value '%s' for %s", arg, option);
	*out = v;
	return 0;
}

void cli_note_warmup(int64_t asked, const char *path, uint32_t pid, int32_t steps, int32_t used)
{
	if (asked < 0 || steps <= 0 || asked <= used)
		return;
	fprintf(stderr,
		"cuscope: note: %" PRId64 " warm-up steps asked (--warmup), but pid %" PRIu32
		" of '%s' has %" PRId32 " step%s: the first %" PRId32 " are warm-up, the last "
		"the only steady one\n",
		asked, pid, path, steps, steps == 1 ? "" : "s", used);
}

void cli_note_window(const char *path, const cs_load_window *w)
{
	char line[512];

	if (!w || !w->on)
		return;
	fprintf(stderr, "cuscope: note: '%s' analysed in a window: %s\n", path,
		cs_load_window_text(line, sizeof(line), w));
}

void cli_note_comparison_warmup(int64_t asked, const struct cs_comparison *c)
{
	for (int32_t i = 0; i < c->nbases; i++)
		cli_note_warmup(asked, c->bases[i].path, c->bases[i].pid, c->bases[i].steps,
				c->bases[i].warmup);
	cli_note_warmup(asked, c->new_.path, c->new_.pid, c->new_.steps, c->new_.warmup);
}

void cli_note_comparison_windows(const struct cs_comparison *c)
{
	for (int32_t i = 0; i < c->nbases; i++)
		cli_note_window(c->bases[i].path, &c->bases[i].window);
	cli_note_window(c->new_.path, &c->new_.window);
}

int cli_run_option(const char *cmd, int c, const char *arg, cs_run_opts *o)
{
	int64_t warmup, rank;
	char *end = NULL;

	switch (c) {
	case CLI_OPT_FOLD:
		o->fold = 1;
		return 0;
	case CLI_OPT_STEP_RANGE:
		if (!*arg)
			return cli_usage_error(cmd, "--step-range needs a pattern");
		o->step_range = arg;
		return 0;
	case CLI_OPT_WARMUP:
		if (cli_parse_int(cmd, "--warmup", arg, 0, INT32_MAX, &warmup))
			return CLI_EXIT_USAGE;
		o->warmup = (int)warmup;
		return 0;
	case CLI_OPT_MAX_MEMORY:
		return cli_parse_max_memory(cmd, arg, &o->max_memory);
	case CLI_OPT_RANK:
		if (!strcmp(arg, "slowest")) {
			o->rank_select = CS_RANK_SLOWEST;
			return 0;
		}
		errno = 0;
		rank = *arg >= '0' && *arg <= '9' ? strtoll(arg, &end, 10) : -1;
		if (rank < 0 || errno || *end || rank > INT32_MAX)
			return cli_usage_error(
				cmd, "invalid value '%s' for --rank (a rank number or slowest)",
				arg);
		o->rank_select = CS_RANK_N;
		o->rank = (int32_t)rank;
		return 0;
	}
	return CLI_EXIT_USAGE;
}

/* One side of --time-range: a number and an optional unit, in ns. 0, or -1 when bad. */
static int parse_time(const char *s, size_t len, int64_t *out)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = {{"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}};
	char buf[64], *end;
	double v, scale = 1e9;

	if (!len || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	v = strtod(buf, &end);
	if (errno || end == buf || !isfinite(v) || v < 0 || buf[0] == '+' || buf[0] == '-')
		return -1;
	if (*end) {
		size_t i;

		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (!strcmp(end, units[i].unit))
				break;
		if (i == sizeof(units) / sizeof(units[0]))
			return -1;
		scale = units[i].ns;
	}
	if (v * scale >= 9.2e18)
		return -1;
	*out = llround(v * scale);
	return 0;
}

int cli_parse_time_range(const char *arg, int64_t *t0, int64_t *t1)
{
	const char *colon = strchr(arg, ':');

	if (!colon || strchr(colon + 1, ':') || (colon == arg && !colon[1]))
		return -1;
	*t0 = *t1 = CS_TS_UNKNOWN;
	if (colon > arg && parse_time(arg, (size_t)(colon - arg), t0))
		return -1;
	if (colon[1] && parse_time(colon + 1, strlen(colon + 1), t1))
		return -1;
	if (*t0 != CS_TS_UNKNOWN && *t1 != CS_TS_UNKNOWN && *t1 <= *t0)
		return -1;
	return 0;
}

int cli_parse_size(const char *cmd, const char *option, const char *arg, int64_t *out)
{
	static const char units[] = "KMGT";
	char *end;
	const char *u;
	double v, mult = 1;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || !isfinite(v) || !(v > 0) || !isdigit((unsigned char)arg[0]))
		goto bad;
	if (*end && (u = strchr(units, toupper((unsigned char)*end))) != NULL) {
		for (const char *p = units; p <= u; p++)
			mult *= 1024;
		end++;
		if (*end == 'i')
			end++;
	}
	if (*end == 'B')
		end++;
	if (*end || v * mult >= 9.2e18 || v * mult < 1)
		goto bad;
	*out = (int64_t)(v * mult);
	return 0;
bad:
	return cli_usage_error(cmd, "invalid value '%s' for %s (a size such as 4G, 512M or 4GiB)",
			       arg, option);
}

int cli_parse_max_memory(const char *cmd, const char *arg, int64_t *out)
{
	if (cli_parse_size(cmd, "--max-memory", arg, out))
		return CLI_EXIT_USAGE;
	if (*out < CLI_MAX_MEMORY_MIN)
		return cli_usage_error(cmd, "--max-memory %s is too small (at least 1M)", arg);
	return 0;
}

int cli_load_option(const char *cmd, int c, const char *arg, cs_load_opts *o)
{
	switch (c) {
	case CLI_OPT_MAX_MEMORY:
		return cli_parse_max_memory(cmd, arg, &o->max_bytes);
	case CLI_OPT_WINDOW:
		if (cli_parse_time_range(arg, &o->from, &o->to))
			return cli_usage_error(
				cmd,
				"invalid value '%s' for --window (START:END, seconds "
				"from the trace start, START before END; either may "
				"be left out)",
				arg);
		return 0;
	}
	return CLI_EXIT_USAGE;
}

const char *cli_single_file(const char *cmd, int argc, char **argv)
{
	if (optind >= argc) {
		cli_usage_error(cmd, "missing trace file");
		return NULL;
	}
	if (optind + 1 < argc) {
		cli_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
		return NULL;
	}
	return argv[optind];
}

/* The reason of a failed open or read, without the "cannot open 'PATH': " the library put first. */
static const char *trace_error_reason(const char *path, int code, const cs_error *err)
{
	const char *msg = err && err->msg[0] ? err->msg : cs_err_str(code);
	size_t plen = strlen(path);

	if (!strncmp(msg, "cannot open ", 12) || !strncmp(msg, "cannot read ", 12))
		msg += 12;
	if (msg[0] == '\'' && !strncmp(msg + 1, path, plen) && !strncmp(msg + 1 + plen, "': ", 3))
		msg += plen + 4;
	else if (!strncmp(msg, path, plen) && !strncmp(msg + plen, ": ", 2))
		msg += plen + 2;
	return msg;
}

int cli_open_trace(const char *path, cs_trace **out, int flags)
{
	cs_error err = {0, ""};
	int rc = cs_trace_open_flags(path, flags, out, &err);

	if (rc < 0) {
		*out = NULL;
		cli_error("cannot open '%s': %s", path, trace_error_reason(path, rc, &err));
		return CLI_EXIT_USAGE;
	}
	return 0;
}

#define PIDS_LISTED 8 /* a --pid the trace lacks: the error lists at most this many it has */

struct pid_check {
	uint32_t pid;
	int found;
	int n;			     /* processes of the trace */
	char list[PIDS_LISTED * 12]; /* the first PIDS_LISTED of them, "883, 884" */
};

static int pid_cb(const cs_process *p, void *arg)
{
	struct pid_check *c = arg;
	size_t len = strlen(c->list);

	if (p->pid == c->pid) {
		c->found = 1;
		return 1;
	}
	if (c->n < PIDS_LISTED)
		snprintf(c->list + len, sizeof(c->list) - len, "%s%" PRIu32, c->n ? ", " : "",
			 p->pid);
	c->n++;
	return 0;
}

int cli_check_pid(cs_trace *t, const char *path, int64_t pid)
{
	struct pid_check c = {(uint32_t)pid, 0, 0, ""};
	cs_filter f = cs_filter_all();
	cs_error err = {0, ""};
	int rc;

	if (pid < 0)
		return 0;
	rc = cs_trace_each_process(t, pid_cb, &c, &err);
	if (rc < 0)
		return cli_trace_error(path, rc, &err);
	/* a process without its row (a damaged trace) still has its events */
	f.pid = pid;
	for (int k = 0; !c.found && k < CS_EV_COUNT; k++) {
		cs_iter *it;
		cs_event ev;

		rc = cs_iter_open(t, (enum cs_event_kind)k, &f, &it, &err);
		if (rc < 0)
			return cli_trace_error(path, rc, &err);
		rc = cs_iter_next(it, &ev);
		cs_iter_close(it);
		if (rc < 0)
			return cli_trace_error(path, rc, &err);
		c.found = rc > 0;
	}
	if (c.found)
		return 0;
	if (c.n == 0)
		cli_error("no process %" PRId64 " in '%s' (it has no process rows)", pid, path);
	else
		cli_error("no process %" PRId64 " in '%s' (it has pid%s %s%s)", pid, path,
			  c.n == 1 ? "" : "s", c.list, c.n > PIDS_LISTED ? ", ..." : "");
	return CLI_EXIT_USAGE;
}

int cli_trace_error(const char *path, int code, const cs_error *err)
{
	cli_error("cannot read '%s': %s", path, trace_error_reason(path, code, err));
	return CLI_EXIT_USAGE;
}

int cli_finish_output(int rc)
{
	struct stat st;
	int saved;

	errno = 0;
	if (fflush(stdout) == 0 && !ferror(stdout))
		return rc;
	saved = errno;
	/*
	 * SIGPIPE is ignored, so a reader that went away (`| head -1`) shows up as a failed write;
	 * on a pipe or a socket that is the expected end, not an error.
	 */
	if (saved == EPIPE ||
	    (fstat(STDOUT_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))))
		return rc;
	cli_error("cannot write output: %s", strerror(saved ? saved : EIO));
	return rc ? rc : CLI_EXIT_USAGE;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void cli_remove_tree(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *cli_proc_stat(long pid, char *buf, size_t cap)
{
	char path[64], *close;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (!f || cap < 2) {
		if (f)
			fclose(f);
		return NULL;
	}
	n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = '\0';
	close = strrchr(buf, ')'); /* the command's name may hold spaces and parentheses */
	return close && close[1] == ' ' ? close + 2 : NULL;
}
