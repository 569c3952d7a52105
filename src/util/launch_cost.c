/*
 * launch_cost.c - reading the trace's META launch_cost (cuscope/launch_cost.h).
 */
#include <math.h>

#include <cjson/cJSON.h>

#include "cuscope/launch_cost.h"

double cs_launch_cost_ns(const char *json)
{
	cJSON *root, *v;
	double ns = 0;

	if (!json)
		return 0;
	root = cJSON_Parse(json);
	v = cJSON_GetObjectItemCaseSensitive(root, "ns_per_launch");
	if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= 0)
		ns = v->valuedouble;
	cJSON_Delete(root);
	return ns;
}
