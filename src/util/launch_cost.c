/*
 * launch_cost.c - reading the trace's META launch_cost (cuscope/launch_cost.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cuscope/files.h"
#include "cuscope/launch_cost.h"

#define LAUNCH_COST_FILE_MAX (64 * 1024) /* a calibration's JSON is under 2 KiB */

/* The value's ns_per_launch when it is a finite number >= 0, else NULL. */
static const cJSON *ns_per_launch(const cJSON *value)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(value, "ns_per_launch");

	return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= 0 ? v : NULL;
}

double cs_launch_cost_ns_of(const cJSON *value)
{
	const cJSON *v = ns_per_launch(value);

	return v ? v->valuedouble : 0;
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

/* A finite number >= 0 at key of o, else 0. */
static double num_at(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= 0 ? v->valuedouble
										    : 0;
}

int cs_call_tails_mean(const char *json, unsigned pid, double *mean_ns)
{
	static const char *const kind[CS_CALL_TAIL_KINDS] = {"launch", "stack", "other"};
	cJSON *root;
	const cJSON *p;
	char key[16];

	for (int k = 0; k < CS_CALL_TAIL_KINDS; k++)
		mean_ns[k] = 0;
	if (!json)
		return 0;
	root = cJSON_Parse(json);
	snprintf(key, sizeof(key), "%u", pid);
	p = cJSON_GetObjectItemCaseSensitive(root, key);
	if (!cJSON_IsObject(p)) {
		cJSON_Delete(root);
		return 0;
	}
	for (int k = 0; k < CS_CALL_TAIL_KINDS; k++) {
		const cJSON *o = cJSON_GetObjectItemCaseSensitive(p, kind[k]);
		double calls = num_at(o, "calls"), ns = num_at(o, "ns");

		mean_ns[k] = calls >= 1 ? ns / calls : 0;
	}
	cJSON_Delete(root);
	return 1;
}

double cs_launch_cost_own_code_ns(const char *json)
{
	cJSON *root = json ? cJSON_Parse(json) : NULL;
	double ns = num_at(cJSON_GetObjectItemCaseSensitive(root, "added_wall_ns"), "cuscope_code");

	cJSON_Delete(root);
	return ns;
}

void cs_launch_cost_wait_ns(const char *json, double *copy, double *sync)
{
	cJSON *root = json ? cJSON_Parse(json) : NULL;
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(root, "waits");

	*copy = num_at(cJSON_GetObjectItemCaseSensitive(w, "copy"), "added_ns");
	*sync = num_at(cJSON_GetObjectItemCaseSensitive(w, "sync"), "added_ns");
	cJSON_Delete(root);
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

char *cs_launch_cost_load(const char *path, char *why, size_t cap)
{
	char *text, *out = NULL;
	cJSON *root;
	const cJSON *version;

	why[0] = '\0';
	text = cs_read_small_file(path, LAUNCH_COST_FILE_MAX, 1);
	if (!text) {
		if (errno == EFBIG)
			snprintf(why, cap, "'%s' is larger than a calibration (%d KiB)", path,
				 LAUNCH_COST_FILE_MAX / 1024);
		else if (errno == ENOMEM)
			snprintf(why, cap, "out of memory");
		else
			snprintf(why, cap, "cannot read '%s': %s", path, cs_file_strerror(errno));
		return NULL;
	}
	root = cJSON_Parse(text);
	free(text);
	version = cJSON_GetObjectItemCaseSensitive(root, "version");
	if (!cJSON_IsObject(root))
		snprintf(why, cap, "'%s' is not JSON ('cuscope calibrate --format json' writes it)",
			 path);
	else if (cJSON_IsNumber(version) && version->valuedouble > CS_LAUNCH_COST_VERSION)
		snprintf(
			why, cap,
			"'%s' was written by a newer cuscope (version %g; this one reads up to %d)",
			path, version->valuedouble, CS_LAUNCH_COST_VERSION);
	else if (!ns_per_launch(root))
		snprintf(why, cap,
			 "'%s' has no ns_per_launch: not what 'cuscope calibrate --format json' "
			 "writes",
			 path);
	else if (!(out = cJSON_PrintUnformatted(root)))
		snprintf(why, cap, "out of memory");
	cJSON_Delete(root);
	return out;
}
