#!/usr/bin/env bash
# gate_noise.sh - the gate's noise study on the GPU machine, in one command (docs/ci.md, "Noise study on the GPU").
#
#   bash tests/gpu/gate_noise.sh [--runs N] [--from I] [--budget SEC] [--steps N] [--jobs N] [--no-analyse] [--dry-run]
#   bash tests/gpu/gate_noise.sh --analyse DIR [--cuscope PATH] [--jobs N] [--config FILE]
#
# Builds cuscope (tests/gpu/build.sh), then records three programs N times each (--runs, default 8), in
# rounds (run i of every program, then run i+1), each recording about 5 to 8 s with Python's start:
#   gpu-bound   tests/gpu/programs/gate_probe.py --steps 25 (a 4-layer GPT, bf16, fused AdamW; GPU busy ~97%)
#   host-bound  tests/gpu/programs/host_bound.py --steps 25 (a small GPT, per-parameter AdamW: ~1000 small
#               kernels a step, GPU busy well under 40%)
#   two-ranks   tests/gpu/programs/rank_job.py gate_probe.py --steps 25 --start-barrier DIR (two ranks on the
#               one GPU, RANK/WORLD_SIZE set as torchrun sets them, meeting after their warm-up)
# and, after the third round, eight regressions, each recorded once (graded, to find the smallest caught):
#   gpu-bound/reg-item      gate_probe.py --extra-sync     one .item() per step
#   gpu-bound/reg-gpuN      gate_probe.py --slower N       +N% GPU work per step (torch.cuda._sleep), N = 5, 2, 1
#   gpu-bound/reg-pageable  gate_probe.py --pageable-copy  one pageable H2D copy per step
#   host-bound/reg-hostN    host_bound.py --slower-host N  +N% host time per step, N = 10, 20, 40
# Recording stops starting new runs once --budget seconds (default 300) of recording have passed; what was
# recorded is analysed anyway. Then, for each program (the analysis, which --analyse DIR redoes without a GPU
# from a directory of traces laid out as PROGRAM/runI.db and PROGRAM/reg-NAME.db):
#   - every ordered pair of its runs: cuscope gate --baseline runA runB with the defaults (all must pass);
#   - each run against the N-1 others as baselines (all must pass);
#   - each regression against every clean run of its program alone, and against all of them as baselines:
#     it must fail, naming its metric (d2h_syncs or host_waits; kernel_time_total, step_time or the added
#     kernel's kernel_time; pageable_copies; step_time, gpu_busy or host_gap);
# and prints the failures with the metric that failed, the per-run values, and a summary table last: per
# program the runs, GPU busy share, the p10..p90 of the runs' median steps, the pairs and their false failures
# by metric; per regression its change and what caught it. All of it goes to $OUT/gate-noise.txt; the traces
# (with each program's output) go to $OUT/gate-noise-traces.tar.xz (in 15 MiB parts .part0, .part1, ... when
# larger: cat them together), to re-gate offline: tar xJf gate-noise-traces.tar.xz, then
# bash tests/gpu/gate_noise.sh --analyse gate-noise-traces.
#
# Options: --runs N (at least 2), --budget SEC (seconds of recording), --steps N (steady steps of every
# program, default 25), --jobs N (gates run at once, default the CPU count up to 8), --timeout SEC (one
# recording, default 90), --from I (record rounds I..N only, the regressions only when I <= 3: a study split over
# two device calls, whose trace directories are merged for --analyse), --no-analyse (record and pack only),
# --dry-run (print the build and record commands in order and exit), --analyse DIR,
# --cuscope PATH (the cuscope of --analyse; default $CUSCOPE, build-gpu/cuscope or build/cuscope), --config FILE
# (a gate configuration every gate of the analysis reads, e.g. one that gates host_gap). A bare
# number is --runs. OUT defaults to ./gpu-out. Exit status: 0 when no pair failed, no gate errored and every
# regression failed its N-baseline gate naming its metric; 1 otherwise; 2 on bad usage or a failed build.
set -u
set -o pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2

OUT=${OUT:-$ROOT/gpu-out}
PY=${PYTHON:-python3}
P=tests/gpu/programs
RUNS=8 FROM=1 BUDGET=300 STEPS=25 TIMEOUT=90 DRY=0 NO_ANALYSE=0 ANALYSE="" C=${CUSCOPE:-} CONFIG=
JOBS=$(nproc 2>/dev/null || echo 2)
[ "$JOBS" -gt 8 ] && JOBS=8
PROGRAMS="gpu-bound host-bound two-ranks"
REGRESSIONS="gpu-bound/reg-item gpu-bound/reg-gpu5 gpu-bound/reg-gpu2 gpu-bound/reg-gpu1 gpu-bound/reg-pageable
host-bound/reg-host10 host-bound/reg-host20 host-bound/reg-host40"

usage() {
	sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
	exit "${1:-0}"
}
die() {
	echo "gate_noise.sh: $*" >&2
	exit 2
}
number() { # number OPTION VALUE MIN: VALUE must be an integer >= MIN
	case $2 in '' | *[!0-9]*) die "$1 needs a whole number, not '$2'" ;; esac
	[ "$2" -ge "$3" ] || die "$1 must be at least $3"
}

while [ $# -gt 0 ]; do
	case $1 in
	--runs) number "$1" "${2-}" 2 && RUNS=$2 && shift ;;
	--budget) number "$1" "${2-}" 0 && BUDGET=$2 && shift ;;
	--from) number "$1" "${2-}" 1 && FROM=$2 && shift ;;
	--no-analyse | --no-analyze) NO_ANALYSE=1 ;;
	--steps) number "$1" "${2-}" 10 && STEPS=$2 && shift ;;
	--jobs) number "$1" "${2-}" 1 && JOBS=$2 && shift ;;
	--timeout) number "$1" "${2-}" 1 && TIMEOUT=$2 && shift ;;
	--analyse | --analyze) [ -n "${2-}" ] || die "$1 needs a directory"; ANALYSE=$2; shift ;;
	--cuscope) [ -n "${2-}" ] || die "$1 needs a path"; C=$2; shift ;;
	--config) [ -f "${2-}" ] || die "$1 needs a configuration file"; CONFIG=$2; shift ;;
	--dry-run) DRY=1 ;;
	-h | --help) usage 0 ;;
	[0-9]*) number --runs "$1" 2 && RUNS=$1 ;;
	*) die "unknown option '$1' (try --help)" ;;
	esac
	shift
done

log=$OUT/gate-noise.txt
say() { echo "$*" | tee -a "$log"; }

# analyse DIR: steps 2-4 on the traces under DIR (PROGRAM/runI.db, PROGRAM/reg-NAME.db); the summary last.
analyse() {
	"$PY" - "$C" "$1" "$JOBS" "$log" "$PROGRAMS" "$CONFIG" <<'PY'
import concurrent.futures as cf
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

cuscope, tdir, jobs, log_path, programs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5].split()
config = sys.argv[6] if len(sys.argv) > 6 else ""
# regression: (what it is, the checks that name it)
REGS = {
    "reg-item": ("one .item() per step", {"d2h_syncs", "host_waits"}),
    "reg-pageable": ("one pageable H2D copy per step", {"pageable_copies"}),
}
for n in (5, 2, 1):
    # kernel_time: the added work is a kernel of its own, and the gate names it
    REGS[f"reg-gpu{n}"] = (f"+{n}% GPU work per step", {"kernel_time_total", "step_time", "kernel_time"})
for n in (10, 20, 40):
    # host_gap: the added work sits at one place of the step (docs/ci.md, "Host time at one place")
    REGS[f"reg-host{n}"] = (f"+{n}% host time per step", {"step_time", "gpu_busy", "host_gap"})
log = open(log_path, "a")


def say(line=""):
    print(line, flush=True)
    log.write(line + "\n")
    log.flush()


scratch = tempfile.mkdtemp(prefix="gate-noise-junit.")


def short(name, width=48):
    return name if len(name) <= width else name[: width // 2 - 1] + "…" + name[-(width - width // 2):]


def failure_of(case):
    """(check, what changed) of one failed JUnit testcase."""
    name = case.get("name", "")
    f = case.find("failure")
    msg = f.get("message", "") if f is not None else ""
    text = (f.text or "") if f is not None else ""
    if name == "findings":
        rules = re.findall(r"new finding: \[\w+\] ([\w-]+)", text)
        return "findings", "new " + ",".join(rules) if rules else "new finding"
    metric = name.split(":", 1)[0]
    check = metric
    if metric == "kernel_time":
        m = re.match(r"kernel_time: \S+ \((.*)\) \(kernel time per step\)", msg, re.S)
        check = "kernel_time " + short(m.group(1) if m else name.split(":", 1)[-1].strip(), 40)
    m = re.search(r".*base (.+?), new (.+?) \((.+)\), threshold", msg, re.S)
    change = f"{m.group(1)} -> {m.group(2)} ({m.group(3)})" if m else short(msg, 80)
    return check, change


def listing(fails, kernels=3):
    """The failed checks of one gate on one line: every check, and the first `kernels` kernels."""
    ks = [f for f in fails if f[0].startswith("kernel_time ")]
    rest = [f for f in fails if not f[0].startswith("kernel_time ")]
    parts = [f"{c} {ch}" for c, ch in rest + ks[:kernels]]
    if len(ks) > kernels:
        parts.append(f"and {len(ks) - kernels} more kernels")
    return "; ".join(parts)


def gate(baselines, new):
    """cuscope gate -q: (exit status, [(check, change)] of the failed checks, error line)."""
    fd, junit = tempfile.mkstemp(suffix=".xml", dir=scratch)
    os.close(fd)
    # the temporary file is there: --force replaces it
    args = [cuscope, "gate", "-q", "--force", "--junit", junit] + (["--config", config] if config else [])
    for b in baselines:
        args += ["--baseline", b]
    args.append(new)
    p = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    fails = []
    if p.returncode == 1:
        try:
            fails = [failure_of(c) for c in ET.parse(junit).iter("testcase") if c.find("failure") is not None]
        except (ET.ParseError, OSError) as e:
            fails = [("junit", f"unreadable: {e}")]
    os.unlink(junit)
    err = " ".join(p.stderr.split())[:300]
    return p.returncode, fails, err


def values(trace):
    """The run's own numbers, from cuscope diff --format json TRACE TRACE (None when it cannot be read)."""
    p = subprocess.run([cuscope, "diff", "--format", "json", trace, trace], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]}
    d = json.loads(p.stdout)
    b = d["baselines"][0] if d.get("baselines") else d["base"]
    v = {m["metric"]: m["base"] for m in d["metrics"] if not m.get("kernel")}
    st = b.get("step_time") or {}
    v.update(step_ms=st.get("median_ns", 0) / 1e6, p10_ms=st.get("p10_ns", 0) / 1e6, p90_ms=st.get("p90_ns", 0) / 1e6,
             busy=b.get("gpu_busy"), steady=b.get("steady_steps", 0))
    return v


def pct(xs, q):
    """The q-quantile of xs, interpolated between the closest ranks."""
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def rel(new, base):
    return (new - base) / base * 100 if base else float("nan")


# the traces: PROGRAM/runI.db (clean) and PROGRAM/reg-NAME.db (regressions)
runs, regs = {}, {}
for prog in programs:
    d = os.path.join(tdir, prog)
    names = sorted(os.listdir(d)) if os.path.isdir(d) else []
    idx = sorted((int(m.group(1)), n) for n in names for m in [re.fullmatch(r"run(\d+)\.db", n)] if m)
    runs[prog] = [os.path.join(d, n) for _, n in idx]
    order = list(REGS)
    regs[prog] = sorted((os.path.join(d, n) for n in names if re.fullmatch(r"reg-[\w.-]+\.db", n)),
                        key=lambda t: (order.index(os.path.basename(t)[:-3]) if os.path.basename(t)[:-3] in order
                                       else len(order), t))
if not any(runs.values()):
    say(f"no traces under {tdir} (expected {', '.join(p + '/runI.db' for p in programs)})")
    sys.exit(2)


def label(path):
    return os.path.relpath(path, tdir)[: -len(".db")]


# every gate and every run's values, at once
pool = cf.ThreadPoolExecutor(max_workers=max(1, jobs))
val = {t: pool.submit(values, t) for prog in programs for t in runs[prog] + regs[prog]}
pairs, multi, reg_single, reg_multi = {}, {}, {}, {}
for prog in programs:
    rs = runs[prog]
    pairs[prog] = [(a, b, pool.submit(gate, [a], b)) for a in rs for b in rs if a != b]
    multi[prog] = [(b, pool.submit(gate, [a for a in rs if a != b], b)) for b in rs] if len(rs) >= 3 else []
    for r in regs[prog]:
        reg_single[r] = [(a, pool.submit(gate, [a], r)) for a in rs]
        reg_multi[r] = pool.submit(gate, rs, r) if len(rs) >= 2 else None
val = {t: f.result() for t, f in val.items()}

say("")
say(f"== runs (values of each trace: median step and its p10..p90 over the steady steps, GPU busy share) ==")
COUNTS = ["launches", "host_waits", "d2h_syncs", "pageable_copies", "device_allocs", "memcpy_htod_count",
          "memcpy_dtoh_count"]
for prog in programs:
    for t in runs[prog] + regs[prog]:
        v = val[t]
        if "error" in v:
            say(f"  {label(t):24s} cannot be read: {v['error']}")
            continue
        busy = f"{v['busy'] * 100:5.1f}%" if v.get("busy") is not None else "    -"
        say(f"  {label(t):24s} step {v['step_ms']:8.3f} ms ({v['p10_ms']:.3f}..{v['p90_ms']:.3f}), GPU busy {busy}, "
            f"GPU time/step {v.get('kernel_time_total', 0) / 1e6:.3f} ms, {v['steady']} steady steps, "
            + ", ".join(f"{k} {v.get(k, 0):g}" for k in COUNTS[:4]))
say("")
say("== spread over each program's runs (min..max; range in % of the mean or in points) ==")
for prog in programs:
    vs = [val[t] for t in runs[prog] if "error" not in val[t]]
    if len(vs) < 2:
        continue
    parts = []
    for key, unit, scale in (("step_ms", "ms", 1), ("kernel_time_total", "ms", 1e-6)):
        xs = [v.get(key, 0) * scale for v in vs]
        mean = sum(xs) / len(xs)
        parts.append(f"{'step' if key == 'step_ms' else 'GPU time/step'} {min(xs):.3f}..{max(xs):.3f} {unit} "
                     f"({(max(xs) - min(xs)) / mean * 100 if mean else 0:.2f}%)")
    bs = [v["busy"] * 100 for v in vs if v.get("busy") is not None]
    if bs:
        parts.append(f"GPU busy {min(bs):.1f}..{max(bs):.1f}% ({max(bs) - min(bs):.2f} pt)")
    for k in COUNTS:
        xs = [v.get(k, 0) for v in vs]
        parts.append(f"{k} {min(xs):g}..{max(xs):g}")
    say(f"  {prog}: " + "; ".join(parts))

exit_status = 0
false_by = {}  # (prog, form) -> {check: count}


def tally(prog, form, fails):
    d = false_by.setdefault((prog, form), {})
    for check in sorted({c.split(" ", 1)[0] for c, _ in fails}):
        d[check] = d.get(check, 0) + 1


say("")
say("== false failures: every ordered pair of runs (one baseline), and each run against the others ==")
errors = 0
inconclusive = 0  # exit 3: a change the host-speed probe explains (docs/ci.md): neither pass nor fail
for prog in programs:
    for a, b, f in pairs[prog]:
        rc, fails, err = f.result()
        if rc == 1:
            tally(prog, "pair", fails)
            say(f"  FAIL {prog}: {label(b)} against {label(a)}: "
                + listing(fails))
        elif rc == 3:
            inconclusive += 1
            say(f"  INCONCLUSIVE {prog}: {label(b)} against {label(a)}")
        elif rc != 0:
            errors += 1
            say(f"  ERROR {prog}: {label(b)} against {label(a)}: exit {rc}: {err}")
    for b, f in multi[prog]:
        rc, fails, err = f.result()
        if rc == 1:
            tally(prog, "multi", fails)
            say(f"  FAIL {prog}: {label(b)} against the {len(runs[prog]) - 1} other runs: "
                + listing(fails))
        elif rc == 3:
            inconclusive += 1
            say(f"  INCONCLUSIVE {prog}: {label(b)} against the other runs")
        elif rc != 0:
            errors += 1
            say(f"  ERROR {prog}: {label(b)} against the other runs: exit {rc}: {err}")
if not false_by and not errors:
    say("  none")

say("")
say("== regressions: each against every clean run of its program alone, and against all of them ==")
reg_rows = []
for prog in programs:
    clean = [val[t] for t in runs[prog] if "error" not in val[t]]
    for r in regs[prog]:
        name = os.path.basename(r)[: -len(".db")]
        what, right = REGS.get(name, (name, None))
        v = val[r]
        step = gpu = float("nan")
        if clean and "error" not in v:
            step = rel(v["step_ms"], sum(c["step_ms"] for c in clean) / len(clean))
            gpu = rel(v.get("kernel_time_total", 0), sum(c.get("kernel_time_total", 0) for c in clean) / len(clean))
        single_caught, single_by = 0, {}
        for a, f in reg_single[r]:
            rc, fails, err = f.result()
            checks = {c.split(" ", 1)[0] for c, _ in fails}
            for c in checks:
                single_by[c] = single_by.get(c, 0) + 1
            ok = rc == 1 and (right is None or checks & right)
            single_caught += bool(ok)
            if rc not in (0, 1):
                errors += 1
                say(f"  ERROR {label(r)} against {label(a)}: exit {rc}: {err}")
            else:
                say(f"  {label(r)} against {label(a)}: "
                    + (listing(fails) if fails else "passed")
                    + ("" if ok else "  <- NOT CAUGHT" + (" by " + "/".join(sorted(right)) if right else "")))
        multi_res, multi_checks = "-", []
        if reg_multi[r] is not None:
            rc, fails, err = reg_multi[r].result()
            multi_checks = sorted({c.split(" ", 1)[0] for c, _ in fails})
            if rc not in (0, 1):
                errors += 1
                multi_res = "error"
                say(f"  ERROR {label(r)} against all {len(runs[prog])} runs: exit {rc}: {err}")
            else:
                caught = rc == 1 and (right is None or set(multi_checks) & right)
                multi_res = "caught" if caught else ("failed, not by its metric" if rc == 1 else "MISSED")
                if not caught:
                    exit_status = 1
                say(f"  {label(r)} against all {len(runs[prog])} runs: "
                    + (listing(fails) if fails else "passed") + f"  -> {multi_res}")
        else:
            exit_status = 1
        reg_rows.append((name, what, prog, step, gpu, single_caught, len(reg_single[r]), single_by, multi_res,
                         multi_checks, right))
if not reg_rows:
    say("  no regression traces")

if false_by or errors:
    exit_status = 1
shutil.rmtree(scratch, ignore_errors=True)


def fmt_pct(x):
    return "     -" if x != x else f"{x:+5.1f}%"


say("")
say("== summary ==")
say(f" {'program':11s} {'runs':>4s} {'GPU busy':>8s}  {'median steps of the runs: p10..p90':34s} "
    f"{'pairs':>5s} {'false':>5s} {'N-1 base':>8s} {'false':>5s}  false failures by check")
for prog in programs:
    vs = [val[t] for t in runs[prog] if "error" not in val[t]]
    if not runs[prog]:
        say(f" {prog:11s} {0:4d}  (no runs)")
        continue
    steps = [v["step_ms"] for v in vs]
    busy = [v["busy"] for v in vs if v.get("busy") is not None]
    busy_s = f"{pct(busy, 0.5) * 100:7.1f}%" if busy else "       -"
    med = pct(steps, 0.5)
    spread = (f"{pct(steps, 0.1):.2f}..{pct(steps, 0.9):.2f} ms ({(pct(steps, 0.9) - pct(steps, 0.1)) / med * 100:.1f}%)"
              if steps and med else "-")
    npairs = len(pairs[prog])
    nfalse = sum(1 for _, _, f in pairs[prog] if f.result()[0] == 1)
    nmulti = len(multi[prog])
    mfalse = sum(1 for _, f in multi[prog] if f.result()[0] == 1)
    by = []
    for form, tag in (("pair", ""), ("multi", "N-1: ")):
        d = false_by.get((prog, form), {})
        if d:
            by.append(tag + ", ".join(f"{k} {n}" for k, n in sorted(d.items(), key=lambda x: -x[1])))
    say(f" {prog:11s} {len(runs[prog]):4d} {busy_s}  {spread:34s} {npairs:5d} {nfalse:5d} {nmulti:8d} {mfalse:5d}  "
        + ("; ".join(by) if by else "-"))
if errors:
    say(f" {errors} gate(s) could not compare their traces (exit 2): see ERROR above")
if inconclusive:
    say(f" {inconclusive} gate(s) of clean runs were inconclusive (exit 3: the host was slower): see above")
if reg_rows:
    say("")
    say(f" {'regression':50s} {'program':11s} {'step':>6s} {'GPU/step':>8s}  {'1 baseline':>10s}  all runs as baselines")
    for name, what, prog, step, gpu, sc, sn, sby, mres, mchecks, right in reg_rows:
        sby_s = ", ".join(f"{k} {n}" for k, n in sorted(sby.items(), key=lambda x: (-x[1], x[0])))
        say(f" {short(what + ' (' + name + ')', 50):50s} {prog:11s} {fmt_pct(step):>6s} {fmt_pct(gpu):>8s}  "
            f"{f'{sc}/{sn} caught':>10s}  {mres}")
        say(f"     failing: all runs as baselines: {', '.join(mchecks) or 'none'}; one baseline (gates): {sby_s or 'none'}")
say("")
say(f"result: {'OK' if exit_status == 0 else 'NOT OK'}: "
    f"{sum(sum(1 for _, _, f in pairs[p] if f.result()[0] == 1) for p in programs)} false failures over "
    f"{sum(len(pairs[p]) for p in programs)} pairs, "
    f"{sum(sum(1 for _, f in multi[p] if f.result()[0] == 1) for p in programs)} over "
    f"{sum(len(multi[p]) for p in programs)} N-1-baseline gates, "
    f"{sum(1 for row in reg_rows if row[8] == 'caught')} of {len(reg_rows)} regressions caught by their check "
    f"against all runs, {errors} errors, {inconclusive} inconclusive")
sys.exit(exit_status)
PY
}

# pack DIR: $OUT/gate-noise-traces.tar.xz of DIR (as gate-noise-traces/), in 15 MiB parts when larger
pack() {
	local tarball=$OUT/gate-noise-traces.tar.xz size
	rm -f "$tarball" "$tarball".part*
	if command -v xz >/dev/null 2>&1; then
		tar -C "$(dirname "$1")" -cf - "$(basename "$1")" | xz -T8 -6 >"$tarball" || { say "packing failed"; return 1; }
	else
		tar -C "$(dirname "$1")" -cf - "$(basename "$1")" |
			"$PY" -c 'import lzma, shutil, sys; shutil.copyfileobj(sys.stdin.buffer, lzma.open(sys.argv[1], "wb", preset=6))' \
				"$tarball" || { say "packing failed"; return 1; }
	fi
	size=$(stat -c %s "$tarball")
	if [ "$size" -gt $((15 * 1024 * 1024)) ]; then
		split -b 15M -d -a 1 "$tarball" "$tarball.part" && rm -f "$tarball"
		say "traces: $(find "$OUT" -maxdepth 1 -name "$(basename "$tarball").part*" | wc -l) parts of $tarball ($((size / 1048576)) MiB; cat them together)"
	else
		say "traces: $tarball ($((size / 1024)) KiB)"
	fi
}

if [ -n "$ANALYSE" ]; then
	[ -d "$ANALYSE" ] || die "no directory '$ANALYSE'"
	[ -d "$ANALYSE/gate-noise-traces" ] && ANALYSE=$ANALYSE/gate-noise-traces
	if [ -z "$C" ]; then
		for c in build-gpu/cuscope build/cuscope; do [ -x "$c" ] && C=$PWD/$c && break; done
	fi
	[ -n "$C" ] || die "no cuscope to gate with (build one, or give --cuscope PATH)"
	[ -x "$C" ] || die "no cuscope to gate with (build one, or give --cuscope PATH)"
	mkdir -p "$OUT" || exit 2
	: >"$log"
	say "gate noise study, analysis of $ANALYSE with $C"
	analyse "$ANALYSE"
	exit $?
fi

# the recording plan, in order: rounds 1-3, the regressions, rounds 4-N ("PROGRAM VARIANT" per line)
plan() {
	local i prog
	for i in $(seq "$FROM" "$RUNS"); do
		for prog in $PROGRAMS; do echo "$prog run$i"; done
		[ "$i" -eq 3 ] || { [ "$i" -eq "$RUNS" ] && [ "$RUNS" -lt 3 ]; } || continue
		for prog in $REGRESSIONS; do echo "${prog%/*} ${prog#*/}"; done
	done
}

# program_cmd PROGRAM VARIANT BARRIER_DIR: sets CMD to the command line of one recording
program_cmd() {
	case $1 in
	gpu-bound) CMD=("$PY" "$P/gate_probe.py" --steps "$STEPS") ;;
	host-bound) CMD=("$PY" "$P/host_bound.py" --steps "$STEPS") ;;
	two-ranks) CMD=("$PY" "$P/rank_job.py" --world 2 "$P/gate_probe.py" --steps "$STEPS" --start-barrier "$3") ;;
	esac
	case $2 in
	reg-item) CMD+=(--extra-sync) ;;
	reg-gpu*) CMD+=(--slower "${2#reg-gpu}") ;;
	reg-pageable) CMD+=(--pageable-copy) ;;
	reg-host*) CMD+=(--slower-host "${2#reg-host}") ;;
	esac
}

if [ "$DRY" = 1 ]; then
	W=/tmp/cuscope-gate-noise.XXXXXX # made by mktemp in the real run
	echo "bash tests/gpu/build.sh   # sourced: cuscope into build-gpu/ (C=build-gpu/cuscope)"
	plan | while read -r prog variant; do
		program_cmd "$prog" "$variant" "$W/barrier/$prog-$variant"
		printf '%s' "build-gpu/cuscope record --no-calibrate -q -o $W/gate-noise-traces/$prog/$variant.db --force -- "
		printf '%q ' "${CMD[@]}"
		echo
	done
	echo "# recording stops starting new runs after $BUDGET s; then $OUT/gate-noise-traces.tar.xz,"
	echo "# and the analysis: bash tests/gpu/gate_noise.sh --analyse $W/gate-noise-traces --cuscope build-gpu/cuscope"
	exit 0
fi

mkdir -p "$OUT" || exit 2
: >"$log"
W=$(mktemp -d /tmp/cuscope-gate-noise.XXXXXX) || exit 2
T=$W/gate-noise-traces
say "gate noise study: $RUNS runs of $PROGRAMS, $STEPS steady steps each; recording budget $BUDGET s"
# shellcheck source=tests/gpu/build.sh
. tests/gpu/build.sh
say "built $C in $SECONDS s"

start=$SECONDS
recorded=0
skipped=0
while read -r prog variant; do
	if [ $((SECONDS - start)) -ge "$BUDGET" ]; then
		skipped=$((skipped + 1))
		continue
	fi
	program_cmd "$prog" "$variant" "$W/barrier/$prog-$variant"
	mkdir -p "$T/$prog"
	t0=$SECONDS
	timeout -k 10 "$TIMEOUT" "$C" record --no-calibrate -q -o "$T/$prog/$variant.db" --force -- "${CMD[@]}" \
		</dev/null >"$T/$prog/$variant.out" 2>&1
	rc=$?
	if [ $rc -ne 0 ]; then
		say "record $prog/$variant failed (exit $rc after $((SECONDS - t0)) s): $(tail -n 3 "$T/$prog/$variant.out" | tr '\n' ' ')"
		rm -f "$T/$prog/$variant.db"
		continue
	fi
	recorded=$((recorded + 1))
	say "$prog/$variant: $((SECONDS - t0)) s: $(grep -E '^(rank[0-9]+: )?done ' "$T/$prog/$variant.out" | tr '\n' ' ')"
done < <(plan)
say "recorded $recorded traces in $((SECONDS - start)) s$([ "$skipped" -gt 0 ] && echo "; budget spent: $skipped not started")"
pack "$T"
say "scratch: $W"
[ "$NO_ANALYSE" = 1 ] && exit 0
analyse "$T"
