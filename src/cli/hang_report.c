/*
 * hang_report.c - what `cuscope record --hang-after SEC` says about a hang: the processes' notices
 * ("hang.<pid>" in the spool directory, src/collectors/hang.c: the threads waiting, since when, the
 * latest GPU work completed and the kernels launched after it) and, from the dump written at that
 * moment, those launches' call sites, the last GPU work completed on each stream, the NCCL
 * kernels each process completed (of several processes, the one with fewer is the one the others
 * wait for in a collective) and NCCL's calls per communicator from its NVTX ranges (their payload
 * gives the communicator and the size: the process that made fewer calls on a communicator has
 * not made the one the others wait in). Before the dump, record adds to each notice the native
 * call stacks of its waiting threads (cli_hang_native, read from outside the process:
 * native_stack.c).
 */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cuscope/demangle.h"
#include "cuscope/files.h"
#include "cuscope/grow.h"
#include "cuscope/trace.h"

#define HANG_MAX_PROCS	 64
#define HANG_MAX_STREAMS 256
/* The launches not completed a notice lists at most (src/collectors/hang.c: HANG_PENDING). */
#define HANG_MAX_PENDING 16
/* A notice's size at most (src/collectors/hang.c writes 32 KiB at most), native frames added. */
#define HANG_NOTICE_MAX (256 * 1024)

/* A launch not completed ("pending CORR TID KERNEL"), and the call site of its launch in the dump
 * (CS_ID_NONE until pending_sites() finds it). */
struct pending {
	unsigned corr, tid;
	char kernel[512]; /* as CUPTI named it (mangled); "?" when not known */
	int64_t stack;
};

struct notice {
	long pid;
	unsigned long long now, gpu_done;
	unsigned last_corr, done_corr;
	char threads[32768]; /* the thread lines and their frame lines, as reported */
	struct pending pending[HANG_MAX_PENDING]; /* oldest first */
	int npending;
};

struct stream_last {
	uint32_t pid, stream;
	int64_t end;
	char name[160];
	/* the NCCL kernels completed on the stream (a communicator launches on a stream of its
	 * own), and the last of them */
	int64_t nccl, nccl_end;
	char nccl_last[160];
};

/* The last kernel each thread launched from a call site with a recorded stack. */
struct thread_site {
	uint32_t pid, tid;
	int64_t start, stack;
};

#define HANG_MAX_THREADS 1024

/* The NCCL calls of one communicator in one process, from NCCL's NVTX ranges (domain "NCCL", a
 * payload with "NCCL communicator ID" and "Message size [bytes]": the collectives and
 * point-to-point calls), and the last of them. */
struct comm_last {
	uint32_t pid, tid; /* the last call's thread */
	uint64_t comm;
	int64_t calls;
	int64_t start, end; /* the last call's range (end CS_TS_UNKNOWN while it never ended) */
	int64_t next;	    /* the start of the thread's next NCCL call after it, INT64_MAX: none */
	int64_t bytes;
	char call[64], op[32];
	int64_t stream; /* of the NCCL kernel launched by the last call, -1 when none is in the dump */
};

#define HANG_MAX_COMMS 256

struct proc_nccl {
	uint32_t pid;
	int64_t completed;
	char last[160];
};

static int has_nccl(const char *name)
{
	for (const char *p = name; p && *p; p++)
		if (tolower((unsigned char)p[0]) == 'n' && !strncasecmp(p, "nccl", 4))
			return 1;
	return 0;
}

/* The first NCCL kernel among notice n's launches not completed (its name, mangled as CUPTI gave
 * it), or NULL. */
static const char *pending_nccl(const struct notice *n)
{
	for (int k = 0; k < n->npending; k++)
		if (has_nccl(n->pending[k].kernel))
			return n->pending[k].kernel;
	return NULL;
}

/* " f.py:12 in step < g.py:40 in main" for stack: Python frames when it has them, else native
 * symbols; three at most. 0, or -1 when the stack cannot be read. */
static int print_frames(FILE *out, cs_trace *t, int64_t stack)
{
	const cs_frame *f;
	cs_error err = {0, ""};
	int n, shown = 0, python = 0;

	if (stack == CS_ID_NONE || cs_trace_get_stack(t, stack, &f, &n, &err))
		return -1;
	for (int j = 0; j < n; j++)
		python |= f[j].kind == 2;
	for (int j = 0; j < n && shown < 3; j++) {
		if (python ? f[j].kind != 2 : !f[j].symbol)
			continue;
		if (python)
			fprintf(out, "%s %s:%d in %s", shown ? " <" : "", f[j].file ? f[j].file : "?",
				f[j].line, f[j].symbol ? f[j].symbol : "?");
		else
			fprintf(out, "%s %.100s", shown ? " <" : "", f[j].symbol);
		shown++;
	}
	return 0;
}

/* "    its last launch with a recorded site: f.py:12 in step < g.py:40 in main": of thread tid of
 * process pid, or (tid 0) of the process's thread that launched last, named then. */
static void print_site(FILE *out, cs_trace *t, const struct thread_site *th, int nth, long pid,
		       unsigned tid)
{
	int last = -1;

	for (int i = 0; i < nth; i++)
		if ((long)th[i].pid == pid && (!tid || th[i].tid == tid) &&
		    th[i].stack != CS_ID_NONE && (last < 0 || th[i].start > th[last].start))
			last = i;
	if (last < 0)
		return;
	fprintf(out, "    its last launch with a recorded site");
	if (!tid)
		fprintf(out, " (thread %u)", th[last].tid);
	fputc(':', out);
	print_frames(out, t, th[last].stack);
	fputc('\n', out);
}

/* The lines of text that start with "KEY TID " (KEY "frame" or "native"), in order, each passed
 * to show with its text after that prefix. */
static void thread_lines(FILE *out, const char *text, const char *key, unsigned tid,
			 void (*show)(FILE *out, const char *rest, int nth))
{
	size_t klen = strlen(key);
	int shown = 0;

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char *end;

		if (strncmp(l, key, klen) || l[klen] != ' ' ||
		    strtoul(l + klen + 1, &end, 10) != tid || *end != ' ')
			continue;
		show(out, end + 1, shown++);
	}
}

/* "FUNC+0xOFF<TAB>MODULE": a native frame. */
static void show_native(FILE *out, const char *rest, int nth)
{
	char func[400] = "", module[300] = "";

	if (sscanf(rest, "%399[^\t]\t%299[^\n]", func, module) == 2)
		fprintf(out, "    %s %s (%s)\n", nth ? "         " : "native:  ", func, module);
}

/* Where the first thread of process pid is now (a process that is in no CUDA wait: its native
 * frames, read as the waiting threads' are), or why that could not be read. */
static void print_first_thread(FILE *out, long pid)
{
	static char text[65536];
	char err[256];

	fprintf(out, "    its first thread now:\n");
	if (cli_native_stack(pid, pid, text, sizeof(text), err, sizeof(err)) <= 0)
		fprintf(out, "    native:   not read: %s\n", err);
	else
		thread_lines(out, text, "native", (unsigned)pid, show_native);
}

/*
 * Several processes with NCCL kernels: those whose notice has an NCCL kernel launched and not
 * completed wait in a collective; one of the dump's NCCL processes with none pending (no notice, or
 * a notice without one) has not launched it. Says so when both kinds are there.
 */
static void print_collective(FILE *out, const struct notice *n, int nn, const struct proc_nccl *p,
			     int np, cs_trace *t, const struct thread_site *th, int nth)
{
	const char *first = NULL;
	int waiting = 0, missing = 0;

	for (int i = 0; i < nn; i++) {
		const char *k = pending_nccl(&n[i]);

		if (k && !waiting++)
			first = k;
	}
	if (!waiting || np < 2)
		return;
	for (int j = 0; j < np; j++) {
		int pends = 0;

		for (int i = 0; i < nn; i++)
			pends |= n[i].pid == (long)p[j].pid && pending_nccl(&n[i]);
		if (pends)
			continue;
		if (!missing++)
			fprintf(out, "the collective %d process%s wait%s in (%.200s, launched and not "
				     "completed):\n",
				waiting, waiting > 1 ? "es" : "", waiting > 1 ? "" : "s",
				cs_demangle_short(first));
		fprintf(out,
			"  process %u has not launched it: no NCCL kernel of it is pending (its last "
			"completed: %.120s)\n",
			p[j].pid, p[j].last[0] ? cs_demangle_short(p[j].last) : "none");
		print_first_thread(out, p[j].pid);
		if (t)
			print_site(out, t, th, nth, p[j].pid, 0);
	}
}

/* The pid of a hang notice's file name "hang.<pid>"; 0 for any other name (a temporary file being
 * written, another notice). */
static long notice_pid(const char *name)
{
	char *end;
	long pid;

	if (strncmp(name, "hang.", 5))
		return 0;
	pid = strtol(name + 5, &end, 10);
	return *end || pid <= 0 ? 0 : pid;
}

/* Read "hang.<pid>" notices of spool into n[] (at most max), removing them. */
static int read_notices(const char *spool, struct notice *n, int max)
{
	DIR *d = opendir(spool);
	struct dirent *de;
	int count = 0;

	while (d && count < max && (de = readdir(d))) {
		char path[4400], line[1024];
		FILE *f;
		long pid = notice_pid(de->d_name);

		if (!pid)
			continue;
		snprintf(path, sizeof(path), "%s/%s", spool, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		memset(&n[count], 0, sizeof(n[count]));
		n[count].pid = pid;
		while (fgets(line, sizeof(line), f)) {
			size_t used = strlen(n[count].threads);

			if (sscanf(line, "now %llu", &n[count].now) == 1 ||
			    sscanf(line, "gpu_done %llu", &n[count].gpu_done) == 1 ||
			    sscanf(line, "launched %u %u", &n[count].last_corr,
				   &n[count].done_corr) == 2)
				continue;
			if ((!strncmp(line, "thread ", 7) || !strncmp(line, "frame ", 6) ||
			     !strncmp(line, "native", 6)) &&
			    used + strlen(line) < sizeof(n[count].threads))
				strcat(n[count].threads, line);
			if (n[count].npending < HANG_MAX_PENDING) {
				struct pending *x = &n[count].pending[n[count].npending];

				if (sscanf(line, "pending %u %u %511s", &x->corr, &x->tid, x->kernel) ==
				    3) {
					x->stack = CS_ID_NONE;
					n[count].npending++;
				}
			}
		}
		fclose(f);
		unlink(path);
		count++;
	}
	if (d)
		closedir(d);
	return count;
}

/* The number after "KEY": in a payload's JSON text (written by src/collectors/nvtx_payload.c);
 * 0 when key is not there with an unsigned number. Read by hand: cJSON keeps numbers as doubles,
 * which would round a 64-bit communicator id. */
static int payload_u64(const char *json, const char *key, uint64_t *v)
{
	char pat[96];
	const char *p;
	char *end;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = json ? strstr(json, pat) : NULL;
	if (!p || !isdigit((unsigned char)p[strlen(pat)]))
		return 0;
	*v = strtoull(p + strlen(pat), &end, 10);
	return 1;
}

/* The string after "KEY": (an enum's name) into buf; "" when there is none. */
static void payload_str(const char *json, const char *key, char *buf, size_t cap)
{
	char pat[96];
	const char *p;
	size_t n = 0;

	buf[0] = '\0';
	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	p = json ? strstr(json, pat) : NULL;
	if (!p)
		return;
	for (p += strlen(pat); *p && *p != '"' && *p != '\\' && n + 1 < cap; p++)
		buf[n++] = isprint((unsigned char)*p) ? *p : '?';
	buf[n] = '\0';
}

/* The NCCL calls per communicator and process, from the dump's NVTX ranges, in c[] (*nc). */
static int scan_nccl_calls(cs_trace *t, struct comm_last *c, int *nc)
{
	cs_iter *it = NULL;
	cs_filter f = cs_filter_all();
	cs_error err = {0, ""};
	cs_event ev;
	int rc;

	*nc = 0;
	if (cs_iter_open(t, CS_EV_NVTX, &f, &it, &err))
		return -1;
	while ((rc = cs_iter_next(it, &ev)) > 0) {
		const cs_nvtx *x = &ev.u.nvtx;
		uint64_t comm, bytes;
		int i;

		if (!x->domain || strcmp(x->domain, "NCCL") || !x->payload ||
		    !payload_u64(x->payload, "NCCL communicator ID", &comm) ||
		    !payload_u64(x->payload, "Message size [bytes]", &bytes))
			continue;
		/* ranges come by start: this call is the next after the earlier ones of its thread */
		for (i = 0; i < *nc; i++)
			if (c[i].pid == x->pid && c[i].tid == x->tid && c[i].next == INT64_MAX)
				c[i].next = x->start;
		for (i = 0; i < *nc && (c[i].pid != x->pid || c[i].comm != comm); i++)
			;
		if (i == *nc) {
			if (*nc >= HANG_MAX_COMMS)
				continue;
			memset(&c[i], 0, sizeof(c[i]));
			c[i].pid = x->pid;
			c[i].comm = comm;
			(*nc)++;
		}
		c[i].calls++;
		c[i].tid = x->tid;
		c[i].start = x->start;
		c[i].end = x->end;
		c[i].next = INT64_MAX;
		c[i].bytes = bytes > INT64_MAX ? INT64_MAX : (int64_t)bytes;
		c[i].stream = -1;
		snprintf(c[i].call, sizeof(c[i].call), "%s", x->text ? x->text : "?");
		payload_str(x->payload, "Reduction operation", c[i].op, sizeof(c[i].op));
	}
	cs_iter_close(it);
	return rc < 0 ? -1 : 0;
}

/* An NCCL kernel of the dump: the stream of the last call it was launched by (inside the call's
 * range on its thread, or, for calls grouped by ncclGroupEnd, after it and before the thread's
 * next NCCL call). */
static void nccl_kernel_call(struct comm_last *c, int nc, const cs_kernel *k)
{
	for (int i = 0; i < nc; i++)
		if (c[i].pid == k->pid && c[i].tid == k->launch_tid && c[i].stream < 0 &&
		    k->launch_start >= c[i].start && k->launch_start < c[i].next)
			c[i].stream = k->stream_id;
}

/* The last NCCL call on each communicator, and the processes that made fewer calls on a
 * communicator than others: the collective the others wait in is one they have not called. */
static void print_comms(FILE *out, const struct comm_last *c, int nc)
{
	for (int i = 0; i < nc; i++) {
		if (!i)
			fprintf(out, "the last NCCL call on each communicator (NCCL's NVTX ranges, "
				     "from the dump):\n");
		fprintf(out, "  process %u communicator %#llx: %lld call%s, the last %.60s of %lld B",
			c[i].pid, (unsigned long long)c[i].comm, (long long)c[i].calls,
			c[i].calls == 1 ? "" : "s", c[i].call, (long long)c[i].bytes);
		if (c[i].op[0])
			fprintf(out, " (%s)", c[i].op);
		if (c[i].stream >= 0)
			fprintf(out, ", its kernel completed on stream %lld\n", (long long)c[i].stream);
		else
			fprintf(out, ", no kernel of it completed\n");
	}
	for (int i = 0; i < nc; i++) {
		int most = i;

		for (int j = 0; j < nc; j++)
			if (c[j].comm == c[i].comm && c[j].calls > c[most].calls)
				most = j;
		if (most != i)
			fprintf(out,
				"communicator %#llx: process %u made %lld NCCL call%s on it, process "
				"%u %lld: process %u has not made the last call of process %u (%.60s "
				"of %lld B)\n",
				(unsigned long long)c[i].comm, c[i].pid, (long long)c[i].calls,
				c[i].calls == 1 ? "" : "s", c[most].pid, (long long)c[most].calls,
				c[i].pid, c[most].pid, c[most].call, (long long)c[most].bytes);
	}
}

/* The last GPU work completed per stream, the NCCL kernels per process and each thread's last
 * launch site, from the dump (left open in *tp for the stacks). */
static int scan_dump(const char *trace, cs_trace **tp, struct stream_last *s, int *ns,
		     struct proc_nccl *p, int *np, struct thread_site *th, int *nth,
		     struct comm_last *c, int *nc)
{
	cs_trace *t = NULL;
	cs_iter *it = NULL;
	cs_filter f = cs_filter_all();
	cs_error err = {0, ""};
	cs_event ev;
	int rc;

	*ns = *np = *nth = 0;
	*tp = NULL;
	if (cs_trace_open(trace, &t, &err))
		return -1;
	if (scan_nccl_calls(t, c, nc) || cs_iter_open(t, CS_EV_KERNEL, &f, &it, &err)) {
		cs_trace_close(t);
		return -1;
	}
	while ((rc = cs_iter_next(it, &ev)) > 0) {
		const cs_kernel *k = &ev.u.kernel;
		int i, si; /* si: the kernel's stream in s[], *ns when it has no room */

		for (si = 0; si < *ns && (s[si].pid != k->pid || s[si].stream != k->stream_id); si++)
			;
		if (si == *ns && *ns < HANG_MAX_STREAMS) {
			memset(&s[si], 0, sizeof(s[si]));
			s[si].pid = k->pid;
			s[si].stream = k->stream_id;
			s[si].end = INT64_MIN;
			(*ns)++;
		}
		if (si < *ns && k->end != CS_TS_UNKNOWN && k->end >= s[si].end) {
			s[si].end = k->end;
			snprintf(s[si].name, sizeof(s[si].name), "%s", k->name ? k->name : "?");
		}
		if (k->stack_id != CS_ID_NONE && k->launch_tid) {
			for (i = 0; i < *nth && (th[i].pid != k->pid || th[i].tid != k->launch_tid);
			     i++)
				;
			if (i == *nth && *nth < HANG_MAX_THREADS)
				th[(*nth)++] = (struct thread_site){k->pid, k->launch_tid, INT64_MIN,
								    CS_ID_NONE};
			if (i < *nth && k->launch_start >= th[i].start) {
				th[i].start = k->launch_start;
				th[i].stack = k->stack_id;
			}
		}
		if (!has_nccl(k->name))
			continue;
		nccl_kernel_call(c, *nc, k);
		if (si < *ns) {
			s[si].nccl++;
			if (k->end != CS_TS_UNKNOWN && (s[si].nccl == 1 || k->end >= s[si].nccl_end)) {
				s[si].nccl_end = k->end;
				snprintf(s[si].nccl_last, sizeof(s[si].nccl_last), "%s", k->name);
			}
		}
		for (i = 0; i < *np && p[i].pid != k->pid; i++)
			;
		if (i == *np && *np < HANG_MAX_PROCS) {
			memset(&p[i], 0, sizeof(p[i]));
			p[i].pid = k->pid;
			(*np)++;
		}
		if (i < *np) {
			p[i].completed++;
			snprintf(p[i].last, sizeof(p[i].last), "%s", k->name);
		}
	}
	cs_iter_close(it);
	if (rc < 0) {
		cs_trace_close(t);
		return -1;
	}
	*tp = t;
	return 0;
}

/* The call sites of the notices' launches not completed, from the dump's API records. */
static void pending_sites(cs_trace *t, struct notice *n, int nn)
{
	cs_iter *it = NULL;
	cs_filter f = cs_filter_all();
	cs_error err = {0, ""};
	cs_event ev;
	int any = 0;

	for (int i = 0; i < nn; i++)
		any |= n[i].npending > 0;
	if (!any || !t || cs_iter_open(t, CS_EV_API, &f, &it, &err))
		return;
	while (cs_iter_next(it, &ev) > 0)
		for (int i = 0; i < nn; i++)
			for (int k = 0; n[i].pid == (long)ev.u.api.pid && k < n[i].npending; k++)
				if (n[i].pending[k].corr == ev.u.api.correlation_id)
					n[i].pending[k].stack = ev.u.api.stack_id;
	cs_iter_close(it);
}

/* "  launched after ...", then a line per launch of notice n: its kernel and where from. */
static void print_pending(FILE *out, cs_trace *t, const struct notice *n)
{
	if (n->npending)
		fprintf(out, "  launched after the last GPU work that completed, oldest first:\n");
	for (int k = 0; k < n->npending; k++) {
		const struct pending *x = &n->pending[k];

		fprintf(out, "    correlation id %u (thread %u): %.200s", x->corr, x->tid,
			strcmp(x->kernel, "?") ? cs_demangle_short(x->kernel) : "a kernel not named");
		if (x->stack != CS_ID_NONE) {
			fprintf(out, ", launched from");
			print_frames(out, t, x->stack);
		}
		fputc('\n', out);
	}
}

/* The native stacks of the waiting threads of one notice, appended to it: each "thread TID ..."
 * line gets its "native TID ..." lines (or a "native_error TID ..." line) at the notice's end;
 * the report puts them under the thread. */
static int native_of_notice(const char *path, long pid)
{
	static char stacks[65536];
	char err[256], *text = cs_read_small_file(path, HANG_NOTICE_MAX, 1);
	int threads = 0;
	FILE *f;

	if (!text)
		return 0;
	stacks[0] = '\0';
	for (char *l = text, *next; l && *l; l = next) {
		unsigned tid = 0;
		size_t have = strlen(stacks);

		next = strchr(l, '\n');
		if (next)
			next++;
		if (sscanf(l, "thread %u ", &tid) != 1 || have + 512 > sizeof(stacks))
			continue;
		if (cli_native_stack(pid, tid, stacks + have, sizeof(stacks) - have, err,
				     sizeof(err)) > 0)
			threads++;
		else
			snprintf(stacks + have, sizeof(stacks) - have, "native_error %u %s\n", tid,
				 err);
	}
	free(text);
	if (stacks[0] && (f = fopen(path, "a"))) {
		fputs(stacks, f);
		fclose(f);
	}
	return threads;
}

int cli_hang_native(const char *spool)
{
	DIR *d = opendir(spool);
	struct dirent *de;
	int threads = 0;

	while (d && (de = readdir(d))) {
		char path[4400];
		long pid = notice_pid(de->d_name);

		if (!pid)
			continue;
		snprintf(path, sizeof(path), "%s/%s", spool, de->d_name);
		threads += native_of_notice(path, pid);
	}
	if (d)
		closedir(d);
	return threads;
}

/* "LINE FILE<TAB>FUNC": a Python frame. */
static void show_frame(FILE *out, const char *rest, int nth)
{
	char file[600] = "", func[300] = "";
	int at = 0;

	if (sscanf(rest, "%d %599[^\t]\t%299[^\n]", &at, file, func) == 3)
		fprintf(out, "    %s %s:%d in %s\n", nth ? "         " : "Python:  ", file, at,
			func);
}

/* "TEXT": why the native stack could not be read. */
static void show_native_error(FILE *out, const char *rest, int nth)
{
	(void)nth;
	fprintf(out, "    native:   not read: %.*s\n", (int)strcspn(rest, "\n"), rest);
}

/* Each waiting thread of notice n: its wait, its Python frames, its native frames (innermost
 * first), and where it last launched GPU work from (in the dump t). */
static void print_threads(FILE *out, cs_trace *t, const struct thread_site *th, int nth,
			  const struct notice *n)
{
	for (const char *l = n->threads; l && *l;
	     l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		unsigned tid = 0, corr = 0;
		unsigned long long start = 0;
		char kind[16] = "", name[256] = "";

		if (sscanf(l, "thread %u %15s %llu %u %255s", &tid, kind, &start, &corr, name) < 4)
			continue;
		fprintf(out, "  thread %u: %s %s for %.1f s (correlation id %u)\n", tid,
			!strcmp(kind, "query") ? "spinning on" : "waiting in", name,
			n->now > start ? (double)(n->now - start) / 1e9 : 0.0, corr);
		thread_lines(out, n->threads, "frame", tid, show_frame);
		thread_lines(out, n->threads, "native", tid, show_native);
		thread_lines(out, n->threads, "native_error", tid, show_native_error);
		if (t)
			print_site(out, t, th, nth, n->pid, tid);
	}
}

void cli_notices(const char *spool, int *slow, int *hang)
{
	DIR *d = opendir(spool);
	struct dirent *de;

	*slow = *hang = 0;
	while (d && (de = readdir(d))) {
		if (!strncmp(de->d_name, "slow.", 5))
			*slow = 1;
		else if (notice_pid(de->d_name))
			*hang = 1;
	}
	if (d)
		closedir(d);
}

int cli_path_stem(const char *path)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	const char *dot = strrchr(base, '.');

	return dot && dot != base ? (int)(dot - path) : (int)strlen(path);
}

int cli_hang_report(FILE *out, const char *spool, const char *command, const char *dump)
{
	static struct notice n[HANG_MAX_PROCS];
	static struct stream_last s[HANG_MAX_STREAMS];
	static struct proc_nccl p[HANG_MAX_PROCS];
	static struct thread_site th[HANG_MAX_THREADS];
	static struct comm_last c[HANG_MAX_COMMS];
	int nn = read_notices(spool, n, HANG_MAX_PROCS), ns = 0, np = 0, nth = 0, nc = 0, scanned;
	cs_trace *t = NULL;
	int64_t last_end = INT64_MIN;

	if (!nn)
		return 0;
	scanned = dump && scan_dump(dump, &t, s, &ns, p, &np, th, &nth, c, &nc) == 0;
	pending_sites(t, n, nn);
	for (int i = 0; i < ns; i++)
		if (s[i].end > last_end)
			last_end = s[i].end;
	fprintf(out, "hang report of '%s'\n", command);
	for (int i = 0; i < nn; i++) {
		double quiet = n[i].now > n[i].gpu_done && n[i].gpu_done
				       ? (double)(n[i].now - n[i].gpu_done) / 1e9
				       : -1;

		if (quiet >= 0)
			fprintf(out, "process %ld: no GPU work has completed for %.1f s\n",
				n[i].pid, quiet);
		else
			fprintf(out, "process %ld: no GPU work has completed since it began\n",
				n[i].pid);
		print_threads(out, t, th, nth, &n[i]);
		if ((int32_t)(n[i].last_corr - n[i].done_corr) > 0)
			fprintf(out,
				"  work launched after the last that completed: correlation ids up "
				"to %u launched, %u the last completed\n",
				n[i].last_corr, n[i].done_corr);
		print_pending(out, t, &n[i]);
	}
	if (ns)
		fprintf(out, "the last kernel completed on each stream (from the dump):\n");
	for (int j = 0; j < ns; j++)
		fprintf(out,
			"  process %u stream %u: last completed kernel %.120s, %.1f s before the "
			"last GPU work of the dump\n",
			s[j].pid, s[j].stream, s[j].name, (double)(last_end - s[j].end) / 1e9);
	if (np > 1) {
		int lo = 0, hi = 0;

		for (int i = 1; i < np; i++) {
			if (p[i].completed < p[lo].completed)
				lo = i;
			if (p[i].completed > p[hi].completed)
				hi = i;
		}
		fprintf(out, "NCCL kernels completed by process:");
		for (int i = 0; i < np; i++)
			fprintf(out, " %u: %lld", p[i].pid, (long long)p[i].completed);
		fputc('\n', out);
		if (p[lo].completed < p[hi].completed)
			fprintf(out,
				"process %u completed fewer collectives than process %u (%lld against "
				"%lld): the others wait for it in a collective it has not launched or "
				"not finished (its last: %.120s)\n",
				p[lo].pid, p[hi].pid, (long long)p[lo].completed,
				(long long)p[hi].completed, p[lo].last);
	}
	for (int j = 0, first = 1; j < ns; j++) {
		if (!s[j].nccl)
			continue;
		if (first)
			fprintf(out, "the last NCCL collective completed on each stream (a "
				     "communicator's own stream, from the dump):\n");
		first = 0;
		fprintf(out,
			"  process %u stream %u: %lld completed, the last %.120s, %.1f s before the last "
			"GPU work of the dump\n",
			s[j].pid, s[j].stream, (long long)s[j].nccl, cs_demangle_short(s[j].nccl_last),
			(double)(last_end - s[j].nccl_end) / 1e9);
	}
	print_comms(out, c, nc);
	print_collective(out, n, nn, p, np, t, th, nth);
	if (!scanned)
		fprintf(out, "(no dump could be read: the streams' last work is not known)\n");
	else
		fprintf(out, "the trace of the time before: %s\n", dump);
	if (t)
		cs_trace_close(t);
	return nn;
}
