#!/usr/bin/env python3
# test_doc_examples.py - every `cuscope ...` example of README.md and docs/ runs as written: the command
# lines of the Markdown code blocks (fenced or indented, `$ ` prompts, `\` continuations) run verbatim
# with bash, each in a fresh directory where the files they name exist: run.db and the other traces are
# copies of committed sample traces, baselines/ a directory of them, ci/gate.json and gate.json the
# configuration of docs/ci.md, myrun/ a committed spool (for /tmp/myrun). Each must exit with its
# expected status (0 unless EXPECT says otherwise) and print the line EXPECT names, or at least one
# line. Examples that need a GPU or a program to record are skipped by the list SKIP, which must name
# only examples that exist.
#
#   test_doc_examples.py CUSCOPE SOURCE_ROOT BUILD_ROOT
#
# Prints a Check-style "N%: Checks: N, Failures: F, Errors: 0" line, which scripts/test sums.
import glob
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile

binary, src, build = (os.path.abspath(a) for a in sys.argv[1:4])
checks = failures = 0

COMMANDS = "record|dump|import|info|stats|report|export|view|diff|gate|calibrate"
EXAMPLE = re.compile(r"^(?:\$ |run: )?(?:build/)?cuscope (?:%s)\b(?!:)" % COMMANDS)
# a usage synopsis (`cuscope diff [OPTIONS] BASE NEW`), not an example
SYNOPSIS = re.compile(r"\[-|\[[A-Z]|\b(?:FILE|BASE|NEW|OPTIONS|SPOOL_DIR|COMMAND)\b")
# a row of a table of output (`cuscope record        4.443    4.877`)
OUTPUT_ROW = re.compile(r"^cuscope [a-z]+\s{2,}[0-9]")

# Examples not run, each with why: they record a program (a GPU and the program named), measure this
# machine's GPU, or are the body of a shell loop over such recordings.
SKIP = {
    "cuscope record -o item.db -- python3 samples/savings/d2h_item_balanced.py bad": "records on a GPU",
    "build/cuscope record -o run.db -- python3 train.py --steps 60 --seed 0": "records train.py on a GPU",
    "for a in noise/*.db; do for b in noise/*.db; do [ \"$a\" = \"$b\" ] || cuscope diff -f json \"$a\" \"$b\"; "
    "done; done |": "a loop over the recordings above",
    "cuscope record -q -o noise/run$i.db --force -- python3 train.py --steps 60 --seed 0":
        "records train.py on a GPU",
    "[ \"$a\" = \"$b\" ] || cuscope gate -q --config ci/gate.json --baseline \"$a\" \"$b\" || "
    "echo \"FALSE FAILURE: $a $b\"": "a loop body over the recordings above",
    "cuscope gate -q --config ci/gate.json \"${args[@]}\" \"$b\" || echo \"FALSE FAILURE: $b against the others\"":
        "a loop body over the recordings above",
    "cuscope record -o run.db -- python3 train.py --epochs 1": "records train.py on a GPU",
    "cuscope record --capture=nvtx:'step*' -o steps.db -- python3 train.py": "records train.py on a GPU",
    "cuscope record --ring 2GiB -o last.db -- python3 train.py --epochs 100": "records train.py on a GPU",
    "cuscope record --ring 30m --dump-on signal=USR2 -o last.db -- python3 train.py --epochs 100":
        "records train.py on a GPU",
    "cuscope record --ring 2GiB -o last.db -- python3 train.py --epochs 100 &": "records train.py on a GPU",
    "cuscope dump $!                # later, from any shell of the same user: last.dump-1.db":
        "dumps a job being recorded on a GPU",
    "cuscope dump 4242                      # 4242: a rank of the job, or its cuscope record":
        "dumps a job being recorded on a GPU",
    "cuscope dump --all                     # every recording of this user, each beside its own trace":
        "dumps a job being recorded on a GPU",
    "cuscope dump -o before-the-spike.db 4242": "dumps a job being recorded on a GPU",
    "cuscope record --no-backtrace -o bare.db -- torchrun --nproc_per_node=2 train.py":
        "records a torchrun job on GPUs",
    "cuscope calibrate": "measures launches on a GPU",
    "cuscope calibrate --rounds 25 --format json | jq .ns_per_launch": "measures launches on a GPU",
    "cuscope calibrate --format json > cost.json   # optional: what recording costs a launch here":
        "measures launches on a GPU",
    "build/cuscope record -o /tmp/nvtx.db --force -- build/tests/nvtx_payload_cost 200000 7":
        "a benchmark of the build tree (tests/bench), run by hand from the repository root",
}

# Expected exit status and a line (a regular expression searched in stdout and stderr) by example; the
# rest must exit 0 and print something.
EXPECT = {
    "cuscope report run.db": (0, r"^\[warning\] d2h-sync "),
    "cuscope report item.db": (0, r"^    where: +\S*samples/savings/d2h_item_balanced\.py:34 in Pair\.step$"),
    "cuscope report --step-range 'step*' -v samples/traces/train_small.db  # its steps are NVTX ranges step0, step1, ...":
        (0, r"^steps: +30 \(NVTX ranges 'step\*'"),
    "cuscope report --rules d2h-sync,launch-starvation run.db": (0, r"d2h-sync"),
    "cuscope report --fail-on warning --format markdown run.db > report.md": (1, None),
    "cuscope report --format html -o report.html run.db": (0, r"<title>"),
    "cuscope report --format json run.db | jq '.findings[0]'": (0, r'"rule": "d2h-sync"'),
    "cuscope report --list-rules": (0, r"^d2h-sync"),
    "cuscope report -f json run.db | jq '.steps.median_ns'": (0, r"^[0-9]+"),
    "cuscope report -f json --rules d2h-sync run.db | jq -e '.summary.findings == 0'": (1, r"^false$"),
    "cuscope info run.db": (0, r"^command +python3 samples/rules/d2h-sync/bad.py"),
    "cuscope stats run.db": (0, r"CUDA kernels: "),
    "cuscope stats --limit 0 --width 0 run.db | grep -E 'gemm|nvjet'   # the GEMMs (cuBLAS's nvjet on Hopper)":
        (0, r"nvjet_sm90"),
    "cuscope export -o run.json run.db                        # Chrome JSON": (0, r"wrote 'run.json'"),
    "cuscope export --per-rank -o traces/job.json run.db      # traces/job.rank0.json, job.rank1.json, ... for HTA":
        (0, r"traces/job\.rank0\.json"),
    "cuscope gate --list-metrics --config gate.json                 # what the config sets": (0, r"step_time"),
    "cuscope view run.db": (0, r"^http://127\.0\.0\.1:[0-9]+/\?token="),
}
# Commands that serve until interrupted: stopped with SIGINT after this many seconds (exit 0).
SERVE_SECONDS = 4

# The files examples name, made in each example's directory: the README's trace (the regression) for
# the run under test, its fixed version for the baselines.
BAD = "samples/rules/traces/d2h-sync-bad.db"
FIXED = "samples/rules/traces/d2h-sync-fixed.db"
FILES = {
    "item.db": "tests/data/savings/d2h_item_balanced.db",
    "run.db": BAD, "new.db": BAD, "base.db": FIXED, "old.db": FIXED, "main.db": FIXED,
    "main1.db": FIXED, "main2.db": FIXED, "main3.db": FIXED,
    "base1.db": FIXED, "base2.db": FIXED, "base3.db": FIXED,
    "baselines/a.db": FIXED, "baselines/b.db": FIXED, "baselines/c.db": FIXED,
}


def check(name, ok, detail=""):
    global checks, failures
    checks += 1
    if not ok:
        failures += 1
    print(("ok   " if ok else "FAIL ") + name + (": " + str(detail) if detail and not ok else ""), flush=True)


def code_blocks(text):
    """The lines of each code block of a Markdown text: fenced (any language) or indented by 4."""
    blocks, cur, fence = [], None, None
    prev_blank = True
    for line in text.split("\n"):
        if fence is not None:
            if line.strip().startswith(fence):
                blocks.append(cur)
                cur, fence = None, None
            else:
                cur.append(line)
            continue
        m = re.match(r"^\s*(```+|~~~+)", line)
        if m:
            if cur is not None:
                blocks.append(cur)
            cur, fence = [], m.group(1)
            continue
        if line.startswith("    ") and (cur is not None or prev_blank) and not re.match(r"^\s*[-*|]|^\s*\d+\.", line):
            if cur is None:
                cur = []
            cur.append(line)
        elif cur is not None and not line.strip():
            cur.append(line)
        elif cur is not None:
            blocks.append(cur)
            cur = None
        prev_blank = not line.strip()
    if cur is not None:
        blocks.append(cur)
    return blocks


def examples(path):
    """The cuscope command lines of a Markdown file: continuations joined, `$ ` and YAML's `run: ` cut."""
    out = []
    for block in code_blocks(open(path, encoding="utf-8").read()):
        lines = [l.strip() for l in block]
        prompts = any(l.startswith("$ ") for l in lines)
        i = 0
        while i < len(lines):
            line = lines[i]
            i += 1
            while line.endswith("\\") and i < len(lines):
                line = line[:-1].rstrip() + " " + lines[i]
                i += 1
            if prompts and not line.startswith("$ "):
                continue
            # a line of a shell loop that calls cuscope on its variables
            in_script = (not prompts and "$" in line
                         and re.search(r"(?:^|\|\| |; )cuscope (?:%s)\b" % COMMANDS, line) is not None)
            if not EXAMPLE.match(line) and not in_script:
                continue
            if not in_script and (SYNOPSIS.search(line.split("#")[0]) or OUTPUT_ROW.match(line)):
                continue
            out.append(re.sub(r"^(?:\$ |run: )", "", line))
    return out


def output_target(cmd):
    m = re.search(r"(?:^| )-o (\S+)", cmd)
    return m.group(1) if m else None


def prepare(d, cmd):
    """The files the example reads, in its directory d."""
    target = output_target(cmd) if re.search(r"cuscope (?:import|record)\b", cmd) else None
    for name, trace in FILES.items():
        if name == target:
            continue
        os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
        shutil.copyfile(os.path.join(src, trace), os.path.join(d, name))
    os.makedirs(os.path.join(d, "ci"))
    shutil.copyfile(gate_config, os.path.join(d, "ci", "gate.json"))
    shutil.copyfile(gate_config, os.path.join(d, "gate.json"))
    shutil.copytree(os.path.join(src, "tests", "data", "spool"), os.path.join(d, "myrun"))
    with open(os.path.join(d, "cost.json"), "w") as f:
        f.write('{"version":2,"ns_per_launch":1517.4,"device":"NVIDIA H200","rounds":9,"added_wall_ns":'
                '{"attached":1071,"kernel_records":353.2,"other_kinds_and_callbacks":288,"cuscope_code":-21}}\n')
    os.makedirs(os.path.join(d, "build"))
    os.symlink(binary, os.path.join(d, "build", "cuscope"))
    # commands run from the source tree (`samples/...` read, `tests/data/export/` written)
    os.symlink(os.path.join(src, "samples"), os.path.join(d, "samples"))
    os.makedirs(os.path.join(d, "tests", "data", "export"))
    if "--rank" in cmd:
        # a job of ranks: the traces' process as rank 0 of 1 (no committed trace has ranks)
        for name in FILES:
            if os.path.exists(os.path.join(d, name)):
                db = sqlite3.connect(os.path.join(d, name))
                db.execute("UPDATE PROCESSES SET rank = 0, localRank = 0, worldSize = 1")
                db.commit()
                db.close()


def run(d, cmd):
    """(exit status, stdout + stderr) of the example in d, `cuscope` being the binary under test."""
    bindir = os.path.join(d, "build")
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), COLUMNS="120")
    env.pop("CUSCOPE_NO_COLOR", None)
    script = cmd.replace("/tmp/myrun", "myrun")
    p = subprocess.Popen(["bash", "-o", "pipefail", "-c", script], cwd=d, env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    serve = re.search(r"cuscope view\b", script) is not None
    try:
        out, _ = p.communicate(timeout=SERVE_SECONDS if serve else 120)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGINT)
        try:
            out, _ = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            return -9, out.decode("utf-8", "replace")
    return p.returncode, out.decode("utf-8", "replace")


# docs/ci.md's configuration file, as the page shows it
ci_page = open(os.path.join(src, "docs", "ci.md"), encoding="utf-8").read()
m = re.search(r"```json\n(\{\n  \"version\": 1,.*?\n\})\n```", ci_page, re.S)
check("docs/ci.md shows a gate configuration file", m is not None)
tmp = tempfile.mkdtemp(prefix="cuscope-doc-examples-")
gate_config = os.path.join(tmp, "gate.json")
with open(gate_config, "w") as f:
    f.write(m.group(1) if m else "{}")

pages = [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "docs", "**", "*.md"), recursive=True))
found = []
for page in pages:
    for cmd in examples(page):
        found.append((os.path.relpath(page, src), cmd))
check("the pages hold examples", len(found) >= 30, len(found))
check("jq is installed (scripts/setup installs it)", shutil.which("jq") is not None)
for cmd in sorted(set(SKIP) - {c for _, c in found}):
    check("skipped example exists: %s" % cmd, False, "no page shows it")
for cmd in sorted(set(EXPECT) - {c for _, c in found}):
    check("checked example exists: %s" % cmd, False, "no page shows it")

try:
    for n, (page, cmd) in enumerate(found):
        if cmd in SKIP:
            print("skip %s: %s (%s)" % (page, cmd, SKIP[cmd]))
            continue
        d = os.path.join(tmp, "ex%d" % n)
        os.makedirs(d)
        prepare(d, cmd)
        status, out = run(d, cmd)
        if cmd in EXPECT:
            want_status, want_line = EXPECT[cmd]
        elif re.search(r"cuscope gate .*(?:-b|--baseline)", cmd):
            want_status, want_line = 1, r"FAIL"  # run.db is the regression of the baselines' program
        else:
            want_status, want_line = 0, None
        # what it printed, and the file it wrote (`-o FILE` or `> FILE`)
        target = re.search(r"(?:> *|(?:^| )-o )([^\s-]\S*)\s*(?:#.*)?$", cmd) or re.search(r" -o ([^\s-]\S*)", cmd)
        written = ""
        if target and os.path.isfile(os.path.join(d, target.group(1))):
            with open(os.path.join(d, target.group(1)), "rb") as f:
                written = f.read(1 << 20).decode("utf-8", "replace")
        ok = status == want_status
        if want_line is not None:
            ok = ok and re.search(want_line, out + "\n" + written, re.M) is not None
        else:
            ok = ok and (out + written).strip() != ""
        check("%s: %s" % (page, cmd), ok, "exit %d (want %d); output:\n%s" % (status, want_status, out[-2000:]))
        shutil.rmtree(d, ignore_errors=True)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

pct = 100 * (checks - failures) // checks if checks else 0
print("%d%%: Checks: %d, Failures: %d, Errors: 0" % (pct, checks, failures))
sys.exit(1 if failures else 0)
