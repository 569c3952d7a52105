/* wait_evidence.c - the evidence of the rules about host waits (wait_evidence.h). */
#include "sites.h"
#include "wait_evidence.h"

int ru_add_wait_types(cJSON *e, const cs_analysis *a, const struct fact_waits *d, int64_t *best)
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

int ru_add_wait_sites(cJSON *e, const cs_analysis *a, const struct fact_waits *d, int copy_stack,
		      int max, int64_t *stack_id)
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
	return rc;
}
