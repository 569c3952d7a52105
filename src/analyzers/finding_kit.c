/*
 * finding_kit.c - what the rules build their findings with: the titles' numbers, medians and modes
 * of per-step values, and the hand-over of a finding (finding_kit.h).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/grow.h"
#include "cuscope/sort.h"
#include "cuscope/units.h"
#include "finding_kit.h"
#include "estimates.h"
#include "kernel_names.h"

const char *ru_fmt_ns(char *buf, size_t size, int64_t ns)
{
	return cs_fmt_duration_title(buf, size, ns);
}

const char *ru_fmt_bytes(char *buf, size_t size, int64_t bytes)
{
	return cs_fmt_bytes_title(buf, size, bytes);
}

const char *ru_fmt_steps(char *buf, size_t size, int32_t n, int32_t steady)
{
	if (n >= steady)
		snprintf(buf, size, "every step");
	else
		snprintf(buf, size, "in %d of %d steps", n, steady);
	return buf;
}

int ru_steps_nonzero(const cs_steps *s, const int64_t *per_step, int32_t **out, int32_t *n)
{
	int32_t *v = malloc(((size_t)s->n + 1) * sizeof(*v));

	*out = NULL;
	*n = 0;
	if (!v)
		return CS_ERR_NOMEM;
	for (int32_t i = 0; i < s->n; i++)
		if (!s->v[i].warmup && per_step[i])
			v[(*n)++] = i;
	*out = v;
	return 0;
}

int ru_emit(cs_rule_ctx *ctx, cs_report_finding *f, cs_error *err)
{
	int rc = ctx->emit(ctx, f);

	cs_finding_free(f);
	if (rc < 0)
		return cs_error_set(err, rc, "cannot add a finding");
	return 0;
}

cs_report_finding *ru_finding_new(const char *rule, int severity, const char *title,
				  const char *fix, const int32_t *steps, int32_t nsteps,
				  int64_t lost)
{
	cs_report_finding *f = cs_finding_new(rule, severity, title, fix);

	if (f && cs_finding_set_steps(f, steps, nsteps)) {
		cs_finding_free(f);
		return NULL;
	}
	if (f)
		f->lost_ns_per_step = lost;
	return f;
}

void ru_finding_span(cs_report_finding *f, const cs_analysis *a, const cs_steps *s,
		     const int32_t *steps, int32_t nsteps)
{
	f->first = nsteps > 0 ? s->v[steps[0]].start : a->trace_start;
	f->last = nsteps > 0 ? s->v[steps[nsteps - 1]].end : a->trace_end;
}

cs_report_finding *ru_step_finding(const cs_rule_ctx *ctx, const char *rule, int severity,
				   const char *title, const char *fix, const int32_t *steps,
				   int32_t nsteps, int64_t lost)
{
	cs_report_finding *f = ru_finding_new(rule, severity, title, fix, steps, nsteps, lost);

	if (f)
		ru_finding_span(f, ctx->a, ctx->steps, steps, nsteps);
	return f;
}

int ru_finish(cs_rule_ctx *ctx, cs_report_finding *f, int rc, cs_error *err)
{
	if (rc < 0) {
		cs_finding_free(f);
		return err && err->code ? rc : cs_error_set(err, rc, "out of memory");
	}
	return f ? ru_emit(ctx, f, err) : 0;
}

void ru_widen(int64_t *first, int64_t *last, int64_t t0, int64_t t1)
{
	if (*first == 0 || t0 < *first)
		*first = t0;
	if (t1 > *last)
		*last = t1;
}

int ru_add_kernel_names(cJSON *e, const cs_analysis *a, const struct fact_name_time *names,
			int32_t n, int32_t max,
			const char *(*note)(int64_t name_id, const void *arg), const void *arg)
{
	cJSON *arr = cJSON_AddArrayToObject(e, "kernels");

	if (!arr)
		return CS_ERR_NOMEM;
	for (int32_t i = 0; i < n && i < max; i++) {
		const struct fact_name_time *t = &names[i];
		cJSON *o = cJSON_CreateObject();

		if (!o)
			return CS_ERR_NOMEM;
		cJSON_AddItemToArray(arr, o);
		cJSON_AddStringToObject(o, "name", cs_analysis_string(a, t->name_id));
		if (note)
			cJSON_AddStringToObject(o, "evidence", note(t->name_id, arg));
		cJSON_AddNumberToObject(o, "ns", (double)t->ns);
		cJSON_AddNumberToObject(o, "launches", (double)t->launches);
		cJSON_AddNumberToObject(o, "mean_ns", (double)(t->ns / t->launches));
		cJSON_AddNumberToObject(o, "mean_blocks", (double)(t->blocks / t->launches));
	}
	return 0;
}

int ru_add_fields(cJSON *e, const struct ru_field *fields, size_t n)
{
	int ok = 1;

	for (size_t i = 0; i < n; i++) {
		const struct ru_field *x = &fields[i];

		ok &= (x->string ? cJSON_AddStringToObject(e, x->key, x->string)
				 : cJSON_AddNumberToObject(e, x->key, x->number)) != NULL;
	}
	return ok ? 0 : CS_ERR_NOMEM;
}

/* ---- evidence of the rules about host waits ---- */

int64_t ru_median_field(const void *per_step, size_t size, const int32_t *steps, int32_t n,
			size_t offset, int64_t *tmp)
{
	for (int32_t i = 0; i < n; i++)
		tmp[i] = *(const int64_t *)((const char *)per_step + (size_t)steps[i] * size +
					    offset);
	return cs_median_i64(tmp, n);
}

void ru_add_medians(cJSON *e, const struct ru_median_key *keys, size_t nkeys, const void *per_step,
		    size_t size, const int32_t *steps, int32_t n, int64_t *tmp)
{
	for (size_t i = 0; i < nkeys; i++)
		cJSON_AddNumberToObject(
			e, keys[i].key,
			(double)ru_median_field(per_step, size, steps, n, keys[i].offset, tmp));
}

int64_t ru_mode_nonzero(int64_t *v, int32_t n)
{
	int32_t best_n = 0;
	int64_t best = 0;

	ru_sort_i64(v, n);
	for (int32_t i = 0, j; i < n; i = j) {
		for (j = i; j < n && v[j] == v[i]; j++)
			;
		if (v[i] != 0 && j - i > best_n) {
			best_n = j - i;
			best = v[i];
		}
	}
	return best;
}
