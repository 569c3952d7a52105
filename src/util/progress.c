/*
 * progress.c - the progress line of the long commands on a terminal (include/cuscope/progress.h).
 *
 * A thread wakes every interval, and when the work has run for the delay, rewrites one line of
 * the terminal: carriage return, the text, erase to the end of the line. The work itself only
 * stores numbers (cs_progress_set), so it pays nothing for the display and is never slowed by a
 * slow terminal.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuscope/progress.h"

struct cs_progress {
	int fd;
	int delay_ms, interval_ms;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop, shown;
	char what[96];
	int64_t done, total;
	struct timespec t0;
};

static double since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

static void write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t k = write(fd, s, n);

		if (k <= 0)
			return; /* a terminal that went away: the work goes on */
		s += k;
		n -= (size_t)k;
	}
}

/* The line for the current state (p->mu held). */
static void show(cs_progress *p)
{
	char line[192];
	int n;

	if (p->total > 0)
		n = snprintf(line, sizeof(line), "\rcuscope: %s... %d%% %.0f s\033[K", p->what,
			     (int)(p->done * 100 / p->total), since(&p->t0));
	else if (p->done > 0)
		n = snprintf(line, sizeof(line), "\rcuscope: %s... %lld %.0f s\033[K", p->what,
			     (long long)p->done, since(&p->t0));
	else
		n = snprintf(line, sizeof(line), "\rcuscope: %s... %.0f s\033[K", p->what,
			     since(&p->t0));
	if (n > 0)
		write_all(p->fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	p->shown = 1;
}

static void *run(void *arg)
{
	cs_progress *p = arg;

	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		struct timespec until;
		double elapsed = since(&p->t0);
		long wait_ms = elapsed * 1000 < p->delay_ms ? (long)(p->delay_ms - elapsed * 1000)
							    : p->interval_ms;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += wait_ms / 1000;
		until.tv_nsec += (wait_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&p->cv, &p->mu, &until);
		if (!p->stop && since(&p->t0) * 1000 >= p->delay_ms)
			show(p);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

cs_progress *cs_progress_start_fd(int fd, const char *what, int force, int delay_ms,
				  int interval_ms)
{
	cs_progress *p;

	if (!force && !isatty(fd))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->fd = fd;
	p->delay_ms = delay_ms < 0 ? 0 : delay_ms;
	p->interval_ms = interval_ms < 10 ? 10 : interval_ms;
	snprintf(p->what, sizeof(p->what), "%s", what ? what : "working");
	clock_gettime(CLOCK_MONOTONIC, &p->t0);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if (pthread_create(&p->thread, NULL, run, p)) {
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		free(p);
		return NULL;
	}
	return p;
}

cs_progress *cs_progress_start(const char *what)
{
	return cs_progress_start_fd(2, what, 0, 500, 250);
}

void cs_progress_set(cs_progress *p, int64_t done, int64_t total)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->done = done;
	p->total = total;
	pthread_mutex_unlock(&p->mu);
}

void cs_progress_phase(cs_progress *p, const char *what)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	snprintf(p->what, sizeof(p->what), "%.80s", what ? what : "working");
	p->done = p->total = 0;
	pthread_mutex_unlock(&p->mu);
}

void cs_progress_end(cs_progress *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	if (p->shown)
		write_all(p->fd, "\r\033[K", 4);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
