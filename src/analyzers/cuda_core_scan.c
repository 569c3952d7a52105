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
	char title[320], own[128], b1[32];
	int rc = CS_ERR_NOMEM;

	tmp = malloc(((size_t)n + 1) * sizeof(*tmp));
	if (!tmp || fact_kernel_names(a, s, match_scan, (void *)c, &names, &nnames, &launches))
		goto out;
	for (int32_t i = 0; i < n; i++)
		tmp[i] = gpu[steps[i]];
	gpu_med = cs_median_i64(tmp, n);
	fact_kernel_own_name(nnames ? cs_analysis_string(a, names[0].name_id) : "", own, sizeof(own));
	snprintf(title, sizeof(title),
		 "scan kernels (cumsum) on CUDA cores take %s per step (%.0f%% of the step, "
		 "%.0f%% of GPU time): %s",
		 ru_fmt_ns(b1, sizeof(b1), lost), share * 100,
		 gpu_med > 0 ? 100.0 * (double)lost / (double)gpu_med : 0.0, own);
	f = ru_step_finding(
		ctx, RULE_ID, ru_severity(share), title,
		"Compute the prefix sum as a matmul on the tensor cores: multiply blocks "
		"of the scanned dimension (e.g. 256) by an upper-triangular matrix of ones "
		"in bf16/tf32, then add the running totals of the blocks (a short "
		"cumsum); the estimate is an upper bound, the matmul takes a fraction of "
		"this time.",
		steps, n, lost);
	if (!f)
		goto out;
	f->step_share = share;
	if (nnames)
		f->stack_id = names[0].stack_id;
	e = f->evidence;
	/* the fix as an edit: the scans' time gone, the upper bound the rule states (the matmul
	 * that replaces them takes a fraction of it; docs/replay.md) */
	if (ru_add_kernel_sites(e, a, s, match_scan, (void *)c, MAX_SITES, &f->stack_id) ||
	    ru_edit_kernel_time(f, a, s, steps, n, match_scan, (void *)c, 0))
		goto out;
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
	struct scan_ctx c = {s->pid, NULL, 0};
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
	rc = emit_finding(ctx, &c, gpu, steps, n, lost, share, err);
out:
	free(is_scan);
	free(scan);
	free(gpu);
	free(steps);
	return ru_finish(ctx, NULL, rc, err);
}
