/*
 * processes.c - the report of every CUDA process: each process that launched GPU work gets its own
 * steps (cs_steps_detect on its pid) and its own run of the rules; the same finding of several
 * processes (the ranks of a data-parallel job) is kept once, naming every process and its cost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/grow.h"
#include "cuscope/analyze.h"
#include "cuscope/timings.h"
#include "cuscope/ranks.h"

#include "cache.h"
#include "finding_kit.h"

struct pinfo {
	uint32_t pid;
	int32_t rank, local_rank;
};

struct pinfo_list {
	struct pinfo *v;
	int32_t n;
	size_t cap;
};

/* Index of pid in l, or -1. */
static int32_t pinfo_find(const struct pinfo_list *l, uint32_t pid)
{
	for (int32_t i = 0; i < l->n; i++)
		if (l->v[i].pid == pid)
			return i;
	return -1;
}

static int pinfo_add(struct pinfo_list *l, uint32_t pid)
{
	if (pinfo_find(l, pid) >= 0)
		return 0;
	if (cs_grow((void **)&l->v, &l->cap, (size_t)l->n + 1, sizeof(*l->v)))
		return CS_ERR_NOMEM;
	l->v[l->n].pid = pid;
	l->v[l->n].rank = l->v[l->n].local_rank = CS_ID_NONE;
	l->n++;
	return 0;
}

static int rank_cb(const cs_process *p, void *arg)
{
	struct pinfo_list *l = arg;
	int32_t i = pinfo_find(l, p->pid);

	if (i >= 0) {
		l->v[i].rank = p->rank;
		l->v[i].local_rank = p->local_rank;
	}
	return 0;
}

/* Ranked processes first, by rank (then local rank), then the others by pid. */
static int pinfo_cmp(const void *pa, const void *pb)
{
	const struct pinfo *x = pa, *y = pb;
	int rx = x->rank != CS_ID_NONE, ry = y->rank != CS_ID_NONE;
	int lx = x->local_rank != CS_ID_NONE, ly = y->local_rank != CS_ID_NONE;

	if (rx != ry)
		return rx ? -1 : 1;
	if (rx && x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (lx != ly)
		return lx ? -1 : 1;
	if (lx && x->local_rank != y->local_rank)
		return x->local_rank < y->local_rank ? -1 : 1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Add pid unless it is the one added last (events come in runs of one process). */
static int gpu_pid_add(struct pinfo_list *l, uint32_t pid, uint32_t *last, int *have)
{
	if (*have && pid == *last)
		return 0;
	if (pinfo_add(l, pid))
		return CS_ERR_NOMEM;
	*last = pid;
	*have = 1;
	return 0;
}

/* The processes that launched GPU work (kernels, memcpys, memsets). */
static int gpu_pids(const cs_analysis *a, struct pinfo_list *l)
{
	uint32_t last = 0;
	int have = 0;

	for (int64_t i = 0; i < a->nkernels; i++)
		if (gpu_pid_add(l, a->kernels[i].pid, &last, &have))
			return CS_ERR_NOMEM;
	for (int64_t i = 0; i < a->ncopies; i++)
		if (gpu_pid_add(l, a->copies[i].pid, &last, &have))
			return CS_ERR_NOMEM;
	return 0;
}

/* ---- the same finding in several processes ---- */

struct buf {
	char *s;
	size_t len, cap;
};

static int buf_add(struct buf *b, const char *s)
{
	size_t n = strlen(s ? s : "");

	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 128;
		char *ns;

		while (b->len + n + 1 > cap)
			cap *= 2;
		ns = realloc(b->s, cap);
		if (!ns)
			return -1;
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s ? s : "", n + 1);
	b->len += n;
	return 0;
}

static int str_cmp(const void *pa, const void *pb)
{
	return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

/*
 * What makes two findings of one rule in two processes the same finding (malloc'd, NULL without
 * memory): the rule, the frames of its stack (not their addresses, which differ between
 * processes), and the names of the kernels its evidence lists (in name order).
 */
static char *finding_key(const cs_analysis *a, const cs_report_finding *f)
{
	struct buf b = {NULL, 0, 0};
	char tmp[128];
	int ok = buf_add(&b, f->rule) == 0 && buf_add(&b, "\n") == 0;

	if (ok && f->stack_id != CS_ID_NONE) {
		const cs_frame *fr = NULL;
		cs_error err = {0, ""};
		int n = 0;

		if (a->trace && cs_trace_get_stack(a->trace, f->stack_id, &fr, &n, &err) == 0) {
			for (int i = 0; ok && i < n; i++) {
				snprintf(tmp, sizeof(tmp), "%d|%d|%llx|", fr[i].kind, fr[i].line,
					 (unsigned long long)fr[i].offset);
				ok = buf_add(&b, tmp) == 0 && buf_add(&b, fr[i].symbol) == 0 &&
				     buf_add(&b, "|") == 0 && buf_add(&b, fr[i].file) == 0 &&
				     buf_add(&b, "|") == 0 && buf_add(&b, fr[i].module) == 0 &&
				     buf_add(&b, "\n") == 0;
			}
		} else {
			snprintf(tmp, sizeof(tmp), "stack %lld\n", (long long)f->stack_id);
			ok = buf_add(&b, tmp) == 0;
		}
	}
	if (ok && f->evidence) {
		const cJSON *ks = cJSON_GetObjectItemCaseSensitive(f->evidence, "kernels"), *it;
		int nk = cJSON_IsArray(ks) ? cJSON_GetArraySize(ks) : 0, m = 0;
		const char **names = nk > 0 ? calloc((size_t)nk, sizeof(*names)) : NULL;

		if (nk > 0 && !names)
			ok = 0;
		if (names) {
			cJSON_ArrayForEach(it, ks)
			{
				const cJSON *nm =
					cJSON_IsString(it)
						? it
						: cJSON_GetObjectItemCaseSensitive(it, "name");

				if (cJSON_IsString(nm) && m < nk)
					names[m++] = nm->valuestring;
			}
			cs_sort(names, (size_t)m, sizeof(*names), str_cmp);
			for (int i = 0; ok && i < m; i++)
				ok = buf_add(&b, "kernel ") == 0 && buf_add(&b, names[i]) == 0 &&
				     buf_add(&b, "\n") == 0;
			free(names);
		}
	}
	if (!ok) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

/* Add to f the process of g (whose figures are those of that process). */
static int add_proc(cs_report_finding *f, const cs_report_finding *g, const struct pinfo *pi)
{
	cs_finding_proc *nv = realloc(f->procs, (size_t)(f->nprocs + 1) * sizeof(*nv)), *p;

	if (!nv)
		return CS_ERR_NOMEM;
	f->procs = nv;
	p = &f->procs[f->nprocs];
	memset(p, 0, sizeof(*p));
	p->pid = g->pid;
	p->rank = pi ? pi->rank : CS_ID_NONE;
	p->local_rank = pi ? pi->local_rank : CS_ID_NONE;
	if (g->nsteps > 0) {
		p->steps = malloc((size_t)g->nsteps * sizeof(*p->steps));
		if (!p->steps)
			return CS_ERR_NOMEM;
		memcpy(p->steps, g->steps, (size_t)g->nsteps * sizeof(*p->steps));
		p->nsteps = g->nsteps;
	}
	p->lost_ns_per_step = g->lost_ns_per_step;
	p->step_share = g->step_share;
	p->lost_steps = g->lost_steps;
	p->first = g->first;
	p->last = g->last;
	p->severity = g->severity;
	f->nprocs++;
	return 0;
}

static int has_pid(const cs_report_finding *f, uint32_t pid)
{
	for (int32_t i = 0; i < f->nprocs; i++)
		if (f->procs[i].pid == pid)
			return 1;
	return 0;
}

/* Does g cost more than f: a higher severity, then more time lost in all? */
static int costlier(const cs_report_finding *g, const cs_report_finding *f)
{
	if (g->severity != f->severity)
		return g->severity > f->severity;
	return cs_finding_total_lost(g) > cs_finding_total_lost(f);
}

struct merge {
	cs_report *out;
	char **keys; /* of out->v[base..], NULL for findings not merged here */
	int32_t base, nkeys;
};

/* Move the findings of one process (tmp) into m->out, merged with the same findings of earlier
 * processes. */
static int merge_findings(const cs_analysis *a, struct merge *m, cs_report *tmp,
			  const struct pinfo *pi)
{
	cs_report *out = m->out;

	for (int32_t i = 0; i < tmp->n; i++) {
		cs_report_finding *g = tmp->v[i], *f = NULL;
		char *key = finding_key(a, g);
		int32_t j;

		if (!key)
			return CS_ERR_NOMEM;
		for (j = 0; j < m->nkeys; j++)
			if (m->keys[j] && !strcmp(m->keys[j], key) &&
			    !has_pid(out->v[m->base + j], g->pid)) {
				f = out->v[m->base + j];
				break;
			}
		if (f) {
			free(key);
			if (add_proc(f, g, pi))
				return CS_ERR_NOMEM;
			if (costlier(g, f)) {
				cs_report_finding t = *f;

				*f = *g;
				f->procs = t.procs;
				f->nprocs = t.nprocs;
				*g = t;
				g->procs = NULL;
				g->nprocs = 0;
			}
			continue;
		}
		if (ru_report_room(out)) {
			free(key);
			return CS_ERR_NOMEM;
		}
		{
			char **nk = realloc(m->keys, (size_t)(m->nkeys + 1) * sizeof(*nk));

			if (!nk) {
				free(key);
				return CS_ERR_NOMEM;
			}
			m->keys = nk;
		}
		if (add_proc(g, g, pi)) {
			free(key);
			return CS_ERR_NOMEM;
		}
		m->keys[m->nkeys++] = key;
		out->v[out->n++] = g;
		tmp->v[i] = NULL;
	}
	return 0;
}

/* ---- the run ---- */

static int run_processes(const cs_analysis *a, const cs_step_opts *o, const cs_steps *primary,
			 const cs_analyzer *const *rules, cs_report_processes *procs,
			 cs_report *out, cs_error *err)
{
	cs_step_opts def = {NULL, -1, 0, 0};
	cs_stopwatch w;
	struct pinfo_list l = {NULL, 0, 0};
	struct merge m;
	cs_steps first;
	int rc;

	if (!a || !procs || !out)
		return cs_error_set(err, CS_ERR_INVALID, "cs_report_run_processes: bad argument");
	if (!o)
		o = &def;
	memset(procs, 0, sizeof(*procs));
	memset(&m, 0, sizeof(m));
	cs_stopwatch_start(&w);
	m.out = out;
	m.base = out->n;
	/* the process the steps come from by default (or o->pid): an error here (a pattern that
	 * matches nothing) is the report's error */
	if (primary) {
		first = *primary;
		first.v = malloc((size_t)(primary->n > 0 ? primary->n : 1) * sizeof(*first.v));
		if (!first.v)
			return cs_error_set(err, CS_ERR_NOMEM, "out of memory");
		if (primary->n > 0)
			memcpy(first.v, primary->v, (size_t)primary->n * sizeof(*first.v));
	} else {
		rc = cs_steps_detect(a, o, &first, err);
		if (rc < 0)
			return rc;
	}
	if (o->pid) {
		rc = pinfo_add(&l, o->pid);
	} else {
		rc = gpu_pids(a, &l);
		if (rc == 0 && (first.pid || l.n == 0))
			rc = pinfo_add(&l, first.pid);
	}
	if (rc < 0)
		goto nomem;
	if (a->trace)
		cs_trace_each_process(a->trace, rank_cb, &l, NULL);
	cs_sort(l.v, (size_t)l.n, sizeof(*l.v), pinfo_cmp);
	procs->v = calloc((size_t)l.n, sizeof(*procs->v));
	if (!procs->v)
		goto nomem;
	for (int32_t i = 0; i < l.n; i++) {
		cs_report_process *p = &procs->v[i];

		p->pid = l.v[i].pid;
		p->rank = l.v[i].rank;
		p->local_rank = l.v[i].local_rank;
		if (p->pid == first.pid) {
			p->steps = first;
			memset(&first, 0, sizeof(first));
			procs->primary = i;
		} else {
			cs_step_opts so = *o;

			so.pid = p->pid;
			rc = cs_steps_detect(a, &so, &p->steps, err);
			if (rc == CS_ERR_INVALID && so.step_range) {
				/* no matching range in this process: its steps are found as
				 * without --step-range */
				so.step_range = NULL;
				rc = cs_steps_detect(a, &so, &p->steps, err);
			}
			if (rc < 0)
				goto out;
		}
		procs->n = i + 1;
	}
	cs_timings_add("finding the steps", &w);
	/* the rules run once every process has its steps: the cross-rank rules compare them */
	if (procs->n >= 2) {
		procs->ranks = calloc(1, sizeof(*procs->ranks));
		if (!procs->ranks)
			goto nomem;
		rc = cs_rank_view_build(a, procs, procs->ranks, err);
		if (rc < 0)
			goto out;
	}
	for (int32_t i = 0; i < l.n; i++) {
		struct cs_rule_cache cache = {0};
		cs_report tmp;

		memset(&tmp, 0, sizeof(tmp));
		rc = ru_report_run_cached(a, &procs->v[i].steps, procs, rules, &cache, &tmp, err);
		/* the GPU idle by cause a rule computed is the report's too */
		procs->v[i].idle_by_cause = cache.idle;
		cache.idle = NULL;
		procs->v[i].replay_step_ns = cache.replay_step_ns;
		procs->v[i].fix_all_step_ns = cache.fix_all_step_ns;
		ru_cache_free(&cache);
		if (rc == 0)
			rc = merge_findings(a, &m, &tmp, &l.v[i]);
		cs_report_free(&tmp);
		if (rc == CS_ERR_NOMEM)
			goto nomem;
		if (rc < 0)
			goto out;
	}
	cs_report_sort(out);
	rc = 0;
	goto out;
nomem:
	rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory");
out:
	cs_steps_free(&first);
	for (int32_t i = 0; i < m.nkeys; i++)
		free(m.keys[i]);
	free(m.keys);
	free(l.v);
	return rc;
}

int cs_report_run_processes(const cs_analysis *a, const cs_step_opts *o,
			    const cs_analyzer *const *rules, cs_report_processes *procs,
			    cs_report *out, cs_error *err)
{
	return run_processes(a, o, NULL, rules, procs, out, err);
}

int cs_report_run_processes_from(const cs_analysis *a, const cs_step_opts *o,
				 const cs_steps *primary, const cs_analyzer *const *rules,
				 cs_report_processes *procs, cs_report *out, cs_error *err)
{
	if (!primary)
		return cs_error_set(err, CS_ERR_INVALID, "cs_report_run_processes_from: no steps");
	return run_processes(a, o, primary, rules, procs, out, err);
}

void cs_report_processes_free(cs_report_processes *p)
{
	if (!p)
		return;
	if (p->ranks) {
		cs_rank_view_free(p->ranks);
		free(p->ranks);
	}
	for (int32_t i = 0; i < p->n; i++) {
		cs_steps_free(&p->v[i].steps);
		free(p->v[i].idle_by_cause);
	}
	free(p->v);
	memset(p, 0, sizeof(*p));
}

const cs_report_process *cs_report_process_find(const cs_report_processes *p, uint32_t pid)
{
	for (int32_t i = 0; p && i < p->n; i++)
		if (p->v[i].pid == pid)
			return &p->v[i];
	return NULL;
}
