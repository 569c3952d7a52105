#!/usr/bin/env bash
# calibrate_variants.sh - `cuscope calibrate` (one process's launch loops in lockstep with a process without a
# profiler: the finest measure of what recording adds to a launch) under several sets of the injection library's
# development options, in rotating rounds, on the GPU machine (.deps carried):
#
#   bash tests/gpu/calibrate_variants.sh [ROUNDS]    (default 3; OUT defaults to ./gpu-out)
#
# CALIBRATE_VARIANTS is a space-separated list of LABEL:CUSCOPE_RECORD_EXTRA and "default" (default:
# "default wf100:wait_flush_ms=100 nowf:wait_flush_ms=0 nobudget:wait_flush_budget=0 small:buffer_kb=256"). Each round
# runs one calibration of every variant (its own 9 rounds of five loops), starting one variant later each round.
# Prints, per variant, the median over the calibrations of what recording adds and of each part (us per launch),
# and writes $OUT/calibrate-variants.txt.
set -u
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/gpu-out}
ROUNDS=${1:-3}
mkdir -p "$OUT"
log=$OUT/calibrate-variants.txt
: >"$log"
say() { printf '%s\n' "$*" | tee -a "$log"; }
. tests/gpu/build.sh
W=$(mktemp -d /tmp/cuscope-calibrate.XXXXXX)
VARIANTS=(${CALIBRATE_VARIANTS:-default wf100:wait_flush_ms=100 nowf:wait_flush_ms=0 nobudget:wait_flush_budget=0 small:buffer_kb=256})
nv=${#VARIANTS[@]}
for r in $(seq 1 "$ROUNDS"); do
	for k in $(seq 0 $((nv - 1))); do
		v=${VARIANTS[$(((k + r - 1) % nv))]}
		extra=
		[ "$v" = default ] || extra=${v#*:}
		CUSCOPE_RECORD_EXTRA=$extra "$C" calibrate --format json >"$W/${v%%:*}-$r.json" 2>"$W/err" ||
			say "round $r: ${v%%:*}: calibrate failed: $(tail -n 1 "$W/err")"
	done
	say "round $r done"
done
python3 - "$W" "${VARIANTS[@]%%:*}" <<'PY' | tee -a "$log"
import glob, json, os, statistics, sys
d, names = sys.argv[1], sys.argv[2:]
parts = ["attached", "kernel_records", "other_kinds_and_callbacks", "cuscope_code"]
print(f"{'variant':10s} {'n':>2s} {'adds':>7s} " + " ".join(f"{p:>26s}" for p in parts) + "  (us per launch, medians)")
for n in names:
    js = []
    for f in sorted(glob.glob(os.path.join(d, f"{n}-*.json"))):
        try:
            js.append(json.load(open(f)))
        except ValueError:
            pass
    if not js:
        print(f"{n:10s}  0 failed")
        continue
    total = statistics.median(j["ns_per_launch"] for j in js) / 1e3
    each = [statistics.median(j["added_wall_ns"][p] for j in js) / 1e3 for p in parts]
    print(f"{n:10s} {len(js):2d} {total:7.3f} " + " ".join(f"{x:26.3f}" for x in each)
          + "   cuscope_code: " + ", ".join(f"{j['added_wall_ns']['cuscope_code'] / 1e3:.3f}" for j in js))
PY
say "scratch: $W"
