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

/* Is key a time since the trace start: "start", "end", "..._start", "..._end"? */
static int is_time_key(const char *key)
{
	size_t n = key ? strlen(key) : 0;

	return n && (!strcmp(key, "start") || !strcmp(key, "end") ||
		     (n > 6 && !strcmp(key + n - 6, "_start")) ||
		     (n > 4 && !strcmp(key + n - 4, "_end")));
}

/*
 * Is key one of the numbers a rule decided with rather than a fact of the run: a threshold
 * ("min_busy_share", "min_repeats"), an interval's bound ("loss_share_low", "..._high"), a margin
 * ("threshold_margin", "affected_share_margin"), "near_threshold"? They tell how sure the rule
 * is, which -v and the JSON keep; the finding's severity and wording already say it.
 */
static int is_decision_key(const char *key)
{
	return !strncmp(key, "min_", 4) || !strncmp(key, "max_", 4) || has_word(key, "low") ||
	       has_word(key, "high") || has_word(key, "margin") || has_word(key, "threshold");
}

int report_evidence_shown(const char *key, int verbose)
{
	/* times since the trace start, the stacks the "where:" lines name, the rule's decision */
	return verbose || !key ||
	       !(is_time_key(key) || !strcmp(key, "sites") || !strcmp(key, "stack_id") ||
		 is_decision_key(key));
}

/* A string value as people read it: a mangled kernel name demangled (short without verbose), a
 * CUDA API name without CUPTI's version suffix (cudaFree_v3020: cudaFree). */
static const char *string_text(const char *s, char *buf, size_t size, int verbose)
{
	if (!s)
		return "";
	if (!strncmp(s, "_Z", 2))
		return verbose ? cs_demangle(s) : cs_demangle_short(s);
	if (!strncmp(s, "cuda", 4) || (!strncmp(s, "cu", 2) && s[2] >= 'A' && s[2] <= 'Z'))
		return cs_api_name_plain(s, buf, size);
	return s;
}

/* A time since the trace start, to the microsecond: "5.265482 s" (-v and HTML only). */
static void time_text(cs_strbuf *sb, double ns)
{
	cs_strbuf_printf(sb, "%.6f s", ns / 1e9);
}

/* The unit a key names: "..._ns...", "start"/"end"/"..._start"/"..._end" (times), "bytes",
 * "reserved_...", "device_memory", "..._share...", "..._margin". */
static enum unit key_unit(const char *key)
{
	if (!key)
		return UNIT_NONE;
	if (has_word(key, "ns") || is_time_key(key))
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

	if (is_time_key(key) && d > -9.2e18 && d < 9.2e18) {
		time_text(sb, d);
		return;
	}
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
/* A number of an object (a raw integer or a double), or NAN. */
static double member_num(const cJSON *o, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);

	if (cJSON_IsNumber(it))
		return it->valuedouble;
	if (cJSON_IsRaw(it) && it->valuestring)
		return strtod(it->valuestring, NULL);
	return NAN;
}

/*
 * A time key of an object as an interval: for "wait_start" (or "start") with a "wait_end" (or
 * "end") beside it, the key of its end in end_key and 1; with a duration of the same name beside
 * them too ("idle_ns", "wait"), 2. 0 for a time without its other end.
 */
static int interval_of(const cJSON *o, const char *key, char *end_key, size_t size)
{
	size_t n = strlen(key);
	char dur[128];

	if (n < 5 || strcmp(key + n - 5, "start") || n - 5 + 4 >= size || n + 3 >= sizeof(dur))
		return 0;
	memcpy(end_key, key, n - 5);
	strcpy(end_key + n - 5, "end");
	if (isnan(member_num(o, key)) || isnan(member_num(o, end_key)))
		return 0;
	if (n == 5)
		return 1;
	memcpy(dur, key, n - 6);
	strcpy(dur + n - 6, "_ns");
	return 1 + (cJSON_GetObjectItemCaseSensitive(o, dur) != NULL);
}

/* Is key the end of an interval whose start the object has (shown with the start)? */
static int interval_end(const cJSON *o, const char *key)
{
	size_t n = strlen(key);
	char start[128];

	if (n < 3 || strcmp(key + n - 3, "end") || n + 3 >= sizeof(start))
		return 0;
	memcpy(start, key, n - 3);
	strcpy(start + n - 3, "start");
	return !isnan(member_num(o, start)) && !isnan(member_num(o, key));
}

static void member_sep(cs_strbuf *sb, int *n, int *open, int named)
{
	if (named && *n == 1 && !*open) {
		cs_strbuf_puts(sb, " (");
		*open = 1;
	} else if (*n) {
		cs_strbuf_puts(sb, ", ");
	}
	(*n)++;
}

/*
 * A member that is a time since the trace start. An interval (wait_start and wait_end) is its
 * duration, "wait 308 us", at its start with verbose, and left out without when a duration of the
 * same name is there (idle_ns); a time without its other end only with verbose.
 */
static void time_member(cs_strbuf *sb, const cJSON *o, const cJSON *it, int verbose, int *n,
			int *open, int named)
{
	char end_key[128], buf[CS_FMT_MAX];
	int iv = interval_of(o, it->string, end_key, sizeof(end_key));
	char *label;

	if (!iv && interval_end(o, it->string))
		return;
	if ((!iv || iv == 2) && !verbose)
		return;
	member_sep(sb, n, open, named);
	if (iv == 1) {
		size_t len = strlen(it->string);
		int64_t d = (int64_t)llround(member_num(o, end_key) - member_num(o, it->string));
		char word[128];

		/* "wait 308 us"; a bare start and end: the duration alone */
		if (len > 6 && len - 6 < sizeof(word)) {
			memcpy(word, it->string, len - 6);
			word[len - 6] = '\0';
			label = report_evidence_label(word);
			cs_strbuf_puts(sb, label ? label : "?");
			cs_strbuf_puts(sb, " ");
			free(label);
		}
		cs_strbuf_puts(sb, cs_fmt_duration(buf, sizeof(buf), d));
		if (verbose) {
			cs_strbuf_puts(sb, " at ");
			time_text(sb, member_num(o, it->string));
		}
		return;
	}
	label = report_evidence_label(it->string);
	cs_strbuf_puts(sb, label ? label : "?");
	cs_strbuf_puts(sb, " ");
	free(label);
	time_text(sb, member_num(o, it->string));
}

static void object_text(cs_strbuf *sb, const char *key, const cJSON *v, int verbose)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(v, "name"), *it;
	int n = 0, numbers = 1, open = 0;
	char buf[256];

	cJSON_ArrayForEach(it, v) if (!cJSON_IsNumber(it) && !(cJSON_IsRaw(it) && it->valuestring))
		numbers = 0;
	if (cJSON_IsString(name) && name->valuestring) {
		cs_strbuf_puts(sb, string_text(name->valuestring, buf, sizeof(buf), verbose));
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
		if (it->string && is_time_key(it->string) && !isnan(member_num(v, it->string))) {
			time_member(sb, v, it, verbose, &n, &open, name != NULL);
			continue;
		}
		if (!report_evidence_shown(it->string, verbose))
			continue;
		label = report_evidence_label(it->string);
		member_sep(sb, &n, &open, name != NULL);
		cs_strbuf_puts(sb, label ? label : "?");
		cs_strbuf_puts(sb, " ");
		free(label);
		value_text(sb, numbers && key_unit(it->string) == UNIT_NONE ? key : it->string, it,
			   verbose);
	}
	if (open)
		cs_strbuf_puts(sb, ")");
	if (n == 0)
		cs_strbuf_puts(sb, "none");
}

static void value_text(cs_strbuf *sb, const char *key, const cJSON *v, int verbose)
{
	if (cJSON_IsString(v)) {
		char buf[256];

		cs_strbuf_puts(sb, string_text(v->valuestring, buf, sizeof(buf), verbose));
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
