#!/usr/bin/env bash
# backtraces.sh - check `cuscope record --backtrace` end to end on the GPU machine, in one command:
#   1. tests/gpu/programs/gil_spin.py (one thread spins in Python holding the GIL while the other calls .item()
#      and empty_cache()): nothing hangs, and the copies, waits and frees name the program's lines
#      (tests/gpu/check_backtraces.py);
#   2. the usual scenarios with stacks on (tests/gpu/run.sh with CUSCOPE_RECORD_EXTRA=backtrace): exit codes,
#      output and traces unchanged;
#   3. tests/gpu/programs/backward_blame.py: the allocations and frees autograd's engine thread makes in
#      backward() name the backward() line (tests/gpu/check_backward.py);
#   4. the cost: the reference step and samples/rules/d2h-sync/bad.py (a sync in every step), alternating
#      without and with --backtrace, ROUNDS rounds (default 3);
#   5. launch: tests/gpu/programs/launch_lines.py recorded with the default options: every kernel launch with a
#      stack names the line that launched it (tests/gpu/check_launch_lines.py), and the kernel findings of
#      samples/rules/cuda-core-scan/bad.py and launch-starvation/bad.py name their lines (`where:`).
#
#   bash tests/gpu/backtraces.sh [ROUNDS] [SECTIONS]   (OUT defaults to ./gpu-out)
#
# SECTIONS: a comma-separated subset of gil,scenarios,backward,cost,launch (default: all of them).
set -u
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/gpu-out}
ROUNDS=${1:-3}
SECTIONS=,${2:-gil,scenarios,backward,cost,launch},
want() { [[ $SECTIONS == *,$1,* ]]; }
mkdir -p "$OUT"
W=$(mktemp -d /tmp/cuscope-bt.XXXXXX)
log=$OUT/backtraces.txt
: >"$log"
say() { echo "$*" | tee -a "$log"; }
fail=0

. tests/gpu/build.sh

if want gil; then
say "== gil_spin with --backtrace"
if timeout 120 "$C" record --no-calibrate --backtrace -o "$W/gil.db" --force -- python3 tests/gpu/programs/gil_spin.py \
	>"$W/gil.out" 2>&1; then
	line=$(grep '^steps=' "$W/gil.out")
	item=$(sed -n 's/.*item_line=\([0-9]*\).*/\1/p' <<<"$line")
	empty=$(sed -n 's/.*empty_line=\([0-9]*\).*/\1/p' <<<"$line")
	python3 tests/gpu/check_backtraces.py "$W/gil.db" gil_spin.py "$item" "$empty" | tee -a "$log" || fail=1
	"$C" report --no-color "$W/gil.db" | tail -n 12 | tee -a "$log"
else
	say "FAIL gil_spin exited $? (timeout 124 = hang): $(tail -n 5 "$W/gil.out")"
	fail=1
fi
fi

if want scenarios; then
say "== scenarios with stacks on"
CUSCOPE_RECORD_EXTRA=backtrace bash tests/gpu/run.sh --no-build \
	--only counts,train_small,torch_eager,cuda_graph,fork,fork_dataloader,spawn,sig_term,jax,torch_compile,memory_ceiling_expandable \
	--budget 300 >"$W/run.out" 2>&1 || fail=1
grep -E '^(PASS|FAIL|SKIP) ' "$W/run.out" | tee -a "$log"
fi

if want backward; then
say "== backward_blame with --backtrace"
if timeout 120 "$C" record --no-calibrate --backtrace -o "$W/bw.db" --force -- python3 tests/gpu/programs/backward_blame.py \
	>"$W/bw.out" 2>&1; then
	line=$(grep '^steps=' "$W/bw.out")
	bl=$(sed -n 's/.*backward_line=\([0-9]*\).*/\1/p' <<<"$line")
	fl=$(sed -n 's/.*forward_line=\([0-9]*\).*/\1/p' <<<"$line")
	python3 tests/gpu/check_backward.py "$W/bw.db" "$bl" "$fl" | tee -a "$log" || fail=1
	"$C" report --no-color "$W/bw.db" | grep -E "where:|finding" | head -n 8 | tee -a "$log"
else
	say "FAIL backward_blame exited $? (timeout 124 = hang): $(tail -n 5 "$W/bw.out")"
	fail=1
fi
fi

if want launch; then
say "== launch sites (default options)"
if timeout 120 "$C" record --no-calibrate -o "$W/ll.db" --force -- python3 tests/gpu/programs/launch_lines.py >"$W/ll.out" 2>&1; then
	python3 tests/gpu/check_launch_lines.py "$W/ll.db" "$W/ll.out" | tee -a "$log" || fail=1
	"$C" info "$W/ll.db" | grep -iE "stack|kernels" | head -n 4 | tee -a "$log"
else
	say "FAIL launch_lines exited $? (timeout 124 = hang): $(tail -n 5 "$W/ll.out")"
	fail=1
fi
for p in cuda-core-scan/bad.py launch-starvation/bad.py; do
	n=${p%%/*}
	if timeout 120 "$C" record --no-calibrate -q -o "$W/$n.db" --force -- python3 "samples/rules/$p" >/dev/null 2>&1; then
		"$C" report --no-color "$W/$n.db" | grep -E "^\[|where:|^ +[a-z_./]+\.py:[0-9]+" | head -n 12 | tee -a "$log"
		"$C" report --no-color "$W/$n.db" | awk -v r="] $n " 'index($0, r) { on = 1 } on && /^$/ { on = 0 } on' |
			grep -q "where:" ||
			{ say "FAIL $n: the finding names no line"; fail=1; }
	else
		say "FAIL recording $p"
		fail=1
	fi
done
fi

if want cost; then
say "== cost of --backtrace ($ROUNDS rounds; odd rounds plain first, even rounds --backtrace first)"
# run_pair NAME DB PROGRAM...: record PROGRAM plainly and with --backtrace, in the round's order, and log both
run_pair() {
	local name=$1 db=$2 a b
	shift 2
	if [ $((r % 2)) = 1 ]; then
		a=$("$C" record --no-calibrate -q -o "$W/$db-a.db" --force -- "$@" 2>/dev/null | tail -n 1)
		b=$("$C" record --no-calibrate -q --backtrace -o "$W/$db-b.db" --force -- "$@" 2>/dev/null | tail -n 1)
	else
		b=$("$C" record --no-calibrate -q --backtrace -o "$W/$db-b.db" --force -- "$@" 2>/dev/null | tail -n 1)
		a=$("$C" record --no-calibrate -q -o "$W/$db-a.db" --force -- "$@" 2>/dev/null | tail -n 1)
	fi
	say "$name round $r: record $a | record --backtrace $b"
}
for r in $(seq 1 "$ROUNDS"); do
	run_pair train_ref ref python3 .bench/train_ref.py --steps 60
	run_pair d2h-sync/bad d2h python3 samples/rules/d2h-sync/bad.py
done
# median of the per-round ratios (with / without --backtrace) of each program's median step
python3 - "$log" <<'PY' | tee -a "$log"
import re, statistics, sys
for prog in ("train_ref", "d2h-sync/bad"):
    ratios = []
    for line in open(sys.argv[1]):
        if line.startswith(prog + " round"):
            v = [float(x) for x in re.findall(r"step_ms=([0-9.]+)", line)]
            if len(v) == 2:
                ratios.append(v[1] / v[0])
    if ratios:
        print(f"{prog}: --backtrace step / plain step, median of {len(ratios)} rounds {statistics.median(ratios):.4f}"
              f" [{min(ratios):.4f}..{max(ratios):.4f}]")
PY
"$C" info "$W/d2h-b.db" | grep -E "stacks|size" | tee -a "$log"
fi
say "scratch: $W"
exit $fail
