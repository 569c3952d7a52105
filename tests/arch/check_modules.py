#!/usr/bin/env python3
"""Check docs/architecture.md's table of modules against the code.

Every directory of src/ is a row of the table; every header of include/cuscope/ is in one row's
interface; each source file includes only the interfaces of its own module and of the modules its
row says it uses (an arrow that runs up, or one the table does not name, fails); no fact of
src/analyzers/facts/ includes a header of the rules' side of src/analyzers/ (the run's cache,
cache.h, and what the rules build findings with); and the README's layout paragraph names every
module. Prints one line per problem and exits 1 when there is any.

    tests/arch/check_modules.py [SOURCE_ROOT]
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
problems = []


def expand(spec):
    """include/cuscope/{a,b}.h -> [a.h, b.h]; include/cuscope/x.h -> [x.h]"""
    m = re.fullmatch(r"include/cuscope/\{([^}]*)\}(\.\w+)", spec)
    if m:
        return [name + m.group(2) for name in m.group(1).split(",")]
    m = re.fullmatch(r"include/cuscope/([\w.]+)", spec)
    return [m.group(1)] if m else []


rows = {}  # module -> {"owns": set of headers, "uses": set of modules, "headers": set, "all": bool}
with open(os.path.join(root, "docs", "architecture.md"), encoding="utf-8") as f:
    for line in f:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not re.fullmatch(r"`src/\w+/`", cells[0]):
            continue
        module = cells[0].strip("`")[4:-1]
        owns = set()
        for spec in re.findall(r"`(include/cuscope/[^`]+)`", cells[2]):
            owns.update(expand(spec))
        uses = set(re.findall(r"`(\w+)/`", cells[3]))
        rows[module] = {
            "owns": owns,
            "uses": uses,
            "headers": set(re.findall(r"`(\w+\.h)`", cells[3])),
            "all": "everything above" in cells[3],
        }

if not rows:
    print("architecture: no module table in docs/architecture.md")
    sys.exit(1)

src = os.path.join(root, "src")
modules = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
for m in modules:
    if m not in rows:
        problems.append(f"src/{m}/ is not in docs/architecture.md's table of modules")
for m in rows:
    if m not in modules:
        problems.append(f"docs/architecture.md names src/{m}/, which does not exist")

owner = {}
for m, r in rows.items():
    for h in r["owns"]:
        if h in owner:
            problems.append(f"include/cuscope/{h} is the interface of both src/{owner[h]}/ and src/{m}/")
        owner[h] = m
for h in sorted(os.listdir(os.path.join(root, "include", "cuscope"))):
    if h.endswith((".h", ".def")) and h not in owner:
        problems.append(f"include/cuscope/{h} is in no module's interface in docs/architecture.md")

for m in modules:
    if m not in rows:
        continue
    r = rows[m]
    for dirpath, _, files in os.walk(os.path.join(src, m)):
        for name in sorted(files):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    own = re.match(r'\s*#\s*include\s+"(\w+\.h)"', line)
                    if (os.path.basename(dirpath) == "facts" and m == "analyzers" and own and
                            os.path.exists(os.path.join(src, m, own.group(1)))):
                        problems.append(f"{rel}:{n}: a fact includes {own.group(1)} of the rules "
                                        f"(facts take their inputs as parameters and never read "
                                        f"the cache, docs/architecture.md)")
                    inc = re.match(r'\s*#\s*include\s+"cuscope/([\w.]+)"', line)
                    if not inc:
                        continue
                    h = inc.group(1)
                    o = owner.get(h)
                    if o is None or o == m or r["all"] or o in r["uses"] or h in r["headers"]:
                        continue
                    problems.append(f"{rel}:{n}: includes cuscope/{h} of src/{o}/, which src/{m}/ "
                                    f"does not use by docs/architecture.md")

with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
    readme = f.read()
layout = readme[readme.find("## Layout"):]
for m in modules:
    if f"`src/{m}/`" not in layout:
        problems.append(f"README.md's layout paragraph does not name src/{m}/")

for p in problems:
    print(p)
print(f"architecture: {len(rows)} modules, {len(owner)} interface headers, {len(problems)} problems")
sys.exit(1 if problems else 0)
