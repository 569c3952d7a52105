#!/usr/bin/env python3
"""
fuzz.py - a short, deterministic fuzz pass over cuscope's readers: mutated copies of the committed
traces (samples/traces, samples/rules/traces, tests/data/v1) and of a spool (tests/data/spool), fed to
`cuscope info`, `stats`, `report`, `export` and `import` (tests/fuzz/run.sh runs it on the sanitizer
build, docs/building.md). With --gen-trace, a small trace that gen_trace writes with the timeline
overview is one more base, and `cuscope view` serves each of its copies for a second.

    fuzz.py CUSCOPE_BIN WORK_DIR [--traces N] [--spools N] [--seed S] [--jobs J] [--timeout T]
            [--extreme] [--gen-trace GEN_TRACE]

Each run must end with exit status 0, 1 or 2, within the timeout, with no sanitizer report on
stderr, and, on exit 2, with exactly one line on stderr. WORK_DIR/in/index.txt says how each input
was made; a failing input is kept in WORK_DIR/failures. The last line is "N passed, N failed": one
check per command family (info, stats, report, export, import, view), failed when any of its runs
failed.

Crafted values stay within +-2^48 unless --extreme is given: values near the 64-bit limits are the
subject of the plausibility bounds of the trace readers, and are left to that switch.

tests/data/spool/4242.cuspool is one process's spool, written with the record helpers of
tests/unit/test_import.c: a device, a module, a stack, and six steps of an NVTX range around four
kernel launches, an allocation and its free, a memset, a device-to-host copy and a stream wait.
"""
import argparse
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SANE = [None, 0, 1, -1, 7, -7, 4096, 1 << 31, -(1 << 31), (1 << 32) + 5, 1 << 40, -(1 << 40),
        1 << 47, -(1 << 47), 0.5, -2.5, 1e15, "", "x", "12", "-3", "1e3", b"", b"\x00\xff\x10",
        "\u00e9\u00ff" * 40, "A" * 5000]
EXTREME = [(1 << 63) - 1, -(1 << 63), (1 << 62) + 3, -(1 << 62), 1e300, float("inf")]
SANITIZER_MARKS = ("runtime error:", "AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer")


def flip_bits(data, rng, n, low_bytes=8):
    """n random bit flips, in the low_bytes low bytes of each aligned 8-byte word."""
    b = bytearray(data)
    for _ in range(n):
        i = rng.randrange(len(b))
        i -= i % 8 - i % 8 % low_bytes
        b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def overwrite_words(data, rng, n, start, values, extreme):
    """Overwrite n aligned 4- or 8-byte words at or after start with crafted values."""
    b = bytearray(data)
    for _ in range(n):
        w = rng.choice((4, 8))
        if len(b) - start < w:
            break
        i = start + rng.randrange((len(b) - start) // w) * w
        v = rng.choice(values)
        if not extreme:  # a time or an id, but not near the 64-bit limits
            i -= i % 8  # (a 4-byte word: the low half of an 8-byte one)
            if w == 8:
                v = abs(v) & ((1 << 48) - 1)
        v &= (1 << (8 * w)) - 1
        b[i:i + w] = v.to_bytes(w, "little")
    return bytes(b)


def some_rows(db, t, rng, mod):
    """A WHERE condition that picks about one row in mod of table t, the same rows from a seed."""
    if mod <= 1:
        return "1"
    key = "rowid"
    try:
        db.execute('SELECT rowid FROM "%s" LIMIT 1' % t)
    except sqlite3.DatabaseError:  # WITHOUT ROWID: its first column
        key = 'CAST("%s" AS INTEGER)' % db.execute('PRAGMA table_info("%s")' % t).fetchone()[1]
    return "abs(coalesce(%s, 0) * %d + %d) %% %d = 0" % (key, rng.randrange(1, 1000),
                                                        rng.randrange(1000), mod)


def sql_mutation(path, rng, values):
    """Crafted values in chosen columns of one of the file's tables (or its schema); what was done."""
    db = sqlite3.connect(path, isolation_level=None)
    tables = [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "ORDER BY name")]
    views = [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name")]
    what = rng.random()
    try:
        if what < 0.70:
            events = [t for t in tables if t.endswith("_DATA")]
            overview = [t for t in tables if t.startswith("TIMELINE_OVERVIEW")]
            pick = rng.random()
            t = rng.choice(overview if overview and pick < 0.5 else
                           events if events and pick < 0.75 else tables)
            cols = [r[1] for r in db.execute('PRAGMA table_info("%s")' % t)]
            c = rng.choice(cols)
            v = rng.choice(values)
            mod = rng.choice((1, 1, 2, 3, 10, 97))
            db.execute('UPDATE "%s" SET "%s" = ? WHERE %s' % (t, c, some_rows(db, t, rng, mod)),
                       (v,))
            return "%s.%s = %r (1 row in %d)" % (t, c, v[:20] if isinstance(v, str) else v, mod)
        if what < 0.80:
            t = rng.choice(tables)
            mod = rng.choice((1, 2, 5))
            db.execute('DELETE FROM "%s" WHERE %s' % (t, some_rows(db, t, rng, mod)))
            return "1 row in %d deleted from %s" % (mod, t)
        if what < 0.88:
            t = rng.choice(tables)
            db.execute('INSERT INTO "%s" SELECT * FROM "%s"' % (t, t))
            return "rows of %s doubled" % t
        if what < 0.94 and views:
            v = rng.choice(views)
            sql = db.execute("SELECT sql FROM sqlite_master WHERE name = ?", (v,)).fetchone()[0]
            db.execute('DROP VIEW "%s"' % v)
            if rng.random() < 0.5:
                db.execute("%s ORDER BY %s" % (sql, rng.choice(("start DESC", "rowid DESC",
                                                                 "rowid * 7919 % 1009"))))
                return "view %s reordered" % v
            db.execute("%s UNION ALL %s" % (sql, sql[sql.index(" AS SELECT ") + 4:]))
            return "view %s doubled" % v
        t = rng.choice(tables + views)
        db.execute('DROP %s "%s"' % ("VIEW" if t in views else "TABLE", t))
        return "%s dropped" % t
    except sqlite3.DatabaseError as e:
        return "sql mutation failed: %s" % e
    finally:
        db.close()


def mutate_trace(src, dst, rng, values):
    data = open(src, "rb").read()
    how = rng.random()
    if how < 0.25:
        n = rng.choice((1, 4, 32))
        open(dst, "wb").write(flip_bits(data, rng, n))
        return "%d bit flips" % n
    if how < 0.35:
        cut = rng.choice((rng.randrange(len(data)), (rng.randrange(len(data)) // 4096) * 4096))
        open(dst, "wb").write(data[:cut])
        return "truncated to %d bytes" % cut
    shutil.copyfile(src, dst)
    done = [sql_mutation(dst, rng, values) for _ in range(rng.choice((1, 1, 2, 3)))]
    return "; ".join(done)


def mutate_spool(src, dst, rng, values, extreme):
    """A mutated copy of the spool file src as DST/4242.cuspool. Unless extreme, 8-byte fields keep
    their two high bytes (spool times are unsigned: a flipped high bit is a time near the limits)."""
    data = open(src, "rb").read()
    how = rng.random()
    ints = [v for v in values if isinstance(v, int)] + [0xFFFFFFFF, 0xFFFF, 0x7FFFFFFF]
    if how < 0.3:
        n = rng.choice((1, 8, 64))
        out, what = flip_bits(data, rng, n, 8 if extreme else 6), "%d bit flips" % n
    elif how < 0.45:
        cut = rng.randrange(len(data))
        out, what = data[:cut], "truncated to %d bytes" % cut
    elif how < 0.55:
        a, b = sorted(rng.randrange(40, len(data)) for _ in range(2))
        out, what = data[:b] + data[a:], "bytes %d..%d repeated" % (a, b)
    else:
        n = rng.choice((1, 4, 16))
        start = 0 if rng.random() < 0.2 else 40
        out, what = (overwrite_words(data, rng, n, start, ints, extreme),
                     "%d words overwritten" % n)
    os.makedirs(dst, exist_ok=True)
    open(os.path.join(dst, "4242.cuspool"), "wb").write(out)
    return what


def check(cmd, timeout, env):
    """(None when the run is fine, else why not; its exit status)."""
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return "timed out after %d s" % timeout, -1
    err = p.stderr.decode("utf-8", "replace")
    if any(m in err for m in SANITIZER_MARKS):
        return "sanitizer report:\n" + err[-4000:], p.returncode
    if p.returncode not in (0, 1, 2):
        return "exit status %d (%.1f s):\n%s" % (p.returncode, time.monotonic() - t0,
                                                  err[-2000:]), p.returncode
    if p.returncode == 2 and (err.count("\n") != 1 or not err.endswith("\n")):
        return "exit status 2 without exactly one line on stderr:\n" + err[-2000:], 2
    return None, p.returncode


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cuscope")
    ap.add_argument("work")
    ap.add_argument("--traces", type=int, default=800)
    ap.add_argument("--spools", type=int, default=600)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=30)
    ap.add_argument("--extreme", action="store_true")
    ap.add_argument("--gen-trace", help="tests/bench/gen_trace, for a base trace with an overview")
    a = ap.parse_args()

    values = SANE + (EXTREME if a.extreme else [])
    rng = random.Random(a.seed)
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(os.path.join(a.work, "in"))
    env = dict(os.environ, TZ="UTC")

    bases = sorted(os.path.join(d, f) for d in (os.path.join(ROOT, "samples/traces"),
                                                 os.path.join(ROOT, "samples/rules/traces"),
                                                 os.path.join(ROOT, "tests/data/v1"))
                   for f in os.listdir(d) if f.endswith(".db"))
    if a.gen_trace:  # a small trace with the timeline overview (TIMELINE_OVERVIEW)
        gen = os.path.join(a.work, "overview.db")
        subprocess.run([a.gen_trace, "--events", "6000", "--overview-min", "0", gen],
                       stdout=subprocess.DEVNULL, check=True)
        bases.append(gen)
    spool = os.path.join(ROOT, "tests/data/spool/4242.cuspool")
    runs = []  # (family, input, what, cmd)
    for i in range(a.traces):
        src = bases[i % len(bases)]
        dst = os.path.join(a.work, "in", "t%03d.db" % i)
        what = mutate_trace(src, dst, rng, values)
        what = "%s from %s" % (what, os.path.relpath(src, ROOT))
        out = os.path.join(a.work, "in", "t%03d.json" % i)
        for fam, args in (("info", ["info", dst]), ("stats", ["stats", dst]),
                          ("report", ["report", dst]),
                          ("export", ["export", "--force", "-o", out, dst])):
            runs.append((fam, dst, what, [a.cuscope] + args))
        if src.endswith("overview.db"):  # the viewer reads the overview: a second of it
            runs.append(("view", dst, what,
                         [a.cuscope, "view", "--port", "0", "--timeout", "1", dst]))
    for i in range(a.spools):
        dst = os.path.join(a.work, "in", "s%03d" % i)
        what = mutate_spool(spool, dst, rng, [v for v in values if isinstance(v, int)],
                            a.extreme)
        runs.append(("import", dst, what,
                     [a.cuscope, "import", "-o", dst + ".db", dst]))

    with open(os.path.join(a.work, "in", "index.txt"), "w") as f:
        for inp, what in sorted({(r[1], r[2]) for r in runs}):
            f.write("%s: %s\n" % (os.path.basename(inp), what))
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=a.jobs) as ex:
        results = list(ex.map(lambda r: check(r[3], a.timeout, env), runs))
    # what the imports wrote is read too
    more = [("import", r[1] + ".db", "imported from " + r[2], [a.cuscope, c, r[1] + ".db"])
            for r in runs if r[0] == "import" and os.path.exists(r[1] + ".db")
            for c in ("info", "report")]
    with ThreadPoolExecutor(max_workers=a.jobs) as ex:
        results += list(ex.map(lambda r: check(r[3], a.timeout, env), more))
    runs += more

    families = ["info", "stats", "report", "export", "import"] + (["view"] if a.gen_trace else [])
    failed = {f: 0 for f in families}
    status = {f: {} for f in families}
    os.makedirs(os.path.join(a.work, "failures"), exist_ok=True)
    for (fam, inp, what, cmd), (why, rc) in zip(runs, results):
        status[fam][rc] = status[fam].get(rc, 0) + 1
        if why is None:
            continue
        failed[fam] += 1
        keep = os.path.join(a.work, "failures", os.path.basename(inp))
        if not os.path.exists(keep):
            (shutil.copytree if os.path.isdir(inp) else shutil.copyfile)(inp, keep)
        print("fuzz: FAIL %s (%s): %s\n  %s" % (" ".join(cmd[1:]), what, why.rstrip(),
                                                "input kept in " + keep), file=sys.stderr)
    print("fuzz: %d runs on %d mutated traces and %d mutated spools in %.0f s (seed %d)" %
          (len(runs), a.traces, a.spools, time.monotonic() - t0, a.seed), file=sys.stderr)
    for f in families:
        print("fuzz: %-7s %s (exit status: runs %s)" %
              (f, "ok" if not failed[f] else "%d failed" % failed[f],
               ", ".join("%s: %d" % (k, n) for k, n in sorted(status[f].items()))),
              file=sys.stderr)
    bad = sum(1 for f in families if failed[f])
    print("%d passed, %d failed" % (len(families) - bad, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
