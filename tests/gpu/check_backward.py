"""check_backward.py - the CUDA calls autograd's engine thread makes in backward() name the backward() line.

    python3 check_backward.py TRACE BACKWARD_LINE FORWARD_LINE

TRACE is a `cuscope record --backtrace` trace of tests/gpu/programs/backward_blame.py. Every device memory
event with a stack from a thread other than the main one must carry the note frame (kind 3) and then the main
thread's Python frames: the first is torch's autograd entry, the first in backward_blame.py is step() at
BACKWARD_LINE. The main thread's own allocations must show FORWARD_LINE. Prints PASS/FAIL lines; exit 1 on a
failure.
"""
import sqlite3
import sys

db = sqlite3.connect(sys.argv[1])
B, F = int(sys.argv[2]), int(sys.argv[3])


def frames(s):
    return db.execute(
        """SELECT f.kind, sy.value, fi.value, f.line FROM STACKS st
           JOIN STACK_FRAMES f ON f.id = st.frameId LEFT JOIN StringIds sy ON sy.id = f.symbolId
           LEFT JOIN StringIds fi ON fi.id = f.fileId WHERE st.id = ? ORDER BY st.depth""",
        (s,),
    ).fetchall()


rows = db.execute("SELECT tid, pid, stackId FROM CUDA_GPU_MEMORY_USAGE_EVENTS WHERE stackId IS NOT NULL").fetchall()
eng = [r for r in rows if r[0] != r[1]]
ok = 0
bad = None
for tid, pid, s in eng:
    fr = frames(s)
    note = [i for i, f in enumerate(fr) if f[0] == 3]
    py = [f for f in fr if f[0] == 2]
    user = [f for f in py if f[2] and f[2].endswith("backward_blame.py")]
    good = bool(
        note
        and py
        and py[0][1] in ("_engine_run_backward", "backward")
        and "torch/autograd/" in (py[0][2] or "")
        and user
        and user[0][3] == B
        and user[0][1] == "step"
    )
    ok += good
    if not good and bad is None:
        bad = fr
main_ok = any(f[0] == 2 and f[3] == F for r in rows if r[0] == r[1] for f in frames(r[2]))
fail = 0
if eng and ok == len(eng):
    print(f"PASS engine_thread_backward_line {ok} of {len(eng)} engine-thread memory events name line {B}")
else:
    fail = 1
    print(f"FAIL engine_thread_backward_line {ok} of {len(eng)} engine-thread memory events name line {B}")
    if bad:
        print("     first failing stack:", [(k, s, (f or "").rsplit("/", 1)[-1], ln) for k, s, f, ln in bad][:16])
print(("PASS" if main_ok else "FAIL") + f" main_thread_forward_line line {F} on a main-thread allocation")
fail |= not main_ok
sys.exit(fail)
