#!/usr/bin/env bash
# stack_cost.sh - where the cost of `record --backtrace` goes on the reference step, measured on the GPU machine
# in one command (docs/backtraces.md, "What stacks cost"):
#   1. a census of the API calls of .bench/train_ref.py (CUSCOPE_RECORD_EXTRA=census): the calls per step of
#      each class that captures a stack with --backtrace (copies, waits, allocations, frees);
#   2. ROUNDS alternating rounds (default 5) of the reference step without a profiler, with `cuscope record`
#      and with `cuscope record --backtrace` (the order rotates each round), and the median step of each.
#
#   bash tests/gpu/stack_cost.sh [ROUNDS]      (OUT defaults to ./gpu-out; needs .bench/train_ref.py)
#
# STACK_COST_MODES replaces the modes of step 2: a space-separated list of none, record (the default
# options), backtrace (--backtrace), nobt (--no-backtrace) and
# NAME:OPTIONS (record with CUSCOPE_RECORD_EXTRA=OPTIONS, the injection library's development options);
# STACK_COST_CENSUS=0 skips step 1; STACK_COST_KEEP=1 keeps every recorded trace, packed into
# $OUT/stack-cost-traces.tar.xz as MODE-ROUND.db (to compare the GPU time and gaps of fast and slow runs).
set -u
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/gpu-out}
ROUNDS=${1:-5}
mkdir -p "$OUT"
log=$OUT/stack-cost.txt
: >"$log"
say() { printf '%s\n' "$*" | tee -a "$log"; }
. tests/gpu/build.sh
W=$(mktemp -d)
STEPS=60

if [ "${STACK_COST_CENSUS:-1}" != 0 ]; then
say "== census (steps: $STEPS + warm-up)"
CUSCOPE_RECORD_EXTRA=census "$C" record --no-calibrate -q -o "$W/census.db" --force -- python3 .bench/train_ref.py --steps $STEPS \
	>"$W/census.out" 2>"$W/census.err"
grep 'cuscope census' "$W/census.err" | awk '$NF != "calls=0"' | sort -t= -k3 -n -r | head -40 | tee -a "$log"
fi

modes=(${STACK_COST_MODES:-none record backtrace})
say "== reference step: ${modes[*]} ($ROUNDS rounds)"
run() { # MODE
	case $1 in
	none) python3 .bench/train_ref.py --steps $STEPS 2>/dev/null | tail -n 1 ;;
	record) "$C" record --no-calibrate -q -o "$W/record-$r.db" --force -- python3 .bench/train_ref.py --steps $STEPS 2>/dev/null | tail -n 1 ;;
	backtrace) "$C" record --no-calibrate -q --backtrace -o "$W/backtrace-$r.db" --force -- python3 .bench/train_ref.py --steps $STEPS 2>/dev/null | tail -n 1 ;;
	nobt) "$C" record --no-calibrate -q --no-backtrace -o "$W/nobt-$r.db" --force -- python3 .bench/train_ref.py --steps $STEPS 2>/dev/null | tail -n 1 ;;
	*:*) CUSCOPE_RECORD_EXTRA=${1#*:} "$C" record --no-calibrate -q -o "$W/${1%%:*}-$r.db" --force -- python3 .bench/train_ref.py --steps $STEPS 2>/dev/null | tail -n 1 ;;
	esac
}
nm=${#modes[@]}
for r in $(seq 1 "$ROUNDS"); do
	line="round $r:"
	for k in $(seq 0 $((nm - 1))); do
		m=${modes[$(((k + r) % nm))]}
		v=$(run "$m" | grep -o 'step_ms=[0-9.]*' | cut -d= -f2)
		echo "${m%%:*} ${v:-nan} $r" >>"$W/all"
		line="$line $m=${v:-FAILED}"
	done
	say "$line"
done
python3 tests/gpu/rounds.py "$W/all" ms | tee -a "$log"
[ -f "$W/backtrace-1.db" ] && "$C" info "$W/backtrace-1.db" 2>/dev/null | grep -iE "stack|size|api" | tee -a "$log"
if [ "${STACK_COST_KEEP:-0}" = 1 ]; then
	cp "$W/all" "$W/steps.txt"
	(cd "$W" && tar -cf - ./*.db steps.txt) | xz -T4 -6 >"$OUT/stack-cost-traces.tar.xz"
	say "kept: $(ls -s --block-size=K "$OUT/stack-cost-traces.tar.xz")"
fi
rm -rf "$W"
