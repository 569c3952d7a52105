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
#include "analyzers/rule_util.h"
#include "util/checked.h"

#define RULE_ID "cuda-core-scan"

/* Scan kernels take at least this share of the median steady step ... */
#define MIN_SHARE 0.05
/* ... in at least this share of the steady steps, and this many. */
#define MIN_STEP_SHARE 0.5
#define MIN_STEPS      3
/* Kernel names listed in the evidence. */
#define MAX_NAMES 3

/* Length of the source name at *p (digits then that many characters), 0 when malformed. */
static size_t source_name(const char **p)
{
	size_t n = 0;

	while (isdigit((unsigned char)**p))
		n = n * 10 + (size_t)(*(*p)++ - '0');
	if (n == 0 || strnlen(*p, n) < n)
		return 0;
	return n;
}

/*
 * The function's own name in a kernel name, into buf: for an Itanium-mangled name the last
 * component of its (nested) name before template arguments begin; for a plain or demangled name
 * the identifier before the first '<' or '(' after the last "::" or space.
 */
static void own_name(const char *name, char *buf, size_t size)
{
	const char *p = name, *last = NULL, *end;
	size_t last_n = 0;

	buf[0] = '\0';
	if (!strncmp(p, "_Z", 2)) {
		p += 2;
		if (*p == 'L')
			p++;
		if (*p == 'N') {
			p++;
			while (*p && strchr("rVKRO", *p))
				p++;
			while (*p) {
				if (isdigit((unsigned char)*p)) {
					size_t n = source_name(&p);

					if (!n)
						break;
					last = p;
					last_n = n;
					p += n;
				} else if (*p == 'S') {
					/* a substitution: St, Sa, ..., or S<seq-id>_ */
					p++;
					if (*p && islower((unsigned char)*p)) {
						p++;
						continue;
					}
					while (*p && *p != '_')
						p++;
					if (*p)
						p++;
				} else {
					break; /* I (template arguments), E, C/D (ctor/dtor), ... */
				}
			}
		} else if (isdigit((unsigned char)*p)) {
			last_n = source_name(&p);
			last = last_n ? p : NULL;
		}
		if (last) {
			if (last_n >= size)
				last_n = size - 1;
			memcpy(buf, last, last_n);
			buf[last_n] = '\0';
			return;
		}
	}
	/* plain or demangled: "void cub::DeviceScanKernel<...>(...)" */
	end = name + strcspn(name, "<(");
	for (p = end; p > name; p--)
		if (p[-1] == ':' || p[-1] == ' ')
			break;
	if ((size_t)(end - p) >= size)
		end = p + size - 1;
	memcpy(buf, p, (size_t)(end - p));
	buf[end - p] = '\0';
}

/* Is a kernel name a scan kernel? */
static int is_scan_name(const char *name)
{
	char own[256];

	own_name(name, own, sizeof(own));
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

struct name_time {
	int64_t name_id;
	int64_t ns, launches, blocks;
	int64_t stack_id;
};

static int cmp_name_time(const void *pa, const void *pb)
{
	const struct name_time *x = pa, *y = pb;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return (x->name_id > y->name_id) - (x->name_id < y->name_id);
}

/* Time, launches and blocks of each scan kernel name in steady steps, most time first. */
static int scan_names(const cs_analysis *a, const cs_steps *s, const struct scan_ctx *c,
		      struct name_time **out, int32_t *n, int64_t *launches)
{
	struct name_time *v = NULL;
	int32_t m = 0;
	size_t cap = 0;

	*launches = 0;
	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];
		int32_t j;

		if (!match_scan(k, (void *)c) || k->start == CS_TS_UNKNOWN ||
		    k->end == CS_TS_UNKNOWN || k->end < k->start ||
		    ru_steady_step(s, cs_launch_time(k->launch_start, k->start)) < 0)
			continue;
		(*launches)++;
		for (j = 0; j < m && v[j].name_id != k->name_id; j++)
			;
		if (j == m) {
			if (cs_grow((void **)&v, &cap, (size_t)m + 1, sizeof(*v))) {
				free(v);
				return CS_ERR_NOMEM;
			}
			memset(&v[m], 0, sizeof(v[m]));
			v[m].name_id = k->name_id;
			v[m].stack_id = CS_ID_NONE;
			m++;
		}
		cs_sat_accum(&v[j].ns, k->end - k->start);
		v[j].launches++;
		cs_sat_accum(&v[j].blocks, k->grid_blocks);
		if (v[j].stack_id == CS_ID_NONE)
			v[j].stack_id = k->stack_id;
	}
	if (m > 1)
		cs_sort(v, (size_t)m, sizeof(*v), cmp_name_time);
	*out = v;
	*n = m;
	return 0;
}

static int emit_finding(cs_rule_ctx *ctx, const struct scan_ctx *c, const int64_t *gpu,
			const int32_t *steps, int32_t n, int64_t lost, double share, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	struct name_time *names = NULL;
	int32_t nnames = 0;
	int64_t launches = 0, gpu_med, *tmp;
	cs_report_finding *f = NULL;
	cJSON *e, *arr;
	char title[320], own[128], b1[32];
	int rc = CS_ERR_NOMEM;

	tmp = malloc(((size_t)n + 1) * sizeof(*tmp));
	if (!tmp || scan_names(a, s, c, &names, &nnames, &launches))
		goto out;
	for (int32_t i = 0; i < n; i++)
		tmp[i] = gpu[steps[i]];
	gpu_med = ru_median(tmp, n);
	own_name(nnames ? cs_analysis_string(a, names[0].name_id) : "", own, sizeof(own));
	snprintf(title, sizeof(title),
		 "scan kernels (cumsum) on CUDA cores take %s per step (%.0f%% of the step, "
		 "%.0f%% of GPU time): %s",
		 ru_fmt_ns(b1, sizeof(b1), lost), share * 100,
		 gpu_med > 0 ? 100.0 * (double)lost / (double)gpu_med : 0.0, own);
	f = cs_finding_new(
		RULE_ID, ru_severity(share), title,
		"Compute the prefix sum as a matmul on the tensor cores: multiply blocks "
		"of the scanned dimension (e.g. 256) by an upper-triangular matrix of ones "
		"in bf16/tf32, then add the running totals of the blocks (a short "
		"cumsum); the estimate is an upper bound, the matmul takes a fraction of "
		"this time.");
	if (!f || cs_finding_set_steps(f, steps, n))
		goto out;
	f->lost_ns_per_step = lost;
	f->step_share = share;
	f->first = s->v[steps[0]].start;
	f->last = s->v[steps[n - 1]].end;
	if (nnames)
		f->stack_id = names[0].stack_id;
	e = f->evidence;
	cJSON_AddNumberToObject(e, "scan_ns_per_step", (double)lost);
	cJSON_AddNumberToObject(e, "gpu_kernel_ns_per_step", (double)gpu_med);
	cJSON_AddNumberToObject(e, "share_of_gpu_time",
				gpu_med > 0 ? (double)lost / (double)gpu_med : 0.0);
	cJSON_AddNumberToObject(e, "scan_launches_per_step",
				(double)launches / (double)cs_steps_steady(s));
	cJSON_AddNumberToObject(e, "min_share", MIN_SHARE);
	arr = cJSON_AddArrayToObject(e, "kernels");
	if (!arr)
		goto out;
	for (int32_t i = 0; i < nnames && i < MAX_NAMES; i++) {
		cJSON *o = cJSON_CreateObject();

		if (!o)
			goto out;
		cJSON_AddItemToArray(arr, o);
		cJSON_AddStringToObject(o, "name", cs_analysis_string(a, names[i].name_id));
		cJSON_AddNumberToObject(o, "ns", (double)names[i].ns);
		cJSON_AddNumberToObject(o, "launches", (double)names[i].launches);
		cJSON_AddNumberToObject(o, "mean_ns", (double)(names[i].ns / names[i].launches));
		cJSON_AddNumberToObject(o, "mean_blocks",
					(double)(names[i].blocks / names[i].launches));
	}
	cJSON_AddNumberToObject(e, "steady_steps", cs_steps_steady(s));
	cJSON_AddNumberToObject(e, "affected_steps", n);
	rc = ru_emit(ctx, f, err);
	free(names);
	free(tmp);
	return rc;
out:
	cs_finding_free(f);
	free(names);
	free(tmp);
	if (rc)
		return cs_error_set(err, rc, "out of memory");
	return 0;
}

static int run(cs_rule_ctx *ctx, cs_error *err)
{
	const cs_analysis *a = ctx->a;
	const cs_steps *s = ctx->steps;
	struct scan_ctx c = {s->pid, NULL, 0};
	int8_t *is_scan = NULL;
	int64_t *scan = NULL, *gpu = NULL, lost;
	int32_t *steps = NULL, n = 0, steady = cs_steps_steady(s);
	double share;
	int rc = CS_ERR_NOMEM, any = 0;

	if (steady <= 0 || ctx->step_median <= 0)
		return 0;
	for (int64_t i = 0; i < a->nkernels; i++)
		if (a->kernels[i].name_id >= c.nnames)
			c.nnames = a->kernels[i].name_id + 1;
	is_scan = calloc((size_t)c.nnames + 1, 1);
	if (!is_scan)
		goto out;
	/* classify each kernel name once: 0 unknown, 1 scan, -1 not */
	for (int64_t i = 0; i < a->nkernels; i++) {
		int64_t id = a->kernels[i].name_id;

		if (id < 0 || a->kernels[i].pid != s->pid || is_scan[id])
			continue;
		is_scan[id] = is_scan_name(cs_analysis_string(a, id)) ? 1 : -1;
		any |= is_scan[id] > 0;
	}
	rc = 0;
	if (!any)
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
	free(is_scan);
	free(scan);
	free(gpu);
	free(steps);
	return rc;
out:
	free(is_scan);
	free(scan);
	free(gpu);
	free(steps);
	if (rc)
		return cs_error_set(err, rc, "out of memory");
	return 0;
}

const cs_analyzer cs_rule_cuda_core_scan = {
	RULE_ID,
	"scan kernels (cumsum over a long dimension) take a large share of the step on the CUDA "
	"cores; a triangular-matrix matmul runs on the tensor cores",
	"000 #13",
	run,
};
