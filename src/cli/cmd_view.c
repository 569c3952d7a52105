/*
 * cmd_view.c - `cuscope view`: serve a trace to the web viewer (viewer/) on 127.0.0.1 and print
 * the URL to open, which carries a random token (docs/commands/view.md). Runs until interrupted,
 * or for --timeout seconds.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "cli.h"

static const char view_usage[] =
	"usage: cuscope view [OPTIONS] FILE\n"
	"\n"
	"Serve the trace to cuscope's web viewer on 127.0.0.1 and print the URL to open: a\n"
	"timeline of GPU streams, host threads, NVTX ranges and device memory, with the findings\n"
	"of `cuscope report` beside it. The URL carries a random token that every request needs.\n"
	"view never starts a browser: open the URL it prints.\n"
	"\n"
	"Options:\n"
	"      --port N           listen on port N (default 0: any free port)\n"
	"      --timeout SEC      stop after SEC seconds (default: run until interrupted)\n"
	"  -h, --help             show this help\n"
	"\n"
	"Exit status: 0 when stopped (Ctrl-C, SIGTERM or --timeout), 2 on bad usage, an\n"
	"unreadable trace, or a build without the viewer.\n";

#ifdef CUSCOPE_HAVE_VIEW

#include "api.h"
#include "server.h"

/* 32 hex characters from getrandom(). */
static int make_token(char out[33])
{
	unsigned char raw[16];
	size_t got = 0;

	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

/* Wait for SIGINT or SIGTERM, or until timeout seconds passed (0 = no limit). */
static void wait_for_stop(int64_t timeout)
{
	struct timespec end, now, left;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += (time_t)timeout;
	for (;;) {
		int sig;

		if (!timeout) {
			if (sigwait(&set, &sig) == 0)
				return;
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		left.tv_sec = end.tv_sec - now.tv_sec;
		left.tv_nsec = end.tv_nsec - now.tv_nsec;
		if (left.tv_nsec < 0) {
			left.tv_sec--;
			left.tv_nsec += 1000000000L;
		}
		if (left.tv_sec < 0)
			return;
		sig = sigtimedwait(&set, NULL, &left);
		if (sig >= 0 || errno != EINTR)
			return;
	}
}

static int serve(const char *path, int64_t port, int64_t timeout)
{
	struct view_data *v = NULL;
	struct view_server *srv = NULL;
	char token[33];
	cs_error err = {0};
	sigset_t set;
	int rc, bound = 0;

	if (make_token(token)) {
		cli_error("cannot make a token: %s", strerror(errno));
		return CLI_EXIT_USAGE;
	}
	rc = view_data_load(path, &v, &err);
	if (rc < 0) {
		/* the reader's messages already say which file they could not open */
		if (!strncmp(err.msg, "cannot open ", 12))
			cli_error("%s", err.msg);
		else
			cli_error("cannot open '%s': %s", path, err.msg);
		return CLI_EXIT_USAGE;
	}
	/* the server's thread inherits the mask: only the main thread takes the signals */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	rc = view_server_start(v, (int)port, token, &srv, &bound, &err);
	if (rc < 0) {
		cli_error("%s", err.msg);
		view_data_free(v);
		return CLI_EXIT_USAGE;
	}
	printf("http://127.0.0.1:%d/?token=%s\n", bound, token);
	fflush(stdout);
	fprintf(stderr, "cuscope: serving '%s'; Ctrl-C to stop\n", path);
	wait_for_stop(timeout);
	view_server_stop(srv);
	view_data_free(v);
	return CLI_EXIT_OK;
}

#endif

int cmd_view(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"port", required_argument, NULL, 'p'},
		{"timeout", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int64_t port = 0, timeout = 0;
	const char *path;
	int c;

	cli_getopt_begin();
	while ((c = cli_getopt(argc, argv, "p:h", longopts)) != -1) {
		switch (c) {
		case 'p':
			if (cli_parse_int(argv[0], "--port", optarg, 0, 65535, &port))
				return CLI_EXIT_USAGE;
			break;
		case 't':
			if (cli_parse_int(argv[0], "--timeout", optarg, 1, 86400 * 365, &timeout))
				return CLI_EXIT_USAGE;
			break;
		case 'h':
			fputs(view_usage, stdout);
			return cli_finish_output(CLI_EXIT_OK);
		default:
			return CLI_EXIT_USAGE;
		}
	}
	path = cli_single_file(argv[0], argc, argv);
	if (!path)
		return CLI_EXIT_USAGE;
#ifdef CUSCOPE_HAVE_VIEW
	return serve(path, port, timeout);
#else
	cli_error("this build has no libmicrohttpd; view is not available");
	return CLI_EXIT_USAGE;
#endif
}
