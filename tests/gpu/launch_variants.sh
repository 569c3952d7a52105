#!/usr/bin/env bash
# launch_variants.sh - what cuscope adds to each kernel launch, by variant of the injection library, measured
# side by side on the GPU machine in one command (docs/performance.md, "Launch loop").
#
#   bash tests/gpu/launch_variants.sh [ROUNDS] [LAUNCHES]     (defaults 7 and 200000; OUT defaults to ./gpu-out)
#   LAUNCH_PROGRAM=torch bash tests/gpu/launch_variants.sh 5 100000
#
# Runs a host-bound launch loop in ROUNDS rounds: tests/gpu/programs/launch_loop.cu (empty-kernel launches from
# C, the default) or, with LAUNCH_PROGRAM=torch, tests/gpu/programs/launch_torch.py (a PyTorch `add_` loop).
# Each round runs every variant once, in turn, starting one variant later each round (so that no variant
# always runs first or after the same one): no profiler ("none"), `cuscope record` ("default"), `cuscope
# record --no-backtrace` ("nobt"), `cuscope
# record` with each set of development options of the injection library (CUSCOPE_RECORD_EXTRA,
# src/collectors/inject.c), and, for the PyTorch loop, torch.profiler with CPU and CUDA activities
# ("torchprof"). A variant written LABEL:OPTIONS runs with CUSCOPE_RECORD_EXTRA=OPTIONS under the name LABEL
# (e.g. floor:no_callbacks,no_memory,no_sync,no_nvtx for CUPTI's kernel records alone). Prints, per variant, the median and range of the metric per launch and the median added to
# the no-profiler run of the same round, and writes it to $OUT/launch-variants.txt. The metric is the
# process CPU time per launch (cpu_us_per_launch) for the C loop and the wall time per launch (us_per_launch)
# for the PyTorch loop; METRIC= picks another.
set -u
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/gpu-out}
ROUNDS=${1:-7}
N=${2:-200000}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/cuscope-launch.XXXXXX)
log=$OUT/launch-variants.txt
: >"$log"
say() { echo "$*" | tee -a "$log"; }

. tests/gpu/build.sh
if [ "${LAUNCH_PROGRAM:-c}" = torch ]; then
	L=(python3 tests/gpu/programs/launch_torch.py)
	N=${2:-100000}
	METRIC=${METRIC:-us_per_launch}
	DEFAULT_VARIANTS="none default torchprof cb=driver no_callbacks no_callbacks,no_memory,no_sync,no_nvtx"
else
	L=("$W/launch_loop")
	"$NVCC" -O2 -arch=sm_90 -o "$W/launch_loop" tests/gpu/programs/launch_loop.cu || { say "nvcc failed"; exit 2; }
	METRIC=${METRIC:-cpu_us_per_launch}
	DEFAULT_VARIANTS="none default no_staging cb=driver no_callbacks no_callbacks,no_memory,no_sync,no_nvtx"
fi
say "program: ${L[*]} $N; metric: $METRIC"

# name and CUSCOPE_RECORD_EXTRA of each variant; "none" runs without cuscope, "torchprof" under torch.profiler
VARIANTS=(${LAUNCH_VARIANTS:-$DEFAULT_VARIANTS})
for r in $(seq 1 "$ROUNDS"); do
	line="round $r:"
	nv=${#VARIANTS[@]}
	for k in $(seq 0 $((nv - 1))); do
		v=${VARIANTS[$(((k + r - 1) % nv))]}
		opt=${v#*:}
		if [ "$v" = none ]; then
			"${L[@]}" "$N" >"$W/out" 2>&1
		elif [ "$v" = torchprof ]; then
			"${L[@]}" "$N" --torch-profiler >"$W/out" 2>&1
		elif [ "$v" = default ]; then
			"$C" record --no-calibrate -q -o "$W/t.db" --force -- "${L[@]}" "$N" >"$W/out" 2>&1
		elif [ "$v" = nobt ]; then
			"$C" record --no-calibrate -q --no-backtrace -o "$W/t.db" --force -- "${L[@]}" "$N" >"$W/out" 2>&1
		else
			CUSCOPE_RECORD_EXTRA=$opt "$C" record --no-calibrate -q -o "$W/t.db" --force -- "${L[@]}" "$N" >"$W/out" 2>&1
		fi
		x=$(grep -o "\b$METRIC=[^ ]*" "$W/out" | tail -n 1 | cut -d= -f2)
		echo "${v%%:*} ${x:-nan}" >>"$W/all"
		line="$line ${v%%:*}=${x:-FAILED}"
	done
	say "$line"
done
say ""
python3 - "$W/all" "${VARIANTS[@]%%:*}" <<'PY' | tee -a "$log"
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
names = sys.argv[2:]
by = {n: [float(v) for k, v in rows if k == n and v != "nan"] for n in names}
base = by.get("none", [])
print(f"{'variant':44s} {'cpu us/launch median':>20s} {'range':>17s} {'added (median)':>15s}")
for n in names:
    xs = by[n]
    if not xs:
        print(f"{n:44s} {'failed':>20s}")
        continue
    rng = f"{min(xs):.3f}..{max(xs):.3f}"
    add = ""
    if n != "none" and len(base) == len(xs):
        add = f"{statistics.median([x - b for x, b in zip(xs, base)]):+.3f}"
    print(f"{n:44s} {statistics.median(xs):20.3f} {rng:>17s} {add:>15s}")
PY
say "scratch: $W"
