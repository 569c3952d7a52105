#!/usr/bin/env bash
# backtraces.sh - check `cuscope record --backtrace` end to end on the GPU machine, in one command:
#   1. tests/gpu/programs/gil_spin.py (one thread spins in Python holding the GIL while the other calls .item()
#      and empty_cache()): nothing hangs, and the copies, waits and frees name the program's lines
#      (tests/gpu/check_backtraces.py);
#   2. the usual scenarios with stacks on (tests/gpu/run.sh with CUSCOPE_RECORD_EXTRA=backtrace): exit codes,
#      output and traces unchanged;
#   3. the cost: the reference step and samples/rules/d2h-sync/bad.py (a sync in every step), alternating
#      without and with --backtrace, ROUNDS rounds (default 3).
#
#   bash tests/gpu/backtraces.sh [ROUNDS]          (OUT defaults to ./gpu-out)
set -u
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/gpu-out}
ROUNDS=${1:-3}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/cuscope-bt.XXXXXX)
log=$OUT/backtraces.txt
: >"$log"
say() { echo "$*" | tee -a "$log"; }
fail=0

if [ -d .deps ]; then
	mkdir -p /tmp/deps && for f in .deps/*.deb; do dpkg -x "$f" /tmp/deps; done
	export PKG_CONFIG_SYSROOT_DIR=/tmp/deps PKG_CONFIG_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu/pkgconfig
	export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu
fi
if [ ! -x build-gpu/cuscope ]; then
	meson setup build-gpu >/dev/null && ninja -C build-gpu >/dev/null || { say "build failed"; exit 2; }
fi
C=$PWD/build-gpu/cuscope

say "== gil_spin with --backtrace"
if timeout 120 "$C" record --backtrace -o "$W/gil.db" --force -- python3 tests/gpu/programs/gil_spin.py \
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

say "== scenarios with stacks on"
CUSCOPE_RECORD_EXTRA=backtrace bash tests/gpu/run.sh --no-build \
	--only counts,train_small,torch_eager,cuda_graph,fork,fork_dataloader,spawn,sig_term,jax,torch_compile,memory_ceiling_expandable \
	--budget 300 >"$W/run.out" 2>&1 || fail=1
grep -E '^(PASS|FAIL|SKIP) ' "$W/run.out" | tee -a "$log"

say "== cost of --backtrace ($ROUNDS rounds, alternating)"
for r in $(seq 1 "$ROUNDS"); do
	a=$("$C" record -q -o "$W/a.db" --force -- python3 .bench/train_ref.py --steps 60 2>/dev/null | tail -n 1)
	b=$("$C" record -q --backtrace -o "$W/b.db" --force -- python3 .bench/train_ref.py --steps 60 2>/dev/null |
		tail -n 1)
	say "train_ref round $r: record $a | record --backtrace $b"
	a=$("$C" record -q -o "$W/c.db" --force -- python3 samples/rules/d2h-sync/bad.py 2>/dev/null | tail -n 1)
	b=$("$C" record -q --backtrace -o "$W/d.db" --force -- python3 samples/rules/d2h-sync/bad.py 2>/dev/null |
		tail -n 1)
	say "d2h-sync/bad round $r: record $a | record --backtrace $b"
done
"$C" info "$W/d.db" | grep -E "stacks|size" | tee -a "$log"
say "scratch: $W"
exit $fail
