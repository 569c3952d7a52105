#!/usr/bin/env bash
# tests/gpu/corpus.sh - record the accuracy corpus (samples/corpus/) with `cuscope record` and score the findings
# against the labels (docs/accuracy.md).
#
#   tests/gpu/corpus.sh [--only LIST] [--budget SEC] [--traces DIR] [--no-build | --build-only]
#                       [--score-only] [--min-severity LEVEL] [--no-pack]
#
# On the GPU machine, from anywhere (it works in the repository root):
#   (a) builds cuscope into build-gpu/ (tests/gpu/build.sh; skipped with --no-build) and the corpus's CUDA
#       programs into build-gpu/corpus-bin/ with nvcc -O2 -arch=sm_90, in parallel (up to 8 at a time);
#   (b) records each program of samples/corpus/labels.json (or of --only, comma-separated names) into
#       TRACES/NAME.db under its own time limit (budget_s in the labels), its output in TRACES/NAME.log, its
#       exit status and seconds in TRACES/NAME.status (exit 77: the program skipped itself, e.g. no JAX), and
#       the report of that moment in TRACES/NAME.json (`cuscope report --format json`);
#   (c) scores every trace in TRACES with tests/gpu/corpus_score.py (the whole directory, so that two calls
#       with different --only lists add up) and writes $OUT/corpus-score.md, $OUT/corpus-score.json and
#       $OUT/corpus-summary.txt (one line per recorded program: status, seconds, trace size, its done line);
#   (d) packs TRACES (traces, saved reports, statuses, logs) into $OUT/corpus-traces.tar.xz, split into parts
#       of 15 MiB (corpus-traces.tar.xz.part-aa, -ab, ...) when larger, so that they come back from the
#       machine and can be scored again offline: cat corpus-traces.tar.xz* | tar -xJ -C DIR, then
#       tests/gpu/corpus_score.py score DIR (no GPU needed; the traces are reported again by the cuscope of
#       that moment).
# Once --budget seconds (default 540) have passed since the start, the programs not started yet are left out
# (listed in the summary), so that a call under a 10-minute limit still ends with its score and its pack.
# The whole corpus takes about 8-10 minutes on one H200 (build included); split it with --only when needed:
# a first call with --only of the CUDA and eager programs, a second with --no-build and the rest.
#
# OUT defaults to ./gpu-out, TRACES to build-gpu/corpus (ignored by git; kept between calls while the machine
# stays up). Environment: PYTHON (default python3), NVCC (default /usr/local/cuda/bin/nvcc),
# CUSCOPE_RECORD_OPTS (extra `cuscope record` options, e.g. --backtrace).
set -u
set -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2

OUT=${OUT:-$ROOT/gpu-out}
PY=${PYTHON:-python3}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
BIN=$ROOT/build-gpu/corpus-bin
TRACES=$ROOT/build-gpu/corpus
SCORE=$ROOT/tests/gpu/corpus_score.py
ONLY="" BUDGET=540 DO_BUILD=1 BUILD_ONLY=0 SCORE_ONLY=0 MIN_SEV=info PACK=1
# shellcheck disable=SC2206
record_opts=(${CUSCOPE_RECORD_OPTS:-})

usage() {
	sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
	exit "${1:-0}"
}

while [ $# -gt 0 ]; do
	case $1 in
	--only) ONLY=${2:?--only needs a list}; shift ;;
	--budget) BUDGET=${2:?--budget needs seconds}; shift ;;
	--traces) TRACES=${2:?--traces needs a directory}; shift ;;
	--no-build) DO_BUILD=0 ;;
	--build-only) BUILD_ONLY=1 ;;
	--score-only) SCORE_ONLY=1 DO_BUILD=0 ;;
	--min-severity) MIN_SEV=${2:?--min-severity needs info, warning or error}; shift ;;
	--no-pack) PACK=0 ;;
	-h | --help) usage 0 ;;
	*) echo "corpus.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
	esac
	shift
done

mkdir -p "$OUT" "$TRACES" || exit 2
TRACES=$(cd "$TRACES" && pwd)
LOG=$OUT/corpus-log.txt
SUMMARY=$OUT/corpus-summary.txt
: >"$LOG"
say() { printf '%s\n' "$*" | tee -a "$LOG"; }
now() { date +%s.%N; }
T0=$(now)
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }'; }
out_of_time() { awk -v a="$T0" -v b="$(now)" -v m="$BUDGET" 'BEGIN { exit !(b - a > m) }'; }

export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/cuscope-corpus.XXXXXX") || exit 2
export TORCHINDUCTOR_CACHE_DIR=$SCRATCH/inductor-cache TRITON_CACHE_DIR=$SCRATCH/triton-cache

# ---- (a) build ----

if [ "$DO_BUILD" = 1 ]; then
	say "== build cuscope ($(elapsed "$T0") s)"
	# shellcheck source=tests/gpu/build.sh
	. tests/gpu/build.sh
elif [ -d /tmp/deps/usr/lib/x86_64-linux-gnu ]; then
	export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
C=$ROOT/build-gpu/cuscope
[ -x "$C" ] || [ "$SCORE_ONLY" = 1 ] || { say "no $C: build first (without --no-build)"; exit 2; }

if [ "$SCORE_ONLY" = 0 ]; then
	say "== build the CUDA programs ($(elapsed "$T0") s)"
	mkdir -p "$BIN"
	# shellcheck disable=SC2016
	jobs=$(nproc 2>/dev/null || echo 2)
	[ "$jobs" -gt 8 ] && jobs=8
	if ! ls samples/corpus/cu_*.cu | xargs -P "$jobs" -I{} sh -c \
		'n=$(basename {} .cu); "$0" -O2 -arch=sm_90 -o "$1/$n" {} >>"$2" 2>&1 || { echo "nvcc failed: {}" >>"$2"; exit 1; }' \
		"$NVCC" "$BIN" "$LOG"; then
		say "some CUDA programs did not build (corpus-log.txt); their recordings fail"
	fi
fi
[ "$BUILD_ONLY" = 1 ] && { say "built ($(elapsed "$T0") s)"; exit 0; }

# ---- (b) record ----

record_one() { # NAME BUDGET ARGS...
	local name=$1 limit=$2 t0 rc secs
	shift 2
	t0=$(now)
	rm -f "$TRACES/$name".{db,json,status,log}
	timeout -k 10 "$limit" "$C" record ${record_opts[@]+"${record_opts[@]}"} -o "$TRACES/$name.db" --force -- "$@" \
		>"$TRACES/$name.log" 2>&1 </dev/null
	rc=$?
	secs=$(elapsed "$t0")
	echo "rc=$rc secs=$secs" >"$TRACES/$name.status"
	if [ -s "$TRACES/$name.db" ] && [ "$rc" != 77 ]; then
		"$C" report --format json "$TRACES/$name.db" >"$TRACES/$name.json" 2>>"$TRACES/$name.log" ||
			rm -f "$TRACES/$name.json"
	fi
	say "$(printf '%-28s rc=%-3s %4ss %s' "$name" "$rc" "$secs" "$(grep '^done ' "$TRACES/$name.log" | tail -n 1)")"
}

left_out=()
if [ "$SCORE_ONLY" = 0 ]; then
	say "== record into $TRACES ($(elapsed "$T0") s, budget $BUDGET s)"
	list=$("$PY" "$SCORE" list --only "$ONLY" --python "$PY" --bin "$BIN") || exit 2
	while IFS=$'\t' read -r -a f; do
		[ ${#f[@]} -ge 3 ] || continue
		if out_of_time; then
			left_out+=("${f[0]}")
			continue
		fi
		record_one "${f[@]}"
	done <<<"$list"
	[ ${#left_out[@]} -gt 0 ] && say "left out (time budget of $BUDGET s used up): ${left_out[*]}"
fi

# ---- (c) score ----

{
	echo "cuscope accuracy corpus, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null)"
	echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
	"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -n 1
	"$PY" -c 'import jax; print("jax", jax.__version__)' 2>&1 | tail -n 1
	echo
	for s in "$TRACES"/*.status; do
		[ -e "$s" ] || continue
		n=$(basename "$s" .status)
		printf '%-28s %-16s size=%-10s %s\n' "$n" "$(cat "$s")" "$(stat -c %s "$TRACES/$n.db" 2>/dev/null || echo none)" \
			"$(grep '^done ' "$TRACES/$n.log" 2>/dev/null | tail -n 1)"
	done
	[ ${#left_out[@]} -gt 0 ] && echo "left out (time budget): ${left_out[*]}"
} >"$SUMMARY"

say "== score ($(elapsed "$T0") s)"
score_args=(score "$TRACES" --min-severity "$MIN_SEV" --markdown "$OUT/corpus-score.md" --json "$OUT/corpus-score.json")
[ -x "$C" ] && score_args+=(--cuscope "$C") || score_args+=(--reports-only)
"$PY" "$SCORE" "${score_args[@]}" | tee -a "$LOG"
score_rc=$?

# ---- (d) pack ----

if [ "$PACK" = 1 ]; then
	rm -f "$OUT"/corpus-traces.tar.xz*
	tar -C "$TRACES" -cf - --exclude='*.db-*' . | xz -T2 -6 >"$OUT/corpus-traces.tar.xz"
	if [ "$(stat -c %s "$OUT/corpus-traces.tar.xz")" -gt $((15 * 1024 * 1024)) ]; then
		split -b 15M "$OUT/corpus-traces.tar.xz" "$OUT/corpus-traces.tar.xz.part-" && rm -f "$OUT/corpus-traces.tar.xz"
	fi
	say "packed: $(cd "$OUT" && ls -s --block-size=K corpus-traces.tar.xz* | tr '\n' ' ')"
fi
say "== done ($(elapsed "$T0") s); scratch files in $SCRATCH"
exit "$score_rc"
