#!/usr/bin/env python3
"""test_corpus_score.py - checks of tests/gpu/corpus_score.py on fabricated reports (no GPU, no trace).

Run by meson (`corpus-score`), or by hand: python3 tests/unit/test_corpus_score.py. Exit 0 when every check
passes; each failure is printed.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCORER = os.path.join(ROOT, "tests", "gpu", "corpus_score.py")
RULES = ["d2h-sync", "empty-cache-in-loop", "memory-ceiling-thrash", "launch-starvation", "cuda-core-scan"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL {what}")


def run(*args):
    return subprocess.run([sys.executable, SCORER, *args], capture_output=True, text=True, timeout=60)


def report(findings, rules=RULES):
    return {"version": 1, "rules": rules, "steps": {"count": 45},
            "findings": [{"rule": r, "severity": sev} for r, sev in findings],
            "summary": {"findings": len(findings)}}


def program(name, must, must_not):
    return {"name": name, "lang": "test", "cmd": ["{python}", f"{name}.py"], "must": must, "must_not": must_not,
            "trap": "fabricated", "budget_s": 5}


# The real labels: valid, at least 30 programs, every rule required somewhere and forbidden somewhere.
r = run("check")
check(r.returncode == 0, f"check of samples/corpus/labels.json: {r.stdout.strip()} {r.stderr.strip()}")
with open(os.path.join(ROOT, "samples", "corpus", "labels.json")) as f:
    real = json.load(f)
check(len(real["programs"]) >= 30, "the corpus has at least 30 programs")
for rule in RULES:
    check(any(rule in p["must"] for p in real["programs"]), f"some program must find {rule}")
    check(any(rule in p["must_not"] for p in real["programs"]), f"some program must not find {rule}")

with tempfile.TemporaryDirectory() as tmp:
    d = os.path.join(tmp, "traces")
    os.mkdir(d)
    labels = os.path.join(tmp, "labels.json")
    progs = [
        program("a", ["d2h-sync"], ["launch-starvation"]),            # found, clean
        program("b", [], ["d2h-sync", "launch-starvation"]),          # false d2h-sync, unjudged scan
        program("c", ["cuda-core-scan"], ["d2h-sync"]),               # scan did not run: not judged; clean
        program("d", ["empty-cache-in-loop"], []),                    # skipped (status 77)
        program("e", ["launch-starvation"], ["d2h-sync"]),            # from a .db via a fake cuscope: found
        program("f", ["memory-ceiling-thrash"], ["d2h-sync"]),        # missed
        program("g", ["d2h-sync"], []),                               # nothing recorded
    ]
    with open(labels, "w") as f:
        json.dump({"version": 1, "rules": RULES, "programs": progs}, f)

    def put(name, rep):
        with open(os.path.join(d, name + ".json"), "w") as f:
            json.dump(rep, f)

    put("a", report([("d2h-sync", "info")]))
    put("b", report([("d2h-sync", "warning"), ("cuda-core-scan", "error")]))
    put("c", report([], rules=["d2h-sync"]))
    with open(os.path.join(d, "d.status"), "w") as f:
        f.write("rc=77 secs=1\n")
    put("f", report([]))
    with open(os.path.join(d, "f.status"), "w") as f:
        f.write("rc=0 secs=3\n")
    with open(os.path.join(d, "e.db"), "w") as f:
        f.write("not a real trace\n")
    fake = os.path.join(tmp, "fake-cuscope")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\n# fake-cuscope report --format json FILE\n")
        f.write(f"cat <<'EOF'\n{json.dumps(report([('launch-starvation', 'error')]))}\nEOF\n")
    os.chmod(fake, 0o755)

    out_json, out_md = os.path.join(tmp, "score.json"), os.path.join(tmp, "score.md")
    r = run("score", d, "--labels", labels, "--cuscope", fake, "--json", out_json, "--markdown", out_md)
    check(r.returncode == 0, f"score exits 0 (got {r.returncode}: {r.stderr.strip()})")
    with open(out_json) as f:
        res = json.load(f)
    by_rule = {c["rule"]: c for c in res["rules"]}
    by_prog = {p["name"]: p for p in res["programs"]}
    d2h, ls, scan, mem = (by_rule[x] for x in ("d2h-sync", "launch-starvation", "cuda-core-scan",
                                                 "memory-ceiling-thrash"))
    check((d2h["found"], d2h["missed"], d2h["false"], d2h["clean"]) == (1, 0, 1, 3),
          f"d2h-sync counts found/missed/false/clean = 1/0/1/3, got {d2h}")
    check((ls["found"], ls["false"], ls["clean"]) == (1, 0, 2), f"launch-starvation counts, got {ls}")
    check(scan["positives"] == 0 and scan["unjudged_found"] == 1, f"cuda-core-scan not run in c, unjudged in b: {scan}")
    check(mem["missed"] == 1 and mem["recall"] == 0.0, f"memory-ceiling-thrash missed in f: {mem}")
    check(d2h["precision"] == 0.5 and d2h["recall"] == 1.0, f"d2h-sync precision/recall: {d2h}")
    check(by_prog["a"]["pass"] and not by_prog["b"]["pass"] and by_prog["c"]["pass"], "pass/fail of a, b, c")
    check(by_prog["c"]["not_run"] == ["cuda-core-scan"], "c: cuda-core-scan reported as not run")
    check(by_prog["d"]["state"] == "skipped" and "pass" not in by_prog["d"], "d is skipped, not scored")
    check(by_prog["e"]["state"] == "scored" and by_prog["e"]["found"] == ["launch-starvation"], "e scored from its .db")
    check(by_prog["g"]["state"] == "not recorded", "g not recorded")
    with open(out_md) as f:
        md = f.read()
    check("| d2h-sync | 1 | 1 | 0 | 4 | 1 | 3 |" in md, "markdown per-rule row of d2h-sync")
    check("d2h-sync false in: b" in md and "not recorded (1): g" in md, "markdown lists the errors and the unrecorded")
    check("5 of 7 programs scored, 3 passed, 2 failed" in r.stdout,
          f"summary line: {r.stdout.splitlines()[:1]}")

    # --min-severity warning: a's info finding no longer counts, so a misses d2h-sync
    r = run("score", d, "--labels", labels, "--reports-only", "--min-severity", "warning", "--json", out_json)
    with open(out_json) as f:
        res = json.load(f)
    by_prog = {p["name"]: p for p in res["programs"]}
    check(by_prog["a"]["missed"] == ["d2h-sync"], "--min-severity warning ignores info findings")
    check(by_prog["e"]["state"] == "not recorded", "--reports-only does not report traces")

    r = run("score", d, "--labels", labels, "--reports-only", "--strict")
    check(r.returncode == 1, f"--strict exits 1 when a program failed (got {r.returncode})")
    r = run("score", d, "--labels", labels, "--reports-only", "--only", "a,c", "--strict")
    check(r.returncode == 0, f"--only a,c --strict exits 0 (got {r.returncode})")
    r = run("score", d, "--labels", labels, "--only", "nope")
    check(r.returncode == 2, "an unknown --only name is a usage error")
    r = run("score", os.path.join(tmp, "empty-does-not-exist"), "--labels", labels)
    check(r.returncode == 2, "a missing directory is an error")

    r = run("list", "--labels", labels, "--python", "/usr/bin/python3", "--bin", "/x/bin", "--only", "b")
    check(r.stdout == "b\t5\t/usr/bin/python3\tb.py\n", f"list output: {r.stdout!r}")

    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        json.dump({"version": 1, "rules": RULES, "programs": [
            program("x", ["d2h-sync"], ["d2h-sync"]), program("x", ["no-such-rule"], [])]}, f)
    r = run("check", "--labels", bad)
    check(r.returncode == 1 and "both must and must_not" in r.stdout and "name used twice" in r.stdout
          and "unknown rule" in r.stdout, f"check finds the problems: {r.stdout}")

# A must_not rule found only as info near its threshold is "near": neither false nor clean; a warning, or an
# info that is not near its threshold, stays false.
with tempfile.TemporaryDirectory() as tmp:
    d = os.path.join(tmp, "traces")
    os.mkdir(d)
    labels = os.path.join(tmp, "labels.json")
    with open(labels, "w") as f:
        json.dump({"version": 1, "rules": RULES, "programs": [
            program("n1", [], ["d2h-sync"]), program("n2", [], ["d2h-sync"]), program("n3", [], ["d2h-sync"])]}, f)
    for name, sev, near in (("n1", "info", True), ("n2", "warning", True), ("n3", "info", False)):
        rep = report([("d2h-sync", sev)])
        rep["findings"][0]["evidence"] = {"near_threshold": near}
        with open(os.path.join(d, name + ".json"), "w") as f:
            json.dump(rep, f)
    r = run("score", d, "--labels", labels, "--json", os.path.join(tmp, "s.json"))
    with open(os.path.join(tmp, "s.json")) as f:
        out = json.load(f)
    by_prog = {x["name"]: x for x in out["programs"]}
    d2h = next(c for c in out["rules"] if c["rule"] == "d2h-sync")
    check(by_prog["n1"]["pass"] and by_prog["n1"]["near"] == ["d2h-sync"], f"n1 near, passes: {by_prog['n1']}")
    check(not by_prog["n2"]["pass"] and not by_prog["n3"]["pass"], "a warning or a clear info stays false")
    check((d2h["false"], d2h["clean"]) == (2, 0), f"near counts neither false nor clean: {d2h}")
    check("near the threshold: d2h-sync" in r.stdout, "the table's note names the near rule")

print(f"{'FAILED' if failures else 'OK'}: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
