/* testutil.c - helpers shared by the unit tests: temporary directories, files, child processes. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define TU_MAX_DIRS 64
static char *tu_dirs[TU_MAX_DIRS];
static int tu_ndirs;
static pid_t tu_owner;

static int tu_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void tu_cleanup(void)
{
	if (getpid() != tu_owner)
		return;
	for (int i = 0; i < tu_ndirs; i++)
		nftw(tu_dirs[i], tu_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

char *tu_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char tmpl[4096];

	snprintf(tmpl, sizeof(tmpl), "%s/cuscope-test-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmpl))
		return NULL;
	if (!tu_owner) {
		tu_owner = getpid();
		atexit(tu_cleanup);
	}
	if (tu_ndirs < TU_MAX_DIRS)
		tu_dirs[tu_ndirs++] = strdup(tmpl);
	return strdup(tmpl);
}

char *tu_path(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);

	snprintf(p, n, "%s/%s", dir, name);
	return p;
}

int tu_write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	int rc = 0;

	if (!f)
		return -1;
	if (len && fwrite(data, 1, len, f) != len)
		rc = -1;
	if (fclose(f))
		rc = -1;
	return rc;
}

char *tu_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0;

	if (!f)
		return NULL;
	for (;;) {
		if (cap - n < 4096) {
			cap = cap ? cap * 2 : 8192;
			buf = realloc(buf, cap + 1);
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

int tu_file_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

static void tu_append(char **buf, size_t *len, const char *data, size_t n)
{
	*buf = realloc(*buf, *len + n + 1);
	memcpy(*buf + *len, data, n);
	*len += n;
	(*buf)[*len] = '\0';
}

int tu_run(const char *const argv[], const char *const env[], char **out, char **err)
{
	int po[2], pe[2];
	pid_t pid;
	char *ob = calloc(1, 1), *eb = calloc(1, 1);
	size_t ol = 0, el = 0;
	int status, open_fds = 2;

	if (pipe(po) || pipe(pe))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);

		dup2(devnull, 0);
		dup2(po[1], 1);
		dup2(pe[1], 2);
		close(po[0]);
		close(pe[0]);
		for (int i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
	while (open_fds > 0) {
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < 2; i++) {
			char tmp[8192];
			ssize_t n;

			if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(fds[i].fd, tmp, sizeof(tmp));
			if (n <= 0) {
				close(fds[i].fd);
				fds[i].fd = -1;
				open_fds--;
				continue;
			}
			if (i == 0)
				tu_append(&ob, &ol, tmp, (size_t)n);
			else
				tu_append(&eb, &el, tmp, (size_t)n);
		}
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (out)
		*out = ob;
	else
		free(ob);
	if (err)
		*err = eb;
	else
		free(eb);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

const char *tu_cuscope_bin(void)
{
	const char *b = getenv("CUSCOPE_BIN");

	return b ? b : "cuscope";
}

const char *tu_source_root(void)
{
	const char *r = getenv("CUSCOPE_SOURCE_ROOT");

	return r ? r : ".";
}

struct tu_result tu_cuscope(const char **argv)
{
	static const char *const env[] = {"TZ=UTC", NULL};
	struct tu_result r;

	argv[0] = tu_cuscope_bin();
	r.rc = tu_run(argv, env, &r.out, &r.err);
	ck_assert_msg(r.rc >= 0, "cannot run %s", argv[0]);
	return r;
}

void tu_result_free(struct tu_result *r)
{
	free(r->out);
	free(r->err);
}

void tu_assert_one_line_error(const struct tu_result *r, const char *what)
{
	ck_assert_msg(r->rc == 2, "%s: exit code %d, stderr: %s", what, r->rc, r->err);
	ck_assert_msg(r->out[0] == '\0', "%s: stdout not empty: %s", what, r->out);
	ck_assert_msg(tu_count_lines(r->err) == 1 && r->err[strlen(r->err) - 1] == '\n',
		      "%s: stderr is not one line: '%s'", what, r->err);
	ck_assert_msg(!strncmp(r->err, "cuscope: ", 9), "%s: stderr: %s", what, r->err);
}

char *tu_source_file(const char *rel)
{
	return tu_path(tu_source_root(), rel);
}

void tu_need(int ok, const char *test, const char *what)
{
	if (!ok) {
		fprintf(stderr, "%s: cannot write the test data: %s\n", test, what ? what : "?");
		exit(1);
	}
}

int tu_count_lines(const char *s)
{
	int n = 0;

	for (; s && *s; s++)
		if (*s == '\n')
			n++;
	return n;
}

void tu_add_process(cs_trace_writer *w, uint32_t pid, const char *command_line, const char *test)
{
	cs_process p;

	memset(&p, 0, sizeof(p));
	p.pid = pid;
	p.ppid = 1;
	p.start = 0;
	p.end = CS_TS_UNKNOWN;
	p.command_line = command_line;
	p.rank = p.local_rank = p.world_size = p.exit_code = CS_ID_NONE;
	p.used_cuda = 1;
	tu_need(cs_writer_add_process(w, &p) == 0, test, cs_writer_errmsg(w));
}
