/*
 * framing.c - a spool file cut into records (include/cuscope/spool.h): the first pass, which reads
 * each file's header and its first CS_REC_CLOCK (in the first PROBE_BYTES), and the buffered
 * reader of the second pass, which hands over one whole record at a time from a fixed buffer.
 *
 * A record whose size is < 8, not a multiple of 8 or past the end of the file ends its file
 * (SF_TRUNCATED: counted in truncated_files by the caller). A file with a bad header (too short,
 * wrong magic, newer or unknown version, bad header size, a clock above INT64_MAX ns) is set aside
 * with the reason (file_info.bad_code, bad_msg).
 *
 * The main file of a ring (version CS_SPOOL_VERSION_RING, docs/spool-format.md "Ring files") brings
 * its segments, "<stem>.<n>.cuseg" beside it, found here in the directory and sorted by n; its
 * clock pair is that of the oldest segment still there (the window kept), not the process's start.
 * A segment named on its own is set aside: it means nothing without its main file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuscope/files.h"
#include "cuscope/grow.h"
#include "cuscope/sort.h"
#include "spool_internal.h"

/* ---- reading ---- */

/* Make need bytes available at buf + pos: 1 when they are, 0 at the end, -1 (errno) on error. */
int spool_file_fill(struct spool_file *f, size_t need)
{
	if (f->len - f->pos >= need)
		return 1;
	if (f->pos) {
		memmove(f->buf, f->buf + f->pos, f->len - f->pos);
		f->len -= f->pos;
		f->pos = 0;
	}
	while (f->len < need && !f->eof) {
		ssize_t r = read(f->fd, f->buf + f->len, READ_BUF_SIZE - f->len);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			f->eof = 1;
		f->len += (size_t)r;
		f->bytes_read += (uint64_t)r;
	}
	return f->len >= need;
}

/* Next record: 1 (*p, *h filled), 0 at a clean end, SF_TRUNCATED, or -1 (errno) on a read error. */
int spool_file_next(struct spool_file *f, const unsigned char **p, struct cs_rec *h)
{
	int rc = spool_file_fill(f, sizeof(*h));

	if (rc <= 0)
		return rc < 0 ? rc : f->len > f->pos ? SF_TRUNCATED : 0;
	memcpy(h, f->buf + f->pos, sizeof(*h));
	if (h->size < sizeof(*h) || h->size % 8)
		return SF_TRUNCATED;
	rc = spool_file_fill(f, h->size);
	if (rc <= 0)
		return rc < 0 ? rc : SF_TRUNCATED;
	*p = f->buf + f->pos;
	f->pos += h->size;
	return 1;
}

/* Copy the fixed part of a record; 0 when the record is too short for it. */
int spool_rec_load(void *dst, size_t dsize, const void *p, size_t size)
{
	if (size < dsize)
		return 0;
	memcpy(dst, p, dsize);
	return 1;
}

/* ---- first pass ---- */

/* Check a file's header, find its earliest clock pair. Errors only when the file cannot be read. */
static int probe_one(struct importer *im, struct file_info *fi)
{
	struct cs_spool_header *h = &fi->h;
	struct stat st = {0};
	size_t off;
	ssize_t n;
	int fd;

	/*
	 * Never blocks: a FIFO or a device is refused after an O_NONBLOCK open. In a directory that
	 * others may write to, such a file or a symbolic link is skipped like a foreign file; named
	 * on its own it is an error (a link named on its own is followed).
	 */
	fd = cs_open_regular(fi->path, im->from_dir);
	if (fd < 0 && im->from_dir && (errno == CS_ENOTREG || errno == ELOOP)) {
		fi->bad_code = CS_ERR_INVALID;
		snprintf(fi->bad_msg, sizeof(fi->bad_msg), "%s", cs_file_strerror(errno));
		return 0;
	}
	if (fd < 0)
		return cs_error_set(im->err, errno == ENOENT ? CS_ERR_NOT_FOUND : CS_ERR_IO,
				    "cannot open '%s': %s", fi->path, cs_file_strerror(errno));
	if (fstat(fd, &st)) {
		int e = errno;

		close(fd);
		return cs_error_set(im->err, CS_ERR_IO, "cannot read '%s': %s", fi->path,
				    strerror(e));
	}
	fi->size = (uint64_t)st.st_size;
	n = cs_read_full(fd, im->buf, PROBE_BYTES);
	if (n < 0) {
		int e = errno;

		close(fd);
		return cs_error_set(im->err, CS_ERR_IO, "cannot read '%s': %s", fi->path,
				    strerror(e));
	}
	close(fd);

	fi->bad_code = CS_ERR_CORRUPT;
	if ((size_t)n < sizeof(*h)) {
		snprintf(fi->bad_msg, sizeof(fi->bad_msg), "too short for a spool file header");
		return 0;
	}
	memcpy(h, im->buf, sizeof(*h));
	if (memcmp(h->magic, CS_SPOOL_MAGIC, sizeof(h->magic))) {
		snprintf(fi->bad_msg, sizeof(fi->bad_msg), "not a cuscope spool file");
		return 0;
	}
	if (h->version > CS_SPOOL_VERSION_RING) {
		fi->bad_code = CS_ERR_NEWER_SCHEMA;
		snprintf(fi->bad_msg, sizeof(fi->bad_msg),
			 "spool format version %" PRIu32 " is newer than this cuscope reads (%d)",
			 h->version, CS_SPOOL_VERSION_RING);
		return 0;
	}
	if (h->version == 0 || h->header_size < sizeof(*h) || h->header_size > PROBE_BYTES) {
		snprintf(fi->bad_msg, sizeof(fi->bad_msg),
			 "bad spool file header (version %" PRIu32 ", header size %" PRIu32 ")",
			 h->version, h->header_size);
		return 0;
	}
	if ((size_t)n < h->header_size) {
		snprintf(fi->bad_msg, sizeof(fi->bad_msg), "too short for a spool file header");
		return 0;
	}
	if (h->cupti_ns > (uint64_t)INT64_MAX || h->realtime_ns > (uint64_t)INT64_MAX) {
		snprintf(fi->bad_msg, sizeof(fi->bad_msg),
			 "implausible clock in the spool file header (CUPTI %" PRIu64
			 " ns, real time %" PRIu64 " ns: above 2^63)",
			 h->cupti_ns, h->realtime_ns);
		return 0;
	}
	fi->bad_code = 0;
	fi->base_cupti = h->cupti_ns;
	fi->base_real = h->realtime_ns;
	/* the first CLOCK record, in case the header has no CUPTI time or a later one */
	for (off = h->header_size; off + sizeof(struct cs_rec) <= (size_t)n;) {
		struct cs_rec rh;
		struct cs_rec_clock c;

		memcpy(&rh, im->buf + off, sizeof(rh));
		if (rh.size < sizeof(rh) || rh.size % 8 || off + rh.size > (size_t)n)
			break;
		if (rh.type == CS_REC_CLOCK &&
		    spool_rec_load(&c, sizeof(c), im->buf + off, rh.size)) {
			if (c.cupti_ns && c.cupti_ns <= (uint64_t)INT64_MAX &&
			    c.realtime_ns <= (uint64_t)INT64_MAX &&
			    (!fi->base_cupti || c.cupti_ns < fi->base_cupti)) {
				fi->base_cupti = c.cupti_ns;
				fi->base_real = c.realtime_ns;
			}
			break;
		}
		off += rh.size;
	}
	return 0;
}

/* ---- rings ---- */

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n > k && strcmp(s + n - k, suffix) == 0;
}

static int cmp_seg(const void *pa, const void *pb)
{
	const struct spool_seg *a = pa, *b = pb;

	return a->n < b->n ? -1 : a->n > b->n;
}

/* The segments of the ring whose main file is fi->path: "<stem>.<n>.cuseg" in its directory. */
static int find_segments(struct importer *im, struct file_info *fi)
{
	const char *slash = strrchr(fi->path, '/');
	size_t dlen = slash ? (size_t)(slash - fi->path) : 0, cap = 0;
	const char *base = slash ? slash + 1 : fi->path;
	size_t stem = strlen(base) - strlen(CS_SPOOL_SUFFIX);
	char *dir = strndup(slash ? fi->path : ".", slash ? (dlen ? dlen : 1) : 1);
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if (!dir)
		return import_nomem(im);
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		const char *name = de->d_name, *num = name + stem + 1;
		char *end;
		unsigned long n;

		if (strncmp(name, base, stem) || name[stem] != '.' || *num < '0' || *num > '9')
			continue;
		n = strtoul(num, &end, 10);
		if (strcmp(end, CS_SPOOL_SEG_SUFFIX) || n == 0 || n > UINT32_MAX)
			continue;
		if (cs_grow((void **)&fi->segs, &cap, fi->nsegs + 1, sizeof(*fi->segs)) ||
		    !(fi->segs[fi->nsegs].path = malloc(strlen(dir) + strlen(name) + 2))) {
			rc = import_nomem(im);
			break;
		}
		sprintf(fi->segs[fi->nsegs].path, "%s/%s", dir, name);
		fi->segs[fi->nsegs++].n = (uint32_t)n;
	}
	if (d)
		closedir(d);
	free(dir);
	if (!rc && fi->nsegs)
		cs_sort(fi->segs, fi->nsegs, sizeof(*fi->segs), cmp_seg);
	return rc;
}

/* The last CS_REC_RING of a ring's main file (zeros when none). */
static int last_ring_record(struct importer *im, struct file_info *fi, struct cs_rec_ring *out)
{
	struct spool_file sf;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&sf, 0, sizeof(sf));
	sf.buf = im->buf;
	sf.fd = cs_open_regular(fi->path, im->from_dir);
	if (sf.fd < 0)
		return cs_error_set(im->err, errno == ENOENT ? CS_ERR_NOT_FOUND : CS_ERR_IO,
				    "cannot open '%s': %s", fi->path, cs_file_strerror(errno));
	rc = spool_file_fill(&sf, fi->h.header_size);
	sf.pos = fi->h.header_size;
	while (rc > 0) {
		const unsigned char *p;
		struct cs_rec h;

		rc = spool_file_next(&sf, &p, &h);
		if (rc == 1 && h.type == CS_REC_RING)
			spool_rec_load(out, sizeof(*out), p, h.size);
	}
	close(sf.fd);
	return rc < 0 ? cs_error_set(im->err, CS_ERR_IO, "cannot read '%s': %s", fi->path,
				     strerror(errno))
		      : 0;
}

/*
 * A ring's main file: its segments (from the first its last CS_REC_RING keeps), the size of all
 * of them, and its clock pair: that of the window's start when the ring deleted segments (every
 * event kept started after it), else that of the oldest segment. A segment with a bad header, or
 * of another process, is left out.
 */
static int probe_ring(struct importer *im, struct file_info *fi)
{
	struct cs_rec_ring last;
	int rc = last_ring_record(im, fi, &last), clocked = 0, from_dir = im->from_dir;
	size_t kept = 0;

	if (!rc)
		rc = find_segments(im, fi);
	im->from_dir = 1; /* found in a directory: a link or a FIFO there is left out */
	for (size_t i = 0; !rc && i < fi->nsegs; i++) {
		struct file_info seg;

		memset(&seg, 0, sizeof(seg));
		seg.path = fi->segs[i].path;
		if (fi->segs[i].n < last.first_segment)
			seg.bad_code = CS_ERR_NOT_FOUND; /* deleted by the ring, or about to be */
		else
			rc = probe_one(im, &seg);
		if (rc == CS_ERR_NOT_FOUND) { /* deleted since the listing: the ring moved on */
			rc = 0;
			seg.bad_code = CS_ERR_NOT_FOUND;
			cs_error_set(im->err, CS_OK, "%s", "");
		}
		if (rc || seg.bad_code || seg.h.version != CS_SPOOL_VERSION_RING ||
		    seg.h.pid != fi->h.pid) {
			free(fi->segs[i].path);
			fi->segs[i].path = NULL;
			continue;
		}
		fi->segs[i].header_size = seg.h.header_size;
		fi->segs[kept] = fi->segs[i];
		if (kept++ != i)
			fi->segs[i].path = NULL;
		fi->size += seg.size;
		if (!clocked && seg.base_cupti) {
			uint64_t back = last.window_start && last.window_start < seg.base_cupti
						? seg.base_cupti - last.window_start
						: 0;

			clocked = 1;
			fi->base_cupti = seg.base_cupti - back;
			fi->base_real = seg.base_real > back ? seg.base_real - back : 0;
			fi->h.cupti_ns = fi->base_cupti;
			fi->h.realtime_ns = fi->base_real;
		}
	}
	im->from_dir = from_dir;
	for (size_t i = kept; i < fi->nsegs; i++)
		free(fi->segs[i].path);
	fi->nsegs = kept;
	return rc;
}

int spool_file_probe(struct importer *im, struct file_info *fi)
{
	int rc = probe_one(im, fi);

	if (rc || fi->bad_code || fi->h.version != CS_SPOOL_VERSION_RING)
		return rc;
	if (!has_suffix(fi->path, CS_SPOOL_SUFFIX)) {
		fi->bad_code = CS_ERR_INVALID;
		snprintf(fi->bad_msg, sizeof(fi->bad_msg), "%s",
			 has_suffix(fi->path, CS_SPOOL_SEG_SUFFIX)
				 ? "a segment of a ring: import its " CS_SPOOL_SUFFIX
				   " file or its directory"
				 : "a ring's main file must be named *" CS_SPOOL_SUFFIX
				   " (its segments are found by that name)");
		return 0;
	}
	fi->ring = 1;
	return probe_ring(im, fi);
}
