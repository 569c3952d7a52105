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
 *
 * A ring (cs_out_set_ring, `record --ring`) keeps only the last window of the events, in segments
 * (docs/spool-format.md, "Ring files"): the definitions (strings, stacks, modules, the process and
 * its devices) and the DROPPED counts go to the process's main file, which is never cut; every
 * other record goes to the current segment, "<stem>.<n>.cuseg". When the segment holds a quarter of
 * the ring's size, or covers a quarter of its duration, the next one is opened; segments beyond
 * the newest four (size), or closed more than the duration ago, are deleted, after the CS_REC_RING
 * record right after the main file's header, rewritten in place, says what they held. All of it happens where the buffer is written (the
 * drain, under io_lock): on the flush thread, or on the thread that filled the buffer before the
 * flush thread got to it, as before.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
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
static char out_path[4096]; /* the process's (main) spool file */
static uint64_t out_limit, out_written;
static atomic_uint_fast64_t out_records, out_dropped;
static atomic_uint_fast64_t
	out_staged; /* bytes staged, not yet in the shared buffer (with a limit) */
static void (*drain_wake)(void); /* asks the flush thread to call cs_out_drain() */
static atomic_int drain_asked;	 /* since the last drain */

/* ---- ring ---- */

#define RING_PARTS    4	 /* a segment holds 1/RING_PARTS of the ring */
#define RING_SEGS_MAX 64 /* closed segments followed (a duration's may be more than RING_PARTS) */

struct ring_seg {
	uint32_t n;
	uint64_t bytes, records;
	uint64_t closed; /* CUPTI ns */
	uint64_t last;	 /* the latest start of an event in it, CUPTI ns; 0 when none */
	uint32_t corr;	 /* the latest correlation id of an API call in it; 0 when none */
};

/* Everything under io_lock once the file is open. */
static struct {
	int on;
	uint64_t bytes, ns;		       /* the budget: one of them is 0 */
	uint64_t (*now)(void);		       /* CUPTI time */
	char stem[4096];		       /* the main file's path less CS_SPOOL_SUFFIX */
	int fd;				       /* the current segment, -1 when none */
	uint32_t n;			       /* its number */
	uint64_t len, records;		       /* its bytes (header included) and records */
	uint64_t opened;		       /* CUPTI ns */
	uint64_t last;			       /* the latest start of an event in it */
	uint32_t corr;			       /* the latest correlation id of an API call in it */
	struct ring_seg closed[RING_SEGS_MAX]; /* oldest first */
	int nclosed;
	struct cs_rec_ring rec; /* the totals, as last written */
	int rec_fd;		/* the main file, not in append mode: rec is rewritten in place */
} ring = {.fd = -1, .rec_fd = -1};

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

/* Write a file's header; 0 on success. */
static int write_header(int fd, uint32_t version, uint64_t cupti_ns)
{
	struct cs_spool_header h;
	struct timespec ts;

	memset(&h, 0, sizeof(h));
	memcpy(h.magic, CS_SPOOL_MAGIC, sizeof(h.magic));
	h.version = version;
	h.header_size = sizeof(h);
	h.pid = (uint32_t)getpid();
	h.ppid = (uint32_t)getppid();
	clock_gettime(CLOCK_REALTIME, &ts);
	h.realtime_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	h.cupti_ns = cupti_ns;
	return write_all(fd, (const char *)&h, sizeof(h));
}

static int ring_open_segment(uint64_t now);
static int ring_write_rec(void);

void cs_out_set_ring(uint64_t bytes, uint64_t ns, uint64_t (*now)(void))
{
	ring.on = (bytes || ns) && now;
	ring.bytes = ring.on ? bytes : 0;
	ring.ns = ring.on && !bytes ? ns : 0;
	ring.now = now;
}

int cs_out_open(const char *dir, uint64_t cupti_ns)
{
	char path[4096];
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
	if (write_header(fd, ring.on ? CS_SPOOL_VERSION_RING : CS_SPOOL_VERSION, cupti_ns)) {
		close(fd);
		return -1;
	}
	out_written = sizeof(struct cs_spool_header);
	out_fd = fd;
	snprintf(out_path, sizeof(out_path), "%s", path);
	if (ring.on) {
		size_t len = strlen(path) - strlen(CS_SPOOL_SUFFIX);

		memcpy(ring.stem, path, len);
		ring.stem[len] = '\0';
		ring.rec.budget_bytes = ring.bytes;
		ring.rec.budget_ns = ring.ns;
		ring.rec.first_segment = 1;
		ring.rec_fd = open(path, O_WRONLY | O_CLOEXEC);
		if (ring.rec_fd < 0 || ring_write_rec() || ring_open_segment(cupti_ns)) {
			if (ring.rec_fd >= 0)
				close(ring.rec_fd);
			ring.rec_fd = -1;
			close(fd);
			unlink(path);
			out_fd = -1;
			return -1;
		}
		out_written += sizeof(ring.rec);
	}
	return 0;
}

/* ---- ring: segments ---- */

static void ring_seg_path(char *buf, size_t cap, uint32_t n)
{
	snprintf(buf, cap, "%s.%u%s", ring.stem, n, CS_SPOOL_SEG_SUFFIX);
}

/* The totals to the main file, in the place of the previous ones, right after the header (they
 * say what the deleted segments held; the file does not grow with them), through a descriptor of
 * its own that does not append. 0 on success. */
static int ring_write_rec(void)
{
	ring.rec.h.type = CS_REC_RING;
	ring.rec.h.size = sizeof(ring.rec);
	ring.rec.h.tid = 0;
	if (lseek(ring.rec_fd, sizeof(struct cs_spool_header), SEEK_SET) < 0)
		return -1;
	return write_all(ring.rec_fd, (const char *)&ring.rec, sizeof(ring.rec));
}

/* Open segment ring.n + 1 as the current one; 0 on success (else no segment: events are lost). */
static int ring_open_segment(uint64_t now)
{
	char path[sizeof(ring.stem) + 32];
	int fd;

	ring_seg_path(path, sizeof(path), ring.n + 1);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (write_header(fd, CS_SPOOL_VERSION_RING, now)) {
		close(fd);
		unlink(path);
		return -1;
	}
	ring.fd = fd;
	ring.n++;
	ring.len = sizeof(struct cs_spool_header);
	ring.records = 0;
	ring.opened = now;
	ring.last = 0;
	ring.corr = 0;
	return 0;
}

/* Delete the oldest closed segment, after the main file says what it held. */
static void ring_delete_oldest(void)
{
	char path[sizeof(ring.stem) + 32];
	struct ring_seg *s = &ring.closed[0];

	ring.rec.segments_dropped++;
	ring.rec.records_dropped += s->records;
	ring.rec.bytes_dropped += s->bytes;
	/* every event that started after it is in a later segment */
	if ((s->last ? s->last : s->closed) > ring.rec.window_start)
		ring.rec.window_start = s->last ? s->last : s->closed;
	if (s->corr && (!ring.rec.last_corr || (int32_t)(s->corr - ring.rec.last_corr) > 0))
		ring.rec.last_corr = s->corr;
	ring.rec.first_segment = ring.nclosed > 1 ? ring.closed[1].n : ring.n;
	ring_write_rec();
	ring_seg_path(path, sizeof(path), s->n);
	unlink(path);
	memmove(&ring.closed[0], &ring.closed[1], (size_t)(ring.nclosed - 1) * sizeof(*s));
	ring.nclosed--;
}

/* Delete the closed segments that fell out of the window. */
static void ring_trim(uint64_t now)
{
	while (ring.nclosed > 0 && (ring.bytes ? ring.nclosed > RING_PARTS
					       : ring.nclosed == RING_SEGS_MAX ||
							 ring.closed[0].closed + ring.ns < now))
		ring_delete_oldest();
}

/* Close the current segment and open the next. */
static void ring_switch(uint64_t now)
{
	if (ring.fd >= 0) {
		if (ring.nclosed == RING_SEGS_MAX)
			ring_delete_oldest();
		ring.closed[ring.nclosed++] = (struct ring_seg){ring.n, ring.len,  ring.records,
								now,	ring.last, ring.corr};
		close(ring.fd);
		ring.fd = -1;
	}
	ring_trim(now);
	ring_open_segment(now);
}

/* Definitions and counts go to the main file; the rest to the segments. */
static int ring_main_type(uint16_t type)
{
	return type == CS_REC_STRING || type == CS_REC_STACK || type == CS_REC_MODULE ||
	       type == CS_REC_PROCESS || type == CS_REC_DEVICE || type == CS_REC_DROPPED;
}

/* Write n bytes of whole records: each run of main-file records to the main file, each run of
 * the others to the segments, switching segments where one is full. */
static void ring_write(const char *p, size_t n)
{
	uint64_t now = ring.now();
	size_t i = 0;

	if (ring.ns && now - ring.opened >= ring.ns / RING_PARTS && ring.records)
		ring_switch(now);
	while (i < n) {
		const struct cs_rec *h = (const struct cs_rec *)(p + i);
		int to_main = ring_main_type(h->type);
		uint64_t records = 0;
		size_t j = i;

		if (!to_main && ring.bytes && ring.records &&
		    ring.len + h->size > ring.bytes / RING_PARTS)
			ring_switch(now);
		while (j < n) {
			const struct cs_rec *r = (const struct cs_rec *)(p + j);
			size_t size = r->size;

			if (size < sizeof(*r) || size > n - j)
				size = n - j; /* cannot happen: the buffer holds whole records */
			if (ring_main_type(r->type) != to_main ||
			    (!to_main && ring.bytes && j > i &&
			     ring.len + (j - i) + size > ring.bytes / RING_PARTS))
				break;
			if (!to_main && cs_rec_is_event(r->type) && size >= sizeof(*r) + 8) {
				uint64_t start;

				memcpy(&start, p + j + sizeof(*r), sizeof(start));
				if (start > ring.last)
					ring.last = start;
			}
			if (r->type == CS_REC_API && size >= sizeof(struct cs_rec_api)) {
				uint32_t corr;

				memcpy(&corr, p + j + offsetof(struct cs_rec_api, correlation_id),
				       sizeof(corr));
				if (corr && (!ring.corr || (int32_t)(corr - ring.corr) > 0))
					ring.corr = corr;
			}
			j += size;
			records++;
		}
		if (to_main) {
			if (write_all(out_fd, p + i, j - i) == 0)
				out_written += j - i;
		} else if (ring.fd >= 0 && write_all(ring.fd, p + i, j - i) == 0) {
			ring.len += j - i;
			ring.records += records;
		} else {
			atomic_fetch_add(&out_dropped, records);
		}
		i = j;
	}
	ring_trim(now);
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
	if (ring.on && out_fd >= 0) {
		ring_write(full->data, full->len);
	} else if (full->len && out_fd >= 0) {
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

/* Close the spool file and a ring's segment; later writes are dropped. */
static void close_files(void)
{
	if (out_fd >= 0)
		close(out_fd);
	out_fd = -1;
	if (ring.fd >= 0)
		close(ring.fd);
	ring.fd = -1;
	if (ring.rec_fd >= 0)
		close(ring.rec_fd);
	ring.rec_fd = -1;
}

/* Copy the file at src, whole, to dst (created); 0 on success. */
static int copy_file(const char *src, const char *dst)
{
	char buf[65536];
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, rc = -1;
	ssize_t n;

	if (in < 0)
		return -1;
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (out < 0)
		goto done;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write_all(out, buf, (size_t)n))
			goto done;
	rc = n < 0 ? -1 : 0;
done:
	if (out >= 0)
		close(out);
	close(in);
	return rc;
}

/* Link path into dir under its own name; 0 on success. */
static int link_into(const char *path, const char *dir)
{
	char dst[8192];
	const char *base = strrchr(path, '/');

	snprintf(dst, sizeof(dst), "%s/%s", dir, base ? base + 1 : path);
	return link(path, dst) ? -1 : 0;
}

int cs_out_snapshot(const char *dir, uint64_t *main_len)
{
	char dst[8192], seg[sizeof(ring.stem) + 32];
	const char *base = strrchr(out_path, '/');
	int rc = 0;

	if (out_fd < 0)
		return -1;
	stage_commit_all();
	out_drain();
	pthread_mutex_lock(&io_lock);
	*main_len = out_written;
	if (!ring.on) {
		rc = link_into(out_path, dir);
	} else {
		/* the main file's RING record is rewritten in place: a copy says what the linked
		 * segments are; the current segment is closed so that the links hold it whole */
		snprintf(dst, sizeof(dst), "%s/%s", dir, base ? base + 1 : out_path);
		rc = copy_file(out_path, dst);
		for (int i = 0; i < ring.nclosed && !rc; i++) {
			ring_seg_path(seg, sizeof(seg), ring.closed[i].n);
			rc = link_into(seg, dir);
		}
		if (!rc && ring.fd >= 0) {
			ring_seg_path(seg, sizeof(seg), ring.n);
			rc = link_into(seg, dir);
			if (!rc && ring.records)
				ring_switch(ring.now());
		}
	}
	pthread_mutex_unlock(&io_lock);
	return rc;
}

const char *cs_out_path(void)
{
	return out_fd >= 0 ? out_path : NULL;
}

void cs_out_close(void)
{
	if (out_fd < 0)
		return;
	stage_commit_all();
	out_drain();
	pthread_mutex_lock(&io_lock);
	close_files();
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
	close_files();
	ring.on = 0;
	bufs[0].len = bufs[1].len = 0;
	tls_tid = 0;
	/* The forking thread's staging buffer may be locked by a thread of the parent: the child's
	 * thread must not commit it when it exits. */
	atomic_store(&staging, 0);
	tls_stage = NULL;
	if (stage_key_ok)
		pthread_setspecific(stage_key, NULL);
}
