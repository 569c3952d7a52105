/*
 * files.h - opening files that another user of the machine may have planted: inputs that must be
 * regular files (a FIFO would block a reader forever), the private spool directory, and outputs
 * written under an unpredictable temporary name and renamed into place.
 *
 * Depends on libc only: the injection library links it too. Functions return 0 or a descriptor on
 * success and -1 with errno set on failure; CS_ENOTREG is the errno of "not a regular file" and
 * cs_file_strerror() words it.
 */
#ifndef CUSCOPE_FILES_H
#define CUSCOPE_FILES_H

#include <errno.h>
#include <stddef.h>
#include <sys/types.h>

/* errno for a path that exists but is not a regular file (a FIFO, a device, a directory). */
#define CS_ENOTREG EMEDIUMTYPE

/* strerror(e), but "not a regular file" for CS_ENOTREG, "is a symbolic link" for ELOOP and "exists;
 * use --force to replace it" for EEXIST. */
const char *cs_file_strerror(int e);

/*
 * Open path read-only without blocking (O_NONBLOCK: a FIFO with no writer does not hang the open)
 * and close-on-exec; with nofollow, a symbolic link as the last component is refused (ELOOP).
 * Anything but a regular file is closed and refused with CS_ENOTREG. Returns the descriptor.
 */
int cs_open_regular(const char *path, int nofollow);
/* 0 when path is not there or is a regular file (stat, following links); else -1, CS_ENOTREG. */
int cs_check_regular(const char *path);
/* Read up to n bytes from fd into buf, retrying short reads and EINTR: the bytes read (fewer only
 * at end of file), or -1 with errno set. */
ssize_t cs_read_full(int fd, void *buf, size_t n);
/* The whole file at path, malloc'd and NUL-terminated, when it holds at most max bytes; else NULL
 * with errno set: EFBIG when it holds more, CS_ENOTREG when regular_only and it is not a regular
 * file (a FIFO or a device is read as it comes otherwise), ENOMEM, or what open or read said. */
char *cs_read_small_file(const char *path, size_t max, int regular_only);

/*
 * The default spool directory, when CUSCOPE_SPOOL_DIR is not set: $TMPDIR/cuscope-spool-UID, or
 * /tmp/cuscope-spool-UID. Returns buf (cap bytes), or NULL when the name does not fit.
 */
const char *cs_default_spool_dir(char *buf, size_t cap);
/*
 * Check that dir is private to this user: a directory (lstat: a symbolic link is refused) owned by
 * the effective user and writable by no one else. With create, a missing dir is made first, 0700.
 * Returns 0, or -1 with a reason ("is a symbolic link", ...) in why (cap bytes).
 */
int cs_private_dir(const char *dir, int create, char *why, size_t cap);

/*
 * 1 when a and b name the same file: the same string, or both exist and have the same device and
 * inode (after following links: a link to the input or a hard link is the input). "-" (standard
 * input or output) is never the same file as anything.
 */
int cs_same_file(const char *a, const char *b);

/*
 * Whether path may be an output (docs/security.md, "Outputs"), the one rule of every command that
 * writes: 0 when nothing is there; when a regular file, a link to one or a dangling link is there
 * and force (it is replaced: a link is replaced, not written through); or when path names a
 * character device or a FIFO of this user directly, or through /dev/stdout, /dev/stderr,
 * /dev/fd/N or /proc/self/fd/N (*direct = 1: written in place, as -o /dev/null, never replaced).
 * Else -1 with errno: EEXIST (a file there and no force), EISDIR, EPERM (another user's FIFO) or
 * CS_ENOTREG (a block device, a socket, a link to a device or a FIFO).
 */
int cs_output_check(const char *path, int force, int *direct);

/*
 * Write text as "<dir>/<name>", whole: into "<dir>/.<name>" first (mode 0600), then renamed, so
 * that a reader of the directory never sees part of it (the spool's dump requests and answers,
 * slow-step and hang notices). Two writers of one name must not run at once. 0 or -1, errno set.
 */
int cs_file_put(const char *dir, const char *name, const char *text, size_t len);

/*
 * An output file written atomically: cs_outfile_open() checks path with cs_output_check(), then
 * creates "PATH.tmp.RANDOM" beside it with O_CREAT|O_EXCL|O_NOFOLLOW (a link planted there is not
 * followed: the open fails), mode 0666 less the umask; write to fd; cs_outfile_commit() closes fd
 * (unless it is -1: the caller closed it, for example through fclose) and renames the temporary
 * onto path, so a failed write leaves the file that was there untouched. A character device or
 * FIFO that cs_output_check() lets through is written in place instead (direct). On any failure
 * the temporary is removed.
 */
typedef struct cs_outfile {
	char *path, *tmp;
	int fd;
	int direct;
} cs_outfile;

int cs_outfile_open(cs_outfile *o, const char *path, int force);
int cs_outfile_commit(cs_outfile *o);
void cs_outfile_abort(cs_outfile *o);
/*
 * Make a new empty file for a temporary beside path, named "PATH" SUFFIX "RANDOM" (O_EXCL,
 * O_NOFOLLOW, mode 0666 less the umask), for a writer that opens it again by name (SQLite).
 * Returns the malloc'd name, or NULL with errno set.
 */
char *cs_make_temp_beside(const char *path, const char *suffix);

#endif
