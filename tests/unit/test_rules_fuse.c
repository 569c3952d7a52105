/*
 * test_rules_fuse.c - the unfused-elementwise and no-tensor-cores rules on synthetic traces and on
 * the committed traces.
 *
 * unfused-elementwise: a chain of eight same-grid element-wise kernels between two GEMMs in every
 * step (found, with what fusing saves), the same kernels over alternating grids, a per-parameter
 * optimizer loop (the same five names over twenty grids: left to unfused-optimizer), a fill
 * (zero_grad) chain, one fused kernel per activation, a chain too cheap to matter, a chain cut by
 * a host wait; no finding on the committed traces of programs without chains.
 * no-tensor-cores: float32 SIMT GEMM and convolution names of cuBLAS, CUTLASS and cuDNN (found),
 * tensor-core names (MMA shapes, tensorop, nvjet, bf16/tf32 types), GEMM-like kernels of unknown
 * or other precision, attention and conversion kernels (never), a small share, memory-bound SIMT
 * GEMMs (many blocks of under 4 us each), a GPU without tensor cores; no finding on the committed
 * traces.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/analyze.h"
#include "rulesim.h"
#include "testutil.h"

#define GEMM_NAME "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
#define MUL_NAME                                                                                \
	"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BinaryFunctorIfffNS0_15binary_" \
	"internal10MulFunctorIfEEEESt5arrayIPcLm3EEEEviT0_T1_"
#define ADD_NAME                                                              \
	"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_" \
	"addIfEESt5arrayIPcLm3EE"                                             \
	"EEviT0_T1_"
#define TANH_NAME                                                                         \
	"_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_16tanh_kernel_cudaERNS_" \
	"18TensorIteratorBaseEENKUlvE0_clEvENKUlvE0_clEvEUlfE_St5arrayIPcLm2EEEEviT0_T1_"
#define POW_NAME                                                                               \
	"_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastIZZZNS0_"    \
	"15pow_tensor_scalar_kernelEvENKUlvE_clEvEUlfE_EEvRNS_18TensorIteratorBaseERKT_EUliE_" \
	"EEviT1_"
#define FILL_NAME                                               \
	"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_" \
	"11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_"              \
	"T1_"
#define GELU_NAME                                                                           \
	"_ZN2at6native29vectorized_elementwise_kernelILi8EZZZNS0_18GeluCUDAKernelImplERNS_" \
	"18TensorIteratorBaseENS0_8GeluTypeEENKUlvE0_clEvENKUlvE2_clEvEUlN3c108BFloat16EE_" \
	"St5arrayIPcLm2EEEEviT0_T1_"

/* Open a synthetic trace like sim_open(), on a device of compute capability major.0. */
static void sim_open_cc(struct sim *m, const char *file, int major)
{
	cs_device d;

	memset(&d, 0, sizeof(d));
	d.uuid = "GPU-00000000-0000-0000-0000-000000000001";
	d.name = "Test GPU";
	d.total_memory = 16 * GIB;
	d.sm_count = 28;
	d.compute_major = major;
	sim_open_gpu(m, file, &d);
}

static char *sample_trace(const char *name)
{
	char buf[4096];

	snprintf(buf, sizeof(buf), "%s/samples/rules/traces/%s.db", tu_source_root(), name);
	return strdup(buf);
}

/* How many findings rule id makes on a committed trace. */
static int trace_count(const char *path, const char *id)
{
	struct loaded l;
	struct found f;
	int n;

	load(&l, path, NULL);
	run_rule(&l, id, &f);
	n = f.n;
	found_free(&f);
	unload(&l);
	return n;
}

/* ---- unfused-elementwise ---- */

/* The hand-written tanh GELU: pow, mul, add, mul, tanh, add, mul, mul. */
static const char *const gelu_chain[] = {POW_NAME,  MUL_NAME, ADD_NAME, MUL_NAME,
					 TANH_NAME, ADD_NAME, MUL_NAME, MUL_NAME};

/* Steps of 1 ms of GEMM, then the kernels names[0..n) with their grids and times, 1 ms of GEMM
 * and a sync. */
static int mixed_count(const char *file, const char *const *names, const int64_t *grids,
		       const int64_t *durs, int n, struct found *f)
{
	struct sim m;
	int found;

	sim_open(&m, file);
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		sim_kernel_grid(&m, 7, GEMM_NAME, 264, 1 * MS);
		for (int i = 0; i < n; i++)
			sim_kernel_grid(&m, 7, names[i], grids[i], durs[i]);
		sim_kernel_grid(&m, 7, GEMM_NAME, 264, 1 * MS);
		sim_sync(&m, CS_SYNC_CONTEXT_SYNCHRONIZE, CS_ID_NONE, gpu_end(&m), CS_ID_NONE);
		sim_host(&m, 50 * US);
		sim_step_end(&m);
	}
	sim_finish(&m);
	found = synthetic_count(&m, "unfused-elementwise", f);
	free(m.path);
	return found;
}

/* Steps of 1 ms of GEMM, eight element-wise kernels of dur each (grid 65536, or alternating
 * between two grids with alternate), 1 ms of GEMM, then a sync. */
static int chain_count(const char *file, int64_t dur, int alternate, struct found *f)
{
	int64_t grids[8], durs[8];

	for (int i = 0; i < 8; i++) {
		grids[i] = alternate && (i & 1) ? 16384 : 65536;
		durs[i] = dur;
	}
	return mixed_count(file, gelu_chain, grids, durs, 8, f);
}

START_TEST(test_unfused_chain_every_step)
{
	struct found f;
	const cJSON *e, *c;

	ck_assert_int_eq(chain_count("chain.db", 60 * US, 0, &f), 1);
	ck_assert_int_eq(f.v[0].nsteps, STEPS - 2);
	e = f.v[0].evidence;
	ck_assert_int_eq(cJSON_GetObjectItem(e, "chains_per_step")->valueint, 1);
	ck_assert_int_eq(cJSON_GetObjectItem(e, "launches_saved_per_step")->valueint, 7);
	ck_assert_int_eq(cJSON_GetObjectItem(e, "chain_kernel_ns_per_step")->valuedouble,
			 8 * 60 * US);
	c = cJSON_GetArrayItem(cJSON_GetObjectItem(e, "chains"), 0);
	ck_assert_int_eq(cJSON_GetObjectItem(c, "kernels")->valueint, 8);
	ck_assert_int_eq(cJSON_GetObjectItem(c, "grid_blocks")->valueint, 65536);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "names")), 8);
	ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(c, "names"), 0)->valuestring,
			 POW_NAME);
	/* seven kernels' time beyond the longest, plus the GPU's 1 us gaps between them */
	ck_assert_int_ge(f.v[0].lost_ns_per_step, 7 * 60 * US);
	ck_assert_int_le(f.v[0].lost_ns_per_step, 7 * 60 * US + 7 * 10 * US);
	/* 427 us of a ~2.5 ms step */
	ck_assert_int_eq(f.v[0].severity, CS_SEV_ERROR);
	ck_assert(strstr(f.v[0].fix, "torch.compile"));
	found_free(&f);
}
END_TEST

/* PyTorch's loops with their operands: a bf16 scaling (1 in, 1 out), the unrolled loop's cast to
 * float, float multiply and add (2 in, 1 out) */
#define BF16_MUL_NAME                                                                          \
	"_ZN2at6native29vectorized_elementwise_kernelILi8ENS0_13AUnaryFunctorIN3c108BFloat16ES4_" \
	"S4_NS0_15binary_internal10MulFunctorIfEEEESt5arrayIPcLm2EEEEviT0_T1_"
#define CAST_NAME                                                                            \
	"_ZN2at6native27unrolled_elementwise_kernelIZZZNS0_23direct_copy_kernel_cudaERNS_18"   \
	"TensorIteratorBaseEENKUlvE1_clEvENKUlvE5_clEvEUlfE_St5arrayIPcLm2EELi4E23TrivialOffset" \
	"CalculatorILi1EjESD_NS0_6memory12LoadWithCastILi1EEENSE_12StoreWithCastILi1EEEEEviT_T0_" \
	"T2_T3_T4_T5_"

START_TEST(test_unfused_fused_time)
{
	/* autocast's GELU written out: a bf16 scaling, a cast to float in the unrolled loop (twice
	 * the blocks of the vectorized one over the same tensor), then float work */
	static const char *const names[] = {BF16_MUL_NAME, CAST_NAME, MUL_NAME, ADD_NAME, TANH_NAME};
	static const int64_t grids[] = {32768, 65536, 32768, 32768, 32768};
	static const int64_t durs[] = {40 * US, 100 * US, 130 * US, 130 * US, 90 * US};
	struct found f;
	const cJSON *e, *c;

	ck_assert_int_eq(mixed_count("fused.db", names, grids, durs, 5, &f), 1);
	e = f.v[0].evidence;
	c = cJSON_GetArrayItem(cJSON_GetObjectItem(e, "chains"), 0);
	/* one chain of all five: the two loops' grids are one tensor's */
	ck_assert_int_eq(cJSON_GetObjectItem(c, "kernels")->valueint, 5);
	ck_assert_int_eq(cJSON_GetObjectItem(e, "longest_ns_per_step")->valuedouble, 130 * US);
	/* three operands (the widest kernel's) at the bf16 scaling's 20 us a pass */
	ck_assert_int_eq(cJSON_GetObjectItem(e, "fused_ns_per_step")->valuedouble, 60 * US);
	/* all but the fused kernel's 60 us, plus the GPU's gaps between the five */
	ck_assert_int_ge(f.v[0].lost_ns_per_step, 490 * US - 60 * US);
	ck_assert_int_le(f.v[0].lost_ns_per_step, 490 * US - 60 * US + 4 * 10 * US);
	found_free(&f);

	/* two kernels across the loops are not taken for one tensor's: no chain */
	ck_assert_int_eq(mixed_count("fused_two.db", names + 1, grids + 1, durs + 1, 2, &f), 0);
	/* the unrolled loop's grid three times the vectorized one's is another tensor's */
	{
		static const int64_t odd[] = {32768, 98304, 32768, 32768, 32768};

		ck_assert_int_eq(mixed_count("fused_odd.db", names, odd, durs, 5, &f), 1);
		c = cJSON_GetArrayItem(cJSON_GetObjectItem(f.v[0].evidence, "chains"), 0);
		ck_assert_int_eq(cJSON_GetObjectItem(c, "kernels")->valueint, 3);
		found_free(&f);
	}
}
END_TEST

START_TEST(test_unfused_grids_differ)
{
	struct found f;

	/* the same kernels over tensors of two sizes: no two neighbours can be one loop */
	ck_assert_int_eq(chain_count("chain_alt.db", 60 * US, 1, &f), 0);
}
END_TEST

START_TEST(test_unfused_small_share)
{
	struct found f;

	/* eight 2 us kernels next to 2 ms of GEMM: under 1% */
	ck_assert_int_eq(chain_count("chain_small.db", 2 * US, 0, &f), 0);
}
END_TEST

START_TEST(test_unfused_optimizer_loop)
{
	static const char *const adam[] = {MUL_NAME, ADD_NAME, TANH_NAME, MUL_NAME, ADD_NAME};
	struct sim m;
	struct found f;

	/* foreach=False: the same five kernels for each of 20 parameters of different sizes */
	sim_open(&m, "optimizer.db");
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		sim_kernel_grid(&m, 7, GEMM_NAME, 264, 500 * US);
		for (int p = 0; p < 20; p++)
			for (int i = 0; i < 5; i++)
				sim_kernel_grid(&m, 7, adam[i], 100 + 37 * p, 30 * US);
		sim_sync(&m, CS_SYNC_CONTEXT_SYNCHRONIZE, CS_ID_NONE, gpu_end(&m), CS_ID_NONE);
		sim_host(&m, 50 * US);
		sim_step_end(&m);
	}
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "unfused-elementwise", &f), 0);
	free(m.path);
}
END_TEST

START_TEST(test_unfused_fills_and_fused)
{
	struct sim m;
	struct found f;

	/* per step: eight fills (zero_grad) back to back, then GEMM, one GELU kernel, GEMM */
	sim_open(&m, "fills.db");
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		for (int i = 0; i < 8; i++)
			sim_kernel_grid(&m, 7, FILL_NAME, 65536, 60 * US);
		sim_kernel_grid(&m, 7, GEMM_NAME, 264, 500 * US);
		sim_kernel_grid(&m, 7, GELU_NAME, 65536, 60 * US);
		sim_kernel_grid(&m, 7, GEMM_NAME, 264, 500 * US);
		sim_sync(&m, CS_SYNC_CONTEXT_SYNCHRONIZE, CS_ID_NONE, gpu_end(&m), CS_ID_NONE);
		sim_host(&m, 50 * US);
		sim_step_end(&m);
	}
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "unfused-elementwise", &f), 0);
	free(m.path);
}
END_TEST

START_TEST(test_unfused_cut_by_wait)
{
	struct sim m;
	struct found f;

	/* pairs of kernels, each pair cut from the next by a host wait: four 2-chains of 60 us */
	sim_open(&m, "cut.db");
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		sim_kernel_grid(&m, 7, GEMM_NAME, 264, 1 * MS);
		for (int i = 0; i < 8; i++) {
			sim_kernel_grid(&m, 7, gelu_chain[i], 65536, 60 * US);
			if (i & 1) {
				sim_sync(&m, CS_SYNC_STREAM_SYNCHRONIZE, 7, gpu_end(&m),
					 CS_ID_NONE);
				sim_host(&m, 200 * US);
			}
		}
		sim_step_end(&m);
	}
	sim_finish(&m);
	ck_assert_int_eq(synthetic_count(&m, "unfused-elementwise", &f), 1);
	/* the idle after each wait is not the chain's: 4 x 60 us, plus the 1 us gaps */
	ck_assert_int_eq(cJSON_GetObjectItem(f.v[0].evidence, "chains_per_step")->valueint, 4);
	ck_assert_int_le(f.v[0].lost_ns_per_step, 4 * 61 * US);
	found_free(&f);
	free(m.path);
}
END_TEST

/* The committed traces whose programs have no chain worth a finding. */
START_TEST(test_unfused_committed_traces)
{
	static const char *const none[] = {
		"clean",
		"d2h-sync-bad",
		"d2h-sync-fixed",
		"d2h-sync-negative_final_read",
		"d2h-sync-negative_lagged_read",
		"d2h-sync-negative_sync_long_step",
		"d2h-sync-negative_event_query",
		"empty-cache-in-loop-bad",
		"empty-cache-in-loop-fixed",
		"memory-ceiling-thrash-bad_fraction",
		"memory-ceiling-thrash-fixed",
		"launch-starvation-negative_gpu_bound",
		"cuda-core-scan-negative_short_cumsum",
		"cuda-core-scan-negative_nonzero_select",
	};
	/* programs written in eager element-wise code (docs/rules/unfused-elementwise.md) */
	static const char *const some[] = {"cuda-core-scan-fixed", "launch-starvation-bad"};

	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		char *p = sample_trace(none[i]);

		ck_assert_msg(trace_count(p, "unfused-elementwise") == 0, "%s", none[i]);
		free(p);
	}
	for (size_t i = 0; i < sizeof(some) / sizeof(some[0]); i++) {
		char *p = sample_trace(some[i]);

		ck_assert_msg(trace_count(p, "unfused-elementwise") == 1, "%s", some[i]);
		free(p);
	}
}
END_TEST

/* ---- no-tensor-cores ---- */

/*
 * Steps of 1 ms of tensor-core GEMM (when tc) and a kernel named name taking share_pct percent of
 * the GPU time, over blocks blocks, on a device of compute capability major.0 (0: sim_open's 9.0).
 */
static int gemm_count(const char *file, const char *name, int share_pct, int64_t blocks, int tc,
		      int major, struct found *f)
{
	struct sim m;
	int n;

	if (major)
		sim_open_cc(&m, file, major);
	else
		sim_open(&m, file);
	for (int s = 0; s < STEPS; s++) {
		sim_step_begin(&m);
		sim_kernel_grid(&m, 7, tc ? GEMM_NAME : MUL_NAME, 264, 1 * MS);
		sim_kernel_grid(&m, 7, name, blocks, 1 * MS * share_pct / (100 - share_pct));
		sim_sync(&m, CS_SYNC_CONTEXT_SYNCHRONIZE, CS_ID_NONE, gpu_end(&m), CS_ID_NONE);
		sim_host(&m, 50 * US);
		sim_step_end(&m);
	}
	sim_finish(&m);
	n = synthetic_count(&m, "no-tensor-cores", f);
	free(m.path);
	return n;
}

START_TEST(test_ntc_simt_names)
{
	static const char *const simt[] = {
		"_ZN7cutlass7Kernel2I42cutlass_80_simt_sgemm_128x32_8x5_nn_align1EEvNT_6ParamsE",
		"sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_"
		"aligna4_alignc4_execute_kernel__5x_cublas",
		"ampere_sgemm_128x64_nn",
		"_Z18sgemm_largek_lds64ILb1ELb0ELi5ELi5ELi4ELi4ELi4ELi34EEvPfPKfS2_iiiiiiS2_S2_"
		"ffiiPiS3_",
		"sm86_xmma_fprop_implicit_gemm_indexed_f32f32_f32f32_f32_nhwckrsc_nhwc_"
		"tilesize128x32x8_"
		"stage4_warpsize2x1x1_g1_execute_kernel__5x_cudnn",
		"void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, "
		"true>"
		"(int, int, int, float const*, int, float*, float const*, kernel_conv_params, "
		"unsigned "
		"long long, int, float, float, int, float const*, float const*, bool, int, int)",
		"scudnn_128x64_relu_interior_nn_v1",
	};
	struct found f;
	char file[32];

	for (size_t i = 0; i < sizeof(simt) / sizeof(simt[0]); i++) {
		snprintf(file, sizeof(file), "simt%zu.db", i);
		ck_assert_msg(gemm_count(file, simt[i], 50, 264, 1, 0, &f) == 1, "not SIMT: %s",
			      simt[i]);
		ck_assert_int_eq(f.v[0].nsteps, STEPS - 2);
		/* 1 ms of SIMT GEMM per step: at least half of it saved, 1 ms of a ~2 ms step */
		ck_assert_int_eq(f.v[0].lost_ns_per_step, 500 * US);
		ck_assert_int_eq(f.v[0].severity, CS_SEV_ERROR);
		ck_assert_str_eq(
			cJSON_GetObjectItem(f.v[0].evidence, "compute_capability")->valuestring,
			"9.0");
		ck_assert(strstr(f.v[0].fix, "bfloat16") && strstr(f.v[0].fix, "allow_tf32"));
		found_free(&f);
	}
}
END_TEST

START_TEST(test_ntc_tensor_core_names)
{
	static const char *const not_simt[] = {
		/* tensor cores: MMA shapes, tensorop, nvjet, gmma, tensor-core input types */
		"nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN",
		"_ZN7cutlass7Kernel2I56cutlass_80_tensorop_s16816gemm_bf16_64x64_64x6_nt_"
		"align8EEvNT_"
		"6ParamsE",
		"_ZN7cutlass7Kernel2I55cutlass_75_tensorop_bf16_s1688gemm_bf16_64x64_nn_"
		"align1EEvNT_"
		"6ParamsE",
		"ampere_s1688gemm_128x128_32x3_nn",
		"volta_h884gemm_64x64_ldg8_nn",
		"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
		"execute_segment_k_off_kernel__5x_cublas",
		"sm80_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x16_stage4_warpsize2x2x1_"
		"tensor16x8x8_execute_kernel__5x_cublas",
		"sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_"
		"tilesize128x128x16_"
		"stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel__5x_cudnn",
		/* GEMM-like, precision unknown or not float32: not judged */
		"gemm_fusion_dot_general_11",
		"triton_tem_fused_mm_0",
		"_ZN8internal5gemvx6kernelIiiffffLb0ELb1ELb0ELb0ELi8ELb0E18cublasGemvParamsExIi30cu"
		"blas"
		"GemvTensorStridedBatchedIKfES5_S3_IfEfEEENSt9enable_ifIXntT5_EvE4typeET11_",
		"ampere_dgemm_64x64_nn",
		/* not GEMMs */
		"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_"
		"4x1x1_"
		"cga1x1x1_kernel0_0",
		"_ZN5cudnn6fusion20convert_dq_to_16bitsILb1EEEvPKvPvjjjjjjjjjjPKfS6_S6_PfS3_S4_S4_"
		"bb",
		"loop_convert_fusion",
		"_ZN2at6native27im2col_kernelIfEEvlPKT_llllllllllllPS2_",
	};
	struct found f;
	char file[32];

	for (size_t i = 0; i < sizeof(not_simt) / sizeof(not_simt[0]); i++) {
		snprintf(file, sizeof(file), "tc%zu.db", i);
		ck_assert_msg(gemm_count(file, not_simt[i], 50, 264, 1, 0, &f) == 0,
			      "taken for SIMT: %s", not_simt[i]);
	}
}
END_TEST

START_TEST(test_ntc_small_share_and_memory_bound)
{
	const char *name = "_ZN7cutlass7Kernel2I42cutlass_80_simt_sgemm_128x32_8x5_nn_align1EEvNT_"
			   "6ParamsE";
	struct found f;

	/* 2% of the GPU time in SIMT GEMMs: 1% saved at least, under the 2% threshold */
	ck_assert_int_eq(gemm_count("simt_small.db", name, 2, 264, 1, 0, &f), 0);
	/* half of the GPU time, but 65536 blocks in 1 ms: 2 us per wave of 132 SMs ... */
	ck_assert_int_eq(gemm_count("simt_membound.db", name, 50, 65536, 1, 0, &f), 0);
	/* ... while 264 blocks make 2 waves of 500 us */
	ck_assert_int_eq(gemm_count("simt_big.db", name, 50, 264, 1, 0, &f), 1);
	found_free(&f);
}
END_TEST

START_TEST(test_ntc_device_capability)
{
	const char *name = "_Z18sgemm_largek_lds64ILb1ELb0ELi5ELi5ELi4ELi4ELi4ELi34EEvPfPKfS2_";
	struct found f;

	/* no tensor-core kernel in the trace: the device decides */
	ck_assert_int_eq(gemm_count("cc9.db", name, 50, 264, 0, 9, &f), 1);
	ck_assert_int_eq(
		cJSON_IsFalse(cJSON_GetObjectItem(f.v[0].evidence, "tensor_core_kernels_seen")), 1);
	found_free(&f);
	ck_assert_int_eq(gemm_count("cc6.db", name, 50, 264, 0, 6, &f), 0);
	ck_assert_int_eq(gemm_count("cc6_maxwell.db", "maxwell_sgemm_128x64_nn", 50, 264, 0, 6, &f),
			 0);
	/* compute capability 7.x: fp16, not bf16 or TF32 */
	ck_assert_int_eq(gemm_count("cc7.db", name, 50, 264, 0, 7, &f), 1);
	ck_assert(strstr(f.v[0].fix, "float16") && !strstr(f.v[0].fix, "tf32"));
	found_free(&f);
}
END_TEST

/* the rule's own positive sample; every other trace: nothing */
static int ntc_own(const char *name)
{
	/* host-created-tensor-negative_gpu_bound hides its host work behind float32 SIMT GEMMs */
	return !strcmp(name, "no-tensor-cores-bad.db") ||
	       !strcmp(name, "host-created-tensor-negative_gpu_bound.db") ||
	       /* the corpus: float32 convolutions with cuDNN's TF32 off */
	       !strcmp(name, "pt_conv_fp32_no_tf32.db");
}

START_TEST(test_ntc_committed_traces)
{
	ck_assert_int_gt(committed_traces_expect("no-tensor-cores", NULL, ntc_own), 20);
}
END_TEST

static Suite *fuse_suite(void)
{
	Suite *s = suite_create("rules_fuse");
	TCase *tc = tcase_create("unfused-elementwise");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_unfused_chain_every_step);
	tcase_add_test(tc, test_unfused_grids_differ);
	tcase_add_test(tc, test_unfused_fused_time);
	tcase_add_test(tc, test_unfused_small_share);
	tcase_add_test(tc, test_unfused_optimizer_loop);
	tcase_add_test(tc, test_unfused_fills_and_fused);
	tcase_add_test(tc, test_unfused_cut_by_wait);
	tcase_add_test(tc, test_unfused_committed_traces);
	suite_add_tcase(s, tc);
	tc = tcase_create("no-tensor-cores");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_ntc_simt_names);
	tcase_add_test(tc, test_ntc_tensor_core_names);
	tcase_add_test(tc, test_ntc_small_share_and_memory_bound);
	tcase_add_test(tc, test_ntc_device_capability);
	tcase_add_test(tc, test_ntc_committed_traces);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return sim_main(fuse_suite(), "test_rules_fuse");
}
