/*
 * json.h - cJSON items as cuscope writes them (src/util/json.c): the report, the view's answers,
 * the gate's and the commands' JSON.
 */
#ifndef CUSCOPE_JSON_H
#define CUSCOPE_JSON_H

#include <stdint.h>

#include <cjson/cJSON.h>

/* Add a string, or null when s is NULL; invalid UTF-8 is repaired. Returns the item or NULL. */
cJSON *cs_json_add_string(cJSON *obj, const char *key, const char *s);
/*
 * An integer item, printed with all its digits (a cJSON number is a double: ns since the epoch
 * would come out as 1.700000000123e+18).
 */
cJSON *cs_json_int(int64_t v);
/* Add an integer item (cs_json_int), or null when v equals none. Returns the item or NULL. */
cJSON *cs_json_add_int(cJSON *obj, const char *key, int64_t v, int64_t none);
/* Read back an integer added by cs_json_add_int (or a plain number); none when missing or null. */
int64_t cs_json_get_int(const cJSON *obj, const char *key, int64_t none);

#endif
