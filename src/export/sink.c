/*
 * sink.c - where exported bytes go: a file written under a temporary name and renamed into place
 * at the end (cs_outfile: removed on failure, so an interrupted export leaves nothing behind and
 * the file that was there intact; a link planted at the temporary name is not followed), or
 * standard output; either one through gzip when asked. Also the output buffer in front of the
 * sinks, whose full buffers a thread of their own writes (and compresses) while the next one fills.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "cuscope/files.h"
#include "export.h"

#define GZ_CHUNK (256 * 1024)
#define GZ_LEVEL 1 /* the fastest: JSON compresses well even so (docs/performance.md) */

struct fd_sink {
	struct ex_sink base;
	int fd;
	int is_stdout;
	int closed_pipe; /* standard output's reader went away: drop the rest quietly */
	char *path;
	cs_outfile out; /* the file and its temporary, unless standard output */
	int64_t bytes;	/* that reached the file, after compression */
	int gzip;
	z_stream z;
	unsigned char *zbuf;
};

static int write_all(struct fd_sink *s, const void *p, size_t n, cs_error *err)
{
	const char *c = p;

	if (s->closed_pipe)
		return 0;
	while (n) {
		ssize_t w = write(s->fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EPIPE && s->is_stdout) {
			s->closed_pipe = 1;
			return 0;
		}
		if (w < 0)
			return cs_error_set(err, CS_ERR_IO, "cannot write '%s': %s",
					    s->is_stdout ? "standard output" : s->path,
					    strerror(errno));
		c += w;
		n -= (size_t)w;
		s->bytes += w;
	}
	return 0;
}

/* Run deflate over the input set in s->z with flush, writing what comes out. */
static int deflate_out(struct fd_sink *s, int flush, cs_error *err)
{
	int zrc, rc;

	do {
		s->z.next_out = s->zbuf;
		s->z.avail_out = GZ_CHUNK;
		zrc = deflate(&s->z, flush);
		if (zrc == Z_STREAM_ERROR)
			return cs_error_set(err, CS_ERR_IO, "cannot compress the output");
		rc = write_all(s, s->zbuf, GZ_CHUNK - s->z.avail_out, err);
		if (rc)
			return rc;
	} while (s->z.avail_out == 0 || (flush == Z_FINISH && zrc != Z_STREAM_END));
	return 0;
}

static int fd_sink_write(struct ex_sink *base, const void *p, size_t n, cs_error *err)
{
	struct fd_sink *s = (struct fd_sink *)base;

	if (!s->gzip)
		return write_all(s, p, n, err);
	s->z.next_in = (unsigned char *)(uintptr_t)p;
	s->z.avail_in = (uInt)n;
	return deflate_out(s, Z_NO_FLUSH, err);
}

static void fd_sink_free(struct fd_sink *s)
{
	if (s->gzip)
		deflateEnd(&s->z);
	free(s->zbuf);
	free(s->path);
	free(s);
}

static int fd_sink_finish(struct ex_sink *base, int64_t *bytes, cs_error *err)
{
	struct fd_sink *s = (struct fd_sink *)base;
	int rc = 0;

	if (s->gzip) {
		s->z.next_in = NULL;
		s->z.avail_in = 0;
		rc = deflate_out(s, Z_FINISH, err);
	}
	if (!s->is_stdout) {
		if (rc)
			cs_outfile_abort(&s->out);
		else if (cs_outfile_commit(&s->out))
			rc = cs_error_set(err, CS_ERR_IO, "cannot write '%s': %s", s->path,
					  strerror(errno));
	}
	*bytes = s->bytes;
	fd_sink_free(s);
	return rc;
}

static void fd_sink_abort(struct ex_sink *base)
{
	struct fd_sink *s = (struct fd_sink *)base;

	if (!s->is_stdout)
		cs_outfile_abort(&s->out);
	fd_sink_free(s);
}

int ex_sink_open(const char *path, int gzip, struct ex_sink **out, cs_error *err)
{
	struct fd_sink *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
	s->base.write = fd_sink_write;
	s->base.finish = fd_sink_finish;
	s->base.abort = fd_sink_abort;
	s->fd = -1;
	s->gzip = gzip;
	if (gzip) {
		s->zbuf = malloc(GZ_CHUNK);
		/* windowBits 15 + 16: a gzip header and trailer rather than zlib's */
		if (!s->zbuf || deflateInit2(&s->z, GZ_LEVEL, Z_DEFLATED, 15 + 16, 8,
					     Z_DEFAULT_STRATEGY) != Z_OK) {
			free(s->zbuf);
			free(s);
			return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
		}
	}
	if (!strcmp(path, "-")) {
		s->is_stdout = 1;
		s->fd = STDOUT_FILENO;
		*out = &s->base;
		return 0;
	}
	s->path = strdup(path);
	if (!s->path) {
		fd_sink_free(s);
		return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
	}
	/* force: the command checked the output first (cli_output_check(), --force) */
	if (cs_outfile_open(&s->out, path, 1) == 0)
		s->fd = s->out.fd;
	if (s->fd < 0) {
		int e = errno;

		fd_sink_free(s);
		return cs_error_set(err, e == ENOENT ? CS_ERR_NOT_FOUND : CS_ERR_IO,
				    "cannot write '%s': %s", path, cs_file_strerror(e));
	}
	*out = &s->base;
	return 0;
}

/* ---- the output buffer and its writer thread ---- */

struct ex_writer {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *buf; /* the buffer being written, when busy */
	size_t len;
	int busy, quit;
	int error;
	cs_error err;
	struct ex_sink *sink;
};

static void *writer_main(void *arg)
{
	struct ex_writer *w = arg;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		int rc;

		while (!w->busy && !w->quit)
			pthread_cond_wait(&w->cv, &w->mu);
		if (!w->busy)
			break;
		pthread_mutex_unlock(&w->mu);
		rc = w->error ? 0 : w->sink->write(w->sink, w->buf, w->len, &w->err);
		pthread_mutex_lock(&w->mu);
		if (rc && !w->error)
			w->error = rc;
		w->busy = 0;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int ex_out_open(struct ex_out *o, struct ex_sink *sink)
{
	struct ex_writer *w;

	o->sink = sink;
	o->len = 0;
	o->buf = malloc(EX_OUT_CAP);
	if (!o->buf)
		return CS_ERR_NOMEM;
	w = calloc(1, sizeof(*w));
	if (w)
		w->buf = malloc(EX_OUT_CAP);
	if (!w || !w->buf) {
		if (w)
			free(w->buf);
		free(w);
		return 0; /* written in place */
	}
	w->sink = sink;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	if (pthread_create(&w->thread, NULL, writer_main, w)) {
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		free(w->buf);
		free(w);
		return 0;
	}
	o->writer = w;
	return 0;
}

/* Take over the writer's failure, if any; call with its lock held. */
static void writer_error(struct ex_out *o)
{
	if (o->writer->error && !o->error) {
		o->error = o->writer->error;
		o->err = o->writer->err;
	}
}

void ex_out_flush(struct ex_out *o)
{
	struct ex_writer *w = o->writer;
	char *tmp;

	if (!w) {
		if (o->len && !o->error)
			o->error = o->sink->write(o->sink, o->buf, o->len, &o->err);
		o->len = 0;
		return;
	}
	pthread_mutex_lock(&w->mu);
	while (w->busy)
		pthread_cond_wait(&w->cv, &w->mu);
	writer_error(o);
	if (o->len && !o->error) {
		/* swap: the writer takes the full buffer, this side fills its old one */
		tmp = w->buf;
		w->buf = o->buf;
		w->len = o->len;
		o->buf = tmp;
		w->busy = 1;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	o->len = 0;
}

int ex_out_close(struct ex_out *o)
{
	struct ex_writer *w = o->writer;

	if (o->buf)
		ex_out_flush(o);
	if (w) {
		pthread_mutex_lock(&w->mu);
		while (w->busy)
			pthread_cond_wait(&w->cv, &w->mu);
		writer_error(o);
		w->quit = 1;
		pthread_cond_broadcast(&w->cv);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->thread, NULL);
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		free(w->buf);
		free(w);
		o->writer = NULL;
	}
	free(o->buf);
	o->buf = NULL;
	return o->error;
}
