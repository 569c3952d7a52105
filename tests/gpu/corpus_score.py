#!/usr/bin/env python3
"""corpus_score.py - score cuscope's findings on the accuracy corpus against its labels (standard library only).

    corpus_score.py list [--only NAMES] [--python PY] [--bin DIR] [--labels FILE]
        one line per program: NAME, budget seconds, then the command's arguments, separated by tabs
        (tests/gpu/corpus.sh reads it)
    corpus_score.py check [--labels FILE]
        check the labels file: unique names, known rules, no rule both required and forbidden, sources exist
    corpus_score.py score DIR [--only NAMES] [--labels FILE] [--cuscope PATH] [--reports-only]
                      [--min-severity info|warning|error] [--markdown FILE] [--json FILE] [--save-reports DIR2]
                      [--strict]
        score the recorded corpus in DIR (works offline, on traces recorded earlier):
          DIR/NAME.db      the trace: `cuscope report --format json` is run on it now (with --cuscope, default
                           build/cuscope, else cuscope on PATH), so that one recording can be scored again by
                           every later build of the analyzers;
          DIR/NAME.json    a saved report, used when there is no trace or with --reports-only;
          DIR/NAME.status  optional, written by corpus.sh: `rc=N secs=S`; rc 77 means the program skipped itself.
        DIR may be read-only: nothing is written there unless --markdown/--json/--save-reports point there.

Scoring (labels: samples/corpus/labels.json). A rule is "found" in a program when the report has at least one
finding of that rule of severity --min-severity or worse (default info: any finding). Per program and rule:
  must      + found -> found (true positive)     must      + not found -> missed (false negative)
  must_not  + found -> false (false positive)    must_not  + not found -> clean (true negative)
  neither           -> not judged (counted apart as "unjudged findings" when found)
A must_not rule whose only findings are info findings that say they are near their threshold (evidence
near_threshold: the 95% interval of the cost holds the threshold, so another run could fall either side) is
"near", not false: listed in the note, counted neither false nor clean.
A rule that did not run in the report (its `rules` list) is not judged either. A program passes when it has
no missed and no false rule. Programs without a report (skipped, not recorded, report failed) are listed and
left out of the counts.

Exit status: 0 when scored, 1 with --strict when a scored program failed, 2 on usage errors, an unreadable
labels file, or when no program could be scored.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_LABELS = os.path.join(ROOT, "samples", "corpus", "labels.json")
SEVERITY = {"info": 0, "warning": 1, "error": 2}
SKIP_RC = 77


def die(msg):
    print(f"corpus_score: {msg}", file=sys.stderr)
    sys.exit(2)


def load_labels(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        die(f"cannot read labels {path}: {e}")
    if not isinstance(doc, dict) or not isinstance(doc.get("programs"), list) or not isinstance(doc.get("rules"), list):
        die(f"{path}: expected an object with 'rules' and 'programs' lists")
    return doc


def check_labels(doc, root=ROOT):
    """Problems of a labels document, one string each (empty: fine)."""
    problems = []
    rules = set(doc["rules"])
    seen = set()
    for i, p in enumerate(doc["programs"]):
        name = p.get("name") if isinstance(p, dict) else None
        if not isinstance(name, str) or not name or any(c in name for c in "/\t \n"):
            problems.append(f"program {i}: bad or missing name")
            continue
        if name in seen:
            problems.append(f"{name}: name used twice")
        seen.add(name)
        for key in ("cmd", "must", "must_not"):
            if not isinstance(p.get(key), list) or not all(isinstance(x, str) for x in p.get(key, [])):
                problems.append(f"{name}: '{key}' must be a list of strings")
        if not p.get("cmd"):
            problems.append(f"{name}: empty cmd")
        for r in p.get("must", []) + p.get("must_not", []):
            if r not in rules:
                problems.append(f"{name}: unknown rule {r}")
        both = set(p.get("must", [])) & set(p.get("must_not", []))
        if both:
            problems.append(f"{name}: both must and must_not: {', '.join(sorted(both))}")
        if not isinstance(p.get("trap"), str) or not p.get("trap"):
            problems.append(f"{name}: no trap description")
        if not isinstance(p.get("budget_s", 0), (int, float)) or p.get("budget_s", 0) <= 0:
            problems.append(f"{name}: budget_s must be a positive number")
        src = p.get("source")
        if src and not os.path.exists(os.path.join(root, src)):
            problems.append(f"{name}: source {src} does not exist")
    return problems


def select(doc, only):
    progs = doc["programs"]
    if not only:
        return progs
    want = [w for w in only.split(",") if w]
    unknown = [w for w in want if not any(p["name"] == w for p in progs)]
    if unknown:
        die(f"--only: unknown program(s): {', '.join(unknown)}")
    return [p for p in progs if p["name"] in want]


def expand(cmd, python, bindir):
    return [a.replace("{python}", python).replace("{bin}", bindir) for a in cmd]


# ---- reports ----

def read_status(path):
    """{'rc': int, 'secs': str} from a NAME.status file, or {}."""
    out = {}
    try:
        with open(path) as f:
            for tok in f.read().split():
                k, _, v = tok.partition("=")
                out[k] = v
    except OSError:
        return {}
    try:
        out["rc"] = int(out["rc"])
    except (KeyError, ValueError):
        out.pop("rc", None)
    return out


def find_cuscope(given):
    if given:
        return given
    built = os.path.join(ROOT, "build", "cuscope")
    if os.access(built, os.X_OK):
        return built
    return shutil.which("cuscope") or "cuscope"


def get_report(name, d, cuscope, reports_only):
    """(report dict or None, where it came from or why there is none)."""
    db, js = os.path.join(d, name + ".db"), os.path.join(d, name + ".json")
    if os.path.exists(db) and not reports_only:
        try:
            r = subprocess.run([cuscope, "report", "--format", "json", db], capture_output=True, text=True,
                               timeout=600)
        except (OSError, subprocess.TimeoutExpired) as e:
            return None, f"cuscope report could not run: {e}"
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
            return None, f"cuscope report exited {r.returncode}: {last}"
        try:
            return json.loads(r.stdout), "trace"
        except ValueError as e:
            return None, f"cuscope report printed no JSON: {e}"
    if os.path.exists(js):
        try:
            with open(js) as f:
                return json.load(f), "saved report"
        except (OSError, ValueError) as e:
            return None, f"unreadable report {js}: {e}"
    return None, "not recorded"


def found_rules(report, min_sev):
    found = {}
    for f in report.get("findings", []) or []:
        if not isinstance(f, dict):
            continue
        if SEVERITY.get(f.get("severity"), 0) < SEVERITY[min_sev]:
            continue
        rule = f.get("rule")
        if isinstance(rule, str):
            found.setdefault(rule, []).append(f)
    return found


# ---- scoring ----

def near_only(findings):
    """True when every finding is an info finding near its threshold."""
    return bool(findings) and all(
        f.get("severity") == "info" and (f.get("evidence") or {}).get("near_threshold") is True
        for f in findings)


def score_program(p, report, min_sev):
    ran = report.get("rules")
    ran = set(ran) if isinstance(ran, list) else None
    found = found_rules(report, min_sev)
    res = {"found": [], "missed": [], "false": [], "clean": [], "not_run": [], "unjudged_found": [], "near": []}
    for r in p["must"]:
        if ran is not None and r not in ran:
            res["not_run"].append(r)
        else:
            res["found" if r in found else "missed"].append(r)
    for r in p["must_not"]:
        if ran is not None and r not in ran:
            res["not_run"].append(r)
        else:
            res["near" if near_only(found.get(r)) else "false" if r in found else "clean"].append(r)
    judged = set(p["must"]) | set(p["must_not"])
    res["unjudged_found"] = sorted(r for r in found if r not in judged)
    res["pass"] = not res["missed"] and not res["false"]
    res["steps"] = (report.get("steps") or {}).get("count")
    res["findings"] = {r: len(v) for r, v in sorted(found.items())}
    return res


def confusion(rules, results):
    rows = []
    for rule in rules:
        c = {"rule": rule, "positives": 0, "found": 0, "missed": 0, "negatives": 0, "false": 0, "clean": 0,
             "unjudged_found": 0}
        for r in results:
            s = r.get("score")
            if not s:
                continue
            c["found"] += rule in s["found"]
            c["missed"] += rule in s["missed"]
            c["false"] += rule in s["false"]
            c["clean"] += rule in s["clean"]
            c["unjudged_found"] += rule in s["unjudged_found"]
        c["positives"] = c["found"] + c["missed"]
        c["negatives"] = c["false"] + c["clean"]
        c["recall"] = c["found"] / c["positives"] if c["positives"] else None
        c["precision"] = c["found"] / (c["found"] + c["false"]) if c["found"] + c["false"] else None
        rows.append(c)
    return rows


def pct(x):
    return "-" if x is None else f"{100 * x:.0f}%"


def names(xs):
    return ", ".join(xs) if xs else "-"


def render(rules, results, min_sev, md):
    """The tables as text (md=False) or markdown (md=True)."""
    scored = [r for r in results if r.get("score")]
    passed = sum(r["score"]["pass"] for r in scored)
    conf = confusion(rules, results)
    head = ["rule", "must", "found", "missed", "must not", "false", "clean", "recall", "precision",
            "unjudged found"]
    body = [[c["rule"], c["positives"], c["found"], c["missed"], c["negatives"], c["false"], c["clean"],
             pct(c["recall"]), pct(c["precision"]), c["unjudged_found"]] for c in conf]
    tot = {k: sum(c[k] for c in conf) for k in ("positives", "found", "missed", "negatives", "false", "clean",
                                                   "unjudged_found")}
    body.append(["all", tot["positives"], tot["found"], tot["missed"], tot["negatives"], tot["false"],
                 tot["clean"], pct(tot["found"] / tot["positives"] if tot["positives"] else None),
                 pct(tot["found"] / (tot["found"] + tot["false"]) if tot["found"] + tot["false"] else None),
                 tot["unjudged_found"]])
    phead = ["program", "result", "must", "found", "missed", "false", "unjudged found", "note"]
    pbody = []
    unrecorded = [r["program"]["name"] for r in results if r["state"] == "not recorded" and not r.get("note")]
    for r in results:
        p, s = r["program"], r.get("score")
        if r["program"]["name"] in unrecorded:
            continue
        if s:
            res = "pass" if s["pass"] else "FAIL"
            note = r.get("note", "")
            if s.get("near"):
                note = "; ".join(x for x in (note, "near the threshold: " + ", ".join(s["near"])) if x)
            row = [p["name"], res, names(p["must"]), names(s["found"]), names(s["missed"]), names(s["false"]),
                   names(s["unjudged_found"]), note]
        else:
            row = [p["name"], r["state"], names(p["must"]), "", "", "", "", r.get("note", "")]
        pbody.append(row)
    lines = []
    summary = (f"{len(scored)} of {len(results)} programs scored, {passed} passed, {len(scored) - passed} failed; "
               f"findings of severity {min_sev} or worse count")
    errors = []
    for c in conf:
        miss = [r["program"]["name"] for r in scored if c["rule"] in r["score"]["missed"]]
        false = [r["program"]["name"] for r in scored if c["rule"] in r["score"]["false"]]
        if miss:
            errors.append(f"{c['rule']} missed in: {', '.join(miss)}")
        if false:
            errors.append(f"{c['rule']} false in: {', '.join(false)}")
    tail = []
    if unrecorded:
        tail.append(f"not recorded ({len(unrecorded)}): {', '.join(unrecorded)}")
    if md:
        lines += ["## Corpus score", "", summary + ".", "", "### Per rule", ""]
        lines += md_table(head, body)
        if errors:
            lines += [""] + [f"- {e}" for e in errors]
        lines += ["", "### Per program", ""]
        lines += md_table(phead, pbody)
        lines += [""] + tail if tail else []
    else:
        lines += [summary, "", "per rule:"] + text_table(head, body)
        lines += ([""] + errors) if errors else []
        lines += ["", "per program:"] + text_table(phead, pbody)
        lines += [""] + tail if tail else []
    return "\n".join(lines) + "\n"


def text_table(head, rows):
    rows = [[str(x) for x in r] for r in rows]
    w = [max(len(str(h)), *(len(r[i]) for r in rows)) if rows else len(str(h)) for i, h in enumerate(head)]
    fmt = "  ".join("{:<%d}" % n for n in w)
    return [fmt.format(*head).rstrip()] + [fmt.format(*r).rstrip() for r in rows]


def md_table(head, rows):
    def cell(x):
        return str(x).replace("|", "\\|").replace("\n", " ")
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(cell(x) for x in r) + " |" for r in rows]
    return out


def cmd_score(a):
    doc = load_labels(a.labels)
    progs = select(doc, a.only)
    if not os.path.isdir(a.dir):
        die(f"{a.dir} is not a directory")
    cuscope = find_cuscope(a.cuscope)
    if a.save_reports:
        os.makedirs(a.save_reports, exist_ok=True)
    results = []
    for p in progs:
        st = read_status(os.path.join(a.dir, p["name"] + ".status"))
        r = {"program": p, "status": st}
        notes = []
        if st.get("rc") == SKIP_RC:
            r["state"] = "skipped"
            results.append(r)
            continue
        if "rc" in st and st["rc"] != 0:
            notes.append(f"recording exited {st['rc']}" + (" (time limit)" if st["rc"] in (124, 137) else ""))
        report, origin = get_report(p["name"], a.dir, cuscope, a.reports_only)
        if report is None and origin == "not recorded":
            r["state"] = "not recorded"
        elif report is None:
            r["state"] = "no report"
            notes.append(origin)
        else:
            r["state"] = "scored"
            r["score"] = score_program(p, report, a.min_severity)
            if r["score"]["not_run"]:
                notes.append("rules not run: " + ", ".join(r["score"]["not_run"]))
            if a.save_reports:
                with open(os.path.join(a.save_reports, p["name"] + ".json"), "w") as f:
                    json.dump(report, f)
        r["note"] = "; ".join(notes)
        results.append(r)
    rules = doc["rules"]
    sys.stdout.write(render(rules, results, a.min_severity, md=False))
    if a.markdown:
        try:
            with open(a.markdown, "w") as f:
                f.write(render(rules, results, a.min_severity, md=True))
        except OSError as e:
            print(f"corpus_score: cannot write {a.markdown}: {e}", file=sys.stderr)
    if a.json:
        out = {"min_severity": a.min_severity, "rules": confusion(rules, results),
               "programs": [{"name": r["program"]["name"], "state": r["state"], "note": r.get("note", ""),
                             **({k: v for k, v in r["score"].items()} if r.get("score") else {})}
                            for r in results]}
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
    scored = [r for r in results if r.get("score")]
    if not scored:
        print("corpus_score: no program could be scored", file=sys.stderr)
        return 2
    if a.strict and not all(r["score"]["pass"] for r in scored):
        return 1
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description="Score cuscope's findings on the accuracy corpus.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    pl = sub.add_parser("list", help="the programs and their commands, tab-separated")
    pl.add_argument("--only", default="")
    pl.add_argument("--python", default="python3")
    pl.add_argument("--bin", default="bin")
    pc = sub.add_parser("check", help="check the labels file")
    ps = sub.add_parser("score", help="score a directory of recorded traces or saved reports")
    ps.add_argument("dir")
    ps.add_argument("--only", default="")
    ps.add_argument("--cuscope", default="")
    ps.add_argument("--reports-only", action="store_true", help="use the saved NAME.json reports, not the traces")
    ps.add_argument("--min-severity", choices=list(SEVERITY), default="info")
    ps.add_argument("--markdown", default="", help="write the tables as markdown to this file")
    ps.add_argument("--json", default="", help="write the scores as JSON to this file")
    ps.add_argument("--save-reports", default="", help="save each report as DIR2/NAME.json")
    ps.add_argument("--strict", action="store_true", help="exit 1 when a scored program failed")
    for p in (pl, pc, ps):
        p.add_argument("--labels", default=DEFAULT_LABELS)
    a = ap.parse_args(argv)
    if a.cmd == "list":
        doc = load_labels(a.labels)
        for p in select(doc, a.only):
            print("\t".join([p["name"], str(p.get("budget_s", 60))] + expand(p["cmd"], a.python, a.bin)))
        return 0
    if a.cmd == "check":
        doc = load_labels(a.labels)
        problems = check_labels(doc)
        for pr in problems:
            print(pr)
        n = len(doc["programs"])
        must = sum(len(p.get("must", [])) for p in doc["programs"])
        print(f"{n} programs, {must} required findings, {len(problems)} problems")
        return 1 if problems else 0
    return cmd_score(a)


if __name__ == "__main__":
    sys.exit(main())
