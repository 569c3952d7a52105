/*
 * host_speed.c - reading META host_speed (cuscope/host_speed.h): the probes `record` runs before
 * and after the program.
 */
#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cuscope/host_speed.h"

static const char *const kind_key[CS_PROBE_KINDS][2] = {{"cpu_ns", "cpu_spread"},
							{"launch_ns", "launch_spread"}};
static const char *const when_key[2] = {"before", "after"};

static double number(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble : -1;
}

int cs_host_speed_parse(const char *json, cs_host_speed *out)
{
	cJSON *root;
	double version;
	int any = 0;

	memset(out, 0, sizeof(*out));
	if (!json)
		return 0;
	root = cJSON_Parse(json);
	version = number(root, "version");
	if (!cJSON_IsObject(root) || version < 1 || version > CS_HOST_SPEED_VERSION) {
		cJSON_Delete(root);
		return 0;
	}
	for (int k = 0; k < CS_PROBE_KINDS; k++) {
		const cJSON *ns = cJSON_GetObjectItemCaseSensitive(root, kind_key[k][0]);
		const cJSON *sp = cJSON_GetObjectItemCaseSensitive(root, kind_key[k][1]);

		for (int w = 0; w < 2; w++) {
			double v = number(ns, when_key[w]), s = number(sp, when_key[w]);

			if (v <= 0)
				continue;
			out->ns[k][w] = v;
			out->spread[k][w] = s > 0 ? s : 0;
			any = 1;
		}
	}
	cJSON_Delete(root);
	if (!any)
		memset(out, 0, sizeof(*out));
	return any;
}

double cs_host_speed_index(const cs_host_speed *h, int kind, double *noise)
{
	const double *v = h->ns[kind], *s = h->spread[kind];
	double n = 0, idx;

	if (v[0] > 0 && v[1] > 0) {
		idx = (v[0] + v[1]) / 2;
		n = fabs(v[1] / v[0] - 1);
	} else {
		idx = v[0] > 0 ? v[0] : v[1];
	}
	for (int w = 0; w < 2; w++)
		if (v[w] > 0 && s[w] > n)
			n = s[w];
	if (noise)
		*noise = idx > 0 ? n : 0;
	return idx;
}
