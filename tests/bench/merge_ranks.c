/*
 * merge_ranks.c - the simulation of docs/scale.md: generate the per-rank summaries of a large
 * data-parallel job and merge them into the cross-rank view, measuring the merge's time and peak
 * memory. Not a test.
 *
 *	merge_ranks [--ranks N] [--steps N] [--ranks-per-node N] [--straggler R] DIR
 *
 * Generation writes DIR/rank-NNNNNN.json for each rank, as a per-rank analysis would write it
 * where its trace is (format in docs/scale.md): the rank, its node, and per step its step time,
 * own time, compute, NCCL time, exposed NCCL time, host waits, GPU idle before the step, and the
 * end of the step's last collective on the node's clock. Every node's clock is off by a random
 * offset (up to +-50 ms), every rank's compute jitters by +-5%, and rank R (default N / 3) runs 8%
 * more compute per step.
 *
 * The merge runs in a child process (its peak memory is its own, from wait4): it reads and parses
 * every summary, estimates each node's clock offset against node 0 as the median over the steps of
 * the difference of their collective ends (a collective ends at one instant on every rank), finds
 * the slowest rank of each step by own time and its lag over the median of the others, and names
 * the straggler. It prints the time of the read, the estimate and the view, the peak RSS, the
 * straggler found, and the largest error of the estimated clock offsets against the generated ones.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cuscope/grow.h"

#define MS 1000000LL
#define US 1000LL

static uint64_t rng = 88172645463325252ULL;

static double urand(void) /* 0..1 */
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / (double)(1ULL << 53);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int64_t *offsets_of(int nodes)
{
	int64_t *off = calloc((size_t)nodes, sizeof(*off));

	for (int k = 1; off && k < nodes; k++)
		off[k] = (int64_t)((urand() - 0.5) * 100 * MS);
	return off;
}

static int add_array(cJSON *o, const char *key, const int64_t *v, int n)
{
	cJSON *a = cJSON_AddArrayToObject(o, key);

	for (int i = 0; a && i < n; i++)
		if (!cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[i])))
			return -1;
	return a ? 0 : -1;
}

/* Write the summaries; the true offsets are kept in *offsets (per node). */
static int generate(const char *dir, int ranks, int steps, int per_node, int straggler,
		    int64_t **offsets, int64_t *bytes)
{
	int nodes = (ranks + per_node - 1) / per_node;
	int64_t *own = malloc((size_t)ranks * (size_t)steps * sizeof(*own));
	int64_t *comp = malloc((size_t)ranks * (size_t)steps * sizeof(*comp));
	int64_t *end = malloc((size_t)steps * sizeof(*end));
	int64_t *col[8];
	int rc = 0;

	*offsets = offsets_of(nodes);
	for (int c = 0; c < 8; c++)
		col[c] = malloc((size_t)steps * sizeof(int64_t));
	if (!own || !comp || !end || !*offsets)
		return -1;
	/* the job: every step ends when its slowest rank's all-reduce ends */
	{
		int64_t t = 0;

		for (int s = 0; s < steps; s++) {
			int64_t slow = 0;

			for (int r = 0; r < ranks; r++) {
				int64_t c = (int64_t)(40 * MS * (1.0 + 0.1 * (urand() - 0.5)));

				if (r == straggler)
					c = c * 108 / 100;
				comp[(size_t)r * steps + s] = c;
				own[(size_t)r * steps + s] = c + 200 * US;
				if (c > slow)
					slow = c;
			}
			t += slow + 200 * US + 3 * MS; /* + the all-reduce's own transfer */
			end[s] = t;
		}
	}
	*bytes = 0;
	for (int r = 0; r < ranks && rc == 0; r++) {
		cJSON *o = cJSON_CreateObject(), *st;
		char path[4096], *text;
		FILE *f;
		int node = r / per_node;

		if (!o)
			return -1;
		cJSON_AddNumberToObject(o, "version", 1);
		cJSON_AddNumberToObject(o, "rank", r);
		cJSON_AddNumberToObject(o, "local_rank", r % per_node);
		cJSON_AddNumberToObject(o, "node", node);
		cJSON_AddNumberToObject(o, "pid", 10000 + r);
		cJSON_AddNumberToObject(o, "warmup", 2);
		st = cJSON_AddObjectToObject(o, "steps");
		for (int s = 0; s < steps; s++) {
			int64_t c = comp[(size_t)r * steps + s], slow_wait;
			int64_t step = s > 0 ? end[s] - end[s - 1] : end[0];

			slow_wait = step - own[(size_t)r * steps + s] - 3 * MS;
			col[0][s] = step;
			col[1][s] = own[(size_t)r * steps + s];
			col[2][s] = c;
			col[3][s] = 3 * MS + slow_wait + 200 * US; /* NCCL kernel time */
			col[4][s] = 3 * MS + slow_wait;		   /* of it exposed */
			col[5][s] = 0;
			col[6][s] = 30 * US;
			/* the collective's end on this node's clock, with 2 us of skew per rank */
			col[7][s] = end[s] + (*offsets)[node] + (int64_t)(urand() * 2 * US);
		}
		rc |= add_array(st, "time_ns", col[0], steps);
		rc |= add_array(st, "own_ns", col[1], steps);
		rc |= add_array(st, "compute_ns", col[2], steps);
		rc |= add_array(st, "comm_ns", col[3], steps);
		rc |= add_array(st, "comm_exposed_ns", col[4], steps);
		rc |= add_array(st, "host_wait_ns", col[5], steps);
		rc |= add_array(st, "idle_before_ns", col[6], steps);
		rc |= add_array(st, "collective_end_ns", col[7], steps);
		text = cJSON_PrintUnformatted(o);
		cJSON_Delete(o);
		snprintf(path, sizeof(path), "%s/rank-%06d.json", dir, r);
		f = fopen(path, "w");
		if (!text || !f || fputs(text, f) < 0)
			rc = -1;
		if (text)
			*bytes += (int64_t)strlen(text);
		if (f && fclose(f))
			rc = -1;
		free(text);
	}
	for (int c = 0; c < 8; c++)
		free(col[c]);
	free(own);
	free(comp);
	free(end);
	return rc;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int64_t median(int64_t *v, int n)
{
	if (n <= 0)
		return 0;
	cs_sort(v, (size_t)n, sizeof(*v), cmp_i64);
	return v[n / 2];
}

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n)
		buf[n] = 0;
	else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* The merge (in the child): what it keeps is per rank and step: own time and collective end. */
static int merge(const char *dir, int ranks, int steps, int per_node, const int64_t *true_off)
{
	int nodes = (ranks + per_node - 1) / per_node;
	int64_t *own = malloc((size_t)ranks * (size_t)steps * sizeof(*own));
	int64_t *cend = malloc((size_t)ranks * (size_t)steps * sizeof(*cend));
	int *node_of = malloc((size_t)ranks * sizeof(*node_of));
	int64_t *tmp = malloc((size_t)(ranks > steps ? ranks : steps) * sizeof(*tmp));
	int64_t *off = calloc((size_t)nodes, sizeof(*off));
	int *slowest = calloc((size_t)ranks, sizeof(*slowest));
	int64_t max_err = 0, lag_sum = 0;
	int warmup = 0, best = 0;
	double t0 = now_s(), t1, t2, t3;

	if (!own || !cend || !node_of || !tmp || !off || !slowest)
		return 1;
	for (int r = 0; r < ranks; r++) {
		char path[4096], *text;
		cJSON *o, *st, *a, *b;
		int rank;

		snprintf(path, sizeof(path), "%s/rank-%06d.json", dir, r);
		text = read_all(path);
		o = text ? cJSON_Parse(text) : NULL;
		free(text);
		if (!o) {
			fprintf(stderr, "merge_ranks: cannot read '%s'\n", path);
			return 1;
		}
		rank = cJSON_GetObjectItem(o, "rank")->valueint;
		node_of[rank] = cJSON_GetObjectItem(o, "node")->valueint;
		warmup = cJSON_GetObjectItem(o, "warmup")->valueint;
		st = cJSON_GetObjectItem(o, "steps");
		a = cJSON_GetObjectItem(st, "own_ns");
		b = cJSON_GetObjectItem(st, "collective_end_ns");
		for (int s = 0; s < steps; s++) {
			own[(size_t)rank * steps + s] =
				(int64_t)cJSON_GetArrayItem(a, s)->valuedouble;
			cend[(size_t)rank * steps + s] =
				(int64_t)cJSON_GetArrayItem(b, s)->valuedouble;
		}
		cJSON_Delete(o);
	}
	t1 = now_s();
	/* clock offsets: node k's first rank against rank 0, median over the steps */
	for (int k = 1; k < nodes; k++) {
		int r = k * per_node;

		for (int s = 0; s < steps; s++)
			tmp[s] = cend[(size_t)r * steps + s] - cend[s];
		off[k] = median(tmp, steps);
		if (llabs(off[k] - true_off[k]) > max_err)
			max_err = llabs(off[k] - true_off[k]);
	}
	t2 = now_s();
	/* the view: the slowest rank of each steady step by own time, its lag over the others */
	for (int s = warmup; s < steps; s++) {
		int slow = 0;

		for (int r = 0; r < ranks; r++) {
			tmp[r] = own[(size_t)r * steps + s];
			if (tmp[r] > tmp[slow])
				slow = r;
		}
		slowest[slow]++;
		{
			int64_t mx = tmp[slow];

			lag_sum += mx - median(tmp, ranks);
		}
	}
	for (int r = 0; r < ranks; r++)
		if (slowest[r] > slowest[best])
			best = r;
	t3 = now_s();
	printf("merge: read and parsed %d summaries in %.3f s, clock offsets of %d nodes in %.4f s "
	       "(largest error %" PRId64 " ns), view of %d steady steps in %.3f s; total %.3f s\n",
	       ranks, t1 - t0, nodes, t2 - t1, max_err, steps - warmup, t3 - t2, t3 - t0);
	printf("straggler: rank %d, the slowest in %d of %d steady steps, mean lag over the median "
	       "%.2f ms\n",
	       best, slowest[best], steps - warmup,
	       (double)lag_sum / (steps - warmup) / (double)MS);
	free(own);
	free(cend);
	free(node_of);
	free(tmp);
	free(off);
	free(slowest);
	return 0;
}

int main(int argc, char **argv)
{
	int ranks = 1024, steps = 100, per_node = 8, straggler = -1;
	const char *dir = NULL;
	int64_t *true_off = NULL, bytes = 0;
	double t0;
	pid_t pid;
	int status;
	struct rusage ru;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--ranks") && i + 1 < argc)
			ranks = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--ranks-per-node") && i + 1 < argc)
			per_node = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--straggler") && i + 1 < argc)
			straggler = atoi(argv[++i]);
		else if (argv[i][0] != '-' && !dir)
			dir = argv[i];
		else {
			fprintf(stderr, "usage: merge_ranks [--ranks N] [--steps N] "
					"[--ranks-per-node N] [--straggler R] DIR\n");
			return 2;
		}
	}
	if (!dir || ranks < 2 || steps < 3 || per_node < 1) {
		fprintf(stderr, "merge_ranks: need DIR, --ranks >= 2, --steps >= 3\n");
		return 2;
	}
	if (straggler < 0)
		straggler = ranks / 3;
	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "merge_ranks: cannot make '%s': %s\n", dir, strerror(errno));
		return 2;
	}
	t0 = now_s();
	if (generate(dir, ranks, steps, per_node, straggler, &true_off, &bytes)) {
		fprintf(stderr, "merge_ranks: cannot write the summaries in '%s'\n", dir);
		return 1;
	}
	printf("generated %d summaries of %d steps (%.1f KB each, %.1f MB in all) in %.2f s; "
	       "rank %d runs 8%% more compute\n",
	       ranks, steps, (double)bytes / ranks / 1024.0, (double)bytes / 1048576.0,
	       now_s() - t0, straggler);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int rc = merge(dir, ranks, steps, per_node, true_off);

		fflush(stdout);
		_exit(rc);
	}
	if (pid < 0 || wait4(pid, &status, 0, &ru) < 0) {
		fprintf(stderr, "merge_ranks: cannot run the merge\n");
		return 1;
	}
	printf("merge: peak RSS %.1f MB\n", (double)ru.ru_maxrss / 1024.0);
	free(true_off);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
