#!/usr/bin/env python3
"""run_pairs.py - measure and record the pairs of pairs.json (called by measure.sh on the GPU machine).

    run_pairs.py measure --out DIR [--budget SEC] [--start EPOCH] [--only SUBSTR[,SUBSTR...]]
                 [--record bad|both|none] [--rounds R] [--cuscope PATH] [--python PY] [--command TEXT]
    run_pairs.py merge A.json B.json ... -o OUT.json [--pool]  # one measured.json from several calls
    run_pairs.py install DIR [DIR...] [--limit-mb 12]    # results of measure.sh calls into the repository
    run_pairs.py table MEASURED.json                     # the markdown table of the README

measure: for every pair (in pairs.json order) whose name contains one of the --only substrings:
  - `ab` pairs: one `CMD ab --rounds R` run (R = --rounds, default 5, unless measure_args name the rounds)
    in one process; `separate` pairs: R rounds of one `CMD bad` and one `CMD fixed` process, bad first in
    odd rounds;
  - then `cuscope record -o DIR/traces/NAME.db --force -- CMD bad` (and NAME-fixed.db with --record both).
Before each pair, if the time since --start plus the pair's est_s would pass --budget, the pair and all
later ones are skipped (listed in the output and in measured.json, and as an ONLY= line that measures
them in a later call). Each program's output goes to DIR/logs/NAME-WHAT.log. Writes DIR/measured.json and
prints a table.

merge: later files win for a pair measured in several; with --pool the pair's rounds of every file are
taken together instead (the saving is then the median over all of them: calls on other days or machines
states count alike), keeping the traces the files name.

install: DIR holds what a measure.sh call left in its OUT (measured.json, traces.tar.gz or its .partNN
pieces). The measured.json files are merged into samples/savings/measured.json (a pair measured twice: the
later DIR wins) and the traces copied into tests/data/savings/: every NAME.db, and the NAME-fixed.db too
when all of them together stay within --limit-mb (else none of the fixed ones).
"""
import argparse
import datetime
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ROUND_RE = re.compile(r"^round=(\d+) bad_ms=([\d.]+) fixed_ms=([\d.]+)")
DONE_RE = re.compile(r"^done variant=(\w+) step_ms=([\d.]+)")


def load_pairs():
    with open(os.path.join(HERE, "pairs.json")) as f:
        return json.load(f)["pairs"]


def device_name():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip().splitlines()
        name, driver = [s.strip() for s in out[0].split(",")]
        return name, driver
    except Exception:  # noqa: BLE001 - no nvidia-smi: say so in the results
        return "unknown", "unknown"


def run(cmd, log, timeout):
    """Run cmd from the repository root; its output (stdout and stderr) goes to log. Returns (rc, output, s).

    The program runs in its own process group, which is ended as a whole (SIGTERM, then SIGKILL) when it
    outlives `timeout`: a recorded program must not outlive its `cuscope record`."""
    t0 = time.time()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                break
            try:
                p.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        out = (p.communicate()[0] or "") + f"\n[run_pairs] timed out after {timeout:.0f} s\n"
        rc = 124
    with open(log, "w") as f:
        f.write("$ " + " ".join(cmd) + "\n" + out + f"\n[run_pairs] rc={rc} seconds={time.time() - t0:.1f}\n")
    return rc, out, time.time() - t0


def with_python(cmd, python):
    return [python] + cmd[1:] if cmd and cmd[0] == "python3" else list(cmd)


def summarize(rounds):
    sav = [(r["bad_ms"] - r["fixed_ms"]) / r["bad_ms"] for r in rounds]
    med = statistics.median
    return {"bad_ms": round(med([r["bad_ms"] for r in rounds]), 4),
            "fixed_ms": round(med([r["fixed_ms"] for r in rounds]), 4),
            "saving": round(med(sav), 4), "spread": round(max(sav) - min(sav), 4)}


def timeout_of(p, a):
    """A program's time limit: its timeout_s (default 150 s), but no more than 20 s past the budget."""
    t = p.get("timeout_s", 150)
    if a.budget:
        t = min(t, max(30, a.budget - (time.time() - a.start) + 20))
    return t


def measure_pair(p, a, logs):
    """Returns the rounds [{bad_ms, fixed_ms}] and an error text (None when all went well)."""
    if not p["separate"]:
        cmd = with_python(p["cmd"], a.python) + ["ab"] + p["measure_args"]
        if "--rounds" not in p["measure_args"]:
            cmd += ["--rounds", str(a.rounds)]
        rc, out, _ = run(cmd, os.path.join(logs, p["name"] + "-ab.log"), timeout_of(p, a))
        rounds = [{"bad_ms": float(m.group(2)), "fixed_ms": float(m.group(3))}
                  for m in map(ROUND_RE.match, out.splitlines()) if m]
        if rc != 0 or not rounds:
            return rounds, f"ab exited {rc} with {len(rounds)} rounds"
        return rounds, None
    rounds = []
    for r in range(1, a.rounds + 1):
        ms = {}
        for variant in (("bad", "fixed") if r % 2 else ("fixed", "bad")):
            cmd = with_python(p["cmd"], a.python) + [variant] + p["measure_args"]
            rc, out, _ = run(cmd, os.path.join(logs, f"{p['name']}-{variant}{r}.log"), timeout_of(p, a))
            m = [m for m in map(DONE_RE.match, out.splitlines()) if m]
            if rc != 0 or not m:
                return rounds, f"{variant} run {r} exited {rc}"
            ms[variant] = float(m[-1].group(2))
        rounds.append({"bad_ms": ms["bad"], "fixed_ms": ms["fixed"]})
    return rounds, None


def record(p, a, variant, traces, logs):
    name = p["name"] + ("" if variant == "bad" else "-fixed")
    db = os.path.join(traces, name + ".db")
    cmd = [a.cuscope, "record", "-o", db, "--force", "--"] + with_python(p["cmd"], a.python) + [variant]
    cmd += p["record_args"]
    rc, out, _ = run(cmd, os.path.join(logs, name + "-record.log"), timeout_of(p, a))
    if rc != 0 or not os.path.exists(db):
        return None, f"record {variant} exited {rc}"
    return {"file": name + ".db", "bytes": os.path.getsize(db), "args": p["record_args"]}, None


def table(results, out=sys.stdout):
    out.write("| pair | rule | bad ms | fixed ms | measured saving | rounds | spread |\n")
    out.write("|---|---|---:|---:|---:|---:|---:|\n")
    for r in results:
        rule = r["rule"] if r["rule"] != "none" else f"none ({r.get('pattern_rule')})"
        if not r.get("rounds"):
            out.write(f"| {r['name']} | {rule} | - | - | {r.get('error') or 'not measured'} | 0 | - |\n")
            continue
        sep = " (separate)" if r.get("separate") else ""
        out.write(f"| {r['name']} | {rule} | {r['bad_ms']:.3f} | {r['fixed_ms']:.3f} | "
                  f"{100 * r['saving']:.1f}%{sep} | {len(r['rounds'])} | {100 * r['spread']:.1f} pts |\n")


def cmd_measure(a):
    a.start = start = a.start or time.time()
    pairs = load_pairs()
    only = [s for s in (a.only or "").split(",") if s]
    if only:
        pairs = [p for p in pairs if any(s in p["name"] for s in only)]
    logs, traces = os.path.join(a.out, "logs"), os.path.join(a.out, "traces")
    os.makedirs(logs, exist_ok=True)
    os.makedirs(traces, exist_ok=True)
    name, driver = device_name()
    doc = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "device": name, "driver": driver, "command": a.command or " ".join(sys.argv),
           "pairs": [], "skipped": []}
    skipping = False
    for p in pairs:
        elapsed = time.time() - start
        if skipping or (a.budget and elapsed + p.get("est_s", 25) > a.budget):
            skipping = True
            doc["skipped"].append(p["name"])
            continue
        t0 = time.time()
        r = {k: p[k] for k in ("name", "language", "rule", "separate", "description")}
        if p["rule"] == "none":
            r["pattern_rule"] = p.get("pattern_rule")
        r["method"] = "separate processes" if p["separate"] else "ab in one process"
        r["device"] = name
        rounds, err = measure_pair(p, a, logs)
        r["rounds"] = rounds
        if rounds:
            r.update(summarize(rounds))
        errors = [err] if err else []
        for variant in {"bad": ["bad"], "both": ["bad", "fixed"], "none": []}[a.record]:
            tr, err = record(p, a, variant, traces, logs)
            r["trace" if variant == "bad" else "trace_fixed"] = tr
            if err:
                errors.append(err)
        if errors:
            r["error"] = "; ".join(errors)
        r["seconds"] = round(time.time() - t0, 1)
        doc["pairs"].append(r)
        s = f"{100 * r['saving']:6.1f}%" if rounds else "   -   "
        print(f"[{time.time() - start:6.0f}s] {p['name']:22s} {s} {r['seconds']:6.1f}s"
              + (f"  ERROR {r['error']}" if errors else ""), flush=True)
        with open(os.path.join(a.out, "measured.json"), "w") as f:  # after each pair: a timeout loses nothing
            json.dump(doc, f, indent=1)
    with open(os.path.join(a.out, "measured.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print(f"\ndevice: {name} (driver {driver}); {len(doc['pairs'])} pairs in {time.time() - start:.0f} s")
    if doc["skipped"]:
        print("skipped (budget): " + " ".join(doc["skipped"]))
        print("to measure them: ONLY=" + ",".join(doc["skipped"]))
    table(doc["pairs"])
    return 1 if any(r.get("error") for r in doc["pairs"]) else 0


def cmd_merge(a):
    """Later files win for a pair measured twice (with --pool: its rounds are pooled); the pair order is
    pairs.json's."""
    by_name, runs, calls, about = {}, [], {}, ""
    for path in a.files:
        with open(path) as f:
            d = json.load(f)
        about = about or d.get("about", "")
        runs.extend(d["runs"] if "runs" in d else [{k: d.get(k) for k in ("date", "device", "driver",
                                                                           "command")}])
        for r in d["pairs"]:
            old = by_name.get(r["name"])
            if getattr(a, "pool", False) and old and old.get("rounds") and r.get("rounds"):
                r = dict(r, rounds=old["rounds"] + r["rounds"])
                r.update(summarize(r["rounds"]))
                calls[r["name"]] = calls.get(r["name"], 1) + 1
                r["method"] = f"{r['method'].split(' (')[0]} ({calls[r['name']]} calls pooled)"
                for k in ("trace", "trace_fixed"):
                    if not r.get(k):
                        r[k] = old.get(k)
            by_name[r["name"]] = r
    order = [p["name"] for p in load_pairs()]
    pairs = [by_name[n] for n in order if n in by_name]
    doc = {"about": a.about or about, "runs": runs, "pairs": pairs,
           "missing": [n for n in order if n not in by_name]}
    with open(a.output, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return 0


def cmd_install(a):
    import glob
    import shutil
    import tarfile
    import tempfile
    dest = os.path.join(ROOT, "tests", "data", "savings")
    tmp = tempfile.mkdtemp(prefix="savings-")
    measured, traces = [], {}
    for d in a.dirs:
        measured.append(os.path.join(d, "measured.json"))
        parts = sorted(glob.glob(os.path.join(d, "traces.tar.gz.part*")))
        tar = os.path.join(d, "traces.tar.gz")
        if parts:
            tar = os.path.join(tmp, "joined.tar.gz")
            with open(tar, "wb") as out:
                for part in parts:
                    with open(part, "rb") as f:
                        shutil.copyfileobj(f, out)
        if os.path.exists(tar):
            sub = os.path.join(tmp, str(len(measured)))
            with tarfile.open(tar) as t:
                t.extractall(sub, filter="data")
            for db in glob.glob(os.path.join(sub, "traces", "*.db")):
                traces[os.path.basename(db)] = db  # a later DIR wins
    merged = os.path.join(tmp, "merged.json")
    cmd_merge(argparse.Namespace(files=measured, output=merged, about=""))
    with open(merged) as f:
        doc = json.load(f)
    names = {r["name"] for r in doc["pairs"]}
    bad = {n: traces[n + ".db"] for n in names if n + ".db" in traces}
    fixed = {n: traces[n + "-fixed.db"] for n in names if n + "-fixed.db" in traces}
    total = sum(os.path.getsize(p) for p in list(bad.values()) + list(fixed.values()))
    keep_fixed = total <= a.limit_mb * 1024 * 1024
    os.makedirs(dest, exist_ok=True)
    for r in doc["pairs"]:
        n = r["name"]
        r["trace"] = f"tests/data/savings/{n}.db" if n in bad else None
        r["trace_fixed"] = f"tests/data/savings/{n}-fixed.db" if n in fixed and keep_fixed else None
        if n in bad:
            shutil.copyfile(bad[n], os.path.join(dest, n + ".db"))
        if r["trace_fixed"]:
            shutil.copyfile(fixed[n], os.path.join(dest, n + "-fixed.db"))
    doc["about"] = ("Measured savings of the pairs of samples/savings (README.md there): per pair the per-round "
                    "step times of bad and fixed (ms per step, each the wall time of a block of steps / its "
                    "steps), the median over the rounds of (bad - fixed) / bad as `saving`, the largest minus "
                    "the smallest per-round saving as `spread`, and the device. `runs`: the measure.sh calls "
                    "that produced them (date, device, command). Traces of the bad variants: `trace`.")
    if fixed and not keep_fixed:
        doc["fixed_traces"] = (f"not kept: with them the traces would take {total / 2**20:.1f} MiB, over "
                               f"{a.limit_mb} MiB")
    out = os.path.join(HERE, "measured.json")
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    shutil.rmtree(tmp)
    print(f"{out}: {len(doc['pairs'])} pairs; {len(bad)} bad traces"
          f"{f', {len(fixed)} fixed traces' if keep_fixed else ''} in {dest}")
    if doc["missing"]:
        print("not measured: " + " ".join(doc["missing"]))
    table(doc["pairs"])
    return 0


def cmd_table(a):
    with open(a.file) as f:
        table(json.load(f)["pairs"])
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--out", required=True)
    m.add_argument("--budget", type=float, default=0)
    m.add_argument("--start", type=float, default=0, help="epoch seconds the budget counts from")
    m.add_argument("--only", default=os.environ.get("ONLY", ""))
    m.add_argument("--record", choices=["bad", "both", "none"], default="both")
    m.add_argument("--rounds", type=int, default=5, help="A/B rounds per pair (default %(default)s)")
    m.add_argument("--cuscope", default=os.environ.get("CUSCOPE", os.path.join(ROOT, "build", "cuscope")))
    m.add_argument("--python", default=os.environ.get("PYTHON", "python3"))
    m.add_argument("--command", default="")
    g = sub.add_parser("merge")
    g.add_argument("files", nargs="+")
    g.add_argument("-o", "--output", required=True)
    g.add_argument("--about", default="")
    g.add_argument("--pool", action="store_true", help="pool the rounds of a pair measured in several files")
    i = sub.add_parser("install")
    i.add_argument("dirs", nargs="+")
    i.add_argument("--limit-mb", type=float, default=12)
    t = sub.add_parser("table")
    t.add_argument("file")
    a = ap.parse_args()
    if a.cmd == "measure":
        a.out = os.path.abspath(a.out)
    return {"measure": cmd_measure, "merge": cmd_merge, "install": cmd_install, "table": cmd_table}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
