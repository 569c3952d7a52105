/*
 * config.c - the thresholds of `cuscope diff` and `cuscope gate`: their defaults (the metric table
 * of metrics.c), and the JSON configuration that overrides them per metric and per kernel name
 * (schema in docs/ci.md).
 *
 * A configuration is strict: an unknown key, a metric pattern that names no metric, a value of the
 * wrong type or unit is an error, so that a typo cannot silently leave a default in place.
 */
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/analyze.h"
#include "cuscope/demangle.h"
#include "cuscope/files.h"
#include "cuscope/gate.h"
#include "cuscope/utf8.h"

/* Largest configuration file read. */
#define CONFIG_MAX (1 << 20)

void cs_gate_config_defaults(cs_gate_config *c)
{
	memset(c, 0, sizeof(*c));
	for (int m = 0; m < CS_GM_COUNT; m++)
		c->t[m] = cs_metric_get(m)->def;
	c->fold = -1;
	c->warmup = -1;
	c->confidence = 0.99;
	c->host_bound = 0.40;
	c->host_floor = 0.30;
}

void cs_gate_config_free(cs_gate_config *c)
{
	for (int32_t i = 0; i < c->nkernels; i++)
		free(c->kernels[i].pattern);
	free(c->kernels);
	free(c->step_range);
	c->kernels = NULL;
	c->nkernels = 0;
	c->step_range = NULL;
}

const cs_threshold *cs_gate_kernel_threshold(const cs_gate_config *c, const char *name)
{
	for (int32_t i = 0; i < c->nkernels; i++)
		if (fnmatch(c->kernels[i].pattern, name, 0) == 0)
			return &c->kernels[i].t;
	return &c->t[CS_GM_KERNEL_TIME];
}

/* ---- reading a configuration ---- */

struct config_reader {
	const char *path;
	cs_error *err;
};

static int bad(struct config_reader *r, const char *where, const char *fmt, const char *what)
{
	char msg[256];

	snprintf(msg, sizeof(msg), fmt, what);
	return cs_error_set(r->err, CS_ERR_INVALID, "cannot read config '%s': %s%s%s", r->path,
			    where ? where : "", where ? ": " : "", msg);
}

/* Keys that are comments wherever they appear. */
static int comment_key(const char *k)
{
	return !strcmp(k, "comment") || !strcmp(k, "$comment") || !strcmp(k, "$schema");
}

/* A fraction: a number (0.05) or a percentage string ("5%"). */
static int parse_fraction(struct config_reader *r, const char *where, const cJSON *v, double *out)
{
	char *end;
	double x;

	if (cJSON_IsNumber(v)) {
		x = v->valuedouble;
	} else if (cJSON_IsString(v)) {
		errno = 0;
		x = strtod(v->valuestring, &end);
		while (*end == ' ')
			end++;
		if (errno || end == v->valuestring || strcmp(end, "%"))
			return bad(r, where,
				   "invalid value '%s' (a fraction such as 0.05 or \"5%%\")",
				   v->valuestring);
		x /= 100;
	} else {
		return bad(r, where, "%s", "not a number");
	}
	if (!(x >= 0) || !isfinite(x))
		return bad(r, where, "%s", "must be 0 or more");
	*out = x;
	return 0;
}

struct unit_suffix {
	const char *suffix;
	double factor;
};

static const struct unit_suffix time_units[] = {
	{"ns", 1}, {"us", 1e3}, {"\xc2\xb5s", 1e3}, {"ms", 1e6}, {"s", 1e9}, {NULL, 0},
};
static const struct unit_suffix byte_units[] = {
	{"B", 1},
	{"", 1},
	{"KB", 1e3},
	{"MB", 1e6},
	{"GB", 1e9},
	{"KiB", 1024.0},
	{"MiB", 1024.0 * 1024},
	{"GiB", 1024.0 * 1024 * 1024},
	{"kB", 1e3},
	{NULL, 0},
};
static const struct unit_suffix share_units[] = {
	{"%", 0.01},
	{"pt", 0.01},
	{"points", 0.01},
	{NULL, 0},
};
static const struct unit_suffix count_units[] = {
	{"", 1},
	{NULL, 0},
};

/*
 * An absolute threshold in a metric's unit: a number in the config unit (us for times, bytes,
 * count per step, percentage points for shares), or a string with a unit ("200us", "1 MiB").
 */
static int parse_absolute(struct config_reader *r, const char *where, const cJSON *v, int unit,
			  double *out)
{
	static const double number_factor[] = {[CS_UNIT_NS] = 1e3,
					       [CS_UNIT_BYTES] = 1,
					       [CS_UNIT_COUNT] = 1,
					       [CS_UNIT_SHARE] = 0.01};
	static const char *const unit_help[] = {
		[CS_UNIT_NS] = "ns, us, ms or s",
		[CS_UNIT_BYTES] = "B, KB, MB, GB, KiB, MiB or GiB",
		[CS_UNIT_COUNT] = "a plain number",
		[CS_UNIT_SHARE] = "% or pt",
	};
	const struct unit_suffix *u = unit == CS_UNIT_NS      ? time_units
				      : unit == CS_UNIT_BYTES ? byte_units
				      : unit == CS_UNIT_SHARE ? share_units
							      : count_units;
	char *end, msg[160];
	double x;

	if (cJSON_IsNumber(v)) {
		x = v->valuedouble * number_factor[unit];
	} else if (cJSON_IsString(v)) {
		errno = 0;
		x = strtod(v->valuestring, &end);
		if (errno || end == v->valuestring)
			return bad(r, where, "invalid value '%s'", v->valuestring);
		while (*end == ' ')
			end++;
		for (; u->suffix; u++)
			if (!strcmp(end, u->suffix))
				break;
		if (!u->suffix) {
			snprintf(msg, sizeof(msg), "unknown unit in '%%s' (%s)", unit_help[unit]);
			return bad(r, where, msg, v->valuestring);
		}
		x *= u->factor;
	} else {
		return bad(r, where, "%s", "not a number or a string with a unit");
	}
	if (!(x >= 0) || !isfinite(x))
		return bad(r, where, "%s", "must be 0 or more");
	*out = x;
	return 0;
}

/* Fields of a threshold object, applied over t. what: "metrics.step_time" (for messages). */
static int parse_threshold(struct config_reader *r, const char *what, const cJSON *o, int unit,
			   int allow_min_share, int allow_name, cs_threshold *t)
{
	const cJSON *it;
	char where[256];
	int rc;

	if (!cJSON_IsObject(o))
		return bad(r, what, "%s", "not an object");
	cJSON_ArrayForEach(it, o)
	{
		const char *k = it->string;

		snprintf(where, sizeof(where), "%s.%s", what, k);
		if (comment_key(k) || (allow_name && !strcmp(k, "name")))
			continue;
		if (!strcmp(k, "gate")) {
			if (!cJSON_IsBool(it))
				return bad(r, where, "%s", "not true or false");
			t->gate = cJSON_IsTrue(it);
			continue;
		} else if (!strcmp(k, "relative")) {
			rc = parse_fraction(r, where, it, &t->rel);
		} else if (!strcmp(k, "absolute")) {
			rc = parse_absolute(r, where, it, unit, &t->abs);
		} else if (!strcmp(k, "min_share") && allow_min_share) {
			rc = parse_fraction(r, where, it, &t->min_share);
		} else if (!strcmp(k, "min_share")) {
			return bad(r, where, "%s", "min_share applies to kernel_time only");
		} else {
			return bad(r, what,
				   "unknown key '%s' (gate, relative, absolute, min_share)", k);
		}
		if (rc)
			return rc;
	}
	return 0;
}

static int parse_metrics(struct config_reader *r, const cJSON *o, cs_gate_config *c)
{
	const cJSON *it;
	char what[256];

	if (!cJSON_IsObject(o))
		return bad(r, "metrics", "%s", "not an object");
	cJSON_ArrayForEach(it, o)
	{
		int matched = 0, rc;

		if (comment_key(it->string))
			continue;
		snprintf(what, sizeof(what), "metrics.%s", it->string);
		for (int m = 0; m < CS_GM_COUNT; m++) {
			const cs_metric_def *def = cs_metric_get(m);

			if (fnmatch(it->string, def->id, 0) != 0)
				continue;
			matched = 1;
			rc = parse_threshold(r, what, it, def->unit, m == CS_GM_KERNEL_TIME, 0,
					     &c->t[m]);
			if (rc)
				return rc;
		}
		if (!matched)
			return bad(r, NULL,
				   "unknown metric '%s' (cuscope gate --list-metrics lists them)",
				   it->string);
	}
	return 0;
}

static int parse_kernels(struct config_reader *r, const cJSON *a, cs_gate_config *c)
{
	const cJSON *it;
	char what[64];
	int i = 0, rc;

	if (!cJSON_IsArray(a))
		return bad(r, "kernels", "%s", "not an array");
	c->kernels = calloc((size_t)cJSON_GetArraySize(a) + 1, sizeof(*c->kernels));
	if (!c->kernels)
		return cs_error_set(r->err, CS_ERR_NOMEM, "out of memory");
	cJSON_ArrayForEach(it, a)
	{
		cs_kernel_rule *k = &c->kernels[c->nkernels];
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");

		snprintf(what, sizeof(what), "kernels[%d]", i++);
		if (!cJSON_IsObject(it))
			return bad(r, what, "%s", "not an object");
		if (!cJSON_IsString(name) || !name->valuestring[0])
			return bad(r, what, "%s", "needs a \"name\" (a kernel name pattern)");
		/* a kernel named in the config is gated whatever its share */
		k->t = c->t[CS_GM_KERNEL_TIME];
		k->t.min_share = 0;
		rc = parse_threshold(r, what, it, CS_UNIT_NS, 1, 1, &k->t);
		if (rc)
			return rc;
		k->pattern = strdup(name->valuestring);
		if (!k->pattern)
			return cs_error_set(r->err, CS_ERR_NOMEM, "out of memory");
		c->nkernels++;
	}
	return 0;
}

/* Line of the byte at p in text. */
static int line_of(const char *text, const char *p)
{
	int line = 1;

	for (; text < p && *text; text++)
		line += *text == '\n';
	return line;
}

/* The config's text; any file that reads (a FIFO, /dev/stdin, a process substitution too). */
static char *read_config(struct config_reader *r)
{
	char *text = cs_read_small_file(r->path, CONFIG_MAX, 0);

	if (text)
		return text;
	if (errno == ENOMEM)
		cs_error_set(r->err, CS_ERR_NOMEM, "out of memory");
	else
		cs_error_set(r->err, errno == ENOENT ? CS_ERR_NOT_FOUND : CS_ERR_IO,
			     "cannot read config '%s': %s", r->path,
			     errno == EFBIG ? "larger than 1 MiB" : strerror(errno));
	return NULL;
}

int cs_gate_config_load(const char *path, cs_gate_config *c, cs_error *err)
{
	struct config_reader r = {path, err};
	const char *end = NULL;
	const cJSON *it, *kernels = NULL;
	cJSON *doc;
	char *text = read_config(&r);
	int rc = 0;

	if (!text)
		return err ? err->code : CS_ERR_IO;
	doc = cJSON_ParseWithOpts(text, &end, 1);
	if (!doc) {
		const char *at = cJSON_GetErrorPtr();

		rc = cs_error_set(err, CS_ERR_INVALID,
				  "cannot read config '%s': invalid JSON at line %d", path,
				  at ? line_of(text, at) : 1);
		free(text);
		return rc;
	}
	if (!cJSON_IsObject(doc)) {
		rc = bad(&r, NULL, "%s", "not a JSON object");
		goto out;
	}
	cJSON_ArrayForEach(it, doc)
	{
		const char *k = it->string;

		if (comment_key(k))
			continue;
		if (!strcmp(k, "version")) {
			if (!cJSON_IsNumber(it) || it->valuedouble != 1)
				rc = bad(&r, "version", "%s", "this cuscope reads version 1");
		} else if (!strcmp(k, "fold")) {
			if (!cJSON_IsBool(it))
				rc = bad(&r, "fold", "%s", "not true or false");
			else
				c->fold = cJSON_IsTrue(it);
		} else if (!strcmp(k, "step_range")) {
			if (!cJSON_IsString(it) || !it->valuestring[0]) {
				rc = bad(&r, "step_range", "%s", "not a pattern");
			} else {
				free(c->step_range);
				c->step_range = strdup(it->valuestring);
				if (!c->step_range)
					rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory");
			}
		} else if (!strcmp(k, "warmup")) {
			if (!cJSON_IsNumber(it) || it->valuedouble < 0 ||
			    it->valuedouble != floor(it->valuedouble) || it->valuedouble > 1e6)
				rc = bad(&r, "warmup", "%s", "not a number of steps");
			else
				c->warmup = (int)it->valuedouble;
		} else if (!strcmp(k, "confidence")) {
			rc = parse_fraction(&r, "confidence", it, &c->confidence);
			if (!rc && !(c->confidence >= 0.5 && c->confidence < 1))
				rc = bad(&r, "confidence", "%s",
					 "must be at least 0.5 and below 1 (\"99%\")");
		} else if (!strcmp(k, "host_bound")) {
			rc = parse_fraction(&r, "host_bound", it, &c->host_bound);
			if (!rc && c->host_bound > 1)
				rc = bad(&r, "host_bound", "%s", "a share of at most 1 (\"40%\")");
		} else if (!strcmp(k, "host_bound_floor")) {
			rc = parse_fraction(&r, "host_bound_floor", it, &c->host_floor);
		} else if (!strcmp(k, "metrics")) {
			rc = parse_metrics(&r, it, c);
		} else if (!strcmp(k, "kernels")) {
			kernels = it; /* after the metrics: kernel rules start from kernel_time */
		} else {
			rc = bad(&r, NULL,
				 "unknown key '%s' (version, fold, step_range, warmup, confidence, "
				 "host_bound, host_bound_floor, metrics, kernels)",
				 k);
		}
		if (rc)
			goto out;
	}
	if (kernels)
		rc = parse_kernels(&r, kernels, c);
out:
	cJSON_Delete(doc);
	free(text);
	return rc;
}
