/* wait_evidence.c - what the rules about host waits sum and say alike (wait_evidence.h). */
#include <stddef.h>
#include <stdio.h>

#include "cuscope/checked.h"
#include "finding_kit.h"
#include "sites.h"
#include "wait_evidence.h"

/* The medians of the waits' sums in a finding's evidence, first and after the sync types. */
static const struct ru_median_key idle_medians[] = {
	{"idle_ns_per_step", offsetof(struct ru_wait_sum, idle_ns)},
	{"draining_waits_per_step", offsetof(struct ru_wait_sum, draining)},
};
static const struct ru_median_key time_medians[] = {
	{"wait_ns_per_step", offsetof(struct ru_wait_sum, wait_ns)},
	{"refill_ns_per_step", offsetof(struct ru_wait_sum, refill_ns)},
	{"waits_per_step", offsetof(struct ru_wait_sum, waits)},
};

void ru_wait_sum_add(struct ru_wait_sum *x, const cs_analysis *a, const struct fact_wait *w,
		     int64_t taken)
{
	const cs_a_sync *y = &a->syncs[w->sync];
	int64_t cost = fact_wait_cost(w);

	x->waits++;
	if (y->end != CS_TS_UNKNOWN && y->end > y->start)
		cs_sat_accum(&x->wait_ns, y->end - y->start);
	if (cost > 0) {
		x->draining++;
		cs_sat_accum(&x->idle_ns, cost > taken ? cost - taken : 0);
		cs_sat_accum(&x->refill_ns, w->refill_ns);
	}
}

int ru_add_wait_types(cJSON *e, const cs_analysis *a, const struct fact_waits *d,
		      const struct ru_wait_sum *sum, const int32_t *steps, int32_t nsteps,
		      int64_t *tmp, int64_t *best)
{
	static const int32_t type_of[RU_WAIT_TYPES] = {CS_SYNC_UNKNOWN,
						       CS_SYNC_EVENT_SYNCHRONIZE,
						       CS_SYNC_STREAM_WAIT_EVENT,
						       CS_SYNC_STREAM_SYNCHRONIZE,
						       CS_SYNC_CONTEXT_SYNCHRONIZE,
						       CS_SYNC_MEMCPY,
						       CS_SYNC_EVENT_QUERY,
						       CS_SYNC_STREAM_QUERY,
						       CS_SYNC_HOST_FUNC};
	int64_t count[RU_WAIT_TYPES] = {0};
	cJSON *types;

	ru_add_medians(e, idle_medians, sizeof(idle_medians) / sizeof(*idle_medians), sum,
		       sizeof(*sum), steps, nsteps, tmp);
	*best = -1;
	for (int64_t i = 0; i < d->n; i++) {
		const cs_a_sync *y = &a->syncs[d->v[i].sync];

		if (d->v[i].step < 0 || fact_wait_cost(&d->v[i]) == 0)
			continue;
		for (int k = 0; k < RU_WAIT_TYPES; k++)
			if (type_of[k] == y->type)
				count[k]++;
		if (*best < 0 || fact_wait_cost(&d->v[i]) > fact_wait_cost(&d->v[*best]))
			*best = i;
	}
	types = cJSON_AddObjectToObject(e, "waits_by_type");
	if (!types)
		return CS_ERR_NOMEM;
	for (int k = 0; k < RU_WAIT_TYPES; k++)
		if (count[k])
			cJSON_AddNumberToObject(types, cs_sync_type_name(type_of[k]),
						(double)count[k]);
	return 0;
}

void ru_add_wait_times(cJSON *e, const struct ru_wait_sum *sum, const int32_t *steps,
		       int32_t nsteps, int64_t *tmp)
{
	ru_add_medians(e, time_medians, sizeof(time_medians) / sizeof(*time_medians), sum,
		       sizeof(*sum), steps, nsteps, tmp);
}

int ru_add_wait_sites(cJSON *e, const cs_analysis *a, const cs_steps *s, const struct fact_waits *d,
		      int32_t nsteps, int copy_stack, int max, int64_t *stack_id)
{
	struct ru_sites u = {0};
	int rc = 0;

	for (int64_t i = 0; i < d->n && !rc; i++) {
		const struct fact_wait *w = &d->v[i];
		const cs_a_sync *y = &a->syncs[w->sync];

		if (w->step < 0 || fact_wait_cost(w) == 0)
			continue;
		rc = ru_sites_add(&u, -1, y->tid,
				  y->stack_id == CS_ID_NONE && copy_stack
					  ? a->copies[w->first_copy].stack_id
					  : y->stack_id,
				  -1, fact_wait_cost(w));
	}
	if (!rc)
		rc = ru_sites_evidence(e, &u, NULL, 0, max, stack_id);
	ru_sites_free(&u);
	if (rc)
		return rc;
	cJSON_AddNumberToObject(e, "noise_floor_ns", (double)d->floor_ns);
	cJSON_AddNumberToObject(e, "back_to_back_pairs", (double)d->floor_pairs);
	cJSON_AddNumberToObject(e, "steady_steps", cs_steps_steady(s));
	cJSON_AddNumberToObject(e, "affected_steps", nsteps);
	return 0;
}

cJSON *ru_costliest_wait(cJSON *e, const cs_analysis *a, const struct fact_wait *w)
{
	const cs_a_sync *y = &a->syncs[w->sync];
	cJSON *ex = cJSON_AddObjectToObject(e, "costliest_wait");

	if (!ex)
		return NULL;
	cJSON_AddNumberToObject(ex, "step", w->step);
	cJSON_AddStringToObject(ex, "type", cs_sync_type_name(y->type));
	cJSON_AddNumberToObject(ex, "wait_start", (double)y->start);
	cJSON_AddNumberToObject(ex, "wait_end",
				(double)(y->end != CS_TS_UNKNOWN ? y->end : y->start));
	return ex;
}

void ru_costliest_wait_idle(cJSON *ex, const struct fact_wait *w)
{
	cJSON_AddNumberToObject(ex, "idle_start", (double)w->idle_start);
	cJSON_AddNumberToObject(ex, "idle_end", (double)w->idle_end);
	cJSON_AddNumberToObject(ex, "idle_ns", (double)fact_wait_idle(w));
	cJSON_AddNumberToObject(ex, "refill_gaps", w->refill_gaps);
	cJSON_AddNumberToObject(ex, "refill_ns", (double)w->refill_ns);
	cJSON_AddNumberToObject(ex, "window_end", (double)w->window_end);
}

void ru_wait_title(char *buf, size_t size, const char *what, const struct ru_recur *r,
		   const struct ru_wait_sum *sum, const int32_t *steps, int32_t nsteps,
		   int64_t *tmp)
{
	int64_t per = ru_median_field(sum, sizeof(*sum), steps, nsteps,
				      offsetof(struct ru_wait_sum, draining), tmp);
	char b1[32], b2[96], b3[96], rare[200];

	ru_recur_near_text(r, b2, sizeof(b2), b3, sizeof(b3));
	if (r->recurring) {
		snprintf(buf, size,
			 "%s the GPU %lld time%s per step: %s of GPU idle per step (%.1f%%)%s%s",
			 what, (long long)per, per == 1 ? "" : "s",
			 ru_fmt_ns(b1, sizeof(b1), r->lost), r->share * 100, b2, b3);
	} else {
		ru_recur_rare_text(r, nsteps,
				   ru_median_field(sum, sizeof(*sum), steps, nsteps,
						   offsetof(struct ru_wait_sum, idle_ns), tmp),
				   rare, sizeof(rare));
		snprintf(buf, size, "%s the GPU %s%s", what, rare, b2);
	}
}

void ru_wait_span(cs_report_finding *f, const cs_analysis *a, const struct fact_waits *d,
		  int copy_start)
{
	for (int64_t i = 0; i < d->n; i++) {
		const struct fact_wait *w = &d->v[i];

		if (w->step < 0 || fact_wait_cost(w) == 0)
			continue;
		if (f->first == CS_TS_UNKNOWN)
			f->first = copy_start ? a->copies[w->first_copy].start
					      : a->syncs[w->sync].start;
		f->last = w->window_end;
	}
}
