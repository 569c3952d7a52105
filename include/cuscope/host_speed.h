/*
 * host_speed.h - how fast the recording machine's host ran, measured by `cuscope record` before and
 * after the program with probes that do not depend on it (src/cli/host_probe.c), stored in the
 * trace's META host_speed; `info` shows it, `gate` compares host-bound runs at equal host speed
 * with it (docs/ci.md, "The host-speed probe").
 *
 * The value (version 1):
 *   {"version": 1, "method": "...", "device": "...",
 *    "cpu_ns": {"before": B, "after": A},         fixed CPU work, ns per unit (median of blocks)
 *    "cpu_spread": {"before": s, "after": s},     its blocks' interquartile range / median
 *    "launch_ns": {"before": B, "after": A},      bare launch of an empty kernel, ns (median of loops)
 *    "launch_spread": {"before": s, "after": s}}
 * A part that was not measured (no GPU, the program ended by a signal) is left out.
 */
#ifndef CUSCOPE_HOST_SPEED_H
#define CUSCOPE_HOST_SPEED_H

#define CS_META_HOST_SPEED    "host_speed"
#define CS_HOST_SPEED_VERSION 1

enum { CS_PROBE_BEFORE = 0, CS_PROBE_AFTER = 1 };
enum { CS_PROBE_CPU = 0, CS_PROBE_LAUNCH = 1, CS_PROBE_KINDS = 2 };

typedef struct cs_host_speed {
	/* [kind][before/after]; 0 where not measured */
	double ns[CS_PROBE_KINDS][2];
	double spread[CS_PROBE_KINDS][2];
} cs_host_speed;

/*
 * Parse a META host_speed value: 1 when it holds at least one measurement, else 0 (NULL, not JSON,
 * a newer version, nothing usable) with *out zeroed. Values that are not finite and > 0 are left
 * out (spreads: >= 0).
 */
int cs_host_speed_parse(const char *json, cs_host_speed *out);

/*
 * The probe's index of one kind: the mean of before and after (one of them when only one was
 * measured), 0 when neither was. *noise (may be NULL): how far the probe moves by itself, as a
 * share: the larger of |after / before - 1| and the spreads of the measurements taken.
 */
double cs_host_speed_index(const cs_host_speed *h, int kind, double *noise);

#endif
