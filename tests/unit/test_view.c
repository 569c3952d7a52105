/*
 * test_view.c - `cuscope view`: runs the real binary (--port 0 --timeout 120), reads the URL it
 * prints and talks plain HTTP to it over a socket: the token and Host checks (no cookie; two
 * viewers, each refusing the other's token), a client stalled in its headers, the summary against
 * the trace, the findings against `cuscope report`, the timeline served while the findings are
 * still pending, the busy time and thinning of window answers, strings escaped in JSON, the
 * loopback-only socket, the answers of the writer's overview before the tracks are read, every
 * command on a trace without the overview, and the answers on a trace with values at the int64
 * limits for windows at the server's limits (|t| = 2^62); on d2h-sync-bad.db the launch tracks,
 * the launch-to-GPU arrows, a finding's costliest occurrence, the details of drawn events, range
 * totals, search and API names, each against the trace's rows.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>
#include <cjson/cJSON.h>

#include "cuscope/analyze.h"
#include "cuscope/demangle.h"
#include "cuscope/trace.h"
#include "api.h"
#include "testutil.h"

#define PID 4242
/* A kernel name that is HTML, with quotes, a control byte and invalid UTF-8. */
#define HTML_KERNEL	     "<img src=x onerror=\"alert('k')\">\x01\xff</script>"
#define HTML_KERNEL_REPAIRED "<img src=x onerror=\"alert('k')\">\x01\xef\xbf\xbd</script>"

struct server {
	pid_t pid;
	int port;
	char token[33];
};

/* The analysis of the held-back server waits this long (CUSCOPE_VIEW_ANALYSIS_DELAY_MS). */
#define HELD_MS "4000"
/* The tracks of the overview server wait this long (CUSCOPE_VIEW_TIMELINE_DELAY_MS): past the
 * tests before its own. */
#define OV_HELD_MS "10000"

static char *tmp_dir, *train_db, *d2h_db, *synth_db;
static struct server train_srv, d2h_srv, synth_srv, held_srv, ov_srv, early_srv;
/* The rules of early_srv wait this long after its steps are found (CUSCOPE_VIEW_RULES_DELAY_MS):
 * longer than the tests before test_steps_before_findings. */
#define RULES_HELD_MS "60000"

/* ---- the server under test ---- */

/*
 * Start `cuscope view --port 0 --timeout 120 trace` and read the URL from its stdout; with
 * delay_ms, its analysis waits that long before it starts.
 */
static int server_start_env(const char *trace, const char *env, const char *delay_ms,
			    struct server *s)
{
	int fds[2];
	char line[256];
	size_t len = 0;
	const char *tok;

	if (pipe(fds))
		return -1;
	s->pid = fork();
	if (s->pid < 0)
		return -1;
	if (s->pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		if (delay_ms)
			setenv(env, delay_ms, 1);
		execl(tu_cuscope_bin(), "cuscope", "view", "--port", "0", "--timeout", "120", trace,
		      (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	while (len + 1 < sizeof(line)) {
		ssize_t n = read(fds[0], line + len, 1);

		if (n <= 0 || line[len] == '\n')
			break;
		len++;
	}
	line[len] = '\0';
	close(fds[0]);
	if (sscanf(line, "http://127.0.0.1:%d/", &s->port) != 1)
		return -1;
	tok = strstr(line, "token=");
	if (!tok || strlen(tok + 6) != 32)
		return -1;
	memcpy(s->token, tok + 6, 33);
	return 0;
}

static int server_start(const char *trace, const char *delay_ms, struct server *s)
{
	return server_start_env(trace, "CUSCOPE_VIEW_ANALYSIS_DELAY_MS", delay_ms, s);
}

static void server_stop(struct server *s)
{
	int status;

	if (s->pid > 0) {
		kill(s->pid, SIGTERM);
		waitpid(s->pid, &status, 0);
		s->pid = 0;
	}
}

/* A socket connected to the server, or -1. */
static int connect_to(const struct server *s)
{
	struct sockaddr_in addr;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)s->port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/*
 * GET path with the Host header host (NULL: 127.0.0.1:PORT) and extra header lines; returns the
 * status code, the body in *body and, when head is not NULL, the status line and headers in *head
 * (malloc'd), or -1.
 */
static int http_get_head(const struct server *s, const char *host, const char *path,
			 const char *extra, char **body, char **head)
{
	char req[2048], hostbuf[64];
	char *buf = NULL, *p;
	size_t len = 0, cap = 0;
	int fd, status = -1;

	*body = NULL;
	if (head)
		*head = NULL;
	snprintf(hostbuf, sizeof(hostbuf), "127.0.0.1:%d", s->port);
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s\r\n%sConnection: close\r\n\r\n",
		 path, host ? host : hostbuf, extra ? extra : "");
	fd = connect_to(s);
	if (fd < 0 || write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	for (;;) {
		ssize_t n;

		if (cap - len < 65536) {
			cap = cap ? cap * 2 : 131072;
			buf = realloc(buf, cap);
			ck_assert_ptr_nonnull(buf);
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (!buf)
		return -1;
	buf[len] = '\0';
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
		status = -1;
	p = strstr(buf, "\r\n\r\n");
	*body = strdup(p ? p + 4 : "");
	if (head) {
		if (p)
			p[2] = '\0';
		*head = strdup(buf);
	}
	free(buf);
	return status;
}

static int http_get(const struct server *s, const char *host, const char *path, const char *extra,
		    char **body)
{
	return http_get_head(s, host, path, extra, body, NULL);
}

/* GET path?token=... and parse the JSON answer (asserting 200). */
static cJSON *api_get(const struct server *s, const char *path)
{
	char url[1024], *body;
	cJSON *j;
	int status;

	snprintf(url, sizeof(url), "%s%stoken=%s", path, strchr(path, '?') ? "&" : "?", s->token);
	status = http_get(s, NULL, url, NULL, &body);
	ck_assert_int_eq(status, 200);
	j = cJSON_Parse(body);
	ck_assert_msg(j != NULL, "not JSON: %.200s", body);
	free(body);
	return j;
}

/* GET path until its "status" is no longer waiting (up to 30 s); the last answer. */
static cJSON *api_wait(const struct server *s, const char *path, const char *waiting)
{
	for (int i = 0; i < 3000; i++) {
		cJSON *j = api_get(s, path);
		const char *st = cJSON_GetStringValue(cJSON_GetObjectItem(j, "status"));

		ck_assert_ptr_nonnull(st);
		if (strcmp(st, waiting))
			return j;
		cJSON_Delete(j);
		usleep(10000);
	}
	ck_abort_msg("%s still %s after 30 s", path, waiting);
	return NULL;
}

/* The summary once the timeline is read (after "loading", or "overview" for a trace with one). */
static cJSON *summary_ready(const struct server *s)
{
	cJSON *j = api_wait(s, "/api/summary", "loading");

	while (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(j, "status")), "overview")) {
		cJSON_Delete(j);
		usleep(10000);
		j = api_wait(s, "/api/summary", "loading");
	}
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "status")), "ready");
	return j;
}

/* The findings once the rules have run. */
static cJSON *findings_ready(const struct server *s)
{
	cJSON *j = api_wait(s, "/api/findings", "pending");

	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "status")), "ready");
	return j;
}

static int64_t jint(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	ck_assert_msg(cJSON_IsNumber(v), "%s is not a number", key);
	return (int64_t)v->valuedouble;
}

/* ---- tests ---- */

START_TEST(test_token_and_host)
{
	const struct server *s = &train_srv;
	char path[128], host[64], hdr[128], *body, *head;

	ck_assert_int_eq(http_get(s, NULL, "/api/summary", NULL, &body), 403);
	free(body);
	ck_assert_int_eq(http_get(s, NULL, "/api/findings", NULL, &body), 403);
	free(body);
	ck_assert_int_eq(http_get(s, NULL, "/nothing", NULL, &body), 403);
	free(body);
	/* the page's own files need no token (nothing of the trace in them) and set no cookie */
	ck_assert_int_eq(http_get_head(s, NULL, "/", NULL, &body, &head), 200);
	ck_assert_ptr_nonnull(strstr(body, "<canvas"));
	ck_assert_msg(!strcasestr(head, "Set-Cookie"), "headers: %s", head);
	free(body);
	free(head);
	ck_assert_int_eq(http_get(s, NULL, "/viewer.css", NULL, &body), 200);
	free(body);
	/* ... but still the right Host */
	ck_assert_int_eq(http_get(s, "evil.example:80", "/", NULL, &body), 403);
	free(body);
	ck_assert_int_eq(http_get(s, NULL, "/api/summary?token=00000000000000000000000000000000",
				  NULL, &body),
			 403);
	free(body);
	snprintf(path, sizeof(path), "/api/summary?token=%s", s->token);
	/* DNS rebinding: the right token, another site's Host */
	ck_assert_int_eq(http_get(s, "evil.example:80", path, NULL, &body), 403);
	free(body);
	snprintf(host, sizeof(host), "evil.example:%d", s->port);
	ck_assert_int_eq(http_get(s, host, path, NULL, &body), 403);
	free(body);
	snprintf(host, sizeof(host), "127.0.0.1:%d", s->port + 1);
	ck_assert_int_eq(http_get(s, host, path, NULL, &body), 403);
	free(body);
	snprintf(host, sizeof(host), "localhost:%d", s->port);
	ck_assert_int_eq(http_get(s, host, path, NULL, &body), 200);
	free(body);
	/* the header the page's requests carry */
	snprintf(hdr, sizeof(hdr), "X-Cuscope-Token: %s\r\n", s->token);
	ck_assert_int_eq(http_get(s, NULL, "/api/summary", hdr, &body), 200);
	free(body);
	ck_assert_int_eq(http_get(s, "evil.example:80", "/api/summary", hdr, &body), 403);
	free(body);
	/* a cookie is no way in (the server never sets one) */
	snprintf(hdr, sizeof(hdr), "Cookie: cuscope_token=%s\r\n", s->token);
	ck_assert_int_eq(http_get(s, NULL, "/api/summary", hdr, &body), 403);
	free(body);
	ck_assert_int_eq(http_get(s, NULL, "/viewer.js", NULL, &body), 200);
	ck_assert_ptr_nonnull(strstr(body, "__viewer"));
	ck_assert_ptr_nonnull(strstr(body, "X-Cuscope-Token"));
	free(body);
	snprintf(path, sizeof(path), "/?token=%s", s->token);
	ck_assert_int_eq(http_get_head(s, NULL, path, NULL, &body, &head), 200);
	ck_assert_ptr_nonnull(strstr(body, "<canvas"));
	ck_assert_msg(!strcasestr(head, "Set-Cookie"), "headers: %s", head);
	free(body);
	free(head);
	/* bad queries */
	snprintf(path, sizeof(path), "/api/window?token=%s&t0=5&t1=1&px=10", s->token);
	ck_assert_int_eq(http_get(s, NULL, path, NULL, &body), 400);
	free(body);
	snprintf(path, sizeof(path), "/api/window?token=%s&t0=-9000000000000000000&t1=1&px=10",
		 s->token);
	ck_assert_int_eq(http_get(s, NULL, path, NULL, &body), 400);
	free(body);
	snprintf(path, sizeof(path), "/api/memory?token=%s&t0=0&t1=10&px=0", s->token);
	ck_assert_int_eq(http_get(s, NULL, path, NULL, &body), 400);
	free(body);
	snprintf(path, sizeof(path), "/nothing?token=%s", s->token);
	ck_assert_int_eq(http_get(s, NULL, path, NULL, &body), 404);
	free(body);
}
END_TEST

/*
 * Number of tracks the trace must give: streams, wait threads, API threads, launch threads (GPU
 * work with a launch time), NVTX depths, GPUs.
 */
static int expected_tracks(const cs_analysis *a)
{
	static int64_t keys[65536];
	int n = 0;

#define ADD_KEY(k)                                             \
	do {                                                   \
		int64_t key_ = (k), i_;                        \
		for (i_ = 0; i_ < n && keys[i_] != key_; i_++) \
			;                                      \
		if (i_ == n && n < 65536)                      \
			keys[n++] = key_;                      \
	} while (0)
	for (int64_t i = 0; i < a->nkernels; i++) {
		ADD_KEY(((int64_t)1 << 60) | ((int64_t)a->kernels[i].pid << 28) |
			((int64_t)a->kernels[i].device_id << 20) | a->kernels[i].stream_id);
		if (a->kernels[i].launch_start != CS_TS_UNKNOWN)
			ADD_KEY(((int64_t)6 << 60) |
				(((int64_t)a->kernels[i].pid << 24) ^ a->kernels[i].launch_tid));
	}
	for (int64_t i = 0; i < a->ncopies; i++) {
		ADD_KEY(((int64_t)1 << 60) | ((int64_t)a->copies[i].pid << 28) |
			((int64_t)a->copies[i].device_id << 20) | a->copies[i].stream_id);
		if (a->copies[i].launch_start != CS_TS_UNKNOWN)
			ADD_KEY(((int64_t)6 << 60) |
				(((int64_t)a->copies[i].pid << 24) ^ a->copies[i].launch_tid));
	}
	for (int64_t i = 0; i < a->nsyncs; i++)
		if (a->syncs[i].host_wait && a->syncs[i].start != CS_TS_UNKNOWN)
			ADD_KEY(((int64_t)2 << 60) |
				(((int64_t)a->syncs[i].pid << 24) ^ a->syncs[i].tid));
	for (int64_t i = 0; i < a->napis; i++)
		ADD_KEY(((int64_t)3 << 60) | (((int64_t)a->apis[i].pid << 24) ^ a->apis[i].tid));
	for (int64_t i = 0; i < a->nnvtx; i++)
		ADD_KEY(((int64_t)4 << 60) | ((int64_t)a->nvtx[i].depth << 52) |
			(((int64_t)a->nvtx[i].pid << 24) ^ a->nvtx[i].tid));
	for (int64_t i = 0; i < a->nmemory; i++) {
		const cs_a_memory *m = &a->memory[i];

		if ((m->op == CS_MEMOP_ALLOC &&
		     (m->mem_kind == CS_MEM_DEVICE || m->mem_kind == CS_MEM_MANAGED)) ||
		    m->op == CS_MEMOP_VMM_CREATE)
			if (m->result == 0 && m->bytes > 0 && m->device_id >= 0 &&
			    m->start != CS_TS_UNKNOWN)
				ADD_KEY(((int64_t)5 << 60) | ((int64_t)m->pid << 20) |
					m->device_id);
	}
#undef ADD_KEY
	return n;
}

START_TEST(test_summary_matches_trace)
{
	cs_trace *t;
	cs_trace_summary sum;
	cs_analysis a;
	cs_error err = {0};
	cJSON *j = summary_ready(&train_srv), *f = findings_ready(&train_srv), *tracks, *tr;
	int streams = 0;

	ck_assert_int_eq(cs_trace_open(train_db, &t, &err), 0);
	ck_assert_int_eq(cs_trace_get_summary(t, &sum, &err), 0);
	ck_assert_int_eq(cs_analysis_load(t, &a, &err), 0);
	ck_assert_int_eq(jint(j, "start"), sum.start);
	ck_assert_int_eq(jint(j, "end"), sum.end);
	tracks = cJSON_GetObjectItem(j, "tracks");
	ck_assert_int_eq(cJSON_GetArraySize(tracks), expected_tracks(&a));
	cJSON_ArrayForEach(tr, tracks)
	{
		const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(tr, "kind"));

		ck_assert_ptr_nonnull(kind);
		ck_assert_ptr_nonnull(cJSON_GetStringValue(cJSON_GetObjectItem(tr, "name")));
		if (!strcmp(kind, "stream"))
			streams++;
	}
	ck_assert_int_gt(streams, 0);
	/* the steps and findings come from the findings answer */
	ck_assert_ptr_null(cJSON_GetObjectItem(j, "findings"));
	ck_assert_int_gt(cJSON_GetArraySize(cJSON_GetObjectItem(f, "steps")), 0);
	ck_assert_ptr_nonnull(cJSON_GetObjectItem(f, "findings"));
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(f, "step_method")), "period");
	cs_analysis_free(&a);
	cs_trace_close(t);
	cJSON_Delete(f);
	cJSON_Delete(j);
}
END_TEST

/* The findings answer j against `cuscope report --format json` on d2h-sync-bad.db. */
static void check_d2h_findings(const cJSON *j)
{
	const char *argv[] = {tu_cuscope_bin(), "report", "--format", "json", d2h_db, NULL};
	char *out = NULL;
	cJSON *rep, *f;
	int found = 0;

	ck_assert_int_eq(tu_run(argv, NULL, &out, NULL), 0);
	rep = cJSON_Parse(out);
	ck_assert_ptr_nonnull(rep);
	ck_assert_int_gt(cJSON_GetArraySize(cJSON_GetObjectItem(j, "findings")), 0);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "findings")),
			 cJSON_GetArraySize(cJSON_GetObjectItem(rep, "findings")));
	cJSON_ArrayForEach(f, cJSON_GetObjectItem(j, "findings"))
	{
		const char *rule = cJSON_GetStringValue(cJSON_GetObjectItem(f, "rule"));

		ck_assert_ptr_nonnull(cJSON_GetStringValue(cJSON_GetObjectItem(f, "title")));
		ck_assert_ptr_nonnull(cJSON_GetStringValue(cJSON_GetObjectItem(f, "severity")));
		ck_assert_int_le(jint(f, "first_ns"), jint(f, "last_ns"));
		if (rule && !strcmp(rule, "d2h-sync"))
			found = 1;
	}
	/* each finding is the report's, key for key (report_json_finding), with its id and focus */
	for (int i = 0; i < cJSON_GetArraySize(cJSON_GetObjectItem(j, "findings")); i++) {
		cJSON *vf =
			cJSON_Duplicate(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "findings"), i), 1);
		const cJSON *rf = cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "findings"), i);

		ck_assert_int_eq(jint(vf, "id"), i);
		ck_assert_ptr_nonnull(cJSON_GetObjectItem(vf, "focus"));
		cJSON_DeleteItemFromObject(vf, "id");
		cJSON_DeleteItemFromObject(vf, "focus");
		ck_assert_msg(cJSON_Compare(vf, rf, 1), "finding %d differs from the report's", i);
		cJSON_Delete(vf);
	}
	ck_assert_msg(found, "no d2h-sync finding");
	cJSON_Delete(rep);
	free(out);
}

/*
 * A trace over the analysis's memory limit: the steps and findings are a window's, and the findings
 * answer says which (view_data_load_limited(), in this process: the server takes report's
 * default).
 */
START_TEST(test_findings_window)
{
	struct view_data *v = NULL;
	cs_error err = {0, ""};
	cJSON *j = NULL;
	const cJSON *w, *st;

	ck_assert_msg(view_data_load_limited(d2h_db, 1 << 20, &v, &err) == 0, "%s", err.msg);
	for (int i = 0; i < 600; i++) {
		char *body = view_api_findings(v);

		ck_assert_ptr_nonnull(body);
		j = cJSON_Parse(body);
		free(body);
		ck_assert_ptr_nonnull(j);
		st = cJSON_GetObjectItem(j, "status");
		if (cJSON_IsString(st) && strcmp(st->valuestring, "pending"))
			break;
		cJSON_Delete(j);
		j = NULL;
		usleep(100 * 1000);
	}
	ck_assert_msg(j != NULL, "no findings answer");
	ck_assert_str_eq(cJSON_GetObjectItem(j, "status")->valuestring, "ready");
	w = cJSON_GetObjectItem(j, "window");
	ck_assert_msg(cJSON_IsObject(w), "no window");
	ck_assert_int_lt(jint(w, "start"), jint(w, "end"));
	ck_assert_msg(strstr(cJSON_GetObjectItem(w, "text")->valuestring, "the middle ") != NULL,
		      "%s", cJSON_GetObjectItem(w, "text")->valuestring);
	cJSON_Delete(j);
	view_data_free(v);
}
END_TEST

START_TEST(test_findings_match_report)
{
	cJSON *j = findings_ready(&d2h_srv);

	check_d2h_findings(j);
	cJSON_Delete(j);
}
END_TEST

/*
 * The timeline is served before the rules have run: with the analysis held back, the summary and
 * window answers come while the findings answer says "pending", and the findings come after.
 */
START_TEST(test_timeline_before_findings)
{
	const struct server *s = &held_srv;
	cJSON *sum, *w, *f, *tr;
	char path[256], *body;
	int64_t events = 0;
	const char *st;

	sum = summary_ready(s);
	ck_assert_int_gt(cJSON_GetArraySize(cJSON_GetObjectItem(sum, "tracks")), 0);
	snprintf(path, sizeof(path), "/api/window?t0=%lld&t1=%lld&px=1000",
		 (long long)jint(sum, "start"), (long long)jint(sum, "end") + 1);
	w = api_get(s, path);
	cJSON_ArrayForEach(tr, cJSON_GetObjectItem(w, "tracks")) events += jint(tr, "events");
	ck_assert_int_gt(events, 1000);
	f = api_get(s, "/api/findings");
	st = cJSON_GetStringValue(cJSON_GetObjectItem(f, "status"));
	ck_assert_msg(st && !strcmp(st, "pending"), "findings not pending while held: %s",
		      st ? st : "(none)");
	ck_assert_ptr_null(cJSON_GetObjectItem(f, "findings"));
	cJSON_Delete(f);
	/* the memory answer too; the findings still need the token */
	ck_assert_int_eq(http_get(s, NULL, "/api/findings", NULL, &body), 403);
	free(body);
	cJSON_Delete(api_get(s, "/api/memory?t0=0&t1=100000000000000&px=100"));
	/* then the findings of `cuscope report` */
	f = findings_ready(s);
	check_d2h_findings(f);
	cJSON_Delete(f);
	cJSON_Delete(w);
	cJSON_Delete(sum);
}
END_TEST

struct ival {
	int64_t s, e;
};

static int ival_cmp(const void *pa, const void *pb)
{
	const struct ival *x = pa, *y = pb;

	return (x->s > y->s) - (x->s < y->s);
}

/* Union of the GPU work of (pid, device, stream) clipped to [t0, t1). */
static int64_t stream_union(const cs_analysis *a, int64_t pid, int64_t dev, int64_t stream,
			    int64_t t0, int64_t t1)
{
	struct ival *v = malloc((size_t)(a->nkernels + a->ncopies + 1) * sizeof(*v));
	int64_t n = 0, total = 0, cov = t0;

	ck_assert_ptr_nonnull(v);
	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];

		if (k->pid == pid && k->device_id == dev && k->stream_id == stream &&
		    k->start != CS_TS_UNKNOWN && k->end != CS_TS_UNKNOWN)
			v[n++] = (struct ival){k->start, k->end};
	}
	for (int64_t i = 0; i < a->ncopies; i++) {
		const cs_a_copy *c = &a->copies[i];

		if (c->pid == pid && c->device_id == dev && c->stream_id == stream &&
		    c->start != CS_TS_UNKNOWN && c->end != CS_TS_UNKNOWN)
			v[n++] = (struct ival){c->start, c->end};
	}
	qsort(v, (size_t)n, sizeof(*v), ival_cmp);
	for (int64_t i = 0; i < n; i++) {
		int64_t s = v[i].s > t0 ? v[i].s : t0, e = v[i].e < t1 ? v[i].e : t1;

		if (v[i].s >= t1 || e <= cov)
			continue;
		total += e - (s > cov ? s : cov);
		cov = e;
	}
	free(v);
	return total;
}

/* A window of train_small.db at several zooms: busy time exact, items bounded by px. */
static void check_window(const cs_analysis *a, const cJSON *summary, int64_t t0, int64_t t1, int px)
{
	char path[256];
	cJSON *w, *tr, *tracks = cJSON_GetObjectItem(summary, "tracks");
	int gpu_tracks = 0;

	snprintf(path, sizeof(path), "/api/window?t0=%lld&t1=%lld&px=%d", (long long)t0,
		 (long long)t1, px);
	w = api_get(&train_srv, path);
	cJSON_ArrayForEach(tr, cJSON_GetObjectItem(w, "tracks"))
	{
		const cJSON *meta = cJSON_GetArrayItem(tracks, (int)jint(tr, "id")), *it;
		const cJSON *items = cJSON_GetObjectItem(tr, "items");
		const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(meta, "kind"));
		int64_t busy = 0, expect;

		ck_assert_ptr_nonnull(kind);
		/* thinning: merged blocks are a column apart; wide events are at least a column */
		ck_assert_int_le(cJSON_GetArraySize(items), 2 * px + 2);
		cJSON_ArrayForEach(it, items)
		{
			ck_assert_int_eq(cJSON_GetArraySize(it), 6);
			busy += (int64_t)cJSON_GetArrayItem(it, 4)->valuedouble;
		}
		ck_assert_int_eq(busy, jint(tr, "busy"));
		if (strcmp(kind, "stream"))
			continue;
		gpu_tracks++;
		expect = stream_union(a, jint(meta, "pid"), jint(meta, "device"),
				      jint(meta, "stream"), t0, t1);
		ck_assert_msg(busy == expect, "track %lld px %d: busy %lld, union %lld",
			      (long long)jint(tr, "id"), px, (long long)busy, (long long)expect);
	}
	ck_assert_int_gt(gpu_tracks, 0);
	cJSON_Delete(w);
}

START_TEST(test_window_busy_and_thinning)
{
	cs_trace *t;
	cs_analysis a;
	cs_error err = {0};
	cJSON *s = summary_ready(&train_srv), *w, *tr;
	int64_t start = jint(s, "start"), end = jint(s, "end"), span = end - start;
	int64_t total_items = 0, total_events = 0;

	ck_assert_int_eq(cs_trace_open(train_db, &t, &err), 0);
	ck_assert_int_eq(cs_analysis_load(t, &a, &err), 0);
	check_window(&a, s, start, end + 1, 100);
	check_window(&a, s, start, end + 1, 3000);
	check_window(&a, s, start + span / 3, start + span / 3 + span / 50, 800);
	check_window(&a, s, start + span / 2, start + span / 2 + 100000, 1000);
	check_window(&a, s, start + span / 2, start + span / 2 + 100000, 1);

	/* the whole trace at 50 columns: far fewer items than events */
	w = api_get(&train_srv, "/api/window?t0=0&t1=100000000000000&px=50");
	cJSON_ArrayForEach(tr, cJSON_GetObjectItem(w, "tracks"))
	{
		total_items += cJSON_GetArraySize(cJSON_GetObjectItem(tr, "items"));
		total_events += jint(tr, "events");
	}
	ck_assert_int_gt(total_events, 1000);
	ck_assert_int_lt(total_items * 10, total_events);
	cJSON_Delete(w);
	{
		/* names as recorded, and beside them the kernels demangled: short and whole (a
		 * window narrow enough for events shown one by one) */
		char path[160];
		const cJSON *raw, *shrt, *full;
		int n, mangled = 0;

		snprintf(path, sizeof(path), "/api/window?t0=%lld&t1=%lld&px=20000",
			 (long long)(start + span / 2), (long long)(start + span / 2 + span / 100));
		w = api_get(&train_srv, path);
		raw = cJSON_GetObjectItem(w, "names");
		shrt = cJSON_GetObjectItem(w, "names_short");
		full = cJSON_GetObjectItem(w, "names_demangled");
		n = cJSON_GetArraySize(raw);

		ck_assert_int_gt(n, 0);
		ck_assert_int_eq(cJSON_GetArraySize(shrt), n);
		ck_assert_int_eq(cJSON_GetArraySize(full), n);
		for (int i = 0; i < n; i++) {
			const char *r = cJSON_GetStringValue(cJSON_GetArrayItem(raw, i));
			const char *sh = cJSON_GetStringValue(cJSON_GetArrayItem(shrt, i));
			const char *f = cJSON_GetStringValue(cJSON_GetArrayItem(full, i));

			ck_assert(r && sh && f);
			if (strncmp(r, "_Z", 2))
				continue;
			mangled++;
			ck_assert_msg(strncmp(f, "_Z", 2) && strncmp(sh, "_Z", 2), "%s", r);
			ck_assert_msg(strlen(sh) <= strlen(f), "%s: %s", r, sh);
		}
		ck_assert_int_gt(mangled, 0);
	}
	cJSON_Delete(w);

	/* the device memory counter */
	w = api_get(&train_srv, "/api/memory?t0=0&t1=100000000000000&px=200");
	ck_assert_int_gt(cJSON_GetArraySize(cJSON_GetObjectItem(w, "tracks")), 0);
	cJSON_ArrayForEach(tr, cJSON_GetObjectItem(w, "tracks"))
	{
		ck_assert_int_gt(jint(tr, "peak"), 0);
		ck_assert_int_le(cJSON_GetArraySize(cJSON_GetObjectItem(tr, "samples")), 200 + 3);
	}
	cJSON_Delete(w);
	cs_analysis_free(&a);
	cs_trace_close(t);
	cJSON_Delete(s);
}
END_TEST

START_TEST(test_names_escaped)
{
	char path[256], *body;
	cJSON *w, *names, *n;
	int found = 0;

	cJSON_Delete(summary_ready(&synth_srv));
	snprintf(path, sizeof(path), "/api/window?t0=0&t1=1000000&px=1000&token=%s",
		 synth_srv.token);
	ck_assert_int_eq(http_get(&synth_srv, NULL, path, NULL, &body), 200);
	/* raw HTML or quotes never appear unescaped: the quote is \" and the control byte \u0001 */
	ck_assert_ptr_nonnull(strstr(body, "onerror=\\\"alert"));
	ck_assert_ptr_nonnull(strstr(body, "\\u0001"));
	w = cJSON_Parse(body);
	ck_assert_ptr_nonnull(w);
	names = cJSON_GetObjectItem(w, "names");
	cJSON_ArrayForEach(n, names) if (!strcmp(cJSON_GetStringValue(n), HTML_KERNEL_REPAIRED))
		found = 1;
	ck_assert_msg(found, "kernel name not returned repaired: %.300s", body);
	cJSON_Delete(w);
	free(body);
	/* the same name in an event's details and in a search's match */
	snprintf(path, sizeof(path), "/api/event?track=0&start=1000&end=51000&token=%s",
		 synth_srv.token);
	ck_assert_int_eq(http_get(&synth_srv, NULL, path, NULL, &body), 200);
	ck_assert_ptr_nonnull(strstr(body, "onerror=\\\"alert"));
	w = cJSON_Parse(body);
	ck_assert_str_eq(
		cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(w, "fields"), "name")),
		HTML_KERNEL_REPAIRED);
	cJSON_Delete(w);
	free(body);
	snprintf(path, sizeof(path), "/api/search?q=ONERROR&t=0&token=%s", synth_srv.token);
	ck_assert_int_eq(http_get(&synth_srv, NULL, path, NULL, &body), 200);
	w = cJSON_Parse(body);
	/* the short kernel name, as the window's names_short has it */
	ck_assert_ptr_nonnull(strstr(
		cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(w, "match"), "name")),
		"<img src=x onerror=\"alert('k')\">"));
	ck_assert_int_eq(jint(w, "total"), 4); /* the 4 kernels of write_synthetic() */
	cJSON_Delete(w);
	free(body);
	w = summary_ready(&synth_srv);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(w, "tracks")), 2);
	cJSON_Delete(w);
}
END_TEST

START_TEST(test_loopback_only)
{
	struct ifaddrs *ifs, *i;
	struct sockaddr_in addr;
	socklen_t len = sizeof(addr);
	int fd, tried = 0;

	/* every non-loopback IPv4 address of the machine refuses the port */
	ck_assert_int_eq(getifaddrs(&ifs), 0);
	for (i = ifs; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		memcpy(&addr, i->ifa_addr, sizeof(addr));
		if ((ntohl(addr.sin_addr.s_addr) >> 24) == 127)
			continue;
		addr.sin_port = htons((uint16_t)train_srv.port);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		ck_assert_int_ge(fd, 0);
		ck_assert_msg(connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0,
			      "the server answers on a non-loopback address");
		close(fd);
		tried++;
	}
	freeifaddrs(ifs);
	/* and the server's end of a connection is 127.0.0.1 */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)train_srv.port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	len = sizeof(addr);
	ck_assert_int_eq(getpeername(fd, (struct sockaddr *)&addr, &len), 0);
	ck_assert_int_eq(ntohl(addr.sin_addr.s_addr), INADDR_LOOPBACK);
	close(fd);
	fprintf(stderr, "test_view: %d non-loopback addresses refused\n", tried);
}
END_TEST

START_TEST(test_usage)
{
	const char *help[] = {tu_cuscope_bin(), "view", "--help", NULL};
	const char *missing[] = {tu_cuscope_bin(), "view", "/nonexistent/x.db", NULL};
	const char *badport[] = {tu_cuscope_bin(), "view", "--port", "70000", train_db, NULL};
	const char *none[] = {tu_cuscope_bin(), "view", NULL};
	char *out = NULL, *err = NULL;

	ck_assert_int_eq(tu_run(help, NULL, &out, NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "--timeout"));
	free(out);
	ck_assert_int_eq(tu_run(missing, NULL, NULL, &err), 2);
	/* one line that names the file once */
	ck_assert_str_eq(err, "cuscope: cannot open '/nonexistent/x.db': no such file\n");
	free(err);
	ck_assert_int_eq(tu_run(badport, NULL, NULL, NULL), 2);
	ck_assert_int_eq(tu_run(none, NULL, NULL, NULL), 2);
}
END_TEST

/*
 * The synthetic trace has the writer's overview; its server holds the tracks back: the summary
 * and a whole-trace window come from the overview at once (busy time exact), a narrow window
 * says "loading", and once the tracks are read the answers are those of the tracks.
 */
START_TEST(test_overview_before_tracks)
{
	const struct server *s = &ov_srv;
	cJSON *sum, *w, *tr, *items;
	char path[256], url[512], *body;
	int64_t start, end;

	sum = api_get(s, "/api/summary");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(sum, "status")), "overview");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(sum, "tracks")), 1);
	tr = cJSON_GetArrayItem(cJSON_GetObjectItem(sum, "tracks"), 0);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(tr, "name")), "GPU 0 stream 7");
	ck_assert_int_eq(jint(tr, "events"), 4);
	start = jint(sum, "start");
	end = jint(sum, "end");
	ck_assert_int_eq(start, 1000);
	cJSON_Delete(sum);

	snprintf(path, sizeof(path), "/api/window?t0=%lld&t1=%lld&px=1000", (long long)start,
		 (long long)end + 1);
	w = api_get(s, path);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(w, "overview")));
	tr = cJSON_GetArrayItem(cJSON_GetObjectItem(w, "tracks"), 0);
	ck_assert_int_eq(jint(tr, "busy"), 4 * 50000);
	ck_assert_int_eq(jint(tr, "events"), 4);
	items = cJSON_GetObjectItem(tr, "items");
	ck_assert_int_eq(cJSON_GetArraySize(items), 4); /* the kernels are columns apart */
	cJSON_Delete(w);
	/* a window narrower than a bin per column: not yet */
	snprintf(url, sizeof(url), "/api/window?t0=%lld&t1=%lld&px=1000&token=%s", (long long)start,
		 (long long)start + 1000, s->token);
	ck_assert_int_eq(http_get(s, NULL, url, NULL, &body), 503);
	ck_assert_ptr_nonnull(strstr(body, "loading"));
	free(body);
	w = api_get(s, "/api/memory?t0=0&t1=100000000000000&px=100");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(w, "tracks")), 0);
	cJSON_Delete(w);

	/* then the tracks: every window, exactly */
	sum = summary_ready(s);
	cJSON_Delete(sum);
	w = api_get(s, path);
	ck_assert_ptr_null(cJSON_GetObjectItem(w, "overview"));
	tr = cJSON_GetArrayItem(cJSON_GetObjectItem(w, "tracks"), 0);
	ck_assert_int_eq(jint(tr, "busy"), 4 * 50000);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(w, "names")), 1);
	cJSON_Delete(w);
	ck_assert_int_eq(http_get(s, NULL, url, NULL, &body), 200);
	free(body);
}
END_TEST

/* Every command reads a trace without the overview (all committed traces). */
START_TEST(test_commands_without_overview)
{
	const char *export_out = tu_path(tmp_dir, "train.json");
	const char *info[] = {tu_cuscope_bin(), "info", train_db, NULL};
	const char *stats[] = {tu_cuscope_bin(), "stats", train_db, NULL};
	const char *report[] = {tu_cuscope_bin(), "report", train_db, NULL};
	const char *exp[] = {tu_cuscope_bin(), "export", "-o", export_out, train_db, NULL};
	const char *diff[] = {tu_cuscope_bin(), "diff", train_db, train_db, NULL};
	const char *gate[] = {tu_cuscope_bin(), "gate", "--baseline", train_db, train_db, NULL};
	const char *const *cmds[] = {info, stats, report, exp, diff, gate};

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		ck_assert_msg(tu_run(cmds[i], NULL, NULL, NULL) == 0, "cuscope %s failed",
			      cmds[i][1]);
	/* and view: the summary of the tracks, without an overview step */
	cJSON_Delete(summary_ready(&train_srv));
	free((char *)export_out);
}
END_TEST

/* ---- the synthetic trace ---- */

static void write_synthetic(const char *path)
{
	cs_trace_writer *w = NULL;
	cs_error err = {0};
	cs_process p;
	cs_kernel k;

	if (cs_writer_open(path, 1, &w, &err)) {
		fprintf(stderr, "test_view: %s\n", err.msg);
		exit(1);
	}
	cs_writer_set_overview_min_events(w, 0); /* small, but with the overview */
	memset(&p, 0, sizeof(p));
	p.pid = PID;
	p.start = p.end = CS_TS_UNKNOWN;
	p.command_line = "synthetic";
	p.rank = p.local_rank = p.world_size = CS_ID_NONE;
	p.exit_code = 0;
	p.used_cuda = 1;
	cs_writer_add_process(w, &p);
	memset(&k, 0, sizeof(k));
	k.pid = PID;
	k.device_id = 0;
	k.stream_id = 7;
	k.queued = k.submitted = CS_TS_UNKNOWN;
	k.launch_start = k.launch_end = CS_TS_UNKNOWN;
	k.launch_cbid = CS_ID_NONE;
	k.graph_id = k.graph_node_id = CS_ID_NONE;
	k.stack_id = CS_ID_NONE;
	k.grid_x = k.grid_y = k.grid_z = k.block_x = k.block_y = k.block_z = 1;
	k.name_id = cs_writer_intern(w, HTML_KERNEL);
	for (int i = 0; i < 4; i++) {
		k.start = 1000 + i * 100000;
		k.end = k.start + 50000;
		k.correlation_id = (uint64_t)i + 1;
		cs_writer_add_kernel(w, &k);
	}
	/* device memory: 500, then the same address allocated again (its free not seen), freed */
	for (int i = 0; i < 3; i++) {
		cs_memory m;

		memset(&m, 0, sizeof(m));
		m.start = 2000 + i * 1000;
		m.pid = PID;
		m.device_id = 0;
		m.stream_id = CS_ID_NONE;
		m.op = i < 2 ? CS_MEMOP_ALLOC : CS_MEMOP_FREE;
		m.mem_kind = CS_MEM_DEVICE;
		m.cbid = CS_ID_NONE;
		m.address = 0x2000;
		m.bytes = i == 0 ? 500 : i == 1 ? 700 : 0;
		m.stack_id = CS_ID_NONE;
		cs_writer_add_memory(w, &m);
	}
	if (cs_writer_finish(w, &err)) {
		fprintf(stderr, "test_view: %s\n", err.msg);
		exit(1);
	}
}

/*
 * The memory counter: an address allocated again with no free seen replaces the allocation (700,
 * not 500 + 700), and its free brings the counter back to 0, as in the Chrome export.
 */
START_TEST(test_memory_realloc)
{
	cJSON *w, *tr, *samples, *s;

	cJSON_Delete(summary_ready(&synth_srv));
	w = api_get(&synth_srv, "/api/memory?t0=0&t1=1000000&px=1000");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(w, "tracks")), 1);
	tr = cJSON_GetArrayItem(cJSON_GetObjectItem(w, "tracks"), 0);
	ck_assert_int_eq(jint(tr, "peak"), 700);
	samples = cJSON_GetObjectItem(tr, "samples");
	/* [t, level]: the level at t0, one per column (1 us here), the level at t1 */
	ck_assert_int_eq(cJSON_GetArraySize(samples), 5);
	for (int i = 0; i < 5; i++) {
		static const int64_t want[5][2] = {
			{0, 0}, {2000, 500}, {3000, 700}, {4000, 0}, {1000000, 0}};

		s = cJSON_GetArrayItem(samples, i);
		ck_assert_int_eq((int64_t)cJSON_GetNumberValue(cJSON_GetArrayItem(s, 0)),
				 want[i][0]);
		ck_assert_int_eq((int64_t)cJSON_GetNumberValue(cJSON_GetArrayItem(s, 1)),
				 want[i][1]);
	}
	cJSON_Delete(w);
}
END_TEST

/*
 * Two viewers at once (on two ports): each answers its own token, in the header or the query, and
 * refuses the other's; nothing is shared through a cookie.
 */
START_TEST(test_two_viewers_own_tokens)
{
	const struct server *a = &train_srv, *b = &d2h_srv;
	char hdr[128], path[128], *body;

	for (int i = 0; i < 2; i++) {
		const struct server *self = i ? b : a, *other = i ? a : b;

		snprintf(hdr, sizeof(hdr), "X-Cuscope-Token: %s\r\n", self->token);
		ck_assert_int_eq(http_get(self, NULL, "/api/summary", hdr, &body), 200);
		free(body);
		snprintf(hdr, sizeof(hdr), "X-Cuscope-Token: %s\r\n", other->token);
		ck_assert_int_eq(http_get(self, NULL, "/api/summary", hdr, &body), 403);
		free(body);
		snprintf(path, sizeof(path), "/api/findings?token=%s", other->token);
		ck_assert_int_eq(http_get(self, NULL, path, NULL, &body), 403);
		free(body);
	}
}
END_TEST

/*
 * A connection from another user's socket is closed unanswered, even with the right token; this
 * user's connections are served. Needs root, to connect as another user (uid 65534).
 */
START_TEST(test_other_user_refused)
{
	const struct server *s = &d2h_srv;
	char hdr[128], *body;
	int fds[2], status;
	pid_t pid;
	char got[64] = "";

	if (geteuid() != 0) {
		fprintf(stderr,
			"test_other_user_refused: not root, cannot connect as another user\n");
		return;
	}
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int code;

		close(fds[0]);
		if (setgid(65534) || setuid(65534))
			_exit(3);
		snprintf(hdr, sizeof(hdr), "X-Cuscope-Token: %s\r\n", s->token);
		code = http_get(s, NULL, "/api/summary", hdr, &body);
		dprintf(fds[1], "%d", code);
		_exit(0);
	}
	close(fds[1]);
	ck_assert_int_ge(read(fds[0], got, sizeof(got) - 1), 1);
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* no HTTP answer at all: the connection was closed at once */
	ck_assert_msg(atoi(got) < 0, "another user got HTTP %s", got);
	snprintf(hdr, sizeof(hdr), "X-Cuscope-Token: %s\r\n", s->token);
	ck_assert_int_eq(http_get(s, NULL, "/api/summary", hdr, &body), 200);
	free(body);
}
END_TEST

/*
 * The same through IPv6: a client of another user that connects to ::ffff:127.0.0.1 (its socket
 * listed in /proc/net/tcp6 only) is closed unanswered too; it was served before. Needs root, and
 * IPv6 on the loopback.
 */
START_TEST(test_other_user_mapped_refused)
{
	const struct server *s = &d2h_srv;
	int fds[2], status;
	pid_t pid;
	char got[64] = "";

	if (geteuid() != 0) {
		fprintf(stderr, "test_other_user_mapped_refused: not root\n");
		return;
	}
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct sockaddr_in6 a;
		char req[256], buf[64];
		ssize_t n;
		int fd;

		close(fds[0]);
		if (setgid(65534) || setuid(65534))
			_exit(3);
		fd = socket(AF_INET6, SOCK_STREAM, 0);
		memset(&a, 0, sizeof(a));
		a.sin6_family = AF_INET6;
		a.sin6_port = htons((uint16_t)s->port);
		inet_pton(AF_INET6, "::ffff:127.0.0.1", &a.sin6_addr);
		if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
			dprintf(fds[1], "skip");
			_exit(0);
		}
		snprintf(req, sizeof(req),
			 "GET /api/summary HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Cuscope-Token: "
			 "%s\r\nConnection: close\r\n\r\n",
			 s->port, s->token);
		if (write(fd, req, strlen(req)) < 0) {
			dprintf(fds[1], "-1");
			_exit(0);
		}
		n = read(fd, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = '\0';
		dprintf(fds[1], "%d", n > 12 && !strncmp(buf, "HTTP/1.", 7) ? atoi(buf + 9) : -1);
		_exit(0);
	}
	close(fds[1]);
	ck_assert_int_ge(read(fds[0], got, sizeof(got) - 1), 1);
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (!strcmp(got, "skip")) {
		fprintf(stderr, "test_other_user_mapped_refused: no IPv6 on the loopback\n");
		return;
	}
	ck_assert_msg(atoi(got) < 0, "another user got HTTP %s over IPv6", got);
}
END_TEST

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * A client that sends part of its headers and stalls (and a crowd of them) does not hold up
 * another client: its answer comes at once. The stalled connection is closed after a few seconds.
 */
START_TEST(test_stalled_client_does_not_block)
{
	struct server own, *s = &own; /* its own: this test takes a few seconds of its --timeout */
	int stalled[40], n = (int)(sizeof(stalled) / sizeof(stalled[0]));
	char hdr[128], *body, c;
	double t;

	ck_assert_int_eq(server_start(train_db, NULL, &own), 0);
	for (int i = 0; i < n; i++) {
		static const char part[] = "GET /api/summary HTTP/1.1\r\nHost: 127.0.0";

		stalled[i] = connect_to(s);
		ck_assert_int_ge(stalled[i], 0);
		ck_assert_int_eq(write(stalled[i], part, strlen(part)), (ssize_t)strlen(part));
	}
	usleep(100000);
	snprintf(hdr, sizeof(hdr), "X-Cuscope-Token: %s\r\n", s->token);
	for (int i = 0; i < 5; i++) {
		t = now_s();
		ck_assert_int_eq(http_get(s, NULL, "/api/summary", hdr, &body), 200);
		free(body);
		t = now_s() - t;
		ck_assert_msg(t < 1.0, "answered after %.2f s with stalled clients", t);
	}
	/* the stalled ones are closed by the server: read sees the end (or a reset) within 10 s */
	t = now_s();
	{
		struct timeval tv = {12, 0};

		setsockopt(stalled[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		ck_assert_int_le(read(stalled[0], &c, 1), 0);
	}
	t = now_s() - t;
	ck_assert_msg(t < 10.0, "a stalled client was kept %.1f s", t);
	for (int i = 0; i < n; i++)
		close(stalled[i]);
	server_stop(&own);
}
END_TEST

#define SLOW_CLIENTS 70 /* more than the 64 connections the server holds */

/* 1 when the server closed fd (the end, or a reset), without waiting. */
static int closed_by_server(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);

	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/*
 * Clients of the same user that send their request's headers a line every 2 s (never idle for the
 * 5 s timeout): each is closed 10 s after it connected, never later, and while 70 of them are
 * connected another client is answered at once (the 65th and later close the longest waiting).
 */
START_TEST(test_slow_headers_deadline)
{
	static const char start[] = "GET /api/summary HTTP/1.1\r\n", line[] = "X-Slow: 1\r\n";
	struct server own, *s = &own;
	int fd[SLOW_CLIENTS], open_n = SLOW_CLIENTS;
	double opened[SLOW_CLIENTS], held[SLOW_CLIENTS], t, t0, last_drip;
	char hdr[128], *body;

	ck_assert_int_eq(server_start(train_db, NULL, &own), 0);
	t0 = now_s();
	for (int i = 0; i < SLOW_CLIENTS; i++) {
		fd[i] = connect_to(s);
		ck_assert_int_ge(fd[i], 0);
		opened[i] = now_s();
		held[i] = -1;
		ck_assert_int_eq(send(fd[i], start, strlen(start), MSG_NOSIGNAL),
				 (ssize_t)strlen(start));
		usleep(10000);
	}
	snprintf(hdr, sizeof(hdr), "X-Cuscope-Token: %s\r\n", s->token);
	for (int k = 0; k < 3; k++) {
		t = now_s();
		ck_assert_int_eq(http_get(s, NULL, "/api/summary", hdr, &body), 200);
		free(body);
		t = now_s() - t;
		ck_assert_msg(t < 1.0, "answered after %.2f s with slow clients", t);
	}
	/* a header line into each every 2 s, for up to 16 s; note when each is closed */
	last_drip = now_s();
	while (open_n > 0 && now_s() - t0 < 16.0) {
		int drip = now_s() - last_drip >= 2.0;

		for (int i = 0; i < SLOW_CLIENTS; i++) {
			if (held[i] >= 0)
				continue;
			if (closed_by_server(fd[i]) ||
			    (drip && send(fd[i], line, strlen(line), MSG_NOSIGNAL) < 0)) {
				held[i] = now_s() - opened[i];
				open_n--;
			}
		}
		if (drip)
			last_drip = now_s();
		usleep(100000);
	}
	for (int i = 0; i < SLOW_CLIENTS; i++) {
		ck_assert_msg(held[i] >= 0, "client %d sending a header line every 2 s still open",
			      i);
		ck_assert_msg(held[i] < 12.5, "client %d held %.1f s", i, held[i]);
		close(fd[i]);
	}
	printf("slow clients: the first closed after %.1f s, the last after %.1f s\n", held[0],
	       held[SLOW_CLIENTS - 1]);
	/* the last one ran into the deadline, not an eviction: at least 9 s */
	ck_assert_msg(held[SLOW_CLIENTS - 1] >= 9.0, "the last client closed after %.1f s",
		      held[SLOW_CLIENTS - 1]);
	server_stop(&own);
}
END_TEST

/* A window answer: JSON, every track's busy time within the window, items that end after they
 * start. */
static void check_extreme_window(const struct server *s, const char *what, long long t0,
				 long long t1, int px, int *overview)
{
	char path[256], url[512], *body;
	cJSON *j, *tracks, *tr;
	int status;

	snprintf(path, sizeof(path), "/api/%s?t0=%lld&t1=%lld&px=%d", what, t0, t1, px);
	snprintf(url, sizeof(url), "%s&token=%s", path, s->token);
	status = http_get(s, NULL, url, NULL, &body);
	/* before the tracks are read a window may be refused as loading; never an error */
	ck_assert_msg(status == 200 || status == 503, "%s: status %d", path, status);
	if (status == 503) {
		free(body);
		return;
	}
	j = cJSON_Parse(body);
	ck_assert_msg(j != NULL, "%s: not JSON: %.200s", path, body);
	free(body);
	if (cJSON_IsTrue(cJSON_GetObjectItem(j, "overview")))
		*overview = 1;
	tracks = cJSON_GetObjectItem(j, "tracks");
	ck_assert_ptr_nonnull(tracks);
	cJSON_ArrayForEach(tr, tracks)
	{
		const cJSON *busy = cJSON_GetObjectItem(tr, "busy"), *it;

		if (busy)
			ck_assert_msg(busy->valuedouble >= 0 &&
					      busy->valuedouble <= (double)t1 - (double)t0,
				      "%s: busy %g", path, busy->valuedouble);
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(tr, "items"))
		{
			ck_assert(cJSON_GetArrayItem(it, 1)->valuedouble >=
				  cJSON_GetArrayItem(it, 0)->valuedouble);
			ck_assert(cJSON_GetArrayItem(it, 4)->valuedouble >= 0);
		}
	}
	cJSON_Delete(j);
}

/*
 * A trace with values at the int64 limits (and an overview), read while its tracks are held back
 * and after: windows at the server's limits, a window of 2^63 ns (t1 - t0 passes INT64_MAX),
 * windows of 1 ns at either end, one column and the most columns.
 */
START_TEST(test_extreme_trace_windows)
{
	static const long long w[][2] = {
		{-(1ll << 62), 1ll << 62},    {-(1ll << 62), -(1ll << 62) + 1},
		{(1ll << 62) - 1, 1ll << 62}, {-1, 1},
		{0, 9007199254740991ll},      {-(1ll << 62), 0},
	};
	char *db = tu_path(tmp_dir, "extreme.db");
	struct server s;
	cJSON *sum;
	int overview = 0;

	tu_write_extreme_trace(db, PID, "test_view");
	ck_assert_int_eq(server_start_env(db, "CUSCOPE_VIEW_TIMELINE_DELAY_MS", "2000", &s), 0);
	for (int pass = 0; pass < 2; pass++) {
		if (pass) {
			sum = summary_ready(&s);
			ck_assert_int_eq(jint(sum, "start"), -9007199254740991ll);
			ck_assert_int_eq(jint(sum, "end"), 9007199254740991ll);
			cJSON_Delete(sum);
		}
		for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
			check_extreme_window(&s, "window", w[i][0], w[i][1], 1, &overview);
			check_extreme_window(&s, "window", w[i][0], w[i][1], 20000, &overview);
			check_extreme_window(&s, "memory", w[i][0], w[i][1], 20000, &overview);
		}
	}
	ck_assert_int_eq(overview, 1); /* the overview answered before the tracks were read */
	server_stop(&s);
	free(db);
}
END_TEST

/*
 * The steps come before the findings: while the rules run (held back), the findings answer says
 * "pending" with the steps of the primary process, the same as the final answer's (of a server
 * of the same trace whose rules are not held back).
 */
START_TEST(test_steps_before_findings)
{
	cJSON *p = NULL, *f;
	const cJSON *a, *b;

	for (int i = 0; i < 600 && !p; i++) {
		cJSON *j = api_get(&early_srv, "/api/findings");

		ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "status")), "pending");
		if (cJSON_GetObjectItem(j, "steps"))
			p = j;
		else
			cJSON_Delete(j);
		usleep(10000);
	}
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_null(cJSON_GetObjectItem(p, "findings"));
	ck_assert_int_eq(jint(p, "pid"), 883);
	f = findings_ready(&d2h_srv);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(p, "steps")),
			 cJSON_GetArraySize(cJSON_GetObjectItem(f, "steps")));
	ck_assert_int_gt(cJSON_GetArraySize(cJSON_GetObjectItem(f, "steps")), 10);
	for (a = cJSON_GetObjectItem(p, "steps")->child, b = cJSON_GetObjectItem(f, "steps")->child;
	     a && b; a = a->next, b = b->next) {
		ck_assert_int_eq(jint(a, "start"), jint(b, "start"));
		ck_assert_int_eq(jint(a, "end"), jint(b, "end"));
	}
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(p, "step_detail")),
			 cJSON_GetStringValue(cJSON_GetObjectItem(f, "step_detail")));
	cJSON_Delete(f);
	cJSON_Delete(p);
}
END_TEST

/* ---- launches, arrows, details, ranges, search ---- */

/* The d2h-sync finding's costliest occurrence (its focus) in d2h-sync-bad.db. */
static void d2h_focus(int64_t *t0, int64_t *t1)
{
	cJSON *f = findings_ready(&d2h_srv);
	const cJSON *d2h = cJSON_GetArrayItem(cJSON_GetObjectItem(f, "findings"), 0);
	const cJSON *focus = cJSON_GetObjectItem(d2h, "focus");

	*t0 = jint(focus, "start");
	*t1 = jint(focus, "end");
	cJSON_Delete(f);
}

/* Each launch track holds a launch call for every kernel, memcpy and memset with a launch time. */
START_TEST(test_launch_tracks)
{
	cJSON *sum = summary_ready(&d2h_srv), *tr, *procs;
	cs_trace *t;
	cs_analysis a;
	cs_error err = {0};
	int64_t launches = 0, expect = 0;
	int ntracks = 0;

	ck_assert_int_eq(cs_trace_open(d2h_db, &t, &err), 0);
	ck_assert_int_eq(cs_analysis_load(t, &a, &err), 0);
	cJSON_ArrayForEach(tr, cJSON_GetObjectItem(sum, "tracks"))
	{
		const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(tr, "kind"));
		int64_t tid, n = 0;

		if (strcmp(kind, "launch"))
			continue;
		ntracks++;
		tid = jint(tr, "tid");
		for (int64_t i = 0; i < a.nkernels; i++)
			n += a.kernels[i].launch_start != CS_TS_UNKNOWN &&
			     a.kernels[i].launch_tid == tid && a.kernels[i].pid == jint(tr, "pid");
		for (int64_t i = 0; i < a.ncopies; i++)
			n += a.copies[i].launch_start != CS_TS_UNKNOWN &&
			     a.copies[i].launch_tid == tid && a.copies[i].pid == jint(tr, "pid");
		ck_assert_int_eq(jint(tr, "events"), n);
		launches += n;
	}
	for (int64_t i = 0; i < a.nkernels; i++)
		expect += a.kernels[i].launch_start != CS_TS_UNKNOWN;
	for (int64_t i = 0; i < a.ncopies; i++)
		expect += a.copies[i].launch_start != CS_TS_UNKNOWN;
	ck_assert_int_gt(ntracks, 0);
	ck_assert_int_gt(expect, 10000);
	ck_assert_int_eq(launches, expect);
	/* the processes, for the page's group headers */
	procs = cJSON_GetObjectItem(sum, "processes");
	ck_assert_int_eq(cJSON_GetArraySize(procs), 1);
	ck_assert_int_eq(jint(cJSON_GetArrayItem(procs, 0), "pid"), 883);
	ck_assert_ptr_nonnull(strstr(
		cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(procs, 0), "command")),
		"d2h-sync"));
	cs_analysis_free(&a);
	cs_trace_close(t);
	cJSON_Delete(sum);
}
END_TEST

/*
 * A narrow window has its launch-to-GPU arrows, each joining a launch track to a stream track at
 * the times of one kernel or copy of the trace; a whole-trace window (too many GPU events) none.
 */
START_TEST(test_window_flows)
{
	cJSON *sum = summary_ready(&d2h_srv), *w, *fl, *tracks = cJSON_GetObjectItem(sum, "tracks");
	cs_trace *t;
	cs_analysis a;
	cs_error err = {0};
	int64_t t0, t1;
	char path[256];
	int n = 0;

	d2h_focus(&t0, &t1);
	ck_assert_int_eq(cs_trace_open(d2h_db, &t, &err), 0);
	ck_assert_int_eq(cs_analysis_load(t, &a, &err), 0);
	snprintf(path, sizeof(path), "/api/window?t0=%lld&t1=%lld&px=1000", (long long)t0,
		 (long long)t1);
	w = api_get(&d2h_srv, path);
	cJSON_ArrayForEach(fl, cJSON_GetObjectItem(w, "flows"))
	{
		const cJSON *lt =
			cJSON_GetArrayItem(tracks, (int)cJSON_GetArrayItem(fl, 0)->valuedouble);
		const cJSON *gt =
			cJSON_GetArrayItem(tracks, (int)cJSON_GetArrayItem(fl, 3)->valuedouble);
		int64_t ls = (int64_t)cJSON_GetArrayItem(fl, 1)->valuedouble;
		int64_t gs = (int64_t)cJSON_GetArrayItem(fl, 4)->valuedouble;
		int found = 0;

		ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(lt, "kind")), "launch");
		ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(gt, "kind")), "stream");
		ck_assert_int_lt(ls, t1);
		for (int64_t i = 0; i < a.nkernels && !found; i++)
			found = a.kernels[i].start == gs && a.kernels[i].launch_start == ls &&
				a.kernels[i].launch_tid == jint(lt, "tid") &&
				a.kernels[i].stream_id == jint(gt, "stream");
		for (int64_t i = 0; i < a.ncopies && !found; i++)
			found = a.copies[i].start == gs && a.copies[i].launch_start == ls &&
				a.copies[i].launch_tid == jint(lt, "tid") &&
				a.copies[i].stream_id == jint(gt, "stream");
		ck_assert_msg(found, "flow %lld -> %lld is no launch of the trace", (long long)ls,
			      (long long)gs);
		n++;
	}
	ck_assert_int_gt(n, 2);
	cJSON_Delete(w);
	snprintf(path, sizeof(path), "/api/window?t0=%lld&t1=%lld&px=1000",
		 (long long)jint(sum, "start"), (long long)jint(sum, "end"));
	w = api_get(&d2h_srv, path);
	ck_assert_ptr_null(cJSON_GetObjectItem(w, "flows"));
	cJSON_Delete(w);
	cs_analysis_free(&a);
	cs_trace_close(t);
	cJSON_Delete(sum);
}
END_TEST

/* The costliest occurrence of the d2h-sync finding: its costliest wait, from the evidence. */
START_TEST(test_findings_focus)
{
	cJSON *f = findings_ready(&d2h_srv);
	const cJSON *d2h = cJSON_GetArrayItem(cJSON_GetObjectItem(f, "findings"), 0);
	const cJSON *focus = cJSON_GetObjectItem(d2h, "focus");
	const cJSON *cw =
		cJSON_GetObjectItem(cJSON_GetObjectItem(d2h, "evidence"), "costliest_wait");
	const cJSON *st;
	int in_steps = 0;

	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(d2h, "rule")), "d2h-sync");
	ck_assert_ptr_nonnull(cw);
	ck_assert_int_eq(jint(focus, "start"), jint(cw, "wait_start"));
	ck_assert_int_eq(jint(focus, "end"), jint(cw, "window_end"));
	ck_assert_int_eq(jint(focus, "step"), jint(cw, "step"));
	ck_assert_int_eq(jint(d2h, "pid"), 883);
	/* one process, whose steps are the answer's */
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(f, "processes")), 1);
	ck_assert_int_eq(jint(cJSON_GetArrayItem(cJSON_GetObjectItem(f, "processes"), 0), "pid"),
			 883);
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(
			cJSON_GetArrayItem(cJSON_GetObjectItem(f, "processes"), 0), "steps")),
		cJSON_GetArraySize(cJSON_GetObjectItem(f, "steps")));
	ck_assert_int_eq(jint(cJSON_GetArrayItem(cJSON_GetObjectItem(d2h, "processes"), 0), "pid"),
			 883);
	cJSON_ArrayForEach(st, cJSON_GetObjectItem(d2h, "steps")) in_steps |=
		(int64_t)st->valuedouble == jint(focus, "step");
	ck_assert(in_steps);
	cJSON_Delete(f);
}
END_TEST

/*
 * The details of a drawn event are the row of the trace: a kernel's grid, block, registers and
 * correlation id, the DtoH copy's bytes and kinds; a launch call gives the GPU work it launched.
 */
START_TEST(test_event_details)
{
	cJSON *sum = summary_ready(&d2h_srv), *w, *tr, *ev, *fields, *launch_ev = NULL;
	int64_t t0, t1;
	char path[256], *body;
	int kernels = 0, copies = 0;
	cs_trace *t;
	cs_error err = {0};

	d2h_focus(&t0, &t1);
	ck_assert_int_eq(cs_trace_open(d2h_db, &t, &err), 0);
	snprintf(path, sizeof(path), "/api/window?t0=%lld&t1=%lld&px=1000", (long long)t0,
		 (long long)t1);
	w = api_get(&d2h_srv, path);
	cJSON_ArrayForEach(tr, cJSON_GetObjectItem(w, "tracks"))
	{
		const cJSON *it;
		int id = (int)jint(tr, "id");
		const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(
			cJSON_GetArrayItem(cJSON_GetObjectItem(sum, "tracks"), id), "kind"));

		cJSON_ArrayForEach(it, cJSON_GetObjectItem(tr, "items"))
		{
			int64_t s = (int64_t)cJSON_GetArrayItem(it, 0)->valuedouble;
			int64_t e = (int64_t)cJSON_GetArrayItem(it, 1)->valuedouble;
			int ikind = (int)cJSON_GetArrayItem(it, 5)->valuedouble;

			if (cJSON_GetArrayItem(it, 2)->valuedouble < 0)
				continue;
			snprintf(path, sizeof(path), "/api/event?track=%d&start=%lld&end=%lld", id,
				 (long long)s, (long long)e);
			ev = api_get(&d2h_srv, path);
			ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(ev, "status")),
					 "ok");
			fields = cJSON_GetObjectItem(ev, "fields");
			if (!strcmp(kind, "launch")) {
				/* the GPU work it launched, with this launch */
				ck_assert_int_eq(jint(fields, "launchStart"), s);
				ck_assert_int_eq(jint(cJSON_GetObjectItem(ev, "launch"), "track"),
						 id);
				if (!launch_ev)
					launch_ev = cJSON_Duplicate(ev, 1);
			} else {
				ck_assert_int_eq(jint(fields, "start"), s);
				ck_assert_int_eq(jint(fields, "end"), e);
			}
			if (ikind == 0) {
				cs_filter fl = cs_filter_all();
				cs_iter *iter;
				cs_event row;
				int found = 0;

				fl.t0 = s;
				fl.t1 = s + 1;
				ck_assert_int_eq(cs_iter_open(t, CS_EV_KERNEL, &fl, &iter, &err),
						 0);
				while (!found && cs_iter_next(iter, &row) == 1)
					found = row.u.kernel.start == s;
				ck_assert(found);
				ck_assert_str_eq(
					cJSON_GetStringValue(cJSON_GetObjectItem(ev, "kind")),
					"kernel");
				ck_assert_int_eq(jint(fields, "correlationId"),
						 (int64_t)row.u.kernel.correlation_id);
				ck_assert_int_eq(jint(fields, "registersPerThread"),
						 row.u.kernel.registers_per_thread);
				ck_assert_int_eq(
					cJSON_GetArrayItem(cJSON_GetObjectItem(fields, "grid"), 0)
						->valuedouble,
					row.u.kernel.grid_x);
				ck_assert_int_eq(
					cJSON_GetArrayItem(cJSON_GetObjectItem(fields, "block"), 0)
						->valuedouble,
					row.u.kernel.block_x);
				ck_assert_str_eq(
					cJSON_GetStringValue(cJSON_GetObjectItem(fields, "name")),
					row.u.kernel.name);
				ck_assert_ptr_nonnull(cJSON_GetObjectItem(ev, "stack"));
				cs_iter_close(iter);
				kernels++;
			} else if (ikind == 1) {
				ck_assert_str_eq(cJSON_GetStringValue(
							 cJSON_GetObjectItem(fields, "copyKind")),
						 "DtoH");
				ck_assert_str_eq(cJSON_GetStringValue(
							 cJSON_GetObjectItem(fields, "dstKind")),
						 "pinned");
				ck_assert_int_eq(jint(fields, "bytes"), 4);
				ck_assert_int_ge(jint(cJSON_GetObjectItem(ev, "launch"), "track"),
						 0);
				copies++;
			}
			cJSON_Delete(ev);
		}
	}
	ck_assert_int_gt(kernels, 0);
	ck_assert_int_eq(copies, 1);
	ck_assert_ptr_nonnull(launch_ev);
	cJSON_Delete(launch_ev);
	/* nothing drawn there, a track that does not exist, a bad parameter */
	ev = api_get(&d2h_srv, "/api/event?track=0&start=1&end=2");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(ev, "status")), "none");
	cJSON_Delete(ev);
	snprintf(path, sizeof(path), "/api/event?track=9999&start=1&end=2&token=%s", d2h_srv.token);
	ck_assert_int_eq(http_get(&d2h_srv, NULL, path, NULL, &body), 400);
	free(body);
	snprintf(path, sizeof(path), "/api/event?track=0&start=x&end=2&token=%s", d2h_srv.token);
	ck_assert_int_eq(http_get(&d2h_srv, NULL, path, NULL, &body), 400);
	free(body);
	cs_trace_close(t);
	cJSON_Delete(w);
	cJSON_Delete(sum);
}
END_TEST

/* The id of the summary's track of kind with these keys (stream: device, stream; thread and api:
 * tid; nvtx: tid, depth), or -1. */
static int track_of(const cJSON *sum, const char *kind, int64_t pid, int64_t a, int64_t b)
{
	const cJSON *tr;

	cJSON_ArrayForEach(tr, cJSON_GetObjectItem(sum, "tracks"))
	{
		const char *k = cJSON_GetStringValue(cJSON_GetObjectItem(tr, "kind"));

		if (!k || strcmp(k, kind) || jint(tr, "pid") != pid)
			continue;
		if (!strcmp(kind, "stream") ? jint(tr, "device") == a && jint(tr, "stream") == b
		    : !strcmp(kind, "nvtx") ? jint(tr, "tid") == a && jint(tr, "depth") == b
					    : jint(tr, "tid") == a)
			return (int)jint(tr, "id");
	}
	return -1;
}

/*
 * The details of an event have a key for every column of its kind in include/cuscope/columns.def
 * (the three axes of a DIM one key, "grid" for gridX, gridY, gridZ), with the column's label and
 * unit in "columns": one event of each kind the tracks draw, from d2h-sync-bad.db.
 */
START_TEST(test_event_details_every_column)
{
	static const enum cs_event_kind kinds[] = {CS_EV_KERNEL, CS_EV_MEMCPY, CS_EV_MEMSET,
						   CS_EV_SYNC,	 CS_EV_API,    CS_EV_NVTX};
	static const char *const answer_kind[] = {"kernel", "memcpy", "memset",
						  "sync",   "api",    "nvtx"};
	cJSON *sum = summary_ready(&d2h_srv);
	cs_trace *t;
	cs_error err = {0};

	ck_assert_int_eq(cs_trace_open(d2h_db, &t, &err), 0);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		cs_filter f = cs_filter_all();
		cs_iter *it;
		cs_event ev;
		int track = -1, n;
		int64_t start = 0, end = 0;
		const cs_column_info *c = cs_event_columns(kinds[k], &n);
		cJSON *ans, *fields, *cols, *extra;
		char path[256];

		ck_assert_int_eq(cs_iter_open(t, kinds[k], &f, &it, &err), 0);
		while (track < 0 && cs_iter_next(it, &ev) == 1) {
			start = cs_event_value(&ev, 0);
			end = cs_event_value(&ev, 1);
			if (start == CS_TS_UNKNOWN || end == CS_TS_UNKNOWN || end < start)
				continue;
			switch (kinds[k]) {
			case CS_EV_KERNEL:
				track = track_of(sum, "stream", ev.u.kernel.pid, ev.u.kernel.device_id,
						 ev.u.kernel.stream_id);
				break;
			case CS_EV_MEMCPY:
				track = track_of(sum, "stream", ev.u.memcpy.pid, ev.u.memcpy.device_id,
						 ev.u.memcpy.stream_id);
				break;
			case CS_EV_MEMSET:
				track = track_of(sum, "stream", ev.u.memset.pid, ev.u.memset.device_id,
						 ev.u.memset.stream_id);
				break;
			case CS_EV_SYNC:
				if (cs_sync_type_is_host_wait(ev.u.sync.type))
					track = track_of(sum, "thread", ev.u.sync.pid, ev.u.sync.tid, 0);
				break;
			case CS_EV_API:
				track = track_of(sum, "api", ev.u.api.pid, ev.u.api.tid, 0);
				break;
			case CS_EV_NVTX:
				if (ev.u.nvtx.type == CS_NVTX_PUSHPOP && ev.u.nvtx.depth >= 0 &&
				    ev.u.nvtx.depth < 15)
					track = track_of(sum, "nvtx", ev.u.nvtx.pid, ev.u.nvtx.tid,
							 ev.u.nvtx.depth);
				break;
			default:
				break;
			}
		}
		cs_iter_close(it);
		ck_assert_msg(track >= 0, "no drawn %s in the trace", answer_kind[k]);
		snprintf(path, sizeof(path), "/api/event?track=%d&start=%lld&end=%lld", track,
			 (long long)start, (long long)end);
		ans = api_get(&d2h_srv, path);
		ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(ans, "status")), "ok");
		ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(ans, "kind")),
				 answer_kind[k]);
		fields = cJSON_GetObjectItem(ans, "fields");
		cols = cJSON_GetObjectItem(ans, "columns");
		ck_assert_ptr_nonnull(fields);
		ck_assert_ptr_nonnull(cols);
		for (int i = 0; i < n; i++) {
			char key[64];
			const cJSON *col;

			snprintf(key, sizeof(key), "%.*s",
				 (int)strlen(c[i].name) - (c[i].unit == CS_COLUNIT_DIM), c[i].name);
			ck_assert_msg(cJSON_GetObjectItemCaseSensitive(fields, key) != NULL,
				      "%s details lack %s (column %s)", answer_kind[k], key, c[i].name);
			col = cJSON_GetObjectItemCaseSensitive(cols, key);
			ck_assert_msg(col != NULL, "%s: no label and unit for %s", answer_kind[k], key);
			ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(col, "label")),
					 c[i].label);
			ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(col, "unit")),
					 cs_column_unit_name(c[i].unit));
		}
		/* the times as stored, and nothing in "columns" that is not a column */
		ck_assert_int_eq(jint(fields, "start"), start);
		cJSON_ArrayForEach(extra, cols)
		{
			ck_assert_ptr_nonnull(cJSON_GetObjectItemCaseSensitive(fields, extra->string));
		}
		cJSON_Delete(ans);
	}
	cs_trace_close(t);
	cJSON_Delete(sum);
}
END_TEST

/* The range answer of [t0, t1) on d2h-sync-bad.db against the trace's rows: a stream's busy time
 * is the union of its work, its counts and bytes those of its rows in the range; 1 when a stream
 * had kernels in it. */
static int check_range(const cs_analysis *a, const cJSON *tracks, int64_t t0, int64_t t1)
{
	cJSON *r, *tr;
	char path[256];
	int streams = 0;

	snprintf(path, sizeof(path), "/api/range?t0=%lld&t1=%lld", (long long)t0, (long long)t1);
	r = api_get(&d2h_srv, path);
	cJSON_ArrayForEach(tr, cJSON_GetObjectItem(r, "tracks"))
	{
		const cJSON *meta = cJSON_GetArrayItem(tracks, (int)jint(tr, "id"));
		int64_t pid = jint(meta, "pid"), kernels = 0, copies = 0, bytes = 0, dev, stream;

		if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(meta, "kind")), "stream"))
			continue;
		dev = jint(meta, "device");
		stream = jint(meta, "stream");
		for (int64_t i = 0; i < a->nkernels; i++) {
			const cs_a_kernel *k = &a->kernels[i];

			kernels += k->pid == pid && k->device_id == dev && k->stream_id == stream &&
				   k->start < t1 && k->end > t0;
		}
		for (int64_t i = 0; i < a->ncopies; i++) {
			const cs_a_copy *c = &a->copies[i];

			if (c->pid == pid && c->device_id == dev && c->stream_id == stream &&
			    c->start < t1 && c->end > t0) {
				copies++;
				bytes += c->bytes;
			}
		}
		ck_assert_int_eq(jint(tr, "busy"), stream_union(a, pid, dev, stream, t0, t1));
		ck_assert_int_eq(jint(tr, "kernels"), kernels);
		ck_assert_int_eq(jint(tr, "memcpys") + jint(tr, "memsets"), copies);
		ck_assert_int_eq(jint(tr, "bytes"), bytes);
		if (kernels)
			streams++;
	}
	cJSON_Delete(r);
	return streams > 0;
}

/* A range's totals around the finding's costliest occurrence (the bytes through the reader's
 * index) and over the whole trace (through a scan of the tables). */
START_TEST(test_range_totals)
{
	cJSON *sum = summary_ready(&d2h_srv), *tracks = cJSON_GetObjectItem(sum, "tracks");
	cs_trace *t;
	cs_analysis a;
	cs_error err = {0};
	int64_t t0, t1;
	char path[256], *body;

	d2h_focus(&t0, &t1);
	ck_assert_int_eq(cs_trace_open(d2h_db, &t, &err), 0);
	ck_assert_int_eq(cs_analysis_load(t, &a, &err), 0);
	ck_assert(check_range(&a, tracks, t0 - 20000000, t1 + 20000000));
	ck_assert(check_range(&a, tracks, jint(sum, "start"), jint(sum, "end") + 1));
	snprintf(path, sizeof(path), "/api/range?t0=5&t1=5&token=%s", d2h_srv.token);
	ck_assert_int_eq(http_get(&d2h_srv, NULL, path, NULL, &body), 400);
	free(body);
	cs_analysis_free(&a);
	cs_trace_close(t);
	cJSON_Delete(sum);
}
END_TEST

/*
 * Search: the number of matches is that of the kernels whose demangled name holds the text (any
 * case); next and previous walk them in time order and wrap around. API names are shown without
 * CUPTI's version suffix, and found by it.
 */
START_TEST(test_search_and_api_names)
{
	cJSON *sum = summary_ready(&d2h_srv), *j, *m, *w, *nm;
	cs_trace *t;
	cs_analysis a;
	cs_error err = {0};
	int64_t expect = 0, prev_start, first_start;
	char path[512], *body;
	int plain = 0;

	ck_assert_int_eq(cs_trace_open(d2h_db, &t, &err), 0);
	ck_assert_int_eq(cs_analysis_load(t, &a, &err), 0);
	for (int64_t i = 0; i < a.nkernels; i++) {
		const char *name = cs_trace_string(t, a.kernels[i].name_id);

		expect += name && strcasestr(cs_demangle_short(name), "REDUCE_KERNEL") != NULL;
	}
	ck_assert_int_gt(expect, 10);
	j = api_get(&d2h_srv, "/api/search?q=REDUCE_KERNEL&t=0&dir=1");
	ck_assert_int_eq(jint(j, "total"), expect);
	ck_assert_int_eq(jint(j, "index"), 1);
	m = cJSON_GetObjectItem(j, "match");
	first_start = prev_start = jint(m, "start");
	ck_assert_ptr_nonnull(
		strstr(cJSON_GetStringValue(cJSON_GetObjectItem(m, "name")), "reduce_kernel"));
	/* next: later, index + 1 */
	for (int i = 2; i <= 4; i++) {
		snprintf(path, sizeof(path), "/api/search?q=reduce_kernel&t=%lld&track=%lld&dir=1",
			 (long long)prev_start, (long long)jint(m, "track"));
		cJSON_Delete(j);
		j = api_get(&d2h_srv, path);
		m = cJSON_GetObjectItem(j, "match");
		ck_assert_int_eq(jint(j, "index"), i);
		ck_assert_int_ge(jint(m, "start"), prev_start);
		prev_start = jint(m, "start");
	}
	/* previous from the first wraps around to the last */
	snprintf(path, sizeof(path), "/api/search?q=reduce_kernel&t=%lld&track=-1&dir=-1",
		 (long long)first_start);
	cJSON_Delete(j);
	j = api_get(&d2h_srv, path);
	ck_assert_int_eq(jint(j, "index"), expect);
	ck_assert_int_gt(jint(cJSON_GetObjectItem(j, "match"), "start"), first_start);
	cJSON_Delete(j);
	/* no match; an empty query is refused */
	j = api_get(&d2h_srv, "/api/search?q=no-such-kernel-name&t=0");
	ck_assert_int_eq(jint(j, "total"), 0);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "match")));
	cJSON_Delete(j);
	snprintf(path, sizeof(path), "/api/search?q=&token=%s", d2h_srv.token);
	ck_assert_int_eq(http_get(&d2h_srv, NULL, path, NULL, &body), 400);
	free(body);
	/* cudaStreamSynchronize_v3020: recorded with the suffix, shown and found without it */
	j = api_get(&d2h_srv, "/api/search?q=cudaStreamSynchronize&t=0");
	m = cJSON_GetObjectItem(j, "match");
	ck_assert_int_gt(jint(j, "total"), 0);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(m, "name")),
			 "cudaStreamSynchronize");
	snprintf(path, sizeof(path), "/api/window?t0=%lld&t1=%lld&px=2000",
		 (long long)jint(sum, "start"), (long long)jint(sum, "end"));
	w = api_get(&d2h_srv, path);
	cJSON_ArrayForEach(nm, cJSON_GetObjectItem(w, "names_short"))
	{
		ck_assert_ptr_null(strstr(nm->valuestring, "_v3020"));
		plain += !strcmp(nm->valuestring, "cudaStreamSynchronize");
	}
	ck_assert_int_eq(plain, 1);
	plain = 0;
	cJSON_ArrayForEach(nm, cJSON_GetObjectItem(w, "names")) plain +=
		!strcmp(nm->valuestring, "cudaStreamSynchronize_v3020");
	ck_assert_int_eq(plain, 1);
	cJSON_Delete(w);
	cJSON_Delete(j);
	cs_analysis_free(&a);
	cs_trace_close(t);
	cJSON_Delete(sum);
}
END_TEST

static Suite *view_suite(void)
{
	Suite *s = suite_create("view");
	TCase *tc = tcase_create("view");

	tcase_set_timeout(tc, 60);
	/* first: its analysis is held back for HELD_MS from the start */
	tcase_add_test(tc, test_timeline_before_findings);
	tcase_add_test(tc, test_steps_before_findings);
	tcase_add_test(tc, test_overview_before_tracks);
	tcase_add_test(tc, test_token_and_host);
	tcase_add_test(tc, test_two_viewers_own_tokens);
	tcase_add_test(tc, test_other_user_refused);
	tcase_add_test(tc, test_other_user_mapped_refused);
	tcase_add_test(tc, test_summary_matches_trace);
	tcase_add_test(tc, test_findings_match_report);
	tcase_add_test(tc, test_findings_window);
	tcase_add_test(tc, test_window_busy_and_thinning);
	tcase_add_test(tc, test_names_escaped);
	tcase_add_test(tc, test_memory_realloc);
	tcase_add_test(tc, test_loopback_only);
	tcase_add_test(tc, test_usage);
	tcase_add_test(tc, test_commands_without_overview);
	tcase_add_test(tc, test_extreme_trace_windows);
	tcase_add_test(tc, test_launch_tracks);
	tcase_add_test(tc, test_window_flows);
	tcase_add_test(tc, test_findings_focus);
	tcase_add_test(tc, test_event_details);
	tcase_add_test(tc, test_event_details_every_column);
	tcase_add_test(tc, test_range_totals);
	tcase_add_test(tc, test_search_and_api_names);
	/* last: it takes a few seconds, with a server of its own */
	tcase_add_test(tc, test_stalled_client_does_not_block);
	tcase_add_test(tc, test_slow_headers_deadline);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	tmp_dir = tu_tmpdir();
	if (!tmp_dir) {
		fprintf(stderr, "test_view: cannot make a temporary directory\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	synth_db = tu_path(tmp_dir, "html.db");
	write_synthetic(synth_db);
	train_db = tu_path(tu_source_root(), "samples/traces/train_small.db");
	d2h_db = tu_path(tu_source_root(), "samples/rules/traces/d2h-sync-bad.db");
	if (server_start(train_db, NULL, &train_srv) || server_start(d2h_db, NULL, &d2h_srv) ||
	    server_start(synth_db, NULL, &synth_srv) || server_start(d2h_db, HELD_MS, &held_srv) ||
	    server_start_env(synth_db, "CUSCOPE_VIEW_TIMELINE_DELAY_MS", OV_HELD_MS, &ov_srv) ||
	    server_start_env(d2h_db, "CUSCOPE_VIEW_RULES_DELAY_MS", RULES_HELD_MS, &early_srv)) {
		fprintf(stderr, "test_view: cannot start cuscope view\n");
		server_stop(&train_srv);
		server_stop(&d2h_srv);
		server_stop(&synth_srv);
		server_stop(&held_srv);
		server_stop(&ov_srv);
		server_stop(&early_srv);
		return 1;
	}
	sr = srunner_create(view_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	server_stop(&train_srv);
	server_stop(&d2h_srv);
	server_stop(&synth_srv);
	server_stop(&held_srv);
	server_stop(&ov_srv);
	server_stop(&early_srv);
	return failed ? 1 : 0;
}
