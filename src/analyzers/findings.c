/*
 * findings.c - the finding model and the report pipeline: severities, allocating and freeing
 * findings, running the selected analyzers with a context that collects what they emit, and the
 * order findings are shown in (most GPU time lost first).
 */
#include <stdlib.h>
#include <string.h>

#include "cuscope/grow.h"
#include "cuscope/analyze.h"
#include "cuscope/timings.h"
#include "cache.h"
#include "finding_kit.h"
#include "estimates.h"
#include "deps.h"

const char *cs_severity_name(int sev)
{
	switch (sev) {
	case CS_SEV_INFO:
		return "info";
	case CS_SEV_WARNING:
		return "warning";
	case CS_SEV_ERROR:
		return "error";
	}
	return "unknown";
}

int cs_severity_parse(const char *s)
{
	if (!s)
		return -1;
	if (!strcmp(s, "info"))
		return CS_SEV_INFO;
	if (!strcmp(s, "warning"))
		return CS_SEV_WARNING;
	if (!strcmp(s, "error"))
		return CS_SEV_ERROR;
	return -1;
}

cs_report_finding *cs_finding_new(const char *rule, int severity, const char *title,
				  const char *fix)
{
	cs_report_finding *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->rule = rule;
	f->severity = severity;
	f->title = strdup(title ? title : "");
	f->fix = strdup(fix ? fix : "");
	f->evidence = cJSON_CreateObject();
	f->first = f->last = CS_TS_UNKNOWN;
	f->stack_id = CS_ID_NONE;
	f->saving_ns = -1;
	if (!f->title || !f->fix || !f->evidence) {
		cs_finding_free(f);
		return NULL;
	}
	return f;
}

/* f owns nothing any more: its members are freed or given away. */
static void finding_forget(cs_report_finding *f)
{
	f->title = f->fix = NULL;
	f->steps = NULL;
	f->nsteps = 0;
	f->evidence = NULL;
	f->procs = NULL;
	f->nprocs = 0;
	f->edit = NULL;
}

/* Free what f owns, not f itself. */
static void finding_clear(cs_report_finding *f)
{
	free(f->title);
	free(f->fix);
	free(f->steps);
	cJSON_Delete(f->evidence);
	for (int32_t i = 0; i < f->nprocs; i++)
		free(f->procs[i].steps);
	free(f->procs);
	cs_edit_free(f->edit);
	finding_forget(f);
}

void cs_finding_free(cs_report_finding *f)
{
	if (!f)
		return;
	finding_clear(f);
	free(f);
}

static int cmp_int32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

/* Sort and drop duplicates in place; returns the new count. */
static int32_t sort_unique(int32_t *v, int32_t n)
{
	int32_t m = 0;

	if (n <= 0)
		return 0;
	cs_sort(v, (size_t)n, sizeof(*v), cmp_int32);
	for (int32_t i = 0; i < n; i++)
		if (m == 0 || v[i] != v[m - 1])
			v[m++] = v[i];
	return m;
}

int cs_finding_set_steps(cs_report_finding *f, const int32_t *steps, int32_t n)
{
	int32_t *v = NULL;

	if (n > 0) {
		v = malloc((size_t)n * sizeof(*v));
		if (!v)
			return CS_ERR_NOMEM;
		memcpy(v, steps, (size_t)n * sizeof(*v));
		n = sort_unique(v, n);
	}
	free(f->steps);
	f->steps = v;
	f->nsteps = n > 0 ? n : 0;
	return 0;
}

int cs_edit_add(cs_edit **e, int kind, int target, int64_t index, int64_t value)
{
	cs_edit_item *it;

	if (!*e && !(*e = calloc(1, sizeof(**e))))
		return CS_ERR_NOMEM;
	if (cs_grow((void **)&(*e)->v, &(*e)->cap, (size_t)(*e)->n + 1, sizeof(*(*e)->v)))
		return CS_ERR_NOMEM;
	it = &(*e)->v[(*e)->n++];
	it->kind = kind;
	it->target = target;
	it->index = index;
	it->value = value;
	return 0;
}

int cs_edit_merge(cs_edit **dst, const cs_edit *src)
{
	for (int64_t i = 0; src && i < src->n; i++)
		if (cs_edit_add(dst, src->v[i].kind, src->v[i].target, src->v[i].index,
				src->v[i].value))
			return CS_ERR_NOMEM;
	return 0;
}

void cs_edit_free(cs_edit *e)
{
	if (!e)
		return;
	free(e->v);
	free(e);
}

int64_t cs_lost_total(int64_t lost_ns_per_step, int32_t nsteps)
{
	if (lost_ns_per_step <= 0)
		return 0;
	if (nsteps <= 0)
		return lost_ns_per_step;
	if (lost_ns_per_step > INT64_MAX / nsteps)
		return INT64_MAX;
	return lost_ns_per_step * nsteps;
}

int64_t cs_finding_total_lost(const cs_report_finding *f)
{
	return cs_lost_total(f->lost_ns_per_step, f->lost_steps > 0 ? f->lost_steps : f->nsteps);
}

int64_t cs_finding_proc_total_lost(const cs_finding_proc *p)
{
	return cs_lost_total(p->lost_ns_per_step, p->lost_steps > 0 ? p->lost_steps : p->nsteps);
}

/* ---- the pipeline ---- */

struct run_ctx {
	cs_report *r;
	const cs_analyzer *current;
};

int ru_report_room(cs_report *r)
{
	if (r->n == r->cap) {
		int32_t cap = r->cap ? r->cap * 2 : 16;
		cs_report_finding **nv = realloc(r->v, (size_t)cap * sizeof(*nv));

		if (!nv)
			return CS_ERR_NOMEM;
		r->v = nv;
		r->cap = cap;
	}
	return 0;
}

/*
 * The emit callback of cs_rule_ctx: moves f's contents into a finding of the report and leaves f
 * with no heap members (cs_finding_free(f) then frees only f itself), on success and on failure.
 */
static int report_emit(cs_rule_ctx *ctx, cs_report_finding *f)
{
	struct run_ctx *rc = ctx->priv;
	cs_report *r = rc->r;
	cs_report_finding *copy;

	if (!f)
		return CS_ERR_INVALID;
	if (ru_report_room(r)) {
		finding_clear(f);
		return CS_ERR_NOMEM;
	}
	copy = malloc(sizeof(*copy));
	if (!copy) {
		finding_clear(f);
		return CS_ERR_NOMEM;
	}
	*copy = *f;
	/* f gave its members away */
	finding_forget(f);

	if (!copy->pid && ctx->steps)
		copy->pid = ctx->steps->pid;
	if (!copy->rule && rc->current)
		copy->rule = rc->current->id;
	if (!copy->rule)
		copy->rule = "unknown";
	if (copy->severity < CS_SEV_INFO)
		copy->severity = CS_SEV_INFO;
	if (copy->severity > CS_SEV_ERROR)
		copy->severity = CS_SEV_ERROR;
	if (!copy->title)
		copy->title = strdup(copy->rule);
	if (!copy->fix)
		copy->fix = strdup("");
	if (!copy->evidence)
		copy->evidence = cJSON_CreateObject();
	/* a pattern of a few steps: its per-step cost is over the steady state (ru_recur) */
	if (ctx->steps && cJSON_IsFalse(cJSON_GetObjectItem(copy->evidence, "recurring")))
		copy->lost_steps = cs_steps_steady(ctx->steps);
	if (!copy->steps || copy->nsteps < 0)
		copy->nsteps = 0;
	copy->nsteps = sort_unique(copy->steps, copy->nsteps);
	if (copy->lost_ns_per_step < 0)
		copy->lost_ns_per_step = 0;
	if (copy->step_share <= 0 && copy->lost_ns_per_step > 0 && ctx->step_median > 0)
		copy->step_share = (double)copy->lost_ns_per_step / (double)ctx->step_median;
	if (!(copy->step_share >= 0)) /* also NaN */
		copy->step_share = 0;
	if (copy->step_share > 1)
		copy->step_share = 1;
	if (!copy->title || !copy->fix || !copy->evidence) {
		cs_finding_free(copy);
		return CS_ERR_NOMEM;
	}
	r->v[r->n++] = copy;
	return 0;
}

int cs_report_run(const cs_analysis *a, const cs_steps *s, const cs_analyzer *const *rules,
		  cs_report *out, cs_error *err)
{
	return cs_report_run_with(a, s, NULL, rules, out, err);
}

int cs_report_run_with(const cs_analysis *a, const cs_steps *s,
		       const struct cs_report_processes *procs, const cs_analyzer *const *rules,
		       cs_report *out, cs_error *err)
{
	struct cs_rule_cache cache = {0}; /* what the rules of this run share */
	int rc = ru_report_run_cached(a, s, procs, rules, &cache, out, err);

	ru_cache_free(&cache);
	return rc;
}

/* The facts that the rules after r (in this pass, then in the summary pass) read. */
static unsigned facts_after(const cs_analyzer *const *rules, const cs_analyzer *const *r, int pass)
{
	unsigned facts = 0;

	for (const cs_analyzer *const *q = r + 1; *q; q++)
		if (!cs_analyzer_after_others(*q) == !pass)
			facts |= (*q)->facts;
	for (const cs_analyzer *const *q = rules; !pass && *q; q++)
		if (cs_analyzer_after_others(*q))
			facts |= (*q)->facts;
	return facts;
}

/*
 * Replay the run of s's process without and with each fix that the findings out->v[from..] state
 * as edits (facts/deps.h), and make the saving of the replay their cost: saving_ns and
 * saving_share, and lost_ns_per_step and step_share from them. Then replay every fix together
 * for the report's header (cache->fix_all_step_ns).
 */
static int replay_savings(const cs_analysis *a, const cs_steps *s, int64_t median, cs_report *out,
			  int32_t from, struct cs_rule_cache *cache)
{
	struct fact_deps *d = NULL;
	cs_edit *all = NULL;
	int64_t base = 0, ed = 0;
	int32_t nspan;
	int any = 0, rc = CS_ERR_NOMEM;

	for (int32_t i = from; i < out->n; i++)
		any |= out->v[i]->edit != NULL && out->v[i]->pid == s->pid;
	if (!any)
		return 0;
	if (fact_deps_build(a, s, FACT_DEPS_UNPROFILED, &d))
		return CS_ERR_NOMEM;
	if (!d || (nspan = fact_deps_span_steps(d)) <= 0) {
		fact_deps_free(d);
		return 0;
	}
	if (fact_deps_replay(d, NULL, NULL, &base))
		goto out;
	if (base <= 0) {
		rc = 0;
		goto out;
	}
	for (int32_t i = from; i < out->n; i++) {
		cs_report_finding *f = out->v[i];
		int64_t saving;
		int32_t per;

		if (!f->edit || f->pid != s->pid)
			continue;
		if (fact_deps_replay(d, f->edit, NULL, &ed) || cs_edit_merge(&all, f->edit))
			goto out;
		/* over the steady steps, as many as the span counts */
		saving = base > ed ? (base - ed) / nspan * cs_steps_steady(s) : 0;
		f->saving_ns = saving;
		f->saving_share = (double)(base > ed ? base - ed : 0) / (double)base;
		per = f->lost_steps > 0 ? f->lost_steps : f->nsteps > 0 ? f->nsteps : cs_steps_steady(s);
		f->lost_ns_per_step = per > 0 ? saving / per : saving;
		f->step_share = median > 0 ? (double)f->lost_ns_per_step / (double)median : 0;
		if (f->step_share > 1)
			f->step_share = 1;
		/* a fix that saves little is not an error, whatever the rule saw: the severity of
		 * the saving over the steady state, when lower */
		if (ru_severity(f->saving_share) < f->severity)
			f->severity = ru_severity(f->saving_share);
	}
	if (fact_deps_replay(d, all, NULL, &ed))
		goto out;
	cache->replay_step_ns = base / nspan;
	cache->fix_all_step_ns = ed / nspan;
	rc = 0;
out:
	cs_edit_free(all);
	fact_deps_free(d);
	return rc;
}

int ru_report_run_cached(const cs_analysis *a, const cs_steps *s,
			 const struct cs_report_processes *procs, const cs_analyzer *const *rules,
			 struct cs_rule_cache *cache, cs_report *out, cs_error *err)
{
	struct run_ctx run = {out, NULL};
	cs_stopwatch w;
	cs_rule_ctx ctx;
	int64_t median, p10, p90;
	int32_t from;
	int rc = 0;

	if (!a || !s || !out)
		return cs_error_set(err, CS_ERR_INVALID, "cs_report_run: bad argument");
	if (!rules)
		rules = cs_analyzers;
	cs_steps_duration_stats(s, &median, &p10, &p90);
	from = out->n;
	/* two passes: the summaries run once the other rules' findings are in */
	for (int pass = 0; pass < 2 && rc == 0; pass++) {
		for (const cs_analyzer *const *r = rules; *r; r++) {
			cs_error rerr = {0, ""};

			if (!cs_analyzer_after_others(*r) != !pass)
				continue;
			memset(&ctx, 0, sizeof(ctx));
			ctx.a = a;
			ctx.steps = s;
			ctx.step_median = median;
			ctx.emit = report_emit;
			ctx.priv = &run;
			ctx.cache = cache;
			ctx.procs = procs;
			ctx.found = out;
			run.current = *r;
			cs_stopwatch_start(&w);
			rc = (*r)->check(&ctx, &rerr);
			/* the large facts no later rule reads are freed now, not at the end */
			ru_cache_trim(cache, facts_after(rules, r, pass));
			cs_timings_add((*r)->id, &w);
			if (rc < 0) {
				rc = cs_error_set(err, rc, "rule %s failed: %s", (*r)->id,
						  rerr.msg[0] ? rerr.msg : cs_err_str(rc));
				break;
			}
			rc = 0;
		}
		/* the summaries read the costs: the replay's come before them */
		if (pass == 0 && rc == 0) {
			cs_stopwatch_start(&w);
			rc = replay_savings(a, s, median, out, from, cache);
			cs_timings_add("replay", &w);
			if (rc < 0)
				rc = cs_error_set(err, rc, "out of memory");
		}
	}
	cs_report_sort(out);
	return rc;
}

static int cmp_finding(const void *pa, const void *pb)
{
	const cs_report_finding *x = *(cs_report_finding *const *)pa;
	const cs_report_finding *y = *(cs_report_finding *const *)pb;
	int64_t tx = cs_finding_total_lost(x), ty = cs_finding_total_lost(y);
	int c;

	if (tx != ty)
		return tx > ty ? -1 : 1;
	if (x->severity != y->severity)
		return x->severity > y->severity ? -1 : 1;
	c = strcmp(x->rule, y->rule);
	if (c)
		return c;
	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return strcmp(x->title, y->title);
}

void cs_report_sort(cs_report *r)
{
	if (r && r->n > 1)
		cs_sort(r->v, (size_t)r->n, sizeof(*r->v), cmp_finding);
}

void cs_report_free(cs_report *r)
{
	if (!r)
		return;
	for (int32_t i = 0; i < r->n; i++)
		cs_finding_free(r->v[i]);
	free(r->v);
	memset(r, 0, sizeof(*r));
}
