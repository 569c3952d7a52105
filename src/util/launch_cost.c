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
