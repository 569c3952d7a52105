#!/usr/bin/env bash
# record.sh - record the bad variant of every pair of pairs.json (or those whose name contains one of
# ONLY's comma-separated parts) without measuring them: for a change on the recording side, whose traces
# the predictions are then scored on again (the measured savings stay those of measured.json). On the GPU
# machine, from the repository root, .deps carried:
#
#     OUT=/tmp/rec bash samples/savings/record.sh [--budget SEC]
#
# Builds cuscope (tests/gpu/build.sh) and the CUDA pairs, then per pair `cuscope record -o
# OUT/traces/NAME.db --force -- CMD bad RECORD_ARGS`, one line each (exit status, seconds, the summary);
# pairs that would start past --budget seconds are listed as skipped. Leaves OUT/traces.tar.gz.
set -u
START=$(date +%s)
OUT=${OUT:-$PWD/gpu-out}
BUDGET=0
[ "${1:-}" = --budget ] && BUDGET=$2
say() { echo "$*"; }
. tests/gpu/build.sh
mkdir -p samples/savings/bin "$OUT/traces"
for cu in samples/savings/*.cu; do
	${NVCC:-nvcc} -O2 -arch=sm_90 -I samples/savings -o "samples/savings/bin/$(basename "$cu" .cu)" "$cu" &
done
wait
python3 - "${ONLY:-}" <<'PY' >"$OUT/cmds.txt"
import json, shlex, sys
only = [x for x in (sys.argv[1] if len(sys.argv) > 1 else "").split(",") if x]
for p in json.load(open("samples/savings/pairs.json"))["pairs"]:
    if only and not any(o in p["name"] for o in only):
        continue
    print(p["name"], p.get("est_s", 30), shlex.join(p["cmd"] + ["bad"] + p["record_args"]))
PY
while read -r name est cmd; do
	now=$(($(date +%s) - START))
	if [ "$BUDGET" -gt 0 ] && [ $((now + est / 3)) -gt "$BUDGET" ]; then
		say "skipped $name"
		continue
	fi
	t0=$(date +%s)
	eval "$C record -o $OUT/traces/$name.db --force -- $cmd" >"$OUT/$name.log" 2>&1 </dev/null
	rc=$?
	line=$(grep "^cuscope: wrote" "$OUT/$name.log")
	say "$name rc=$rc $(($(date +%s) - t0))s ${line#cuscope: wrote }"
done <"$OUT/cmds.txt"
(cd "$OUT" && tar czf traces.tar.gz traces && rm -rf traces && tar czf logs.tar.gz ./*.log && rm -f ./*.log)
say "total $(($(date +%s) - START)) s"
