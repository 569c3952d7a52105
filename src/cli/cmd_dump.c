/*
 * cmd_dump.c - `cuscope dump`: the trace of a recording that is still running, taken without
 * stopping it (docs/recording.md, "Dumps of a running job"), and the session file that `cuscope
 * record` leaves in its spool directory so that a dump knows what it records.
 *
 * A dump (cli_dump) takes the spool directory's dump lock, makes "dump-<n>" there, writes n to
 * "dump.req" and waits: the flush thread of every profiled process looks at that file once per
 * flush period (200 ms), puts its files into the directory (linked, a ring's main file copied,
 * src/collectors/spool_out.c cs_out_snapshot) and writes "<file>.done" with the main file's length.
 * Processes that ended are linked here; one that does not answer within the timeout too, as its
 * files are. The directory is then imported into the dump's trace like a recording's spool
 * directory, and removed. Nothing of it signals or stops the program.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cuscope/files.h"
#include "cuscope/grow.h"
#include "cuscope/import.h"
#include "cuscope/progress.h"
#include "cuscope/spool.h"
#include "cuscope/strbuf.h"

#define DUMP_TIMEOUT_S 10.0
#define DUMP_MAX_N     100000

/* What "session" says. */
struct session {
	char output[4096];
	char command[4096];
	char options[2048];
	char start[32];
	char record_pid[32];
};

/* ---- the session file ---- */

/* Write value with newlines and tabs as spaces. */
static void put_line(FILE *f, const char *key, const char *value)
{
	fprintf(f, "%s\t", key);
	for (const char *p = value; *p; p++)
		fputc(*p == '\n' || *p == '\t' ? ' ' : *p, f);
	fputc('\n', f);
}

int cli_session_write(const char *spool, const char *output, const char *command,
		      const char *options, uint64_t start_rt)
{
	char path[4200], tmp[4200], abs[4096], *dir, *copy;
	char start[32], pid[32];
	const char *base;
	FILE *f;

	/* the output as seen from anywhere: a dump is asked for from another directory */
	copy = strdup(output);
	if (!copy)
		return -1;
	dir = strrchr(copy, '/');
	base = dir ? output + (dir - copy) + 1 : output;
	if (dir)
		*dir = '\0';
	if (!realpath(dir ? (*copy ? copy : "/") : ".", abs)) {
		free(copy);
		return -1;
	}
	free(copy);
	snprintf(path, sizeof(path), "%s/%s", spool, CS_SESSION_FILE);
	snprintf(tmp, sizeof(tmp), "%s/.%s", spool, CS_SESSION_FILE);
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	snprintf(start, sizeof(start), "%llu", (unsigned long long)start_rt);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	{
		char out[8400];

		snprintf(out, sizeof(out), "%s%s%s", abs, strcmp(abs, "/") ? "/" : "", base);
		put_line(f, "output", out);
	}
	put_line(f, "command", command);
	put_line(f, "options", options);
	put_line(f, "start", start);
	put_line(f, "record_pid", pid);
	if (fclose(f) || rename(tmp, path)) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* 0, or -1 when the directory has no session file (not a recording's, or an older cuscope's). */
static int session_read(const char *spool, struct session *s)
{
	char path[4200], line[8192];
	FILE *f;

	memset(s, 0, sizeof(*s));
	snprintf(path, sizeof(path), "%s/%s", spool, CS_SESSION_FILE);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *tab = strchr(line, '\t'), *nl = strchr(line, '\n');

		if (!tab)
			continue;
		*tab = '\0';
		if (nl)
			*nl = '\0';
		if (!strcmp(line, "output"))
			snprintf(s->output, sizeof(s->output), "%s", tab + 1);
		else if (!strcmp(line, "command"))
			snprintf(s->command, sizeof(s->command), "%s", tab + 1);
		else if (!strcmp(line, "options"))
			snprintf(s->options, sizeof(s->options), "%s", tab + 1);
		else if (!strcmp(line, "start"))
			snprintf(s->start, sizeof(s->start), "%s", tab + 1);
		else if (!strcmp(line, "record_pid"))
			snprintf(s->record_pid, sizeof(s->record_pid), "%s", tab + 1);
	}
	fclose(f);
	return s->output[0] ? 0 : -1;
}

/* ---- the processes of a spool directory ---- */

/* A process's main spool file in the directory: "<pid>.cuspool" or "<pid>-<k>.cuspool". */
struct proc_file {
	char name[256];
	long pid, k;
	int live;   /* expected to answer */
	int done;   /* answered: 1 ok, -1 failed */
	unsigned long long len;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 1 when pid is a process that has not ended (a zombie has). */
static int alive(long pid)
{
	char buf[512];
	const char *p = cli_proc_stat(pid, buf, sizeof(buf));

	return p && p[0] != 'Z' && p[0] != 'X';
}

static int list_files(const char *spool, struct proc_file **out, size_t *n)
{
	DIR *d = opendir(spool);
	struct dirent *de;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		struct proc_file pf;
		char *end;

		if (!cs_import_is_spool_name(de->d_name) || !isdigit((unsigned char)de->d_name[0]))
			continue;
		memset(&pf, 0, sizeof(pf));
		snprintf(pf.name, sizeof(pf.name), "%s", de->d_name);
		pf.pid = strtol(de->d_name, &end, 10);
		pf.k = *end == '-' ? strtol(end + 1, NULL, 10) : 0;
		if (cs_grow((void **)out, &cap, *n + 1, sizeof(**out))) {
			closedir(d);
			return -1;
		}
		(*out)[(*n)++] = pf;
	}
	closedir(d);
	/* a pid may come back in a long job: only its newest file can be the live process's */
	for (size_t i = 0; i < *n; i++) {
		int newest = 1;

		for (size_t j = 0; j < *n; j++)
			if (j != i && (*out)[j].pid == (*out)[i].pid && (*out)[j].k > (*out)[i].k)
				newest = 0;
		(*out)[i].live = newest && alive((*out)[i].pid);
	}
	return 0;
}

/* Read "<dir>/<name>.done"; 1 when it is there. */
static int read_done(const char *dir, struct proc_file *pf)
{
	char path[4800];
	unsigned long long len = 0;
	int rc = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s%s", dir, pf->name, CS_DUMP_DONE_SUFFIX);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu %d", &len, &rc) != 2)
		rc = -1;
	fclose(f);
	pf->len = len;
	pf->done = rc == 0 ? 1 : -1;
	return 1;
}

/* Link "<spool>/<name>" into dir (an existing name there is kept). */
static int link_file(const char *spool, const char *dir, const char *name)
{
	char src[4800], dst[4800];

	snprintf(src, sizeof(src), "%s/%s", spool, name);
	snprintf(dst, sizeof(dst), "%s/%s", dir, name);
	return link(src, dst) && errno != EEXIST ? -1 : 0;
}

/* Link a process's files as they are: its main file and its segments "<stem>.<n>.cuseg". */
static void link_as_is(const char *spool, const char *dir, const struct proc_file *pf)
{
	size_t stem = strlen(pf->name) - strlen(CS_SPOOL_SUFFIX);
	size_t seg = strlen(CS_SPOOL_SEG_SUFFIX);
	DIR *d = opendir(spool);
	struct dirent *de;

	link_file(spool, dir, pf->name);
	while (d && (de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (len > stem + seg && !strncmp(de->d_name, pf->name, stem) &&
		    de->d_name[stem] == '.' && !strcmp(de->d_name + len - seg, CS_SPOOL_SEG_SUFFIX))
			link_file(spool, dir, de->d_name);
	}
	if (d)
		closedir(d);
}

/* Replace dir/name (a link to a file still written) by a copy of its first len bytes. */
static int cut_copy(const char *dir, const char *name, unsigned long long len)
{
	char path[4800], tmp[4800], buf[65536];
	int in, out, rc = -1;
	unsigned long long left = len;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.cut-%s", dir, name);
	in = open(path, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -1;
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	while (out >= 0 && left > 0) {
		ssize_t n = read(in, buf, left < sizeof(buf) ? (size_t)left : sizeof(buf));

		if (n <= 0 || write(out, buf, (size_t)n) != n)
			break;
		left -= (unsigned long long)n;
	}
	if (out >= 0 && left == 0 && close(out) == 0) {
		out = -1;
		rc = rename(tmp, path) ? -1 : 0;
	}
	if (out >= 0)
		close(out);
	if (rc)
		unlink(tmp);
	close(in);
	return rc;
}

/* 1 when the spool file's header says it is a ring's main file. */
static int is_ring_file(const char *spool, const char *name)
{
	char path[4800];
	struct cs_spool_header h;
	int fd, ring = 0;

	snprintf(path, sizeof(path), "%s/%s", spool, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (read(fd, &h, sizeof(h)) == (ssize_t)sizeof(h))
		ring = h.version == CS_SPOOL_VERSION_RING;
	close(fd);
	return ring;
}

/* ---- one dump ---- */

static void dump_progress(uint64_t done, uint64_t total, void *arg)
{
	cs_progress_set(arg, (int64_t)done, (int64_t)total);
}

/* The default output: the recording's with ".dump-<n>" before its extension. */
static void default_output(char *buf, size_t cap, const char *output, unsigned n)
{
	int stem = cli_path_stem(output);

	snprintf(buf, cap, "%.*s.dump-%u%s", stem, output, n,
		 output[stem] ? output + stem : ".db");
}

/* Ask for the directory n's snapshot: "dump.req" holds n, replaced whole. */
static int write_request(const char *spool, unsigned n)
{
	char text[32];
	int len = snprintf(text, sizeof(text), "%u\n", n);

	return cs_file_put(spool, CS_DUMP_REQUEST, text, (size_t)len);
}

/* The number after the last request, from "dump.req" (0 when none). */
static unsigned last_request(const char *spool)
{
	char path[4200];
	unsigned n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", spool, CS_DUMP_REQUEST);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%u", &n) != 1)
		n = 0;
	fclose(f);
	return n;
}

int cli_dump(const char *spool, const char *output, int force, double timeout_s, int quiet,
	     char *written, size_t cap)
{
	struct session s;
	struct proc_file *pf = NULL;
	size_t npf = 0, live = 0, answered = 0, failed = 0, late = 0;
	char dir[4200], out[8400], lockpath[4200], host[256] = "", dumpmeta[512], api[8];
	const char *meta[16];
	size_t nmeta = 0;
	unsigned n;
	int lock = -1, rc = CLI_EXIT_USAGE;
	double t0 = now_s(), deadline;
	cs_import_opts io;
	cs_import_stats st;
	cs_error err = {0, ""};
	cs_progress *progress = NULL;
	struct timespec rt;

	if (session_read(spool, &s)) {
		cli_error("'%s' is not the spool directory of a running 'cuscope record' (no %s "
			  "file: recorded by an older cuscope?)",
			  spool, CS_SESSION_FILE);
		return CLI_EXIT_USAGE;
	}
	/* one dump at a time per recording: the processes serve one request number at a time */
	snprintf(lockpath, sizeof(lockpath), "%s/dump.lock", spool);
	lock = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX)) {
		cli_error("cannot lock '%s': %s", lockpath, strerror(errno));
		goto out;
	}
	for (n = last_request(spool) + 1; n < DUMP_MAX_N; n++) {
		snprintf(dir, sizeof(dir), "%s/%s%u", spool, CS_DUMP_DIR_PREFIX, n);
		if (mkdir(dir, 0700)) {
			if (errno == EEXIST)
				continue;
			cli_error("cannot create '%s': %s", dir, strerror(errno));
			goto out;
		}
		if (output)
			snprintf(out, sizeof(out), "%s", output);
		else
			default_output(out, sizeof(out), s.output, n);
		if (output || force || access(out, F_OK))
			break;
		rmdir(dir); /* a dump of an earlier recording has that name: take the next */
	}
	if (n >= DUMP_MAX_N) {
		cli_error("no free dump number in '%s'", spool);
		goto out;
	}
	if (cli_output_check(out, force, 1))
		goto out_dir;
	if (list_files(spool, &pf, &npf)) {
		cli_error("cannot read '%s': %s", spool, strerror(errno));
		goto out_dir;
	}
	if (!npf) {
		cli_error("the recording has no CUDA process yet (nothing in '%s'); no dump written",
			  spool);
		goto out_dir;
	}
	if (write_request(spool, n)) {
		cli_error("cannot write the dump request in '%s': %s", spool, strerror(errno));
		goto out_dir;
	}
	for (size_t i = 0; i < npf; i++)
		live += pf[i].live;
	deadline = now_s() + timeout_s;
	while (answered + failed < live && now_s() < deadline) {
		struct timespec ts = {0, 20 * 1000 * 1000};

		nanosleep(&ts, NULL);
		for (size_t i = 0; i < npf; i++)
			if (pf[i].live && !pf[i].done && read_done(dir, &pf[i])) {
				if (pf[i].done > 0)
					answered++;
				else
					failed++;
			} else if (pf[i].live && !pf[i].done && !alive(pf[i].pid)) {
				pf[i].live = 0; /* it ended meanwhile: its files are whole */
				live--;
			}
	}
	for (size_t i = 0; i < npf; i++) {
		if (pf[i].done > 0) {
			/* a file still written holds more than the snapshot: cut it there */
			if (!is_ring_file(dir, pf[i].name) && cut_copy(dir, pf[i].name, pf[i].len))
				link_as_is(spool, dir, &pf[i]);
			continue;
		}
		if (pf[i].live && !pf[i].done)
			late++;
		link_as_is(spool, dir, &pf[i]);
	}
	if (late)
		cli_error("warning: %zu process%s did not answer within %g s; %s files are taken "
			  "as they are",
			  late, late == 1 ? "" : "es", timeout_s, late == 1 ? "its" : "their");
	if (failed)
		cli_error("warning: %zu process%s could not put %s files aside; %s taken as they "
			  "are",
			  failed, failed == 1 ? "" : "es", failed == 1 ? "its" : "their",
			  failed == 1 ? "they are" : "theirs are");
	clock_gettime(CLOCK_REALTIME, &rt);
	snprintf(dumpmeta, sizeof(dumpmeta),
		 "{\"n\":%u,\"realtime_ns\":%llu,\"processes\":%zu,\"running\":%zu,"
		 "\"answered\":%zu,\"late\":%zu}",
		 n, (unsigned long long)rt.tv_sec * 1000000000ull + (unsigned long long)rt.tv_nsec,
		 npf, live, answered, late + failed);
	snprintf(api, sizeof(api), "%s", strstr(s.options, "api=all") ? "all" : "default");
	gethostname(host, sizeof(host) - 1);
	meta[nmeta++] = "command";
	meta[nmeta++] = s.command;
	meta[nmeta++] = "host";
	meta[nmeta++] = host;
	meta[nmeta++] = "api";
	meta[nmeta++] = api;
	meta[nmeta++] = "record_options";
	meta[nmeta++] = s.options;
	if (s.start[0]) {
		meta[nmeta++] = "record_start_realtime_ns";
		meta[nmeta++] = s.start;
	}
	meta[nmeta++] = CS_META_DUMP;
	meta[nmeta++] = dumpmeta;
	meta[nmeta] = NULL;
	memset(&io, 0, sizeof(io));
	io.overwrite = force;
	io.meta = meta;
	if (!quiet && (progress = cs_progress_start("importing the dump"))) {
		io.progress = dump_progress;
		io.progress_arg = progress;
	}
	memset(&st, 0, sizeof(st));
	if (cs_import_dir(dir, out, &io, &st, &err) < 0) {
		cs_progress_end(progress);
		cli_error("dump %u: %s", n, err.msg[0] ? err.msg : "import failed");
		goto out_dir;
	}
	cs_progress_end(progress);
	if (!quiet) {
		cli_error("dump %u of '%s' after %.1f s: %zu process%s (%zu running, %zu answered)",
			  n, s.command, now_s() - t0, npf, npf == 1 ? "" : "es", live, answered);
		cli_import_summary(out, &st, 0);
	}
	if (written && cap)
		snprintf(written, cap, "%s", out);
	rc = CLI_EXIT_OK;
out_dir:
	cli_remove_tree(dir);
out:
	free(pf);
	if (lock >= 0)
		close(lock); /* releases the lock */
	return rc;
}

/* ---- finding the recordings ---- */

struct found {
	char spool[4096];
	long record_pid;
};

/* The spool directory and record pid in /proc/<pid>/environ; 0 when both are there. */
static int environ_of(long pid, char *spool, size_t cap, long *record_pid)
{
	char path[64], *buf = NULL;
	size_t len = 0, bcap = 0;
	int fd, found = 0;
	ssize_t got;

	snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	for (;;) {
		if (cs_grow((void **)&buf, &bcap, len + 4097, 1)) {
			close(fd);
			free(buf);
			return -1;
		}
		got = read(fd, buf + len, 4096);
		if (got <= 0)
			break;
		len += (size_t)got;
	}
	close(fd);
	if (!buf)
		return -1;
	buf[len] = '\0';
	for (size_t i = 0; i < len; i += strlen(buf + i) + 1) {
		const char *e = buf + i;
		size_t ks = strlen(CS_ENV_SPOOL_DIR), kr = strlen(CS_ENV_RECORD_PID);

		if (!strncmp(e, CS_ENV_SPOOL_DIR, ks) && e[ks] == '=') {
			snprintf(spool, cap, "%s", e + ks + 1);
			found |= 1;
		} else if (!strncmp(e, CS_ENV_RECORD_PID, kr) && e[kr] == '=') {
			*record_pid = strtol(e + kr + 1, NULL, 10);
			found |= 2;
		}
	}
	free(buf);
	return found == 3 ? 0 : -1;
}

/* The recordings running under `cuscope record` of this user: of pid (a profiled process or its
 * record), or all (pid 0). */
static int find_recordings(long pid, struct found **out, size_t *n)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		struct found f;
		long p;
		char *end;
		size_t i;

		p = strtol(de->d_name, &end, 10);
		if (*end || p <= 0 || environ_of(p, f.spool, sizeof(f.spool), &f.record_pid))
			continue;
		if (pid && p != pid && f.record_pid != pid)
			continue;
		if (!alive(f.record_pid) || access(f.spool, F_OK))
			continue;
		for (i = 0; i < *n && strcmp((*out)[i].spool, f.spool); i++)
			;
		if (i < *n)
			continue;
		if (cs_grow((void **)out, &cap, *n + 1, sizeof(**out))) {
			closedir(d);
			return -1;
		}
		(*out)[(*n)++] = f;
	}
	closedir(d);
	return 0;
}

/* ---- the command ---- */

static void dump_usage(FILE *out)
{
	fputs("usage: cuscope dump [-o FILE] [--force] [--timeout SEC] PID | --all | SPOOL_DIR\n"
	      "\n"
	      "Write the trace of a job that 'cuscope record' is still recording, without stopping "
	      "it: what\n"
	      "its processes recorded so far (with 'record --ring', the ring's window). PID is a "
	      "process of\n"
	      "the job or the 'cuscope record' running it; --all dumps every recording of this "
	      "user. Each\n"
	      "process puts its files aside within one flush period (0.2 s); the dump is a normal "
	      "trace\n"
	      "(report, view, export and gate read it).\n"
	      "\n"
	      "Options:\n"
	      "  -o, --output FILE  trace to write (one recording only; default: the recording's "
	      "output with\n"
	      "                     '.dump-N' before its extension, N counting the dumps of the "
	      "recording)\n"
	      "      --force        replace FILE when it exists\n"
	      "      --timeout SEC  how long to wait for the processes (default 10); one that has "
	      "not\n"
	      "                     answered by then is taken as its files are\n"
	      "      --all          dump every running recording of this user\n"
	      "  -q, --quiet        no summary\n"
	      "  -h, --help         show this help\n"
	      "\n"
	      "'cuscope record --dump-on signal=SIG' makes the record process dump on signal SIG "
	      "too\n"
	      "(kill -SIG <record pid>).\n",
	      out);
}

int cmd_dump(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"force", no_argument, NULL, 'f'},
		{"timeout", required_argument, NULL, 'T'},
		{"all", no_argument, NULL, 'a'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *output = NULL;
	int c, force = 0, all = 0, quiet = 0, rc = CLI_EXIT_OK;
	double timeout_s = DUMP_TIMEOUT_S;
	struct found *found = NULL;
	size_t nfound = 0;
	struct stat sb;

	while ((c = cli_getopt(argc, argv, "o:fqh", longopts)) != -1) {
		char *end;

		switch (c) {
		case 'o':
			output = optarg;
			break;
		case 'f':
			force = 1;
			break;
		case 'T':
			timeout_s = strtod(optarg, &end);
			if (end == optarg || *end || !(timeout_s > 0) || timeout_s > 86400)
				return cli_usage_error(argv[0],
						       "invalid --timeout '%s' (seconds, above 0)",
						       optarg);
			break;
		case 'a':
			all = 1;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			dump_usage(stdout);
			return CLI_EXIT_OK;
		default:
			return CLI_EXIT_USAGE;
		}
	}
	if (all == (optind < argc))
		return cli_usage_error(argv[0], all ? "give --all or a PID, not both"
						    : "missing PID (or --all)");
	if (optind + 1 < argc)
		return cli_usage_error(argv[0], "one PID or spool directory at a time (or --all)");
	if (output && !*output)
		return cli_usage_error(argv[0], "empty output file name");
	if (!all && stat(argv[optind], &sb) == 0 && S_ISDIR(sb.st_mode))
		return cli_dump(argv[optind], output, force, timeout_s, quiet, NULL, 0);
	if (!all) {
		char *end;
		long pid = strtol(argv[optind], &end, 10);

		if (*end || pid <= 0)
			return cli_usage_error(argv[0],
					       "'%s' is not a process id or a spool directory",
					       argv[optind]);
		if (find_recordings(pid, &found, &nfound) || !nfound) {
			free(found);
			cli_error("process %ld is not a job that 'cuscope record' of this user is "
				  "recording, nor the record itself",
				  pid);
			return CLI_EXIT_USAGE;
		}
	} else if (find_recordings(0, &found, &nfound) || !nfound) {
		free(found);
		cli_error("no job of this user is being recorded by 'cuscope record'");
		return CLI_EXIT_USAGE;
	}
	if (output && nfound > 1) {
		free(found);
		return cli_usage_error(argv[0], "-o names one trace, and %zu recordings run",
				       nfound);
	}
	for (size_t i = 0; i < nfound; i++)
		if (cli_dump(found[i].spool, output, force, timeout_s, quiet, NULL, 0))
			rc = CLI_EXIT_USAGE;
	free(found);
	return rc;
}
