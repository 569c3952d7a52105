#!/usr/bin/env bash
# measure.sh - measure every pair of samples/savings on the GPU machine and record its bad variant.
#
#   samples/savings/measure.sh [--budget SEC] [--record bad|both|none] [--rounds R]   (from the repository root)
#
# Builds cuscope as tests/gpu/build.sh does (into build-gpu/), builds the CUDA pairs with
# `$NVCC -O2 -arch=sm_90` into samples/savings/bin/, then for every pair of pairs.json (run_pairs.py):
#   (a) measures it: `CMD ab --rounds R` (R rounds, default 5, of one block of bad and one of fixed in one
#       process), or for a pair marked `separate` R rounds of a `CMD bad` and a `CMD fixed` process;
#   (b) records `cuscope record -o $OUT/traces/NAME.db --force -- CMD bad` and, with --record both (the
#       default), NAME-fixed.db of `CMD fixed`.
# Writes $OUT/measured.json (per pair: the per-round bad_ms and fixed_ms, the median saving as a fraction of
# the bad step time, the spread, the device), $OUT/measure.txt (this output), $OUT/traces.tar.gz (the traces)
# and $OUT/logs.tar.gz (every program's output), and prints a table last.
#
# --budget SEC: stop starting pairs once SEC seconds since this script started, plus the next pair's est_s
#               (pairs.json), would be exceeded; the pairs left are listed as skipped. Default: no limit.
# ONLY=SUBSTR[,SUBSTR...]: only the pairs whose name contains one of the substrings.
# OUT (default ./gpu-out), PYTHON (default python3), NVCC (default nvcc).
# Exit status: 0 when every pair measured and recorded, 1 when one failed, 2 when a build failed.
set -u
set -o pipefail
START=$(date +%s)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
OUT=${OUT:-$ROOT/gpu-out}
BUDGET=0 RECORD=both ROUNDS=5
while [ $# -gt 0 ]; do
	case $1 in
	--budget) BUDGET=$2; shift 2 ;;
	--record) RECORD=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	-h|--help) sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "measure.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
mkdir -p "$OUT" || exit 2
log=$OUT/measure.txt
: >"$log"
say() { echo "$*" | tee -a "$log"; }

say "== build cuscope"
. tests/gpu/build.sh
say "cuscope: $C"
say "== build CUDA pairs"
mkdir -p samples/savings/bin
pids=()
for cu in samples/savings/*.cu; do
	n=$(basename "$cu" .cu)
	${NVCC:-nvcc} -O2 -arch=sm_90 -I samples/savings -o "samples/savings/bin/$n" "$cu" \
		>"$OUT/build-$n.log" 2>&1 &
	pids+=($!)
done
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
if [ $fail -ne 0 ]; then
	say "nvcc failed:"; cat "$OUT"/build-*.log | tee -a "$log"; exit 2
fi
rm -f "$OUT"/build-*.log
say "built after $(($(date +%s) - START)) s"

say "== pairs"
${PYTHON:-python3} samples/savings/run_pairs.py measure --out "$OUT" --budget "$BUDGET" --start "$START" \
	--record "$RECORD" --rounds "$ROUNDS" --cuscope "$C" --python "${PYTHON:-python3}" \
	--command "samples/savings/measure.sh --budget $BUDGET --record $RECORD --rounds $ROUNDS${ONLY:+ (ONLY=$ONLY)}" 2>&1 | tee -a "$log"
rc=${PIPESTATUS[0]}
(cd "$OUT" && tar czf traces.tar.gz traces && tar czf logs.tar.gz logs && rm -rf traces logs)
size=$(stat -c %s "$OUT/traces.tar.gz")
if [ "$size" -gt $((15 << 20)) ]; then  # files come back from the GPU machine up to 16 MiB each
	(cd "$OUT" && split -b 15M -d traces.tar.gz traces.tar.gz.part && rm traces.tar.gz)
fi
say "traces.tar.gz: $size bytes; total $(($(date +%s) - START)) s"
exit "$rc"
