#!/usr/bin/env python3
# test_help_docs.py - the bash completion and the man pages say what the program's --help says: they
# are what scripts/gen-help-docs writes from the binary under test (so they cannot drift from it),
# every option of every command's --help is in its man page and its completion, the completion
# completes commands, options and their values in a real bash, the man pages are valid roff, and
# `meson install` installs them.
#
#   test_help_docs.py CUSCOPE SOURCE_ROOT BUILD_ROOT
#
# Prints a Check-style "N%: Checks: N, Failures: F, Errors: 0" line, which scripts/test sums.
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

binary, src, build = sys.argv[1:4]
data = os.path.join(build, "data")
checks = failures = 0


def check(name, ok, detail=""):
    global checks, failures
    checks += 1
    if not ok:
        failures += 1
    print(("ok   " if ok else "FAIL ") + name + (": " + str(detail) if detail and not ok else ""))


def help_of(args):
    r = subprocess.run([binary] + args, capture_output=True, text=True)
    return r.stdout or r.stderr


commands = [m.group(1) for m in re.finditer(r"^  ([a-z]+)\s{2,}", help_of(["--help"]), re.M)]
check("cuscope --help lists the commands", len(commands) >= 9, commands)

# 1. the built files are what the generator writes from this binary
tmp = tempfile.mkdtemp()
try:
    subprocess.run([sys.executable, os.path.join(src, "scripts", "gen-help-docs"), binary, tmp] + commands,
                   check=True)
    for name in ["cuscope", "cuscope.1"] + ["cuscope-%s.1" % c for c in commands]:
        built = os.path.join(data, name)
        check("%s is in sync with --help" % name,
              os.path.exists(built) and filecmp.cmp(built, os.path.join(tmp, name), shallow=False))
finally:
    shutil.rmtree(tmp)

completion = open(os.path.join(data, "cuscope")).read()


def bash_complete(words):
    """COMPREPLY of the completion for the command line words (the last one being completed)."""
    script = (
        "source %s\nCOMP_WORDS=(%s)\nCOMP_CWORD=%d\n_cuscope\nprintf '%%s\\n' \"${COMPREPLY[@]}\"\n"
        % (os.path.join(data, "cuscope"), " ".join("'%s'" % w for w in words), len(words) - 1))
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True,
                       cwd=src)
    return [l for l in r.stdout.split("\n") if l]


# 2. every option of every --help, in the man page and in the completion of its command
for c in commands:
    text = help_of([c, "--help"])
    longs = re.findall(r"^\s+(?:-[A-Za-z0-9], )?(--[a-z][a-z0-9-]*)", text, re.M)
    shorts = re.findall(r"^\s+(-[A-Za-z0-9]), --", text, re.M)
    page = open(os.path.join(data, "cuscope-%s.1" % c)).read()
    missing = [o for o in longs + shorts if o.replace("-", "\\-") not in page]
    check("cuscope-%s.1 has every option" % c, not missing and (longs or not text.startswith("usage:")),
          missing)
    offered = bash_complete(["cuscope", c, "-"])
    missing = [o for o in longs + shorts if o not in offered and not any(x.startswith(o + "=") for x in offered)]
    check("the completion of %s offers every option" % c, not missing, missing)
    # a command this build lacks (record without CUDA) says so in place of its usage
    usage = re.sub(r"^(usage|cuscope): ", "", text.split("\n")[0])
    check("cuscope-%s.1 has the usage" % c, usage.replace("-", "\\-") in page, usage)

# 2b. a short option means one thing in every command that lists it (-f --format, -p --pid, ...)
meaning = {}
for c in commands:
    for m in re.finditer(r"^\s{1,8}(-[A-Za-z0-9]), (--[a-z0-9-]+)", help_of([c, "--help"]), re.M):
        meaning.setdefault(m.group(1), {}).setdefault(m.group(2), []).append(c)
for short, longs in sorted(meaning.items()):
    check("%s means one option in every command" % short, len(longs) == 1, longs)
check("-f is --format", set(meaning.get("-f", {})) == {"--format"}, meaning.get("-f"))

# 3. completing in bash
cases = [
    (["cuscope", "rep"], ["report"]),
    (["cuscope", "help", "st"], ["stats"]),
    (["cuscope", "report", "--form"], ["--format"]),
    (["cuscope", "report", "--fo"], ["--format", "--force"]),
    (["cuscope", "report", "--format", ""], ["text", "json", "markdown", "html"]),
    (["cuscope", "report", "run.db", "--fail-on", "w"], ["warning"]),
    (["cuscope", "export", "-f", ""], ["chrome", "perfetto", "nsys-sqlite"]),
]
if "--backtrace" in help_of(["record", "--help"]):
    cases += [(["cuscope", "record", "--back"], ["--backtrace"]),
              (["cuscope", "record", "--api="], ["--api=default", "--api=all"])]
for words, want in cases:
    got = bash_complete(words)
    check("completing %r" % " ".join(words), sorted(got) == sorted(want), got)
got = bash_complete(["cuscope", "report", "samples/traces/tr"])
check("a trace is completed as a file", "samples/traces/train_small.db" in got, got)
for words in (["cuscope", "record", "-o", "x.db", "--", "pytho"], ["cuscope", "record", "--backtrace", "pytho"])[
        0 if "--backtrace" in help_of(["record", "--help"]) else 1:]:
    got = bash_complete(words)
    check("record's COMMAND is completed as a command: %r" % " ".join(words), "python3" in got, got)
got = bash_complete(["cuscope", "record", "python3", "--back"])
check("the COMMAND's own options are not record's", "--backtrace" not in got, got)
got = bash_complete(["cuscope", "report", "--warmup", ""])
check("no completion for a number", got == [], got)

# 4. valid roff
if shutil.which("groff"):
    for c in [None] + commands:
        name = "cuscope.1" if c is None else "cuscope-%s.1" % c
        r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", os.path.join(data, name)],
                           capture_output=True, text=True)
        check("%s is valid roff" % name, r.returncode == 0 and not r.stderr.strip(), r.stderr[:300])

# 5. installed by meson install
installed = json.load(open(os.path.join(build, "meson-info", "intro-installed.json")))
dests = [d.replace("\\", "/") for d in installed.values()]
check("the completion is installed",
      any(d.endswith("/bash-completion/completions/cuscope") for d in dests))
for c in [None] + commands:
    name = "cuscope.1" if c is None else "cuscope-%s.1" % c
    check("%s is installed" % name, any(d.endswith("/man1/" + name) for d in dests))

print("%d%%: Checks: %d, Failures: %d, Errors: 0" % (100 * (checks - failures) // max(checks, 1), checks, failures))
sys.exit(1 if failures else 0)
