#!/usr/bin/env bash
# wait_flush.sh - what the flush after a host wait costs the program's thread, and what its budget (the share of
# the time those flushes may take, past which the flush thread makes them: `wait_flush_budget=N`, default 2)
# saves, without losing what a job ended right after a wait had completed. On the GPU machine, from the repository root (.deps carried):
#
#   bash tests/gpu/wait_flush.sh [ROUNDS]     (default 5; OUT defaults to ./gpu-out)
#
# 1. samples/corpus/pt_epoch_sync.py, a GPU-bound loop that reads its loss once per epoch of 10 steps (about
#    110 ms), so that every read comes more than two flush periods after the last flush and the waiting thread
#    flushes itself: ROUNDS rounds in rotating order of no profiler ("none"), cuscope's defaults ("default") and
#    each variant of WAIT_FLUSH_VARIANTS (LABEL:CUSCOPE_RECORD_EXTRA, default "nobudget:wait_flush_budget=0":
#    the waiting thread makes every such flush itself, as before the budget).
#    Per run: the program's step_ms, and from the trace the host's time from the end of each steady read's
#    synchronize to the next kernel launch of that thread (median: what the GPU waits for after the read) and
#    d2h-sync's share of the step (0 when it does not report).
# 2. One census run per variant: the flushes made on the waiting threads and on the flush thread (count, wall
#    and CPU time).
# 3. tests/gpu/abrupt.sh's loss runs (every kernel of a GPU-bound loop that ends right after a synchronize, by
#    _exit, signals or SIGKILL) under each variant, WAIT_FLUSH_RUNS times each (default 3).
# WAIT_FLUSH_ARGS go to the program of parts 1 and 2 (e.g. "--steps 400": a run long enough for the share).
# WAIT_FLUSH_PARTS picks the parts (default "1 2 3"; all three with three variants take about ten minutes, a
# device call's limit: run 3 in a call of its own). Writes $OUT/wait-flush.txt.
set -u
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/gpu-out}
ROUNDS=${1:-5}
RUNS=${WAIT_FLUSH_RUNS:-3}
mkdir -p "$OUT"
log=$OUT/wait-flush.txt
: >"$log"
say() { printf '%s\n' "$*" | tee -a "$log"; }
. tests/gpu/build.sh
W=$(mktemp -d /tmp/cuscope-wait-flush.XXXXXX)
PROG=(python3 samples/corpus/pt_epoch_sync.py ${WAIT_FLUSH_ARGS:-})
VARIANTS=(none default ${WAIT_FLUSH_VARIANTS:-nobudget:wait_flush_budget=0})

# the median time from the end of a synchronize to the next launch on the same thread, in us, over the reads
# after the first (the first follows start-up); and d2h-sync's step share from the report
trace_numbers() { # DB
	python3 - "$1" <<'PY'
import sqlite3, statistics, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute(
    "SELECT r.start, r.end, r.tid, (SELECT MIN(k.launchStart) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
    "WHERE k.launchTid = r.tid AND k.launchStart >= r.end) FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
    "JOIN StringIds s ON s.id = r.nameId WHERE s.value LIKE 'cudaStreamSynchronize%' ORDER BY r.start").fetchall()
# the reads that end 40 ms or more after the thread's previous synchronize (those after which the waiting
# thread flushes by default), the first one of the run left out
gaps, last = [], {}
for s, e, tid, n in rows:
    if tid in last and e - last[tid] >= 40e6 and n is not None:
        gaps.append((n - e) / 1e3)
    last[tid] = e
print(f"{statistics.median(gaps):.1f}" if gaps else "nan")
PY
}
d2h_share() { # DB
	"$C" report --format json --rules d2h-sync "$1" 2>/dev/null | python3 -c '
import json, sys
f = [x["step_share"] for x in json.load(sys.stdin).get("findings", []) if x.get("rule") == "d2h-sync"]
print("%.2f%%" % (100 * f[0]) if f else "0")' 2>/dev/null || echo "?"
}

PARTS=" ${WAIT_FLUSH_PARTS:-1 2 3} "
part() { case $PARTS in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

if part 1; then
say "== 1. ${PROG[*]}: ${VARIANTS[*]} ($ROUNDS rounds)"
nv=${#VARIANTS[@]}
for r in $(seq 1 "$ROUNDS"); do
	line="round $r:"
	for k in $(seq 0 $((nv - 1))); do
		v=${VARIANTS[$(((k + r - 1) % nv))]}
		name=${v%%:*}
		db=$W/$name-$r.db
		case $v in
		none) "${PROG[@]}" >"$W/out" 2>&1 ;;
		default) "$C" record --no-calibrate -q -o "$db" --force -- "${PROG[@]}" >"$W/out" 2>&1 ;;
		*) CUSCOPE_RECORD_EXTRA=${v#*:} "$C" record --no-calibrate -q -o "$db" --force -- "${PROG[@]}" >"$W/out" 2>&1 ;;
		esac
		ms=$(grep -o 'step_ms=[0-9.]*' "$W/out" | tail -n 1 | cut -d= -f2)
		if [ "$v" = none ]; then
			line="$line $name=${ms:-FAILED}"
		else
			line="$line $name=${ms:-FAILED}(gap $(trace_numbers "$db") us, d2h $(d2h_share "$db"))"
		fi
		echo "$name ${ms:-nan} $r" >>"$W/all"
	done
	say "$line"
done
python3 tests/gpu/rounds.py "$W/all" ms | tee -a "$log"
fi

if part 2; then
say "== 2. census (flushes)"
for v in "${VARIANTS[@]}"; do
	[ "$v" = none ] && continue
	extra=census
	[ "$v" = default ] || extra="census,${v#*:}"
	CUSCOPE_RECORD_EXTRA=$extra "$C" record --no-calibrate -q -o "$W/census.db" --force -- "${PROG[@]}" >/dev/null 2>"$W/census.err"
	grep -E 'cuscope census: .*(flush|buffers)' "$W/census.err" | sed "s/^/${v%%:*}: /" | tee -a "$log"
done
fi

if part 3; then
say "== 3. loss when the job ends right after a synchronize (abrupt.sh, $RUNS runs each)"
for v in "${VARIANTS[@]}"; do
	[ "$v" = none ] && continue
	extra=
	[ "$v" = default ] || extra=${v#*:}
	say "-- ${v%%:*}"
	CUSCOPE_RECORD_EXTRA=$extra OUT=$W/abrupt-${v%%:*} bash tests/gpu/abrupt.sh --runs "$RUNS" --only c >/dev/null 2>&1
	CUSCOPE_RECORD_EXTRA=$extra OUT=$W/abrupt-${v%%:*}-py bash tests/gpu/abrupt.sh --runs "$RUNS" --only py >/dev/null 2>&1
	cat "$W/abrupt-${v%%:*}/abrupt.txt" "$W/abrupt-${v%%:*}-py/abrupt.txt" 2>/dev/null | tee -a "$log"
done
fi
say "scratch: $W"
