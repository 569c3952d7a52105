#!/usr/bin/env python3
"""check_launch_lines.py TRACE OUTPUT - the launch sites of tests/gpu/programs/launch_lines.py against its own lines.

OUTPUT is the program's output (its `info: steps=N cumsum_line=.. mul_line=.. ...` line). For every kernel of
the trace whose launch has a stack, the Python frames of that stack are compared with the line the program
says launched it: the prefix sum (a kernel named like *scan*/*cumsum*) must name CUMSUM_LINE, the in-place
multiplies MUL_LINE or MUL2_LINE (both lines, each in about half of them), the forward matmul MM_LINE, the
kernels launched by autograd's engine thread BACKWARD_LINE. Checks that no kernel names a wrong line, that
every main-thread launch of the steps has a stack, and how many distinct stacks the launches made (the call
sites, not one per launch). Prints PASS/FAIL lines; exit 1 on any failure.
"""
import re
import sqlite3
import sys

path, out = sys.argv[1], open(sys.argv[2]).read()
m = re.search(r"steps=(\d+) (.*)", out)
if not m:
    sys.exit("FAIL no steps line in the program's output")
steps = int(m.group(1))
want = {k: int(v) for k, v in re.findall(r"(\w+)_line=(\d+)", m.group(2))}
db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
fails = 0


def check(name, ok, detail):
    global fails
    print(("PASS" if ok else "FAIL"), name, detail)
    fails += 0 if ok else 1


pid_main = db.execute("SELECT pid FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY pid ORDER BY count(*) DESC").fetchone()[0]
rows = db.execute("""SELECT k.stackId, s.value, k.launchTid FROM CUPTI_ACTIVITY_KIND_KERNEL k
                     JOIN StringIds s ON s.id = k.nameId WHERE k.pid = ?""", (pid_main,)).fetchall()
py_of = {}


def py_lines(sid):
    if sid not in py_of:
        q = """SELECT fi.value, f.line FROM STACKS st JOIN STACK_FRAMES f ON f.id = st.frameId
               LEFT JOIN StringIds fi ON fi.id = f.fileId WHERE st.id = ? AND f.kind = 2 ORDER BY st.depth"""
        py_of[sid] = [l for f, l in db.execute(q, (sid,)) if f and f.endswith("launch_lines.py")]
    return py_of[sid]


def kind(name):
    if re.search(r"scan|cumsum|Scan", name):
        return "cumsum"
    if "MulFunctor" in name or "mul" in name.lower() and "gemm" not in name.lower():
        return "mul"
    if re.search(r"gemm|nvjet|cutlass|xmma|sm\d+_", name):
        return "mm"
    return None


main_tid = pid_main  # the main thread's id is the process id
by = {"cumsum": [0, 0, 0], "mul": [0, 0, 0], "mm": [0, 0, 0], "backward": [0, 0, 0]}  # launches, with stack, right
mul_lines = {}
wrong = []
for sid, name, tid in rows:
    k = "backward" if tid != main_tid else kind(name)
    if k is None:
        continue
    c = by[k]
    c[0] += 1
    if sid is None:
        continue
    c[1] += 1
    lines = py_lines(sid)
    if k == "backward":
        ok = want["backward"] in lines
    elif k == "mul":
        hit = [l for l in lines if l in (want["mul"], want["mul2"])]
        ok = bool(hit)
        if hit:
            mul_lines[hit[0]] = mul_lines.get(hit[0], 0) + 1
    else:
        ok = want[k] in lines
    c[2] += ok
    if not ok and len(wrong) < 5:
        wrong.append((k, name[:60], lines[:4]))

for k in ("cumsum", "mul", "mm"):
    n, ws, right = by[k]
    check(f"{k}_launches_name_their_line", n >= steps and ws == n and right == ws,
          f"{right} right of {ws} with stacks, {n} launches")
n, ws, right = by["backward"]
check("backward_launches_name_backward_line", n >= steps and ws >= 1 and right == ws,
      f"{right} right of {ws} sampled, {n} launches on the engine thread")
check("both_mul_lines", len(mul_lines) == 2 and min(mul_lines.values()) >= steps // 2,
      f"launches per line: {mul_lines}")
nstacks = db.execute("SELECT count(DISTINCT stackId) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE stackId IS NOT NULL").fetchone()[0]
nk = len(rows)
check("stacks_per_call_site", 0 < nstacks <= nk // 10, f"{nstacks} distinct stacks for {nk} kernels")
for w in wrong:
    print("INFO wrong:", w)
sys.exit(1 if fails else 0)
