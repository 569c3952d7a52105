/*
 * metrics.c - the metrics of one run that `cuscope diff` and `cuscope gate` compare: the trace
 * loaded (cs_analysis_load), cut into steps (cs_steps_detect, the process with the most kernels)
 * and analyzed (cs_report_run_processes_from: every CUDA process, as `cuscope report`), then
 * reduced to per-step numbers: step time, GPU busy share, kernel time and launches (all and by
 * name), memcpys and memsets by direction, memcpys from or to pageable host memory, host waits,
 * host waits for a device-to-host copy, device allocations and releases, peak device memory,
 * findings; and the per-step samples of the timing metrics (step time, GPU busy share, kernel
 * time of all kernels and of each) that the gate's tests take.
 *
 * A per-step value is the mean over the steady-state steps after dropping the 10% highest and the
 * 10% lowest of them (at least one of each from 3 steps on): a change that every step (or every
 * other step) shows is counted in full, while one odd step (an allocation in the first steady
 * step, the final synchronize that lands in the last step) is not. The table of metrics, with
 * their default thresholds, is here too, and the formatting of their values for people.
 */
#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/host_speed.h"
#include "cuscope/sort.h"
#include "cuscope/grow.h"
#include "cuscope/analyze.h"
#include "cuscope/demangle.h"
#include "cuscope/gate.h"
#include "cuscope/ranks.h"
#include "cuscope/utf8.h"
#include "cuscope/utf8.h"
#include "cuscope/checked.h"
#include "cuscope/timeline.h"
#include "cuscope/u64map.h"

#define US  1000.0
#define MIB (1024.0 * 1024.0)

/* ---- the metrics and their default thresholds (docs/ci.md) ---- */

#define G CS_KIND_GPU
#define W CS_KIND_WALL
#define C CS_KIND_COUNT
#define B CS_KIND_BYTES

static const cs_metric_def metric_defs[CS_GM_COUNT] = {
	[CS_GM_STEP_TIME] =
		{"step_time", "step time (median)", CS_UNIT_NS, 1, {1, 0.02, 200 * US, 0}, W},
	[CS_GM_GPU_BUSY] = {"gpu_busy", "GPU busy share", CS_UNIT_SHARE, 0, {1, 0, 0.05, 0}, W},
	[CS_GM_KERNEL_TOTAL] = {"kernel_time_total",
				"kernel time per step (all)",
				CS_UNIT_NS,
				1,
				{1, 0.02, 200 * US, 0},
				G},
	[CS_GM_LAUNCHES] =
		{"launches", "launches per step (all)", CS_UNIT_COUNT, 1, {1, 0, 0, 0}, C},
	[CS_GM_KERNEL_TIME] =
		{"kernel_time", "kernel time per step", CS_UNIT_NS, 1, {1, 0.10, 50 * US, 0.01}, G},
	[CS_GM_KERNEL_COUNT] =
		{"kernel_count", "kernel launches per step", CS_UNIT_COUNT, 1, {0, 0.10, 1, 0}, C},
	[CS_GM_HTOD_COUNT] = {"memcpy_htod_count",
			      "HtoD copies per step",
			      CS_UNIT_COUNT,
			      1,
			      {1, 0.10, 0.5, 0},
			      C},
	[CS_GM_HTOD_BYTES] = {"memcpy_htod_bytes",
			      "HtoD bytes per step",
			      CS_UNIT_BYTES,
			      1,
			      {1, 0.10, 1 * MIB, 0},
			      B},
	[CS_GM_DTOH_COUNT] = {"memcpy_dtoh_count",
			      "DtoH copies per step",
			      CS_UNIT_COUNT,
			      1,
			      {1, 0.10, 0.5, 0},
			      C},
	[CS_GM_DTOH_BYTES] = {"memcpy_dtoh_bytes",
			      "DtoH bytes per step",
			      CS_UNIT_BYTES,
			      1,
			      {1, 0.10, 1 * MIB, 0},
			      B},
	[CS_GM_DTOD_COUNT] = {"memcpy_dtod_count",
			      "DtoD copies per step",
			      CS_UNIT_COUNT,
			      1,
			      {1, 0.10, 0.5, 0},
			      C},
	[CS_GM_DTOD_BYTES] = {"memcpy_dtod_bytes",
			      "DtoD bytes per step",
			      CS_UNIT_BYTES,
			      1,
			      {1, 0.10, 1 * MIB, 0},
			      B},
	[CS_GM_OTHER_COUNT] = {"memcpy_other_count",
			       "other copies per step",
			       CS_UNIT_COUNT,
			       1,
			       {1, 0.10, 0.5, 0},
			       C},
	[CS_GM_OTHER_BYTES] = {"memcpy_other_bytes",
			       "other copy bytes per step",
			       CS_UNIT_BYTES,
			       1,
			       {1, 0.10, 1 * MIB, 0},
			       B},
	[CS_GM_MEMSET_COUNT] =
		{"memset_count", "memsets per step", CS_UNIT_COUNT, 1, {0, 0.10, 0.5, 0}, C},
	[CS_GM_MEMSET_BYTES] = {"memset_bytes",
				"memset bytes per step",
				CS_UNIT_BYTES,
				1,
				{0, 0.10, 1 * MIB, 0},
				B},
	[CS_GM_PAGEABLE_COUNT] =
		{"pageable_copies", "pageable copies per step", CS_UNIT_COUNT, 1, {1, 0, 0, 0}, C},
	[CS_GM_HOST_WAITS] =
		{"host_waits", "host waits per step", CS_UNIT_COUNT, 1, {1, 0, 0, 0}, C},
	[CS_GM_D2H_SYNCS] = {"d2h_syncs", "D2H syncs per step", CS_UNIT_COUNT, 1, {1, 0, 0, 0}, C},
	[CS_GM_ALLOCS] =
		{"device_allocs", "device allocations per step", CS_UNIT_COUNT, 1, {1, 0, 0, 0}, C},
	[CS_GM_FREES] =
		{"device_frees", "device releases per step", CS_UNIT_COUNT, 1, {0, 0, 0, 0}, C},
	[CS_GM_PEAK_MEMORY] =
		{"peak_memory", "peak device memory", CS_UNIT_BYTES, 1, {1, 0.10, 256 * MIB, 0}, B},
	[CS_GM_FINDINGS] =
		{"findings", "findings", CS_UNIT_COUNT, 1, {1, 0, 0, 0}, CS_KIND_FINDINGS},
	/* relative: a share of the step time, not of the place's own time (docs/ci.md) */
	[CS_GM_HOST_GAP] = {"host_gap",
			    "host time before a launch",
			    CS_UNIT_NS,
			    1,
			    {1, 0.02, 200 * US, 0},
			    W},
};

#undef G
#undef W
#undef C
#undef B

const char *cs_metric_kind_name(int kind)
{
	static const char *const names[] = {"wall", "GPU", "count", "bytes", "findings"};

	return kind >= 0 && kind <= CS_KIND_FINDINGS ? names[kind] : "count";
}

const cs_metric_def *cs_metric_get(int id)
{
	return id >= 0 && id < CS_GM_COUNT ? &metric_defs[id] : NULL;
}

char *cs_confidence_format(char *buf, size_t size, double c)
{
	if (c >= 0.9995)
		snprintf(buf, size, ">99.9%%");
	else if (c < 0.0005)
		snprintf(buf, size, "<0.1%%");
	else
		snprintf(buf, size, "%.1f%%", 100 * c);
	return buf;
}

/* "+200.0 us" -> "+200 us", "+1.00 MiB" -> "+1 MiB", "0.50" -> "0.5": trailing zeros dropped. */
static void strip_zeros(char *s)
{
	char *dot = strchr(s, '.'), *end;

	if (!dot)
		return;
	for (end = dot + 1; *end >= '0' && *end <= '9'; end++)
		;
	{
		char *z = end;

		while (z > dot + 1 && z[-1] == '0')
			z--;
		if (z == dot + 1)
			z = dot;
		memmove(z, end, strlen(end) + 1);
	}
}

char *cs_threshold_format(char *buf, size_t size, int metric, const cs_threshold *t)
{
	const cs_metric_def *def = cs_metric_get(metric);
	const char *dir = def->higher_is_worse ? "increase" : "decrease";
	char a[64];

	if (!t->gate && metric == CS_GM_HOST_GAP) {
		cs_fmt_value(a, sizeof(a), def->unit, t->abs, 1);
		strip_zeros(a);
		snprintf(buf, size, "not gated (when gated: +%g%% of the step and %s)", 100 * t->rel,
			 a);
	} else if (!t->gate) {
		snprintf(buf, size, "not gated");
	} else if (metric == CS_GM_FINDINGS) {
		if (t->abs > 0)
			snprintf(buf, size, "more than %g new findings", t->abs);
		else
			snprintf(buf, size, "any new finding");
	} else if (t->rel <= 0 && t->abs <= 0) {
		snprintf(buf, size, "any %s", dir);
	} else {
		cs_fmt_value(a, sizeof(a), def->unit, def->higher_is_worse ? t->abs : -t->abs, 1);
		strip_zeros(a);
		if (metric == CS_GM_HOST_GAP && t->rel > 0)
			snprintf(buf, size, "+%g%% of the step%s%s", 100 * t->rel,
				 t->abs > 0 ? " and " : "", t->abs > 0 ? a : "");
		else if (t->rel > 0 && t->abs > 0)
			snprintf(buf, size, "%s%g%% and %s", def->higher_is_worse ? "+" : "-",
				 100 * t->rel, a);
		else if (t->rel > 0)
			snprintf(buf, size, "%s%g%%", def->higher_is_worse ? "+" : "-",
				 100 * t->rel);
		else
			snprintf(buf, size, "%s", a);
	}
	return buf;
}

/* ---- folding kernel names ---- */

static int is_hex(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/*
 * Length of an nvcc anonymous namespace name at s ("_GLOBAL__N__21739cd4_20_layer_norm_kernel_cu_
 * 9c5ada8a": a hash, the length and name of the source file, a hash), or 0.
 */
static size_t anon_namespace_len(const char *s)
{
	const char *p = s + 12;
	size_t file = 0;

	if (strncmp(s, "_GLOBAL__N__", 12))
		return 0;
	while (is_hex(*p))
		p++;
	if (p == s + 12 || *p++ != '_' || !is_digit(*p))
		return 0;
	while (is_digit(*p))
		file = file * 10 + (size_t)(*p++ - '0');
	if (*p++ != '_' || strnlen(p, file) < file)
		return 0;
	p += file;
	if (*p++ != '_')
		return 0;
	for (int i = 0; i < 8; i++, p++)
		if (!is_hex(*p))
			return 0;
	return (size_t)(p - s);
}

/* Is s (len bytes) a number suffix: digits, 0x and hex digits, or 6+ hex digits with a digit? */
static int number_token(const char *s, size_t len)
{
	size_t i, digits = 0;

	if (len == 0)
		return 0;
	for (i = 0; i < len && is_digit(s[i]); i++)
		;
	if (i == len)
		return 1;
	if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		for (i = 2; i < len && is_hex(s[i]); i++)
			;
		return i == len;
	}
	if (len < 6)
		return 0;
	for (i = 0; i < len; i++) {
		if (!is_hex(s[i]))
			return 0;
		digits += is_digit(s[i]) != 0;
	}
	return digits > 0;
}

/* The operator spellings that contain '<' or '>' (longest first). */
static size_t operator_len(const char *s)
{
	static const char *const ops[] = {"<=>", "<<=", ">>=", "->*", "<<", ">>",
					  "<=",	 ">=",	"->",  "<",   ">"};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strncmp(s, ops[i], strlen(ops[i])))
			return strlen(ops[i]);
	return 0;
}

char *cs_kernel_fold(const char *name)
{
	char *out, *w;
	const char *s = cs_demangle(name ? name : "");
	size_t n, depth = 0;

	n = strlen(s);
	/* "(anonymous namespace)" is longer than what it replaces only in demangled names */
	out = malloc(n + 32 + n / 12 * 10);
	if (!out)
		return NULL;
	/* anonymous namespace hashes, template arguments */
	for (w = out; *s;) {
		size_t k = anon_namespace_len(s);

		if (k) {
			if (!depth)
				w += sprintf(w, "(anonymous namespace)");
			s += k;
		} else if (!strncmp(s, "operator", 8) && (k = operator_len(s + 8)) != 0) {
			if (!depth) {
				memcpy(w, s, 8 + k);
				w += 8 + k;
			}
			s += 8 + k;
			/* "operator< <int>": the space keeps the template arguments apart */
			if (s[0] == ' ' && s[1] == '<')
				s++;
		} else if (*s == '<') {
			if (!depth) {
				*w++ = '<';
				*w++ = '>';
			}
			depth++;
			s++;
		} else if (*s == '>' && depth) {
			depth--;
			s++;
		} else {
			if (!depth)
				*w++ = *s;
			s++;
		}
	}
	*w = '\0';

	/* the parameter list */
	n = strlen(out);
	while (n > 0 && out[n - 1] == ' ')
		out[--n] = '\0';
	if (n > 0 && out[n - 1] == ')') {
		size_t i = n - 1;
		int d = 0;

		for (;; i--) {
			if (out[i] == ')')
				d++;
			else if (out[i] == '(' && --d == 0)
				break;
			if (i == 0)
				break;
		}
		if (d == 0 && i > 0 && strcmp(out + i, "(anonymous namespace)"))
			out[i] = '\0';
	}
	/* the return type: what comes before the last space outside parentheses and braces */
	{
		char *last = NULL;
		int d = 0;

		for (char *p = out; *p; p++) {
			if (*p == '(' || *p == '{')
				d++;
			else if ((*p == ')' || *p == '}') && d > 0)
				d--;
			else if (*p == ' ' && d == 0)
				last = p;
		}
		if (last && last[1])
			memmove(out, last + 1, strlen(last + 1) + 1);
	}
	/* number and hex suffixes: "_0", ".12", "$0x1f", "_9c5ada8a" */
	for (;;) {
		size_t len = strlen(out), i = len;

		while (i > 0 && out[i - 1] != '_' && out[i - 1] != '.' && out[i - 1] != '$')
			i--;
		if (i <= 1 || !number_token(out + i, len - i))
			break;
		out[i - 1] = '\0';
	}
	return out;
}

/* ---- small tables ---- */

static uint64_t hash_bytes(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* Kernel names by text; groups are the kernels of one (folded) name. */
struct name_table {
	char **names; /* group -> name (owned) */
	int32_t n, cap;
	int32_t *slots; /* group + 1, 0 = empty */
	size_t nslots;
};

static int name_table_grow(struct name_table *t)
{
	size_t nslots = t->nslots ? t->nslots * 2 : 256;
	int32_t *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return CS_ERR_NOMEM;
	for (int32_t g = 0; g < t->n; g++) {
		size_t h = hash_bytes(t->names[g]) & (nslots - 1);

		while (slots[h])
			h = (h + 1) & (nslots - 1);
		slots[h] = g + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = nslots;
	return 0;
}

/* The group of name, created on first sight (taking name, or freeing it); -1 without memory. */
static int32_t name_table_get(struct name_table *t, char *name)
{
	size_t h;

	if (!name)
		return -1;
	if ((size_t)(t->n + 1) * 2 > t->nslots && name_table_grow(t)) {
		free(name);
		return -1;
	}
	h = hash_bytes(name) & (t->nslots - 1);
	while (t->slots[h]) {
		int32_t g = t->slots[h] - 1;

		if (!strcmp(t->names[g], name)) {
			free(name);
			return g;
		}
		h = (h + 1) & (t->nslots - 1);
	}
	if (t->n == t->cap) {
		int32_t cap = t->cap ? t->cap * 2 : 64;
		char **nv = realloc(t->names, (size_t)cap * sizeof(*nv));

		if (!nv) {
			free(name);
			return -1;
		}
		t->names = nv;
		t->cap = cap;
	}
	t->names[t->n] = name;
	t->slots[h] = t->n + 1;
	return t->n++;
}

static void name_table_free(struct name_table *t)
{
	for (int32_t g = 0; g < t->n; g++)
		free(t->names[g]);
	free(t->names);
	free(t->slots);
}

/* ---- per-step values ---- */

/* Steps dropped at each end of n sorted steady-state values. */
static int32_t trim_count(int32_t n)
{
	if (n < 3)
		return 0;
	return n / 10 > 1 ? n / 10 : 1;
}

/*
 * Trimmed mean of n values: zeros zeros and the m = n - zeros values of v (sorted here). Returns
 * 0 when n is 0.
 */
static double trimmed_mean(double *v, int32_t m, int32_t zeros)
{
	int32_t n = m + zeros, k = trim_count(n);
	double sum = 0;

	if (n <= 0)
		return 0;
	cs_sort_double(v, (size_t)m);
	/* values below 0 do not occur: the zeros come first */
	for (int32_t i = k; i < n - k; i++)
		if (i >= zeros)
			sum += v[i - zeros];
	return sum / (double)(n - 2 * k);
}

/* What a run is being reduced from. */
struct run_ctx {
	const cs_analysis *a;
	const cs_steps *s;
	int32_t *ord;	/* step index -> steady ordinal, or -1 */
	int32_t steady; /* steady steps (all steps when none is steady) */
	double *tmp;	/* steady slots */
};

/* Slots of the per-step arrays (never 0, so that calloc does not return NULL for an empty run). */
static size_t steady_slots(const struct run_ctx *c)
{
	return c->steady > 0 ? (size_t)c->steady : 1;
}

/* Steady ordinal of host time t, or -1. */
static int32_t steady_at(const struct run_ctx *c, int64_t t)
{
	int i = cs_steps_find(c->s, t);

	return i < 0 ? -1 : c->ord[i];
}

/* The trimmed mean of per-step values (steady slots). */
static double per_step(const struct run_ctx *c, const double *v)
{
	memcpy(c->tmp, v, (size_t)c->steady * sizeof(*v));
	return trimmed_mean(c->tmp, c->steady, 0);
}

/* The plain mean of per-step values (steady slots): what an exact count is judged by too. */
static double plain_mean(const struct run_ctx *c, const double *v)
{
	double sum = 0;

	for (int32_t i = 0; i < c->steady; i++)
		sum += v[i];
	return c->steady > 0 ? sum / c->steady : 0;
}

/* ---- a GPU shared with other processes ---- */

struct span {
	int64_t start, end;
	int32_t device;
};

static int cmp_span(const void *pa, const void *pb)
{
	const struct span *x = pa, *y = pb;

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

/*
 * The GPUs of a trace: a process's device number -> one key per physical GPU (its UUID), since
 * device numbers are per process (CUDA_VISIBLE_DEVICES: every rank's GPU may be its device 0).
 * The device rows are sorted, never scanned per kernel or per device: a trace listing 40,000 GPUs
 * costs O(n log n).
 */
struct gpu_row {
	char uuid[64];
	uint32_t pid;
	int32_t device, order; /* order: the row's place in the device table */
};
struct gpu_key {
	uint32_t pid;
	int32_t device, key, order;
};
struct gpu_keys {
	struct gpu_row *rows; /* while the table is read */
	size_t rcap;
	struct gpu_key *v;	/* by pid, device, order */
	struct gpu_key *by_dev; /* by device, order */
	int32_t n;
};

static int gpu_key_cb(const cs_device *d, void *arg)
{
	struct gpu_keys *g = arg;
	struct gpu_row *r;

	if (!d->uuid || !d->uuid[0])
		return 0;
	if (g->n == INT32_MAX)
		return 0;
	if (cs_grow((void **)&g->rows, &g->rcap, (size_t)g->n + 1, sizeof(*g->rows)))
		return CS_ERR_NOMEM;
	r = &g->rows[g->n];
	snprintf(r->uuid, sizeof(r->uuid), "%s", d->uuid);
	r->pid = d->pid;
	r->device = d->device_id;
	r->order = g->n++;
	return 0;
}

static int cmp_row_uuid(const void *pa, const void *pb)
{
	const struct gpu_row *x = pa, *y = pb;
	int c = strcmp(x->uuid, y->uuid);

	return c ? c : (x->order > y->order) - (x->order < y->order);
}

static int cmp_key_pid(const void *pa, const void *pb)
{
	const struct gpu_key *x = pa, *y = pb;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	return (x->order > y->order) - (x->order < y->order);
}

static int cmp_key_dev(const void *pa, const void *pb)
{
	const struct gpu_key *x = pa, *y = pb;

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	return (x->order > y->order) - (x->order < y->order);
}

/* One key per distinct UUID, and the rows sorted for gpu_key_of. 0 or CS_ERR_NOMEM. */
static int gpu_keys_index(struct gpu_keys *g)
{
	int32_t key = -1;

	if (g->n == 0)
		return 0;
	g->v = malloc((size_t)g->n * sizeof(*g->v));
	g->by_dev = malloc((size_t)g->n * sizeof(*g->by_dev));
	if (!g->v || !g->by_dev)
		return CS_ERR_NOMEM;
	cs_sort(g->rows, (size_t)g->n, sizeof(*g->rows), cmp_row_uuid);
	for (int32_t i = 0; i < g->n; i++) {
		const struct gpu_row *r = &g->rows[i];

		if (i == 0 || strcmp(r->uuid, g->rows[i - 1].uuid))
			key++;
		g->v[i] = (struct gpu_key){r->pid, r->device, key, r->order};
	}
	memcpy(g->by_dev, g->v, (size_t)g->n * sizeof(*g->v));
	cs_sort(g->v, (size_t)g->n, sizeof(*g->v), cmp_key_pid);
	cs_sort(g->by_dev, (size_t)g->n, sizeof(*g->by_dev), cmp_key_dev);
	free(g->rows);
	g->rows = NULL;
	return 0;
}

static void gpu_keys_free(struct gpu_keys *g)
{
	free(g->rows);
	free(g->v);
	free(g->by_dev);
}

/* The first row of v (n rows sorted by cmp) that is not less than key. */
static int32_t key_lower_bound(const struct gpu_key *v, int32_t n, const struct gpu_key *key,
			       int (*cmp)(const void *, const void *))
{
	int32_t lo = 0, hi = n;

	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;

		if (cmp(&v[mid], key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The key of device dev of process pid: its GPU's; for a process whose devices were not recorded,
 * the GPU another process has under that number; else one key per device number. */
static int32_t gpu_key_of(const struct gpu_keys *g, uint32_t pid, int32_t dev)
{
	struct gpu_key want = {pid, dev, 0, INT32_MIN};
	int32_t i;

	if (g->n == 0 || !g->v)
		return -1 - (dev >= 0 ? dev : 0);
	/* the process's own row for the device, the first of the table when several */
	i = key_lower_bound(g->v, g->n, &want, cmp_key_pid);
	if (i < g->n && g->v[i].pid == pid && g->v[i].device == dev)
		return g->v[i].key;
	want.device = INT32_MIN;
	i = key_lower_bound(g->v, g->n, &want, cmp_key_pid);
	if (i < g->n && g->v[i].pid == pid)
		return -1 - (dev >= 0 ? dev : 0); /* recorded, but not this device */
	want.device = dev;
	i = key_lower_bound(g->by_dev, g->n, &want, cmp_key_dev);
	if (i < g->n && g->by_dev[i].device == dev)
		return g->by_dev[i].key;
	return -1 - (dev >= 0 ? dev : 0);
}

/*
 * The share of the steps' process's steady kernel time during which a kernel of another process
 * ran on the same GPU (the same UUID; the same device number when the trace has none): the other
 * processes' kernels merged into busy intervals per GPU, each kernel of the process cut against
 * them. 0 or CS_ERR_NOMEM.
 */
static int shared_gpu(const struct run_ctx *c, cs_trace *t, cs_run *out)
{
	const cs_analysis *a = c->a;
	struct span *v = malloc((size_t)(a->nkernels > 0 ? a->nkernels : 1) * sizeof(*v));
	int64_t n = 0, m = 0, own = 0, shared = 0;
	struct gpu_keys g = {0};
	cs_error err = {0, ""};

	out->shared_gpu = 0;
	if (!v)
		return CS_ERR_NOMEM;
	if (cs_trace_each_device(t, gpu_key_cb, &g, &err) < 0)
		g.n = 0; /* no device table: device numbers alone */
	if (gpu_keys_index(&g)) {
		free(v);
		gpu_keys_free(&g);
		return CS_ERR_NOMEM;
	}
	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];

		if (k->pid == c->s->pid || k->start == CS_TS_UNKNOWN || k->end == CS_TS_UNKNOWN ||
		    k->end <= k->start)
			continue;
		v[n].start = k->start;
		v[n].end = k->end;
		v[n].device = gpu_key_of(&g, k->pid, k->device_id);
		n++;
	}
	cs_sort(v, (size_t)n, sizeof(*v), cmp_span);
	for (int64_t i = 0; i < n; i++) { /* merged, per device */
		if (m > 0 && v[m - 1].device == v[i].device && v[i].start <= v[m - 1].end) {
			if (v[i].end > v[m - 1].end)
				v[m - 1].end = v[i].end;
			continue;
		}
		v[m++] = v[i];
	}
	for (int64_t i = 0; i < a->nkernels && m > 0; i++) {
		const cs_a_kernel *k = &a->kernels[i];
		int64_t lo = 0, hi = m;
		int32_t key;

		if (k->pid != c->s->pid || k->start == CS_TS_UNKNOWN || k->end == CS_TS_UNKNOWN ||
		    k->end <= k->start ||
		    steady_at(c, cs_launch_time(k->launch_start, k->start)) < 0)
			continue;
		key = gpu_key_of(&g, k->pid, k->device_id);
		own += k->end - k->start;
		/* the first merged interval of the device that ends after the kernel starts */
		while (lo < hi) {
			int64_t mid = lo + (hi - lo) / 2;

			if (v[mid].device < key || (v[mid].device == key && v[mid].end <= k->start))
				lo = mid + 1;
			else
				hi = mid;
		}
		for (int64_t j = lo; j < m && v[j].device == key && v[j].start < k->end; j++) {
			int64_t s0 = v[j].start > k->start ? v[j].start : k->start;
			int64_t s1 = v[j].end < k->end ? v[j].end : k->end;

			if (s1 > s0)
				shared += s1 - s0;
		}
	}
	free(v);
	gpu_keys_free(&g);
	out->shared_gpu = own > 0 ? (double)shared / (double)own : 0;
	return 0;
}

/* ---- kernels ---- */

struct kernel_hit {
	int32_t group, step;
	int64_t ns;
};

static int cmp_run_kernel(const void *pa, const void *pb)
{
	return strcmp(((const cs_run_kernel *)pa)->name, ((const cs_run_kernel *)pb)->name);
}

/* A kernel launch of the steady steps: its time, its kernel (the index in the analysis' kernels),
 * thread and steady step (launch_pace()). */
struct pace_launch {
	int64_t t;
	int64_t kernel;
	uint32_t tid;
	int32_t step;
};

/* The launches of the launch pace's thread in time order, kernels of the same time in the order
 * of the analysis' kernels (launch_pace()); none when that thread's id is 0. */
struct pace_launches {
	struct pace_launch *v;
	int64_t n;
};

/*
 * The host's launch pace (cs_run.launch_pace): on the thread with the most kernel launches in the
 * steady steps, the median time from one launch to the next (the kernels of one graph launch,
 * which share its time, count once). 0 with fewer than CS_HOST_INDEX_MIN intervals. *pl gets
 * that thread's launches, for host_gaps() (the caller frees pl->v).
 */
static int launch_pace(const struct run_ctx *c, cs_run *out, struct pace_launches *pl)
{
	static const cs_sort_key by_tid_time[] = {
		{offsetof(struct pace_launch, tid), CS_KEY_U32},
		{offsetof(struct pace_launch, t), CS_KEY_I64},
	};
	const cs_analysis *a = c->a;
	struct pace_launch *v = malloc((size_t)(a->nkernels > 0 ? a->nkernels : 1) * sizeof(*v));
	double *d = NULL;
	int64_t n = 0, best = 0, best_n = 0, nd = 0;

	out->launch_pace = 0;
	pl->v = NULL;
	pl->n = 0;
	if (!v)
		return CS_ERR_NOMEM;
	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];
		int32_t st;

		if (k->pid == c->s->pid && k->launch_start != CS_TS_UNKNOWN &&
		    (st = steady_at(c, k->launch_start)) >= 0)
			v[n++] = (struct pace_launch){k->launch_start, i, k->launch_tid, st};
	}
	/* stable: the kernels of one time stay in their order */
	cs_sort_records(v, (size_t)n, sizeof(*v), by_tid_time, 2);
	for (int64_t i = 0, j; i < n; i = j) {
		for (j = i; j < n && v[j].tid == v[i].tid; j++)
			;
		if (j - i > best_n) {
			best = i;
			best_n = j - i;
		}
	}
	d = malloc((size_t)(best_n > 0 ? best_n : 1) * sizeof(*d));
	if (!d) {
		free(v);
		return CS_ERR_NOMEM;
	}
	for (int64_t i = best + 1; i < best + best_n; i++)
		if (v[i].t > v[i - 1].t)
			d[nd++] = (double)(v[i].t - v[i - 1].t);
	if (nd >= CS_HOST_INDEX_MIN)
		out->launch_pace = cs_stat_median(d, nd);
	free(d);
	if (best_n > 0 && v[best].tid != 0) {
		memmove(v, v + best, (size_t)best_n * sizeof(*v));
		pl->v = v;
		pl->n = best_n;
	} else {
		free(v);
	}
	return 0;
}

/* The median duration of the steady steps' kernel launch calls (cs_run.launch_call), and the
 * launch pace with its thread's launches (*pl). */
static int launch_calls(const struct run_ctx *c, cs_run *out, struct pace_launches *pl)
{
	const cs_analysis *a = c->a;
	double *v = malloc((size_t)(a->nkernels > 0 ? a->nkernels : 1) * sizeof(*v));
	int64_t n = 0;

	if (!v)
		return CS_ERR_NOMEM;
	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];

		if (k->pid != c->s->pid || k->launch_start == CS_TS_UNKNOWN ||
		    k->launch_end == CS_TS_UNKNOWN || k->launch_end < k->launch_start ||
		    steady_at(c, k->launch_start) < 0)
			continue;
		v[n++] = (double)(k->launch_end - k->launch_start);
	}
	out->launch_call = 0;
	if (n >= CS_HOST_INDEX_MIN)
		out->launch_call = cs_stat_median(v, n);
	free(v);
	return launch_pace(c, out, pl);
}

/* ---- host time at each place of the step (cs_run.gaps) ---- */

/* A launch of the launch pace's thread in a steady step. */
struct gap_launch {
	int64_t start, end; /* the launch call */
	int32_t step, group;
};

/* A gap before a launch: its place (the index of cs_run.gaps being built), step and length. */
struct gap_hit {
	int32_t place, step;
	int64_t ns;
};

static int cmp_gap(const void *pa, const void *pb)
{
	const cs_run_kernel *x = pa, *y = pb;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->place > y->place) - (x->place < y->place);
}

/*
 * The host's time before each launch of the steady steps on the thread of the launch pace (pl):
 * from the end of that thread's previous launch call (in the same step or the one before) to
 * the start of this one, whatever the host did in between (Python, other CUDA calls, waits).
 * Each place of the step is the k-th launch of a kernel name in it (group: the name's index in
 * gname, the names as compared); out->gaps gets one entry per place, its per-step samples and
 * trimmed mean as a kernel's time (cs_run_kernel, place = k). The kernels of one graph launch,
 * which share its call, count once. Work added to a host-bound step in one place shows there
 * in full, however much the rest of the step varies (docs/ci.md, "Host time at one place").
 */
static int host_gaps(const struct run_ctx *c, const struct u64map *ids, char *const *gname,
		     const struct pace_launches *pl, cs_run *out)
{
	const cs_analysis *a = c->a;
	struct gap_launch *v = malloc((size_t)(pl->n > 0 ? pl->n : 1) * sizeof(*v));
	struct gap_hit *hits = NULL;
	struct u64map places; /* (group << 32 | k) -> place */
	int32_t *occ = NULL, nplaces = 0, cap = 0;
	double *vt = malloc(steady_slots(c) * sizeof(*vt));
	int64_t n = 0, nhits = 0;
	int rc = CS_ERR_NOMEM;

	u64map_init(&places, sizeof(int32_t));
	if (!v || !vt)
		goto out;
	/* in time order already */
	for (int64_t i = 0; i < pl->n; i++) {
		const cs_a_kernel *k = &a->kernels[pl->v[i].kernel];
		const int32_t *g;

		if (k->launch_end == CS_TS_UNKNOWN || !(g = u64map_get(ids, (uint64_t)k->name_id)))
			continue;
		v[n++] = (struct gap_launch){k->launch_start, k->launch_end, pl->v[i].step, *g};
	}
	hits = malloc((size_t)(n > 0 ? n : 1) * sizeof(*hits));
	occ = calloc((size_t)(a->nkernels > 0 ? a->nkernels : 1), sizeof(*occ));
	if (!hits || !occ)
		goto out;
	for (int64_t i = 0, first = 0; i < n; i++) {
		int32_t *p;
		uint64_t key;
		int created;

		if (i > 0 && v[i].step != v[i - 1].step) {
			for (int64_t j = first; j < i; j++) /* a new step: count afresh */
				occ[v[j].group] = 0;
			first = i;
		}
		if (i > 0 && v[i].start == v[i - 1].start)
			continue; /* a kernel of the same graph launch */
		key = (uint64_t)(uint32_t)v[i].group << 32 | (uint32_t)occ[v[i].group]++;
		if (i == 0 || v[i].step - v[i - 1].step > 1)
			continue; /* no launch of this thread before it in this step or the last */
		p = u64map_put(&places, key, &created);
		if (!p)
			goto out;
		if (created) {
			if (nplaces == cap) {
				int32_t ncap = cap ? 2 * cap : 256;
				cs_run_kernel *nv = realloc(out->gaps, (size_t)ncap * sizeof(*nv));

				if (!nv)
					goto out;
				out->gaps = nv;
				cap = ncap;
			}
			memset(&out->gaps[nplaces], 0, sizeof(out->gaps[nplaces]));
			out->gaps[nplaces].name = strdup(gname[v[i].group]);
			out->gaps[nplaces].place = occ[v[i].group];
			if (!out->gaps[nplaces].name)
				goto out;
			*p = nplaces++;
			out->ngaps = nplaces;
		}
		hits[nhits++] = (struct gap_hit){*p, v[i].step,
						 v[i].start > v[i - 1].end ? v[i].start - v[i - 1].end
									   : 0};
	}
	{
		static const cs_sort_key by_place_step[] = {
			{offsetof(struct gap_hit, place), CS_KEY_I32},
			{offsetof(struct gap_hit, step), CS_KEY_I32},
		};

		cs_sort_records(hits, (size_t)nhits, sizeof(*hits), by_place_step, 2);
	}
	for (int64_t i = 0; i < nhits;) {
		cs_run_kernel *g = &out->gaps[hits[i].place];
		int64_t j = i;
		int32_t m = 0;

		for (; j < nhits && hits[j].place == hits[i].place; j++)
			; /* one hit per step: the k-th launch of a name happens once in it */
		g->sample_step = malloc((size_t)(j - i) * sizeof(*g->sample_step));
		g->sample_ns = malloc((size_t)(j - i) * sizeof(*g->sample_ns));
		if (!g->sample_step || !g->sample_ns)
			goto out;
		for (; i < j; i++, m++) {
			g->sample_step[m] = hits[i].step;
			vt[m] = g->sample_ns[m] = (double)hits[i].ns;
		}
		g->nsamples = m;
		g->count_per_step = (double)m / (double)c->steady;
		g->time_per_step = trimmed_mean(vt, m, c->steady - m);
	}
	cs_sort(out->gaps, (size_t)out->ngaps, sizeof(*out->gaps), cmp_gap);
	rc = 0;
out:
	u64map_free(&places);
	free(v);
	free(hits);
	free(occ);
	free(vt);
	return rc;
}

static int run_kernels(const struct run_ctx *c, int fold, cs_run *out)
{
	const cs_analysis *a = c->a;
	struct name_table names = {0};
	struct u64map
		ids; /* StringIds id -> int32_t group: each name looked up (and folded) once */
	struct kernel_hit *hits = NULL;
	double *time = NULL, *count = NULL, *vt = NULL, *vc = NULL;
	char **gname = NULL; /* group -> its name in out->kernels */
	int64_t nhits = 0, total = 0;
	struct pace_launches pl = {NULL, 0};
	int rc = CS_ERR_NOMEM;

	u64map_init(&ids, sizeof(int32_t));
	hits = malloc((size_t)(a->nkernels > 0 ? a->nkernels : 1) * sizeof(*hits));
	time = calloc(steady_slots(c), sizeof(*time));
	count = calloc(steady_slots(c), sizeof(*count));
	vt = malloc(steady_slots(c) * sizeof(*vt));
	vc = malloc(steady_slots(c) * sizeof(*vc));
	if (!hits || !time || !count || !vt || !vc)
		goto out;
	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];
		int32_t st = steady_at(c, cs_launch_time(k->launch_start, k->start)), *g;
		int64_t ns = 0;
		int created;

		if (st < 0 || k->pid != c->s->pid)
			continue;
		g = u64map_put(&ids, (uint64_t)k->name_id, &created);
		if (!g)
			goto out;
		if (created) {
			const char *name = cs_analysis_string(a, k->name_id);

			*g = name_table_get(&names, fold ? cs_kernel_fold(name)
							 : strdup(*name ? name : "<unknown>"));
			if (*g < 0)
				goto out;
		}
		if (k->start != CS_TS_UNKNOWN && k->end != CS_TS_UNKNOWN && k->end > k->start)
			ns = k->end - k->start;
		hits[nhits].group = *g;
		hits[nhits].step = st;
		hits[nhits].ns = ns;
		nhits++;
		time[st] += (double)ns;
		count[st] += 1;
		cs_sat_accum(&total, ns);
	}
	out->kernel_total = per_step(c, time);
	out->launches = per_step(c, count);
	if (launch_calls(c, out, &pl) < 0)
		goto out;
	out->plain[CS_GM_LAUNCHES] = plain_mean(c, count);
	out->kernel_samples = malloc(steady_slots(c) * sizeof(*out->kernel_samples));
	if (!out->kernel_samples)
		goto out;
	memcpy(out->kernel_samples, time, (size_t)c->steady * sizeof(*time));

	{
		static const cs_sort_key by_group_step[] = {
			{offsetof(struct kernel_hit, group), CS_KEY_I32},
			{offsetof(struct kernel_hit, step), CS_KEY_I32},
		};

		cs_sort_records(hits, (size_t)nhits, sizeof(*hits), by_group_step, 2);
	}
	out->kernels = calloc((size_t)(names.n > 0 ? names.n : 1), sizeof(*out->kernels));
	gname = calloc((size_t)(names.n > 0 ? names.n : 1), sizeof(*gname));
	if (!out->kernels || !gname)
		goto out;
	for (int64_t i = 0; i < nhits;) {
		int32_t g = hits[i].group, m = 0, once = 0;
		int64_t gtotal = 0;
		cs_run_kernel *rk = &out->kernels[out->nkernels];

		for (int64_t j = i; j < nhits && hits[j].group == g; j++)
			if (j == i || hits[j].step != hits[j - 1].step)
				rk->nsamples++;
		rk->sample_step = malloc((size_t)rk->nsamples * sizeof(*rk->sample_step));
		rk->sample_ns = malloc((size_t)rk->nsamples * sizeof(*rk->sample_ns));
		if (!rk->sample_step || !rk->sample_ns) {
			free(rk->sample_step);
			free(rk->sample_ns);
			goto out;
		}
		while (i < nhits && hits[i].group == g) {
			int32_t st = hits[i].step, n = 0;
			int64_t ns = 0;

			for (; i < nhits && hits[i].group == g && hits[i].step == st; i++) {
				cs_sat_accum(&ns, hits[i].ns);
				n++;
			}
			rk->sample_step[m] = st;
			rk->sample_ns[m] = (double)ns;
			vt[m] = (double)ns;
			vc[m] = n;
			m++;
			once += n == 1;
			cs_sat_accum(&gtotal, ns);
		}
		rk->name = gname[g] = names.names[g];
		names.names[g] = NULL;
		rk->time_per_step = trimmed_mean(vt, m, c->steady - m);
		rk->count_per_step = trimmed_mean(vc, m, c->steady - m);
		rk->share = total > 0 ? (double)gtotal / (double)total : 0;
		rk->once = (double)once / (double)c->steady;
		out->nkernels++;
	}
	rc = host_gaps(c, &ids, gname, &pl, out);
	cs_sort(out->kernels, (size_t)out->nkernels, sizeof(*out->kernels), cmp_run_kernel);
out:
	free(pl.v);
	free(gname);
	name_table_free(&names);
	u64map_free(&ids);
	free(hits);
	free(time);
	free(count);
	free(vt);
	free(vc);
	return rc;
}

const cs_run_kernel *cs_run_gap_find(const cs_run *r, const char *name, int32_t place)
{
	int32_t lo = 0, hi = r->ngaps;

	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;
		int c = strcmp(r->gaps[mid].name, name);

		if (!c)
			c = (r->gaps[mid].place > place) - (r->gaps[mid].place < place);
		if (c == 0)
			return &r->gaps[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const cs_run_kernel *cs_run_kernel_find(const cs_run *r, const char *name)
{
	int32_t lo = 0, hi = r->nkernels;

	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;
		int c = strcmp(r->kernels[mid].name, name);

		if (c == 0)
			return &r->kernels[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* ---- memcpys and memsets ---- */

static int copy_dir(const cs_a_copy *m)
{
	if (m->is_memset)
		return CS_DIR_MEMSET;
	switch (m->copy_kind) {
	case CS_COPY_HTOD:
		return CS_DIR_HTOD;
	case CS_COPY_DTOH:
		return CS_DIR_DTOH;
	case CS_COPY_DTOD:
		return CS_DIR_DTOD;
	}
	return CS_DIR_OTHER;
}

static int run_copies(const struct run_ctx *c, cs_run *out)
{
	double *count = calloc(steady_slots(c) * CS_NDIRS, sizeof(*count));
	double *bytes = calloc(steady_slots(c) * CS_NDIRS, sizeof(*bytes));
	double *pageable = calloc(steady_slots(c), sizeof(*pageable));
	int rc = CS_ERR_NOMEM;

	if (!count || !bytes || !pageable)
		goto out;
	for (int64_t i = 0; i < c->a->ncopies; i++) {
		const cs_a_copy *m = &c->a->copies[i];
		int32_t st = steady_at(c, cs_launch_time(m->launch_start, m->start));
		int d = copy_dir(m);

		if (st < 0)
			continue;
		count[(size_t)d * (size_t)c->steady + (size_t)st] += 1;
		bytes[(size_t)d * (size_t)c->steady + (size_t)st] += (double)m->bytes;
		pageable[st] += !m->is_memset &&
				(m->src_kind == CS_MEM_PAGEABLE || m->dst_kind == CS_MEM_PAGEABLE);
	}
	out->pageable = per_step(c, pageable);
	out->plain[CS_GM_PAGEABLE_COUNT] = plain_mean(c, pageable);
	for (int d = 0; d < CS_NDIRS; d++) {
		out->copy_count[d] = per_step(c, count + (size_t)d * (size_t)c->steady);
		out->plain[CS_GM_HTOD_COUNT + 2 * d] =
			plain_mean(c, count + (size_t)d * (size_t)c->steady);
		out->copy_bytes[d] = per_step(c, bytes + (size_t)d * (size_t)c->steady);
	}
	rc = 0;
out:
	free(count);
	free(bytes);
	free(pageable);
	return rc;
}

/* ---- host waits ---- */

/* Host waits sorted by process, then end. */
struct wait_ref {
	uint32_t pid;
	int64_t end;
	int64_t sync;
};

static int cmp_wait(const void *pa, const void *pb)
{
	const struct wait_ref *x = pa, *y = pb;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->end > y->end) - (x->end < y->end);
}

/* The first wait of pid that ends at or after t, or -1. */
static int64_t first_wait_after(const struct wait_ref *w, int64_t n, uint32_t pid, int64_t t)
{
	int64_t lo = 0, hi = n;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (w[mid].pid < pid || (w[mid].pid == pid && w[mid].end < t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && w[lo].pid == pid ? lo : -1;
}

/*
 * Host waits per step, and those that waited for a device-to-host copy: a wait is a D2H sync when
 * it is the first host wait of the process to end after the launch of a DtoH memcpy.
 */
static int run_waits(const struct run_ctx *c, cs_run *out)
{
	const cs_analysis *a = c->a;
	struct wait_ref *w = malloc((size_t)(a->nsyncs > 0 ? a->nsyncs : 1) * sizeof(*w));
	char *d2h = calloc((size_t)(a->nsyncs > 0 ? a->nsyncs : 1), 1);
	double *waits = calloc(steady_slots(c), sizeof(*waits));
	double *syncs = calloc(steady_slots(c), sizeof(*syncs));
	int64_t n = 0;
	int rc = CS_ERR_NOMEM;

	if (!w || !d2h || !waits || !syncs)
		goto out;
	for (int64_t i = 0; i < a->nsyncs; i++) {
		const cs_a_sync *y = &a->syncs[i];

		if (!y->host_wait || y->start == CS_TS_UNKNOWN)
			continue;
		w[n].pid = y->pid;
		w[n].end = y->end != CS_TS_UNKNOWN && y->end > y->start ? y->end : y->start;
		w[n].sync = i;
		n++;
	}
	cs_sort(w, (size_t)n, sizeof(*w), cmp_wait);
	for (int64_t i = 0; i < a->ncopies; i++) {
		const cs_a_copy *m = &a->copies[i];
		int64_t t = cs_launch_time(m->launch_start, m->start), j;

		if (m->is_memset || m->copy_kind != CS_COPY_DTOH || t == CS_TS_UNKNOWN)
			continue;
		j = first_wait_after(w, n, m->pid, t);
		if (j >= 0)
			d2h[w[j].sync] = 1;
	}
	for (int64_t i = 0; i < a->nsyncs; i++) {
		const cs_a_sync *y = &a->syncs[i];
		int32_t st;

		if (!y->host_wait)
			continue;
		st = steady_at(c, y->start);
		if (st < 0)
			continue;
		waits[st] += 1;
		syncs[st] += d2h[i];
	}
	out->host_waits = per_step(c, waits);
	out->d2h_syncs = per_step(c, syncs);
	out->plain[CS_GM_HOST_WAITS] = plain_mean(c, waits);
	out->plain[CS_GM_D2H_SYNCS] = plain_mean(c, syncs);
	rc = 0;
out:
	free(w);
	free(d2h);
	free(waits);
	free(syncs);
	return rc;
}

/* ---- device memory ---- */

/*
 * The peak of device memory in use and the allocations and frees per steady step, all three from
 * the timeline's counter (cs_tl_mem_apply in include/cuscope/timeline.h), so that the gate's peak
 * is the highest point of the memory track that `cuscope export` and `cuscope view` draw. An
 * allocation or a free is a row that changed a level: the rows of the counter's rule, no others
 * (a free of memory allocated before the trace changes nothing and is not counted).
 */
static int run_memory(const struct run_ctx *c, cs_run *out)
{
	const cs_analysis *a = c->a;
	cs_tl_mem mem;
	double *allocs = calloc(steady_slots(c), sizeof(*allocs));
	double *frees = calloc(steady_slots(c), sizeof(*frees));
	int rc = CS_ERR_NOMEM;

	cs_tl_mem_init(&mem);
	if (!allocs || !frees)
		goto out;
	for (int64_t i = 0; i < a->nmemory; i++) {
		const cs_a_memory *r = &a->memory[i];
		struct cs_tl_mem_row row = {r->start,	 r->pid,    r->device_id, r->op,
					    r->mem_kind, r->result, r->address,	  r->bytes};
		struct cs_tl_mem_change ch;
		int32_t st;

		rc = cs_tl_mem_apply(&mem, &row, &ch);
		if (rc < 0)
			goto out;
		if (!rc)
			continue;
		if (mem.v[ch.level].peak > out->peak_memory)
			out->peak_memory = mem.v[ch.level].peak;
		st = r->pid == c->s->pid ? steady_at(c, r->start) : -1;
		if (st < 0)
			continue;
		if (ch.kind == CS_MEMCOUNT_ALLOC)
			allocs[st] += 1;
		else
			frees[st] += 1;
	}
	out->allocs = per_step(c, allocs);
	out->frees = per_step(c, frees);
	out->plain[CS_GM_ALLOCS] = plain_mean(c, allocs);
	out->plain[CS_GM_FREES] = plain_mean(c, frees);
	rc = 0;
out:
	cs_tl_mem_free(&mem);
	free(allocs);
	free(frees);
	return rc;
}

/* ---- step times ---- */

/* The time and GPU busy share of each steady step, as cs_steps_duration_stats() sees them. */
static int run_step_samples(const struct run_ctx *c, cs_run *out)
{
	out->step_samples = calloc(steady_slots(c), sizeof(*out->step_samples));
	out->busy_samples = calloc(steady_slots(c), sizeof(*out->busy_samples));
	if (!out->step_samples || !out->busy_samples)
		return CS_ERR_NOMEM;
	for (int32_t i = 0; i < c->s->n; i++) {
		int32_t st = c->ord[i];
		int64_t t = cs_step_time(c->s, i);

		if (st < 0)
			continue;
		out->step_samples[st] = (double)t;
		out->busy_samples[st] = t > 0 ? (double)c->s->v[i].gpu_busy / (double)t : 0;
	}
	return 0;
}

/* ---- the run ---- */

/* The findings of every CUDA process, as `cuscope report` has them; s are the steps so gave. */
static int run_findings(const cs_analysis *a, const cs_step_opts *so, const cs_steps *s,
			cs_run *out, cs_error *err)
{
	cs_report_processes procs;
	cs_report rep;
	int rc;

	memset(&rep, 0, sizeof(rep));
	memset(&procs, 0, sizeof(procs));
	rc = cs_report_run_processes_from(a, so, s, NULL, &procs, &rep, err);
	cs_report_processes_free(&procs);
	if (rc < 0)
		goto out;
	rc = CS_ERR_NOMEM;
	out->findings = calloc((size_t)(rep.n > 0 ? rep.n : 1), sizeof(*out->findings));
	if (!out->findings)
		goto out;
	for (int32_t i = 0; i < rep.n; i++) {
		cs_run_finding *f = &out->findings[out->nfindings];

		f->rule = strdup(rep.v[i]->rule);
		f->title = strdup(rep.v[i]->title ? rep.v[i]->title : "");
		f->severity = rep.v[i]->severity;
		f->lost_ns_per_step = rep.v[i]->lost_ns_per_step;
		f->near = cJSON_IsTrue(
			cJSON_GetObjectItemCaseSensitive(rep.v[i]->evidence, "near_threshold"));
		out->nfindings++;
		if (!f->rule || !f->title)
			goto out;
	}
	rc = 0;
out:
	cs_report_free(&rep);
	if (rc == CS_ERR_NOMEM)
		cs_error_set(err, rc, "out of memory");
	return rc;
}

/* ---- the rank compared (--rank) ---- */

struct rank_proc {
	uint32_t pid;
	int32_t rank;
	int64_t kernels;
};

struct rank_list {
	struct rank_proc *v;
	int32_t n;
	size_t cap;
};

static int rank_list_add(const cs_process *p, void *arg)
{
	struct rank_list *l = arg;

	if (p->rank == CS_ID_NONE)
		return 0;
	if (cs_grow((void **)&l->v, &l->cap, (size_t)l->n + 1, sizeof(*l->v)))
		return CS_ERR_NOMEM;
	l->v[l->n].pid = p->pid;
	l->v[l->n].rank = p->rank;
	l->v[l->n].kernels = 0;
	l->n++;
	return 0;
}

/* By rank, the process with the most kernels first, then by pid. */
static int rank_proc_cmp(const void *pa, const void *pb)
{
	const struct rank_proc *x = pa, *y = pb;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->kernels != y->kernels)
		return x->kernels > y->kernels ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* The ranks of l for a message: "ranks 0, 1" or "no process has a rank". */
static void rank_list_names(const struct rank_list *l, char *buf, size_t size)
{
	size_t off;

	if (l->n == 0) {
		snprintf(buf, size, "no process of the trace has a rank");
		return;
	}
	off = (size_t)snprintf(buf, size, "%s", l->n == 1 ? "rank" : "ranks");
	for (int32_t i = 0; i < l->n && off < size; i++)
		off += (size_t)snprintf(buf + off, size - off, "%s%d", i ? ", " : " ",
					(int)l->v[i].rank);
}

/*
 * The median own time of the steps s (the steady ones, or all when none is steady): the step
 * time less the communication that no compute of the rank overlapped, which holds the waiting
 * for the other ranks (include/cuscope/ranks.h). Without NCCL kernels it is the step time.
 */
static int rank_own_median(const cs_analysis *a, const cs_steps *s, int64_t *out, cs_error *err)
{
	cs_rank_step *m = calloc((size_t)s->n, sizeof(*m));
	int64_t *own = calloc((size_t)s->n, sizeof(*own));
	int32_t n = 0, steady = cs_steps_steady(s);
	int rc = CS_ERR_NOMEM;

	if (!m || !own) {
		cs_error_set(err, rc, "out of memory");
		goto out;
	}
	rc = cs_rank_steps_measure(a, s, m, err);
	if (rc < 0)
		goto out;
	for (int32_t i = 0; i < s->n; i++)
		if (!s->v[i].warmup || steady == 0)
			own[n++] = m[i].own_ns;
	cs_sort_i64(own, (size_t)n);
	*out = n > 0 ? own[n / 2] : 0;
out:
	free(m);
	free(own);
	return rc;
}

/*
 * The process of the rank o selects, into *pid and *rank: rank o->rank, or the rank with the
 * longest median step of its own (rank_own_median; steps found as so finds them, on each rank's
 * own process; on a tie the lower rank). A rank held by
 * several processes (workers that inherited RANK) is the one of them with the most kernels.
 */
static int run_pick_rank(const cs_analysis *a, const cs_step_opts *so, const cs_run_opts *o,
			 uint32_t *pid, int32_t *rank, cs_error *err)
{
	struct rank_list l = {NULL, 0, 0};
	char names[512];
	int64_t best = -1;
	int32_t n = 0;
	int rc;

	rc = cs_trace_each_process(a->trace, rank_list_add, &l, err);
	if (rc < 0)
		goto out;
	for (int64_t i = 0; i < a->nkernels; i++)
		for (int32_t j = 0; j < l.n; j++)
			if (l.v[j].pid == a->kernels[i].pid)
				l.v[j].kernels++;
	cs_sort(l.v, (size_t)l.n, sizeof(*l.v), rank_proc_cmp);
	for (int32_t i = 0; i < l.n; i++) /* one process per rank */
		if (n == 0 || l.v[i].rank != l.v[n - 1].rank)
			l.v[n++] = l.v[i];
	l.n = n;
	rank_list_names(&l, names, sizeof(names));
	rc = CS_ERR_INVALID;
	if (o->rank_select == CS_RANK_N) {
		for (int32_t i = 0; i < l.n; i++)
			if (l.v[i].rank == o->rank) {
				*pid = l.v[i].pid;
				*rank = l.v[i].rank;
				rc = 0;
			}
		if (rc < 0)
			cs_error_set(err, rc, "no rank %d (%s)", (int)o->rank, names);
		goto out;
	}
	for (int32_t i = 0; i < l.n; i++) {
		cs_step_opts ro = *so;
		cs_steps s;
		int r;

		ro.pid = l.v[i].pid;
		r = cs_steps_detect(a, &ro, &s, err);
		if (r == CS_ERR_NOMEM) {
			rc = r;
			goto out;
		}
		if (r < 0)
			continue; /* a step range that matches nothing in this rank */
		if (s.method != CS_STEPS_NONE && s.n > 0) {
			int64_t own = 0;

			r = rank_own_median(a, &s, &own, err);
			if (r < 0) {
				cs_steps_free(&s);
				rc = r;
				goto out;
			}
			if (own > best) {
				best = own;
				*pid = l.v[i].pid;
				*rank = l.v[i].rank;
				rc = 0;
			}
		}
		cs_steps_free(&s);
	}
	if (rc < 0)
		cs_error_set(err, rc, "no rank with steps to pick the slowest from (%s)", names);
out:
	free(l.v);
	return rc;
}

int cs_run_load(const char *path, const cs_run_opts *o, cs_run *out, cs_error *err)
{
	cs_trace *t = NULL;
	cs_analysis a;
	cs_steps s;
	cs_step_opts so;
	cs_load_opts lo;
	struct run_ctx c;
	const char *command;
	int rc, have_a = 0, have_s = 0;

	memset(out, 0, sizeof(*out));
	memset(&c, 0, sizeof(c));
	out->path = strdup(path);
	if (!out->path)
		return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
	rc = cs_trace_open(path, &t, err);
	if (rc < 0)
		goto out;
	lo.max_bytes = o ? o->max_memory : 0;
	lo.from = lo.to = CS_TS_UNKNOWN;
	rc = cs_analysis_load_opts(t, &a, &lo, err);
	if (rc < 0)
		goto out;
	have_a = 1;
	out->window = a.window;
	memset(&so, 0, sizeof(so));
	so.step_range = o ? o->step_range : NULL;
	so.warmup = o ? o->warmup : -1;
	so.pid = 0;
	if (o && o->rank_select != CS_RANK_DEFAULT) {
		out->rank_select = o->rank_select;
		rc = run_pick_rank(&a, &so, o, &so.pid, &out->rank, err);
		if (rc < 0)
			goto out;
	}
	rc = cs_steps_detect(&a, &so, &s, err);
	if (rc < 0)
		goto out;
	have_s = 1;

	command = cs_trace_meta(t, "command");
	if (command && !(out->command = strdup(command))) {
		rc = CS_ERR_NOMEM;
		goto out;
	}
	{
		/* record's host-speed probes (cuscope/host_speed.h), when it ran them */
		cs_host_speed hs;

		if (cs_host_speed_parse(cs_trace_meta(t, CS_META_HOST_SPEED), &hs))
			for (int k = 0; k < CS_PROBE_KINDS; k++)
				out->probe_ns[k] = cs_host_speed_index(&hs, k, &out->probe_noise[k]);
	}
	out->method = s.method;
	out->steps = s.n;
	out->warmup = s.warmup;
	out->period = s.period;
	out->pid = s.pid;
	snprintf(out->detail, sizeof(out->detail), "%s", s.detail);
	cs_steps_duration_stats(&s, &out->step_median, &out->step_p10, &out->step_p90);

	/* the steady steps, or every step when none is steady */
	c.a = &a;
	c.s = &s;
	c.ord = malloc((size_t)(s.n > 0 ? s.n : 1) * sizeof(*c.ord));
	if (!c.ord) {
		rc = CS_ERR_NOMEM;
		goto out;
	}
	for (int32_t i = 0; i < s.n; i++)
		c.ord[i] = s.v[i].warmup && cs_steps_steady(&s) > 0 ? -1 : c.steady++;
	out->steady = c.steady;
	out->timing = s.timing;
	out->gpu_busy = cs_steps_busy_share(&s);
	rc = run_step_samples(&c, out);
	if (rc < 0) {
		cs_error_set(err, rc, "out of memory");
		goto out;
	}
	rc = shared_gpu(&c, t, out);
	if (rc < 0) {
		cs_error_set(err, rc, "out of memory");
		goto out;
	}
	c.tmp = malloc((size_t)(c.steady > 0 ? c.steady : 1) * sizeof(*c.tmp));
	if (!c.tmp) {
		rc = CS_ERR_NOMEM;
		goto out;
	}
	if (c.steady > 0) {
		rc = run_kernels(&c, o ? o->fold : 0, out);
		if (!rc)
			rc = run_copies(&c, out);
		if (!rc)
			rc = run_waits(&c, out);
	}
	if (!rc)
		rc = run_memory(&c, out);
	if (rc < 0) {
		cs_error_set(err, rc, "out of memory");
		goto out;
	}
	rc = run_findings(&a, &so, &s, out, err);
out:
	/* every message names the file */
	if (rc < 0 && err && strncmp(err->msg, "cannot ", 7)) {
		char msg[CS_ERROR_MSG_MAX];

		snprintf(msg, sizeof(msg), "%s", err->msg);
		if (rc == CS_ERR_INVALID)
			cs_error_set(err, rc, "'%s': %s", path, msg);
		else
			cs_error_set(err, rc, "cannot read '%s': %s", path, msg);
	}
	free(c.ord);
	free(c.tmp);
	if (have_s)
		cs_steps_free(&s);
	if (have_a)
		cs_analysis_free(&a);
	if (t)
		cs_trace_close(t);
	if (rc < 0)
		cs_run_free(out);
	return rc;
}

void cs_run_free(cs_run *r)
{
	for (int32_t i = 0; i < r->nkernels; i++) {
		free(r->kernels[i].name);
		free(r->kernels[i].sample_step);
		free(r->kernels[i].sample_ns);
	}
	free(r->step_samples);
	free(r->busy_samples);
	free(r->kernel_samples);
	for (int32_t i = 0; i < r->ngaps; i++) {
		free(r->gaps[i].name);
		free(r->gaps[i].sample_step);
		free(r->gaps[i].sample_ns);
	}
	free(r->gaps);
	for (int32_t i = 0; i < r->nfindings; i++) {
		free(r->findings[i].rule);
		free(r->findings[i].title);
	}
	free(r->kernels);
	free(r->findings);
	free(r->path);
	free(r->command);
	memset(r, 0, sizeof(*r));
}
