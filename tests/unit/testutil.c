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

/* CUSCOPE_TEST_KEEP=1 keeps the test's files, to look at a trace a test wrote. */
static void tu_cleanup(void)
{
	if (getpid() != tu_owner || getenv("CUSCOPE_TEST_KEEP"))
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

static void tu_add_process_as(cs_trace_writer *w, uint32_t pid, const char *command_line,
			      int32_t rank, int32_t world_size, int64_t end, int32_t exit_code,
			      const char *test)
{
	cs_process p;

	memset(&p, 0, sizeof(p));
	p.pid = pid;
	p.ppid = 1;
	p.start = 0;
	p.end = end;
	p.command_line = command_line;
	p.rank = p.local_rank = rank;
	p.world_size = world_size;
	p.exit_code = exit_code;
	p.used_cuda = 1;
	tu_need(cs_writer_add_process(w, &p) == 0, test, cs_writer_errmsg(w));
}

void tu_add_process(cs_trace_writer *w, uint32_t pid, const char *command_line, const char *test)
{
	tu_add_process_as(w, pid, command_line, CS_ID_NONE, CS_ID_NONE, CS_TS_UNKNOWN, CS_ID_NONE,
			  test);
}

void tu_add_rank(cs_trace_writer *w, uint32_t pid, const char *command_line, int32_t rank,
		 int32_t world_size, int64_t end, const char *test)
{
	tu_add_process_as(w, pid, command_line, rank, world_size, end, 0, test);
}

cs_trace_writer *tu_open_trace(const char *path, const char *command, const char *test)
{
	cs_trace_writer *w = NULL;
	cs_error err = {0, ""};

	tu_need(cs_writer_open(path, 1, &w, &err) == 0, test, err.msg);
	if (command)
		tu_need(cs_writer_set_meta(w, "command", command) == 0, test, cs_writer_errmsg(w));
	return w;
}

void tu_finish_trace(cs_trace_writer *w, const char *test)
{
	cs_error err = {0, ""};

	tu_need(cs_writer_finish(w, &err) == 0, test, err.msg);
}

void tu_intern_names(cs_trace_writer *w, const char *const *names, int n, int64_t *ids,
		     const char *test)
{
	for (int i = 0; i < n; i++) {
		ids[i] = cs_writer_intern(w, names[i]);
		tu_need(ids[i] >= 0, test, "intern");
	}
}

cs_kernel tu_kernel(uint32_t pid, int64_t name_id, int64_t launch, int64_t start, int64_t end)
{
	cs_kernel k;

	memset(&k, 0, sizeof(k));
	k.start = start;
	k.end = end;
	k.queued = k.submitted = CS_TS_UNKNOWN;
	k.launch_start = launch;
	k.launch_end = launch == CS_TS_UNKNOWN ? CS_TS_UNKNOWN : launch + 2000;
	k.pid = k.launch_tid = pid;
	k.stream_id = 7;
	k.grid_x = k.grid_y = k.grid_z = 1;
	k.block_x = 256;
	k.block_y = k.block_z = 1;
	k.name_id = name_id;
	k.launch_cbid = k.graph_id = k.graph_node_id = k.stack_id = CS_ID_NONE;
	return k;
}

cs_memcpy tu_memcpy(uint32_t pid, int kind, int64_t bytes, int64_t launch_start, int64_t launch_end,
		    int64_t start, int64_t end)
{
	cs_memcpy m;

	memset(&m, 0, sizeof(m));
	m.launch_start = launch_start;
	m.launch_end = launch_end;
	m.start = start;
	m.end = end;
	m.pid = m.launch_tid = pid;
	m.stream_id = 7;
	m.copy_kind = kind;
	m.src_kind = kind == CS_COPY_HTOD ? CS_MEM_PINNED : CS_MEM_DEVICE;
	m.dst_kind = kind == CS_COPY_HTOD ? CS_MEM_DEVICE : CS_MEM_PAGEABLE;
	m.is_async = kind == CS_COPY_HTOD;
	m.bytes = bytes;
	m.launch_cbid = m.src_device_id = m.dst_device_id = CS_ID_NONE;
	m.graph_id = m.graph_node_id = m.stack_id = CS_ID_NONE;
	return m;
}

cs_sync tu_sync(uint32_t pid, int64_t start, int64_t end)
{
	cs_sync s;

	memset(&s, 0, sizeof(s));
	s.start = start;
	s.end = end;
	s.pid = s.tid = pid;
	s.stream_id = 7;
	s.type = CS_SYNC_STREAM_SYNCHRONIZE;
	s.api_kind = CS_API_RUNTIME;
	s.event_id = s.cbid = s.stack_id = CS_ID_NONE;
	return s;
}

cs_memory tu_memory(uint32_t pid, int op, uint64_t address, int64_t bytes, int64_t t)
{
	cs_memory m;

	memset(&m, 0, sizeof(m));
	m.start = t;
	m.pid = m.tid = pid;
	m.op = op;
	m.mem_kind = CS_MEM_DEVICE;
	m.address = address;
	m.bytes = bytes;
	m.stream_id = m.cbid = m.stack_id = CS_ID_NONE;
	return m;
}

cs_nvtx tu_nvtx(uint32_t pid, int64_t text_id, int64_t start, int64_t end)
{
	cs_nvtx n;

	memset(&n, 0, sizeof(n));
	n.start = start;
	n.end = end;
	n.pid = n.tid = n.end_tid = pid;
	n.type = CS_NVTX_PUSHPOP;
	n.text_id = text_id;
	n.domain_id = n.range_id = n.payload_id = CS_ID_NONE;
	return n;
}

const int64_t tu_extreme[TU_NEXTREME] = {
	INT64_MIN,	     INT64_MIN + 1,    INT64_MAX, INT64_MAX - 1, -1, INT64_C(1) << 62,
	-(INT64_C(1) << 62), INT64_MAX - 1023, 0,	  1000,
};

void tu_write_extreme_trace(const char *path, uint32_t pid, const char *test)
{
	cs_trace_writer *w;
	cs_error err;
	cs_process p;
	cs_device d;
	cs_stream st;
	int64_t name, api_name, text, step;
	int n = 0;

	tu_need(cs_writer_open(path, 1, &w, &err) == 0, test, err.msg);
	cs_writer_set_overview_min_events(w, 0); /* the overview too */
	memset(&p, 0, sizeof(p));
	p.pid = pid;
	p.ppid = 1;
	p.start = INT64_MIN + 1;
	p.end = INT64_MAX;
	p.command_line = "python extreme.py";
	p.rank = p.local_rank = p.world_size = p.exit_code = CS_ID_NONE;
	p.used_cuda = 1;
	p.dropped_records = INT64_MAX;
	p.cupti_device_bytes = INT64_MAX;
	tu_need(cs_writer_add_process(w, &p) == 0, test, cs_writer_errmsg(w));
	p.pid = pid + 1; /* a second process: sums over processes */
	p.start = -1;
	p.end = INT64_MIN + 1;
	tu_need(cs_writer_add_process(w, &p) == 0, test, cs_writer_errmsg(w));
	memset(&d, 0, sizeof(d));
	d.pid = pid;
	d.device_id = 0;
	d.uuid = "GPU-00000000-0000-0000-0000-000000000000";
	d.name = "Extreme GPU";
	d.total_memory = INT64_MAX;
	d.sm_count = INT32_MAX;
	d.compute_major = 9;
	d.core_clock_khz = INT64_MAX;
	d.memory_bandwidth = INT64_MAX;
	tu_need(cs_writer_add_device(w, &d) == 0, test, cs_writer_errmsg(w));
	memset(&st, 0, sizeof(st));
	st.pid = pid;
	st.stream_id = 7;
	tu_need(cs_writer_add_stream(w, &st) == 0, test, cs_writer_errmsg(w));
	name = cs_writer_intern(w, "extreme_kernel");
	api_name = cs_writer_intern(w, "cudaStreamSynchronize");
	text = cs_writer_intern(w, "range");
	step = cs_writer_intern(w, "step");
	tu_need(name > 0 && api_name > 0 && text > 0 && step > 0, test, cs_writer_errmsg(w));

	for (int i = 0; i < TU_NEXTREME + 3; i++) {
		for (int j = 0; j < TU_NEXTREME + 3; j++) {
			/* the last three: plausible times 1000 .. 5000 */
			int64_t s = i < TU_NEXTREME ? tu_extreme[i] : 1000 * (i - TU_NEXTREME + 1);
			int64_t e = j < TU_NEXTREME   ? tu_extreme[j]
				    : i < TU_NEXTREME ? 1000 * (j - TU_NEXTREME + 1)
						      : s + 1000 * (j - TU_NEXTREME + 1);
			int64_t bytes = tu_extreme[(i + j) % TU_NEXTREME];
			int plausible = i >= TU_NEXTREME && j >= TU_NEXTREME;
			cs_kernel k;
			cs_memcpy c;
			cs_memset m;
			cs_memory a;
			cs_sync y;
			cs_api x;
			cs_nvtx v;

			if (plausible)
				bytes = 4096;
			memset(&k, 0, sizeof(k));
			k.start = s;
			k.end = e;
			k.queued = k.submitted = tu_extreme[j % TU_NEXTREME];
			k.launch_start = e;
			k.launch_end = s;
			k.pid = pid;
			k.launch_tid = pid;
			k.launch_cbid = 211;
			k.launch_api_kind = CS_API_RUNTIME;
			k.stream_id = 7;
			k.correlation_id = (uint64_t)++n;
			k.grid_x = plausible ? 64 : INT32_MAX;
			k.grid_y = plausible ? 1 : INT32_MAX;
			k.grid_z = plausible ? 1 : (n % 2 ? INT32_MAX : INT32_MIN);
			k.block_x = plausible ? 256 : INT32_MAX;
			k.block_y = plausible ? 1 : INT32_MAX;
			k.block_z = plausible ? 1 : (n % 2 ? INT32_MIN : INT32_MAX);
			k.registers_per_thread = INT32_MAX;
			k.static_shared_memory = INT32_MAX;
			k.dynamic_shared_memory = INT32_MIN;
			k.graph_id = k.graph_node_id = CS_ID_NONE;
			k.name_id = name;
			k.stack_id = CS_ID_NONE;
			tu_need(cs_writer_add_kernel(w, &k) == 0, test, cs_writer_errmsg(w));

			memset(&c, 0, sizeof(c));
			c.start = s;
			c.end = e;
			c.launch_start = s;
			c.launch_end = e;
			c.pid = pid;
			c.launch_tid = pid;
			c.launch_cbid = 41;
			c.stream_id = 7;
			c.correlation_id = (uint64_t)++n;
			c.copy_kind = (i + j) % 2 ? CS_COPY_DTOH : CS_COPY_HTOD;
			c.src_kind = CS_MEM_DEVICE;
			c.dst_kind = CS_MEM_PAGEABLE;
			c.src_device_id = c.dst_device_id = CS_ID_NONE;
			c.bytes = bytes;
			c.graph_id = c.graph_node_id = c.stack_id = CS_ID_NONE;
			tu_need(cs_writer_add_memcpy(w, &c) == 0, test, cs_writer_errmsg(w));

			memset(&m, 0, sizeof(m));
			m.start = s;
			m.end = e;
			m.launch_start = m.launch_end = CS_TS_UNKNOWN;
			m.pid = pid;
			m.launch_cbid = CS_ID_NONE;
			m.stream_id = 7;
			m.correlation_id = (uint64_t)++n;
			m.mem_kind = CS_MEM_DEVICE;
			m.bytes = bytes;
			m.graph_id = m.graph_node_id = m.stack_id = CS_ID_NONE;
			tu_need(cs_writer_add_memset(w, &m) == 0, test, cs_writer_errmsg(w));

			memset(&a, 0, sizeof(a));
			a.start = s;
			a.pid = pid;
			a.tid = pid;
			a.stream_id = CS_ID_NONE;
			a.correlation_id = (uint64_t)++n;
			a.op = j % 2 ? CS_MEMOP_FREE : CS_MEMOP_ALLOC;
			a.mem_kind = CS_MEM_DEVICE;
			a.cbid = CS_ID_NONE;
			a.address = 0x7f0000000000ull + (uint64_t)(j / 2) * 4096;
			a.bytes = j % 2 ? 0 : bytes;
			a.stack_id = CS_ID_NONE;
			tu_need(cs_writer_add_memory(w, &a) == 0, test, cs_writer_errmsg(w));

			memset(&y, 0, sizeof(y));
			y.start = s;
			y.end = e;
			y.pid = pid;
			y.tid = pid;
			y.stream_id = 7;
			y.event_id = CS_ID_NONE;
			y.correlation_id = (uint64_t)++n;
			y.type = CS_SYNC_STREAM_SYNCHRONIZE;
			y.cbid = 131;
			y.api_kind = CS_API_RUNTIME;
			y.stack_id = CS_ID_NONE;
			tu_need(cs_writer_add_sync(w, &y) == 0, test, cs_writer_errmsg(w));

			memset(&x, 0, sizeof(x));
			x.start = s;
			x.end = e;
			x.pid = pid;
			x.tid = pid;
			x.api_kind = CS_API_RUNTIME;
			x.cbid = 131;
			x.correlation_id = (uint64_t)++n;
			x.name_id = api_name;
			x.stack_id = CS_ID_NONE;
			tu_need(cs_writer_add_api(w, &x) == 0, test, cs_writer_errmsg(w));

			memset(&v, 0, sizeof(v));
			v.start = s;
			v.end = e;
			v.pid = pid;
			v.tid = pid;
			v.type = CS_NVTX_PUSHPOP;
			v.depth = j % 3;
			v.domain_id = CS_ID_NONE;
			v.text_id = text;
			v.range_id = CS_ID_NONE;
			tu_need(cs_writer_add_nvtx(w, &v) == 0, test, cs_writer_errmsg(w));
		}
	}
	for (int i = 0; i < TU_NLONG; i++) {
		cs_kernel k;
		cs_sync y;
		cs_api x;
		cs_nvtx v;

		memset(&k, 0, sizeof(k));
		k.start = 0;
		k.end = CS_TS_MAX;
		k.queued = k.submitted = CS_TS_UNKNOWN;
		k.launch_start = -CS_TS_MAX;
		k.launch_end = 0;
		k.pid = pid;
		k.launch_tid = pid;
		k.launch_cbid = 211;
		k.launch_api_kind = CS_API_RUNTIME;
		k.stream_id = 7;
		k.correlation_id = (uint64_t)++n;
		k.grid_x = 65535;
		k.grid_y = k.grid_z = 65535;
		k.block_x = 1024;
		k.block_y = k.block_z = 1;
		k.graph_id = k.graph_node_id = k.stack_id = CS_ID_NONE;
		k.name_id = name;
		tu_need(cs_writer_add_kernel(w, &k) == 0, test, cs_writer_errmsg(w));

		memset(&y, 0, sizeof(y));
		y.start = -CS_TS_MAX;
		y.end = 0;
		y.pid = pid;
		y.tid = pid;
		y.stream_id = 7;
		y.event_id = CS_ID_NONE;
		y.correlation_id = (uint64_t)++n;
		y.type = i % 2 ? CS_SYNC_STREAM_SYNCHRONIZE : CS_SYNC_MEMCPY;
		y.cbid = 131;
		y.api_kind = CS_API_RUNTIME;
		y.stack_id = CS_ID_NONE;
		tu_need(cs_writer_add_sync(w, &y) == 0, test, cs_writer_errmsg(w));

		memset(&x, 0, sizeof(x));
		x.start = -CS_TS_MAX;
		x.end = 0;
		x.pid = pid;
		x.tid = pid;
		x.api_kind = CS_API_RUNTIME;
		x.cbid = 131;
		x.correlation_id = (uint64_t)++n;
		x.name_id = api_name;
		x.stack_id = CS_ID_NONE;
		tu_need(cs_writer_add_api(w, &x) == 0, test, cs_writer_errmsg(w));

		memset(&v, 0, sizeof(v));
		v.start = i % 2 ? 0 : -CS_TS_MAX;
		v.end = i % 2 ? CS_TS_MAX : 0;
		v.pid = pid;
		v.tid = pid;
		v.type = CS_NVTX_PUSHPOP;
		v.domain_id = CS_ID_NONE;
		v.text_id = text;
		v.range_id = CS_ID_NONE;
		tu_need(cs_writer_add_nvtx(w, &v) == 0, test, cs_writer_errmsg(w));
	}
	/* TU_NSTEPS "step" ranges over [-CS_TS_MAX, CS_TS_MAX], each with a kernel, a
	 * device-to-host copy, the wait for it and an allocation and free, as long and as large as
	 * plausible */
	for (int i = 0; i < TU_NSTEPS; i++) {
		int64_t len = 2 * (CS_TS_MAX / TU_NSTEPS), s = -CS_TS_MAX + i * len;
		cs_nvtx v;
		cs_kernel k;
		cs_memcpy c;
		cs_sync y;
		cs_memory a;

		memset(&v, 0, sizeof(v));
		v.start = s;
		v.end = s + len;
		v.pid = pid;
		v.tid = pid;
		v.type = CS_NVTX_PUSHPOP;
		v.domain_id = CS_ID_NONE;
		v.text_id = step;
		v.range_id = v.payload_id = CS_ID_NONE;
		tu_need(cs_writer_add_nvtx(w, &v) == 0, test, cs_writer_errmsg(w));

		memset(&k, 0, sizeof(k));
		k.start = s + 1;
		k.end = s + len / 2;
		k.queued = k.submitted = CS_TS_UNKNOWN;
		k.launch_start = s;
		k.launch_end = s + 1;
		k.pid = pid;
		k.launch_tid = pid;
		k.launch_cbid = 211;
		k.launch_api_kind = CS_API_RUNTIME;
		k.stream_id = 7;
		k.correlation_id = (uint64_t)++n;
		k.grid_x = INT32_MAX;
		k.grid_y = k.grid_z = 65535;
		k.block_x = 1024;
		k.block_y = k.block_z = 1;
		k.graph_id = k.graph_node_id = k.stack_id = CS_ID_NONE;
		k.name_id = name;
		tu_need(cs_writer_add_kernel(w, &k) == 0, test, cs_writer_errmsg(w));

		memset(&c, 0, sizeof(c));
		c.start = s + len / 2;
		c.end = s + len / 2 + 1;
		c.launch_start = s + 2;
		c.launch_end = s + len / 2 + 2;
		c.pid = pid;
		c.launch_tid = pid;
		c.launch_cbid = 41;
		c.stream_id = 7;
		c.correlation_id = (uint64_t)++n;
		c.copy_kind = CS_COPY_DTOH;
		c.src_kind = CS_MEM_DEVICE;
		c.dst_kind = CS_MEM_PAGEABLE;
		c.src_device_id = c.dst_device_id = CS_ID_NONE;
		c.bytes = CS_BYTES_MAX;
		c.graph_id = c.graph_node_id = c.stack_id = CS_ID_NONE;
		tu_need(cs_writer_add_memcpy(w, &c) == 0, test, cs_writer_errmsg(w));

		memset(&y, 0, sizeof(y));
		y.start = s + 2;
		y.end = s + len / 2 + 2;
		y.pid = pid;
		y.tid = pid;
		y.stream_id = 7;
		y.event_id = CS_ID_NONE;
		y.correlation_id = c.correlation_id;
		y.type = CS_SYNC_MEMCPY;
		y.cbid = 41;
		y.api_kind = CS_API_RUNTIME;
		y.stack_id = CS_ID_NONE;
		tu_need(cs_writer_add_sync(w, &y) == 0, test, cs_writer_errmsg(w));

		for (int f = 0; f < 2; f++) {
			memset(&a, 0, sizeof(a));
			a.start = s + len / 2 + 3 + f;
			a.pid = pid;
			a.tid = pid;
			a.device_id = 0;
			a.stream_id = CS_ID_NONE;
			a.correlation_id = (uint64_t)++n;
			a.op = f ? CS_MEMOP_FREE : CS_MEMOP_ALLOC;
			a.mem_kind = CS_MEM_DEVICE;
			a.cbid = CS_ID_NONE;
			a.address = 0x20000000000ull;
			a.bytes = f ? 0 : CS_BYTES_MAX;
			a.stack_id = CS_ID_NONE;
			tu_need(cs_writer_add_memory(w, &a) == 0, test, cs_writer_errmsg(w));
		}
	}
	for (int i = 0; i < TU_NBIG; i++) {
		cs_memcpy c;
		cs_memory a;

		memset(&c, 0, sizeof(c));
		c.start = CS_TS_MAX - TU_NBIG + i;
		c.end = c.start + 1;
		c.launch_start = c.launch_end = CS_TS_UNKNOWN;
		c.pid = pid;
		c.launch_cbid = CS_ID_NONE;
		c.stream_id = 7;
		c.correlation_id = (uint64_t)++n;
		c.copy_kind = i % 2 ? CS_COPY_DTOH : CS_COPY_HTOD;
		c.src_kind = CS_MEM_DEVICE;
		c.dst_kind = CS_MEM_PINNED;
		c.src_device_id = c.dst_device_id = CS_ID_NONE;
		c.bytes = CS_BYTES_MAX;
		c.graph_id = c.graph_node_id = c.stack_id = CS_ID_NONE;
		tu_need(cs_writer_add_memcpy(w, &c) == 0, test, cs_writer_errmsg(w));

		memset(&a, 0, sizeof(a));
		a.start = CS_TS_MAX - TU_NBIG + i;
		a.pid = pid;
		a.tid = pid;
		a.stream_id = CS_ID_NONE;
		a.correlation_id = (uint64_t)++n;
		a.op = CS_MEMOP_ALLOC;
		a.mem_kind = CS_MEM_DEVICE;
		a.cbid = CS_ID_NONE;
		a.address = 0x10000000000ull + (uint64_t)i * 4096;
		a.bytes = CS_BYTES_MAX;
		a.stack_id = CS_ID_NONE;
		tu_need(cs_writer_add_memory(w, &a) == 0, test, cs_writer_errmsg(w));
	}
	tu_need(cs_writer_finish(w, &err) == 0, test, err.msg);
}

int tu_run_suite(Suite *suite)
{
	SRunner *sr = srunner_create(suite);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

double tu_json_num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	ck_assert_msg(cJSON_IsNumber(v), "no number '%s'", key);
	return v->valuedouble;
}

int64_t tu_json_i64(const cJSON *o, const char *key)
{
	return (int64_t)tu_json_num(o, key);
}
