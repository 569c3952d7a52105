#!/usr/bin/env bash
# tests/gpu/run.sh - the GPU routine: build cuscope, record every scenario, check the traces; optionally bench.
#
#   tests/gpu/run.sh [--bench | --bench-only] [--torch-profiler] [--only LIST] [--skip LIST] [--list]
#                    [--no-build] [--rounds N] [--timeout SEC] [--budget SEC]
#
# Run from anywhere on the GPU machine (it works in the repository root). What it does:
#   (a) unpacks .deps/*.deb into /tmp/deps and builds cuscope with Meson into build-gpu/ (stops at once if
#       that fails: nothing else can run);
#   (b) builds the CUDA programs with nvcc, normally and with --default-stream per-thread;
#   (c) runs each scenario twice, without and with `cuscope record`, under `timeout`, and checks: the same
#       exit status, the same deterministic stdout (lines not starting with "info:"), a trace that
#       `cuscope info` and `cuscope stats` open, and tests/gpu/check_trace.py on it (the program's expect line
#       and the invariants); killed programs: 128+signal, and the trace holds the steps up to shortly before
#       the signal; a preset CUDA_INJECTION64_PATH: one error line and exit status 2;
#   (d) with --bench: the reference training step (.bench/train_ref.py) in alternating rounds without a
#       profiler / with cuscope (/ with torch.profiler when --torch-profiler), the launch loop's CPU time per
#       launch, peak RSS, trace bytes per kernel;
#   (e) prints a table and writes $OUT/summary.txt, with every log in $OUT/gpu-log.txt and the two sample
#       traces worth committing (as samples/traces/) in $OUT/counts.db and $OUT/train_small.db. Nothing else
#       is written to $OUT.
# It goes on after a failed scenario and exits 1 when any check failed (2 when the build failed).
#
# OUT defaults to ./gpu-out. Scratch files (other traces, program outputs) go to a temporary directory that is
# kept and named at the end. Without --bench it takes about 6 to 8 minutes; --bench-only about 5 to 8. Once
# --budget seconds (default 480) have passed, the scenarios and bench rounds not started yet are skipped, so
# that a run under a 10-minute limit still ends with its summary; summary.txt is rewritten after every result.
# Scenario names: --list. Python programs: tests/gpu/programs/ (their conventions: programs/common.py).
# None of the GPU scripts reads the committed traces (samples/rules/traces, tests/data/corpus: most of the
# checkout's bytes); when the copy of the checkout sent to the GPU machine must stay small, leave them out:
#   git sparse-checkout set --no-cone '/*' '!/samples/rules/traces/*.db' '!/tests/data/corpus/*.db'
# and bring them back with `git sparse-checkout disable`.

set -u
set -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2

OUT=${OUT:-$ROOT/gpu-out}
PY=${PYTHON:-python3}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
BUILD=build-gpu
CUSCOPE=$ROOT/$BUILD/cuscope
BIN=$ROOT/$BUILD/gpu-samples
PROGS=$ROOT/tests/gpu/programs
CHECK=$ROOT/tests/gpu/check_trace.py

SCENARIOS="record_cli calibrate clock counts counts_ptsz counts_prof counts_api launch_loop record_window edge_threads edge_copies
edge_reset edge_fault edge_nosync_exit edge_multi_gpu train_small
train_small_nvtx train_small_limit ring dump hang torch_eager cuda_graph
torch_profiler_inside fork fork_dataloader spawn torchrun torchrun_nccl nccl_payload sig_term sig_int sig_kill os_exit memory_ceiling
memory_ceiling_expandable jax torch_compile"

DO_BUILD=1 DO_SCENARIOS=1 DO_BENCH=0 TORCH_PROFILER=0 ROUNDS=5 TIMEOUT=120 BUDGET=480 ONLY="" SKIP=""
SAMPLE_TRACES="counts train_small" # copied to $OUT: small traces worth committing

usage() {
	sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
	exit "${1:-0}"
}

while [ $# -gt 0 ]; do
	case $1 in
	--bench) DO_BENCH=1 ;;
	--bench-only) DO_BENCH=1 DO_SCENARIOS=0 ;;
	--torch-profiler) TORCH_PROFILER=1 ;;
	--only) ONLY=${2:?--only needs a list}; shift ;;
	--skip) SKIP=${2:?--skip needs a list}; shift ;;
	--no-build) DO_BUILD=0 ;;
	--rounds) ROUNDS=${2:?--rounds needs a number}; shift ;;
	--timeout) TIMEOUT=${2:?--timeout needs seconds}; shift ;;
	--budget) BUDGET=${2:?--budget needs seconds}; shift ;;
	--list) echo "$SCENARIOS" | tr '\n' ' '; echo; exit 0 ;;
	-h | --help) usage 0 ;;
	*) echo "run.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
	esac
	shift
done

mkdir -p "$OUT" || exit 2
LOG=$OUT/gpu-log.txt
SUMMARY=$OUT/summary.txt
: >"$LOG"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cuscope-gpu.XXXXXX") || exit 2

# Same environment with and without the profiler: unbuffered Python (killed programs keep their output), no
# bytecode files in the tree, compile caches in the scratch directory.
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export TORCHINDUCTOR_CACHE_DIR=$WORK/inductor-cache TRITON_CACHE_DIR=$WORK/triton-cache

# ---- output ----

say() { printf '%s\n' "$*" | tee -a "$LOG"; }
log() { printf '%s\n' "$*" >>"$LOG"; }

# Append a file to the log under a header (the last lines only, to keep the log small).
log_file() {
	local title=$1 file=$2 lines=${3:-150}
	[ -s "$file" ] || return 0
	log "---- $title ($(wc -l <"$file") lines, last $lines) ----"
	tail -n "$lines" "$file" >>"$LOG"
}

RESULTS=()  # "name|status|notes"
FAILED=0

# result NAME PASS|FAIL|SKIP|INFO NOTES...
result() {
	local name=$1 status=$2 notes="${*:3}"
	RESULTS+=("$name|$status|$notes")
	[ "$status" = FAIL ] && FAILED=$((FAILED + 1))
	say "$(printf '%-8s %-26s %s' "$status" "$name" "$notes")"
	write_summary
}

die() {
	say "FATAL: $*"
	write_summary
	exit 2
}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
T0=$(now)

# 0 when the time budget is used up
out_of_time() { awk -v a="$T0" -v b="$(now)" -v m="$BUDGET" 'BEGIN { exit !(b - a > m) }'; }

selected() {
	local name=$1
	[ "$DO_SCENARIOS" = 1 ] || return 1
	if [ -n "$ONLY" ]; then
		case ",$ONLY," in *",$name,"*) ;; *) return 1 ;; esac
	fi
	case ",$SKIP," in *",$name,"*) return 1 ;; esac
	if out_of_time; then
		result "$name" SKIP "time budget of $BUDGET s used up (--budget, --only)"
		return 1
	fi
	return 0
}

# ---- (a) build ----

build() {
	local t0 f
	t0=$(now)
	say "== build"
	ls .deps/*.deb >/dev/null 2>&1 ||
		die ".deps/*.deb not found: carry .deps (see shared/DEVICE.md, 'Getting the dependencies there')"
	mkdir -p /tmp/deps
	for f in .deps/*.deb; do
		dpkg -x "$f" /tmp/deps || die "cannot unpack $f"
	done
	export PKG_CONFIG_SYSROOT_DIR=/tmp/deps PKG_CONFIG_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu/pkgconfig
	export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	if [ -f "$BUILD/build.ninja" ]; then
		meson setup --reconfigure "$BUILD" >>"$LOG" 2>&1
	elif [ -d "$BUILD/meson-private" ]; then
		meson setup --wipe "$BUILD" >>"$LOG" 2>&1 # an earlier setup that failed half way
	else
		meson setup "$BUILD" >>"$LOG" 2>&1
	fi || { tail -n 30 "$LOG"; die "meson setup failed (output above and in gpu-log.txt)"; }
	ninja -C "$BUILD" >>"$LOG" 2>&1 || { tail -n 40 "$LOG"; die "ninja failed (output above and in gpu-log.txt)"; }
	[ -x "$CUSCOPE" ] || die "$BUILD/cuscope was not built"
	[ -f "$BUILD/libcuscope-inject.so" ] ||
		die "$BUILD/libcuscope-inject.so was not built: Meson found no CUPTI (see 'record (CUPTI)' in gpu-log.txt)"
	check_inject_libs
	result build PASS "$(elapsed "$t0") s"
}

# The injection library must find libcupti at run time; add the toolkit's directory only when it does not.
check_inject_libs() {
	local missing d
	missing=$(ldd "$BUILD/libcuscope-inject.so" 2>&1 | grep 'not found')
	[ -z "$missing" ] && return 0
	for d in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64; do
		[ -d "$d" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$d
	done
	say "warning: libcuscope-inject.so misses libraries ($missing); added the CUDA lib dirs to LD_LIBRARY_PATH"
	missing=$(ldd "$BUILD/libcuscope-inject.so" 2>&1 | grep 'not found')
	[ -z "$missing" ] || die "libcuscope-inject.so cannot load: $missing"
}

# ---- (b) the CUDA programs ----

build_cuda_programs() {
	local ok=1
	say "== CUDA programs"
	mkdir -p "$BIN"
	nvcc_build counts samples/cuda/counts.cu -lcuda -ldl || ok=0
	nvcc_build counts_ptsz samples/cuda/counts.cu --default-stream per-thread -lcuda -ldl || ok=0
	nvcc_build launch_loop tests/gpu/programs/launch_loop.cu || ok=0
	nvcc_build timed_loop tests/gpu/programs/timed_loop.cu || ok=0
	nvcc_build edge_cases tests/gpu/programs/edge_cases.cu || ok=0
	nvcc_build hang_spin tests/gpu/programs/hang_spin.cu || ok=0
	nvcc_build hang_ipc tests/gpu/programs/hang_ipc.cu || ok=0
	if [ $ok = 1 ]; then
		result cuda_programs PASS "counts, counts_ptsz (--default-stream per-thread), launch_loop, timed_loop, edge_cases"
	else
		result cuda_programs FAIL "nvcc failed (gpu-log.txt); the scenarios that need them fail"
	fi
}

nvcc_build() {
	local name=$1 src=$2
	shift 2
	log "nvcc -O2 -arch=sm_90 -o $BIN/$name $src $*"
	"$NVCC" -O2 -arch=sm_90 -o "$BIN/$name" "$src" "$@" >>"$LOG" 2>&1
}

# ---- (c) scenarios ----

# Run a command with a time limit; stdout/stderr to PREFIX.out/.err, status to PREFIX.rc, seconds to PREFIX.sec.
run_limited() {
	local prefix=$1 t0 rc
	shift
	t0=$(now)
	timeout -k 10 "$TIMEOUT" "$@" >"$prefix.out" 2>"$prefix.err" </dev/null
	rc=$?
	echo "$rc" >"$prefix.rc"
	elapsed "$t0" >"$prefix.sec"
	return $rc
}

# stdout without the lines that may change from run to run
stable_stdout() { grep -v '^info:' "$1"; }

# VALUE of the last "KEY=VALUE" in a file (program output)
value_of() { grep -o "\<$1=[^ ]*" "$2" 2>/dev/null | tail -n 1 | cut -d= -f2; }

# VALUE of KEY in the "INFO counts ..." line check_trace.py prints
count_of() { grep '^INFO counts ' "$2" 2>/dev/null | grep -o " $1=[^ ]*" | tail -n 1 | cut -d= -f2; }

# 0 while process PID runs (a process that exited but was not waited for yet is not running)
alive() {
	local state
	state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
	[ -n "$state" ] && [ "$state" != Z ]
}

# Checks common to every recorded run: the trace exists, cuscope info/stats open it, check_trace.py passes.
# Prints problems on stdout (one per line); the caller turns them into the scenario's result.
check_recorded() {
	local name=$1 db=$2
	shift 2
	if [ ! -s "$db" ]; then
		echo "no trace written"
		return
	fi
	"$CUSCOPE" info "$db" >"$WORK/$name.info" 2>&1 || echo "cuscope info failed: $(tail -n 1 "$WORK/$name.info")"
	log_file "$name: cuscope info" "$WORK/$name.info" 60
	"$CUSCOPE" stats "$db" >"$WORK/$name.stats" 2>&1 || echo "cuscope stats failed: $(tail -n 1 "$WORK/$name.stats")"
	"$PY" "$CHECK" "$db" "$@" >"$WORK/$name.check" 2>&1
	case $? in
	0) ;;
	1) grep '^FAIL' "$WORK/$name.check" | head -n 4 | sed 's/^FAIL /check: /' ;;
	*) echo "check_trace.py could not run: $(tail -n 1 "$WORK/$name.check")" ;;
	esac
	log_file "$name: check_trace.py" "$WORK/$name.check" 200
}

# Short numbers of a check for the table.
check_notes() {
	local c=$1
	[ -s "$c" ] || return 0
	printf 'k=%s cp=%s sync=%s nvtx=%s procs=%s drop=%s' "$(count_of kernels "$c")" "$(count_of memcpy "$c")" \
		"$(count_of sync "$c")" "$(count_of nvtx "$c")" "$(count_of processes_cuda "$c")" "$(count_of dropped "$c")"
}

# scenario NAME [options] -- COMMAND...
#   --rc N               expected exit status (default 0)
#   --baseline-from NAME compare with another scenario's run without profiler instead of running one
#   --no-baseline        no run without the profiler
#   --profiled-first     run with the profiler first (torch.compile: the profiled run compiles, cold caches)
#   --record ARG         extra `cuscope record` argument (repeatable)
#   --check ARG          extra check_trace.py argument (repeatable)
#   --same-expect-as NAME  the program's expect line must equal that scenario's
scenario() {
	local name=$1
	shift
	local want_rc=0 baseline=1 base_from="" first=base same_as="" problems rc_b rc_p notes
	local -a rec_args=() chk_args=()
	while [ $# -gt 0 ]; do
		case $1 in
		--rc) want_rc=$2; shift 2 ;;
		--baseline-from) base_from=$2; baseline=0; shift 2 ;;
		--no-baseline) baseline=0; shift ;;
		--profiled-first) first=prof; shift ;;
		--record) rec_args+=("$2"); shift 2 ;;
		--check) chk_args+=("$2"); shift 2 ;;
		--same-expect-as) same_as=$2; shift 2 ;;
		--) shift; break ;;
		*) die "scenario $name: bad option $1" ;;
		esac
	done
	selected "$name" || return 0
	say "== $name: $*"
	local base=$WORK/$name.base prof=$WORK/$name.prof db=$WORK/$name.db
	rm -f "$db"
	[ "$first" = prof ] && run_limited "$prof" "$CUSCOPE" record -o "$db" --force --no-calibrate ${rec_args[@]+"${rec_args[@]}"} -- "$@"
	if [ $baseline = 1 ]; then
		run_limited "$base" "$@"
		log_file "$name: stdout without cuscope" "$base.out" 40
		log_file "$name: stderr without cuscope" "$base.err" 40
	elif [ -n "$base_from" ]; then
		base=$WORK/$base_from.base
	fi
	[ "$first" = base ] && run_limited "$prof" "$CUSCOPE" record -o "$db" --force --no-calibrate ${rec_args[@]+"${rec_args[@]}"} -- "$@"
	log_file "$name: stdout with cuscope" "$prof.out" 40
	log_file "$name: stderr with cuscope" "$prof.err" 60

	rc_p=$(cat "$prof.rc")
	rc_b=$([ -f "$base.rc" ] && cat "$base.rc" || echo "$want_rc")
	if [ "$rc_b" = 77 ]; then
		result "$name" SKIP "$(grep '^info: skipped' "$base.out" | head -n 1 | sed 's/^info: skipped: //')"
		return
	fi
	problems=$(
		[ "$rc_b" = "$want_rc" ] || echo "exits $rc_b without cuscope too (expected $want_rc): the program is broken"
		[ "$rc_p" = 124 ] && echo "timed out after $TIMEOUT s under cuscope"
		[ "$rc_p" = "$want_rc" ] || [ "$rc_p" = 124 ] || echo "exits $rc_p under cuscope (expected $want_rc)"
		if [ -f "$base.out" ] && ! diff <(stable_stdout "$base.out") <(stable_stdout "$prof.out") >"$WORK/$name.diff"; then
			echo "stdout differs under cuscope: $(grep '^[<>]' "$WORK/$name.diff" | head -n 2 | tr '\n' ' ')"
			log_file "$name: stdout diff (< without, > with cuscope)" "$WORK/$name.diff" 40
		fi
		if [ -n "$same_as" ] &&
			[ "$(grep '^expect ' "$prof.out")" != "$(grep '^expect ' "$WORK/$same_as.prof.out" 2>/dev/null)" ]; then
			echo "expect line differs from $same_as's"
		fi
		check_recorded "$name" "$db" --expect-file "$prof.out" ${chk_args[@]+"${chk_args[@]}"}
	)
	notes="$(check_notes "$WORK/$name.check") $(cat "$base.sec" 2>/dev/null || echo -)s/$(cat "$prof.sec")s"
	case " $SAMPLE_TRACES " in *" $name "*) [ -s "$db" ] && cp "$db" "$OUT/$name.db" ;; esac
	if [ -n "$problems" ]; then
		log "problems of $name:"
		log "$problems"
		result "$name" FAIL "$(echo "$problems" | head -n 2 | tr '\n' ';') [$notes]"
	else
		result "$name" PASS "$notes"
	fi
}

# `cuscope record` itself: exit statuses, and refusing to run under another injector.
scenario_record_cli() {
	selected record_cli || return 0
	say "== record_cli"
	local problems lib=$ROOT/$BUILD/libcuscope-inject.so
	problems=$(
		for var in CUDA_INJECTION64_PATH NVTX_INJECTION64_PATH; do
			for val in /opt/other-tool/libinject.so "$lib"; do
				env "$var=$val" "$CUSCOPE" record -o "$WORK/preset.db" --force -- true \
					>"$WORK/preset.out" 2>"$WORK/preset.err"
				rc=$?
				log "$var=$val: exit $rc, stderr: $(cat "$WORK/preset.err")"
				[ "$rc" = 2 ] || echo "$var preset: exit $rc (expected 2)"
				[ "$(wc -l <"$WORK/preset.err")" = 1 ] ||
					echo "$var preset: $(wc -l <"$WORK/preset.err") stderr lines (expected 1)"
				grep -q "$var" "$WORK/preset.err" || echo "$var preset: the error does not name $var"
				[ -e "$WORK/preset.db" ] && echo "$var preset: a trace was written" && rm -f "$WORK/preset.db"
			done
		done
		"$CUSCOPE" record -o "$WORK/nocuda.db" --force -- sh -c 'exit 7' >/dev/null 2>"$WORK/nocuda.err"
		rc=$?
		log "record -- sh -c 'exit 7': exit $rc, stderr: $(cat "$WORK/nocuda.err")"
		[ "$rc" = 7 ] || echo "the exit status 7 of a program without CUDA came back as $rc"
		"$CUSCOPE" record -o "$WORK/nocmd.db" --force -- /nonexistent/program >/dev/null 2>"$WORK/nocmd.err"
		rc=$?
		log "record -- /nonexistent/program: exit $rc, stderr: $(cat "$WORK/nocmd.err")"
		[ "$rc" = 127 ] || echo "a missing program gave exit $rc (expected 127)"
	)
	if [ -n "$problems" ]; then
		log "$problems"
		result record_cli FAIL "$(echo "$problems" | head -n 2 | tr '\n' ';')"
	else
		result record_cli PASS "preset injection vars: 1 line + exit 2; exit 7 and 127 passed through"
	fi
}

# What recording costs a launch: `cuscope calibrate`, and the same measurement stored by `record` (the
# other scenarios record with --no-calibrate, to save its 2-3 s each).
scenario_calibrate() {
	selected calibrate || return 0
	say "== calibrate"
	local problems
	problems=$(
		"$CUSCOPE" calibrate --format json >"$WORK/cal.json" 2>"$WORK/cal.err"
		rc=$?
		log "calibrate: exit $rc: $(tr -d '\n\t' <"$WORK/cal.json") $(cat "$WORK/cal.err")"
		[ "$rc" = 0 ] || echo "cuscope calibrate: exit $rc: $(head -c 200 "$WORK/cal.err")"
		"$PY" - "$WORK/cal.json" 2>&1 <<'PYEOF' || echo "calibrate's JSON is not as expected"
import json, sys
d = json.load(open(sys.argv[1]))
w = d["wall_ns"]
problems = []
if not 0 < d["ns_per_launch"] < 50000: problems.append("ns_per_launch %s" % d["ns_per_launch"])
if not w["none"] > 0: problems.append("no-profiler loop %s" % w["none"])
if not w["all"] > w["none"]: problems.append("recording %s not slower than none %s" % (w["all"], w["none"]))
if set(w) != {"none", "attached", "kernel_records", "empty_callbacks", "all"}: problems.append("modes %s" % sorted(w))
if d["rounds"] != 9: problems.append("rounds %s" % d["rounds"])
if problems: print("; ".join(problems)); sys.exit(1)
PYEOF
		"$CUSCOPE" record -o "$WORK/cal.db" --force -- "$BIN/launch_loop" 20000 >"$WORK/cal.rec.out" 2>"$WORK/cal.rec.err"
		rc=$?
		log "record with calibration: exit $rc, stderr: $(cat "$WORK/cal.rec.err")"
		[ "$rc" = 0 ] || echo "record with calibration: exit $rc"
		grep -q 'recording cost [0-9.]* us per launch' "$WORK/cal.rec.err" || echo "record's summary has no recording cost"
		"$CUSCOPE" info --format json "$WORK/cal.db" | "$PY" -c '
import json, sys
lc = json.load(sys.stdin)["launch_cost"]
sys.exit(0 if lc and lc["ns_per_launch"] > 0 else 1)' || echo "info shows no launch_cost"
		ls -d "$WORK"/.cuscope-calibrate-* 2>/dev/null && echo "a calibration directory was left behind"
		"$CUSCOPE" record -q --no-calibrate -o "$WORK/nocal.db" --force -- "$BIN/launch_loop" 20000 >/dev/null 2>&1
		"$CUSCOPE" info --format json "$WORK/nocal.db" | "$PY" -c '
import json, sys
sys.exit(0 if json.load(sys.stdin)["launch_cost"] is None else 1)' || echo "--no-calibrate still stored launch_cost"
	)
	if [ -n "$problems" ]; then
		log "$problems"
		result calibrate FAIL "$(echo "$problems" | head -n 2 | tr '\n' ';')"
	else
		result calibrate PASS "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("recording adds %.2f us per launch (" % (d["ns_per_launch"]/1e3) + ", ".join("%s %+.2f" % (k, v/1e3) for k, v in d["added_wall_ns"].items()) + ")")' "$WORK/cal.json")"
	fi
}

# The callbacks' clock (src/collectors/clock.c): the TSC exactly where the kernel keeps time with it and the CPU's
# TSC is invariant (constant_tsc and nonstop_tsc in /proc/cpuinfo), else cuptiGetTimestamp; the census says which.
scenario_clock() {
	selected clock || return 0
	say "== clock"
	local src want got
	src=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)
	want=cuptiGetTimestamp
	if [ "$src" = tsc ] && grep -qw constant_tsc /proc/cpuinfo && grep -qw nonstop_tsc /proc/cpuinfo; then
		want=TSC
	fi
	# 1 s of work: the TSC is read once the flush thread's second anchor (200 ms) gives a rate
	CUSCOPE_RECORD_EXTRA=census "$CUSCOPE" record --no-calibrate -o "$WORK/clock.db" --force -- \
		"$BIN/timed_loop" 1 >"$WORK/clock.out" 2>"$WORK/clock.err"
	got=$(grep -o "the callbacks' clock: [A-Za-z]*" "$WORK/clock.err" | tail -n 1 | sed 's/.*: //')
	log "clock: clock source ${src:-?}, expected $want, census: ${got:-none}"
	if [ "$got" = "$want" ]; then
		result clock PASS "callbacks read $got (clock source ${src:-?})"
	else
		result clock FAIL "callbacks read ${got:-?}, expected $want (clock source ${src:-?})"
	fi
}

# A program killed while it runs. HOW: term|int (sent to `cuscope record`, which forwards it), kill (SIGKILL
# straight to the Python process: nothing can forward it), exit (os._exit(3) in the middle of a step).
SIGNAL_SLACK=2 # steps the trace may miss before the last printed one: the one running at the signal, and one more

scenario_signal() {
	local name=$1 how=$2
	selected "$name" || return 0
	say "== $name"
	local prefix=$WORK/$name db=$WORK/$name.db pidfile=$WORK/$name.pid want_rc rec_pid last problems
	local -a victim=("$PY" "$PROGS/signal_victim.py" --pidfile "$pidfile")
	rm -f "$db" "$pidfile"
	case $how in
	term) want_rc=143 ;;
	int) want_rc=130 ;;
	kill) want_rc=137 ;;
	exit) want_rc=3 ;;
	esac
	if [ "$how" = exit ]; then
		run_limited "$prefix" "$CUSCOPE" record --no-calibrate -o "$db" --force -- "${victim[@]}" --exit-at 150
	else
		# Background jobs of a script start with SIGINT ignored, which the program would inherit: undo that.
		"$PY" -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' \
			"$CUSCOPE" record --no-calibrate -o "$db" --force -- "${victim[@]}" >"$prefix.out" 2>"$prefix.err" </dev/null &
		rec_pid=$!
		# Wait for the first steps (Python and CUDA start), then let it run 3 s more.
		for _ in $(seq 1 600); do
			grep -q '^step 5$' "$prefix.out" 2>/dev/null && break
			alive "$rec_pid" || break
			sleep 0.1
		done
		sleep 3
		case $how in
		term) kill -TERM "$rec_pid" 2>/dev/null ;;
		int) kill -INT "$rec_pid" 2>/dev/null ;;
		kill) [ -s "$pidfile" ] && kill -KILL "$(cat "$pidfile")" 2>/dev/null ;;
		esac
		# At most 90 s for the program to die and for record to write the trace.
		for _ in $(seq 1 900); do
			alive "$rec_pid" || break
			sleep 0.1
		done
		if alive "$rec_pid"; then
			log "$name: still running 90 s after the signal: killed"
			kill -KILL "$rec_pid"
		fi
		wait "$rec_pid"
		echo $? >"$prefix.rc"
		[ -s "$prefix.sec" ] || echo - >"$prefix.sec"
	fi
	log_file "$name: stdout" "$prefix.out" 5
	log_file "$name: stderr" "$prefix.err" 40
	if [ "$(cat "$prefix.rc")" = 77 ]; then
		result "$name" SKIP "$(grep '^info: skipped' "$prefix.out" | head -n 1 | sed 's/^info: skipped: //')"
		return
	fi
	last=$(grep '^step ' "$prefix.out" | tail -n 1 | cut -d' ' -f2)
	last=${last:-0}
	problems=$(
		rc=$(cat "$prefix.rc")
		[ "$rc" = "$want_rc" ] || echo "exit status $rc (expected $want_rc)"
		[ "$last" -ge 5 ] || echo "the program printed only ${last} steps"
		check_recorded "$name" "$db" --allow-dropped \
			--expect "nvtx_max.step>=$((last > SIGNAL_SLACK ? last - SIGNAL_SLACK : 0)) kernels>=1 exit_code=$want_rc"
	)
	local in_trace notes
	in_trace=$(grep -o 'expect.nvtx_max.step [0-9-]*' "$WORK/$name.check" 2>/dev/null | cut -d' ' -f2)
	notes="last printed step $last, in trace ${in_trace:-?}; $(check_notes "$WORK/$name.check")"
	if [ -n "$problems" ]; then
		log "$problems"
		result "$name" FAIL "$(echo "$problems" | head -n 2 | tr '\n' ';') [$notes]"
	else
		result "$name" PASS "$notes"
	fi
}

# dump: signal_victim.py's steps through a 2 MiB ring (--step-ms 1, about 10 s); once the ring has wrapped, `cuscope dump PID`
# (PID: the Python process) writes dump 1 and, 2 s later, SIGUSR2 to record (--dump-on signal=USR2) writes dump 2; the
# job goes on and ends with status 0 after --max-steps. Each dump is a trace that info and report read, holding a
# window of whole steps (the NVTX ranges "step<N>") that ends near the step printed when it was taken; dump 2's last
# step is later than dump 1's; the job's own trace is written as usual. Then the same without a ring: dump 1 holds
# every step from the first. With --dump-on slow-step=5, step 5500 (300 ms instead of about 1.5) makes dump 3 (or a
# later one, when a step a few times the median made one first), which holds that step whole. The dumps' wall time
# is logged.
DUMP_STEPS=6000
DUMP_SLOW=5500
scenario_dump() {
	selected dump || return 0
	say "== dump"
	local dir=$WORK/dump prefix=$WORK/dump/job problems="" notes="" mode ring_arg first db pyid t0 rec_pid i n d
	rm -rf "$dir"
	mkdir -p "$dir"
	for mode in ring plain; do
		ring_arg="" first=200
		[ "$mode" = ring ] && ring_arg="--ring 2048K" first=2500
		db=$dir/$mode.db
		rm -f "$dir/$mode.pid"
		# shellcheck disable=SC2086
		"$CUSCOPE" record --no-calibrate --no-host-probe $ring_arg --dump-on signal=USR2 --dump-on slow-step=5 \
			-o "$db" -- "$PY" "$PROGS/signal_victim.py" --step-ms 1 --max-steps "$DUMP_STEPS" \
			--slow-at "$DUMP_SLOW" --slow-ms 300 --pidfile "$dir/$mode.pid" \
			>"$prefix.$mode.out" 2>"$prefix.$mode.err" </dev/null &
		rec_pid=$!
		for i in $(seq 1 600); do
			# the ring (about 1,700 steps) has wrapped before its first dump
			[ -s "$dir/$mode.pid" ] && [ "$(grep -c '^step' "$prefix.$mode.out")" -ge "$first" ] && break
			alive "$rec_pid" || break
			sleep 0.1
		done
		pyid=$(cat "$dir/$mode.pid" 2>/dev/null)
		if [ -z "$pyid" ] || ! alive "$rec_pid"; then
			problems="$problems; $mode: the job did not start (or ended before its dump)"
			wait "$rec_pid"
			continue
		fi
		t0=$(now)
		grep '^step' "$prefix.$mode.out" | tail -n 1 >"$prefix.$mode.at1"
		"$CUSCOPE" dump "$pyid" >"$prefix.$mode.dump1" 2>&1 || problems="$problems; $mode: cuscope dump $pyid failed"
		log "dump ($mode): cuscope dump took $(elapsed "$t0") s (the job was at $(cat "$prefix.$mode.at1"))"
		sleep 2
		grep '^step' "$prefix.$mode.out" | tail -n 1 >"$prefix.$mode.at2"
		t0=$(now)
		kill -USR2 "$rec_pid"
		for i in $(seq 1 200); do
			[ -s "$dir/$mode.dump-2.db" ] && break
			sleep 0.1
		done
		log "dump ($mode): dump 2 after SIGUSR2 in $(elapsed "$t0") s (the job was at $(cat "$prefix.$mode.at2"))"
		wait "$rec_pid"
		echo $? >"$prefix.$mode.rc"
		log_file "dump ($mode): cuscope dump" "$prefix.$mode.dump1" 5
		log_file "dump ($mode): record's stderr" "$prefix.$mode.err" 20
		[ "$(cat "$prefix.$mode.rc")" = 0 ] || problems="$problems; $mode: the job ended with $(cat "$prefix.$mode.rc")"
		for n in 1 2 3; do
			d=$dir/$mode.dump-$n.db
			if [ ! -s "$d" ]; then
				problems="$problems; $mode: no dump $n"
				continue
			fi
			"$CUSCOPE" info "$d" >"$prefix.$mode.info$n" 2>&1 || problems="$problems; $mode: info cannot read dump $n"
			"$CUSCOPE" report "$d" >"$prefix.$mode.report$n" 2>&1
			[ $? -le 1 ] || problems="$problems; $mode: report cannot read dump $n"
			log_file "dump ($mode): info of dump $n" "$prefix.$mode.info$n" 12
		done
		"$PY" - "$dir/$mode.dump-1.db" "$dir/$mode.dump-2.db" "$db" "$mode" "$prefix.$mode.at1" "$prefix.$mode.at2" \
			"$DUMP_STEPS" "$dir/$mode.dump-" "$DUMP_SLOW" >>"$prefix.checks" 2>&1 <<'PYEOF'
import json, os, re, sqlite3, sys
d1, d2, whole, mode, at1, at2, total, dstem, slow = sys.argv[1:10]
def steps(db):
    try:
        c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        got = sorted(int(s[4:]) for (s,) in c.execute(
            "SELECT DISTINCT s.value FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId") if re.fullmatch(r"step\d+", s))
        meta = dict(c.execute("SELECT key, value FROM META"))
        return got, meta
    except Exception as e:
        print(f"FAIL {mode}: {db}: {e}")
        return [], {}
def printed(path):
    t = open(path).read().split()
    return int(t[1]) if len(t) > 1 else -1
s1, m1 = steps(d1)
s2, m2 = steps(d2)
sw, mw = steps(whole)
p1, p2 = printed(at1), printed(at2)
for n, s, m, p in ((1, s1, m1, p1), (2, s2, m2, p2)):
    if not s:
        print(f"FAIL {mode}: dump {n} holds no step"); continue
    if s != list(range(s[0], s[-1] + 1)):
        print(f"FAIL {mode}: dump {n} misses steps between {s[0]} and {s[-1]}")
    if s[-1] < p:
        print(f"FAIL {mode}: dump {n} ends at step {s[-1]}, before step {p} printed when it was asked for")
    if "dump" not in m:
        print(f"FAIL {mode}: dump {n} has no META dump")
    if mode == "plain" and s[0] > 1:
        print(f"FAIL {mode}: dump {n} starts at step {s[0]}, not at the first")
    if mode == "ring" and s[0] < 50:
        print(f"FAIL {mode}: dump {n} starts at step {s[0]}: the ring kept the start")
    print(f"INFO {mode}: dump {n}: steps {s[0]}..{s[-1]} (asked at step {p}); {m.get('dump')}")
if s1 and s2 and s2[-1] <= s1[-1]:
    print(f"FAIL {mode}: dump 2 ends at step {s2[-1]}, not after dump 1's {s1[-1]}")
# dump 3 on: made by slow steps; one holds the slow step whole (300 ms against about 1.5 ms). A step a
# few times the median (host jitter) may have made dump 3 before it: the far slower one still dumps.
later = [f"{dstem}{n}.db" for n in range(3, 14) if os.path.exists(f"{dstem}{n}.db")]
if not later:
    print(f"FAIL {mode}: no dump after the slow step {slow}")
else:
    row = None
    for d3 in later:
        c = sqlite3.connect(f"file:{d3}?mode=ro", uri=True)
        row = c.execute("SELECT n.end - n.start FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId "
                        "WHERE s.value = ?", (f"step{slow}",)).fetchone()
        if row and row[0] is not None and row[0] >= 300e6:
            break
    if not row or row[0] is None or row[0] < 300e6:
        print(f"FAIL {mode}: no slow-step dump holds step {slow} whole ({len(later)} made): {row}")
    else:
        print(f"INFO {mode}: dump {d3[len(dstem):-3]} of {len(later) + 2} (slow step): step {slow} "
              f"{row[0] / 1e6:.0f} ms; {steps(d3)[1].get('dump')}")
if not sw or sw[-1] != int(total) - 1:
    print(f"FAIL {mode}: the job's trace ends at step {sw[-1] if sw else '-'}, not {int(total) - 1}")
PYEOF
	done
	log_file "dump: checks" "$prefix.checks" 20
	problems="$problems$(grep '^FAIL' "$prefix.checks" | sed 's/^FAIL /; /' | tr -d '\n')"
	notes=$(grep '^INFO' "$prefix.checks" | sed 's/^INFO //' | cut -c1-80 | tr '\n' ';')
	if [ -n "$problems" ]; then
		result dump FAIL "${problems#; } [$notes]"
	else
		result dump PASS "$notes"
	fi
}

# hang: hang_sleep.py's kernel spins on the GPU for 6 s while the host waits in torch.cuda.synchronize() (mode
# wait) or polls the stream's query() (mode spin), under record --hang-after 2. Record must say so while it runs,
# write a dump and the hang report beside it (the waiting or spinning thread and its call, no GPU work completed
# for at least 2 s, the last kernel of each stream; the waiting thread's Python frames down to hang_sleep.py and
# its native frames), and the job still ends with status 0 and its own trace. Then hang_spin.cu, a C++ host
# waiting in cudaStreamSynchronize from wait_for_results(): its native frames must name that function. Then
# hang_ipc.cu, a hang across two processes on the one GPU (the child's stream waits for an interprocess event
# the parent records behind its spinning kernel): one report names both processes, each waiting in
# cudaStreamSynchronize with its kernel not completed (spin_for in the parent, behind in the child).
scenario_hang() {
	selected hang || return 0
	say "== hang"
	local dir=$WORK/hang mode db rc problems="" notes="" report
	rm -rf "$dir"
	mkdir -p "$dir"
	for mode in wait spin; do
		db=$dir/$mode.db
		timeout "$TIMEOUT" "$CUSCOPE" record --no-calibrate --no-host-probe --hang-after 2 -o "$db" -- \
			"$PY" "$PROGS/hang_sleep.py" --seconds 6 --mode "$mode" >"$dir/$mode.out" 2>"$dir/$mode.err" </dev/null
		rc=$?
		log_file "hang ($mode): stdout" "$dir/$mode.out" 5
		log_file "hang ($mode): stderr" "$dir/$mode.err" 30
		if [ "$rc" = 77 ]; then
			result hang SKIP "$(grep '^info: skipped' "$dir/$mode.out" | head -n 1)"
			return 0
		fi
		[ "$rc" = 0 ] || problems="$problems; $mode: exit $rc"
		report=$dir/$mode.dump-1.hang.txt
		if [ ! -s "$report" ]; then
			problems="$problems; $mode: no hang report"
			continue
		fi
		log_file "hang ($mode): report" "$report" 30
		if [ "$mode" = wait ]; then
			grep -q 'waiting in cu[a-zA-Z]*Synchronize' "$report" || problems="$problems; wait: the report does not name the wait"
		else
			grep -q 'spinning on cu[a-zA-Z]*Query' "$report" || problems="$problems; spin: the report does not name the query"
		fi
		grep -q 'no GPU work has completed for [2-9]' "$report" || problems="$problems; $mode: no 'no GPU work has completed for N s'"
		grep -q 'last completed kernel' "$report" || problems="$problems; $mode: no stream's last kernel"
		grep -q 'its last launch with a recorded site: .*hang_sleep\.py:' "$report" ||
			problems="$problems; $mode: no launch site in hang_sleep.py"
		# the kernel that never ends, named among those launched after the last completed
		sed -n '/launched after the last GPU work that completed, oldest first:/,/^[^ ]/p' "$report" |
			grep -q '^ *correlation id [0-9]* (thread [0-9]*): .*spin_kernel' ||
			problems="$problems; $mode: the spinning kernel is not named among the launches not completed"
		# the waiting thread's Python frames at the hang, down to the program's line (blocked
		# in synchronize: required; spinning between query() and sleep(): when a read held)
		if grep -q '^ *\(Python: *\)\{0,1\}/.*hang_sleep\.py:[0-9]* in <module>$' "$report"; then
			notes="$notes$mode: Python frames; "
		elif [ "$mode" = wait ]; then
			problems="$problems; wait: no Python frames down to hang_sleep.py"
		fi
		# the waiting thread's native frames at the hang (read by record from outside the process)
		if [ "$mode" = wait ]; then
			grep -q '^ *native: *[^ n]' "$report" ||
				problems="$problems; wait: no native frames ($(grep -m 1 'native:' "$report"))"
		fi
		"$CUSCOPE" info "$dir/$mode.dump-1.db" >/dev/null 2>&1 || problems="$problems; $mode: info cannot read the dump"
		"$CUSCOPE" info "$db" >/dev/null 2>&1 || problems="$problems; $mode: no trace of the job"
		notes="$notes$mode: $(grep -m 1 -o '\(waiting in\|spinning on\) [^ ]* for [0-9.]* s' "$report"); "
	done
	# a C++ host (hang_spin.cu) waiting in cudaStreamSynchronize, called from wait_for_results(): its
	# native frames name that function; the program goes on and ends as it would have
	db=$dir/c.db
	timeout "$TIMEOUT" "$CUSCOPE" record --no-calibrate --no-host-probe --hang-after 2 -o "$db" -- \
		"$BIN/hang_spin" 6 >"$dir/c.out" 2>"$dir/c.err" </dev/null
	rc=$?
	log_file "hang (C++): stderr" "$dir/c.err" 40
	[ "$rc" = 0 ] && grep -q '^done$' "$dir/c.out" || problems="$problems; C++: exit $rc, stdout $(head -c 80 "$dir/c.out")"
	report=$dir/c.dump-1.hang.txt
	if [ ! -s "$report" ]; then
		problems="$problems; C++: no hang report"
	else
		grep -q 'waiting in cudaStreamSynchronize' "$report" || problems="$problems; C++: the report does not name the wait"
		sed -n '/native:/,/^  [^ ]/p' "$report" | grep -q 'wait_for_results\((.*)\)\{0,1\}+0x' ||
			problems="$problems; C++: wait_for_results is not among the native frames"
		notes="${notes}C++: $(grep -c '^ *native: \|^              [^ ]' "$report") native frames; "
	fi
	db=$dir/ipc.db
	timeout "$TIMEOUT" "$CUSCOPE" record --no-calibrate --no-host-probe --hang-after 2 -o "$db" -- \
		"$BIN/hang_ipc" 6 >"$dir/ipc.out" 2>"$dir/ipc.err" </dev/null
	rc=$?
	log_file "hang (two processes): stderr" "$dir/ipc.err" 40
	[ "$rc" = 0 ] && grep -q '^child done$' "$dir/ipc.out" && grep -q '^done$' "$dir/ipc.out" ||
		problems="$problems; two processes: exit $rc, stdout $(head -c 80 "$dir/ipc.out")"
	report=$dir/ipc.dump-1.hang.txt
	if [ ! -s "$report" ]; then
		problems="$problems; two processes: no hang report"
	else
		[ "$(grep -c '^process [0-9]*: no GPU work has completed' "$report")" = 2 ] ||
			problems="$problems; two processes: the report does not name both"
		[ "$(grep -c 'waiting in cudaStreamSynchronize' "$report")" = 2 ] ||
			problems="$problems; two processes: not both waits named"
		grep -q 'spin_for' "$report" && grep -q 'behind' "$report" ||
			problems="$problems; two processes: the kernels not completed are not named"
		notes="${notes}two processes: $(grep -c '^process ' "$report") named; "
	fi
	if [ -n "$problems" ]; then
		result hang FAIL "${problems#; } [$notes]"
	else
		result hang PASS "$notes"
	fi
}

# nccl_payload: one rank's NCCL calls (nccl_payload.py: all_reduce of 4 KiB, 16 KiB and 256 KiB, all_gather,
# broadcast). NCCL annotates each call with an NVTX range in domain NCCL whose payload the trace keeps as JSON
# (docs/recording.md, "NVTX payloads"): the three all-reduces with their message sizes and reduction, every call
# with the same communicator id; the program prints what it printed without cuscope and exits 0.
scenario_nccl_payload() {
	selected nccl_payload || return 0
	say "== nccl_payload"
	local dir=$WORK/nccl_payload rc problems="" notes
	rm -rf "$dir" && mkdir -p "$dir"
	"$PY" "$PROGS/nccl_payload.py" >"$dir/plain.out" 2>"$dir/plain.err"
	rc=$?
	if [ "$rc" = 77 ]; then
		result nccl_payload SKIP "$(head -n 1 "$dir/plain.out")"
		return 0
	fi
	timeout "$TIMEOUT" "$CUSCOPE" record --no-calibrate --no-host-probe -o "$dir/t.db" -- \
		"$PY" "$PROGS/nccl_payload.py" >"$dir/rec.out" 2>"$dir/rec.err" </dev/null
	rc=$?
	log_file "nccl_payload: stderr" "$dir/rec.err" 10
	[ "$rc" = 0 ] || problems="$problems; exit $rc"
	cmp -s <(grep '^sums' "$dir/plain.out") <(grep '^sums' "$dir/rec.out") ||
		problems="$problems; output differs: $(head -c 120 "$dir/rec.out")"
	notes=$("$PY" - "$dir/t.db" <<'PY' 2>&1
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT s.value, p.value FROM NVTX_EVENTS n JOIN StringIds d ON d.id = n.domainId "
                  "LEFT JOIN StringIds s ON s.id = n.textId LEFT JOIN StringIds p ON p.id = n.payloadId "
                  "WHERE d.value = 'NCCL' ORDER BY n.start").fetchall()
calls = [(t, json.loads(p)) for t, p in rows if p]
sizes = [p.get("Message size [bytes]") for t, p in calls if t == "ncclAllReduce"]
comms = {p.get("NCCL communicator ID") for t, p in calls if "Message size [bytes]" in p}
ops = {p.get("Reduction operation") for t, p in calls if t == "ncclAllReduce"}
print(f"{len(rows)} NCCL ranges, {len(calls)} with a payload; all-reduce sizes {sizes}, "
      f"{len(comms)} communicator(s), reductions {sorted(map(str, ops))}")
sys.exit(0 if sizes == [4096, 16384, 262144] and len(comms) == 1 else 1)
PY
	) || problems="$problems; payloads: $notes"
	if [ -n "$problems" ]; then
		result nccl_payload FAIL "${problems#; }"
	else
		result nccl_payload PASS "$notes"
	fi
}

# --ring: signal_victim.py's GPU steps (an NVTX range "step<N>" each, "step N" printed after it) run for about
# 10-20 s through a 2 MiB ring, about 12 times the ring. While it runs, the spool directory's segments stay within
# the ring and one segment (2.5 MiB), sampled every 0.1 s; the main file holds only definitions (its names grow by
# one "step<N>" a step). The trace holds the last steps, every one of them, up to the last printed, and not the
# first; META ring says segments were dropped; report's steps say the first period step was left out (logged).
# The program's resident memory, sampled with the segments, grows by at most 10% (or 32 MiB) after the first
# quarter of the steps (the ring keeps turning; the notes give its range).
RING_STEPS=20000
RING_KIB=2048
scenario_ring() {
	selected ring || return 0
	say "== ring"
	local dir=$WORK/ring prefix=$WORK/ring db=$WORK/ring/ring.db rec_pid t0 seg main max_seg=0 max_main=0 last problems
	local pid="" rss rss_samples=$WORK/ring.rss
	rm -rf "$dir"
	mkdir -p "$dir"
	t0=$(now)
	: >"$rss_samples"
	"$CUSCOPE" record --no-calibrate --ring "${RING_KIB}K" -o "$db" -- "$PY" "$PROGS/signal_victim.py" \
		--step-ms 0 --max-steps "$RING_STEPS" --pidfile "$prefix.pid" >"$prefix.out" 2>"$prefix.err" </dev/null &
	rec_pid=$!
	while alive "$rec_pid"; do
		# the program's resident memory over the run (KiB), each sample with its step
		[ -z "$pid" ] && [ -s "$prefix.pid" ] && pid=$(cat "$prefix.pid")
		if [ -n "$pid" ] && rss=$(ps -o rss= -p "$pid" 2>/dev/null); then
			echo "$(grep -c '^step ' "$prefix.out") ${rss// /}" >>"$rss_samples"
		fi
		seg=$(find "$dir" -name '*.cuseg' -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
		main=$(find "$dir" -name '*.cuspool' -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
		[ "$seg" -gt "$max_seg" ] && max_seg=$seg
		[ "$main" -gt "$max_main" ] && max_main=$main
		if awk -v a="$t0" -v b="$(now)" -v m="$TIMEOUT" 'BEGIN { exit !(b - a > m) }'; then
			log "ring: still running after $TIMEOUT s: killed"
			kill -KILL "$rec_pid"
		fi
		sleep 0.1
	done
	wait "$rec_pid"
	echo $? >"$prefix.rc"
	elapsed "$t0" >"$prefix.sec"
	log_file "ring: stdout" "$prefix.out" 5
	log_file "ring: stderr" "$prefix.err" 40
	log "ring: at most $max_seg bytes of segments and $max_main bytes of main files during the run"
	if [ "$(cat "$prefix.rc")" = 77 ]; then
		result ring SKIP "$(grep '^info: skipped' "$prefix.out" | head -n 1 | sed 's/^info: skipped: //')"
		return
	fi
	last=$(grep '^step ' "$prefix.out" | tail -n 1 | cut -d' ' -f2)
	problems=$(
		rc=$(cat "$prefix.rc")
		[ "$rc" = 0 ] || echo "exit status $rc (expected 0)"
		[ "${last:-0}" = $((RING_STEPS - 1)) ] || echo "the program printed steps up to ${last:-none}"
		[ "$max_seg" -le $((RING_KIB * 1024 * 5 / 4)) ] ||
			echo "$max_seg bytes of segments during the run: more than the ring and one segment"
		[ "$max_seg" -ge $((RING_KIB * 1024 / 2)) ] || echo "only $max_seg bytes of segments: the ring never filled"
		# memory stays flat: from a quarter of the steps on, the resident memory grows by at most
		# 10% (and 32 MiB) however long the ring keeps turning
		awk -v n="$RING_STEPS" '$1 >= n / 4 { if (!lo) lo = $2; hi = $2 > hi ? $2 : hi }
			END { if (lo && (hi - lo > lo / 10 && hi - lo > 32768))
				printf "resident memory grew from %d to %d KiB after step %d\n", lo, hi, n / 4 }' "$rss_samples"
		check_recorded ring "$db" --expect "nvtx_max.step=$((RING_STEPS - 1)) kernels>=1 exit_code=0"
		"$PY" - "$db" "$RING_STEPS" 2>"$WORK/ring.kept" <<'PYEOF'
import json, re, sqlite3, sys
db, steps = sys.argv[1], int(sys.argv[2])
c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
ring = json.loads(c.execute("SELECT value FROM META WHERE key = 'ring'").fetchone()[0])
got = sorted({int(m.group(1)) for (v,) in c.execute(
    "SELECT DISTINCT s.value FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId")
    for m in [re.fullmatch(r"step(\d+)", v or "")] if m})
if ring["segments_dropped"] < 1: print(f"META ring dropped no segment: {ring}")
if not got: print("no step range in the trace")
elif got[-1] != steps - 1: print(f"the last step in the trace is {got[-1]}, not {steps - 1}")
elif got[0] < 1000: print(f"the trace still holds step {got[0]}: the ring kept the start")
elif len(got) != got[-1] - got[0] + 1: print(f"steps {got[0]}..{got[-1]} with {got[-1] - got[0] + 1 - len(got)} missing")
print(f"INFO ring: steps {got[0] if got else '-'}..{got[-1] if got else '-'} kept; {ring['segments_dropped']} segments, "
      f"{ring['records_dropped']} records dropped; {ring['records_cut']} cut at the window's start", file=sys.stderr)
PYEOF
	)
	log_file "ring: kept" "$WORK/ring.kept" 5
	"$CUSCOPE" report -v "$db" 2>&1 | grep -i -m 3 'step' >"$WORK/ring.steps"
	log_file "ring: report's steps" "$WORK/ring.steps" 3
	local notes
	notes="$(sed 's/^INFO ring: //' "$WORK/ring.kept" | head -n 1); segments <= $max_seg B, main file <= $max_main B; $(awk -v n="$RING_STEPS" '$1 >= n / 4 { if (!lo) lo = $2; hi = $2 > hi ? $2 : hi } END { printf "resident %d..%d KiB from step %d", lo, hi, n / 4 }' "$rss_samples"); $(cat "$prefix.sec")s"
	if [ -n "$problems" ]; then
		log "$problems"
		result ring FAIL "$(echo "$problems" | head -n 2 | tr '\n' ';') [$notes]"
	else
		result ring PASS "$notes"
	fi
}

# A scenario that needs two GPUs: run as `scenario`, or skipped (and said so) on a machine with one.
NGPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
scenario_2gpu() {
	local name=$1
	if [ "$NGPUS" -ge 2 ]; then
		scenario "$@"
	elif selected "$name"; then
		result "$name" SKIP "needs 2 GPUs ($NGPUS here)"
	fi
}

run_scenarios() {
	local C=$BIN/counts P=$PROGS
	scenario_record_cli
	scenario_calibrate
	scenario_clock
	scenario counts -- "$C"
	scenario counts_ptsz --same-expect-as counts -- "$BIN/counts_ptsz"
	scenario counts_prof --baseline-from counts --record --capture=profiler-api --check "--scope=prof" -- "$C"
	scenario counts_api --baseline-from counts --record --api=all --check "--scope=api" -- "$C"
	scenario launch_loop -- "$BIN/launch_loop" 200000
	# --delay/--duration: only the 2 s window, 2 s after the start, of a 6 s loop
	scenario record_window --record --delay --record 2 --record --duration --record 2 \
		--check --window --check 2:2 --check --scope=window -- "$BIN/timed_loop" 6
	# host threads launching at once; 2D, symbol, managed and mapped memory; cudaDeviceReset and a new
	# context; a kernel fault that loses the context; main returning with a kernel running
	scenario edge_threads -- "$BIN/edge_cases" threads 8 2000
	scenario edge_copies -- "$BIN/edge_cases" copies
	scenario edge_reset -- "$BIN/edge_cases" reset
	scenario edge_fault --rc 3 -- "$BIN/edge_cases" fault
	scenario edge_nosync_exit -- "$BIN/edge_cases" nosync_exit
	# two GPUs (the nvidia-h200-x2 machine): work on each and a peer copy between them
	scenario_2gpu edge_multi_gpu -- "$BIN/edge_cases" multi_gpu
	scenario train_small -- "$PY" samples/pytorch/train_small.py
	# only the NVTX ranges step1, step10..step19 (keys with scope nvtxcap: in train_small's expect line)
	scenario train_small_nvtx --baseline-from train_small --record "--capture=nvtx:step1*" \
		--check "--scope=nvtxcap" -- "$PY" samples/pytorch/train_small.py
	# a spool cut at 64 KiB: the trace opens and counts what was cut as dropped
	scenario train_small_limit --baseline-from train_small --record --size-limit --record 64K \
		--check "--scope=sizecap" --check --allow-dropped -- "$PY" samples/pytorch/train_small.py
	scenario_ring
	scenario_dump
	scenario_hang
	scenario torch_eager -- "$PY" "$P/torch_eager.py"
	scenario cuda_graph -- "$PY" "$P/cuda_graph.py"
	scenario torch_profiler_inside -- "$PY" "$P/torch_profiler_inside.py"
	scenario fork -- "$PY" "$P/fork_child.py" --mode fork
	scenario fork_dataloader -- "$PY" "$P/fork_child.py" --mode dataloader
	scenario spawn -- "$PY" "$P/spawn_ranks.py" --mode spawn
	scenario torchrun -- "$PY" "$P/spawn_ranks.py" --mode torchrun
	# rank r on GPU r with an NCCL all-reduce (the nvidia-h200-x2 machine)
	scenario_2gpu torchrun_nccl -- "$PY" "$P/spawn_ranks.py" --mode torchrun --gpus 2 --collectives nccl
	scenario_nccl_payload
	scenario_signal sig_term term
	scenario_signal sig_int int
	scenario_signal sig_kill kill
	scenario_signal os_exit exit
	scenario memory_ceiling --check --allow-dropped -- "$PY" "$P/memory_ceiling.py"
	scenario memory_ceiling_expandable --check --allow-dropped -- "$PY" "$P/memory_ceiling.py" --expandable
	scenario jax -- env XLA_PYTHON_CLIENT_PREALLOCATE=false "$PY" "$P/jax_prog.py"
	scenario torch_compile --profiled-first -- "$PY" "$P/torch_compile.py"
	note_extras
}

# Numbers worth a line of their own: CPU per launch in the launch loop, memory the profiler took at the ceiling.
note_extras() {
	local b p
	if [ -s "$WORK/launch_loop.prof.out" ] && [ -s "$WORK/launch_loop.base.out" ]; then
		b=$(value_of cpu_us_per_launch "$WORK/launch_loop.base.out")
		p=$(value_of cpu_us_per_launch "$WORK/launch_loop.prof.out")
		result launch_loop.cpu INFO "cpu us/launch ${b:-?} without, ${p:-?} with cuscope (single run; --bench for A/B)"
	fi
	if [ -s "$WORK/launch_loop.check" ]; then
		local k bytes
		k=$(count_of kernels "$WORK/launch_loop.check")
		bytes=$(count_of bytes "$WORK/launch_loop.check")
		[ -n "$k" ] && [ "$k" -gt 0 ] 2>/dev/null &&
			result trace_size INFO "$((bytes / k)) bytes per kernel ($k kernels, $bytes bytes, launch loop)"
	fi
	for n in memory_ceiling memory_ceiling_expandable; do
		b=$(value_of free_mib_at_start "$WORK/$n.base.out")
		p=$(value_of free_mib_at_start "$WORK/$n.prof.out")
		if [ -z "$b" ] || [ -z "$p" ]; then
			continue
		fi
		result "$n.memory" INFO "free MiB at start: $b without, $p with cuscope ($((b - p)) MiB less); 1 GiB" \
			"blocks before OOM: $(value_of blocks "$WORK/$n.base.out") / $(value_of blocks "$WORK/$n.prof.out")"
	done
}

# ---- (d) benchmarks ----

# Peak RSS (KiB) of a command and of everything it waited for, into PREFIX.rss, when /usr/bin/time is missing.
cat >"$WORK/maxrss.py" <<'PYEOF'
import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
with open(sys.argv[1], "w") as f:
    f.write(f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}\n")
sys.exit(rc)
PYEOF

# run_limited, and the peak RSS of the command's process tree into PREFIX.rss
run_rss() {
	local prefix=$1
	shift
	if [ -x /usr/bin/time ]; then
		run_limited "$prefix" /usr/bin/time -f '%M' -o "$prefix.rss" "$@"
	else
		run_limited "$prefix" "$PY" "$WORK/maxrss.py" "$prefix.rss" "$@"
	fi
}

# "median min max" of the numeric arguments (others are ignored)
stats() {
	"$PY" -c '
import statistics, sys
v = []
for x in sys.argv[1:]:
    try:
        v.append(float(x))
    except ValueError:
        pass
print(f"{statistics.median(v):.3f} {min(v):.3f} {max(v):.3f}" if v else "0 0 0")' "$@"
}

# median over the pairs of (b_i / a_i - 1), in percent; arguments: "a values" "b values"
paired_pct() {
	"$PY" -c '
import statistics, sys
a, b = [list(map(float, s.split())) for s in sys.argv[1:3]]
r = [(y / x - 1) * 100 for x, y in zip(a, b) if x > 0]
print(f"{statistics.median(r):+.1f}%" if r else "?")' "$1" "$2"
}

# b relative to a, in percent
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%+.1f%%", (b / a - 1) * 100; else printf "?" }'; }

bench() {
	local saved_timeout=$TIMEOUT
	say "== bench (rounds: $ROUNDS)"
	TIMEOUT=300
	bench_train
	bench_launch
	TIMEOUT=$saved_timeout
}

# The reference training step, in rounds of: no profiler (A), cuscope (B), torch.profiler (C, --torch-profiler).
bench_train() {
	local ref=.bench/train_ref.py steps=50 r rounds=0 v a b c lo hi line
	local -a A=() B=() C=() RA=() RB=()
	if [ ! -f "$ref" ]; then
		result bench.train_ref SKIP "$ref is missing (carry .bench)"
		return
	fi
	for r in $(seq 1 "$ROUNDS"); do
		if out_of_time; then
			log "bench train_ref: time budget used up after $rounds rounds"
			break
		fi
		run_rss "$WORK/bt.A$r" "$PY" "$ref" --steps $steps
		v=$(value_of step_ms "$WORK/bt.A$r.out") && [ -n "$v" ] && A+=("$v")
		RA+=("$(cat "$WORK/bt.A$r.rss" 2>/dev/null)")
		run_rss "$WORK/bt.B$r" "$CUSCOPE" record --no-calibrate -q -o "$WORK/bench_train.db" --force -- "$PY" "$ref" --steps $steps
		v=$(value_of step_ms "$WORK/bt.B$r.out") && [ -n "$v" ] && B+=("$v")
		RB+=("$(cat "$WORK/bt.B$r.rss" 2>/dev/null)")
		if [ "$TORCH_PROFILER" = 1 ]; then
			run_limited "$WORK/bt.C$r" "$PY" "$ref" --steps $steps --torch-profiler
			v=$(value_of step_ms "$WORK/bt.C$r.out") && [ -n "$v" ] && C+=("$v")
		fi
		log "train_ref round $r: none $(value_of step_ms "$WORK/bt.A$r.out") ms," \
			"cuscope $(value_of step_ms "$WORK/bt.B$r.out") ms" \
			"torch.profiler $(value_of step_ms "$WORK/bt.C$r.out" 2>/dev/null) ms"
		rounds=$r
	done
	if [ "$rounds" = 0 ]; then
		result bench.train_ref SKIP "time budget of $BUDGET s used up (--budget)"
		return
	fi
	log_file "bench train_ref: stderr of the last run with cuscope" "$WORK/bt.B$rounds.err" 20
	if [ ${#A[@]} -lt "$rounds" ] || [ ${#B[@]} -lt "$rounds" ]; then
		log_file "bench train_ref: stderr of the last run without" "$WORK/bt.A$rounds.err" 20
		result bench.train_ref FAIL \
			"runs failed: ${#A[@]} of $rounds without, ${#B[@]} of $rounds with cuscope (gpu-log.txt)"
		return
	fi
	read -r a lo hi <<<"$(stats "${A[@]}")"
	line="step ms, median [min..max] of ${#A[@]}: none $a [$lo..$hi]"
	read -r b lo hi <<<"$(stats "${B[@]}")"
	line="$line, cuscope $b [$lo..$hi] $(pct "$a" "$b") (pairs $(paired_pct "${A[*]}" "${B[*]}"))"
	if [ ${#C[@]} -gt 0 ]; then
		read -r c lo hi <<<"$(stats "${C[@]}")"
		line="$line, torch.profiler $c [$lo..$hi] $(pct "$a" "$c")"
	fi
	result bench.train_ref INFO "$line"
	read -r a _ _ <<<"$(stats "${RA[@]}")"
	read -r b _ _ <<<"$(stats "${RB[@]}")"
	result bench.peak_rss INFO "train_ref peak RSS, MiB (median; process tree, record included):" \
		"none $((${a%.*} / 1024)), cuscope $((${b%.*} / 1024))"
	bench_trace_size "$WORK/bench_train.db" train_ref
}

# Trace bytes per kernel of a recorded benchmark run.
bench_trace_size() {
	local db=$1 what=$2 k size
	[ -s "$db" ] || return 0
	k=$("$PY" -c '
import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0])' \
		"$db" 2>/dev/null)
	size=$(stat -c %s "$db")
	if [ -n "$k" ] && [ "$k" -gt 0 ]; then
		result "bench.trace_size.$what" INFO "$((size / k)) bytes per kernel ($k kernels, $size bytes)"
	fi
}

# The launch loop (CPU time per launch) and PyTorch's launch-bound reference loop, without / with cuscope.
bench_launch() {
	local n=200000 r rounds=0 v a b lo_a hi_a lo_b hi_b
	local -a A=() B=() WA=() WB=()
	if [ ! -x "$BIN/launch_loop" ]; then
		result bench.launch_loop FAIL "launch_loop was not built"
		return
	fi
	for r in $(seq 1 "$ROUNDS"); do
		if out_of_time; then
			log "bench launch_loop: time budget used up after $rounds rounds"
			break
		fi
		run_limited "$WORK/bl.A$r" "$BIN/launch_loop" $n
		v=$(value_of cpu_us_per_launch "$WORK/bl.A$r.out") && [ -n "$v" ] && A+=("$v")
		WA+=("$(value_of wall_us_per_launch "$WORK/bl.A$r.out")")
		run_limited "$WORK/bl.B$r" "$CUSCOPE" record --no-calibrate -q -o "$WORK/bench_launch.db" --force -- "$BIN/launch_loop" $n
		v=$(value_of cpu_us_per_launch "$WORK/bl.B$r.out") && [ -n "$v" ] && B+=("$v")
		WB+=("$(value_of wall_us_per_launch "$WORK/bl.B$r.out")")
		log "launch_loop round $r: cpu us/launch none $(value_of cpu_us_per_launch "$WORK/bl.A$r.out")," \
			"cuscope $(value_of cpu_us_per_launch "$WORK/bl.B$r.out"); record took $(cat "$WORK/bl.B$r.sec") s"
		rounds=$r
	done
	if [ "$rounds" = 0 ]; then
		result bench.launch_loop SKIP "time budget of $BUDGET s used up (--budget)"
		return
	fi
	if [ ${#A[@]} -lt "$rounds" ] || [ ${#B[@]} -lt "$rounds" ]; then
		result bench.launch_loop FAIL "runs failed: ${#A[@]} / ${#B[@]} of $rounds (gpu-log.txt)"
		return
	fi
	read -r a lo_a hi_a <<<"$(stats "${A[@]}")"
	read -r b lo_b hi_b <<<"$(stats "${B[@]}")"
	result bench.launch_loop INFO "$(awk -v a="$a" -v b="$b" \
		'BEGIN { printf "CPU us per launch, median: none %.3f, cuscope %.3f, added %+.3f", a, b, b - a }')" \
		"[none $lo_a..$hi_a, cuscope $lo_b..$hi_b]"
	read -r a _ _ <<<"$(stats "${WA[@]}")"
	read -r b _ _ <<<"$(stats "${WB[@]}")"
	result bench.launch_wall INFO "wall us per launch, median: none $a, cuscope $b"
	bench_trace_size "$WORK/bench_launch.db" launch_loop

	[ -f .bench/launch_ref.py ] && ! out_of_time || return 0
	A=() B=()
	for r in 1 2 3; do
		run_limited "$WORK/blr.A$r" "$PY" .bench/launch_ref.py --n 100000
		v=$(value_of us_per_launch "$WORK/blr.A$r.out") && [ -n "$v" ] && A+=("$v")
		run_limited "$WORK/blr.B$r" "$CUSCOPE" record --no-calibrate -q -o "$WORK/bench_launch_ref.db" --force -- \
			"$PY" .bench/launch_ref.py --n 100000
		v=$(value_of us_per_launch "$WORK/blr.B$r.out") && [ -n "$v" ] && B+=("$v")
	done
	if [ ${#A[@]} = 3 ] && [ ${#B[@]} = 3 ]; then
		read -r a _ _ <<<"$(stats "${A[@]}")"
		read -r b _ _ <<<"$(stats "${B[@]}")"
		result bench.launch_ref INFO "PyTorch add_ loop, wall us per launch, median of 3: none $a, cuscope $b"
	else
		result bench.launch_ref FAIL "runs failed (gpu-log.txt)"
	fi
}

# ---- (e) summary ----

# The commit the tree is at, saying so when tracked files differ from it (a copied working tree).
commit_label() {
	local c
	c=$(git rev-parse --short HEAD 2>/dev/null) || { echo unknown; return; }
	git diff --quiet HEAD -- 2>/dev/null || c="$c with uncommitted changes"
	echo "$c"
}

write_summary() {
	{
		echo "cuscope GPU routine, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(commit_label)"
		echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
		echo "scratch files: $WORK"
		echo
		printf '%-26s %-6s %s\n' scenario result notes
		for r in ${RESULTS[@]+"${RESULTS[@]}"}; do
			IFS='|' read -r n s t <<<"$r"
			printf '%-26s %-6s %s\n' "$n" "$s" "$t"
		done
		echo
		echo "failed: $FAILED"
		echo "notes: k=kernels cp=memcpys sync=sync rows nvtx=NVTX rows procs=processes that used CUDA"
		echo "       drop=records lost; a/b s = wall seconds without / with cuscope"
	} >"$SUMMARY"
}

# ---- main ----

say "cuscope GPU routine: OUT=$OUT, scratch $WORK"
{
	echo "---- environment ----"
	uname -a
	nvidia-smi 2>&1 | head -n 15
	"$NVCC" --version 2>&1 | tail -n 2
	"$PY" -c 'import sys; print("python", sys.version.split()[0])'
	"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -n 1
	"$PY" -c 'import jax; print("jax", jax.__version__)' 2>&1 | tail -n 1
	meson --version 2>&1 | sed 's/^/meson /'
} >>"$LOG" 2>&1

if [ "$DO_BUILD" = 1 ]; then
	build
else
	[ -d /tmp/deps/usr/lib/x86_64-linux-gnu ] &&
		export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	[ -x "$CUSCOPE" ] || die "--no-build, but $BUILD/cuscope does not exist"
fi
build_cuda_programs
[ "$DO_SCENARIOS" = 1 ] && run_scenarios
[ "$DO_BENCH" = 1 ] && bench

write_summary
say ""
say "== summary ($(elapsed "$T0") s, $OUT/summary.txt)"
tee -a "$LOG" <"$SUMMARY"
[ "$FAILED" = 0 ]
