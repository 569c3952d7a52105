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
# src/collectors/options.c), and, for the PyTorch loop, torch.profiler with CPU and CUDA activities
# ("torchprof"). A variant written LABEL:OPTIONS runs with CUSCOPE_RECORD_EXTRA=OPTIONS under the name LABEL
# (e.g. floor:no_callbacks,no_memory,no_sync,no_nvtx for CUPTI's kernel records alone). Prints, per variant, the median and range of the metric per launch and the median added to
# the no-profiler run of the same round and the median ratio to it, and writes it to
# $OUT/launch-variants.txt (each run's info line, with every metric the program printed, goes to
# $OUT/launch-variants-runs.txt); with the variants the launch-overhead targets compare (a variant named floor,
# or torchprof), also default less floor per round, default over none per round and the rounds where
# default is at or below torch.profiler. The metric is the
# process CPU time per launch (cpu_us_per_launch) for the C loop and the wall time per launch (us_per_launch)
# for the PyTorch loop; METRIC= picks another. LAUNCH_CPUS=LIST runs every variant under taskset -c LIST.
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
: >"$OUT/launch-variants-runs.txt" # every run's info line (all its metrics): round, variant, line
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

# LAUNCH_CPUS (a taskset list, e.g. 4-7): every variant's process and its threads on those CPUs only, the same
# for all, so that no variant gets other cores for its helper threads or a quieter core by chance
pinned() {
	if [ -n "${LAUNCH_CPUS:-}" ]; then
		taskset -c "$LAUNCH_CPUS" "$@"
	else
		"$@"
	fi
}
say "CPUs: ${LAUNCH_CPUS:-any}"

# name and CUSCOPE_RECORD_EXTRA of each variant; "none" runs without cuscope, "torchprof" under torch.profiler
VARIANTS=(${LAUNCH_VARIANTS:-$DEFAULT_VARIANTS})
for r in $(seq 1 "$ROUNDS"); do
	line="round $r:"
	nv=${#VARIANTS[@]}
	for k in $(seq 0 $((nv - 1))); do
		v=${VARIANTS[$(((k + r - 1) % nv))]}
		opt=${v#*:}
		if [ "$v" = none ]; then
			pinned "${L[@]}" "$N" >"$W/out" 2>&1
		elif [ "$v" = torchprof ]; then
			pinned "${L[@]}" "$N" --torch-profiler >"$W/out" 2>&1
		elif [ "$v" = default ]; then
			pinned "$C" record --no-calibrate -q -o "$W/t.db" --force -- "${L[@]}" "$N" >"$W/out" 2>&1
		elif [ "$v" = nobt ]; then
			pinned "$C" record --no-calibrate -q --no-backtrace -o "$W/t.db" --force -- "${L[@]}" "$N" >"$W/out" 2>&1
		else
			CUSCOPE_RECORD_EXTRA=$opt pinned "$C" record --no-calibrate -q -o "$W/t.db" --force -- "${L[@]}" "$N" >"$W/out" 2>&1
		fi
		x=$(grep -o "\b$METRIC=[^ ]*" "$W/out" | tail -n 1 | cut -d= -f2)
		echo "$r ${v%%:*} ${x:-nan}" >>"$W/all"
		chunks=$(grep '^chunks:' "$W/out" | tail -n 1)
		echo "$r ${v%%:*} $chunks" >>"$W/chunks"
		echo "$r ${v%%:*} $(grep '^info:' "$W/out" | tail -n 1) $chunks" >>"$OUT/launch-variants-runs.txt"
		line="$line ${v%%:*}=${x:-FAILED}"
	done
	say "$line"
done
say ""
touch "$W/chunks"
python3 - "$W/all" "$METRIC" "${LAUNCH_PROGRAM:-c}" "$W/chunks" "${VARIANTS[@]%%:*}" <<'PY' | tee -a "$log"
import statistics, sys
metric, program, names = sys.argv[2], sys.argv[3], sys.argv[5:]
# round -> variant -> value (a round cut short by a time limit keeps what it measured)
rounds = {}
for line in open(sys.argv[1]):
    r, n, v = line.split()
    if v != "nan":
        rounds.setdefault(int(r), {})[n] = float(v)
def paired(a, b, f):
    """f(a, b) of every round that measured both, in round order"""
    return [f(x[a], x[b]) for _, x in sorted(rounds.items()) if a in x and b in x]
med = statistics.median
print(f"{'variant':44s} {metric + ' median':>22s} {'range':>17s} {'added (median)':>15s} {'x none (median)':>16s}")
for n in names:
    xs = [x[n] for x in rounds.values() if n in x]
    if not xs:
        print(f"{n:44s} {'failed':>22s}")
        continue
    add = paired(n, "none", lambda a, b: a - b) if n != "none" else []
    ratio = paired(n, "none", lambda a, b: a / b) if n != "none" else []
    print(f"{n:44s} {med(xs):22.3f} {f'{min(xs):.3f}..{max(xs):.3f}':>17s} "
          f"{f'{med(add):+.3f}' if add else '':>15s} {f'{med(ratio):.3f}' if ratio else '':>16s}")
# the launch-overhead targets (docs/performance.md), where the variants they compare ran
if "default" in names and "floor" in names:
    d = paired("default", "floor", lambda a, b: a - b)
    if d:
        print(f"default less floor, per round: {', '.join(f'{x:.3f}' for x in d)}; median {med(d):.3f}"
              + (" (target: at most 0.3 us of CPU for the C loop)" if program == "c" else ""))
if "default" in names and "none" in names and "torchprof" in names:
    d = paired("default", "none", lambda a, b: 100 * (a / b - 1))
    if d:
        print(f"default over none, per round: {', '.join(f'{x:+.1f}%' for x in d)}; median {med(d):+.1f}%"
              + (" (target: at most +25% for the PyTorch loop)" if program == "torch" else ""))
if "default" in names and "torchprof" in names:
    d = paired("default", "torchprof", lambda a, b: a <= b)
    if d:
        print(f"default at or below torch.profiler in {sum(d)} of {len(d)} rounds")
# The PyTorch loop prints its wall time per launch for each tenth of the loop ("chunks:"). On the shared H200
# a run moves between a quiet state and one 2..4 us a launch slower, in mid-run and with no profiler too
# (docs/performance.md, session 16): the lower quartile of all the tenths of a variant is its time in the
# quiet state, and "slow tenths" the share of tenths over 1.2 times that.
tenths = {}
for line in open(sys.argv[4]):
    f = line.split()
    if len(f) > 3 and f[2] == "chunks:":
        tenths.setdefault(f[1], []).extend(float(x) for x in f[3:] if "=" not in x)
if tenths:
    q1 = {n: statistics.quantiles(v, n=4)[0] for n, v in tenths.items() if len(v) >= 4}
    print(f"quiet state, lower quartile of the tenths of every run ({metric}):")
    for n in names:
        if n in q1:
            slow = sum(x > 1.2 * q1[n] for x in tenths[n]) / len(tenths[n])
            over = f" {100 * (q1[n] / q1['none'] - 1):+.1f}% over none" if n != "none" and "none" in q1 else ""
            print(f"  {n:42s} {q1[n]:8.3f}  slow tenths {100 * slow:3.0f}%{over}")
PY
say "scratch: $W"
