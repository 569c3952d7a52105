/*
 * cuda_core_scan.c - the cuda-core-scan rule: scan kernels (cumsum, cumprod, prefix sums) taking
 * a large share of the steady-state step. A scan over a long dimension runs on the CUDA cores,
 * one block walking each row serially; a matmul with a triangular matrix does the same on the
 * tensor cores many times faster.
 *
 * Kernels are recognised by their own name (PyTorch's tensor_kernel_scan_*, CUB's DeviceScan*,
 * anything named cumsum/cumprod), never by their template arguments: CUB's select and compaction
 * kernels behind nonzero() and masked_select() carry ScanTileState there. docs/rules/
 * cuda-core-scan.md has the decision, its thresholds and the measured values.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cuscope/grow.h"
#include "kernel_names.h"
#include "edits.h"
#include "finding_kit.h"
#include "estimates.h"
#include "sites.h"
#include "rules.h"
#include "cuscope/checked.h"
#include "cuscope/sort.h"

#define RULE_ID RULE_ID_CUDA_CORE_SCAN

/* Scan kernels take at least this share of the median steady step ... */
#define MIN_SHARE 0.05
/* ... in at least this share of the steady steps, and this many. */
#define MIN_STEP_SHARE 0.5
#define MIN_STEPS      3
/* Kernel names listed in the evidence. */
#define MAX_NAMES 3
/* Call sites listed in the evidence. */
#define MAX_SITES 5
/*
 * The suggested fix moves the scanned tensor through memory this many times, in passes that read
 * and write it once in its own float32: the cast of the blocks to bf16 (3/4: 4 bytes read and 2
 * written an element), the GEMM with the triangular matrix (1/2: bf16 in and out), the cast back
 * to float (3/4) and the addition of the block offsets (1). Its arithmetic (2 x 256 multiply-adds
 * an element) takes the tensor cores a fraction of that time.
 */
#define FIX_PASSES 3.0
/* Scan grids told apart when measuring a pass over the scanned tensor. */
#define MAX_GRIDS 8

/* Is a kernel name (own: its function's own name) a scan kernel? */
static int is_scan_name(const char *name, const char *own)
{
	(void)name;
	return strcasestr(own, "scan") || strcasestr(own, "cumsum") || strcasestr(own, "cumprod");
}

struct scan_ctx {
	uint32_t pid;
	const int8_t *is_scan; /* by name id */
	int64_t nnames;
	/* One pass over the scanned tensor (pass_grid: the scans' grid it holds for; -1: none
	 * measured), and how many flips beside such scans measured it. */
	int32_t pass_grid;
	int64_t pass_ns, pass_samples;
};

static int match_scan(const cs_a_kernel *k, void *arg)
{
	const struct scan_ctx *c = arg;

	return k->pid == c->pid && k->name_id >= 0 && k->name_id < c->nnames &&
	       c->is_scan[k->name_id] > 0;
}

static int match_pid(const cs_a_kernel *k, void *arg)
{
	return k->pid == ((const struct scan_ctx *)arg)->pid;
}

/* PyTorch's flip: index_elementwise_kernel<..., flip_kernel_impl<...>> (the own name does not say
 * it). */
static int is_flip_name(const char *name, const char *own)
{
	(void)own;
	return strstr(name, "flip_kernel") != NULL;
}

/*
 * The flip kernels right beside the kernel at position pos of kernel_stream_order on its stream
 * (positions pos - 1 and pos + 1): each one's time into out[(*n)++] (out NULL: counted only).
 */
static void flips_beside(const cs_analysis *a, const int8_t *is_flip, int64_t nflip, int64_t pos,
			 int64_t *out, int64_t *n)
{
	const cs_a_kernel *k = &a->kernels[a->kernel_stream_order[pos]];

	for (int d = -1; d <= 1; d += 2) {
		const cs_a_kernel *o;

		if (pos + d < 0 || pos + d >= a->nkernels)
			continue;
		o = &a->kernels[a->kernel_stream_order[pos + d]];
		if (o->pid != k->pid || o->stream_id != k->stream_id ||
		    o->device_id != k->device_id || o->name_id < 0 || o->name_id >= nflip ||
		    is_flip[o->name_id] <= 0 || o->start == CS_TS_UNKNOWN ||
		    o->end == CS_TS_UNKNOWN || o->end <= o->start)
			continue;
		if (out)
			out[*n] = o->end - o->start;
		(*n)++;
	}
}

/*
 * What one pass over the scanned tensor takes on this GPU, from the trace: PyTorch's backward of a
 * cumsum is flip, scan, flip, and a flip reads and writes the tensor once. The scans of the grid
 * with the most flips beside them get the median of those flips (c->pass_grid, c->pass_ns); none:
 * c->pass_grid -1. 0 or CS_ERR_NOMEM.
 */
static int measure_pass(const cs_analysis *a, struct scan_ctx *c)
{
	int8_t *is_flip = NULL;
	int64_t nflip = 0, count[MAX_GRIDS] = {0}, best = -1, *v = NULL, nv = 0;
	int32_t grid[MAX_GRIDS], ngrids = 0;
	int rc;

	c->pass_grid = -1;
	c->pass_ns = c->pass_samples = 0;
	if (!a->kernel_stream_order)
		return 0;
	rc = fact_kernel_name_marks(a, c->pid, is_flip_name, &is_flip, &nflip);
	if (rc <= 0)
		return rc;
	for (int64_t p = 0; p < a->nkernels; p++) {
		const cs_a_kernel *k = &a->kernels[a->kernel_stream_order[p]];
		int64_t m = 0;
		int32_t g = 0;

		if (!match_scan(k, c))
			continue;
		flips_beside(a, is_flip, nflip, p, NULL, &m);
		if (m == 0)
			continue;
		while (g < ngrids && grid[g] != k->grid_blocks)
			g++;
		if (g == ngrids) {
			if (ngrids == MAX_GRIDS)
				continue;
			grid[ngrids++] = k->grid_blocks;
		}
		count[g] += m;
		if (best < 0 || count[g] > count[best])
			best = g;
	}
	if (best < 0 || !(v = malloc((size_t)count[best] * sizeof(*v)))) {
		free(is_flip);
		return best < 0 ? 0 : CS_ERR_NOMEM;
	}
	for (int64_t p = 0; p < a->nkernels; p++) {
		const cs_a_kernel *k = &a->kernels[a->kernel_stream_order[p]];

		if (match_scan(k, c) && k->grid_blocks == grid[best])
			flips_beside(a, is_flip, nflip, p, v, &nv);
	}
	c->pass_grid = grid[best];
	c->pass_ns = cs_median_i64(v, nv);
	c->pass_samples = nv;
	free(v);
	free(is_flip);
	return 0;
}

/* The fix's time for a scan: FIX_PASSES passes where one was measured for its grid (never more
 * than the scan took), else none (the upper bound); -1 for the other kernels. */
static int64_t fixed_time(const cs_a_kernel *k, int64_t i, void *arg)
{
	const struct scan_ctx *c = arg;
	int64_t t = k->end - k->start, fix;

	(void)i;
	if (!match_scan(k, arg))
		return -1;
	if (c->pass_grid < 0 || k->grid_blocks != c->pass_grid)
		return 0;
	fix = (int64_t)(FIX_PASSES * (double)c->pass_ns);
	return fix < t ? fix : t;
}

/* The fix, as every finding of the rule says it. */
#define FIX_HOW                                                                                   \
	"Compute the prefix sum as a matmul on the tensor cores: view the scanned dimension as "  \
	"blocks of 256, cast them to bf16, multiply by the 256 x 256 upper-triangular matrix of " \
	"ones, cast back to float and add each block the running total of the blocks before it "  \
	"(a short cumsum)"

static int emit_finding(cs_rule_ctx *ctx, const struct scan_ctx *c, const int64_t *gpu,
			const int32_t *steps, int32_t n, int64_t lost, double share, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	struct fact_name_time *names = NULL;
	int32_t nnames = 0;
	int64_t launches = 0, gpu_med, *tmp;
	cs_report_finding *f = NULL;
	cJSON *e;
	char title[320], own[128], b1[32], b2[32], fix[512];
	int rc = CS_ERR_NOMEM;

	tmp = malloc(((size_t)n + 1) * sizeof(*tmp));
	if (!tmp || fact_kernel_names(a, s, match_scan, (void *)c, &names, &nnames, &launches))
		goto out;
	for (int32_t i = 0; i < n; i++)
		tmp[i] = gpu[steps[i]];
	gpu_med = cs_median_i64(tmp, n);
	fact_kernel_own_name(nnames ? cs_analysis_string(a, names[0].name_id) : "", own,
			     sizeof(own));
	snprintf(title, sizeof(title),
		 "scan kernels (cumsum) on CUDA cores take %s per step (%.0f%% of the step, "
		 "%.0f%% of GPU time): %s",
		 ru_fmt_ns(b1, sizeof(b1), lost), share * 100,
		 gpu_med > 0 ? 100.0 * (double)lost / (double)gpu_med : 0.0, own);
	if (c->pass_grid >= 0)
		snprintf(fix, sizeof(fix),
			 "%s; it moves the tensor through memory about %.0f times "
			 "(the casts, the GEMM, the offsets), about %s a scan by this trace's "
			 "passes over it.",
			 FIX_HOW, FIX_PASSES,
			 ru_fmt_ns(b2, sizeof(b2), (int64_t)(FIX_PASSES * (double)c->pass_ns)));
	else
		snprintf(fix, sizeof(fix),
			 "%s; the estimate is an upper bound: the trace does not "
			 "show what a pass over the tensor takes, and the fix costs some.",
			 FIX_HOW);
	f = ru_step_finding(ctx, RULE_ID, ru_severity(share), title, fix, steps, n, lost);
	if (!f)
		goto out;
	f->step_share = share;
	if (nnames)
		f->stack_id = names[0].stack_id;
	e = f->evidence;
	/* the fix as an edit: each scan takes the fix's passes over its tensor, or nothing where no
	 * pass was measured (docs/replay.md) */
	if (ru_add_kernel_sites(e, a, s, match_scan, (void *)c, MAX_SITES, &f->stack_id) ||
	    ru_edit_kernel_times(f, a, s, steps, n, fixed_time, (void *)c))
		goto out;
	if (c->pass_grid >= 0) {
		cJSON_AddNumberToObject(e, "pass_ns", (double)c->pass_ns);
		cJSON_AddNumberToObject(e, "pass_samples", (double)c->pass_samples);
		cJSON_AddNumberToObject(e, "pass_grid_blocks", c->pass_grid);
		cJSON_AddNumberToObject(e, "fix_passes", FIX_PASSES);
	}
	cJSON_AddNumberToObject(e, "scan_ns_per_step", (double)lost);
	cJSON_AddNumberToObject(e, "gpu_kernel_ns_per_step", (double)gpu_med);
	cJSON_AddNumberToObject(e, "share_of_gpu_time",
				gpu_med > 0 ? (double)lost / (double)gpu_med : 0.0);
	cJSON_AddNumberToObject(e, "scan_launches_per_step",
				(double)launches / (double)cs_steps_steady(s));
	cJSON_AddNumberToObject(e, "min_share", MIN_SHARE);
	if (ru_add_kernel_names(e, a, names, nnames, MAX_NAMES, NULL, NULL))
		goto out;
	cJSON_AddNumberToObject(e, "steady_steps", cs_steps_steady(s));
	cJSON_AddNumberToObject(e, "affected_steps", n);
	rc = 0;
out:
	rc = ru_finish(ctx, f, rc, err);
	free(names);
	free(tmp);
	return rc;
}

int cs_rule_cuda_core_scan_check(cs_rule_ctx *ctx, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	struct scan_ctx c = {s->pid, NULL, 0, -1, 0, 0};
	int8_t *is_scan = NULL;
	int64_t *scan = NULL, *gpu = NULL, lost;
	int32_t *steps = NULL, n = 0, steady = cs_steps_steady(s);
	double share;
	int rc = CS_ERR_NOMEM;

	if (steady <= 0 || ctx->step_median <= 0)
		return 0;
	/* each kernel name classified once: 0 unknown, 1 scan, -1 not */
	rc = fact_kernel_name_marks(a, s->pid, is_scan_name, &is_scan, &c.nnames);
	if (rc <= 0)
		goto out;
	rc = CS_ERR_NOMEM;
	c.is_scan = is_scan;
	scan = calloc((size_t)s->n, sizeof(*scan));
	gpu = calloc((size_t)s->n, sizeof(*gpu));
	if (!scan || !gpu)
		goto out;
	cs_steps_kernel_time(a, s, match_scan, &c, scan);
	cs_steps_kernel_time(a, s, match_pid, &c, gpu);
	for (int32_t i = 0; i < s->n; i++)
		if (scan[i] < MIN_SHARE * (double)ctx->step_median)
			scan[i] = 0; /* a negligible share in this step */
	if (ru_steps_nonzero(s, scan, &steps, &n))
		goto out;
	rc = 0;
	if (n < MIN_STEPS || n < MIN_STEP_SHARE * steady)
		goto out;
	lost = cs_steps_median(s, scan, 1);
	share = (double)lost / (double)ctx->step_median;
	if ((rc = measure_pass(a, &c)))
		goto out;
	rc = emit_finding(ctx, &c, gpu, steps, n, lost, share, err);
out:
	free(is_scan);
	free(scan);
	free(gpu);
	free(steps);
	return ru_finish(ctx, NULL, rc, err);
}
