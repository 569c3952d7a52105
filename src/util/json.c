/*
 * json.c - cJSON items as cuscope writes them (include/cuscope/json.h): strings with invalid UTF-8
 * repaired, null for missing values, and integers with all their digits.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuscope/json.h"
#include "cuscope/utf8.h"

cJSON *cs_json_add_string(cJSON *obj, const char *key, const char *s)
{
	cJSON *item;
	char *fixed;

	if (!s)
		return cJSON_AddNullToObject(obj, key);
	fixed = cs_utf8_repair(s);
	if (!fixed)
		return NULL;
	item = cJSON_AddStringToObject(obj, key, fixed);
	free(fixed);
	return item;
}

cJSON *cs_json_int(int64_t v)
{
	char text[24];

	snprintf(text, sizeof(text), "%" PRId64, v);
	return cJSON_CreateRaw(text);
}

cJSON *cs_json_add_int(cJSON *obj, const char *key, int64_t v, int64_t none)
{
	cJSON *item = v == none ? cJSON_CreateNull() : cs_json_int(v);

	if (!item || !cJSON_AddItemToObject(obj, key, item)) {
		cJSON_Delete(item);
		return NULL;
	}
	return item;
}

int64_t cs_json_get_int(const cJSON *obj, const char *key, int64_t none)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (cJSON_IsRaw(v) && v->valuestring) {
		char *end;
		long long n = strtoll(v->valuestring, &end, 10);

		return *end ? none : n;
	}
	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : none;
}
