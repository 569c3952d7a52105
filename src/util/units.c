/*
 * units.c - durations, sizes, counts and shares for people (include/cuscope/units.h): the tables
 * and headers of the commands and the report's renderers write 3 significant digits
 * (cs_fmt_duration, cs_fmt_bytes), the gate's and diff's rows 4 (cs_fmt_value).
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuscope/units.h"

#define MIB (1024.0 * 1024.0)

/* ---- 3 significant digits ---- */

/*
 * Print v (>= 0) with three significant digits followed by unit; returns 0, or 1 when rounding
 * reached 1000 and the caller should move to the next unit.
 */
static int fmt_three_digits(char *buf, size_t size, double v, const char *unit)
{
	int decimals = v < 9.995 ? 2 : v < 99.95 ? 1 : 0;

	if (v >= 999.5)
		return 1;
	snprintf(buf, size, "%.*f %s", decimals, v, unit);
	return 0;
}

char *cs_fmt_duration(char *buf, size_t size, int64_t ns)
{
	static const char *const units[] = {"us", "ms", "s"};
	double v;
	const char *sign = "";
	uint64_t mag;
	char tmp[CS_FMT_MAX];

	if (ns == INT64_MIN) { /* CS_TS_UNKNOWN of trace.h, which util does not include */
		snprintf(buf, size, "-");
		return buf;
	}
	if (ns < 0) {
		sign = "-";
		mag = (uint64_t)0 - (uint64_t)ns;
	} else {
		mag = (uint64_t)ns;
	}
	if (mag < 1000) {
		snprintf(buf, size, "%s%" PRIu64 " ns", sign, mag);
		return buf;
	}
	v = (double)mag / 1000.0;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (i + 1 == sizeof(units) / sizeof(units[0]) && v >= 999.5) {
			snprintf(tmp, sizeof(tmp), "%.0f s", v);
			break;
		}
		if (!fmt_three_digits(tmp, sizeof(tmp), v, units[i]))
			break;
		v /= 1000.0;
	}
	snprintf(buf, size, "%s%s", sign, tmp);
	return buf;
}

char *cs_fmt_bytes(char *buf, size_t size, int64_t bytes)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double v;
	size_t i;

	if (bytes < 0) {
		snprintf(buf, size, "-");
		return buf;
	}
	if (bytes < 1024) {
		snprintf(buf, size, "%" PRId64 " B", bytes);
		return buf;
	}
	v = (double)bytes / 1024.0;
	for (i = 0; i + 1 < sizeof(units) / sizeof(units[0]) && v >= 1023.95; i++)
		v /= 1024.0;
	snprintf(buf, size, "%.1f %s", v, units[i]);
	return buf;
}

char *cs_fmt_count(char *buf, size_t size, int64_t n)
{
	char digits[32], out[48];
	uint64_t mag = n < 0 ? (uint64_t)0 - (uint64_t)n : (uint64_t)n;
	int len, o = 0;

	len = snprintf(digits, sizeof(digits), "%" PRIu64, mag);
	if (n < 0)
		out[o++] = '-';
	for (int i = 0; i < len; i++) {
		if (i > 0 && (len - i) % 3 == 0)
			out[o++] = ',';
		out[o++] = digits[i];
	}
	out[o] = '\0';
	snprintf(buf, size, "%s", out);
	return buf;
}

/* ---- 4 significant digits, signed changes ---- */

/* v with 4 significant digits (at most 2 decimals below 100, none from 1000 on). */
static void fmt_sig(char *buf, size_t size, double v, const char *unit)
{
	double a = fabs(v);
	int dec = a >= 1000 ? 0 : a >= 100 ? 1 : 2;

	snprintf(buf, size, "%.*f%s%s", dec, v, unit[0] ? " " : "", unit);
}

/* A count: "3", "0.5", "12.25" (2 decimals at most, trailing zeros dropped). */
static void fmt_count(char *buf, size_t size, double v)
{
	char *dot;
	size_t n;

	snprintf(buf, size, "%.2f", v);
	dot = strchr(buf, '.');
	if (!dot)
		return;
	n = strlen(buf);
	while (n > 0 && buf[n - 1] == '0')
		buf[--n] = '\0';
	if (n > 0 && buf[n - 1] == '.')
		buf[--n] = '\0';
	if (!strcmp(buf, "-0"))
		snprintf(buf, size, "0");
}

char *cs_fmt_value(char *buf, size_t size, int unit, double v, int sign)
{
	char body[64];
	double a = fabs(v);
	const char *s = !sign ? (v < 0 ? "-" : "") : (v < 0 ? "-" : "+");

	switch (unit) {
	case CS_UNIT_NS:
		if (a < 1000)
			snprintf(body, sizeof(body), "%.0f ns", a);
		else if (a < 1e6)
			fmt_sig(body, sizeof(body), a / 1e3, "us");
		else if (a < 1e9)
			fmt_sig(body, sizeof(body), a / 1e6, "ms");
		else
			fmt_sig(body, sizeof(body), a / 1e9, "s");
		break;
	case CS_UNIT_BYTES:
		if (a < 1024)
			snprintf(body, sizeof(body), "%.0f B", a);
		else if (a < MIB)
			fmt_sig(body, sizeof(body), a / 1024, "KiB");
		else if (a < 1024 * MIB)
			fmt_sig(body, sizeof(body), a / MIB, "MiB");
		else
			fmt_sig(body, sizeof(body), a / (1024 * MIB), "GiB");
		break;
	case CS_UNIT_SHARE:
		snprintf(body, sizeof(body), sign ? "%.1f pt" : "%.1f%%", 100 * a);
		break;
	default:
		fmt_count(body, sizeof(body), a);
		break;
	}
	if (!strcmp(body, "0") || !strcmp(body, "0 ns") || !strcmp(body, "0 B") ||
	    !strcmp(body, "0.0 pt") || !strcmp(body, "0.0%"))
		s = sign ? "" : s;
	snprintf(buf, size, "%s%s", s, body);
	return buf;
}

/* ---- the rules' titles ---- */

char *cs_fmt_duration_title(char *buf, size_t size, int64_t ns)
{
	double x = (double)ns;

	if (ns < 0)
		ns = 0;
	if (ns < 1000)
		snprintf(buf, size, "%lld ns", (long long)ns);
	else if (ns < 1000000)
		snprintf(buf, size, x < 100e3 ? "%.1f us" : "%.0f us", x / 1e3);
	else if (ns < 1000 * 1000000)
		snprintf(buf, size, x < 100e6 ? "%.2f ms" : "%.0f ms", x / 1e6);
	else
		snprintf(buf, size, "%.2f s", x / 1e9);
	return buf;
}

char *cs_fmt_bytes_title(char *buf, size_t size, int64_t bytes)
{
	static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB"};
	double x = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, size, "%lld B", (long long)bytes);
		return buf;
	}
	while (x >= 1024 && u < 3) {
		x /= 1024;
		u++;
	}
	snprintf(buf, size, x < 10 ? "%.1f %s" : "%.0f %s", x, unit[u]);
	return buf;
}
