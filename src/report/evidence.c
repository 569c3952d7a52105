/*
 * evidence.c - the evidence of a finding as people read it: keys in words and values in the unit
 * their key names ("idle per step: 740 us" for "idle_ns_per_step": 739886). The JSON report keeps
 * the keys and the raw numbers; the text, markdown and HTML reports show these.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/demangle.h"
#include "cuscope/strbuf.h"
#include "cuscope/units.h"
#include "cuscope/utf8.h"
#include "report.h"

#define ITEMS_SHOWN 3 /* items of a list shown without verbose */

enum unit {
	UNIT_NONE = 0,
	UNIT_NS,    /* a duration, or a time since the trace start */
	UNIT_BYTES, /* a size */
	UNIT_SHARE, /* a fraction shown as a percentage */
};

/* Is word (len bytes) one of the '_'-separated words of key? */
static int has_word(const char *key, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = key; (p = strstr(p, word)) != NULL; p += n)
		if ((p == key || p[-1] == '_') && (p[n] == '\0' || p[n] == '_'))
			return 1;
	return 0;
}

/* The unit a key names: "..._ns...", "..._start"/"..._end" (times), "bytes", "reserved_...",
 * "device_memory", "..._share...", "..._margin". */
static enum unit key_unit(const char *key)
{
	size_t n;

	if (!key)
		return UNIT_NONE;
	n = strlen(key);
	if (has_word(key, "ns") || (n > 6 && !strcmp(key + n - 6, "_start")) ||
	    (n > 4 && !strcmp(key + n - 4, "_end")))
		return UNIT_NS;
	if (has_word(key, "bytes") || has_word(key, "reserved") || !strcmp(key, "device_memory"))
		return UNIT_BYTES;
	if (has_word(key, "share") || has_word(key, "margin"))
		return UNIT_SHARE;
	return UNIT_NONE;
}

char *report_evidence_label(const char *key)
{
	static const struct {
		const char *word, *shown;
	} words[] = {
		{"gpu", "GPU"}, {"cpu", "CPU"}, {"d2h", "D2H"},
		{"h2d", "H2D"}, {"api", "API"}, {"nvtx", "NVTX"},
	};
	cs_strbuf sb = CS_STRBUF_INIT;
	const char *p = key ? key : "";
	const char *prev = NULL;
	size_t prev_len = 0;
	char *r;

	while (*p) {
		const char *e = strchr(p, '_');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		const char *shown = NULL;

		if (len == 2 && !strncmp(p, "ns", 2)) {
			/* "idle" and an interval are durations already: "idle per step" */
			if (!prev || !((prev_len == 4 && !strncmp(prev, "idle", 4)) ||
				       (prev_len == 8 && !strncmp(prev, "interval", 8)) ||
				       (prev_len == 5 && !strncmp(prev, "floor", 5))))
				shown = "time";
			else
				shown = "";
		}
		for (size_t i = 0; !shown && i < sizeof(words) / sizeof(words[0]); i++)
			if (strlen(words[i].word) == len && !strncmp(p, words[i].word, len))
				shown = words[i].shown;
		if (!shown || *shown) {
			if (sb.len)
				cs_strbuf_add(&sb, " ", 1);
			if (shown)
				cs_strbuf_puts(&sb, shown);
			else
				cs_strbuf_add(&sb, p, len);
		}
		prev = p;
		prev_len = len;
		p += len;
		if (*p == '_')
			p++;
	}
	r = sb.failed ? NULL : cs_text_clean(cs_strbuf_str(&sb));
	cs_strbuf_free(&sb);
	return r;
}

/* A number in the unit of key. */
static void number_text(cs_strbuf *sb, const char *key, double d)
{
	char buf[CS_FMT_MAX];
	int integral = d == (double)(int64_t)d && d > -9.2e18 && d < 9.2e18;

	switch (key_unit(key)) {
	case UNIT_NS:
		/* a mean or a measured rate (1774.3 ns a launch): a duration to the nanosecond */
		if (d > -9.2e18 && d < 9.2e18) {
			cs_strbuf_puts(sb, cs_fmt_duration(buf, sizeof(buf), (int64_t)llround(d)));
			return;
		}
		break;
	case UNIT_BYTES:
		if (integral) {
			cs_strbuf_puts(sb, cs_fmt_bytes(buf, sizeof(buf), (int64_t)d));
			return;
		}
		break;
	case UNIT_SHARE:
		cs_strbuf_printf(sb, "%.1f%%", 100.0 * d);
		return;
	default:
		break;
	}
	if (integral)
		cs_strbuf_puts(sb, cs_fmt_count(buf, sizeof(buf), (int64_t)d));
	else
		cs_strbuf_printf(sb, "%.4g", d);
}

static void value_text(cs_strbuf *sb, const char *key, const cJSON *v, int verbose);

/* An object: a kernel's name first ("name": short, or whole with verbose), then "word value". */
static void object_text(cs_strbuf *sb, const char *key, const cJSON *v, int verbose)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(v, "name"), *it;
	int n = 0, numbers = 1, open = 0;

	cJSON_ArrayForEach(it, v) if (!cJSON_IsNumber(it) && !(cJSON_IsRaw(it) && it->valuestring))
		numbers = 0;
	if (cJSON_IsString(name) && name->valuestring) {
		cs_strbuf_puts(sb, verbose ? cs_demangle(name->valuestring)
					   : cs_demangle_short(name->valuestring));
		n++;
	}
	cJSON_ArrayForEach(it, v)
	{
		char *label;

		if (it == name || !strcmp(it->string ? it->string : "", "name_demangled"))
			continue;
		/* an object of numbers (idle by cause): the parent's unit, zeros left out */
		if (numbers && !verbose && cJSON_IsNumber(it) && it->valuedouble == 0)
			continue;
		label = report_evidence_label(it->string);
		if (name && n == 1 && !open) {
			cs_strbuf_puts(sb, " (");
			open = 1;
		} else if (n) {
			cs_strbuf_puts(sb, ", ");
		}
		cs_strbuf_puts(sb, label ? label : "?");
		cs_strbuf_puts(sb, " ");
		free(label);
		value_text(sb, numbers && key_unit(it->string) == UNIT_NONE ? key : it->string, it,
			   verbose);
		n++;
	}
	if (open)
		cs_strbuf_puts(sb, ")");
	if (n == 0)
		cs_strbuf_puts(sb, "none");
}

static void value_text(cs_strbuf *sb, const char *key, const cJSON *v, int verbose)
{
	if (cJSON_IsString(v)) {
		cs_strbuf_puts(sb, v->valuestring ? v->valuestring : "");
	} else if (cJSON_IsNumber(v)) {
		number_text(sb, key, v->valuedouble);
	} else if (cJSON_IsRaw(v) && v->valuestring) {
		number_text(sb, key, strtod(v->valuestring, NULL));
	} else if (cJSON_IsBool(v)) {
		cs_strbuf_puts(sb, cJSON_IsTrue(v) ? "yes" : "no");
	} else if (cJSON_IsNull(v)) {
		cs_strbuf_puts(sb, "-");
	} else if (cJSON_IsArray(v)) {
		int n = cJSON_GetArraySize(v), shown = 0;
		const cJSON *it;

		cJSON_ArrayForEach(it, v)
		{
			if (!verbose && shown == ITEMS_SHOWN) {
				cs_strbuf_printf(sb, ", ... (%d more)", n - shown);
				break;
			}
			if (shown++)
				cs_strbuf_puts(sb, ", ");
			value_text(sb, key, it, verbose);
		}
		if (n == 0)
			cs_strbuf_puts(sb, "none");
	} else if (cJSON_IsObject(v)) {
		object_text(sb, key, v, verbose);
	}
}

char *report_evidence_value(const char *key, const cJSON *v, int verbose)
{
	cs_strbuf sb = CS_STRBUF_INIT;
	char *r;

	value_text(&sb, key, v, verbose);
	r = sb.failed ? NULL : cs_text_clean(cs_strbuf_str(&sb));
	cs_strbuf_free(&sb);
	return r;
}
