/* files.c - inputs that must be regular files, the private spool directory, atomic outputs
 * (include/cuscope/files.h). libc only: the injection library links this file too. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cuscope/files.h"

const char *cs_file_strerror(int e)
{
	if (e == CS_ENOTREG)
		return "not a regular file";
	if (e == ELOOP)
		return "is a symbolic link";
	if (e == EEXIST)
		return "exists; use --force to replace it";
	return strerror(e);
}

int cs_open_regular(const char *path, int nofollow)
{
	struct stat st;
	int fd = open(path,
		      O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | (nofollow ? O_NOFOLLOW : 0));
	int e;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st))
		e = errno;
	else if (S_ISREG(st.st_mode))
		return fd;
	else
		e = CS_ENOTREG;
	close(fd);
	errno = e;
	return -1;
}

int cs_check_regular(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return errno == ENOENT ? 0 : -1;
	if (!S_ISREG(st.st_mode)) {
		errno = CS_ENOTREG;
		return -1;
	}
	return 0;
}

ssize_t cs_read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

char *cs_read_small_file(const char *path, size_t max, int regular_only)
{
	int fd = regular_only ? cs_open_regular(path, 0) : open(path, O_RDONLY | O_CLOEXEC);
	char *text;
	ssize_t n;
	int e = 0;

	if (fd < 0)
		return NULL;
	text = malloc(max + 1);
	n = text ? cs_read_full(fd, text, max + 1) : -1;
	if (!text)
		e = ENOMEM;
	else if (n < 0)
		e = errno;
	else if ((size_t)n > max)
		e = EFBIG;
	close(fd);
	if (e) {
		free(text);
		errno = e;
		return NULL;
	}
	text[n] = '\0';
	return text;
}

const char *cs_default_spool_dir(char *buf, size_t cap)
{
	const char *tmp = getenv("TMPDIR");
	int n;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	n = snprintf(buf, cap, "%s/cuscope-spool-%lu", tmp, (unsigned long)geteuid());
	return n < 0 || (size_t)n >= cap ? NULL : buf;
}

int cs_private_dir(const char *dir, int create, char *why, size_t cap)
{
	struct stat st;

	if (create && mkdir(dir, 0700) && errno != EEXIST) {
		snprintf(why, cap, "cannot create it: %s", strerror(errno));
		return -1;
	}
	if (lstat(dir, &st)) {
		snprintf(why, cap, "%s", strerror(errno));
		return -1;
	}
	if (S_ISLNK(st.st_mode)) {
		snprintf(why, cap, "it is a symbolic link");
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, cap, "it is not a directory");
		return -1;
	}
	if (st.st_uid != geteuid()) {
		snprintf(why, cap, "it belongs to uid %lu, not to this user (uid %lu)",
			 (unsigned long)st.st_uid, (unsigned long)geteuid());
		return -1;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, cap, "others can write to it (mode %04o)",
			 (unsigned)(st.st_mode & 07777));
		return -1;
	}
	return 0;
}

int cs_same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (!strcmp(a, "-") || !strcmp(b, "-"))
		return 0;
	if (!strcmp(a, b))
		return 1;
	if (stat(a, &sa) || stat(b, &sb))
		return 0;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* 16 hex characters nobody can guess ahead (getrandom; the clock and pid if that fails). */
static void random_suffix(char out[17])
{
	unsigned char raw[8];
	ssize_t n = getrandom(raw, sizeof(raw), GRND_NONBLOCK);

	if (n != (ssize_t)sizeof(raw)) {
		struct timespec ts;
		unsigned long long v;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		v = ((unsigned long long)ts.tv_nsec << 20) ^ (unsigned long long)ts.tv_sec ^
		    ((unsigned long long)getpid() << 40);
		memcpy(raw, &v, sizeof(raw));
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

/* Create "path" suffix "RANDOM" exclusively; *name gets the malloc'd name. Returns the fd. */
static int create_temp(const char *path, const char *suffix, char **name)
{
	size_t n = strlen(path) + strlen(suffix) + 17;
	char *tmp = malloc(n);

	*name = NULL;
	if (!tmp)
		return -1;
	for (int tries = 0; tries < 16; tries++) {
		char r[17];
		int fd;

		random_suffix(r);
		snprintf(tmp, n, "%s%s%s", path, suffix, r);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (fd >= 0) {
			*name = tmp;
			return fd;
		}
		if (errno != EEXIST)
			break;
	}
	free(tmp);
	return -1;
}

char *cs_make_temp_beside(const char *path, const char *suffix)
{
	char *name;
	int fd = create_temp(path, suffix, &name);

	if (fd < 0)
		return NULL;
	close(fd);
	return name;
}

/* The process's own descriptors by name: written in place, though they are links. */
static int own_descriptor(const char *path)
{
	return !strcmp(path, "/dev/stdout") || !strcmp(path, "/dev/stderr") ||
	       !strncmp(path, "/dev/fd/", 8) || !strncmp(path, "/proc/self/fd/", 14);
}

int cs_output_check(const char *path, int force, int *direct)
{
	struct stat l, st;

	*direct = 0;
	if (lstat(path, &l))
		return errno == ENOENT ? 0 : -1;
	if (S_ISDIR(l.st_mode)) {
		errno = EISDIR;
		return -1;
	}
	if (S_ISLNK(l.st_mode) && stat(path, &st)) /* a dangling link: replaced, as a file */
		st = l;
	else if (!S_ISLNK(l.st_mode))
		st = l;
	if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
		if (force)
			return 0;
		errno = EEXIST;
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		return -1;
	}
	/* a character device or a FIFO is written in place (-o /dev/null), never replaced; a block
	 * device or a socket never, nor anything but a file through another link */
	if ((S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) &&
	    (!S_ISLNK(l.st_mode) || own_descriptor(path))) {
		/* a FIFO of another user (planted where the output goes) would hand it the output */
		if (S_ISFIFO(st.st_mode) && st.st_uid != geteuid()) {
			errno = EPERM;
			return -1;
		}
		*direct = 1;
		return 0;
	}
	errno = CS_ENOTREG;
	return -1;
}

int cs_outfile_open(cs_outfile *o, const char *path, int force)
{
	int direct;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	if (cs_output_check(path, force, &direct))
		return -1;
	o->path = strdup(path);
	if (!o->path)
		return -1;
	if (direct) {
		o->direct = 1;
		o->fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	} else {
		o->fd = create_temp(path, ".tmp.", &o->tmp);
	}
	if (o->fd < 0) {
		int e = errno;

		free(o->path);
		o->path = NULL;
		errno = e;
		return -1;
	}
	return 0;
}

int cs_outfile_commit(cs_outfile *o)
{
	int rc = 0, e = 0;

	if (o->fd >= 0 && close(o->fd)) {
		rc = -1;
		e = errno;
	}
	o->fd = -1;
	if (!rc && !o->direct && rename(o->tmp, o->path)) {
		rc = -1;
		e = errno;
	}
	if (rc && o->tmp)
		unlink(o->tmp);
	free(o->path);
	free(o->tmp);
	o->path = o->tmp = NULL;
	errno = e;
	return rc;
}

void cs_outfile_abort(cs_outfile *o)
{
	int e = errno;

	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	if (o->tmp)
		unlink(o->tmp);
	free(o->path);
	free(o->tmp);
	o->path = o->tmp = NULL;
	errno = e;
}

int cs_file_put(const char *dir, const char *name, const char *text, size_t len)
{
	char tmp[8400], path[8400];
	int fd, e;

	snprintf(tmp, sizeof(tmp), "%s/.%s", dir, name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (write(fd, text, len) != (ssize_t)len || close(fd) || rename(tmp, path)) {
		e = errno;
		unlink(tmp);
		errno = e;
		return -1;
	}
	return 0;
}
