/*
 * units.h - numbers for people, the one place cuscope writes durations, sizes, counts and shares
 * as text: the commands' tables and headers, the report's renderers, the gate's rows and the rules'
 * titles all print through these. Three styles, kept apart because changing one changes what
 * cuscope prints: 3 significant digits (tables, report), 4 (gate and diff), and the rules' titles.
 */
#ifndef CUSCOPE_UNITS_H
#define CUSCOPE_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* Room for any value these functions write. */
#define CS_FMT_MAX 48

/*
 * A duration in ns, 3 significant digits: "850 ns", "12.3 us", "4.56 ms", "1.23 s"; "-" for
 * CS_TS_UNKNOWN (INT64_MIN). Returns buf.
 */
char *cs_fmt_duration(char *buf, size_t size, int64_t ns);
/* A size in bytes: "512 B", "4.0 KiB", "1.5 MiB", "12.3 GiB"; "-" for a negative one. */
char *cs_fmt_bytes(char *buf, size_t size, int64_t bytes);
/* An integer with thousands separators: "1,234,567". */
char *cs_fmt_count(char *buf, size_t size, int64_t n);

/* The unit of a value that cs_fmt_value() writes (and of a gate metric, include/cuscope/gate.h). */
enum cs_metric_unit {
	CS_UNIT_NS = 0, /* a duration; thresholds in a config are in microseconds */
	CS_UNIT_BYTES,
	CS_UNIT_COUNT, /* per step */
	CS_UNIT_SHARE, /* 0..1; thresholds in a config are in percentage points */
};
/*
 * A value of unit (enum cs_metric_unit) as the gate and diff compare them, to 4 significant
 * digits: "18.06 ms", "1.50 MiB", "3", "0.25", "62.5%"; with sign set, a signed change ("+1.20
 * ms", "+5.0 pt" for shares). Returns buf.
 */
char *cs_fmt_value(char *buf, size_t size, int unit, double v, int sign);

/*
 * A duration as the rules write it in their titles and fixes (ru_fmt_ns): "850 ns", "12.3 us",
 * "740 us", "4.56 ms", "135 ms", "1.23 s"; a negative one as 0. Returns buf.
 */
char *cs_fmt_duration_title(char *buf, size_t size, int64_t ns);
/* A size as the rules write it (ru_fmt_bytes): "512 B", "4.0 KiB", "13 GiB". Returns buf. */
char *cs_fmt_bytes_title(char *buf, size_t size, int64_t bytes);

#endif
