/*
 * test_ranks.c - the cross-rank view and the rank-straggler and comm-not-overlapped rules on
 * multi-rank traces written here with the trace writer: ranks that meet in one NCCL all-reduce
 * per step (its kernel on every rank ends when the last rank has arrived, plus the transfer), a
 * rank with more compute, a rank whose GPU idles before each step, a rank with a longer host
 * wait; and the negatives that look like them: ranks of equal speed with jitter, a rank slower
 * only in the warm-up steps, two ranks time-sharing one GPU, processes that never communicate,
 * and an all-reduce that runs beside the backward compute.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/analyze.h"
#include "cuscope/ranks.h"
#include "testutil.h"

#define US     1000LL
#define MS     1000000LL
#define MAXR   4
#define STEPS  20
#define WARMUP 2

static char *tmp_dir;

/* What each rank does per step. */
struct job {
	int nranks;
	int64_t compute[MAXR];	    /* GPU time of its 10 compute kernels per step */
	int64_t gap[MAXR];	    /* GPU idle before its step (host late to launch) */
	int64_t host_wait[MAXR];    /* a host wait (synchronize) before the step's launches */
	int64_t warmup_extra[MAXR]; /* extra compute in the warm-up steps only */
	int jitter;		    /* pseudo-random +-5% on compute */
	int overlap;		    /* the all-reduce runs beside the second half of the compute */
	int shared_gpu;		    /* every rank on the same GPU UUID */
	int no_comm;		    /* no NCCL kernels at all */
	int64_t transfer;	    /* the all-reduce's own time */
};

struct writer {
	cs_trace_writer *w;
	uint64_t corr;
	int64_t name_compute, name_nccl, name_step;
};

static int64_t intern(struct writer *x, const char *s)
{
	int64_t id = cs_writer_intern(x->w, s);

	ck_assert(id >= 0);
	return id;
}

static void kernel(struct writer *x, uint32_t pid, int stream, int64_t name, int64_t launch,
		   int64_t start, int64_t end)
{
	cs_kernel k;

	memset(&k, 0, sizeof(k));
	k.launch_start = launch;
	k.launch_end = launch + 2 * US;
	k.start = start;
	k.end = end;
	k.queued = k.submitted = CS_TS_UNKNOWN;
	k.pid = pid;
	k.launch_tid = pid;
	k.launch_cbid = CS_ID_NONE;
	k.stream_id = (uint32_t)stream;
	k.correlation_id = ++x->corr;
	k.grid_x = 64;
	k.grid_y = k.grid_z = 1;
	k.block_x = 256;
	k.block_y = k.block_z = 1;
	k.graph_id = k.graph_node_id = CS_ID_NONE;
	k.name_id = name;
	k.stack_id = CS_ID_NONE;
	ck_assert_int_eq(cs_writer_add_kernel(x->w, &k), 0);
}

static uint32_t rnd_state = 12345;
static int64_t jitter(int64_t v)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return v + (int64_t)((double)v * (((rnd_state >> 16) % 1001) / 1000.0 - 0.5) * 0.1);
}

/* Write the job's trace; returns its path (malloc'd). */
static char *write_job(const char *file, const struct job *j)
{
	struct writer x;
	cs_error err = {0, ""};
	char *path = tu_path(tmp_dir, file);
	int64_t t = 1 * MS;

	memset(&x, 0, sizeof(x));
	rnd_state = 12345;
	ck_assert_msg(cs_writer_open(path, 1, &x.w, &err) == 0, "writer: %s", err.msg);
	x.name_compute = intern(&x, "_ZN2at6native18elementwise_kernelEv");
	x.name_nccl = intern(
		&x,
		"_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE");
	x.name_step = intern(&x, "step");
	for (int r = 0; r < j->nranks; r++) {
		cs_process p;
		cs_device d;
		char uuid[64];

		memset(&p, 0, sizeof(p));
		p.pid = 1000 + (uint32_t)r;
		p.start = p.end = CS_TS_UNKNOWN;
		p.rank = p.local_rank = r;
		p.world_size = j->nranks;
		p.used_cuda = 1;
		ck_assert_int_eq(cs_writer_add_process(x.w, &p), 0);
		memset(&d, 0, sizeof(d));
		d.pid = p.pid;
		snprintf(uuid, sizeof(uuid), "GPU-0000000%d-0000-0000-0000-000000000000",
			 j->shared_gpu ? 0 : r);
		d.uuid = uuid;
		d.name = "Test GPU";
		d.total_memory = 80LL << 30;
		d.sm_count = 132;
		d.compute_major = 9;
		ck_assert_int_eq(cs_writer_add_device(x.w, &d), 0);
	}
	for (int s = 0; s < STEPS; s++) {
		int64_t arrive[MAXR], launch_end[MAXR], last = 0, maxg = 0, end;

		for (int r = 0; r < j->nranks; r++) {
			uint32_t pid = 1000 + (uint32_t)r;
			int64_t h = t, g, c = j->compute[r] / 10;

			if (s < WARMUP)
				c += j->warmup_extra[r] / 10;
			if (j->host_wait[r]) {
				cs_sync y;

				memset(&y, 0, sizeof(y));
				y.start = h + 1 * US;
				y.end = h + 1 * US + j->host_wait[r];
				y.pid = pid;
				y.tid = pid;
				y.stream_id = CS_ID_NONE;
				y.event_id = CS_ID_NONE;
				y.type = CS_SYNC_CONTEXT_SYNCHRONIZE;
				y.cbid = CS_ID_NONE;
				y.api_kind = CS_API_RUNTIME;
				y.stack_id = CS_ID_NONE;
				ck_assert_int_eq(cs_writer_add_sync(x.w, &y), 0);
				h = y.end;
			}
			h += j->gap[r];
			g = h + 10 * US;
			for (int k = 0; k < 10; k++) {
				int64_t dur = j->jitter ? jitter(c) : c;

				if (j->shared_gpu && r == 1)
					dur += c / 3; /* delayed by the other process on the GPU */
				kernel(&x, pid, 7, x.name_compute, h, g, g + dur);
				h += 3 * US;
				g += dur + 1 * US;
			}
			arrive[r] = j->overlap ? g - (g - t) / 2 : g;
			if (g > maxg)
				maxg = g;
			launch_end[r] = h;
			if (arrive[r] > last)
				last = arrive[r];
		}
		/* the all-reduce ends on every rank when the last one arrived, plus the transfer;
		 * overlapped (the buckets of a backward pass), its last bucket goes after the
		 * slowest rank's compute */
		end = last + j->transfer;
		if (j->overlap && maxg + 50 * US > end)
			end = maxg + 50 * US;
		for (int r = 0; r < j->nranks && !j->no_comm; r++)
			kernel(&x, 1000 + (uint32_t)r, 20, x.name_nccl, launch_end[r], arrive[r],
			       end);
		for (int r = 0; r < j->nranks; r++) {
			cs_nvtx n = tu_nvtx(1000 + (uint32_t)r, x.name_step, t, end + 5 * US);

			ck_assert_int_eq(cs_writer_add_nvtx(x.w, &n), 0);
		}
		t = end + 20 * US;
	}
	ck_assert_msg(cs_writer_finish(x.w, &err) == 0, "finish: %s", err.msg);
	return path;
}

struct result {
	cs_trace *t;
	cs_analysis a;
	cs_report_processes procs;
	cs_report rep;
	cs_rank_view view;
};

static void analyse(struct result *res, const char *path)
{
	static const cs_analyzer *rules[3];
	cs_step_opts o = {"step", WARMUP, 0, 0};
	cs_error err = {0, ""};

	rules[0] = cs_analyzer_find("rank-straggler");
	rules[1] = cs_analyzer_find("comm-not-overlapped");
	rules[2] = NULL;
	ck_assert(rules[0] && rules[1]);
	memset(res, 0, sizeof(*res));
	ck_assert_msg(cs_trace_open(path, &res->t, &err) == 0, "%s", err.msg);
	ck_assert_msg(cs_analysis_load(res->t, &res->a, &err) == 0, "%s", err.msg);
	ck_assert_msg(cs_report_run_processes(&res->a, &o, rules, &res->procs, &res->rep, &err) ==
			      0,
		      "%s", err.msg);
	ck_assert_msg(cs_rank_view_build(&res->a, &res->procs, &res->view, &err) == 0, "%s",
		      err.msg);
}

static void release(struct result *res)
{
	cs_rank_view_free(&res->view);
	cs_report_free(&res->rep);
	cs_report_processes_free(&res->procs);
	cs_analysis_free(&res->a);
	cs_trace_close(res->t);
}

static const cs_report_finding *finding(const struct result *res, const char *rule)
{
	for (int32_t i = 0; i < res->rep.n; i++)
		if (!strcmp(res->rep.v[i]->rule, rule))
			return res->rep.v[i];
	return NULL;
}

static const char *ev_str(const cs_report_finding *f, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(f->evidence, key);

	ck_assert_msg(cJSON_IsString(v), "no %s", key);
	return v->valuestring;
}

static double ev_num(const cs_report_finding *f, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(f->evidence, key);

	ck_assert_msg(cJSON_IsNumber(v), "no %s", key);
	return v->valuedouble;
}

static struct job base_job(int nranks)
{
	struct job j;

	memset(&j, 0, sizeof(j));
	j.nranks = nranks;
	for (int r = 0; r < nranks; r++)
		j.compute[r] = 4 * MS;
	j.transfer = 300 * US;
	j.jitter = 1;
	j.overlap = 1;
	return j;
}

START_TEST(test_nccl_names)
{
	ck_assert(cs_is_nccl_kernel(
		"_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE"));
	ck_assert(cs_is_nccl_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"));
	ck_assert(cs_is_nccl_kernel(
		"void ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"));
	ck_assert(!cs_is_nccl_kernel("_ZN2at6native18elementwise_kernelEv"));
	ck_assert(!cs_is_nccl_kernel("my_ncclKernel_copy"));
	ck_assert(!cs_is_nccl_kernel(NULL));
}
END_TEST

/* Rank 2 of 4 runs 25% more compute: the others wait for it in the all-reduce. */
START_TEST(test_straggler_compute)
{
	struct job j = base_job(4);
	struct result res;
	const cs_report_finding *f;
	char *path;
	int32_t slow2 = 0, steady = 0;

	j.compute[2] = 5 * MS;
	path = write_job("straggler_compute.db", &j);
	analyse(&res, path);
	ck_assert_int_eq(res.view.n, 4);
	ck_assert_int_eq(res.view.nrows, STEPS);
	for (int32_t i = 0; i < res.view.nrows; i++)
		if (res.view.rows[i].steady) {
			steady++;
			slow2 += res.view.rows[i].slowest == 2;
			/* the fast ranks wait about 1 ms in their all-reduce: it is exposed */
			ck_assert_int_gt(res.view.v[0].m[i].comm_exposed_ns, 800 * US);
			ck_assert_int_lt(res.view.v[2].m[i].comm_exposed_ns, 400 * US);
		}
	ck_assert_int_eq(steady, STEPS - WARMUP);
	ck_assert_int_eq(slow2, steady);
	f = finding(&res, "rank-straggler");
	ck_assert_msg(f != NULL, "no straggler");
	ck_assert_uint_eq(f->pid, 1002);
	ck_assert_int_eq((int)ev_num(f, "rank"), 2);
	ck_assert_str_eq(ev_str(f, "cause"), "compute");
	/* about 1 ms behind (the extra compute), within its jitter */
	ck_assert_int_gt(f->lost_ns_per_step, 800 * US);
	ck_assert_int_lt(f->lost_ns_per_step, 1200 * US);
	ck_assert_int_eq(f->nsteps, STEPS - WARMUP);
	ck_assert_msg(strstr(f->title, "rank 2 is the slowest in 18 of 18 steps"), "%s", f->title);
	/* the waiting is the straggler's, not a communication that could overlap */
	ck_assert_ptr_null(finding(&res, "comm-not-overlapped"));
	release(&res);
	free(path);
}
END_TEST

/* Rank 1's GPU idles 1.5 ms before each step (its host is late). */
START_TEST(test_straggler_idle_before)
{
	struct job j = base_job(2);
	struct result res;
	const cs_report_finding *f;
	char *path;

	j.gap[1] = 1500 * US;
	path = write_job("straggler_gap.db", &j);
	analyse(&res, path);
	f = finding(&res, "rank-straggler");
	ck_assert_msg(f != NULL, "no straggler");
	ck_assert_uint_eq(f->pid, 1001);
	ck_assert_str_eq(ev_str(f, "cause"), "idle_before_step");
	ck_assert_int_gt(f->lost_ns_per_step, 1200 * US);
	release(&res);
	free(path);
}
END_TEST

/* Rank 0 waits 1 ms on the host (a synchronize for logging) before each step. */
START_TEST(test_straggler_host_wait)
{
	struct job j = base_job(2);
	struct result res;
	const cs_report_finding *f;
	char *path;

	j.host_wait[0] = 1 * MS;
	path = write_job("straggler_wait.db", &j);
	analyse(&res, path);
	f = finding(&res, "rank-straggler");
	ck_assert_msg(f != NULL, "no straggler");
	ck_assert_uint_eq(f->pid, 1000);
	ck_assert_str_eq(ev_str(f, "cause"), "host_wait");
	release(&res);
	free(path);
}
END_TEST

/* Ranks of equal speed with 5% jitter, all-reduce beside the compute: nothing. */
START_TEST(test_equal_ranks)
{
	struct job j = base_job(4);
	struct result res;
	char *path = write_job("equal.db", &j);

	analyse(&res, path);
	ck_assert_int_eq(res.view.n, 4);
	ck_assert_int_eq(res.rep.n, 0);
	release(&res);
	free(path);
}
END_TEST

/* Rank 1 is 50% slower in the two warm-up steps only (autotuning): nothing. */
START_TEST(test_slow_in_warmup_only)
{
	struct job j = base_job(2);
	struct result res;
	char *path;

	j.warmup_extra[1] = 2 * MS;
	path = write_job("warmup_only.db", &j);
	analyse(&res, path);
	ck_assert_int_eq(res.view.rows[0].slowest, 1);
	ck_assert(!res.view.rows[0].steady);
	ck_assert_ptr_null(finding(&res, "rank-straggler"));
	release(&res);
	free(path);
}
END_TEST

/* Two ranks time-share one GPU: rank 1's kernels are stretched by the other's, which is
 * contention, not a straggler. */
START_TEST(test_shared_gpu)
{
	struct job j = base_job(2);
	struct result res;
	char *path;

	j.shared_gpu = 1;
	path = write_job("shared.db", &j);
	analyse(&res, path);
	ck_assert(res.view.v[0].shares_gpu && res.view.v[1].shares_gpu);
	ck_assert_int_eq(res.view.rows[WARMUP + 1].slowest, 1);
	ck_assert_int_eq(res.view.rows[WARMUP + 1].cause, CS_RANK_CAUSE_SHARED_GPU);
	ck_assert_ptr_null(finding(&res, "rank-straggler"));
	release(&res);
	free(path);
}
END_TEST

/* Two processes with different work that never communicate: no one waits, no view. */
START_TEST(test_no_comm)
{
	struct job j = base_job(2);
	struct result res;
	char *path;

	j.no_comm = 1;
	j.compute[1] = 6 * MS;
	path = write_job("no_comm.db", &j);
	analyse(&res, path);
	ck_assert_int_eq(res.view.n, 0);
	ck_assert_int_eq(res.rep.n, 0);
	release(&res);
	free(path);
}
END_TEST

/* The all-reduce after the compute, 1.2 ms of 5 ms: exposed on every rank. */
START_TEST(test_comm_not_overlapped)
{
	struct job j = base_job(2);
	struct result res;
	const cs_report_finding *f;
	char *path;

	j.overlap = 0;
	j.transfer = 1200 * US;
	path = write_job("not_overlapped.db", &j);
	analyse(&res, path);
	f = finding(&res, "comm-not-overlapped");
	ck_assert_msg(f != NULL, "no finding");
	ck_assert_int_eq(f->nprocs, 2); /* the same finding on both ranks */
	ck_assert(ev_num(f, "overlapped_share") < 0.01);
	ck_assert_int_gt(f->lost_ns_per_step, 1000 * US);
	ck_assert_int_lt(f->lost_ns_per_step, 1500 * US);
	ck_assert_int_eq(f->severity, CS_SEV_ERROR);
	ck_assert_ptr_null(finding(&res, "rank-straggler"));
	for (int32_t i = WARMUP; i < res.view.nrows; i++)
		ck_assert_int_eq(res.view.v[0].m[i].comm_overlap_ns, 0);
	release(&res);
	free(path);
}
END_TEST

/* The same all-reduce beside the second half of the compute: overlapped, nothing. */
START_TEST(test_comm_overlapped)
{
	struct job j = base_job(2);
	struct result res;
	char *path;

	j.transfer = 0;
	path = write_job("overlapped.db", &j);
	analyse(&res, path);
	for (int32_t i = WARMUP; i < res.view.nrows; i++) {
		const cs_rank_step *m = &res.view.v[0].m[i];

		ck_assert_int_gt(m->comm_ns, 0);
		ck_assert_int_gt(m->comm_overlap_ns, m->comm_ns * 9 / 10);
	}
	ck_assert_ptr_null(finding(&res, "comm-not-overlapped"));
	release(&res);
	free(path);
}
END_TEST

/* The rule on its own (no ctx->procs) finds the steps of every process itself. */
START_TEST(test_straggler_alone)
{
	struct job j = base_job(2);
	struct result res;
	const cs_analyzer *r = cs_analyzer_find("rank-straggler");
	cs_report out = {NULL, 0, 0};
	cs_error err = {0, ""};
	char *path;

	j.compute[1] = 5 * MS;
	path = write_job("alone.db", &j);
	analyse(&res, path);
	{
		const cs_analyzer *one[] = {r, NULL};
		const cs_report_process *p = cs_report_process_find(&res.procs, 1001);

		ck_assert_ptr_nonnull(p);
		ck_assert_int_eq(cs_report_run(&res.a, &p->steps, one, &out, &err), 0);
	}
	ck_assert_int_eq(out.n, 1);
	ck_assert_uint_eq(out.v[0]->pid, 1001);
	cs_report_free(&out);
	release(&res);
	free(path);
}
END_TEST

/* The report's cross-rank section in text (-v: the steps too), JSON and markdown. */
START_TEST(test_report_sections)
{
	struct job j = base_job(2);
	char *path;
	const char *ta[] = {NULL, "report",  "-v",  "--step-range", "step", "--warmup",
			    "2",  "--width", "200", NULL,	    NULL};
	const char *ja[] = {NULL,   "report",	"-f", "json", "--step-range",
			    "step", "--warmup", "2",  NULL,   NULL};
	const char *ma[] = {NULL,   "report",	"-f", "markdown", "--step-range",
			    "step", "--warmup", "2",  NULL,	  NULL};
	struct tu_result t, js, md;
	cJSON *doc, *rk, *sg, *steps;

	j.compute[1] = 5 * MS;
	path = write_job("report.db", &j);
	ta[9] = ja[8] = ma[8] = path;
	t = tu_cuscope(ta);
	js = tu_cuscope(ja);
	md = tu_cuscope(ma);
	ck_assert_msg(t.rc == 0, "%s", t.err);
	ck_assert_msg(strstr(t.out, "Ranks: 2 processes that communicate (NCCL)"), "%s", t.out);
	ck_assert_msg(strstr(t.out, "rank 1 (pid 1001) is the slowest in 18 of 18 steady steps"),
		      "%s", t.out);
	ck_assert_msg(strstr(t.out, "Slowest rank per step"), "%s", t.out);
	ck_assert_msg(strstr(t.out, "rank-straggler"), "%s", t.out);
	ck_assert_msg(js.rc == 0, "%s", js.err);
	doc = cJSON_Parse(js.out);
	ck_assert_ptr_nonnull(doc);
	rk = cJSON_GetObjectItem(doc, "ranks");
	ck_assert(cJSON_IsObject(rk));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(rk, "ranks")), 2);
	steps = cJSON_GetObjectItem(rk, "steps");
	ck_assert_int_eq(cJSON_GetArraySize(steps), STEPS);
	ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(steps, 5), "slowest_pid")->valueint,
			 1001);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(steps, 5), "cause")->valuestring,
			 "compute");
	sg = cJSON_GetObjectItem(rk, "straggler");
	ck_assert(cJSON_IsObject(sg));
	ck_assert_int_eq(cJSON_GetObjectItem(sg, "pid")->valueint, 1001);
	cJSON_Delete(doc);
	ck_assert_msg(md.rc == 0, "%s", md.err);
	ck_assert_msg(strstr(md.out, "### Ranks"), "%s", md.out);
	tu_result_free(&t);
	tu_result_free(&js);
	tu_result_free(&md);
	free(path);
}
END_TEST

/* A trace of one process has no cross-rank section, and "ranks" is null in JSON. */
START_TEST(test_report_one_process)
{
	char *db = tu_path(tu_source_root(), "samples/traces/train_small.db");
	const char *ja[] = {NULL, "report", "-f", "json", db, NULL};
	const char *ta[] = {NULL, "report", db, NULL};
	struct tu_result js = tu_cuscope(ja), t = tu_cuscope(ta);
	cJSON *doc;

	ck_assert_msg(js.rc == 0, "%s", js.err);
	doc = cJSON_Parse(js.out);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(doc, "ranks")));
	cJSON_Delete(doc);
	ck_assert_msg(t.rc == 0, "%s", t.err);
	ck_assert(strstr(t.out, "Ranks:") == NULL);
	tu_result_free(&js);
	tu_result_free(&t);
	free(db);
}
END_TEST

static void assert_between(double v, double lo, double hi, const char *what)
{
	ck_assert_msg(v >= lo && v <= hi, "%s: %g not in [%g, %g]", what, v, lo, hi);
}

/* The run of a diff's JSON ("base" or "new"). */
static const cJSON *diff_run(const cJSON *doc, const char *which)
{
	const cJSON *r = cJSON_GetObjectItem(doc, which);

	ck_assert_msg(cJSON_IsObject(r), "no %s", which);
	return r;
}

/* The new - base change of the compute kernel's time per step in a diff's JSON, ns. */
static double compute_delta(const cJSON *doc)
{
	const cJSON *row;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(doc, "metrics"))
	{
		const cJSON *k = cJSON_GetObjectItem(row, "kernel");

		if (!strcmp(cJSON_GetObjectItem(row, "metric")->valuestring, "kernel_time") &&
		    cJSON_IsString(k) &&
		    !strcmp(k->valuestring, "_ZN2at6native18elementwise_kernelEv"))
			return cJSON_GetObjectItem(row, "delta")->valuedouble;
	}
	ck_abort_msg("no kernel_time row of the compute kernel");
	return 0;
}

static cJSON *diff_doc(const char *base, const char *new_, const char *rank)
{
	const char *av[] = {NULL, "diff",   "-f", "json", "--step-range", "step", "--warmup",
			    "2",  "--rank", rank, base,	  new_,		  NULL};
	struct tu_result r;
	cJSON *doc;

	if (!rank) { /* no --rank */
		av[8] = base;
		av[9] = new_;
		av[10] = NULL;
	}
	r = tu_cuscope(av);
	ck_assert_msg(r.rc == 0, "diff --rank %s: %s", rank ? rank : "(none)", r.err);
	doc = cJSON_Parse(r.out);
	ck_assert_ptr_nonnull(doc);
	tu_result_free(&r);
	return doc;
}

/*
 * diff and gate --rank N and --rank slowest: rank 0 runs 4.5 ms of compute per step in BASE and
 * 4 ms in NEW, rank 1 4 ms in BASE and 5 ms in NEW. Rank 1's compute kernel got 1 ms slower, rank
 * 0's 0.5 ms faster; the slowest rank is 0 in BASE and 1 in NEW; a rank that the trace lacks is
 * one line naming the ranks present.
 */
START_TEST(test_diff_gate_rank)
{
	struct job jb = base_job(2), jn = base_job(2);
	char *base, *new_;
	cJSON *doc;
	const cJSON *b, *n;

	jb.compute[0] = 4500 * US;
	jn.compute[1] = 5 * MS;
	base = write_job("rank_base.db", &jb);
	new_ = write_job("rank_new.db", &jn);

	doc = diff_doc(base, new_, "1");
	b = diff_run(doc, "base");
	n = diff_run(doc, "new");
	ck_assert_int_eq(cJSON_GetObjectItem(b, "rank")->valueint, 1);
	ck_assert_int_eq(cJSON_GetObjectItem(n, "rank")->valueint, 1);
	ck_assert_int_eq(cJSON_GetObjectItem(n, "pid")->valueint, 1001);
	ck_assert_str_eq(cJSON_GetObjectItem(n, "rank_select")->valuestring, "number");
	assert_between(compute_delta(doc), 800 * US, 1200 * US, "rank 1 compute change");
	cJSON_Delete(doc);

	doc = diff_doc(base, new_, "0");
	ck_assert_int_eq(cJSON_GetObjectItem(diff_run(doc, "new"), "pid")->valueint, 1000);
	assert_between(compute_delta(doc), -650 * US, -350 * US, "rank 0 compute change");
	cJSON_Delete(doc);

	doc = diff_doc(base, new_, "slowest");
	b = diff_run(doc, "base");
	n = diff_run(doc, "new");
	ck_assert_int_eq(cJSON_GetObjectItem(b, "rank")->valueint, 0);
	ck_assert_int_eq(cJSON_GetObjectItem(n, "rank")->valueint, 1);
	ck_assert_str_eq(cJSON_GetObjectItem(n, "rank_select")->valuestring, "slowest");
	cJSON_Delete(doc);

	/* without --rank: the runs say nothing of a rank */
	doc = diff_doc(base, new_, NULL);
	ck_assert_ptr_null(cJSON_GetObjectItem(diff_run(doc, "new"), "rank"));
	cJSON_Delete(doc);

	{
		const char *tv[] = {NULL,   "diff",	  "--rank", "1",  "--step-range",
				    "step", "--no-color", base,	    new_, NULL};
		const char *gv[] = {NULL,	    "gate", "-b",	  base, "--rank", "1",
				    "--step-range", "step", "--no-color", new_, NULL};
		const char *sv[] = {NULL, "gate", "-b", new_, "--rank", "slowest", new_, NULL};
		struct tu_result t = tu_cuscope(tv), g = tu_cuscope(gv), same = tu_cuscope(sv);

		ck_assert_msg(t.rc == 0, "%s", t.err);
		ck_assert_msg(strstr(t.out, "new:  ") && strstr(t.out, "(rank 1: pid 1001)"), "%s",
			      t.out);
		ck_assert_msg(g.rc == 1, "gate --rank 1: rc %d: %s%s", g.rc, g.out, g.err);
		ck_assert_msg(strstr(g.out, "(rank 1, step time "), "%s", g.out);
		/* each rank on its own GPU (its device 0, another UUID): not a shared GPU, so the
		 * slower kernel is gated */
		ck_assert_msg(!strstr(g.out, "shared GPU"), "%s", g.out);
		ck_assert_msg(same.rc == 0, "gate against itself: rc %d: %s%s", same.rc, same.out,
			      same.err);
		ck_assert_msg(strstr(same.out, "(rank 1, the slowest, step time "), "%s", same.out);
		tu_result_free(&same);
		{
			const char *mv[] = {NULL, "diff", "-f", "md", "--rank", "slowest",
					    base, new_, NULL};
			const char *bv[] = {NULL, "gate", "-b", base, "-b", base, "--rank", "0",
					    base, NULL};

			same = tu_cuscope(mv);
			ck_assert_msg(same.rc == 0, "%s", same.err);
			ck_assert_msg(strstr(same.out, "| rank 0, the slowest: ") &&
					      strstr(same.out, "| rank 1, the slowest: "),
				      "%s", same.out);
			tu_result_free(&same);
			same = tu_cuscope(bv);
			ck_assert_msg(same.rc == 0, "%s%s", same.out, same.err);
			ck_assert_msg(strstr(same.out, "base: 2 runs, ") &&
					      strstr(same.out, " (rank 0, step time "),
				      "%s", same.out);
		}
		tu_result_free(&t);
		tu_result_free(&g);
		tu_result_free(&same);
	}
	{
		const char *dv[] = {NULL, "diff", "--rank", "3", base, new_, NULL};
		const char *gv[] = {NULL, "gate", "-b", base, "--rank", "3", new_, NULL};
		const char *xv[] = {NULL, "diff", "--rank", "-1", base, new_, NULL};
		const char *yv[] = {NULL, "gate", "-b", base, "--rank", "fastest", new_, NULL};
		struct tu_result d = tu_cuscope(dv), g = tu_cuscope(gv), x = tu_cuscope(xv),
				 y = tu_cuscope(yv);
		struct tu_result *all[] = {&d, &g, &x, &y};

		ck_assert_msg(strstr(d.err, "no rank 3 (ranks 0, 1)"), "%s", d.err);
		ck_assert_msg(strstr(g.err, "no rank 3 (ranks 0, 1)"), "%s", g.err);
		ck_assert_msg(strstr(x.err, "invalid value '-1' for --rank"), "%s", x.err);
		ck_assert_msg(strstr(y.err, "invalid value 'fastest' for --rank"), "%s", y.err);
		for (int i = 0; i < 4; i++) {
			tu_assert_one_line_error(all[i], "--rank");
			tu_result_free(all[i]);
		}
	}
	free(base);
	free(new_);
}
END_TEST

/* A trace without ranks: --rank names none. */
START_TEST(test_rank_without_ranks)
{
	char *db = tu_path(tu_source_root(), "samples/traces/train_small.db");
	const char *av[] = {NULL, "diff", "--rank", "slowest", db, db, NULL};
	struct tu_result r = tu_cuscope(av);

	tu_assert_one_line_error(&r, "--rank slowest without ranks");
	ck_assert_msg(strstr(r.err, "no process of the trace has a rank"), "%s", r.err);
	tu_result_free(&r);
	free(db);
}
END_TEST

static Suite *ranks_suite(void)
{
	Suite *s = suite_create("ranks");
	TCase *tc = tcase_create("ranks");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_nccl_names);
	tcase_add_test(tc, test_diff_gate_rank);
	tcase_add_test(tc, test_rank_without_ranks);
	tcase_add_test(tc, test_straggler_compute);
	tcase_add_test(tc, test_straggler_idle_before);
	tcase_add_test(tc, test_straggler_host_wait);
	tcase_add_test(tc, test_equal_ranks);
	tcase_add_test(tc, test_slow_in_warmup_only);
	tcase_add_test(tc, test_shared_gpu);
	tcase_add_test(tc, test_no_comm);
	tcase_add_test(tc, test_comm_not_overlapped);
	tcase_add_test(tc, test_comm_overlapped);
	tcase_add_test(tc, test_straggler_alone);
	tcase_add_test(tc, test_report_sections);
	tcase_add_test(tc, test_report_one_process);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	tmp_dir = tu_tmpdir();
	sr = srunner_create(ranks_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
