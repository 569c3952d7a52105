/*
 * test_rules_opt.c - the unfused-optimizer and zero-grad-memset rules: on the recorded traces of
 * samples/rules/traces and tests/data/corpus (no finding, except the per-tensor fallback of
 * launch-starvation-bad's optimizer), and on synthetic traces: a per-tensor AdamW and SGD after a
 * short GPU-bound step, the same loop queued ahead of a busy GPU, a stack of identical layers, a
 * loop of GEMMs, multi-tensor kernels, two huge tensors; a zero_grad(set_to_none=False) of fill
 * kernels, of memsets and of one multi-tensor zero kernel, fills of one size (a cache reset), three
 * fills of a loss scaler and a buffer, fills among other kernels, and a reset every tenth step.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/analyze.h"
#include "rulesim.h"
#include "testutil.h"

#define ADAMW_OPS 8
static const char *const adamw_names[ADAMW_OPS] = {
	"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BinaryFunctorIfffNS0_"
	"10MulFunctorIfEEEE",
	"_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_16lerp_kernel_scalarEv",
	"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIfffNS0_"
	"10MulFunctorIfEEEE",
	"_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_14addcmul_cuda_kernelEv",
	"_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_16sqrt_kernel_cudaEv",
	"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BinaryFunctorIfffNS0_"
	"10DivFunctorIfEEEE",
	"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13CUDAFunctorOnSelf_addIfEEEE",
	"_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_14addcdiv_cuda_kernelEv"};
static const char fill_name[] = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_"
				"11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_";
static const char gemm_name[] = "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32";
static const char foreach_name[] =
	"_ZN2at6native57_GLOBAL__N__e658eeb9_24_ForeachBinaryOpScalar_cu_86b9896c25multi_tensor_"
	"apply_"
	"kernelINS1_18TensorListMetadataILi1EEENS1_"
	"21BinaryOpScalarFunctorIfLi1ELi1ELi0EEEJSt4plusIfEfEEEvT_T0_DpT1_";
static const char zero_name[] =
	"_ZN2at6native50_GLOBAL__N__b6ca21f8_17_ForeachUnaryOp_cu_77fe623d25multi_tensor_apply_"
	"kernelINS1_"
	"18TensorListMetadataILi1EEENS1_11ZeroFunctorIfLi1ELi1ELi0EEEJEEEvT_T0_DpT1_";

/* A kernel with a grid of `grid` blocks (sim_kernel_named's are 64). */
static void kernel_grid(struct sim *m, int stream, int64_t name, int64_t dur, int grid)
{
	cs_kernel k;

	memset(&k, 0, sizeof(k));
	k.launch_start = m->h;
	k.launch_end = m->h + m->launch_ns;
	k.start = next_start(m, stream);
	k.end = k.start + dur;
	k.queued = k.submitted = CS_TS_UNKNOWN;
	k.pid = PID;
	k.launch_tid = TID;
	k.launch_cbid = CS_ID_NONE;
	k.stream_id = (uint32_t)stream;
	k.correlation_id = ++m->corr;
	k.grid_x = grid;
	k.grid_y = k.grid_z = 1;
	k.block_x = 128;
	k.block_y = k.block_z = 1;
	k.graph_id = k.graph_node_id = CS_ID_NONE;
	k.name_id = name;
	k.stack_id = CS_ID_NONE;
	ck_assert_int_eq(cs_writer_add_kernel(m->w, &k), 0);
	m->g[stream] = k.end;
	m->h = k.launch_end;
}

/* A memset of bytes on stream. */
static void sim_memset(struct sim *m, int stream, int64_t bytes, int64_t dur)
{
	cs_memset c;

	memset(&c, 0, sizeof(c));
	c.launch_start = m->h;
	c.launch_end = m->h + m->launch_ns;
	c.start = next_start(m, stream);
	c.end = c.start + dur;
	c.pid = PID;
	c.launch_tid = TID;
	c.launch_cbid = CS_ID_NONE;
	c.device_id = 0;
	c.stream_id = (uint32_t)stream;
	c.correlation_id = ++m->corr;
	c.is_async = 1;
	c.bytes = bytes;
	c.graph_id = c.graph_node_id = CS_ID_NONE;
	c.stack_id = CS_ID_NONE;
	ck_assert_int_eq(cs_writer_add_memset(m->w, &c), 0);
	m->g[stream] = c.end;
	m->h = c.launch_end;
}

/* The grid of tensor t of a model: weights (2048 blocks) and biases (2) alternate. */
static int tensor_grid(int t)
{
	return t % 2 ? 2 : 2048;
}

/* A forward and backward pass: 30 kernels of 60 us queued ahead of the GPU. */
static void compute(struct sim *m)
{
	for (int i = 0; i < 30; i++)
		sim_kernel(m, 7, 60 * US);
}

/*
 * One step: compute, then the per-tensor update of `tensors` tensors with `ops` kernels each
 * (names[op]), each kernel dur long and launched after host_ns of Python; same_size: every tensor
 * has the weights' grid.
 */
static void opt_step(struct sim *m, const int64_t *names, int ops, int tensors, int64_t dur,
		     int64_t host_ns, int same_size)
{
	sim_step_begin(m);
	compute(m);
	for (int t = 0; t < tensors; t++)
		for (int o = 0; o < ops; o++) {
			sim_host(m, host_ns);
			kernel_grid(m, 7, names[o], dur, same_size ? 2048 : tensor_grid(t));
		}
	sim_step_end(m);
}

static void adamw_ids(struct sim *m, int64_t *ids)
{
	for (int o = 0; o < ADAMW_OPS; o++)
		ids[o] = name_id(m, adamw_names[o]);
}

/* ---- unfused-optimizer ---- */

START_TEST(test_unfused_adamw)
{
	struct sim m;
	struct found f;
	struct loaded l;
	int64_t ids[ADAMW_OPS];
	const cJSON *e, *unit;

	sim_open(&m, "opt_adamw.db");
	adamw_ids(&m, ids);
	for (int s = 0; s < STEPS; s++)
		opt_step(&m, ids, ADAMW_OPS, 50, 3 * US, 6 * US, 0);
	sim_finish(&m);
	run_synthetic(&m, "unfused-optimizer", &f, &l);
	ck_assert_int_eq(f.n, 1);
	ck_assert_int_eq(f.v[0].nsteps, STEPS - 2);
	e = f.v[0].evidence;
	ck_assert_int_eq(cJSON_GetObjectItem(e, "kernels_per_tensor")->valueint, ADAMW_OPS);
	ck_assert_int_eq(cJSON_GetObjectItem(e, "tensors")->valueint, 50);
	ck_assert_int_eq(cJSON_GetObjectItem(e, "kernels_per_step")->valueint, 400);
	unit = cJSON_GetObjectItem(e, "unit");
	ck_assert_int_eq(cJSON_GetArraySize(unit), ADAMW_OPS);
	ck_assert_str_eq(cJSON_GetArrayItem(unit, 0)->valuestring, adamw_names[0]);
	/* each launch takes 6 us of host time + 1 us of call; the kernel 3 us: ~4 us idle each,
	 * 399 gaps */
	ck_assert_msg(f.v[0].lost_ns_per_step > 399 * 3 * US &&
			      f.v[0].lost_ns_per_step < 399 * 5 * US,
		      "lost %lld", (long long)f.v[0].lost_ns_per_step);
	ck_assert(cJSON_GetObjectItem(e, "launch_ns_per_step")->valuedouble > 400 * 6 * US);
	ck_assert(f.v[0].severity >= CS_SEV_WARNING);
	ck_assert(strstr(f.v[0].title, "one tensor at a time") != NULL);
	found_free(&f);
	/* not a gradient reset */
	run_rule(&l, "zero-grad-memset", &f);
	ck_assert_int_eq(f.n, 0);
	unload(&l);
	free(m.path);
}
END_TEST

/* SGD without momentum: one kernel per tensor (period 1). */
START_TEST(test_unfused_sgd_one_kernel)
{
	struct sim m;
	struct found f;
	int64_t id;

	sim_open(&m, "opt_sgd.db");
	id = name_id(&m, adamw_names[6]);
	for (int s = 0; s < STEPS; s++)
		opt_step(&m, &id, 1, 150, 3 * US, 6 * US, 0);
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "unfused-optimizer", &f), 1);
	ck_assert_int_eq(cJSON_GetObjectItem(f.v[0].evidence, "kernels_per_tensor")->valueint, 1);
	ck_assert_int_eq(cJSON_GetObjectItem(f.v[0].evidence, "tensors")->valueint, 150);
	found_free(&f);
	free(m.path);
}
END_TEST

/* Launched well ahead of a GPU that runs long kernels: no idle inside the run, nothing to gain. */
START_TEST(test_unfused_queued_ahead)
{
	struct sim m;
	struct found f;
	int64_t ids[ADAMW_OPS];

	sim_open(&m, "opt_ahead.db");
	adamw_ids(&m, ids);
	for (int s = 0; s < STEPS; s++)
		opt_step(&m, ids, ADAMW_OPS, 20, 40 * US, 2 * US, 0);
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "unfused-optimizer", &f), 0);
	free(m.path);
}
END_TEST

/* The same kernels on tensors of one size (a stack of identical layers, time steps of a cell). */
START_TEST(test_unfused_one_size)
{
	struct sim m;
	struct found f;
	int64_t ids[ADAMW_OPS];

	sim_open(&m, "opt_one_size.db");
	adamw_ids(&m, ids);
	for (int s = 0; s < STEPS; s++)
		opt_step(&m, ids, ADAMW_OPS, 50, 3 * US, 6 * US, 1);
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "unfused-optimizer", &f), 0);
	free(m.path);
}
END_TEST

/* Loops that are not a per-tensor elementwise update: GEMMs, multi-tensor kernels, two tensors. */
START_TEST(test_unfused_not_elementwise)
{
	static const char *const names[] = {gemm_name, foreach_name};

	for (int c = 0; c < 3; c++) {
		struct sim m;
		struct found f;
		int64_t ids[ADAMW_OPS], id;

		sim_open(&m, c == 0 ? "opt_gemm.db" : c == 1 ? "opt_foreach.db" : "opt_two.db");
		adamw_ids(&m, ids);
		if (c < 2)
			id = name_id(&m, names[c]);
		for (int s = 0; s < STEPS; s++) {
			if (c < 2)
				opt_step(&m, &id, 1, 40, 3 * US, 6 * US, 0);
			else
				opt_step(&m, ids, ADAMW_OPS, 2, 3 * US, 6 * US, 0);
		}
		sim_finish(&m);
		ck_assert_msg(synthetic_count(&m, "unfused-optimizer", &f) == 0, "case %d", c);
		free(m.path);
	}
}
END_TEST

/* A per-tensor loop in only some steps (with another tensor count) is not every step's. */
START_TEST(test_unfused_count_changes)
{
	struct sim m;
	struct found f;
	int64_t ids[ADAMW_OPS];

	sim_open(&m, "opt_counts.db");
	adamw_ids(&m, ids);
	for (int s = 0; s < STEPS; s++)
		opt_step(&m, ids, ADAMW_OPS, 6 + s % 7, 3 * US, 6 * US, 0);
	sim_finish(&m);
	/* no count holds in half of the steps */
	ck_assert_int_eq(synthetic_count(&m, "unfused-optimizer", &f), 0);
	free(m.path);
}
END_TEST

/* Operands of adamw_names' kernels (std::array<char*, N> in PyTorch's names). */
static const int adamw_operands[ADAMW_OPS] = {2, 3, 2, 4, 2, 2, 2, 4};

/*
 * Queued ahead of the GPU as in test_unfused_queued_ahead, but with the names PyTorch gives, which
 * tell each kernel's operands: the fused update reads and writes each tensor 7 times where the
 * unit's 8 kernels of 40 us make 21 passes; a pass is the median kernel's time over its operands
 * (20 us), so each tensor's 320 us become 140 us: 20 x 180 us a step. SGD's kernel (no Adam in
 * the unit) keeps its passes: nothing to gain when queued ahead.
 */
START_TEST(test_unfused_fused_passes)
{
	struct sim m;
	int64_t ids[ADAMW_OPS], saving;
	char name[256];

	sim_open(&m, "opt_fused.db");
	for (int o = 0; o < ADAMW_OPS; o++) {
		snprintf(name, sizeof(name), "%sSt5arrayIPcLm%dEEEEviT0_T1_", adamw_names[o],
			 adamw_operands[o]);
		ids[o] = name_id(&m, name);
	}
	for (int s = 0; s < STEPS; s++)
		opt_step(&m, ids, ADAMW_OPS, 20, 40 * US, 2 * US, 0);
	sim_finish(&m);
	saving = synthetic_saving(&m, "unfused-optimizer");
	ck_assert_msg(saving > 20 * 170 * US && saving < 20 * 190 * US, "saving %lld",
		      (long long)saving);
	free(m.path);

	sim_open(&m, "opt_fused_sgd.db");
	snprintf(name, sizeof(name), "%sSt5arrayIPcLm3EEEEviT0_T1_", adamw_names[6]);
	ids[0] = name_id(&m, name);
	for (int s = 0; s < STEPS; s++)
		opt_step(&m, ids, 1, 150, 40 * US, 2 * US, 0);
	sim_finish(&m);
	ck_assert_int_eq(synthetic_saving(&m, "unfused-optimizer"), -1);
	free(m.path);

	/* Adagrad's unit (addcmul, sqrt, add, addcdiv): no lerp and no multiply, so not Adam's; its
	 * fused=True runs on the CPU only, and queued ahead it loses nothing */
	sim_open(&m, "opt_fused_adagrad.db");
	for (int o = 0; o < 4; o++) {
		static const int adagrad[4] = {3, 4, 6, 7};

		snprintf(name, sizeof(name), "%sSt5arrayIPcLm%dEEEEviT0_T1_",
			 adamw_names[adagrad[o]], adamw_operands[adagrad[o]]);
		ids[o] = name_id(&m, name);
	}
	for (int s = 0; s < STEPS; s++)
		opt_step(&m, ids, 4, 40, 40 * US, 2 * US, 0);
	sim_finish(&m);
	ck_assert_int_eq(synthetic_saving(&m, "unfused-optimizer"), -1);
	free(m.path);
}
END_TEST

/* ---- zero-grad-memset ---- */

/* One step: the reset of `tensors` gradients (kind 0: fill kernels, 1: memsets, 2: one
 * multi-tensor zero kernel, 3: fills of one size), then compute. */
static void zero_step(struct sim *m, int kind, int tensors, int64_t fill, int64_t zero)
{
	sim_step_begin(m);
	if (kind == 2)
		kernel_grid(m, 7, zero, 30 * US, 320);
	for (int t = 0; kind != 2 && t < tensors; t++) {
		sim_host(m, 4 * US);
		if (kind == 1)
			sim_memset(m, 7, t % 2 ? 4096 : 4 * MIB, 2 * US);
		else
			kernel_grid(m, 7, fill, 2 * US, kind == 3 ? 2048 : tensor_grid(t));
	}
	compute(m);
	sim_step_end(m);
}

/* The reset of `tensors` gradients by fill kernels, 4 us of Python before each. */
static void zero_step_fills(struct sim *m, int tensors)
{
	int64_t fill = name_id(m, fill_name);

	for (int t = 0; t < tensors; t++) {
		sim_host(m, 4 * US);
		kernel_grid(m, 7, fill, 2 * US, tensor_grid(t));
	}
}

START_TEST(test_zero_grad_fills)
{
	for (int kind = 0; kind < 3; kind++) {
		struct sim m;
		struct found f;
		struct loaded l;
		const cJSON *e;

		sim_open(&m, kind == 0	 ? "zg_fill.db"
			     : kind == 1 ? "zg_memset.db"
					 : "zg_foreach.db");
		for (int s = 0; s < STEPS; s++)
			zero_step(&m, kind, 52, name_id(&m, fill_name), name_id(&m, zero_name));
		sim_finish(&m);
		run_synthetic(&m, "zero-grad-memset", &f, &l);
		ck_assert_msg(f.n == 1, "kind %d: %d findings", kind, f.n);
		ck_assert_int_eq(f.v[0].nsteps, STEPS - 2);
		e = f.v[0].evidence;
		if (kind < 2) {
			ck_assert_int_eq(cJSON_GetObjectItem(e, "writes_per_step")->valueint, 52);
			ck_assert_int_eq(cJSON_GetObjectItem(e, "memsets_per_step")->valueint,
					 kind == 1 ? 52 : 0);
			/* 52 writes of 2 us, and what idle the launches leave between them once
			 * the previous step's queue has run out */
			ck_assert_msg(f.v[0].lost_ns_per_step >= 52 * 2 * US &&
					      f.v[0].lost_ns_per_step < 52 * 2 * US + 51 * 5 * US,
				      "lost %lld", (long long)f.v[0].lost_ns_per_step);
			ck_assert(strstr(f.v[0].title, kind ? "memsets" : "fills") != NULL);
		} else {
			ck_assert_int_eq(
				cJSON_GetObjectItem(e, "foreach_zero_kernels_per_step")->valueint,
				1);
			ck_assert_int_eq(f.v[0].lost_ns_per_step, 30 * US);
			/* 30 us of a ~1.8 ms step */
			ck_assert_int_eq(f.v[0].severity, CS_SEV_INFO);
			ck_assert(strstr(f.v[0].title, "_foreach_zero_") != NULL);
		}
		ck_assert(strstr(f.v[0].fix, "set_to_none=True") != NULL);
		found_free(&f);
		/* a run of fills is not an optimizer loop */
		run_rule(&l, "unfused-optimizer", &f);
		ck_assert_int_eq(f.n, 0);
		unload(&l);
		free(m.path);
	}
}
END_TEST

/* Fills that are not a gradient reset: one size (a cache of identical buffers), three of a loss
 * scaler and a buffer, and fills among other kernels. */
START_TEST(test_zero_grad_other_fills)
{
	for (int c = 0; c < 3; c++) {
		struct sim m;
		struct found f;
		int64_t fill;

		sim_open(&m, c == 0 ? "zg_one_size.db" : c == 1 ? "zg_three.db" : "zg_mixed.db");
		fill = name_id(&m, fill_name);
		for (int s = 0; s < STEPS; s++) {
			if (c == 0) {
				zero_step(&m, 3, 24, fill, 0);
				continue;
			}
			sim_step_begin(&m);
			for (int t = 0; t < (c == 1 ? 3 : 20); t++) {
				kernel_grid(&m, 7, fill, 2 * US, tensor_grid(t));
				if (c == 2)
					sim_kernel(&m, 7, 5 * US);
			}
			compute(&m);
			sim_step_end(&m);
		}
		sim_finish(&m);
		ck_assert_msg(synthetic_count(&m, "zero-grad-memset", &f) == 0, "case %d", c);
		free(m.path);
	}
}
END_TEST

/* A reset every tenth step only (not the gradients of every step). */
START_TEST(test_zero_grad_every_tenth)
{
	struct sim m;
	struct found f;

	sim_open(&m, "zg_tenth.db");
	for (int s = 0; s < STEPS; s++) {
		if (s % 10 == 5)
			zero_step(&m, 0, 52, name_id(&m, fill_name), 0);
		else {
			sim_step_begin(&m);
			compute(&m);
			sim_step_end(&m);
		}
	}
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "zero-grad-memset", &f), 0);
	free(m.path);
}
END_TEST

/*
 * A host-bound step: the reset of 12 gradients (fills, 4 us of Python before each), then the
 * backward's 12 kernels of the same grids, each after 10 us of host work on the thread. With adds
 * (AccumulateGrad adding into the zeros) the fix also takes away each add's launch and its
 * dispatch, which the trace measures between the fills (4 us), not the rest of the host's time
 * before it (the autograd engine's walk to the node stays): more saving than with multiplies in
 * their place by 12 x (4 us + up to a 5 us launch), under the 12 x 10 us of that host time (the
 * replay keeps the GPU's gap before each kernel that is not launched: the step's last wait still
 * follows them).
 */
static int64_t accumulate_saving(const char *file, const char *backward)
{
	struct sim m;
	int64_t saving;

	sim_open(&m, file);
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		zero_step_fills(&m, 12);
		for (int t = 0; t < 12; t++) {
			sim_host(&m, 10 * US);
			kernel_grid(&m, 7, name_id(&m, backward), 2 * US, tensor_grid(t));
		}
		sim_sync(&m, CS_SYNC_CONTEXT_SYNCHRONIZE, 7, gpu_end(&m), CS_ID_NONE);
		sim_host(&m, 20 * US);
		sim_step_end(&m);
	}
	sim_finish(&m);
	saving = synthetic_saving(&m, "zero-grad-memset");
	free(m.path);
	return saving;
}

START_TEST(test_zero_grad_accumulates)
{
	static const char add[] =
		"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_"
		"addIfEESt5arrayIPcLm3EEEEviT0_T1_";
	static const char mul[] =
		"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BUnaryFunctor"
		"IfffNS0_10MulFunctorIfEEEESt5arrayIPcLm2EEEEviT0_T1_";
	int64_t with_adds = accumulate_saving("zg_adds.db", add);
	int64_t without = accumulate_saving("zg_muls.db", mul);

	ck_assert_msg(without > 11 * 4 * US, "saving without adds %lld", (long long)without);
	ck_assert_msg(with_adds - without >= 12 * 4 * US && with_adds - without <= 12 * 9 * US,
		      "with adds %lld, without %lld", (long long)with_adds, (long long)without);
}
END_TEST

/* ---- the recorded traces ---- */

static const char *const recorded[] = {
	"samples/rules/traces/clean.db",
	"samples/rules/traces/d2h-sync-bad.db",
	"samples/rules/traces/d2h-sync-fixed.db",
	"samples/rules/traces/empty-cache-in-loop-bad.db",
	"samples/rules/traces/launch-starvation-fixed.db",
	"samples/rules/traces/launch-starvation-negative_gpu_bound.db",
	"samples/rules/traces/cuda-core-scan-fixed.db",
	"samples/rules/traces/memory-ceiling-thrash-fixed.db",
	"tests/data/corpus/pt_sync_no_copy.db",
	"tests/data/corpus/pt_fraction_thrash.db",
	"tests/data/corpus/pt_event_query_spin.db",
};
#define NRECORDED ((int)(sizeof(recorded) / sizeof(recorded[0])))

/* None of these programs has a per-tensor optimizer or an in-place zero_grad. */
START_TEST(test_recorded_none)
{
	char path[4096];
	struct loaded l;
	struct found f;

	snprintf(path, sizeof(path), "%s/%s", tu_source_root(), recorded[_i]);
	load(&l, path, NULL);
	ck_assert_int_gt(cs_steps_steady(&l.s), 3);
	run_rule(&l, "unfused-optimizer", &f);
	ck_assert_msg(f.n == 0, "%s: %s", recorded[_i], f.n ? f.v[0].title : "");
	found_free(&f);
	run_rule(&l, "zero-grad-memset", &f);
	ck_assert_msg(f.n == 0, "%s: %s", recorded[_i], f.n ? f.v[0].title : "");
	found_free(&f);
	unload(&l);
}
END_TEST

/*
 * launch-starvation/bad.py's AdamW(capturable=True) takes the foreach path, whose _foreach_div_ by
 * a list of 0-dim step tensors falls back to one div kernel per tensor: two runs of 198 per step
 * (its CUDA-graph twin, launch-starvation-fixed, replays them: no launch, no finding).
 */
START_TEST(test_recorded_capturable_fallback)
{
	char path[4096];
	struct loaded l;
	struct found f;

	snprintf(path, sizeof(path), "%s/samples/rules/traces/launch-starvation-bad.db",
		 tu_source_root());
	load(&l, path, NULL);
	run_rule(&l, "unfused-optimizer", &f);
	ck_assert_int_eq(f.n, 1);
	ck_assert(2 * f.v[0].nsteps > cs_steps_steady(&l.s));
	ck_assert_int_eq(cJSON_GetObjectItem(f.v[0].evidence, "tensors")->valueint, 198);
	ck_assert_int_eq(cJSON_GetObjectItem(f.v[0].evidence, "runs_per_step")->valueint, 2);
	ck_assert(strstr(cJSON_GetArrayItem(cJSON_GetObjectItem(f.v[0].evidence, "unit"), 0)
				 ->valuestring,
			 "DivFunctor") != NULL);
	found_free(&f);
	run_rule(&l, "zero-grad-memset", &f);
	ck_assert_int_eq(f.n, 0);
	unload(&l);
}
END_TEST

static Suite *rules_opt_suite(void)
{
	Suite *s = suite_create("rules_opt");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_unfused_adamw);
	tcase_add_test(tc, test_unfused_sgd_one_kernel);
	tcase_add_test(tc, test_unfused_queued_ahead);
	tcase_add_test(tc, test_unfused_fused_passes);
	tcase_add_test(tc, test_unfused_one_size);
	tcase_add_test(tc, test_unfused_not_elementwise);
	tcase_add_test(tc, test_unfused_count_changes);
	tcase_add_test(tc, test_zero_grad_fills);
	tcase_add_test(tc, test_zero_grad_other_fills);
	tcase_add_test(tc, test_zero_grad_every_tenth);
	tcase_add_test(tc, test_zero_grad_accumulates);
	tcase_add_loop_test(tc, test_recorded_none, 0, NRECORDED);
	tcase_add_test(tc, test_recorded_capturable_fallback);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sim_main(rules_opt_suite(), "test_rules_opt");
}
