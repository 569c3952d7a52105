#!/usr/bin/env bash
# probe.sh - the host time of a step outside its waits, timed by the program itself (probe_host.py), without a
# profiler and under `cuscope record`, alternating, on the GPU machine (from the repository root, .deps carried):
#
#     bash samples/savings/probe/probe.sh [ROUNDS]                 # default 2 rounds
#     PAIRS="d2h_item_gpu:bad" MODES="none default nobt" bash samples/savings/probe/probe.sh 3
#
# MODES: none (no profiler), default (`cuscope record`), nobt (`cuscope record --no-backtrace`). One line per
# run: "MODE PAIR VARIANT prof=0|1 step_ms=.. host_us median=.. p10=.. p90=..". What the difference between
# the modes says: docs/accuracy.md ("The profiler's own host time").
say() { echo "$*"; }
. tests/gpu/build.sh
ROUNDS=${1:-2}
PAIRS=${PAIRS:-"d2h_item_gpu:bad d2h_item_gpu:fixed loss_best_gpu:bad sync_long_queue:bad pinned_copy_gpu:bad d2h_item_host:bad"}
MODES=${MODES:-"none default"}
db=$(mktemp -u /tmp/probe-XXXXXX.db)
for r in $(seq "$ROUNDS"); do
	for pv in $PAIRS; do
		p=${pv%%:*} v=${pv##*:}
		for m in $MODES; do
			case $m in
			none) cmd=() ;;
			default) cmd=("$C" record -q --force -o "$db" --) ;;
			nobt) cmd=("$C" record -q --force --no-backtrace -o "$db" --) ;;
			*) echo "probe.sh: unknown mode $m" >&2; exit 2 ;;
			esac
			"${cmd[@]}" python3 samples/savings/probe/probe_host.py "$p" "$v" 2>&1 | sed -n "s/^probe /$m /p"
		done
	done
done
rm -f "$db"
