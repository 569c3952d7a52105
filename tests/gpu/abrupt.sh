#!/usr/bin/env bash
# tests/gpu/abrupt.sh - does a trace keep every kernel of a job that ends abruptly? And what does that cost?
#
#   tests/gpu/abrupt.sh [--runs N] [--rounds N] [--only c|py|cost]
#
# Ground truth (tests/gpu/programs/abrupt_end.cu and abrupt_end.py): a GPU-bound loop with no wait per step
# (the host runs far ahead of the GPU), then a synchronize, then an end: normal, SIGTERM, SIGINT, SIGHUP,
# _exit/os._exit, SIGKILL from outside 0.2 s after the synchronize, the program's own SIGTERM handler; and a
# child process (multiprocessing spawn) ending with os._exit. Each program prints how many kernels it launched
# and its pid; each combination runs N times (default 10) under `cuscope record`, and the trace must hold
# exactly that many kernels for that pid, with `record` returning the program's exit status.
# Cost (--rounds, default 5, the order of the variants rotating each round): a C loop that synchronizes after
# every small kernel, and the reference training step (.bench/train_ref.py, when carried; NO_TRAIN=1 skips it),
# without cuscope, with it, and with it but no flush after waits (COST_VARIANTS="none - wait_flush_ms=0", the
# default; "-" is cuscope's defaults, anything else goes to CUSCOPE_RECORD_EXTRA).
# Writes $OUT/abrupt.txt (the table), $OUT/abrupt-log.txt and the first trace of three combinations
# ($OUT/abrupt-*.db). Run on the GPU machine from anywhere.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
OUT=${OUT:-$ROOT/gpu-out}
PY=${PYTHON:-python3}
RUNS=10 ROUNDS=5 ONLY=""
while [ $# -gt 0 ]; do
	case $1 in
	--runs) RUNS=$2; shift ;;
	--rounds) ROUNDS=$2; shift ;;
	--only) ONLY=$2; shift ;;
	*) echo "abrupt.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
mkdir -p "$OUT"
LOG=$OUT/abrupt-log.txt TABLE=$OUT/abrupt.txt
: >"$LOG"
: >"$TABLE"
say() { printf '%s\n' "$*" | tee -a "$LOG"; }
now() { date +%s.%N; }
source tests/gpu/build.sh # sets C
WORK=$(mktemp -d)
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
/usr/local/cuda/bin/nvcc -O2 -arch=sm_90 -o "$WORK/abrupt_end" tests/gpu/programs/abrupt_end.cu || exit 2
FAILED=0
SAVE=${SAVE-"c.term c.exit py.wait"} # the first trace of these goes to $OUT (test data: tests/data/abrupt/)

# kernels of PID in TRACE, and whether its end record is there ("end" / "no-end")
trace_count() {
	"$PY" - "$1" "$2" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
pid = int(sys.argv[2])
n = db.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE pid = ?", (pid,)).fetchone()[0]
row = db.execute('SELECT "end", exitCode FROM PROCESSES WHERE pid = ?', (pid,)).fetchone()
end = "no-process" if row is None else ("no-end" if row[0] is None else f"end:{row[1]}")
print(n, end)
PY
}

# one_case LABEL WANT_RC CMD...: RUNS recordings; prints a table row
one_case() {
	local label=$1 want_rc=$2 i rc want got end exact=0 rcok=0 lo="" hi="" ends=""
	shift 2
	for i in $(seq 1 "$RUNS"); do
		local db=$WORK/$label.$i.db out=$WORK/$label.$i.out
		rm -f "$db"
		if [ "$label" != "${label%wait}" ]; then
			timeout -k 5 120 "$C" record --no-calibrate -q -o "$db" --force -- "$@" >"$out" 2>"$out.err" &
			local rp=$!
			for _ in $(seq 1 600); do grep -q '^synced' "$out" 2>/dev/null && break; sleep 0.05; done
			sleep 0.2
			kill -KILL "$(sed -n 's/^kernels [0-9]* pid \([0-9]*\).*/\1/p' "$out" | tail -n 1)" 2>/dev/null
			wait $rp
			rc=$?
		else
			timeout -k 5 120 "$C" record --no-calibrate -q -o "$db" --force -- "$@" >"$out" 2>"$out.err" </dev/null
			rc=$?
		fi
		read -r want pid <<<"$(sed -n 's/^kernels \([0-9]*\) pid \([0-9]*\).*/\1 \2/p' "$out" | tail -n 1)"
		if [ -z "${want:-}" ] || [ ! -s "$db" ]; then
			say "  $label run $i: rc $rc, no count or no trace: $(tail -n 3 "$out.err" | tr '\n' ' ')"
			continue
		fi
		read -r got end <<<"$(trace_count "$db" "$pid")"
		[ "$got" = "$want" ] && exact=$((exact + 1))
		[ "$rc" = "$want_rc" ] && rcok=$((rcok + 1))
		[ -z "$lo" ] || [ "$got" -lt "$lo" ] && lo=$got
		[ -z "$hi" ] || [ "$got" -gt "$hi" ] && hi=$got
		case " $ends " in *" $end "*) ;; *) ends="$ends $end" ;; esac
		echo "  $label run $i: rc $rc want $want got $got $end" >>"$LOG"
		case " $SAVE " in *" $label "*) [ "$i" = 1 ] && cp "$db" "$OUT/abrupt-$label.db" ;; esac
	done
	local status=PASS
	[ "$exact" = "$RUNS" ] && [ "$rcok" = "$RUNS" ] || { status=FAIL; FAILED=$((FAILED + 1)); }
	say "$(printf '%-4s %-16s exact %2d/%d  rc=%s %2d/%d  kernels %s..%s of %s  process:%s' \
		"$status" "$label" "$exact" "$RUNS" "$want_rc" "$rcok" "$RUNS" "$lo" "$hi" "${want:-?}" "$ends")" |
		tee -a "$TABLE"
}

want() { [ -z "$ONLY" ] || [ "$ONLY" = "$1" ]; }

if want c; then
	say "== CUDA C loop: 400 kernels of 0.5 ms, synchronize, then the end"
	A=$WORK/abrupt_end
	one_case c.normal 0 "$A" normal
	one_case c.term 143 "$A" term
	one_case c.int 130 "$A" int
	one_case c.hup 129 "$A" hup
	one_case c.exit 3 "$A" exit
	one_case c.wait 137 "$A" wait
	one_case c.own_handler 5 "$A" handler
fi
if want py; then
	say "== PyTorch loop: 601 kernels of about 0.4 ms, synchronize, then the end"
	P=tests/gpu/programs/abrupt_end.py
	one_case py.normal 0 "$PY" "$P" normal
	one_case py.term 143 "$PY" "$P" term
	one_case py.int 130 "$PY" "$P" int
	one_case py.exit 3 "$PY" "$P" exit
	one_case py.wait 137 "$PY" "$P" wait
	one_case py.child_exit 0 "$PY" "$P" exit --child
fi

# ---- cost ----
median() { "$PY" -c 'import statistics,sys; v=[float(x) for x in sys.argv[1:]]; print(f"{statistics.median(v):.3f} [{min(v):.3f}..{max(v):.3f}]" if v else "?")' "$@"; }
value_of() { grep -o "\<$1=[^ ]*" "$2" 2>/dev/null | tail -n 1 | cut -d= -f2; }
if want cost; then
	# variants: "none", or the CUSCOPE_RECORD_EXTRA of a cuscope run ("-" for the defaults); the order
	# rotates every round so that no variant always runs first
	VARIANTS=${COST_VARIANTS:-"none - wait_flush_ms=0"}
	read -r -a V <<<"$VARIANTS"
	say "== cost of the flush after waits ($ROUNDS rounds, order rotating): ${V[*]}"
	declare -A SL=() TR=()
	run_variant() { # run_variant VARIANT CMD...: the command, under cuscope unless VARIANT is none
		local v=$1
		shift
		if [ "$v" = none ]; then
			"$@"
		else
			CUSCOPE_RECORD_EXTRA=$([ "$v" = - ] || echo "$v") "$C" record --no-calibrate -q -o "$WORK/cost.db" --force -- "$@"
		fi
	}
	for r in $(seq 1 "$ROUNDS"); do
		n=${#V[@]}
		for j in $(seq 0 $((n - 1))); do
			v=${V[$(((j + r) % n))]}
			x=$(run_variant "$v" "$WORK/abrupt_end" syncloop 20000 2 2>&1 | grep -o 'us_per_iter=[0-9.]*' | cut -d= -f2)
			SL[$v]="${SL[$v]:-} $x"
			echo "round $r syncloop $v: $x us/iter" >>"$LOG"
		done
		if [ -f .bench/train_ref.py ] && [ -z "${NO_TRAIN:-}" ]; then
			for j in $(seq 0 $((n - 1))); do
				v=${V[$(((j + r) % n))]}
				x=$(run_variant "$v" "$PY" .bench/train_ref.py --steps 50 2>&1 | grep -o 'step_ms=[0-9.]*' | cut -d= -f2)
				TR[$v]="${TR[$v]:-} $x"
				echo "round $r train_ref $v: $x ms/step" >>"$LOG"
			done
		fi
	done
	for v in "${V[@]}"; do
		say "syncloop us/iter, median [min..max], $v: $(median ${SL[$v]})" | tee -a "$TABLE"
	done
	# how many flushes each variant makes, and how long they take (census; it also turns on the
	# callbacks of every API, so its loop time is not comparable)
	for v in "${V[@]}"; do
		[ "$v" = none ] && continue
		CUSCOPE_RECORD_EXTRA=census$([ "$v" = - ] || echo ",$v") "$C" record --no-calibrate -q -o "$WORK/cost.db" --force -- \
			"$WORK/abrupt_end" syncloop 20000 2 2>&1 | grep -E 'census: (flushes|periodic)' |
			sed "s/^/syncloop $v: /" | tee -a "$TABLE" "$LOG"
	done
	for v in "${V[@]}"; do
		[ -n "${TR[$v]:-}" ] && say "train_ref ms/step, median [min..max], $v: $(median ${TR[$v]})" | tee -a "$TABLE"
	done
fi
say "abrupt.sh: $FAILED failed"
[ "$FAILED" = 0 ]
