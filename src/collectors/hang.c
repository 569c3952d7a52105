/*
 * hang.c - `record --hang-after SEC`: a host thread that has been in a CUDA wait (a synchronize, a
 * blocking copy) or has spun on a query that says "not ready" for longer than SEC, while no GPU
 * work has completed since it began, is a hang. The flush thread looks once per flush period; on a
 * hang the process writes a notice "hang.<pid>" into the spool directory (once per hang) and
 * `cuscope record`, which looks for notices, writes a dump and the hang report
 * (src/cli/cmd_record.c). Nothing here stops or signals the program.
 *
 * The waiting threads each own a slot (HANG_SLOTS in all; threads past them are not followed): the
 * API callbacks set it at a wait's enter and clear it at its exit (two stores a wait); a query that
 * returns "not ready" sets it when unset, one that returns anything else clears it. The decoders of
 * GPU records tell the latest end of completed GPU work and its correlation id, and each launch
 * stores its correlation id and its kernel's name (CUPTI's symbolName: a pointer, read only at a
 * hang) in its thread's ring of the last HANG_RING launches, so that the notice can name the work
 * launched after the last that completed.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"
#include "vm_read.h"
#include "cuscope/files.h"

#define HANG_SLOTS 256
/* The latest launches of each thread kept, and those named in a notice at most. */
#define HANG_RING    8
#define HANG_PENDING 16

/* A cache line each: a thread writes only its own. */
struct hang_slot {
	_Atomic uint64_t start; /* CUPTI ns of the wait's start; 0: not waiting */
	_Atomic uint32_t tid, corr, cbid;
	_Atomic int kind; /* CS_HANG_WAIT, CS_HANG_QUERY */
	_Atomic int domain;
	_Atomic uint32_t last_launch; /* the correlation id of its latest launch */
	_Atomic uintptr_t py_state;   /* its Python thread state (0: none) */
	_Atomic uint64_t thread;      /* its pthread_t */
} __attribute__((aligned(64)));

static struct hang_slot slots[HANG_SLOTS];

/* Each slot's thread's latest launches: written by that thread only, a store of each field. */
struct hang_launches {
	_Atomic uint32_t corr[HANG_RING];
	_Atomic uintptr_t name[HANG_RING]; /* the kernel's name as CUPTI gave it; 0 none */
	_Atomic uint32_t next;
} __attribute__((aligned(64)));

static struct hang_launches rings[HANG_SLOTS];
static atomic_uint nslots;
static __thread int tls_slot __attribute__((tls_model("initial-exec"))) = -1;
static _Atomic uint64_t gpu_done;	 /* latest end of GPU work delivered, CUPTI ns */
static _Atomic uint32_t corr_done; /* the latest correlation id of completed GPU work */
static uint64_t after_ns;
static char notice_dir[4096], notice_name[64]; /* "hang.<pid>" in the spool directory */
static uint64_t reported; /* the start of the wait last reported; 0 none */
static const char *(*name_of)(int domain, uint32_t cbid);
static uintptr_t (*py_state_of)(void);
static size_t (*py_frames_of)(uintptr_t ts, uint64_t thread, uint32_t tid, char *buf, size_t cap);

void cs_hang_set_python(uintptr_t (*state)(void),
			size_t (*frames)(uintptr_t ts, uint64_t thread, uint32_t tid, char *buf,
					 size_t cap))
{
	py_state_of = state;
	py_frames_of = frames;
}

void cs_hang_setup(const char *dir, uint64_t after, const char *(*namer)(int, uint32_t))
{
	if (!dir || !after)
		return;
	after_ns = after;
	name_of = namer;
	snprintf(notice_dir, sizeof(notice_dir), "%s", dir);
	snprintf(notice_name, sizeof(notice_name), "hang.%d", (int)getpid());
}

int cs_hang_on(void)
{
	return after_ns != 0;
}

static struct hang_slot *my_slot(void)
{
	if (tls_slot < 0) {
		unsigned n = atomic_fetch_add(&nslots, 1);

		if (n >= HANG_SLOTS) {
			atomic_store(&nslots, HANG_SLOTS);
			tls_slot = HANG_SLOTS; /* not followed */
			return NULL;
		}
		tls_slot = (int)n;
		atomic_store_explicit(&slots[n].tid, cs_tid(), memory_order_relaxed);
	}
	return tls_slot < HANG_SLOTS ? &slots[tls_slot] : NULL;
}

void cs_hang_enter(int kind, int domain, uint32_t cbid, uint32_t corr, uint64_t start)
{
	struct hang_slot *s;

	if (!after_ns || !(s = my_slot()))
		return;
	if (kind == CS_HANG_QUERY && atomic_load_explicit(&s->start, memory_order_relaxed))
		return; /* spinning: the first "not ready" tells since when */
	atomic_store_explicit(&s->tid, cs_tid(), memory_order_relaxed);
	atomic_store_explicit(&s->corr, corr, memory_order_relaxed);
	atomic_store_explicit(&s->cbid, cbid, memory_order_relaxed);
	atomic_store_explicit(&s->domain, domain, memory_order_relaxed);
	atomic_store_explicit(&s->kind, kind, memory_order_relaxed);
	atomic_store_explicit(&s->py_state, py_state_of ? py_state_of() : 0, memory_order_relaxed);
	atomic_store_explicit(&s->thread, (uint64_t)pthread_self(), memory_order_relaxed);
	atomic_store_explicit(&s->start, start ? start : 1, memory_order_release);
}

void cs_hang_leave(void)
{
	if (after_ns && tls_slot >= 0 && tls_slot < HANG_SLOTS)
		atomic_store_explicit(&slots[tls_slot].start, 0, memory_order_relaxed);
}

void cs_hang_gpu_done(uint64_t end, uint32_t corr)
{
	uint64_t cur = atomic_load_explicit(&gpu_done, memory_order_relaxed);

	if (!after_ns)
		return;
	while (end > cur &&
	       !atomic_compare_exchange_weak_explicit(&gpu_done, &cur, end, memory_order_relaxed,
						      memory_order_relaxed))
		;
	if (corr && (int32_t)(corr - atomic_load_explicit(&corr_done, memory_order_relaxed)) > 0)
		atomic_store_explicit(&corr_done, corr, memory_order_relaxed);
}

void cs_hang_launched(uint32_t corr, const char *kernel)
{
	struct hang_slot *s;
	struct hang_launches *r;
	uint32_t i;

	if (!after_ns || !(s = my_slot()))
		return;
	atomic_store_explicit(&s->last_launch, corr, memory_order_relaxed);
	r = &rings[tls_slot];
	i = atomic_load_explicit(&r->next, memory_order_relaxed);
	atomic_store_explicit(&r->corr[i % HANG_RING], 0, memory_order_relaxed);
	atomic_store_explicit(&r->name[i % HANG_RING], (uintptr_t)kernel, memory_order_relaxed);
	atomic_store_explicit(&r->corr[i % HANG_RING], corr, memory_order_release);
	atomic_store_explicit(&r->next, i + 1, memory_order_relaxed);
}

/* A launch not completed: its correlation id, its thread and its kernel's name. */
struct pending {
	uint32_t corr, tid;
	uintptr_t name;
};

static int cmp_pending(const void *a, const void *b)
{
	int32_t d = (int32_t)(((const struct pending *)a)->corr - ((const struct pending *)b)->corr);

	return (d > 0) - (d < 0);
}

/* Copy the string at src (up to cap - 1 bytes) into buf without touching memory that may be gone:
 * reads a page at a time through cs_vm_read(). "?" when none can be read. */
static void copy_name(uintptr_t src, char *buf, size_t cap)
{
	size_t got = 0;
	long page = sysconf(_SC_PAGESIZE);
	pid_t self = getpid();

	if (page <= 0)
		page = 4096;
	while (src && got < cap - 1) {
		size_t room = (size_t)page - (size_t)((src + got) % (uintptr_t)page), n = cap - 1 - got;
		void *nul;

		if (n > room)
			n = room;
		if (cs_vm_read(self, buf + got, src + got, n))
			break;
		nul = memchr(buf + got, '\0', n);
		got += n;
		if (nul) {
			got = (size_t)((char *)nul - buf);
			break;
		}
	}
	buf[got] = '\0';
	for (size_t i = 0; i < got; i++)
		if ((unsigned char)buf[i] <= ' ' || (unsigned char)buf[i] >= 0x7f)
			buf[i] = '?'; /* one word on the notice's line */
	if (!got)
		snprintf(buf, cap, "?");
}

/* "pending CORR TID NAME" lines into text[len..cap) for the launches of every thread after the
 * last that completed (done), oldest first, HANG_PENDING at most; the new length. */
static size_t pending_lines(unsigned n, uint32_t done, char *text, size_t len, size_t cap)
{
	static struct pending p[HANG_SLOTS * HANG_RING]; /* the flush thread's only */
	size_t np = 0, max = sizeof(p) / sizeof(*p);
	char name[512];

	for (unsigned i = 0; i < n && np < max; i++)
		for (int j = 0; j < HANG_RING && np < max; j++) {
			uint32_t c = atomic_load_explicit(&rings[i].corr[j], memory_order_acquire);

			if (c && (int32_t)(c - done) > 0)
				p[np++] = (struct pending){
					c, atomic_load(&slots[i].tid),
					atomic_load_explicit(&rings[i].name[j], memory_order_relaxed)};
		}
	if (np > 1)
		qsort(p, np, sizeof(*p), cmp_pending);
	for (size_t i = 0; i < np && i < HANG_PENDING && len + 600 < cap; i++) {
		copy_name(p[i].name, name, sizeof(name));
		len += (size_t)snprintf(text + len, cap - len, "pending %u %u %s\n", p[i].corr,
					p[i].tid, name);
	}
	return len;
}

int cs_hang_poll(uint64_t now)
{
	char text[32768];
	size_t len = 0;
	uint64_t done = atomic_load(&gpu_done), oldest = 0;
	unsigned n = atomic_load(&nslots);
	uint32_t launched = 0;
	int hung = 0;

	if (!after_ns)
		return 0;
	if (n > HANG_SLOTS)
		n = HANG_SLOTS;
	for (unsigned i = 0; i < n; i++) {
		uint64_t start = atomic_load_explicit(&slots[i].start, memory_order_acquire);

		if (!start || now < start || now - start < after_ns || done >= start)
			continue;
		if (!oldest || start < oldest)
			oldest = start;
		hung++;
	}
	if (!hung) {
		reported = 0; /* a later hang is reported again */
		return 0;
	}
	if (reported)
		return 0;
	reported = oldest;
	for (unsigned i = 0; i < n; i++) {
		uint32_t c = atomic_load_explicit(&slots[i].last_launch, memory_order_relaxed);

		if (c && (!launched || (int32_t)(c - launched) > 0))
			launched = c;
	}
	/* "now NS", "gpu_done NS", "launched LAST_CORR DONE_CORR", then a line per thread:
	 * "thread TID KIND START CORR NAME", each followed by its Python frames, innermost first:
	 * "frame TID LINE FILE<TAB>FUNC"; then the launches after the last completed, oldest first:
	 * "pending CORR TID KERNEL" */
	len += (size_t)snprintf(text + len, sizeof(text) - len,
				"now %llu\ngpu_done %llu\nlaunched %u %u\n", (unsigned long long)now,
				(unsigned long long)done, launched, atomic_load(&corr_done));
	for (unsigned i = 0; i < n && len < sizeof(text) - 300; i++) {
		uint64_t start = atomic_load_explicit(&slots[i].start, memory_order_acquire);
		const char *name;

		if (!start || now < start || now - start < after_ns || done >= start)
			continue;
		name = name_of ? name_of(atomic_load(&slots[i].domain), atomic_load(&slots[i].cbid))
			       : NULL;
		len += (size_t)snprintf(text + len, sizeof(text) - len, "thread %u %s %llu %u %.200s\n",
					atomic_load(&slots[i].tid),
					atomic_load(&slots[i].kind) == CS_HANG_QUERY ? "query" : "wait",
					(unsigned long long)start, atomic_load(&slots[i].corr),
					name ? name : "?");
		if (py_frames_of && atomic_load(&slots[i].py_state) && len < sizeof(text) - 300)
			len += py_frames_of(atomic_load(&slots[i].py_state),
					    atomic_load(&slots[i].thread), atomic_load(&slots[i].tid),
					    text + len, sizeof(text) - 300 - len);
	}
	len = pending_lines(n, atomic_load(&corr_done), text, len, sizeof(text));
	return cs_file_put(notice_dir, notice_name, text, len) ? 0 : 1;
}
