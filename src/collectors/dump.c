/*
 * dump.c - the profiled process's side of `cuscope dump` (src/cli/cmd_dump.c has the other): once
 * per flush period the flush thread looks at "<spool dir>/dump.req" (one stat(2) when nothing
 * changed); for each dump number it has not served whose directory exists, it writes a clock record
 * (so that the dump has a recent anchor), puts its files into the directory (cs_out_snapshot) and
 * says so in "<its spool file's name>.done" there. Only under `cuscope record` (CUSCOPE_RECORD_PID
 * set). Nothing here blocks on the requester: a dump it misses is taken as its files are.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector.h"
#include "cuscope/files.h"

static char dump_req_path[4200]; /* "<spool dir>/dump.req"; empty when not under record */
static char dump_spool[4096];
static struct stat dump_req_seen;
static unsigned dump_served;

void cs_dump_setup(const char *dir)
{
	if (!getenv(CS_ENV_RECORD_PID))
		return;
	snprintf(dump_spool, sizeof(dump_spool), "%s", dir);
	snprintf(dump_req_path, sizeof(dump_req_path), "%s/%s", dir, CS_DUMP_REQUEST);
}

/* Write "<dir>/<name>.done": the main file's length and the snapshot's status. */
static void dump_done(const char *dir, uint64_t len, int rc)
{
	const char *path = cs_out_path(), *base;
	char name[4200], text[64];
	int n;

	if (!path)
		return;
	base = strrchr(path, '/');
	snprintf(name, sizeof(name), "%s%s", base ? base + 1 : path, CS_DUMP_DONE_SUFFIX);
	n = snprintf(text, sizeof(text), "%llu %d\n", (unsigned long long)len, rc);
	cs_file_put(dir, name, text, (size_t)n);
}

void cs_dump_poll(uint64_t now)
{
	struct stat st;
	char text[32], dir[4200];
	unsigned n;
	ssize_t got;
	int fd;

	if (!dump_req_path[0] || stat(dump_req_path, &st))
		return;
	if (st.st_ino == dump_req_seen.st_ino && st.st_size == dump_req_seen.st_size &&
	    st.st_mtim.tv_sec == dump_req_seen.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == dump_req_seen.st_mtim.tv_nsec)
		return;
	dump_req_seen = st;
	fd = open(dump_req_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	got = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (got <= 0)
		return;
	text[got] = '\0';
	n = (unsigned)strtoul(text, NULL, 10);
	if (n <= dump_served)
		return;
	/* every number since the last served has a directory of its own, unless its requester
	 * gave up on it (then there is none) */
	for (unsigned k = n - dump_served > 16 ? n - 16 : dump_served + 1; k <= n; k++) {
		uint64_t len = 0;
		int rc;

		snprintf(dir, sizeof(dir), "%s/%s%u", dump_spool, CS_DUMP_DIR_PREFIX, k);
		if (access(dir, W_OK))
			continue;
		cs_write_clock_record(now);
		rc = cs_out_snapshot(dir, &len);
		dump_done(dir, len, rc);
	}
	dump_served = n;
}
