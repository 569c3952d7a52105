/*
 * no_tensor_cores.c - the no-tensor-cores rule: matrix products (GEMMs, convolutions) on the
 * float32 SIMT path - FFMA on the CUDA cores - taking a real share of the step on a GPU that has
 * tensor cores: no autocast to bf16/fp16, TF32 off, so cuBLAS/cuDNN must compute in full float32.
 *
 * The kernels are told apart by the grammar of the names that cuBLAS, cuBLASLt, CUTLASS and cuDNN
 * give them, not by a list of names: a tensor-core kernel carries an MMA shape (884/1688/16816
 * before "gemm"), tensorop/wmma/hmma/gmma, an nvjet (Hopper) name, or a tensor-core input type
 * (tf32, bf16, f16, fp8); an FP32 SIMT kernel carries simt, sgemm/scudnn without any of those, or
 * only f32 type tokens. GEMM-like kernels with none of these (Triton or XLA GEMMs, FP64, GEMV) are
 * counted apart and never reported. The device's compute capability (the trace's GPU table) says
 * whether tensor cores exist. docs/rules/no-tensor-cores.md has the grammar, the decision, its
 * thresholds and where each class of evidence can be wrong.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cuscope/grow.h"
#include "kernel_names.h"
#include "edits.h"
#include "finding_kit.h"
#include "recurrence.h"
#include "sites.h"
#include "rules.h"
#include "cuscope/checked.h"
#include "cuscope/sort.h"

#define RULE_ID RULE_ID_NO_TENSOR_CORES

/*
 * The least a tensor core speeds up a dense GEMM over FP32 FFMA on any GPU that has them (peak
 * dense throughput on the datasheets: 2x on GeForce Ampere with fp16/bf16 and fp32 accumulation,
 * 4x on A10/L4, 8x on V100/T4/A100 with fp16/TF32, ~15x on H100/H200 with bf16): the cost reported
 * is the SIMT GEMM time times (1 - 1/SPEEDUP), a lower bound of the time saved.
 */
#define SPEEDUP 2.0
/* A recurring pattern: in at least this share of the steady steps, and this many ... */
#define MIN_STEP_SHARE 0.5
#define MIN_STEPS      3
/* ... costing at least this share of the median step: the share every rule of the project
 * reports from (RU_MIN_LOSS_SHARE), so SIMT GEMM time of at least twice that. */
#define MIN_LOSS_SHARE RU_MIN_LOSS_SHARE
#define MIN_RARE_STEPS 2
/* Kernel names listed in the evidence. */
#define MAX_NAMES 3
/* Call sites listed in the evidence. */
#define MAX_SITES 5
/*
 * A SIMT GEMM kernel whose blocks take less than this per wave (its time over ceil(blocks / SMs))
 * is bound by memory, not by the multiply-adds that tensor cores would speed up: a block's fixed
 * part - loading its first tiles from device memory (a DRAM round trip is ~0.5-1 us), filling the
 * pipeline stages, writing its tile back - takes about 2 us, so at 4 us at least half of a block's
 * time is its K loop. Such kernels (a Linear(2, 1) over millions of rows, a GEMV-shaped product)
 * are counted apart and never reported.
 */
#define MIN_WAVE_NS 4000

enum gemm_class {
	GC_NONE = 0, /* not a GEMM or convolution */
	GC_TENSOR,   /* tensor-core kernel (or an input type that tensor cores take) */
	GC_SIMT,     /* float32 on the CUDA cores */
	GC_OTHER,    /* GEMM-like, but precision unknown, FP64, or a GEMV: not judged */
};

/* The evidence a name gave, for the evidence JSON. */
static const char *const class_reason[] = {"", "", "simt", "sgemm", "f32 types", "scudnn", "ffma"};

static int has(const char *s, const char *tok)
{
	return strstr(s, tok) != NULL;
}

/* A run of 3 to 6 digits right before "gemm": the MMA instruction shape (884, 1688, 16816). */
static int has_mma_shape(const char *s)
{
	for (const char *p = strstr(s, "gemm"); p; p = strstr(p + 1, "gemm")) {
		int d = 0;

		for (const char *q = p; q > s && isdigit((unsigned char)q[-1]); q--)
			d++;
		if (d >= 3 && d <= 6)
			return 1;
	}
	return 0;
}

/* "conv" that is not "convert" (cuDNN's and XLA's conversion kernels). */
static int has_conv(const char *s)
{
	for (const char *p = strstr(s, "conv"); p; p = strstr(p + 1, "conv"))
		if (strncmp(p + 4, "ert", 3))
			return 1;
	return 0;
}

/* name in lower case into s (size bytes), cut to fit. */
static void lower_copy(char *s, size_t size, const char *name)
{
	size_t n = strlen(name);

	if (n >= size)
		n = size - 1;
	for (size_t i = 0; i < n; i++)
		s[i] = (char)tolower((unsigned char)name[i]);
	s[n] = '\0';
}

/* Why a kernel's name says float32 SIMT, why[] by name id (ru_add_kernel_names()'s note). */
static const char *name_reason(int64_t name_id, const void *why)
{
	return class_reason[((const int8_t *)why)[name_id]];
}

/* Does the name say float32 SIMT? reason: index into class_reason. */
static int gemm_class_of(const char *name, int *reason)
{
	char s[1024];

	*reason = 0;
	lower_copy(s, sizeof(s), name);
	/* PyTorch's own kernels (im2col, depthwise convolutions, reductions) and attention kernels
	 * are not cuBLAS/cuDNN GEMMs */
	if (!strncmp(s, "_zn2at6native", 13) || has(s, "at::native") || has(s, "sdpa") ||
	    has(s, "flash") || has(s, "fmha") || has(s, "attention"))
		return GC_NONE;
	if (!(has(s, "gemm") || has(s, "gemv") || has(s, "nvjet") || has(s, "xmma") ||
	      has(s, "cutlass") || has_conv(s) || has(s, "fprop") || has(s, "dgrad") ||
	      has(s, "wgrad") || has(s, "winograd") || has(s, "matmul") || has(s, "scudnn") ||
	      has(s, "mma")))
		return GC_NONE;
	/* tensor-core evidence: an MMA shape or instruction, a Hopper nvjet kernel, an input type
	 * that tensor cores take */
	if (has_mma_shape(s) || has(s, "tensorop") || has(s, "wmma") || has(s, "hmma") ||
	    has(s, "imma") || has(s, "gmma") || has(s, "nvjet") || has(s, "tf32") ||
	    has(s, "bf16") || has(s, "f16") || has(s, "fp8") || has(s, "e4m3") || has(s, "e5m2") ||
	    has(s, "hgemm") || has(s, "int8") || has(s, "_i8i8"))
		return GC_TENSOR;
	/* FP64, complex, matrix-vector: not what bf16/TF32 would fix */
	if (has(s, "dgemm") || has(s, "dmma") || has(s, "zgemm") || has(s, "cgemm") ||
	    has(s, "f64") || has(s, "gemv") || has(s, "gemmsn"))
		return GC_OTHER;
	if (has(s, "ffma")) {
		*reason = 6;
		return GC_SIMT;
	}
	if (has(s, "simt")) {
		*reason = 2;
		return GC_SIMT;
	}
	if (has(s, "sgemm")) {
		*reason = 3;
		return GC_SIMT;
	}
	if (has(s, "scudnn")) {
		*reason = 5;
		return GC_SIMT;
	}
	if (has(s, "f32")) {
		*reason = 4;
		return GC_SIMT;
	}
	return GC_OTHER;
}

struct dev_cc {
	uint32_t pid;
	int major, minor; /* -1: unknown */
	int sm_count;
};

static int device_cb(const cs_device *d, void *arg)
{
	struct dev_cc *c = arg;

	/* the first device of the process (device ids are per process) */
	if (d->pid == c->pid && c->major < 0 && d->compute_major > 0) {
		c->major = d->compute_major;
		c->minor = d->compute_minor;
		c->sm_count = d->sm_count;
	}
	return 0;
}

/*
 * The tensor cores' dense peak over FP32 FFMA on the data-center GPU of a compute capability, from
 * the datasheets, in the format the fix uses there (TF32 where it exists, else FP16/BF16): 7.0 V100
 * and 7.5 T4 (FP16) 8x, 8.0 A100 (TF32) 8x, 8.6 A10 (FP16) 2x, 8.9 L4/L40 (FP16) 4x, 9.0 H100/H200
 * (TF32: 494 against 67 TFLOPS) 7.4x. The fix's edit runs each SIMT GEMM that much faster;
 * other and unknown GPUs get SPEEDUP, the bound every one of them reaches.
 */
static double datasheet_speedup(int major, int minor)
{
	if (major == 7)
		return 8.0;
	if (major == 8)
		return minor == 0 ? 8.0 : minor == 6 ? 2.0 : minor == 9 ? 4.0 : SPEEDUP;
	if (major == 9)
		return 7.4;
	return SPEEDUP;
}

/* The SIMT GEMMs that MIN_WAVE_NS leaves out, for match_ctx.want. */
#define GC_SIMT_SHORT 10

struct match_ctx {
	uint32_t pid;
	const int8_t *cls;
	int64_t nnames;
	int want;
	int sm_count; /* 1 when unknown: every block its own wave */
};

/* Time per wave of a kernel's blocks, ns. */
static int64_t wave_ns(const cs_a_kernel *k, int sm_count)
{
	int64_t blocks = k->grid_blocks > 0 ? k->grid_blocks : 1;
	int64_t waves = (blocks + sm_count - 1) / sm_count;

	return (k->end - k->start) / (waves > 0 ? waves : 1);
}

static int match_class(const cs_a_kernel *k, void *arg)
{
	const struct match_ctx *c = arg;
	int cls;

	if (k->pid != c->pid || k->name_id < 0 || k->name_id >= c->nnames)
		return 0;
	cls = c->cls[k->name_id];
	if (cls == GC_SIMT && k->end != CS_TS_UNKNOWN && k->start != CS_TS_UNKNOWN &&
	    wave_ns(k, c->sm_count) < MIN_WAVE_NS)
		cls = GC_SIMT_SHORT;
	return cls == c->want;
}

static int match_pid(const cs_a_kernel *k, void *arg)
{
	return k->pid == ((const struct match_ctx *)arg)->pid;
}

/* Does a kernel name say it was built for a GPU with tensor cores (sm_70 or later)? */
static int arch_has_tensor_cores(const char *name)
{
	static const char *const tags[] = {"volta", "turing", "ampere", "ada_", "hopper",
					   "sm70",  "sm75",   "sm80",	"sm86", "sm89",
					   "sm90",  "sm100",  "sm120",	"_70_", "_75_",
					   "_80_",  "_86_",   "_89_",	"_90_"};
	char s[256];

	lower_copy(s, sizeof(s), name);
	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++)
		if (strstr(s, tags[i]))
			return 1;
	return 0;
}

/* Does an identifier say GEMM or convolution? */
static int gemm_word(const char *b, size_t n)
{
	static const char *const toks[] = {"gemm", "conv", "xmma", "nvjet", "scudnn"};
	char id[256];

	if (n >= sizeof(id))
		n = sizeof(id) - 1;
	memcpy(id, b, n);
	id[n] = '\0';
	for (size_t i = 0; i < sizeof(toks) / sizeof(toks[0]); i++)
		if (strcasestr(id, toks[i]))
			return 1;
	return 0;
}

/*
 * A short name for the title: the first source name of a mangled name (CUTLASS's kernels are
 * cutlass::Kernel2<the GEMM's name>), or the first identifier of a plain one, that says GEMM or
 * convolution; else the own name.
 */
static void display_name(const char *name, char *buf, size_t size)
{
	const char *p = name;

	if (!strncmp(name, "_Z", 2)) {
		for (p = name + 2; *p; p++) {
			size_t n = 0;
			const char *q = p;

			if (!isdigit((unsigned char)*p) || isdigit((unsigned char)p[-1]))
				continue;
			while (isdigit((unsigned char)*q) && n < 100000)
				n = n * 10 + (size_t)(*q++ - '0');
			if (n && strnlen(q, n) >= n && gemm_word(q, n)) {
				snprintf(buf, size, "%.*s", (int)(n < size ? n : size - 1), q);
				return;
			}
		}
	} else {
		while (*p) {
			const char *b = p, *e;

			while (*b && !(isalnum((unsigned char)*b) || *b == '_'))
				b++;
			for (e = b; *e && (isalnum((unsigned char)*e) || *e == '_'); e++)
				;
			if (e > b && gemm_word(b, (size_t)(e - b))) {
				size_t n = (size_t)(e - b);

				snprintf(buf, size, "%.*s", (int)(n < size ? n : size - 1), b);
				return;
			}
			p = e;
		}
	}
	fact_kernel_own_name(name, buf, size);
}

static int64_t step_median_of(const int64_t *per_step, const int32_t *steps, int32_t n,
			      int64_t *tmp)
{
	for (int32_t i = 0; i < n; i++)
		tmp[i] = per_step[steps[i]];
	return cs_median_i64(tmp, n);
}

int cs_rule_no_tensor_cores_check(cs_rule_ctx *ctx, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	struct match_ctx c = {s->pid, NULL, 0, GC_SIMT, 1};
	struct dev_cc cc = {s->pid, -1, -1, 0};
	int8_t *cls = NULL, *why = NULL;
	int64_t *simt = NULL, *tensor = NULL, *other = NULL, *gpu = NULL, *lost = NULL, *tmp = NULL,
		*shortk = NULL;
	int32_t *steps = NULL, nsteps = 0, nnames_t = 0, steady = cs_steps_steady(s);
	struct fact_name_time *names = NULL;
	cs_report_finding *f = NULL;
	struct ru_recur r;
	int rc = CS_ERR_NOMEM, any_simt = 0, any_tensor = 0, arch_tc = 0;
	cs_error derr = {0};

	if (steady <= 0 || ctx->step_median <= 0)
		return 0;
	c.nnames = cs_analysis_kernel_names(a); /* bounded by the strings: load.c */
	cls = calloc((size_t)c.nnames + 1, 1);
	why = calloc((size_t)c.nnames + 1, 1);
	if (!cls || !why)
		goto out;
	/* classify each kernel name once (-1: looked at, none of the classes) */
	for (int64_t i = 0; i < a->nkernels; i++) {
		int64_t id = a->kernels[i].name_id;
		int reason, k;

		if (id < 0 || a->kernels[i].pid != s->pid || cls[id])
			continue;
		k = gemm_class_of(cs_analysis_string(a, id), &reason);
		cls[id] = k ? (int8_t)k : -1;
		why[id] = (int8_t)reason;
		any_simt |= k == GC_SIMT;
		any_tensor |= k == GC_TENSOR;
		if (k == GC_SIMT)
			arch_tc |= arch_has_tensor_cores(cs_analysis_string(a, id));
	}
	rc = 0;
	if (!any_simt)
		goto out;
	/* are there tensor cores? The device's compute capability; without it, a tensor-core
	 * kernel run by the process or an architecture tag of sm_70 or later in a SIMT name */
	if (a->trace && cs_trace_each_device(a->trace, device_cb, &cc, &derr))
		cc.major = -1;
	if (cc.major >= 0 ? cc.major < 7 : !(any_tensor || arch_tc))
		goto out;
	rc = CS_ERR_NOMEM;
	c.cls = cls;
	if (cc.sm_count > 0)
		c.sm_count = cc.sm_count;
	simt = calloc((size_t)s->n, sizeof(*simt));
	tensor = calloc((size_t)s->n, sizeof(*tensor));
	other = calloc((size_t)s->n, sizeof(*other));
	gpu = calloc((size_t)s->n, sizeof(*gpu));
	lost = calloc((size_t)s->n, sizeof(*lost));
	tmp = calloc((size_t)s->n + 1, sizeof(*tmp));
	shortk = calloc((size_t)s->n, sizeof(*shortk));
	if (!simt || !tensor || !other || !gpu || !lost || !tmp || !shortk)
		goto out;
	c.want = GC_SIMT;
	cs_steps_kernel_time(a, s, match_class, &c, simt);
	c.want = GC_TENSOR;
	cs_steps_kernel_time(a, s, match_class, &c, tensor);
	c.want = GC_OTHER;
	cs_steps_kernel_time(a, s, match_class, &c, other);
	c.want = GC_SIMT_SHORT;
	cs_steps_kernel_time(a, s, match_class, &c, shortk);
	c.want = GC_SIMT;
	cs_steps_kernel_time(a, s, match_pid, &c, gpu);
	for (int32_t i = 0; i < s->n; i++)
		lost[i] = (int64_t)((double)simt[i] * (1.0 - 1.0 / SPEEDUP));
	rc = ru_recur_find(s, ctx->step_median, lost, 0, MIN_STEPS, MIN_STEP_SHARE, MIN_RARE_STEPS,
			   MIN_LOSS_SHARE, tmp, &steps, &nsteps, &r);
	if (rc <= 0)
		goto out;
	rc = CS_ERR_NOMEM;
	if (fact_kernel_names(a, s, match_class, &c, &names, &nnames_t, NULL))
		goto out;
	{
		int64_t simt_med = step_median_of(simt, steps, nsteps, tmp);
		int64_t gpu_med = step_median_of(gpu, steps, nsteps, tmp);
		char title[400], b1[32], b2[96], b3[96], rare[200], own[128];
		cJSON *e;

		own[0] = '\0';
		if (nnames_t)
			display_name(cs_analysis_string(a, names[0].name_id), own, sizeof(own));
		ru_recur_near_text(&r, b2, sizeof(b2), b3, sizeof(b3));
		if (r.recurring)
			snprintf(title, sizeof(title),
				 "float32 GEMMs on the CUDA cores (SIMT, no tensor cores) take %s "
				 "per "
				 "step (%.0f%% of GPU time); tensor cores would save at least %s "
				 "(%.1f%% of the step): %s%s%s",
				 ru_fmt_ns(b1, sizeof(b1), simt_med),
				 gpu_med > 0 ? 100.0 * (double)simt_med / (double)gpu_med : 0.0,
				 ru_fmt_ns(b3, sizeof(b3), r.lost), r.share * 100, own, b2,
				 r.near_steps ? "; in few steps" : "");
		else {
			ru_recur_rare_text(&r, nsteps, step_median_of(lost, steps, nsteps, tmp),
					   rare, sizeof(rare));
			snprintf(title, sizeof(title),
				 "float32 GEMMs on the CUDA cores (SIMT, no tensor cores) %s: %s%s",
				 rare, own, b2);
		}
		f = ru_recur_finding(
			RULE_ID, &r, title,
			cc.major == 7
				? "Run the matmuls in fp16 on the tensor cores: "
				  "torch.autocast('cuda', "
				  "dtype=torch.float16) with a GradScaler; keep GEMM dimensions "
				  "multiples of 8."
				: "Run the matmuls on the tensor cores: torch.autocast('cuda', "
				  "dtype=torch.bfloat16) around the forward pass, or keep float32 "
				  "and "
				  "allow TF32 (torch.backends.cuda.matmul.allow_tf32 = True, or "
				  "torch.set_float32_matmul_precision('high'); "
				  "torch.backends.cudnn.allow_tf32 = True for convolutions); keep "
				  "GEMM "
				  "dimensions multiples of 8.",
			steps, nsteps);
		if (!f)
			goto out;
		ru_finding_span(f, ctx->a, s, steps, nsteps);
		f->stack_id = nnames_t ? names[0].stack_id : CS_ID_NONE;
		e = f->evidence;
		if (ru_add_kernel_sites(e, a, s, match_class, &c, MAX_SITES, &f->stack_id) ||
		    ru_edit_kernel_time(f, a, s, steps, nsteps, match_class, &c,
					1 / datasheet_speedup(cc.major, cc.minor)))
			goto out;
		cJSON_AddNumberToObject(e, "simt_gemm_ns_per_step", (double)simt_med);
		cJSON_AddNumberToObject(e, "tensor_core_gemm_ns_per_step",
					(double)step_median_of(tensor, steps, nsteps, tmp));
		cJSON_AddNumberToObject(e, "unclassified_gemm_ns_per_step",
					(double)step_median_of(other, steps, nsteps, tmp));
		cJSON_AddNumberToObject(e, "memory_bound_simt_gemm_ns_per_step",
					(double)step_median_of(shortk, steps, nsteps, tmp));
		cJSON_AddNumberToObject(e, "min_wave_ns", MIN_WAVE_NS);
		cJSON_AddNumberToObject(e, "sm_count", c.sm_count);
		cJSON_AddNumberToObject(e, "gpu_kernel_ns_per_step", (double)gpu_med);
		cJSON_AddNumberToObject(e, "share_of_gpu_time",
					gpu_med > 0 ? (double)simt_med / (double)gpu_med : 0.0);
		cJSON_AddNumberToObject(e, "speedup_bound", SPEEDUP);
		if (cc.major >= 0) {
			char v[16];

			snprintf(v, sizeof(v), "%d.%d", cc.major, cc.minor);
			cJSON_AddStringToObject(e, "compute_capability", v);
		} else {
			cJSON_AddNullToObject(e, "compute_capability");
		}
		cJSON_AddBoolToObject(e, "tensor_core_kernels_seen", any_tensor);
		if (ru_add_kernel_names(e, a, names, nnames_t, MAX_NAMES, name_reason, why))
			goto out;
		ru_recur_evidence(e, &r, nsteps);
	}
	rc = 0;
out:
	rc = ru_finish(ctx, f, rc, err);
	free(cls);
	free(why);
	free(simt);
	free(tensor);
	free(other);
	free(gpu);
	free(lost);
	free(tmp);
	free(shortk);
	free(steps);
	free(names);
	return rc;
}
