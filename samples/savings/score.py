#!/usr/bin/env python3
"""score.py - compare cuscope's predicted savings with the measured ones of samples/savings.

    python3 samples/savings/score.py [--measured samples/savings/measured.json] [--traces tests/data/savings]
                                     [--cuscope PATH] [--json]

For each pair of measured.json, runs `cuscope report --format json --source-dir ROOT TRACES/<name>.db` (cuscope from --cuscope,
else $CUSCOPE, else build/cuscope) and prints a markdown table:

  - measured: the median saving of the ab rounds, % of the bad step time;
  - predicted: the sum over the findings of the pair's rule (for a pair whose rule is "none", of its
    pattern_rule: a correct prediction there is about 0) of each finding's `saving_share` if the report has
    it, else its `step_share`; 0 when the rule found nothing ("no finding");
  - fix-all: the report's `steps.fix_all.saving_share`, when present;
  - within: whether |predicted - measured| <= max(25% of |measured|, 2 points);
  - on fixed: the same prediction on <name>-fixed.db, when that trace exists (it should be about 0);
  - bad step, replayed / measured: the step time the report's model of the bad run replays to without the
    profiler's launch cost (`steps.fix_all.replayed_step_ns`, present when there is a finding) over the bad variant's
    measured step time: above 1, the recording's host was slower than the profiler's calibrated cost says,
    and a saving that depends on host time (a wait's refill) is over-predicted;
  - ms a step, predicted / measured: the same prediction as time, the share times that replayed bad step,
    against the median over the rounds of the bad step less the fixed one; "(out)" when they differ by more
    than 25% of the measured time or 2% of the measured bad step. Where the replayed step is longer than the
    measured one, a saving of fixed size (GPU time, a wait's idle) is right in time and low as a share, and a
    saving that grows with the host's time is right as a share and high in time. Not given ("-") where the
    report's steps are windows of the run, not the program's iterations.

A pair without its trace is listed as "no trace", one whose report fails as "report failed"; neither counts
in the fraction printed last (pairs within tolerance / pairs scored). --json prints the rows as JSON instead.

Pairs of one `group` (pairs.json) fix different patterns of the same bad program. The report of the group's
first trace predicts each member's saving (`predicted_in_group`), and the group is in the wrong order
(`order_ok` false on its rows) when two members' predictions are in the opposite order of their measured
savings while those differ by more than the tolerance above (of the larger): the two largest findings of a
program must come in the order of what fixing them saves.
Exit status 0 (2 when measured.json cannot be read).
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def report(cuscope, db):
    """The JSON report of db, or None (with the reason) when it cannot be made."""
    try:
        # the pairs' sources are in this checkout, where the traces were recorded in another
        p = subprocess.run([cuscope, "report", "--format", "json", "--source-dir", ROOT, db],
                           capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    if p.returncode not in (0, 1):  # --fail-on is not used: 1 should not happen, but is not a broken report
        return None, (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
    try:
        return json.loads(p.stdout), None
    except ValueError as e:
        return None, "bad JSON: %s" % e


def share(finding):
    for key in ("saving_share", "step_share"):
        v = finding.get(key)
        if isinstance(v, (int, float)):
            return float(v), key
    return 0.0, None


def predict(rep, rule):
    """(predicted share, number of findings of rule, keys used) of a report."""
    total, n, keys = 0.0, 0, set()
    for f in rep.get("findings") or []:
        if f.get("rule") == rule:
            s, key = share(f)
            total += s
            n += 1
            if key:
                keys.add(key)
    return min(total, 1.0), n, sorted(keys)


def replayed_bad_ms(rep):
    """The step time the model of the bad run replays to without the profiler's launch cost (ms), or None."""
    fa = rep.get("fix_all") or (rep.get("steps") or {}).get("fix_all")
    v = fa.get("replayed_step_ns") if isinstance(fa, dict) else None
    if isinstance(v, (int, float)) and v > 0:
        return v / 1e6
    return None


def fix_all(rep):
    fa = rep.get("fix_all") or (rep.get("steps") or {}).get("fix_all")
    if isinstance(fa, dict) and isinstance(fa.get("saving_share"), (int, float)):
        return float(fa["saving_share"])
    return None


def within(pred_pct, meas_pct):
    return abs(pred_pct - meas_pct) <= max(0.25 * abs(meas_pct), 2.0)


def measured_ms(pair):
    """The median over a pair's rounds of the bad step less the fixed one (ms), or None."""
    d = sorted(r["bad_ms"] - r["fixed_ms"] for r in pair.get("rounds") or []
               if isinstance(r.get("bad_ms"), (int, float)) and isinstance(r.get("fixed_ms"), (int, float)))
    if not d:
        return None
    n = len(d)
    return d[n // 2] if n % 2 else (d[n // 2 - 1] + d[n // 2]) / 2


def within_ms(pred_ms, meas_ms, bad_ms):
    """The tolerance of within() on the time saved: 25% of it, or 2 points of the measured bad step."""
    return abs(pred_ms - meas_ms) <= max(0.25 * abs(meas_ms), 0.02 * bad_ms)


def order_ok(members):
    """Whether the predictions of a group's members (rows with measured and predicted_in_group) are in the
    order of their measured savings, where those differ by more than the tolerance."""
    for a in members:
        for b in members:
            ma, mb = 100 * a["measured"], 100 * b["measured"]
            if ma - mb > max(0.25 * max(abs(ma), abs(mb)), 2.0) and \
                    a["predicted_in_group"] < b["predicted_in_group"]:
                return False
    return True


def score_groups(rows, pairs, reports):
    """Set predicted_in_group and order_ok on the rows of each group of pairs.json with two scored members;
    reports: the report of each scored pair's bad trace, by name."""
    groups = {}
    for p in pairs:
        if p.get("group"):
            groups.setdefault(p["group"], []).append(p["name"])
    by = {r["name"]: r for r in rows}
    for g, names in groups.items():
        members = [by[n] for n in names if n in by and by[n].get("status") == "ok"]
        if len(members) < 2:
            continue
        rep = reports[members[0]["name"]]
        for r in members:
            r["group"] = g
            r["predicted_in_group"] = predict(rep, r["judged_rule"])[0]
        ok = order_ok(members)
        for r in members:
            r["order_ok"] = ok


def pct(v):
    return "-" if v is None else f"{100 * v:.1f}%"


def ratio(r):
    v = r.get("replayed_over_measured")
    return "-" if v is None else f"{v:.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("--measured", default=os.path.join(HERE, "measured.json"))
    ap.add_argument("--traces", default=os.path.join(ROOT, "tests", "data", "savings"))
    ap.add_argument("--cuscope", default=os.environ.get("CUSCOPE") or os.path.join(ROOT, "build", "cuscope"))
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    a = ap.parse_args()
    try:
        with open(a.measured) as f:
            pairs = json.load(f)["pairs"]
    except (OSError, ValueError, KeyError) as e:
        print(f"score.py: cannot read {a.measured}: {e}", file=sys.stderr)
        return 2

    rows, reports = [], {}
    for p in pairs:
        rule = p.get("rule", "none")
        judged = p.get("pattern_rule") if rule == "none" else rule
        row = {"name": p["name"], "rule": rule, "judged_rule": judged,
               "measured": p.get("saving") if p.get("rounds") else None}
        db = os.path.join(a.traces, p["name"] + ".db")
        if row["measured"] is None:
            row["status"] = "not measured"
        elif not os.path.exists(db):
            row["status"] = "no trace"
        else:
            rep, err = report(a.cuscope, db)
            if rep is None:
                row["status"] = f"report failed: {err}"
            else:
                reports[p["name"]] = rep
                pred, n, keys = predict(rep, judged) if judged else (0.0, 0, [])
                rb = replayed_bad_ms(rep)
                row.update(status="ok", predicted=pred, findings=n, keys=keys, fix_all=fix_all(rep),
                           replayed_bad_ms=rb,
                           replayed_over_measured=(rb / p["bad_ms"] if rb and p.get("bad_ms") else None),
                           within=within(100 * pred, 100 * row["measured"]))
                mm = measured_ms(p)
                # a step cut into windows (steps.method "windows") is not the program's iteration
                if rb and mm is not None and p.get("bad_ms") and \
                        (rep.get("steps") or {}).get("method") != "windows":
                    # the same prediction as time: the share of the replayed bad step it saves
                    row.update(predicted_ms=pred * rb, measured_ms=mm,
                               within_ms=within_ms(pred * rb, mm, p["bad_ms"]))
        fixed_db = os.path.join(a.traces, p["name"] + "-fixed.db")
        if os.path.exists(fixed_db) and judged:
            rep, err = report(a.cuscope, fixed_db)
            row["predicted_on_fixed"] = predict(rep, judged)[0] if rep else None
        rows.append(row)
    try:
        with open(os.path.join(HERE, "pairs.json")) as f:
            score_groups(rows, json.load(f)["pairs"], reports)
    except (OSError, ValueError, KeyError) as e:
        print(f"score.py: no groups: {e}", file=sys.stderr)

    if a.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
        return 0
    print("| pair | rule | measured | predicted | fix-all | within | on fixed | bad step: replayed / measured "
          "| ms a step: predicted / measured |")
    print("|---|---|---:|---:|---:|---|---:|---:|---:|")
    scored = ok = timed = ok_ms = 0
    for r in rows:
        rule = r["rule"] if r["rule"] != "none" else f"none ({r['judged_rule']})"
        if r["status"] != "ok":
            print(f"| {r['name']} | {rule} | {pct(r['measured'])} | {r['status']} | - | - | "
                  f"{pct(r.get('predicted_on_fixed'))} | - | - |")
            continue
        scored += 1
        ok += r["within"]
        if "within_ms" in r:
            timed += 1
            ok_ms += r["within_ms"]
            ms = (f"{r['predicted_ms']:.3f} / {r['measured_ms']:.3f}" +
                  ("" if r["within_ms"] else " (out)"))
        else:
            ms = "-"
        pred = pct(r["predicted"]) + ("" if r["findings"] else " (no finding)")
        print(f"| {r['name']} | {rule} | {pct(r['measured'])} | {pred} | {pct(r['fix_all'])} | "
              f"{'yes' if r['within'] else 'no'} | {pct(r.get('predicted_on_fixed'))} | {ratio(r)} | {ms} |")
    frac = f"{ok / scored:.2f}" if scored else "-"
    groups = {}
    for r in rows:
        if "order_ok" in r:
            groups.setdefault(r["group"], []).append(r)
    for g, members in groups.items():
        said = ", ".join(f"{m['judged_rule']} {pct(m['measured'])} measured, {pct(m['predicted_in_group'])} "
                         f"predicted" for m in members)
        print(f"\norder of {g}: {said}: {'right' if members[0]['order_ok'] else 'WRONG'}")
    print(f"\nwithin tolerance (max(25% of measured, 2 points)): {ok} of {scored} scored pairs ({frac}); "
          f"{len(rows) - scored} not scored")
    print(f"as time saved a step (the share times the replayed bad step, against the rounds' median of bad less "
          f"fixed; 25% of it or 2% of the measured bad step): {ok_ms} of {timed} pairs with a replayed step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
