#!/usr/bin/env python3
"""test_savings.py - the replayed savings against the measured ones (samples/savings, docs/accuracy.md).

    test_savings.py CUSCOPE SOURCE_ROOT

Runs samples/savings/score.py on the committed traces of the bad programs (tests/data/savings) and checks
that every pair gets a report, and that the predictions are no worse than when docs/accuracy.md's table was
made: at least MIN_WITHIN pairs within max(25% of the measured saving, 2 points), and at most MAX_LOUD pairs
whose fix saved under 2% predicted above 5%. A change that moves a prediction away from the measurement
fails here; one that brings more pairs within raises the floor (edit the numbers with the table).
"""
import json
import subprocess
import sys

MIN_WITHIN = 29
MAX_LOUD = 1


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
    print(f"{len(rows)} pairs, {len(within)} within tolerance, {len(loud)} small savings predicted above 5%: "
          f"{', '.join(loud) or '-'}")
    failed = 0
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
