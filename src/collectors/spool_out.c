/*
 * spool_out.c - the profiled process's spool file and its string table.
 *
 * Records are appended to an in-memory buffer under a short lock; full buffers are swapped out and
 * written with write(2) outside that lock, by the flush thread: every few hundred ms, and as soon
 * as the buffer is half full (the thread that filled it half wakes it, cs_out_set_drain_wake), so
 * that the program's threads do not pay for writing the file. Only when the buffer fills up before
 * the flush thread got to it does the thread that filled it write it. What was written survives
 * the process being killed. A child made
 * by fork() writes nothing: the atfork handlers leave it with no file (CUDA cannot be used in it
 * anyway).
 *
 * With per-thread staging on (cs_out_set_staging), events (cs_out_write_event: API calls, GPU
 * records) first go to a 16 KiB buffer of the writing thread, under a lock of its own that only the
 * flush thread ever contends, and move to the shared buffer in one piece when it fills or the flush
 * thread comes by: the launching thread and the thread decoding CUPTI's buffers then meet on the
 * shared lock once per a few hundred records instead of at every one. Definitions (strings, stacks,
 * modules) and the bookkeeping records always go straight to the shared buffer, so a definition
 * precedes every use of it in the file whatever thread uses it; everything staged is moved before
 * the END and DROPPED records.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"

#define OUT_BUF_SIZE   (2u << 20)
#define STAGE_BUF_SIZE (16u << 10)

struct out_buf {
	char *data;
	size_t len;
};

static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER; /* guards bufs[active] */
static pthread_mutex_t io_lock = PTHREAD_MUTEX_INITIALIZER;  /* one drain at a time */
static struct out_buf bufs[2];
static int active;
static int out_fd = -1;
static uint64_t out_limit, out_written;
static atomic_uint_fast64_t out_records, out_dropped;
static atomic_uint_fast64_t
	out_staged; /* bytes staged, not yet in the shared buffer (with a limit) */
static void (*drain_wake)(void); /* asks the flush thread to call cs_out_drain() */
static atomic_int drain_asked;	 /* since the last drain */

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int cs_out_open(const char *dir, uint64_t cupti_ns)
{
	char path[4096];
	struct cs_spool_header h;
	struct timespec ts;
	int fd = -1;

	bufs[0].data = malloc(OUT_BUF_SIZE);
	bufs[1].data = malloc(OUT_BUF_SIZE);
	if (!bufs[0].data || !bufs[1].data)
		return -1;
	/* A pid can come back in a long job: never append to another process's file. */
	for (int n = 0; n < 100 && fd < 0; n++) {
		if (n == 0)
			snprintf(path, sizeof(path), "%s/%d%s", dir, (int)getpid(),
				 CS_SPOOL_SUFFIX);
		else
			snprintf(path, sizeof(path), "%s/%d-%d%s", dir, (int)getpid(), n,
				 CS_SPOOL_SUFFIX);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			return -1;
	}
	if (fd < 0)
		return -1;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, CS_SPOOL_MAGIC, sizeof(h.magic));
	h.version = CS_SPOOL_VERSION;
	h.header_size = sizeof(h);
	h.pid = (uint32_t)getpid();
	h.ppid = (uint32_t)getppid();
	clock_gettime(CLOCK_REALTIME, &ts);
	h.realtime_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	h.cupti_ns = cupti_ns;
	if (write_all(fd, (const char *)&h, sizeof(h))) {
		close(fd);
		return -1;
	}
	out_written = sizeof(h);
	out_fd = fd;
	return 0;
}

/* Swap the active buffer out and write it. Called without rec_lock held. */
static void out_drain(void)
{
	struct out_buf *full;

	pthread_mutex_lock(&io_lock);
	pthread_mutex_lock(&rec_lock);
	full = &bufs[active];
	active ^= 1;
	bufs[active].len = 0;
	atomic_store_explicit(&drain_asked, 0, memory_order_relaxed);
	pthread_mutex_unlock(&rec_lock);
	if (full->len && out_fd >= 0) {
		if (write_all(out_fd, full->data, full->len) == 0)
			out_written += full->len;
	}
	full->len = 0;
	pthread_mutex_unlock(&io_lock);
}

/* Append a record of size bytes, zero-padded to padded, or (size == padded) whole records, to the
 * shared buffer. */
static void shared_append(const void *data, size_t size, size_t padded)
{
	int ask;

	pthread_mutex_lock(&rec_lock);
	while (bufs[active].len + padded > OUT_BUF_SIZE) {
		pthread_mutex_unlock(&rec_lock);
		out_drain();
		pthread_mutex_lock(&rec_lock);
	}
	memcpy(bufs[active].data + bufs[active].len, data, size);
	memset(bufs[active].data + bufs[active].len + size, 0, padded - size);
	bufs[active].len += padded;
	ask = bufs[active].len >= OUT_BUF_SIZE / 2 && drain_wake &&
	      !atomic_exchange_explicit(&drain_asked, 1, memory_order_relaxed);
	pthread_mutex_unlock(&rec_lock);
	if (ask)
		drain_wake();
}

void cs_out_set_drain_wake(void (*wake)(void))
{
	drain_wake = wake;
}

void cs_out_drain(void)
{
	if (out_fd >= 0)
		out_drain();
}

/* The record's padded size with its header set, or 0 when it is not written (counted as
 * dropped). */
static size_t admit(void *rec, size_t size, size_t max, uint16_t type, uint32_t tid)
{
	struct cs_rec *h = rec;
	size_t padded = (size + 7) & ~(size_t)7;

	if (out_fd < 0 || padded > UINT16_MAX || padded > max) {
		atomic_fetch_add(&out_dropped, 1);
		return 0;
	}
	/* Past the size limit only the bookkeeping that says what was cut still goes in. */
	if (out_limit &&
	    out_written + bufs[active].len + atomic_load(&out_staged) + padded > out_limit &&
	    type != CS_REC_DROPPED && type != CS_REC_END) {
		atomic_fetch_add(&out_dropped, 1);
		return 0;
	}
	h->type = type;
	h->size = (uint16_t)padded;
	h->tid = tid;
	return padded;
}

static void stage_commit_all(void);

void cs_out_write(void *rec, size_t size, uint16_t type, uint32_t tid)
{
	size_t padded = admit(rec, size, OUT_BUF_SIZE, type, tid);

	if (!padded)
		return;
	if (type == CS_REC_END || type == CS_REC_DROPPED)
		stage_commit_all(); /* after every event staged so far */
	shared_append(rec, size, padded);
	atomic_fetch_add(&out_records, 1);
}

/* ---- per-thread staging ---- */

struct stage_buf {
	pthread_mutex_t lock; /* the owner's, and the flush thread's when it commits */
	size_t len;
	size_t counted;		/* of len, the bytes added to out_staged */
	uint64_t records;	/* staged, not yet added to out_records */
	int dead;		/* the thread exited: freed once committed */
	struct stage_buf *next; /* in stages, under stages_lock */
	char data[STAGE_BUF_SIZE];
};

static atomic_int staging;
static pthread_mutex_t stages_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stage_buf *stages;
static pthread_key_t stage_key;
static int stage_key_ok;
static __thread struct stage_buf *tls_stage __attribute__((tls_model("initial-exec")));
static __thread int tls_exiting __attribute__((tls_model("initial-exec")));

/* Called with b->lock held. */
static void stage_commit(struct stage_buf *b)
{
	if (b->len)
		shared_append(b->data, b->len, b->len);
	if (b->counted)
		atomic_fetch_sub(&out_staged, b->counted);
	/* counted here, not per record: the counter's line is shared by every writing thread */
	atomic_fetch_add(&out_records, b->records);
	b->counted = 0;
	b->records = 0;
	b->len = 0;
}

static void stage_thread_exit(void *arg)
{
	struct stage_buf *b = arg;

	tls_exiting = 1; /* later writes of this thread (other destructors) go straight out */
	tls_stage = NULL;
	pthread_mutex_lock(&b->lock);
	stage_commit(b);
	b->dead = 1;
	pthread_mutex_unlock(&b->lock);
}

static struct stage_buf *stage_get(void)
{
	struct stage_buf *b = tls_stage;

	if (b || tls_exiting || !stage_key_ok)
		return b;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	pthread_mutex_init(&b->lock, NULL);
	if (pthread_setspecific(stage_key, b)) {
		free(b);
		return NULL;
	}
	pthread_mutex_lock(&stages_lock);
	b->next = stages;
	stages = b;
	pthread_mutex_unlock(&stages_lock);
	tls_stage = b;
	return b;
}

/* Move what every thread staged to the shared buffer; free the buffers of exited threads. */
static void stage_commit_all(void)
{
	struct stage_buf **link, *b;

	if (!atomic_load_explicit(&staging, memory_order_relaxed))
		return;
	pthread_mutex_lock(&stages_lock);
	for (link = &stages; (b = *link) != NULL;) {
		int dead;

		pthread_mutex_lock(&b->lock);
		stage_commit(b);
		dead = b->dead;
		pthread_mutex_unlock(&b->lock);
		if (dead) {
			*link = b->next;
			pthread_mutex_destroy(&b->lock);
			free(b);
		} else {
			link = &b->next;
		}
	}
	pthread_mutex_unlock(&stages_lock);
}

void cs_out_set_staging(int on)
{
	if (on && !stage_key_ok)
		stage_key_ok = pthread_key_create(&stage_key, stage_thread_exit) == 0;
	atomic_store(&staging, on && stage_key_ok);
}

void cs_out_write_event(void *rec, size_t size, uint16_t type, uint32_t tid)
{
	struct stage_buf *b;
	size_t padded;

	if (!atomic_load_explicit(&staging, memory_order_relaxed) || out_fd < 0 ||
	    !(b = stage_get())) {
		cs_out_write(rec, size, type, tid);
		return;
	}
	padded = admit(rec, size, STAGE_BUF_SIZE, type, tid);
	if (!padded)
		return;
	pthread_mutex_lock(&b->lock);
	if (b->len + padded > STAGE_BUF_SIZE)
		stage_commit(b);
	memcpy(b->data + b->len, rec, size);
	memset(b->data + b->len + size, 0, padded - size);
	b->len += padded;
	if (out_limit) { /* counted against the limit; only then, to keep the line unshared */
		atomic_fetch_add(&out_staged, padded);
		b->counted += padded;
	}
	b->records++;
	pthread_mutex_unlock(&b->lock);
}

void cs_out_flush(void)
{
	if (out_fd < 0)
		return;
	stage_commit_all();
	out_drain();
}

void cs_out_close(void)
{
	if (out_fd < 0)
		return;
	stage_commit_all();
	out_drain();
	pthread_mutex_lock(&io_lock);
	close(out_fd);
	out_fd = -1;
	pthread_mutex_unlock(&io_lock);
}

void cs_out_set_limit(uint64_t bytes)
{
	out_limit = bytes;
}

uint64_t cs_out_records(void)
{
	uint64_t n = atomic_load(&out_records);

	/* and what the threads have staged */
	pthread_mutex_lock(&stages_lock);
	for (struct stage_buf *b = stages; b; b = b->next) {
		pthread_mutex_lock(&b->lock);
		n += b->records;
		pthread_mutex_unlock(&b->lock);
	}
	pthread_mutex_unlock(&stages_lock);
	return n;
}

uint64_t cs_out_dropped(void)
{
	return atomic_load(&out_dropped);
}

void cs_out_add_dropped(uint64_t n)
{
	atomic_fetch_add(&out_dropped, n);
}

/* ---- string table ---- */

struct str_entry {
	uint64_t hash;
	char *text;
	size_t len;
	uint32_t id;
};

static pthread_mutex_t str_lock = PTHREAD_MUTEX_INITIALIZER;
static struct str_entry *str_tab;
static size_t str_cap, str_count;
static uint32_t str_next_id = 1;

static uint64_t str_hash(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h ? h : 1;
}

static int str_grow(void)
{
	size_t ncap = str_cap ? str_cap * 2 : 1024;
	struct str_entry *nt = calloc(ncap, sizeof(*nt));

	if (!nt)
		return -1;
	for (size_t i = 0; i < str_cap; i++) {
		if (!str_tab[i].hash)
			continue;
		size_t j = str_tab[i].hash & (ncap - 1);
		while (nt[j].hash)
			j = (j + 1) & (ncap - 1);
		nt[j] = str_tab[i];
	}
	free(str_tab);
	str_tab = nt;
	str_cap = ncap;
	return 0;
}

static void str_emit(uint32_t id, const char *s, size_t len)
{
	size_t max = UINT16_MAX - sizeof(struct cs_rec_string) - 8;
	size_t n = len > max ? max : len;
	size_t size = sizeof(struct cs_rec_string) + n;
	struct cs_rec_string *r = malloc(size + 8);

	if (!r) {
		cs_out_add_dropped(1);
		return;
	}
	r->id = id;
	r->len = (uint32_t)n;
	memcpy(r + 1, s, n);
	cs_out_write(r, size, CS_REC_STRING, 0);
	free(r);
}

uint32_t cs_intern(const char *s, size_t len)
{
	uint64_t h;
	size_t i;
	uint32_t id = 0;

	if (!s)
		return 0;
	if (len == (size_t)-1)
		len = strlen(s);
	h = str_hash(s, len);
	pthread_mutex_lock(&str_lock);
	if (str_count * 2 >= str_cap && str_grow())
		goto out;
	for (i = h & (str_cap - 1); str_tab[i].hash; i = (i + 1) & (str_cap - 1)) {
		if (str_tab[i].hash == h && str_tab[i].len == len &&
		    memcmp(str_tab[i].text, s, len) == 0) {
			id = str_tab[i].id;
			goto out;
		}
	}
	str_tab[i].text = malloc(len + 1);
	if (!str_tab[i].text)
		goto out;
	memcpy(str_tab[i].text, s, len);
	str_tab[i].text[len] = '\0';
	str_tab[i].len = len;
	str_tab[i].hash = h;
	str_tab[i].id = id = str_next_id++;
	str_count++;
	/* Written under str_lock so that the definition precedes every use in the file. */
	str_emit(id, s, len);
out:
	pthread_mutex_unlock(&str_lock);
	return id;
}

static __thread uint32_t tls_tid __attribute__((tls_model("initial-exec")));

uint32_t cs_tid(void)
{
	if (!tls_tid)
		tls_tid = (uint32_t)syscall(SYS_gettid);
	return tls_tid;
}

/* ---- fork ---- */

void cs_out_atfork_prepare(void)
{
	pthread_mutex_lock(&str_lock);
	pthread_mutex_lock(&io_lock);
	pthread_mutex_lock(&rec_lock);
}

void cs_out_atfork_parent(void)
{
	pthread_mutex_unlock(&rec_lock);
	pthread_mutex_unlock(&io_lock);
	pthread_mutex_unlock(&str_lock);
}

void cs_out_atfork_child(void)
{
	pthread_mutex_init(&rec_lock, NULL);
	pthread_mutex_init(&io_lock, NULL);
	pthread_mutex_init(&str_lock, NULL);
	if (out_fd >= 0)
		close(out_fd);
	out_fd = -1;
	bufs[0].len = bufs[1].len = 0;
	tls_tid = 0;
	/* The forking thread's staging buffer may be locked by a thread of the parent: the child's
	 * thread must not commit it when it exits. */
	atomic_store(&staging, 0);
	tls_stage = NULL;
	if (stage_key_ok)
		pthread_setspecific(stage_key, NULL);
}
