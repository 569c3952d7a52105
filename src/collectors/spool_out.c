/*
 * spool_out.c - the profiled process's spool file and its string table.
 *
 * Records are appended to an in-memory buffer under a short lock; full buffers are swapped out and
 * written with write(2) outside that lock, by the flush thread (every few hundred ms) or by the
 * thread that filled the buffer. What was written survives the process being killed. A child made
 * by fork() writes nothing: the atfork handlers leave it with no file (CUDA cannot be used in it
 * anyway).
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

#define OUT_BUF_SIZE (2u << 20)

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
	pthread_mutex_unlock(&rec_lock);
	if (full->len && out_fd >= 0) {
		if (write_all(out_fd, full->data, full->len) == 0)
			out_written += full->len;
	}
	full->len = 0;
	pthread_mutex_unlock(&io_lock);
}

void cs_out_write(void *rec, size_t size, uint16_t type, uint32_t tid)
{
	struct cs_rec *h = rec;
	size_t padded = (size + 7) & ~(size_t)7;

	if (out_fd < 0 || padded > UINT16_MAX || padded > OUT_BUF_SIZE) {
		atomic_fetch_add(&out_dropped, 1);
		return;
	}
	/* Past the size limit only the bookkeeping that says what was cut still goes in. */
	if (out_limit && out_written + bufs[active].len + padded > out_limit &&
	    type != CS_REC_DROPPED && type != CS_REC_END) {
		atomic_fetch_add(&out_dropped, 1);
		return;
	}
	h->type = type;
	h->size = (uint16_t)padded;
	h->tid = tid;
	pthread_mutex_lock(&rec_lock);
	while (bufs[active].len + padded > OUT_BUF_SIZE) {
		pthread_mutex_unlock(&rec_lock);
		out_drain();
		pthread_mutex_lock(&rec_lock);
	}
	{
		char *dst = bufs[active].data + bufs[active].len;

		memcpy(dst, rec, size);
		if (padded > size)
			memset(dst + size, 0, padded - size);
		bufs[active].len += padded;
	}
	pthread_mutex_unlock(&rec_lock);
	atomic_fetch_add(&out_records, 1);
}

void cs_out_flush(void)
{
	if (out_fd >= 0)
		out_drain();
}

void cs_out_close(void)
{
	if (out_fd < 0)
		return;
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
	return atomic_load(&out_records);
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
}
