/*
 * server.c - the HTTP server of `cuscope view` (libmicrohttpd, a small pool of threads).
 *
 * Security model (docs/commands/view.md): the socket is bound to 127.0.0.1 only; every API request
 * must carry the token printed with the URL, in the X-Cuscope-Token header (the page's own
 * requests) or as ?token=. The token never goes into a cookie: cookies are not kept apart by port,
 * so every other server on 127.0.0.1 would receive it, and a second viewer would replace it. The
 * page's static files (index.html, viewer.js, viewer.css: nothing from the trace) need no token.
 * The Host header must name 127.0.0.1:PORT or localhost:PORT, so that a page of another site that
 * rebinds its DNS name to 127.0.0.1 cannot read the trace. Answers are never cached and carry a
 * Content-Security-Policy that allows only this origin.
 *
 * A slow or stuck client cannot hold up the others: connections are served by several threads,
 * one that sends nothing for CONN_TIMEOUT_S seconds is closed, and one whose request's headers
 * are not all in HEADER_DEADLINE_S seconds after it began waiting for them (a header line every
 * few seconds) is closed by a watchdog thread. At most CONN_MAX connections are held: past that a
 * new one closes the one that has waited longest for its headers, so slow clients cannot keep a
 * new one out. The API answers themselves are computed one at a time (api_lock). Every local
 * client connects from 127.0.0.1, so those limits cannot tell users apart: a connection whose
 * socket belongs to another user (its owner in /proc/net/tcp) is closed as soon as it is accepted,
 * so other users can neither guess tokens nor hold connections.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "api.h"
#include "server.h"

#if MHD_VERSION >= 0x00097002
typedef enum MHD_Result mhd_result;
#else
typedef int mhd_result;
#endif

#define TOKEN_HEADER "X-Cuscope-Token"
#define MAX_PX	     20000
#define MAX_TIME     ((int64_t)1 << 62)
/* threads serving connections; a client idle this long is closed; a request's headers must be in
 * this long after the connection began waiting for them; connections held at once (libmicrohttpd
 * refuses past twice as many, those closed but not yet cleaned up counted) */
#define POOL_THREADS	  4
#define CONN_TIMEOUT_S	  5
#define HEADER_DEADLINE_S 10
#define CONN_MAX	  64

/* A connection the server holds (the socket context of libmicrohttpd's connection). */
struct conn {
	int fd;
	double waiting; /* since when it waits for a request's headers; 0 while in a request */
	int closing;	/* its socket was shut down: libmicrohttpd closes it next */
	struct conn *prev, *next;
};

struct view_server {
	struct MHD_Daemon *daemon;
	struct view_data *data;
	int port;
	int fd;
	char token[33];
	char host_ip[32], host_name[32]; /* the Host values accepted */
	pthread_mutex_t api_lock;	 /* one API answer computed at a time */
	atomic_int refused_told;	 /* a refused user was mentioned on stderr */
	pthread_mutex_t conn_lock;	 /* the list below and its counts */
	struct conn *conns;		 /* oldest first */
	int nconns, nclosing;
	pthread_t watchdog;
	pthread_cond_t stop_cond;
	int stop, watchdog_started;
};

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Shut x's socket down (with conn_lock held): libmicrohttpd sees the end and closes the
 * connection. The socket is still open: it is closed only after NOTIFY_CLOSED, which takes the
 * lock. */
static void conn_close(struct view_server *s, struct conn *x)
{
	if (x->closing)
		return;
	shutdown(x->fd, SHUT_RDWR);
	x->closing = 1;
	s->nclosing++;
}

static void notify_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			      enum MHD_ConnectionNotificationCode code)
{
	struct view_server *s = cls;
	struct conn *x = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *info =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

		x = info ? calloc(1, sizeof(*x)) : NULL;
		if (!x)
			return; /* not watched: the idle timeout still closes it */
		x->fd = info->connect_fd;
		x->waiting = mono_s();
		pthread_mutex_lock(&s->conn_lock);
		if (s->conns) { /* a ring: s->conns->prev is the newest */
			x->prev = s->conns->prev;
			x->next = s->conns;
			x->prev->next = x;
			s->conns->prev = x;
		} else {
			x->prev = x->next = x;
			s->conns = x;
		}
		s->nconns++;
		pthread_mutex_unlock(&s->conn_lock);
		*socket_context = x;
	} else if (code == MHD_CONNECTION_NOTIFY_CLOSED && x) {
		pthread_mutex_lock(&s->conn_lock);
		if (x->next == x) {
			s->conns = NULL;
		} else {
			x->prev->next = x->next;
			x->next->prev = x->prev;
			if (s->conns == x)
				s->conns = x->next;
		}
		s->nconns--;
		s->nclosing -= x->closing;
		pthread_mutex_unlock(&s->conn_lock);
		free(x);
		*socket_context = NULL;
	}
}

/* Mark connection c as waiting for a request's headers since now (waiting) or in a request. */
static void conn_waiting(struct view_server *s, struct MHD_Connection *c, int waiting)
{
	const union MHD_ConnectionInfo *info =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *x = info ? info->socket_context : NULL;

	if (!x)
		return;
	pthread_mutex_lock(&s->conn_lock);
	x->waiting = waiting ? mono_s() : 0;
	pthread_mutex_unlock(&s->conn_lock);
}

/* A request is over (answered or not): the connection waits for the next one's headers. */
static void request_completed(void *cls, struct MHD_Connection *c, void **state,
			      enum MHD_RequestTerminationCode toe)
{
	(void)state;
	(void)toe;
	conn_waiting(cls, c, 1);
}

/* Close the connections whose headers are late, once a second until the server stops. */
static void *watchdog_main(void *arg)
{
	struct view_server *s = arg;

	pthread_mutex_lock(&s->conn_lock);
	while (!s->stop) {
		struct timespec until;
		double now = mono_s();
		struct conn *x = s->conns;

		for (int i = 0; x && i < s->nconns; i++, x = x->next)
			if (x->waiting > 0 && now - x->waiting > HEADER_DEADLINE_S)
				conn_close(s, x);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += 1;
		pthread_cond_timedwait(&s->stop_cond, &s->conn_lock, &until);
	}
	pthread_mutex_unlock(&s->conn_lock);
	return NULL;
}

/* Room for one more connection: past CONN_MAX, close the one that has waited longest for its
 * headers; 0 when every connection is in a request. */
static int make_room(struct view_server *s)
{
	struct conn *x = s->conns, *oldest = NULL;
	int ok = 1;

	pthread_mutex_lock(&s->conn_lock);
	if (s->nconns - s->nclosing >= CONN_MAX) {
		for (int i = 0; x && i < s->nconns; i++, x = x->next)
			if (!x->closing && x->waiting > 0 &&
			    (!oldest || x->waiting < oldest->waiting))
				oldest = x;
		if (oldest)
			conn_close(s, oldest);
		else
			ok = 0;
	}
	pthread_mutex_unlock(&s->conn_lock);
	return ok;
}

/*
 * The uid of the socket that file (/proc/net/tcp or tcp6) lists with the local address addr (in
 * hex, as the file writes it) and port, connected to our_port; -1 when it lists none. *readable is
 * set when the file could be read.
 */
static long uid_in(const char *file, const char *addr, unsigned int port, int our_port,
		   int *readable)
{
	FILE *f = fopen(file, "re");
	char line[512], la[33];
	unsigned int lp, rp;
	unsigned long u;
	long uid = -1;

	if (!f)
		return -1;
	*readable = 1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " %*u: %32[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%x %*x %*x:%*x %*x:%*x %*x %lu",
			   la, &lp, &rp, &u) == 4 &&
		    !strcasecmp(la, addr) && lp == port && rp == (unsigned int)our_port) {
			uid = (long)u;
			break;
		}
	fclose(f);
	return uid;
}

/*
 * The owner of the client's socket of a connection from peer to our port: /proc/net/tcp lists
 * every IPv4 TCP socket of this network namespace with its uid, addresses as the raw 32-bit value
 * and ports in host order, in hex. A client can also reach our IPv4 socket from an IPv6 one,
 * through the mapped address ::ffff:127.0.0.1: its socket is then listed in /proc/net/tcp6 only,
 * the address as four raw 32-bit words. Returns the uid; -1 when neither file can be read (no
 * /proc: nothing to tell by); -2 when they can but list no such socket (refused: its owner is
 * unknown).
 */
static long peer_uid(const struct sockaddr_in *peer, int our_port)
{
	static const unsigned char mapped[4] = {0, 0, 0xff, 0xff};
	unsigned int port = ntohs(peer->sin_port);
	char v4[16], v6[40];
	int readable = 0;
	uint32_t w;
	long uid;

	memcpy(&w, mapped, sizeof(w));
	snprintf(v4, sizeof(v4), "%08X", (unsigned int)peer->sin_addr.s_addr);
	snprintf(v6, sizeof(v6), "%08X%08X%08X%08X", 0u, 0u, (unsigned int)w,
		 (unsigned int)peer->sin_addr.s_addr);
	uid = uid_in("/proc/net/tcp", v4, port, our_port, &readable);
	if (uid < 0)
		uid = uid_in("/proc/net/tcp6", v6, port, our_port, &readable);
	return uid < 0 && readable ? -2 : uid;
}

/* Accept a connection unless its client's socket belongs to another user. */
static mhd_result accept_policy(void *cls, const struct sockaddr *addr, socklen_t len)
{
	struct view_server *s = cls;
	long uid;

	if (len < (socklen_t)sizeof(struct sockaddr_in) || addr->sa_family != AF_INET)
		return MHD_NO;
	uid = peer_uid((const struct sockaddr_in *)addr, s->port);
	if (uid == -1 || uid == (long)geteuid())
		return make_room(s) ? MHD_YES : MHD_NO;
	if (!atomic_exchange(&s->refused_told, 1)) {
		if (uid >= 0)
			fprintf(stderr,
				"cuscope: refused a connection from another user (uid %ld); the "
				"viewer serves only uid %ld\n",
				uid, (long)geteuid());
		else
			fprintf(stderr,
				"cuscope: refused a connection whose owner /proc/net does not "
				"tell; the viewer serves only uid %ld\n",
				(long)geteuid());
	}
	return MHD_NO;
}

/* Compare without leaking where the first difference is. */
static int token_equal(const char *a, const char *b)
{
	size_t la = a ? strlen(a) : 0, lb = strlen(b);
	unsigned char d = la != lb;

	for (size_t i = 0; a && i < la && i < lb; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return a && !d;
}

static mhd_result send_body(struct MHD_Connection *c, unsigned int status, const char *type,
			    const void *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, mode);
	mhd_result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(r, "X-Frame-Options", "DENY");
	MHD_add_response_header(r, "Content-Security-Policy",
				"default-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static mhd_result send_text(struct MHD_Connection *c, unsigned int status, const char *text)
{
	return send_body(c, status, "text/plain; charset=utf-8", text, strlen(text),
			 MHD_RESPMEM_PERSISTENT);
}

/* A JSON answer (malloc'd text, taken over), or 400 when the query was bad. */
static mhd_result send_json(struct MHD_Connection *c, char *json)
{
	if (!json)
		return send_text(c, MHD_HTTP_BAD_REQUEST, "bad request\n");
	return send_body(c, MHD_HTTP_OK, "application/json", json, strlen(json),
			 MHD_RESPMEM_MUST_FREE);
}

static int query_int(struct MHD_Connection *c, const char *key, int64_t *out)
{
	const char *s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
	char *end;
	long long v;

	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

/* t0, t1 and px of a window query; -1 when one is missing or out of range. */
static int window_args(struct MHD_Connection *c, int64_t *t0, int64_t *t1, int *px)
{
	int64_t p;

	if (query_int(c, "t0", t0) || query_int(c, "t1", t1) || query_int(c, "px", &p))
		return -1;
	/* |t| <= 2^62 keeps t0 and t1 far from the int64 limits; t1 - t0 can still pass INT64_MAX
	 * (up to 2^63), and the answers' arithmetic saturates (src/view/api.c, column_ns) */
	if (*t1 <= *t0 || *t0 < -MAX_TIME || *t1 > MAX_TIME || p < 1 || p > MAX_PX)
		return -1;
	*px = (int)p;
	return 0;
}

/* 503 {"status":"loading"}: the tracks are not read yet. */
static mhd_result send_loading(struct MHD_Connection *c)
{
	return send_body(c, MHD_HTTP_SERVICE_UNAVAILABLE, "application/json",
			 "{\"status\":\"loading\"}", 20, MHD_RESPMEM_PERSISTENT);
}

/*
 * The answers that need the tracks: a range's totals, one event's details, a search by name.
 * 503 until the tracks are read, 400 for bad or missing parameters.
 */
static mhd_result detail_answer(struct view_server *s, struct MHD_Connection *c, const char *url)
{
	int64_t a, b, track, dir = 1;

	if (!view_data_timeline_ready(s->data))
		return send_loading(c);
	if (!strcmp(url, "/api/range")) {
		if (query_int(c, "t0", &a) || query_int(c, "t1", &b) || b <= a || a < -MAX_TIME ||
		    b > MAX_TIME)
			return send_text(c, MHD_HTTP_BAD_REQUEST, "need integers t0 < t1\n");
		return send_json(c, view_api_range(s->data, a, b));
	}
	if (!strcmp(url, "/api/event")) {
		if (query_int(c, "track", &track) || query_int(c, "start", &a) ||
		    query_int(c, "end", &b) || a < -MAX_TIME || a > MAX_TIME || b < -MAX_TIME ||
		    b > MAX_TIME)
			return send_text(c, MHD_HTTP_BAD_REQUEST,
					 "need integers track, start and end\n");
		return send_json(c, view_api_event(s->data, track, a, b));
	}
	/* /api/search?q=TEXT&t=T&track=I&dir=1|-1 */
	if (query_int(c, "t", &a))
		a = -MAX_TIME;
	if (query_int(c, "track", &track))
		track = -1;
	if (query_int(c, "dir", &dir) || (dir != 1 && dir != -1))
		dir = 1;
	if (a < -MAX_TIME || a > MAX_TIME)
		return send_text(c, MHD_HTTP_BAD_REQUEST, "t out of range\n");
	return send_json(c,
			 view_api_search(s->data,
					 MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "q"),
					 a, track, (int)dir));
}

/* The answer of an API request (with the token). */
static mhd_result api_answer(struct view_server *s, struct MHD_Connection *c, const char *url)
{
	int64_t t0, t1;
	int px;

	if (!strcmp(url, "/api/summary"))
		return send_json(c, view_api_summary(s->data));
	if (!strcmp(url, "/api/findings"))
		return send_json(c, view_api_findings(s->data));
	if (!strcmp(url, "/api/window") || !strcmp(url, "/api/memory")) {
		int window = !strcmp(url, "/api/window"), ready = view_data_timeline_ready(s->data);

		/* before the tracks are read: the overview's answer, when it is coarse enough */
		if (!ready && !view_data_has_overview(s->data))
			return send_loading(c);
		if (window_args(c, &t0, &t1, &px))
			return send_text(c, MHD_HTTP_BAD_REQUEST,
					 "need integers t0 < t1 and 1 <= px <= 20000\n");
		if (!ready) {
			if (window && !view_api_overview_covers(s->data, t0, t1, px))
				return send_loading(c);
			return send_json(c, window ? view_api_window_overview(s->data, t0, t1, px)
						   : view_api_memory_overview(s->data, t0, t1, px));
		}
		return send_json(c, window ? view_api_window(s->data, t0, t1, px)
					   : view_api_memory(s->data, t0, t1, px));
	}
	if (!strcmp(url, "/api/range") || !strcmp(url, "/api/event") || !strcmp(url, "/api/search"))
		return detail_answer(s, c, url);
	return send_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
}

static mhd_result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			 const char *version, const char *upload, size_t *upload_size, void **state)
{
	struct view_server *s = cls;
	const char *host, *token;
	mhd_result ret;

	(void)version;
	(void)upload;
	if (!*state) {
		/* first call of a request: its headers are in */
		conn_waiting(s, c, 0);
		*state = s;
		return MHD_YES;
	}
	if (*upload_size)
		return send_text(c, MHD_HTTP_BAD_REQUEST, "no body expected\n");
	host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	if (!host || (strcmp(host, s->host_ip) && strcmp(host, s->host_name)))
		return send_text(c, MHD_HTTP_FORBIDDEN, "forbidden: unexpected Host\n");
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return send_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
	if (!strcmp(url, "/"))
		url = "/index.html";
	/* the page's own files: nothing from the trace, so no token */
	for (unsigned long i = 0; i < view_nassets; i++) {
		const struct view_asset *a = &view_assets[i];

		if (!strcmp(url, a->path))
			return send_body(c, MHD_HTTP_OK, a->type, a->data, a->size,
					 MHD_RESPMEM_PERSISTENT);
	}
	token = MHD_lookup_connection_value(c, MHD_HEADER_KIND, TOKEN_HEADER);
	if (!token)
		token = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token");
	if (!token_equal(token, s->token))
		return send_text(c, MHD_HTTP_FORBIDDEN, "forbidden: missing or wrong token\n");
	if (strncmp(url, "/api/", 5))
		return send_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
	pthread_mutex_lock(&s->api_lock);
	ret = api_answer(s, c, url);
	pthread_mutex_unlock(&s->api_lock);
	return ret;
}

int view_server_start(struct view_data *v, int port, const char *token, struct view_server **out,
		      int *port_out, cs_error *err)
{
	struct view_server *s = calloc(1, sizeof(*s));
	struct sockaddr_in addr;
	socklen_t len = sizeof(addr);
	int one = 1;

	*out = NULL;
	if (!s)
		return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
	s->data = v;
	snprintf(s->token, sizeof(s->token), "%s", token);
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		free(s);
		return cs_error_set(err, CS_ERR_IO, "socket: %s", strerror(errno));
	}
	setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK); /* loopback only, never INADDR_ANY */
	/* a long backlog: a burst of connections from other users, closed at accept, does not make
	 * the kernel reset this user's */
	if (bind(s->fd, (struct sockaddr *)&addr, sizeof(addr)) || listen(s->fd, SOMAXCONN) ||
	    getsockname(s->fd, (struct sockaddr *)&addr, &len)) {
		int e = errno;

		close(s->fd);
		free(s);
		return cs_error_set(err, CS_ERR_IO, "cannot listen on 127.0.0.1:%d: %s", port,
				    strerror(e));
	}
	s->port = ntohs(addr.sin_port);
	snprintf(s->host_ip, sizeof(s->host_ip), "127.0.0.1:%d", s->port);
	snprintf(s->host_name, sizeof(s->host_name), "localhost:%d", s->port);
	pthread_mutex_init(&s->api_lock, NULL);
	pthread_mutex_init(&s->conn_lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&s->stop_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	/* poll or epoll: no FD_SETSIZE limit on the connections select would have */
	s->daemon = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, 0, accept_policy, s, handle, s,
		MHD_OPTION_LISTEN_SOCKET, s->fd, MHD_OPTION_THREAD_POOL_SIZE,
		(unsigned int)POOL_THREADS, MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned int)CONN_TIMEOUT_S, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
		(unsigned int)(2 * CONN_MAX), MHD_OPTION_NOTIFY_CONNECTION, notify_connection, s,
		MHD_OPTION_NOTIFY_COMPLETED, request_completed, s, MHD_OPTION_END);
	if (s->daemon && !pthread_create(&s->watchdog, NULL, watchdog_main, s))
		s->watchdog_started = 1;
	if (!s->daemon || !s->watchdog_started) {
		if (s->daemon)
			MHD_stop_daemon(s->daemon);
		pthread_cond_destroy(&s->stop_cond);
		pthread_mutex_destroy(&s->conn_lock);
		pthread_mutex_destroy(&s->api_lock);
		close(s->fd);
		free(s);
		return cs_error_set(err, CS_ERR_IO, "cannot start the HTTP server");
	}
	*port_out = s->port;
	*out = s;
	return 0;
}

void view_server_stop(struct view_server *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->conn_lock);
	s->stop = 1;
	pthread_cond_signal(&s->stop_cond);
	pthread_mutex_unlock(&s->conn_lock);
	pthread_join(s->watchdog, NULL);
	MHD_stop_daemon(s->daemon);
	pthread_cond_destroy(&s->stop_cond);
	pthread_mutex_destroy(&s->conn_lock);
	pthread_mutex_destroy(&s->api_lock);
	close(s->fd);
	free(s);
}
