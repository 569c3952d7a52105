#!/usr/bin/env bash
# gate_noise.sh - measure the gate's run-to-run noise on the GPU machine and check that real regressions fail
# it, in one command (docs/ci.md, "Thresholds").
#
#   bash tests/gpu/gate_noise.sh [RUNS]        (default 10; OUT defaults to ./gpu-out)
#
# Records tests/gpu/programs/gate_probe.py (the clean training loop of samples/rules/clean.py) RUNS times,
# gates every ordered pair of those runs with the default thresholds (none may fail), then records the same
# program with one added .item() per step, with 5% more GPU work per step and with 5% more host work per
# step, and gates each against the first run (the first two must fail: host_waits / d2h_syncs and
# step_time; the third shows whether host work made the step slower at all). Prints, per metric, how many of the
# noise pairs failed, and writes everything to $OUT/gate-noise.txt with the JUnit files of the regressions.
set -u
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/gpu-out}
RUNS=${1:-10}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/cuscope-gate.XXXXXX)
log=$OUT/gate-noise.txt
: >"$log"
say() { echo "$*" | tee -a "$log"; }
# failing testcases of a JUnit file, one name per line
junit_failures() {
	python3 -c 'import sys, xml.etree.ElementTree as E
for t in E.parse(sys.argv[1]).iter("testcase"):
    if t.find("failure") is not None: print(t.get("name"))' "$1"
}

. tests/gpu/build.sh
P=tests/gpu/programs/gate_probe.py

rec() { # rec NAME ARGS...
	local name=$1
	shift
	if ! "$C" record -q -o "$W/$name.db" --force -- python3 "$P" "$@" >"$W/$name.out" 2>&1; then
		say "record $name failed: $(tail -n 3 "$W/$name.out")"
		return 1
	fi
	say "$name: $(tail -n 1 "$W/$name.out")"
}

for i in $(seq 1 "$RUNS"); do
	rec "run$i"
done
rec sync --extra-sync
rec slow5 --slower 5
rec slowhost5 --slower-host 5

say ""
say "noise: every ordered pair of $RUNS runs, default thresholds"
pairs=0
failed=0
: >"$W/failed-metrics"
for i in $(seq 1 "$RUNS"); do
	for j in $(seq 1 "$RUNS"); do
		[ "$i" = "$j" ] && continue
		[ -f "$W/run$i.db" ] && [ -f "$W/run$j.db" ] || continue
		pairs=$((pairs + 1))
		"$C" gate -q --baseline "$W/run$i.db" --junit "$W/pair.xml" "$W/run$j.db"
		rc=$?
		if [ $rc -ne 0 ]; then
			failed=$((failed + 1))
			junit_failures "$W/pair.xml" >>"$W/failed-metrics"
			say "  FAIL pair run$i -> run$j (exit $rc)"
		fi
	done
done
say "  $failed of $pairs pairs failed"
if [ -s "$W/failed-metrics" ]; then
	say "  failing metrics (count):"
	sort "$W/failed-metrics" | uniq -c | sort -rn | tee -a "$log"
fi
say ""
say "largest change per metric over the noise pairs (diff --format json of run1 against each run):"
for j in $(seq 2 "$RUNS"); do
	[ -f "$W/run$j.db" ] && "$C" diff --format json "$W/run1.db" "$W/run$j.db" >"$W/diff$j.json" 2>/dev/null
done
python3 - "$W" "$RUNS" <<'PY' | tee -a "$log"
import glob, json, sys
worst = {}
for f in glob.glob(sys.argv[1] + "/diff*.json"):
    d = json.load(open(f))
    for m in d.get("metrics", []):
        name = (m.get("label") or m.get("metric")) + (": " + m["kernel"] if m.get("kernel") else "")
        rel, delta = m.get("relative"), m.get("delta")
        key = (name, "rel" if rel is not None else "abs")
        val = abs(rel) if rel is not None else abs(delta or 0)
        worst[key] = max(worst.get(key, 0.0), val)
ranked = sorted(worst.items(), key=lambda x: -x[1])
per_kernel = [x for x in ranked if x[0][0].startswith("kernel time per step:")]
for (name, kind), v in [x for x in ranked if x not in per_kernel] + per_kernel[:10]:
    print(f"  {name:60.60s} " + (f"{v * 100:7.2f}%" if kind == "rel" else f"{v:g} (absolute)"))
if not worst:
    print("  (no metrics found in the diff JSON: see docs/commands/diff.md for its keys)")
PY

say ""
say "regressions against run1 (sync and slow5 must fail; slowhost5 is informational: host work that the"
say "GPU's queue hides does not make the step slower, and then the gate must not fail):"
for r in sync slow5 slowhost5; do
	[ -f "$W/$r.db" ] || continue
	"$C" gate --baseline "$W/run1.db" --junit "$OUT/gate-$r.xml" "$W/$r.db" >"$W/$r.gate" 2>&1
	rc=$?
	say "  $r: exit $rc; step_ms $(grep -o 'step_ms=[^ ]*' "$W/$r.out" | cut -d= -f2) (run1 $(grep -o \
		'step_ms=[^ ]*' "$W/run1.out" | cut -d= -f2)); failing: $(junit_failures "$OUT/gate-$r.xml" | tr '\n' ' ')"
done
say ""
say "scratch: $W"
