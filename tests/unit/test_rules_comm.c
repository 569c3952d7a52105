/*
 * test_rules_comm.c - the communication rules small-allreduce-buckets and gather-list-cat on
 * multi-rank traces written here with the trace writer. Each rank runs the same step: compute
 * kernels on one stream, NCCL kernels on another; the NCCL kernels of a collective run at the
 * same time on every rank. The positives: gradients all-reduced one small piece at a time after
 * the backward pass; an all-gather into a list (copy-out of each rank's part, then a cat kernel).
 * The negatives that look like them: the same gradients in a few large buckets, many DDP buckets
 * of equal size that each take longer than any latency, small all-reduces beside the backward
 * compute, an all-gather into one tensor, and a cat that runs long after an all-gather on other
 * data.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/analyze.h"
#include "testutil.h"

#define US     1000LL
#define MS     1000000LL
#define MAXR   4
#define MAXAR  128
#define STEPS  20
#define WARMUP 2

static char *tmp_dir;

/* What every rank does in a step. */
struct job {
	int nranks;
	int64_t compute;   /* GPU time of the 10 compute kernels per step */
	int nar;	   /* all-reduces per step */
	int64_t ar[MAXAR]; /* their kernel times */
	int overlap;	   /* the all-reduces run beside the compute (DDP buckets) */
	int gather;	   /* an all-gather per step, after the first 5 compute kernels */
	int64_t gather_ns; /* its kernel time */
	int copies;	   /* device-to-device copies on the NCCL stream after it */
	int64_t copy_ns;   /* each */
	int cat;	   /* a cat kernel after the all-gather */
	int cat_after;	   /* compute kernels launched between the all-gather and the cat */
	int64_t cat_ns;	   /* its kernel time */
	int gather_every;  /* the all-gather in one of this many steps (0: every step) */
};

struct rank {
	cs_trace_writer *w;
	uint32_t pid;
	uint64_t *corr;
	int64_t h;     /* host clock */
	int64_t g[32]; /* per stream: end of its GPU work */
	int64_t compute, nccl, gather, cat, step;
};

static uint32_t rnd_state;
static int64_t jitter(int64_t v)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return v + (int64_t)((double)v * (((rnd_state >> 16) % 1001) / 1000.0 - 0.5) * 0.06);
}

/* Launch a kernel of dur on stream, not before after; returns its end. */
static int64_t kernel(struct rank *r, int stream, int64_t name, int64_t dur, int64_t after)
{
	cs_kernel k;

	memset(&k, 0, sizeof(k));
	k.launch_start = r->h;
	k.launch_end = r->h + 2 * US;
	k.start = r->h + 5 * US;
	if (k.start < r->g[stream])
		k.start = r->g[stream];
	if (k.start < after)
		k.start = after;
	k.end = k.start + dur;
	k.queued = k.submitted = CS_TS_UNKNOWN;
	k.pid = r->pid;
	k.launch_tid = r->pid;
	k.launch_cbid = CS_ID_NONE;
	k.stream_id = (uint32_t)stream;
	k.correlation_id = ++*r->corr;
	k.grid_x = 64;
	k.grid_y = k.grid_z = 1;
	k.block_x = 256;
	k.block_y = k.block_z = 1;
	k.graph_id = k.graph_node_id = CS_ID_NONE;
	k.name_id = name;
	k.stack_id = CS_ID_NONE;
	ck_assert_int_eq(cs_writer_add_kernel(r->w, &k), 0);
	r->g[stream] = k.end;
	r->h += 3 * US;
	return k.end;
}

static void copy_dtod(struct rank *r, int stream, int64_t dur)
{
	cs_memcpy c;

	memset(&c, 0, sizeof(c));
	c.launch_start = r->h;
	c.launch_end = r->h + 2 * US;
	c.start = r->h + 5 * US > r->g[stream] ? r->h + 5 * US : r->g[stream];
	c.end = c.start + dur;
	c.pid = r->pid;
	c.launch_tid = r->pid;
	c.launch_cbid = CS_ID_NONE;
	c.stream_id = (uint32_t)stream;
	c.correlation_id = ++*r->corr;
	c.copy_kind = CS_COPY_DTOD;
	c.src_kind = c.dst_kind = CS_MEM_DEVICE;
	c.is_async = 1;
	c.src_device_id = c.dst_device_id = CS_ID_NONE;
	c.bytes = 8 << 20;
	c.graph_id = c.graph_node_id = CS_ID_NONE;
	c.stack_id = CS_ID_NONE;
	ck_assert_int_eq(cs_writer_add_memcpy(r->w, &c), 0);
	r->g[stream] = c.end;
	r->h += 3 * US;
}

/* One step of one rank from host time t; returns the end of its GPU work. */
static int64_t step(struct rank *r, const struct job *j, int s, int64_t t)
{
	int64_t c = j->compute / 10, end = 0, cstart;
	int gather = j->gather && (j->gather_every == 0 || s % j->gather_every == 0);

	r->h = t;
	cstart = r->h + 5 * US;
	for (int k = 0; k < 10; k++) {
		kernel(r, 7, r->compute, jitter(c), 0);
		if (k == 4 && gather) {
			int64_t ge = kernel(r, 20, r->gather, jitter(j->gather_ns), r->g[7]);

			for (int i = 0; i < j->copies; i++)
				copy_dtod(r, 20, j->copy_ns);
			for (int i = 0; i < j->cat_after; i++)
				kernel(r, 7, r->compute, jitter(c), 0);
			if (j->cat)
				kernel(r, 7, r->cat, j->cat_ns, r->g[20] > ge ? r->g[20] : ge);
		}
	}
	/* overlapped: the all-reduces start with the second half of the compute */
	for (int i = 0; i < j->nar; i++)
		kernel(r, 20, r->nccl, jitter(j->ar[i]),
		       j->overlap ? cstart + j->compute / 2 : r->g[7]);
	for (int st = 0; st < 32; st++)
		if (r->g[st] > end)
			end = r->g[st];
	return end;
}

/* Write the job's trace; returns its path (malloc'd). */
static char *write_job(const char *file, const struct job *j)
{
	cs_error err = {0, ""};
	cs_trace_writer *w;
	char *path = tu_path(tmp_dir, file);
	struct rank rk[MAXR];
	uint64_t corr = 0;
	int64_t t = 1 * MS, names[5];

	rnd_state = 12345;
	ck_assert_msg(cs_writer_open(path, 1, &w, &err) == 0, "writer: %s", err.msg);
	names[0] = cs_writer_intern(w, "_ZN2at6native18elementwise_kernelEv");
	names[1] = cs_writer_intern(
		w,
		"_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE");
	names[2] = cs_writer_intern(
		w, "_Z31ncclDevKernel_AllGather_RING_LL24ncclDevKernelArgsStorageILm4096EE");
	/* as CUPTI records it (PyTorch 2.11) */
	names[3] = cs_writer_intern(
		w, "_ZN2at6native40_GLOBAL__N__0f1a8107_8_Shape_cu_49f7391c35CatArrayBatchedCopy_"
		   "alignedK_contigINS1_10OpaqueTypeILj4EEEjLi1ELi128ELi1ELi16EEEvPT_NS1_"
		   "25CatArrInputTensorMetadataIS5_T0_XT2_EXT3_EEENS1_16TensorSizeStrideIS8_"
		   "Lj4EEEiS8_");
	names[4] = cs_writer_intern(w, "step");
	for (int i = 0; i < 5; i++)
		ck_assert(names[i] >= 0);
	for (int r = 0; r < j->nranks; r++) {
		cs_process p;
		cs_device d;
		char uuid[64];

		memset(&rk[r], 0, sizeof(rk[r]));
		rk[r].w = w;
		rk[r].pid = 2000 + (uint32_t)r;
		rk[r].corr = &corr;
		rk[r].compute = names[0];
		rk[r].nccl = names[1];
		rk[r].gather = names[2];
		rk[r].cat = names[3];
		rk[r].step = names[4];
		memset(&p, 0, sizeof(p));
		p.pid = rk[r].pid;
		p.start = p.end = CS_TS_UNKNOWN;
		p.rank = p.local_rank = r;
		p.world_size = j->nranks;
		p.used_cuda = 1;
		ck_assert_int_eq(cs_writer_add_process(w, &p), 0);
		memset(&d, 0, sizeof(d));
		d.pid = p.pid;
		snprintf(uuid, sizeof(uuid), "GPU-0000000%d-0000-0000-0000-000000000000", r);
		d.uuid = uuid;
		d.name = "Test GPU";
		d.total_memory = 80LL << 30;
		d.sm_count = 132;
		d.compute_major = 9;
		ck_assert_int_eq(cs_writer_add_device(w, &d), 0);
	}
	for (int s = 0; s < STEPS; s++) {
		int64_t end = 0;

		for (int r = 0; r < j->nranks; r++) {
			uint32_t saved = rnd_state;
			int64_t e;

			/* the same durations on every rank: a collective ends alike everywhere */
			rnd_state = saved;
			e = step(&rk[r], j, s, t);
			if (r + 1 < j->nranks)
				rnd_state = saved;
			if (e > end)
				end = e;
		}
		for (int r = 0; r < j->nranks; r++) {
			cs_nvtx n = tu_nvtx(rk[r].pid, names[4], t, end + 5 * US);
			/* the step ends waiting for its GPU work (a loss read back) */
			cs_sync y = tu_sync(rk[r].pid, rk[r].h, end + 3 * US);

			y.type = CS_SYNC_CONTEXT_SYNCHRONIZE;
			ck_assert_int_eq(cs_writer_add_nvtx(w, &n), 0);
			ck_assert_int_eq(cs_writer_add_sync(w, &y), 0);
		}
		t = end + 20 * US;
	}
	ck_assert_msg(cs_writer_finish(w, &err) == 0, "finish: %s", err.msg);
	return path;
}

struct result {
	cs_trace *t;
	cs_analysis a;
	cs_report_processes procs;
	cs_report rep;
};

static void analyse(struct result *res, const char *path)
{
	static const cs_analyzer *rules[4];
	cs_step_opts o = {"step", WARMUP, 0, 0};
	cs_error err = {0, ""};

	rules[0] = cs_analyzer_find("small-allreduce-buckets");
	rules[1] = cs_analyzer_find("gather-list-cat");
	rules[2] = cs_analyzer_find("comm-not-overlapped");
	rules[3] = NULL;
	ck_assert(rules[0] && rules[1] && rules[2]);
	memset(res, 0, sizeof(*res));
	ck_assert_msg(cs_trace_open(path, &res->t, &err) == 0, "%s", err.msg);
	ck_assert_msg(cs_analysis_load(res->t, &res->a, &err) == 0, "%s", err.msg);
	ck_assert_msg(cs_report_run_processes(&res->a, &o, rules, &res->procs, &res->rep, &err) ==
			      0,
		      "%s", err.msg);
}

static void release(struct result *res)
{
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

static double ev_num(const cs_report_finding *f, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(f->evidence, key);

	ck_assert_msg(cJSON_IsNumber(v), "no %s", key);
	return v->valuedouble;
}

static struct job base_job(void)
{
	struct job j;

	memset(&j, 0, sizeof(j));
	j.nranks = 2;
	j.compute = 4 * MS;
	return j;
}

/* 64 gradients all-reduced one at a time after the backward pass, 15-24 us each (a latency of
 * about 15 us): about 59 x 15 us of latency per step, exposed. */
START_TEST(test_small_allreduces)
{
	struct job j = base_job();
	struct result res;
	const cs_report_finding *f;
	char *path;

	j.nar = 64;
	for (int i = 0; i < j.nar; i++)
		j.ar[i] = 15 * US + (i % 4) * 3 * US; /* 15, 18, 21, 24 us */
	path = write_job("small_ar.db", &j);
	analyse(&res, path);
	f = finding(&res, "small-allreduce-buckets");
	ck_assert_msg(f != NULL, "no finding");
	ck_assert_int_eq(f->nprocs, 2);
	ck_assert_int_eq((int)ev_num(f, "allreduces_per_step"), 64);
	ck_assert_int_eq((int)ev_num(f, "small_per_step"), 64);
	/* the smallest all-reduce, 15 us less its 3% jitter */
	ck_assert(ev_num(f, "latency_ns") > 14 * US && ev_num(f, "latency_ns") <= 15 * US);
	/* the bandwidth part of the small ones, about 16 x (0+3+6+9) us = 288 us per step, fills
	 * 288 / (4 x 14.6) = 5 buckets (more with the jitter) */
	ck_assert(ev_num(f, "buckets_needed") >= 5 && ev_num(f, "buckets_needed") <= 8);
	/* (64 - 5..8) x ~14.6 us, all of it exposed */
	ck_assert_int_gt(f->lost_ns_per_step, 800 * US);
	ck_assert_int_lt(f->lost_ns_per_step, 900 * US);
	ck_assert_int_eq(f->nsteps, STEPS - WARMUP);
	ck_assert_int_eq(f->severity, CS_SEV_ERROR);
	ck_assert_msg(strstr(f->title, "64 NCCL all-reduces per step, 64 of them latency-bound"),
		      "%s", f->title);
	release(&res);
	free(path);
}
END_TEST

/* The same gradients in 3 buckets of about 450 us: nothing from this rule (comm-not-overlapped
 * still sees the exposed communication). */
START_TEST(test_large_buckets)
{
	struct job j = base_job();
	struct result res;
	char *path;

	j.nar = 3;
	for (int i = 0; i < j.nar; i++)
		j.ar[i] = 450 * US;
	path = write_job("large_ar.db", &j);
	analyse(&res, path);
	ck_assert_ptr_null(finding(&res, "small-allreduce-buckets"));
	ck_assert_ptr_nonnull(finding(&res, "comm-not-overlapped"));
	release(&res);
	free(path);
}
END_TEST

/* 20 DDP buckets of 25 MB, 120 us each, all alike: many, but none is a latency. */
START_TEST(test_equal_buckets)
{
	struct job j = base_job();
	struct result res;
	char *path;

	j.nar = 20;
	for (int i = 0; i < j.nar; i++)
		j.ar[i] = 120 * US;
	path = write_job("equal_ar.db", &j);
	analyse(&res, path);
	ck_assert_ptr_null(finding(&res, "small-allreduce-buckets"));
	release(&res);
	free(path);
}
END_TEST

/* The 64 small all-reduces beside the backward compute: their latency is hidden. */
START_TEST(test_small_overlapped)
{
	struct job j = base_job();
	struct result res;
	char *path;

	j.nar = 64;
	j.overlap = 1;
	for (int i = 0; i < j.nar; i++)
		j.ar[i] = 15 * US + (i % 4) * 3 * US;
	path = write_job("small_ov.db", &j);
	analyse(&res, path);
	ck_assert_ptr_null(finding(&res, "small-allreduce-buckets"));
	ck_assert_ptr_null(finding(&res, "comm-not-overlapped"));
	release(&res);
	free(path);
}
END_TEST

/* 6 small all-reduces per step: fewer than the rule's 8. */
START_TEST(test_few_small)
{
	struct job j = base_job();
	struct result res;
	char *path;

	j.nar = 6;
	for (int i = 0; i < j.nar; i++)
		j.ar[i] = 100 * US;
	j.ar[0] = 15 * US;
	path = write_job("few_ar.db", &j);
	analyse(&res, path);
	ck_assert_ptr_null(finding(&res, "small-allreduce-buckets"));
	release(&res);
	free(path);
}
END_TEST

static struct job gather_job(void)
{
	struct job j = base_job();

	j.gather = 1;
	j.gather_ns = 200 * US;
	j.copies = 2; /* one per rank */
	j.copy_ns = 40 * US;
	j.cat = 1;
	j.cat_ns = 70 * US;
	return j;
}

/* all_gather(list, x) then torch.cat(list): 2 x 40 us of copy-out and a 70 us cat per step. */
START_TEST(test_gather_list_cat)
{
	struct job j = gather_job();
	struct result res;
	const cs_report_finding *f;
	char *path = write_job("gather_cat.db", &j);

	analyse(&res, path);
	f = finding(&res, "gather-list-cat");
	ck_assert_msg(f != NULL, "no finding");
	ck_assert_int_eq(f->nprocs, 2);
	ck_assert_int_eq(f->nsteps, STEPS - WARMUP);
	/* the fix replayed: without the copy-out and the cat the GPU-bound step is their 150 us
	 * shorter. The all-gather waits for the compute on its idle stream from its early launch:
	 * that wait is not a launch's latency, and the cat's wait for the copies still decides. */
	ck_assert_int_eq(f->lost_ns_per_step, 150 * US);
	ck_assert_int_eq(f->saving_ns, 150 * US * (STEPS - WARMUP));
	ck_assert_int_eq((int)ev_num(f, "matches"), STEPS - WARMUP);
	ck_assert_int_eq((int)ev_num(f, "copy_out_copies"), 2 * (STEPS - WARMUP));
	ck_assert_int_eq((int)ev_num(f, "cat_ns"), 70 * US * (STEPS - WARMUP));
	ck_assert_int_eq(f->severity, CS_SEV_WARNING); /* 150 us of a ~4.4 ms step */
	ck_assert_msg(strstr(f->title, "each followed by 2.0 copies"), "%s", f->title);
	{
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(f->evidence, "cat_kernel");

		ck_assert(cJSON_IsString(c) && strstr(c->valuestring, "CatArrayBatchedCopy"));
	}
	release(&res);
	free(path);
}
END_TEST

/* The cat two kernels after the all-gather: still its concatenation. */
START_TEST(test_gather_cat_later)
{
	struct job j = gather_job();
	struct result res;
	char *path;

	j.cat_after = 2;
	path = write_job("gather_cat2.db", &j);
	analyse(&res, path);
	ck_assert_ptr_nonnull(finding(&res, "gather-list-cat"));
	release(&res);
	free(path);
}
END_TEST

/* all_gather_into_tensor: the all-gather and no copy-out, no cat. */
START_TEST(test_gather_into_tensor)
{
	struct job j = gather_job();
	struct result res;
	char *path;

	j.copies = 0;
	j.cat = 0;
	path = write_job("gather_tensor.db", &j);
	analyse(&res, path);
	ck_assert_ptr_null(finding(&res, "gather-list-cat"));
	release(&res);
	free(path);
}
END_TEST

/* A cat 5 kernels after the all-gather concatenates something else. */
START_TEST(test_gather_unrelated_cat)
{
	struct job j = gather_job();
	struct result res;
	char *path;

	j.copies = 0;
	j.cat_after = 4;
	path = write_job("gather_far.db", &j);
	analyse(&res, path);
	ck_assert_ptr_null(finding(&res, "gather-list-cat"));
	release(&res);
	free(path);
}
END_TEST

/* The pattern in one of 6 steps only (an evaluation gather): not a step's habit. */
START_TEST(test_gather_rare)
{
	struct job j = gather_job();
	struct result res;
	char *path;

	j.gather_every = 6;
	path = write_job("gather_rare.db", &j);
	analyse(&res, path);
	ck_assert_ptr_null(finding(&res, "gather-list-cat"));
	release(&res);
	free(path);
}
END_TEST

/* 20 DDP buckets of 120 us and the loss all-reduced for logging (8 us): one small all-reduce per
 * step, however short. */
START_TEST(test_buckets_and_loss)
{
	struct job j = base_job();
	struct result res;
	char *path;

	j.nar = 21;
	for (int i = 0; i < j.nar; i++)
		j.ar[i] = 120 * US;
	j.ar[20] = 8 * US;
	path = write_job("loss_ar.db", &j);
	analyse(&res, path);
	ck_assert_ptr_null(finding(&res, "small-allreduce-buckets"));
	release(&res);
	free(path);
}
END_TEST

/* Both rules run on the steps of one process, with no view of the other ranks: the same
 * findings for that process. */
START_TEST(test_rules_alone)
{
	struct job j = gather_job();
	struct result res;
	cs_report out = {NULL, 0, 0};
	cs_error err = {0, ""};
	char *path;

	j.nar = 64;
	for (int i = 0; i < j.nar; i++)
		j.ar[i] = 15 * US + (i % 4) * 3 * US;
	path = write_job("alone.db", &j);
	analyse(&res, path);
	{
		const cs_analyzer *two[] = {cs_analyzer_find("small-allreduce-buckets"),
					    cs_analyzer_find("gather-list-cat"), NULL};
		const cs_report_process *p = cs_report_process_find(&res.procs, 2001);

		ck_assert_ptr_nonnull(p);
		ck_assert_int_eq(cs_report_run(&res.a, &p->steps, two, &out, &err), 0);
	}
	ck_assert_int_eq(out.n, 2);
	for (int32_t i = 0; i < out.n; i++) {
		const cs_report_finding *f = finding(&res, out.v[i]->rule);

		ck_assert_uint_eq(out.v[i]->pid, 2001);
		ck_assert_ptr_nonnull(f);
		ck_assert_int_eq(out.v[i]->lost_ns_per_step, f->lost_ns_per_step);
	}
	cs_report_free(&out);
	release(&res);
	free(path);
}
END_TEST

static Suite *comm_suite(void)
{
	Suite *s = suite_create("rules_comm");
	TCase *tc = tcase_create("rules_comm");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_small_allreduces);
	tcase_add_test(tc, test_large_buckets);
	tcase_add_test(tc, test_equal_buckets);
	tcase_add_test(tc, test_small_overlapped);
	tcase_add_test(tc, test_few_small);
	tcase_add_test(tc, test_gather_list_cat);
	tcase_add_test(tc, test_gather_cat_later);
	tcase_add_test(tc, test_gather_into_tensor);
	tcase_add_test(tc, test_gather_unrelated_cat);
	tcase_add_test(tc, test_gather_rare);
	tcase_add_test(tc, test_buckets_and_loss);
	tcase_add_test(tc, test_rules_alone);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	tmp_dir = tu_tmpdir();
	sr = srunner_create(comm_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
