#!/usr/bin/env bash
# targets.sh - the three launch-overhead targets (docs/performance.md), each measured side by side in alternating
# rounds on the GPU machine, with a verdict per target at the end:
#
#   bash tests/gpu/targets.sh [ROUNDS]     (default 5; OUT defaults to ./gpu-out; .deps and .bench carried)
#
#   c      the C loop of empty kernels (tests/gpu/programs/launch_loop.cu, 200,000 launches): the launching
#          thread's CPU per launch with `cuscope record` at most 0.3 us above CUPTI's kernel records alone
#          ("floor": no callbacks, no MEMORY2, SYNCHRONIZATION or NVTX), median over the rounds of the
#          per-round difference;
#   torch  the PyTorch `add_` loop (tests/gpu/programs/launch_torch.py, 60,000 launches): wall time per launch
#          with `cuscope record` at most +25% over no profiler (median of the per-round ratios) and its
#          median at or below torch.profiler's (CPU and CUDA activities); also, from the loop's time per tenth of
#          each run, the same ratio in the machine's quiet state (the shared H200 moves between a quiet state
#          and one 2..4 us a launch slower in mid-run, with no profiler too);
#   step   the reference training step (.bench/train_ref.py, 60 steps): `cuscope record` at most +1.5% over no
#          profiler (median of the per-round ratios), beside the floor.
#
# TARGETS_VARIANTS adds LABEL:OPTIONS variants (CUSCOPE_RECORD_EXTRA) to every part's rounds, e.g.
# "nobudget:wait_flush_budget=0": their medians are in the tables, the verdicts stay those of the defaults.
# TARGETS picks the parts (default "c torch step"; about 1, 3 and 4 minutes with 5 rounds). Each part runs
# launch_variants.sh or stack_cost.sh (their tables in $OUT/targets-*.txt); the verdicts go to
# $OUT/targets.txt. LAUNCH_CPUS=LIST (e.g. 4-7) runs the C and PyTorch loops under taskset -c LIST: on the
# shared H200 it narrowed the C loop's spread from 0.9 to 0.5 us (docs/performance.md, 2026-12-02). Exits 0
# whether or not a target is met (a benchmark, not a test); 2 when a part could not run.
set -u
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/gpu-out}
ROUNDS=${1:-5}
FLOOR=floor:no_callbacks,no_memory,no_sync,no_nvtx
EXTRA=${TARGETS_VARIANTS:-}
mkdir -p "$OUT"
verdicts=$OUT/targets.txt
: >"$verdicts"
W=$(mktemp -d /tmp/cuscope-targets.XXXXXX)
status=0

# the number after "median" on the first line of FILE that starts with PREFIX
median_of() { # FILE PREFIX
	grep -m 1 "^$2" "$1" 2>/dev/null | sed -n 's/.*median \([-+0-9.]*\).*/\1/p'
}
# the median column of VARIANT's row in a launch_variants.sh table
table_median() { # FILE VARIANT
	awk -v v="$2" '$1 == v && NF >= 2 { print $2; exit }' "$1" 2>/dev/null
}
# MET or NOT MET: whether X <= LIMIT; "?" when either is missing
verdict() { # X LIMIT
	[ -n "$1" ] && [ -n "$2" ] || { echo "?"; return; }
	python3 -c 'import sys; print("MET" if float(sys.argv[1]) <= float(sys.argv[2]) else "NOT MET")' "$1" "$2"
}
report() { printf '%s\n' "$*" | tee -a "$verdicts"; }

for part in ${TARGETS:-c torch step}; do
	case $part in
	c)
		OUT=$W/c METRIC=thread_cpu_us_per_launch LAUNCH_VARIANTS="none default $FLOOR $EXTRA" \
			bash tests/gpu/launch_variants.sh "$ROUNDS" 200000 >/dev/null 2>&1
		t=$W/c/launch-variants.txt
		cp "$t" "$OUT/targets-c.txt" 2>/dev/null || { report "c: did not run"; status=2; continue; }
		x=$(median_of "$t" "default less floor")
		report "C loop: cuscope less floor ${x:-?} us of the launching thread's CPU per launch (median of $ROUNDS rounds; target at most 0.3): $(verdict "$x" 0.3)"
		;;
	torch)
		OUT=$W/torch LAUNCH_PROGRAM=torch LAUNCH_VARIANTS="none default torchprof $FLOOR $EXTRA" \
			bash tests/gpu/launch_variants.sh "$ROUNDS" 60000 >/dev/null 2>&1
		t=$W/torch/launch-variants.txt
		cp "$t" "$OUT/targets-torch.txt" 2>/dev/null || { report "torch: did not run"; status=2; continue; }
		x=$(median_of "$t" "default over none")
		d=$(table_median "$t" default) p=$(table_median "$t" torchprof)
		below=$(grep -m 1 '^default at or below torch.profiler' "$t" | sed 's/^default at or below torch.profiler in //')
		report "PyTorch loop: cuscope ${x:-?}% over no profiler (median of per-round ratios; target at most +25): $(verdict "${x#+}" 25)"
		report "PyTorch loop: cuscope median ${d:-?} us per launch, torch.profiler ${p:-?} (at or below in ${below:-?}): $(verdict "$d" "$p")"
		q=$(awk '$1 == "default" && /slow tenths/ { for (i = 1; i <= NF; i++) if ($i ~ /^[-+].*%$/) { print $i; exit } }' "$t")
		[ -n "$q" ] && report "PyTorch loop: cuscope ${q} over no profiler in the machine's quiet state (lower quartiles of the tenths of every run; the per-round medians above move with the machine's slow state, docs/performance.md): $(verdict "$(printf '%s' "${q#+}" | tr -d %)" 25)"
		;;
	step)
		[ -f .bench/train_ref.py ] || { report "step: .bench/train_ref.py not carried"; status=2; continue; }
		OUT=$W/step STACK_COST_CENSUS=0 STACK_COST_MODES="none record $FLOOR $EXTRA" \
			bash tests/gpu/stack_cost.sh "$ROUNDS" >/dev/null 2>&1
		t=$W/step/stack-cost.txt
		cp "$t" "$OUT/targets-step.txt" 2>/dev/null || { report "step: did not run"; status=2; continue; }
		x=$(median_of "$t" "record  *over none per round")
		f=$(median_of "$t" "floor  *over none per round")
		report "Reference step: cuscope ${x:-?}% over no profiler, kernel records alone ${f:-?}% (medians of per-round ratios; target at most +1.5): $(verdict "${x#+}" 1.5)"
		;;
	*)
		report "unknown part '$part' (c, torch, step)"
		status=2
		;;
	esac
done
echo "tables: $OUT/targets-*.txt; scratch: $W"
exit $status
