#!/usr/bin/env python3
"""test_ci_recipes.py - run the CI recipes of docs/ci.md on committed traces.

    test_ci_recipes.py CUSCOPE SOURCE_ROOT

The GitHub Actions workflow and the GitLab CI job are read from the page as it shows them, and their shell
commands are run as the CI would, in a scratch directory, with what needs a GPU or a network replaced:
building cuscope (`meson`, `ninja`) is skipped and build/cuscope is the binary under test; the recording
(`build/cuscope record -o run.db -- python3 train.py ...`, checked to be on the page verbatim) copies a
committed trace; GitHub's cache actions copy the baselines to and from a directory; GitLab's artifact
download and merge-request note (`curl`) are a shell function over a directory.

Scenarios, each recipe: two pushes to the default branch (their recordings become the baselines), a
merge/pull request that changes nothing (the gate passes and writes gate.xml, a JUnit file, and gate.md,
posted as the comment or note), and one whose program adds a device-to-host copy and a wait every step
(samples/rules/traces/d2h-sync-bad.db against -fixed.db: the gate fails, says FAIL, and the reports are
still written and posted). The last line is "N passed, N failed".
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zipfile

binary, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
FIXED = os.path.join(src, "samples/rules/traces/d2h-sync-fixed.db")
BAD = os.path.join(src, "samples/rules/traces/d2h-sync-bad.db")
RECORD = "build/cuscope record -o run.db -- python3 train.py --steps 60 --seed 0"
checks = failures = 0


def check(name, ok, detail=""):
    global checks, failures
    checks += 1
    failures += not ok
    print(("ok   " if ok else "FAIL ") + name + (": " + str(detail)[-2000:] if detail and not ok else ""),
          flush=True)


def yaml_block(page, heading):
    """The first ```yaml block after the heading."""
    m = re.search(re.escape(heading) + r".*?```yaml\n(.*?)```", page, re.S)
    return m.group(1) if m else ""


def indent(line):
    return len(line) - len(line.lstrip(" "))


def scalar_items(lines, i, ind):
    """The items of a YAML sequence of scalars whose '- ' is at indent ind, from lines[i]: plain,
    literal (|) and folded (>) ones. Returns (items, index after them)."""
    items = []
    while i < len(lines) and (not lines[i].strip() or indent(lines[i]) >= ind):
        line = lines[i]
        if not line.strip() or line.strip().startswith("#") or indent(line) != ind or \
                not line.strip().startswith("- "):
            i += 1
            continue
        head = line.strip()[2:]
        i += 1
        if head in ("|", ">"):
            body = []
            while i < len(lines) and (not lines[i].strip() or indent(lines[i]) > ind):
                body.append(lines[i][ind + 2:] if lines[i].strip() else "")
                i += 1
            items.append("\n".join(body) if head == "|" else " ".join(b.strip() for b in body if b.strip()))
        else:
            items.append(head)
    return items, i


def github_steps(block):
    """[(name, if, uses, run)] of the workflow's steps."""
    lines = block.splitlines()
    steps, cur, i = [], None, 0
    while i < len(lines):
        line = lines[i]
        if indent(line) == 6 and line.strip().startswith("- "):
            cur = {}
            steps.append(cur)
            line = " " * 8 + line.strip()[2:]
        if cur is not None and indent(line) == 8 and ":" in line:
            key, _, val = line.strip().partition(":")
            val = val.strip()
            if key == "run" and val == "|":
                body = []
                i += 1
                while i < len(lines) and (not lines[i].strip() or indent(lines[i]) > 8):
                    body.append(lines[i][10:])
                    i += 1
                cur["run"] = "\n".join(body)
                continue
            cur[key] = val
        i += 1
    return steps


def shell(script, d, env, preamble=""):
    p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", preamble + script], cwd=d, env=env,
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    return p.returncode, p.stdout.decode("utf-8", "replace")


def job_dir(root, name, trace):
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, "build"))
    os.symlink(binary, os.path.join(d, "build", "cuscope"))
    os.makedirs(os.path.join(d, "ci"))
    shutil.copyfile(os.path.join(root, "gate.json"), os.path.join(d, "ci", "gate.json"))
    return d


BUILD = ("meson setup build --buildtype=release", "ninja -C build")


def replace_ci_only(cmd, trace):
    """The command with the recording replaced and the build's lines left out; None when nothing is
    left to run."""
    lines = [ln for ln in cmd.split("\n") if ln.strip() not in BUILD]
    if not any(ln.strip() for ln in lines):
        return None
    return "\n".join(lines).replace(RECORD, "cp '%s' run.db" % trace)


def run_github(block, root, event, trace, cache, n):
    """Run the workflow's steps for event ('push' or 'pull_request'); (gate's status or None, dir)."""
    d = job_dir(root, "gh%d" % n, trace)
    env = dict(os.environ, GITHUB_SHA="%040x" % n, GITHUB_STEP_SUMMARY=os.path.join(d, "summary.md"))
    failed, matched, gate = False, False, None
    for step in github_steps(block):
        cond = step.get("if", "")
        if cond:
            if "github.event_name == 'push'" in cond and event != "push":
                continue
            if "github.event_name == 'pull_request'" in cond and event != "pull_request":
                continue
            if "cache-matched-key != ''" in cond and not matched:
                continue
            if "hashFiles('gate.xml')" in cond and not os.path.exists(os.path.join(d, "gate.xml")):
                continue
            if "hashFiles('gate.md')" in cond and not os.path.exists(os.path.join(d, "gate.md")):
                continue
        if failed and "always()" not in cond:
            continue
        uses = step.get("uses", "")
        if uses.startswith("actions/cache/restore"):
            if os.path.isdir(cache):
                shutil.copytree(cache, os.path.join(d, "baselines"))
                matched = True
            continue
        if uses.startswith("actions/cache/save"):
            shutil.rmtree(cache, ignore_errors=True)
            shutil.copytree(os.path.join(d, "baselines"), cache)
            continue
        if uses.startswith("marocchino/sticky-pull-request-comment"):
            shutil.copyfile(os.path.join(d, "gate.md"), os.path.join(d, "comment.md"))
            continue
        if uses or "run" not in step:
            continue
        cmds = [c for c in (replace_ci_only(c, trace) for c in [step["run"]]) if c]
        if not cmds:
            continue
        status, out = shell(cmds[0], d, env)
        if "cuscope gate" in cmds[0]:
            gate = status
        if status != 0:
            failed = True
            print("  step %r exited %d:\n%s" % (step.get("name"), status, out[-300:]))
    return gate, d


CURL = r'''
curl() {
	local out="" note=""
	while [ $# -gt 0 ]; do
		case $1 in
		--output) out=$2; shift ;;
		--data-urlencode) note=${2#body@}; shift ;;
		esac
		shift
	done
	if [ -n "$note" ]; then cp "$note" "$NOTES/note.md"; return 0; fi
	if [ -n "$out" ] && [ -f "$ARTIFACTS/baselines.zip" ]; then cp "$ARTIFACTS/baselines.zip" "$out"; return 0; fi
	return 22
}
'''


def gitlab_job(block):
    """(script items, after_script items) of the job."""
    lines = block.splitlines()
    out = {}
    for key in ("script", "after_script"):
        for i, line in enumerate(lines):
            if line.strip() == key + ":" and indent(line) == 2:
                out[key], _ = scalar_items(lines, i + 1, 4)
    return out.get("script", []), out.get("after_script", [])


def run_gitlab(block, root, event, trace, artifacts, n):
    """Run the job for event ('push' or 'merge_request_event'); (gate's status or None, dir)."""
    d = job_dir(root, "gl%d" % n, trace)
    notes = os.path.join(d, "notes")
    os.makedirs(notes)
    env = dict(os.environ, CI_PIPELINE_SOURCE=event, CI_COMMIT_SHA="%040x" % n, CI_DEFAULT_BRANCH="main",
               CI_JOB_TOKEN="t", CI_API_V4_URL="https://gitlab.invalid/api/v4", CI_PROJECT_ID="1",
               ARTIFACTS=artifacts, NOTES=notes)
    if event == "merge_request_event":
        env.update(CI_MERGE_REQUEST_IID="7", CUSCOPE_NOTE_TOKEN="secret")
    else:
        env.update(CI_COMMIT_BRANCH="main")
    script, after = gitlab_job(block)
    gate, failed = None, False
    for item in script:
        cmd = replace_ci_only(item, trace)
        if not cmd or failed:
            continue
        status, out = shell(cmd, d, env, CURL)
        if "cuscope gate" in cmd:
            gate = status
        if status != 0:
            failed = True
            print("  script item exited %d:\n%s" % (status, out[-300:]))
    for item in after:
        status, out = shell(item, d, env, CURL)
        check("gitlab %s: after_script item exits 0" % event, status == 0, out)
    if not failed:  # artifacts: paths [baselines/, ...], published by the default branch's job
        os.makedirs(artifacts, exist_ok=True)
        with zipfile.ZipFile(os.path.join(artifacts, "baselines.zip"), "w") as z:
            for name in sorted(os.listdir(os.path.join(d, "baselines"))):
                z.write(os.path.join(d, "baselines", name), "baselines/" + name)
    return gate, d


def reports(kind, d, gate, want_fail, posted):
    check("%s: the gate ran" % kind, gate is not None)
    check("%s: the gate's exit status is %d" % (kind, 1 if want_fail else 0), gate == (1 if want_fail else 0), gate)
    xml = os.path.join(d, "gate.xml")
    try:
        root = ET.parse(xml).getroot()
        cases = root.iter("testcase")
        n = sum(1 for _ in cases)
        fails = sum(1 for _ in root.iter("failure"))
    except (OSError, ET.ParseError) as e:
        n, fails = 0, -1
        print("  %s: %s" % (xml, e))
    check("%s: gate.xml is a JUnit file with one test per check" % kind, n >= 3, n)
    check("%s: gate.xml has %s failures" % (kind, "some" if want_fail else "no"), (fails > 0) == want_fail, fails)
    md = open(os.path.join(d, "gate.md")).read() if os.path.exists(os.path.join(d, "gate.md")) else ""
    check("%s: gate.md says %s" % (kind, "FAIL" if want_fail else "PASS"),
          ("FAIL" in md) == want_fail and (want_fail or "PASS" in md), md[:400])
    check("%s: gate.md is posted" % kind, os.path.exists(posted) and open(posted).read() == md and md != "", posted)


page = open(os.path.join(src, "docs", "ci.md"), encoding="utf-8").read()
root = tempfile.mkdtemp(prefix="cuscope-ci-recipes-")
m = re.search(r"```json\n(\{\n  \"version\": 1,.*?\n\})\n```", page, re.S)
check("docs/ci.md shows a gate configuration file", m is not None)
with open(os.path.join(root, "gate.json"), "w") as f:
    f.write(m.group(1) if m else "{}")
try:
    gh = yaml_block(page, "### GitHub Actions")
    check("docs/ci.md has the GitHub Actions workflow", "jobs:" in gh and RECORD in gh)
    cache = os.path.join(root, "gh-cache")
    for n in (1, 2):
        gate, d = run_github(gh, root, "push", FIXED, cache, n)
        check("github push %d: no gate, the recording stored" % n,
              not os.path.exists(os.path.join(d, "gate.xml")) and os.path.isdir(cache) and
              len(os.listdir(cache)) == n, os.listdir(cache) if os.path.isdir(cache) else "no cache")
    gate, d = run_github(gh, root, "pull_request", FIXED, cache, 3)
    reports("github pull request, no change", d, gate, False, os.path.join(d, "comment.md"))
    check("github: the job summary has the gate's markdown",
          os.path.exists(os.path.join(d, "summary.md")) and "PASS" in open(os.path.join(d, "summary.md")).read())
    gate, d = run_github(gh, root, "pull_request", BAD, cache, 4)
    reports("github pull request, a sync added", d, gate, True, os.path.join(d, "comment.md"))

    gl = yaml_block(page, "### GitLab CI")
    script, after = gitlab_job(gl)
    check("docs/ci.md has the GitLab CI job", RECORD in script and len(after) >= 1, script)
    artifacts = os.path.join(root, "gl-artifacts")
    for n in (1, 2):
        gate, d = run_gitlab(gl, root, "push", FIXED, artifacts, n)
        names = zipfile.ZipFile(os.path.join(artifacts, "baselines.zip")).namelist() \
            if os.path.exists(os.path.join(artifacts, "baselines.zip")) else []
        check("gitlab push %d: no gate, the baselines published" % n,
              not os.path.exists(os.path.join(d, "gate.xml")) and len(names) == n, names)
    gate, d = run_gitlab(gl, root, "merge_request_event", FIXED, artifacts, 3)
    reports("gitlab merge request, no change", d, gate, False, os.path.join(d, "notes", "note.md"))
    gate, d = run_gitlab(gl, root, "merge_request_event", BAD, artifacts, 4)
    reports("gitlab merge request, a sync added", d, gate, True, os.path.join(d, "notes", "note.md"))
finally:
    shutil.rmtree(root, ignore_errors=True)
print("%d passed, %d failed" % (checks - failures, failures))
sys.exit(1 if failures else 0)
