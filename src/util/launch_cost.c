/*
 * launch_cost.c - reading the trace's META launch_cost (cuscope/launch_cost.h).
 */
#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cuscope/launch_cost.h"

double cs_launch_cost_ns_of(const cJSON *value)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(value, "ns_per_launch");

	return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= 0 ? v->valuedouble
										    : 0;
}

double cs_launch_cost_ns(const char *json)
{
	cJSON *root;
	double ns;

	if (!json)
		return 0;
	root = cJSON_Parse(json);
	ns = cs_launch_cost_ns_of(root);
	cJSON_Delete(root);
	return ns;
}

const char *cs_launch_cost_part_label(const char *key)
{
	static const struct {
		const char *key, *label;
	} labels[] = {
		{"attached", "CUPTI attached"},
		{"kernel_records", "its kernel records"},
		{"other_kinds_and_callbacks", "other kinds and callbacks"},
		{"cuscope_code", "cuscope's code"},
	};

	for (size_t i = 0; key && i < sizeof(labels) / sizeof(labels[0]); i++)
		if (strcmp(labels[i].key, key) == 0)
			return labels[i].label;
	return key ? key : "?";
}
