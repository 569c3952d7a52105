/*
 * native_stack.c - the native call stack of a thread of another process, read from outside it, for
 * the hang report: `record` is an ancestor of the threads it reports, so it may trace them (Yama's
 * ptrace_scope 1 allows an ancestor); a process that does not descend from this one is never
 * traced. It attaches to that one thread with PTRACE_SEIZE, stops it with PTRACE_INTERRUPT (a
 * thread blocked in a system call has it restarted when it goes on: no signal is delivered to the
 * program), unwinds it with elfutils' libdwfl (the CFI of its modules, read from their files; names
 * from their symbol tables, file and line where a module has DWARF lines) and detaches: the thread
 * is stopped for the unwinding only, milliseconds. A thread that does not stop within a second (one
 * in uninterruptible sleep) stays attached until it does: cli_native_release() detaches it then,
 * and the tracer's exit would too. Without libdw at build time it says so.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cuscope/demangle.h"

#ifdef CUSCOPE_HAVE_LIBDW
#include <elfutils/libdwfl.h>
#endif

#define NATIVE_MAX_FRAMES   48
#define NATIVE_STOP_WAIT_MS 1000
#define NATIVE_MAX_LINGER   16

/* Threads attached whose stop was not seen yet (cli_native_release detaches them). */
static long linger[NATIVE_MAX_LINGER];
static int nlinger;
/* A thread's end that a wait here took, with its status: the caller's own waitpid() of that
 * process (when it is the program's first thread) would not see it again. */
static long reaped_tid;
static int reaped_status;

/* waitpid() of one traced thread; an end it takes is kept for cli_native_reaped(). */
static pid_t wait_thread(long tid, int *st)
{
	pid_t r = waitpid((pid_t)tid, st, __WALL | WNOHANG);

	if (r == (pid_t)tid && !WIFSTOPPED(*st)) {
		reaped_tid = tid;
		reaped_status = *st;
	}
	return r;
}

/* The signal a stop of a traced thread holds for the program (0 for the interrupt's own stop, or
 * a stop of its whole process): what the thread must be let go with, never dropped. */
static int program_signal(int st)
{
	return WIFSTOPPED(st) && (st >> 16) != PTRACE_EVENT_STOP ? WSTOPSIG(st) : 0;
}

#ifdef CUSCOPE_HAVE_LIBDW
/* Wait up to NATIVE_STOP_WAIT_MS for tid's stop by PTRACE_INTERRUPT; 1 when stopped, 0 when not
 * yet, -1 when it is gone. A signal that arrives for the program meanwhile stops the thread first:
 * it is delivered (PTRACE_CONT with it), and the wait goes on. */
static int wait_stop(long tid)
{
	for (int ms = 0; ms <= NATIVE_STOP_WAIT_MS; ms++) {
		int st = 0, sig;
		pid_t r = wait_thread(tid, &st);

		if (r == (pid_t)tid && WIFSTOPPED(st) && (sig = program_signal(st)) != 0) {
			ptrace(PTRACE_CONT, (pid_t)tid, NULL, (void *)(intptr_t)sig);
			continue;
		}
		if (r == (pid_t)tid)
			return WIFSTOPPED(st) ? 1 : -1;
		if (r < 0 && errno != EINTR)
			return -1;
		struct timespec ts = {0, 1000 * 1000};

		nanosleep(&ts, NULL);
	}
	return 0;
}

/* No separate debug files are looked for (nor fetched: no debuginfod), only what the modules hold.
 */
static int no_debuginfo(Dwfl_Module *m, void **user, const char *name, Dwarf_Addr base,
			const char *file, const char *link, GElf_Word crc, char **path)
{
	(void)m, (void)user, (void)name, (void)base, (void)file, (void)link, (void)crc, (void)path;
	return -1;
}

static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = no_debuginfo,
};

struct walk {
	Dwfl *dwfl;
	long tid;
	char *out;
	size_t cap, len;
	int n;
};

/* One frame: "native TID FUNC+0xOFF<TAB>MODULE" (FILE:LINE after the module when its DWARF has it),
 * or "native TID 0xPC<TAB>MODULE" without a symbol. */
static int frame(Dwfl_Frame *state, void *arg)
{
	struct walk *w = arg;
	Dwarf_Addr pc = 0, at;
	bool activation = false;
	Dwfl_Module *m;
	const char *sym = NULL, *mod = NULL, *src = NULL, *slash;
	GElf_Off off = 0;
	GElf_Sym es;
	int line = 0, wrote;
	char where[700] = "", what[340];

	if (!dwfl_frame_pc(state, &pc, &activation) || !pc)
		return DWARF_CB_ABORT;
	at = activation ? pc : pc - 1; /* a return address: its call is the byte before */
	m = dwfl_addrmodule(w->dwfl, at);
	if (m) {
		Dwfl_Line *l = dwfl_module_getsrc(m, at);
		Dwarf_Line *dl = NULL;
		Dwarf_Addr row = 0, bias = 0;
		bool end = false;

		sym = dwfl_module_addrinfo(m, at, &off, &es, NULL, NULL, NULL);
		mod = dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
		if (l) {
			src = dwfl_lineinfo(l, &row, &line, NULL, NULL, NULL);
			dl = dwfl_dwarf_line(l, &bias);
		}
		/* the nearest row below a function without lines of its own (a startup stub) is
		 * another function's, or the end of its sequence: only a row within the symbol,
		 * not an end, is its line */
		if (dl && dwarf_lineendsequence(dl, &end) == 0 && end)
			src = NULL;
		if (src && (!sym || row < at - off))
			src = NULL;
	}
	slash = mod ? strrchr(mod, '/') : NULL;
	if (src && line > 0)
		snprintf(where, sizeof(where), " %.500s:%d", src, line);
	if (sym) {
		const char *shown = cs_demangle(sym);

		if (!shown || strlen(shown) > 300)
			shown = sym; /* a template's full name: the mangled one is shorter */
		snprintf(what, sizeof(what), "%.300s+0x%lx", shown, (unsigned long)(off + (pc - at)));
	} else {
		snprintf(what, sizeof(what), "0x%lx", (unsigned long)pc);
	}
	wrote = snprintf(w->out + w->len, w->cap - w->len, "native %ld %s\t%s%s\n", w->tid, what,
			 slash ? slash + 1 : mod ? mod : "?", where);
	if (wrote <= 0 || (size_t)wrote >= w->cap - w->len)
		return DWARF_CB_ABORT; /* out of room */
	w->len += (size_t)wrote;
	/* as debuggers do, not past main: what is below it is the C library's start */
	w->n++;
	if (sym && !strcmp(sym, "main"))
		return DWARF_CB_ABORT;
	return w->n < NATIVE_MAX_FRAMES ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/* Unwind the stopped thread tid of process pid into out (appended); returns the frames written. */
static int unwind(long pid, long tid, char *out, size_t cap, char *err, size_t errcap)
{
	struct walk w = {.tid = tid, .out = out, .cap = cap, .len = strlen(out)};
	int rc;

	w.dwfl = dwfl_begin(&proc_callbacks);
	if (!w.dwfl) {
		snprintf(err, errcap, "libdw: %s", dwfl_errmsg(-1));
		return 0;
	}
	if (dwfl_linux_proc_report(w.dwfl, (pid_t)pid) != 0 ||
	    dwfl_report_end(w.dwfl, NULL, NULL) != 0) {
		snprintf(err, errcap, "cannot read the modules of process %ld: %s", pid,
			 dwfl_errmsg(-1));
		dwfl_end(w.dwfl);
		return 0;
	}
	rc = dwfl_linux_proc_attach(w.dwfl, (pid_t)pid, true);
	if (rc != 0) {
		snprintf(err, errcap, "cannot read process %ld: %s", pid,
			 rc > 0 ? strerror(rc) : dwfl_errmsg(-1));
		dwfl_end(w.dwfl);
		return 0;
	}
	if (dwfl_getthread_frames(w.dwfl, (pid_t)tid, frame, &w) != 0 && !w.n)
		snprintf(err, errcap, "cannot unwind thread %ld: %s", tid, dwfl_errmsg(-1));
	dwfl_end(w.dwfl);
	return w.n;
}
#endif

/* 1 when process pid descends from this one: only the recording's own processes are ever traced
 * (as root any process could be, and a stranger's must never be stopped). */
static int descends_from_us(long pid)
{
	long self = (long)getpid();

	for (int depth = 0; depth < 64 && pid > 1; depth++) {
		char text[512];
		const char *fields = cli_proc_stat(pid, text, sizeof(text));

		if (!fields || sscanf(fields, "%*c %ld", &pid) != 1)
			return 0;
		if (pid == self)
			return 1;
	}
	return 0;
}

int cli_native_stack(long pid, long tid, char *out, size_t cap, char *err, size_t errcap)
{
	if (cap)
		out[0] = '\0';
	if (errcap)
		err[0] = '\0';
	if (!descends_from_us(pid)) {
		snprintf(err, errcap, "process %ld is not one this process started", pid);
		return 0;
	}
	{
		char task[96];

		snprintf(task, sizeof(task), "/proc/%ld/task/%ld", pid, tid);
		if (access(task, F_OK) != 0) {
			snprintf(err, errcap, "thread %ld is not one of process %ld", tid, pid);
			return 0;
		}
	}
#ifdef CUSCOPE_HAVE_LIBDW
	int n, stop;

	cli_native_release();
	if (nlinger >= NATIVE_MAX_LINGER) {
		/* each thread attached must be let go once it stops: never more than the list holds */
		snprintf(err, errcap, "%d threads read earlier have not stopped yet", nlinger);
		return 0;
	}
	if (ptrace(PTRACE_SEIZE, (pid_t)tid, NULL, NULL) != 0) {
		snprintf(err, errcap, "cannot trace thread %ld: %s%s", tid, strerror(errno),
			 errno == EPERM ? " (kernel.yama.ptrace_scope, a container without "
					  "CAP_SYS_PTRACE, or a debugger attached)"
					: "");
		return 0;
	}
	if (ptrace(PTRACE_INTERRUPT, (pid_t)tid, NULL, NULL) != 0) {
		snprintf(err, errcap, "cannot stop thread %ld: %s", tid, strerror(errno));
		/* attached but running (a detach needs a stop): let go at its first stop */
		linger[nlinger++] = tid;
		return 0;
	}
	stop = wait_stop(tid);
	if (stop <= 0) {
		if (stop == 0)
			linger[nlinger++] = tid;
		if (stop == 0)
			snprintf(err, errcap, "thread %ld did not stop within %d ms", tid,
				 NATIVE_STOP_WAIT_MS);
		else
			snprintf(err, errcap, "thread %ld ended", tid);
		return 0;
	}
	n = unwind(pid, tid, out, cap, err, errcap);
	ptrace(PTRACE_DETACH, (pid_t)tid, NULL, NULL);
	return n;
#else
	(void)pid;
	(void)tid;
	snprintf(err, errcap, "this cuscope was built without libdw (elfutils)");
	return 0;
#endif
}

void cli_native_release(void)
{
	for (int i = 0; i < nlinger;) {
		int st = 0;
		pid_t r = wait_thread(linger[i], &st);

		if (r == 0) {
			i++;
			continue;
		}
		if (r == (pid_t)linger[i] && WIFSTOPPED(st))
			ptrace(PTRACE_DETACH, (pid_t)linger[i], NULL,
			       (void *)(intptr_t)program_signal(st));
		linger[i] = linger[--nlinger];
	}
}

int cli_native_reaped(long pid, int *status)
{
	if (!reaped_tid || reaped_tid != pid)
		return 0;
	*status = reaped_status;
	reaped_tid = 0;
	return 1;
}

void cli_native_detach(long tid, int status)
{
	ptrace(PTRACE_DETACH, (pid_t)tid, NULL, (void *)(intptr_t)program_signal(status));
	for (int i = 0; i < nlinger; i++)
		if (linger[i] == tid)
			linger[i--] = linger[--nlinger];
}
