/*
 * release_bursts.c - reserved device memory, the allocator's release bursts and what surrounds
 * them, and the allocator calls (facts/release_bursts.h; docs/rules/ explains how each rule uses
 * them).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/checked.h"
#include "cuscope/grow.h"
#include "cuscope/sort.h"
#include "cuscope/u64map.h"
#include "release_bursts.h"

/* Releases further apart than this belong to different bursts. */
#define BURST_MAX_GAP (5 * 1000000LL)

/* What a memory row means for reserved memory. */
enum mem_class {
	MEM_OTHER = 0,
	MEM_ALLOC,   /* reserved grows */
	MEM_RELEASE, /* reserved shrinks */
	MEM_FAILED,  /* an allocation that failed */
};

/*
 * Sizes by address (a u64map of int64_t): of live allocations (kind 0), VMM handles (kind 1);
 * mapped pages (kind 2).
 */
static uint64_t addr_key(uint64_t address, int kind)
{
	return (address << 2) ^ (uint64_t)kind ^ ((address >> 62) << 2);
}

static int addr_put(struct u64map *m, uint64_t address, int kind, int64_t val)
{
	int created;
	int64_t *v = u64map_put(m, addr_key(address, kind), &created);

	if (!v)
		return CS_ERR_NOMEM;
	*v = val;
	return 0;
}

/* Value of a key, or -1 when absent. */
static int64_t addr_get(const struct u64map *m, uint64_t address, int kind)
{
	const int64_t *v = u64map_get(m, addr_key(address, kind));

	return v ? *v : -1;
}

/*
 * Classify one memory row and the bytes it moves. Allocation records of pages mapped with
 * cuMemMap (expandable segments) are left out: the physical memory was counted at cuMemCreate.
 * So is host memory (pinned buffers come and go with data loading, not with the GPU's allocator).
 */
static int classify_row(struct u64map *m, const cs_a_memory *r, int *cls, int64_t *bytes)
{
	int64_t b;
	int rc = 0;

	*cls = MEM_OTHER;
	*bytes = r->bytes > 0 ? r->bytes : 0;
	if (!cs_a_memory_is_device(r))
		return 0;
	switch (r->op) {
	case CS_MEMOP_ALLOC:
	case CS_MEMOP_VMM_CREATE:
		if (r->result != 0) {
			*cls = MEM_FAILED;
			break;
		}
		if (r->op == CS_MEMOP_ALLOC && addr_get(m, r->address, 2) >= 0)
			break; /* a mapped page */
		*cls = MEM_ALLOC;
		rc = addr_put(m, r->address, r->op == CS_MEMOP_VMM_CREATE, *bytes);
		break;
	case CS_MEMOP_FREE:
	case CS_MEMOP_VMM_RELEASE:
		if (r->result != 0)
			break;
		if (r->op == CS_MEMOP_FREE && addr_get(m, r->address, 2) >= 0)
			break;
		*cls = MEM_RELEASE;
		b = addr_get(m, r->address, r->op == CS_MEMOP_VMM_RELEASE);
		if (*bytes == 0 && b > 0)
			*bytes = b;
		break;
	case CS_MEMOP_VMM_MAP:
		if (r->result == 0)
			rc = addr_put(m, r->address, 2, *bytes);
		break;
	default:
		break;
	}
	return rc;
}

int fact_is_alloc_api(const char *name)
{
	static const char *const prefixes[] = {
		"cudaMalloc",	"cudaFree", "cuMemAlloc", "cuMemFree",	    "cuMemCreate",
		"cuMemRelease", "cuMemMap", "cuMemUnmap", "cuMemSetAccess",
	};

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

int fact_is_device_alloc_api(const char *name)
{
	return fact_is_alloc_api(name) && strncmp(name, "cudaMallocHost", 14) &&
	       strncmp(name, "cudaFreeHost", 12) && strncmp(name, "cuMemAllocHost", 14) &&
	       strncmp(name, "cuMemFreeHost", 13);
}

/*
 * Count into *n a piece of GPU work launched at launch_start (CS_TS_UNKNOWN: at its start) when
 * that is inside (t0, t1). 1 when it was launched and starts at or after t1: the work after it in
 * its array, in start order, is past the window too.
 */
static int count_launch(int64_t launch_start, int64_t start, int64_t t0, int64_t t1, int *n)
{
	int64_t l = cs_launch_time(launch_start, start);

	if (l > t0 && l < t1)
		(*n)++;
	return l >= t1 && start >= t1;
}

/*
 * GPU work of pid launched in (t0, t1), counted up to cap. Launches precede starts, so the work
 * launched in the window starts after t0; each stream starts its work in launch order.
 */
static int launched_between(const cs_analysis *a, uint32_t pid, int64_t t0, int64_t t1, int cap)
{
	int64_t i = cs_analysis_kernel_at(a, t0), j = cs_analysis_copy_at(a, t0), seen;
	int n = 0;

	for (seen = 0; i < a->nkernels && seen < 4096 && n < cap; i++, seen++) {
		const cs_a_kernel *k = &a->kernels[i];

		if (k->pid == pid && count_launch(k->launch_start, k->start, t0, t1, &n))
			break;
	}
	for (seen = 0; j < a->ncopies && seen < 4096 && n < cap; j++, seen++) {
		const cs_a_copy *c = &a->copies[j];

		if (c->pid == pid && count_launch(c->launch_start, c->start, t0, t1, &n))
			break;
	}
	return n < cap ? n : cap;
}

/*
 * What the backtrace of a release says: 1 when the caching allocator released blocks to serve an
 * allocation, -1 when the program asked for it (empty_cache), 0 when there is no stack or it does
 * not say.
 */
static int stack_says(const cs_analysis *a, int64_t stack_id)
{
	static const char *const retry[] = {"release_available_cached_blocks",
					    "release_cached_blocks", "garbage_collect",
					    "DeviceCachingAllocator::malloc"};
	static const char *const asked[] = {"emptyCache", "empty_cache"};
	const cs_frame *fr = NULL;
	int n = 0;

	if (stack_id == CS_ID_NONE || !a->trace ||
	    cs_trace_get_stack(a->trace, stack_id, &fr, &n, NULL) < 0)
		return 0;
	for (int i = 0; i < n; i++) {
		const char *sym = fr[i].symbol ? fr[i].symbol : "";

		/* A note (kind 3): the frames below it are another thread's, waiting in backward();
		 * they do not say why this thread released memory. */
		if (fr[i].kind == 3)
			break;
		/* innermost first: the first known frame decides */
		for (size_t k = 0; k < sizeof(asked) / sizeof(asked[0]); k++)
			if (strstr(sym, asked[k]))
				return -1;
		for (size_t k = 0; k < sizeof(retry) / sizeof(retry[0]); k++)
			if (strstr(sym, retry[k]))
				return 1;
	}
	return 0;
}

static int burst_push(struct fact_bursts *m, size_t *cap, const struct fact_burst *b)
{
	if (cs_grow((void **)&m->v, cap, (size_t)m->n + 1, sizeof(*m->v)))
		return CS_ERR_NOMEM;
	m->v[m->n++] = *b;
	return 0;
}

/* Start of the first GPU work of pid that starts at or after t; INT64_MAX when none. The searches
 * start from *khint and *chint (the calls come in time order). */
static int64_t next_work_start(const cs_analysis *a, uint32_t pid, int64_t t, int64_t *khint,
			       int64_t *chint)
{
	int64_t next = INT64_MAX;

	for (int64_t i = cs_lower_bound_near_i64(a->kernels, sizeof(*a->kernels), a->nkernels, t,
						 khint);
	     i < a->nkernels; i++)
		if (a->kernels[i].pid == pid && a->kernels[i].start >= t) {
			next = a->kernels[i].start;
			break;
		}
	for (int64_t i =
		     cs_lower_bound_near_i64(a->copies, sizeof(*a->copies), a->ncopies, t, chint);
	     i < a->ncopies; i++)
		if (a->copies[i].pid == pid && a->copies[i].start >= t) {
			if (a->copies[i].start < next)
				next = a->copies[i].start;
			break;
		}
	return next;
}

int64_t fact_alloc_call_idle(const cs_analysis *a, struct fact_alloc_calls *calls, int64_t k)
{
	const cs_a_api *x = &a->apis[calls->v[k]];
	int64_t to = next_work_start(a, x->pid, x->end, &calls->kernel_hint, &calls->copy_hint);

	if (k + 1 < calls->n && a->apis[calls->v[k + 1]].start < to)
		to = a->apis[calls->v[k + 1]].start;
	if (to == INT64_MAX || to < x->end)
		to = x->end;
	return (to - x->start) - cs_analysis_gpu_busy(a, x->pid, x->start, to);
}

int fact_alloc_calls(const cs_analysis *a, uint32_t pid, int device_only,
		     struct fact_alloc_calls *out)
{
	int64_t maxname = -1;
	signed char *is_alloc; /* name id -> 1 an allocator call, 0 not, -1 not looked at yet */

	for (int64_t i = 0; i < a->napis; i++)
		if (a->apis[i].name_id > maxname)
			maxname = a->apis[i].name_id;
	/* name ids are at most 4 times the strings plus 1024 (cs_analysis_load()): the array stays
	 * as small as the trace's strings, whatever ids a crafted file holds */
	if (maxname < 0 || maxname == INT64_MAX)
		return 0;
	is_alloc = malloc((size_t)maxname + 1);
	if (!is_alloc)
		return CS_ERR_NOMEM;
	memset(is_alloc, -1, (size_t)maxname + 1);
	for (int64_t i = 0; i < a->napis; i++) {
		const cs_a_api *x = &a->apis[i];

		if (x->pid != pid || x->name_id < 0 || x->start == CS_TS_UNKNOWN ||
		    x->end == CS_TS_UNKNOWN || x->end < x->start)
			continue;
		if (is_alloc[x->name_id] < 0) {
			const char *name = cs_analysis_string(a, x->name_id);

			is_alloc[x->name_id] =
				(signed char)(device_only ? fact_is_device_alloc_api(name)
							  : fact_is_alloc_api(name));
		}
		if (!is_alloc[x->name_id])
			continue;
		if (cs_grow((void **)&out->v, &out->cap, (size_t)out->n + 1, sizeof(*out->v))) {
			free(is_alloc);
			return CS_ERR_NOMEM;
		}
		out->v[out->n++] = i;
	}
	free(is_alloc);
	return 0;
}

int fact_bursts_api_cost(const cs_analysis *a, const cs_steps *s, struct fact_bursts *m)
{
	struct fact_alloc_calls calls = {0};

	m->api_idle = calloc((size_t)s->n + 1, sizeof(*m->api_idle));
	m->api_host = calloc((size_t)s->n + 1, sizeof(*m->api_host));
	m->api_calls = calloc((size_t)s->n + 1, sizeof(*m->api_calls));
	if (!m->api_idle || !m->api_host || !m->api_calls ||
	    fact_alloc_calls(a, s->pid, 0, &calls)) {
		fact_alloc_calls_free(&calls);
		return CS_ERR_NOMEM;
	}
	m->have_api = calls.n > 0;
	for (int64_t k = 0; k < calls.n; k++) {
		const cs_a_api *x = &a->apis[calls.v[k]];
		int st = cs_steps_find_steady(s, x->start);

		if (st < 0)
			continue;
		m->api_calls[st]++;
		cs_sat_accum(&m->api_host[st], x->end - x->start);
		m->api_idle[st] += fact_alloc_call_idle(a, &calls, k);
	}
	fact_alloc_calls_free(&calls);
	return 0;
}

/* The kernels of a regular step: the median over the steady steps (-1 without any). */
static int regular_kernels(const cs_steps *s, int64_t *out)
{
	int64_t *v = malloc(((size_t)s->n + 1) * sizeof(*v)), n = 0;

	*out = -1;
	if (!v)
		return CS_ERR_NOMEM;
	for (int32_t i = 0; i < s->n; i++)
		if (!s->v[i].warmup)
			v[n++] = s->v[i].kernels;
	if (n > 0)
		*out = cs_median_i64(v, n);
	free(v);
	return 0;
}

/* 1 when step i's work is not the steady steps' (another phase ran in it: an evaluation, a
 * checkpoint): its kernel count differs from the regular one. */
static int irregular_step(const cs_steps *s, int32_t i, int64_t regular)
{
	if (i < 0 || i >= s->n || regular < 0)
		return 0;
	return s->v[i].kernels != regular;
}

int fact_release_bursts(const cs_analysis *a, const cs_steps *s, struct fact_bursts *out)
{
	struct u64map map;
	struct fact_burst cur;
	int64_t reserved = 0, pending_failed = 0, pending_failed_bytes = 0, pending_failed_row = -1;
	int64_t last_release_t = CS_TS_UNKNOWN, last_alloc_t = CS_TS_UNKNOWN;
	size_t cap = 0;
	int32_t open = -1; /* open: burst still taking allocations into realloc_bytes */
	int in_burst = 0, rc = CS_ERR_NOMEM, seen_steady = 0;
	int64_t regular = -1;
	int half_step = 0;
	uint8_t *small = calloc((size_t)s->n + 1, 1); /* steps with an allocation under a segment */

	u64map_init(&map, sizeof(int64_t));
	memset(out, 0, sizeof(*out));
	if (!small)
		goto out;
	memset(&cur, 0, sizeof(cur));
	out->device_total = a->device_memory_total;
	out->reserved_start = -1;
	for (int64_t i = 0; i < a->nmemory; i++) {
		const cs_a_memory *r = &a->memory[i];
		int cls, st;
		int64_t bytes;

		if (r->pid != s->pid || r->start == CS_TS_UNKNOWN)
			continue;
		if (classify_row(&map, r, &cls, &bytes))
			goto out;
		if (cls == MEM_OTHER)
			continue;
		st = cs_steps_find_steady(s, r->start);
		if (st >= 0 && !seen_steady) {
			seen_steady = 1;
			out->reserved_start = reserved;
		}
		if (in_burst && (cls != MEM_RELEASE || r->start - last_release_t > BURST_MAX_GAP)) {
			/* the burst ended */
			cur.reserved_after = reserved;
			if (cur.releases >= FACT_BURST_MIN_RELEASES) {
				if (burst_push(out, &cap, &cur))
					goto out;
				open = out->n - 1;
			} else if (cur.failed_before) {
				/* too few releases to be the allocator's: the failure is still
				 * pending for the burst that follows */
				pending_failed += cur.failed_before;
				if (cur.failed_bytes > pending_failed_bytes)
					pending_failed_bytes = cur.failed_bytes;
				if (pending_failed_row < 0)
					pending_failed_row = cur.failed_row;
			}
			in_burst = 0;
		}
		switch (cls) {
		case MEM_FAILED:
			last_alloc_t = r->start;
			pending_failed++;
			if (bytes > pending_failed_bytes)
				pending_failed_bytes = bytes;
			pending_failed_row = i;
			if (st >= 0)
				out->steady_failed++;
			break;
		case MEM_ALLOC:
			last_alloc_t = r->start;
			cs_sat_accum(&reserved, bytes);
			if (st >= 0 && !r->is_vmm && bytes > 0 && bytes < FACT_SEGMENT_MIN_BYTES)
				small[st] = 1;
			if (st >= 0) {
				out->steady_allocs++;
				if (reserved > out->reserved_peak)
					out->reserved_peak = reserved;
			}
			if (open >= 0) {
				struct fact_burst *b = &out->v[open];

				if (b->next_alloc < 0) {
					b->next_alloc = i;
					b->next_alloc_bytes = bytes;
				}
				cs_sat_accum(&b->realloc_bytes, bytes);
				b->t_realloc_end = r->start;
			}
			pending_failed = pending_failed_bytes = 0;
			pending_failed_row = -1;
			break;
		case MEM_RELEASE:
			if (!in_burst) {
				memset(&cur, 0, sizeof(cur));
				in_burst = 1;
				cur.first = i;
				cur.t_first = r->start;
				cur.step = (int32_t)st;
				cur.failed_before = (int32_t)pending_failed;
				cur.failed_bytes = pending_failed_bytes;
				cur.failed_row = pending_failed_row;
				cur.next_alloc = -1;
				cur.reserved_before = reserved;
				cur.prev_alloc_t = last_alloc_t;
			}
			cur.last = i;
			cur.t_last = r->start;
			cur.releases++;
			cs_sat_accum(&cur.bytes, bytes);
			reserved -= bytes;
			if (st >= 0)
				out->steady_releases++;
			last_release_t = r->start;
			pending_failed = pending_failed_bytes = 0;
			pending_failed_row = -1;
			break;
		}
	}
	if (in_burst) {
		cur.reserved_after = reserved;
		if (cur.releases >= FACT_BURST_MIN_RELEASES && burst_push(out, &cap, &cur))
			goto out;
	}
	if (out->reserved_start < 0)
		out->reserved_start = 0;

	/* what surrounds each burst */
	if (out->n > 0 && regular_kernels(s, &regular))
		goto out;
	half_step = regular > 0 ? (int)(regular / 2) : 0;
	for (int32_t b = 0; b < out->n; b++) {
		struct fact_burst *x = &out->v[b];
		int says = stack_says(a, a->memory[x->first].stack_id);

		if (x->next_alloc >= 0)
			x->launches_before_next = launched_between(
				a, s->pid, x->t_last, a->memory[x->next_alloc].start, 1);
		x->phase_switch = x->step >= 0 && (irregular_step(s, x->step, regular) ||
						   irregular_step(s, x->step - 1, regular));
		/* in the middle of allocating: fewer kernels launched since the previous
		 * allocation than half a regular step's */
		x->launches_since_alloc = x->prev_alloc_t == CS_TS_UNKNOWN
						  ? INT32_MAX
						  : launched_between(a, s->pid, x->prev_alloc_t,
								     x->t_first, half_step + 1);
		/*
		 * A retry: the allocator was refused (a failed call), or, in the middle of
		 * allocating, it freed its cache and at once (no GPU work launched) allocated a
		 * block that would not have fit under the highest reserved level. A backtrace,
		 * when there is one, decides.
		 */
		if (says)
			x->retry = says > 0;
		else
			x->retry = x->failed_before > 0 ||
				   (x->next_alloc >= 0 && !x->launches_before_next &&
				    x->launches_since_alloc <= half_step &&
				    x->reserved_before + x->next_alloc_bytes > out->reserved_peak);
		/* direct: refused by the driver, released, and asked again at once */
		x->direct = x->retry && x->failed_before > 0 && x->next_alloc >= 0 &&
			    !x->launches_before_next;
	}
	/* no cache: in most steady steps the driver is asked for blocks smaller than any caching
	 * allocator's segment, tensor by tensor; a run of frees is then the program's own, not an
	 * emptied cache nor a retry, unless the driver refused right before it */
	{
		int32_t steady = cs_steps_steady(s), with_small = 0;

		for (int32_t i = 0; i < s->n; i++)
			with_small += small[i];
		out->uncached = steady > 0 && with_small >= 3 && 2 * with_small >= steady;
	}
	if (out->uncached) {
		int32_t kept = 0;

		for (int32_t b = 0; b < out->n; b++)
			if (out->v[b].direct)
				out->v[kept++] = out->v[b];
		out->n = kept;
	}
	rc = 0;
out:
	free(small);
	u64map_free(&map);
	if (rc)
		fact_bursts_free(out);
	return rc;
}

int64_t fact_burst_idle(const cs_analysis *a, uint32_t pid, const struct fact_burst *b)
{
	if (b->t_last <= b->t_first)
		return 0;
	return (b->t_last - b->t_first) - cs_analysis_gpu_busy(a, pid, b->t_first, b->t_last);
}

void fact_bursts_step_cost(const cs_analysis *a, const cs_steps *s, const struct fact_bursts *m,
			   int (*keep)(const struct fact_burst *b), int64_t *per_step)
{
	for (int32_t i = 0; i < s->n; i++)
		per_step[i] = 0;
	for (int32_t i = 0; i < m->n; i++) {
		const struct fact_burst *b = &m->v[i];

		if (b->step < 0 || !keep(b))
			continue;
		if (m->have_api)
			per_step[b->step] = m->api_idle[b->step];
		else
			cs_sat_accum(&per_step[b->step], fact_burst_idle(a, s->pid, b));
	}
}

void fact_bursts_free(struct fact_bursts *m)
{
	free(m->v);
	free(m->api_idle);
	free(m->api_host);
	free(m->api_calls);
	memset(m, 0, sizeof(*m));
}

void fact_alloc_calls_free(struct fact_alloc_calls *c)
{
	free(c->v);
	memset(c, 0, sizeof(*c));
}

int64_t fact_bursts_median(const struct fact_bursts *m, int (*keep)(const struct fact_burst *b),
			   size_t offset, int64_t *tmp)
{
	int64_t n = 0;

	for (int32_t i = 0; i < m->n; i++)
		if (keep(&m->v[i]))
			tmp[n++] = *(const int64_t *)((const char *)&m->v[i] + offset);
	return cs_median_i64(tmp, n);
}

int fact_bursts_summarize(const cs_steps *s, int64_t step_median, const struct fact_bursts *m,
			  int (*keep)(const struct fact_burst *b), const int64_t *cost,
			  const int32_t *steps, int32_t n, struct fact_bursts_summary *sum)
{
	int64_t *tmp;

	memset(sum, 0, sizeof(*sum));
	tmp = malloc(((size_t)(m->n > s->n ? m->n : s->n) + 1) * sizeof(*tmp));
	if (!tmp)
		return CS_ERR_NOMEM;
	sum->tmp = tmp;
	sum->keep = keep;
	for (int32_t i = 0; i < n; i++)
		cs_sat_accum(&sum->total, cost[steps[i]]);
	for (int32_t i = 0; i < s->n; i++)
		if (!s->v[i].warmup && s->v[i].end > s->v[i].start)
			cs_sat_accum(&sum->steady_ns, s->v[i].end - s->v[i].start);
	sum->steady_share = sum->steady_ns > 0 ? (double)sum->total / (double)sum->steady_ns : 0;
	if (sum->steady_share > 1)
		sum->steady_share = 1;
	for (int32_t i = 0; i < n; i++)
		tmp[i] = cost[steps[i]];
	sum->lost = cs_median_i64(tmp, n);
	sum->share = step_median > 0 ? (double)sum->lost / (double)step_median : 0;
	for (int32_t i = 0; i < m->n; i++)
		sum->bursts += keep(&m->v[i]) != 0;
	sum->releases = fact_bursts_median(m, keep, offsetof(struct fact_burst, releases), tmp);
	sum->bytes = fact_bursts_median(m, keep, offsetof(struct fact_burst, bytes), tmp);
	sum->reserved_before =
		fact_bursts_median(m, keep, offsetof(struct fact_burst, reserved_before), tmp);
	sum->reserved_after =
		fact_bursts_median(m, keep, offsetof(struct fact_burst, reserved_after), tmp);
	for (int32_t i = 0; i < n; i++)
		tmp[i] = m->api_calls ? m->api_calls[steps[i]] : 0;
	sum->calls = cs_median_i64(tmp, n);
	for (int32_t i = 0; i < n; i++)
		tmp[i] = m->api_host ? m->api_host[steps[i]] : 0;
	sum->host = cs_median_i64(tmp, n);
	return 0;
}

int64_t fact_bursts_rare_total(const cs_analysis *a, const cs_steps *s, const struct fact_bursts *m,
			       int (*keep)(const struct fact_burst *b), const uint8_t *hit)
{
	int64_t busy = 0, span = 0, total = 0;
	double idle_share;

	for (int32_t i = 0; i < s->n; i++) {
		const cs_step *st = &s->v[i];

		if (st->warmup || hit[i] || st->end <= st->start)
			continue;
		cs_sat_accum(&span, st->end - st->start);
		cs_sat_accum(&busy, cs_analysis_gpu_busy(a, s->pid, st->start, st->end));
	}
	idle_share = span > 0 ? 1 - (double)busy / (double)span : 0;
	if (idle_share < 0)
		idle_share = 0;
	for (int32_t i = 0; i < m->n; i++) {
		const struct fact_burst *b = &m->v[i];
		int64_t end = b->t_realloc_end > b->t_last ? b->t_realloc_end : b->t_last, idle;

		if (b->step < 0 || !keep(b) || end <= b->t_first)
			continue;
		idle = (end - b->t_first) - cs_analysis_gpu_busy(a, s->pid, b->t_first, end);
		idle -= (int64_t)(idle_share * (double)(end - b->t_first));
		if (idle > 0)
			cs_sat_accum(&total, idle);
	}
	return total;
}
