#!/usr/bin/env python3
"""test_savings.py - the replayed savings against the measured ones (samples/savings, docs/accuracy.md).

    test_savings.py CUSCOPE SOURCE_ROOT

Runs samples/savings/score.py on the committed traces of the bad programs (tests/data/savings) and checks
that every pair gets a report, and that the predictions are no worse than when docs/accuracy.md's table was
made: at least MIN_WITHIN pairs within max(25% of the measured saving, 2 points), and at most MAX_LOUD pairs
whose fix saved under 2% predicted above 5%, and no group of pairs (two fixes of one program) whose findings
come in the wrong order. A change that moves a prediction away from the measurement fails here; one that
brings more pairs within raises the floor (edit the numbers with the table).
"""
import json
import os
import subprocess
import sys

MIN_WITHIN = 30
MAX_LOUD = 0


def check_order_rule(root):
    """score.py's order test on made-up members: it must tell a wrong order, and let a close one pass."""
    sys.path.insert(0, os.path.join(root, "samples", "savings"))
    import score
    big = {"measured": 0.33, "predicted_in_group": 0.30}
    small = {"measured": 0.08, "predicted_in_group": 0.10}
    close = {"measured": 0.31, "predicted_in_group": 0.35}
    wrong = [dict(big, predicted_in_group=0.05), small]
    if not score.order_ok([big, small]) or score.order_ok(wrong) or not score.order_ok([big, close]):
        print("score.order_ok misjudges the order of two findings")
        return 1
    # a group's predictions come from its first member's report, each member's rule in it
    rows = [{"name": "a", "status": "ok", "judged_rule": "d2h-sync", "measured": 0.33},
            {"name": "b", "status": "ok", "judged_rule": "unfused-optimizer", "measured": 0.08}]
    rep = {"findings": [{"rule": "d2h-sync", "saving_share": 0.05},
                        {"rule": "unfused-optimizer", "saving_share": 0.10}]}
    score.score_groups(rows, [{"name": "a", "group": "g"}, {"name": "b", "group": "g"}], {"a": rep})
    if [r.get("predicted_in_group") for r in rows] != [0.05, 0.10] or rows[0].get("order_ok") is not False:
        print(f"score.score_groups: {rows}")
        return 1
    return 0


def main(cuscope, root):
    p = subprocess.run([sys.executable, f"{root}/samples/savings/score.py", "--json", "--cuscope", cuscope,
                        "--measured", f"{root}/samples/savings/measured.json",
                        "--traces", f"{root}/tests/data/savings"],
                       capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        print(f"score.py failed ({p.returncode}): {p.stderr.strip()}")
        return 1
    rows = json.loads(p.stdout)
    bad = [r["name"] for r in rows if r.get("status") != "ok"]
    within = [r["name"] for r in rows if r.get("within")]
    loud = [r["name"] for r in rows if r.get("status") == "ok" and r["measured"] < 0.02
            and r["predicted"] > 0.05]
    wrong = sorted({r["group"] for r in rows if r.get("order_ok") is False})
    groups = sorted({r["group"] for r in rows if "order_ok" in r})
    print(f"{len(rows)} pairs, {len(within)} within tolerance, {len(loud)} small savings predicted above 5%: "
          f"{', '.join(loud) or '-'}; {len(groups)} groups of fixes, in the wrong order: {', '.join(wrong) or '-'}")
    failed = check_order_rule(root)
    if wrong:
        print(f"findings in the wrong order in: {', '.join(wrong)}")
        failed = 1
    if len(rows) < 30:
        print(f"only {len(rows)} pairs in measured.json")
        failed = 1
    if bad:
        print(f"no report for: {', '.join(bad)}")
        failed = 1
    if len(within) < MIN_WITHIN:
        print(f"{len(within)} pairs within tolerance, fewer than {MIN_WITHIN}")
        failed = 1
    if len(loud) > MAX_LOUD:
        print(f"{len(loud)} fixes that saved under 2% predicted above 5% (at most {MAX_LOUD})")
        failed = 1
    return failed


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: test_savings.py CUSCOPE SOURCE_ROOT")
    sys.exit(main(sys.argv[1], sys.argv[2]))
