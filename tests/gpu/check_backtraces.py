#!/usr/bin/env python3
"""check_backtraces.py TRACE FILE_SUFFIX ITEM_LINE EMPTY_LINE

Checks a trace recorded with `cuscope record --backtrace` of tests/gpu/programs/gil_spin.py: the host waits
after the DtoH copies and the copies themselves carry stacks whose Python frames name FILE_SUFFIX:ITEM_LINE,
and the frees of empty_cache name FILE_SUFFIX:EMPTY_LINE; native frames are symbolized. Prints PASS/FAIL lines,
exit 1 on any failure.
"""
import sqlite3
import sys

path, suffix, item_line, empty_line = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
fails = 0


def frames(stack_id):
    q = """SELECT f.kind, m.value, s.value, fi.value, f.line FROM STACKS st
           JOIN STACK_FRAMES f ON f.id = st.frameId
           LEFT JOIN StringIds m ON m.id = f.moduleId LEFT JOIN StringIds s ON s.id = f.symbolId
           LEFT JOIN StringIds fi ON fi.id = f.fileId
           WHERE st.id = ? ORDER BY st.depth"""
    return db.execute(q, (stack_id,)).fetchall()


def check(name, ok, detail):
    global fails
    print(("PASS" if ok else "FAIL"), name, detail)
    fails += 0 if ok else 1


def python_hits(table, where, line):
    rows = db.execute(f"SELECT stackId FROM {table} WHERE {where}").fetchall()
    with_stack = [r[0] for r in rows if r[0] is not None]
    hits = 0
    sample = None
    for sid in with_stack:
        fr = frames(sid)
        py = [(f, l) for k, m, s, f, l in fr if k == 2]
        if sample is None:
            sample = fr
        if any(f and f.endswith(suffix) and l == line for f, l in py):
            hits += 1
    return len(rows), len(with_stack), hits, sample


n, ws, hits, sample = python_hits("CUPTI_ACTIVITY_KIND_MEMCPY", "copyKind = 2", item_line)
check("dtoh_copies_name_item_line", n >= 20 and hits >= 20, f"{hits} of {n} DtoH copies ({ws} with stacks)")
n, ws, hits, _ = python_hits("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "syncType IN (1, 3, 4, 100)", item_line)
check("waits_name_item_line", hits >= 20, f"{hits} of {n} host waits ({ws} with stacks)")
n, ws, hits, _ = python_hits("CUDA_GPU_MEMORY_USAGE_EVENTS", "memoryOperationType = 2", empty_line)
check("frees_name_empty_cache_line", hits >= 1, f"{hits} of {n} frees ({ws} with stacks)")
if sample:
    native = [(m, s) for k, m, s, f, l in sample if k == 1]
    named = [x for x in native if x[1]]
    check("native_symbolized", len(named) >= len(native) // 2 and len(native) > 3,
          f"{len(named)} of {len(native)} native frames named; innermost: "
          + "; ".join(f"{(m or '?').rsplit('/', 1)[-1]}:{s}" for m, s in native[:6]))
    print("INFO python frames:", [(f.rsplit('/', 1)[-1] if f else None, l) for k, m, s, f, l in sample if k == 2][:6])
sys.exit(1 if fails else 0)
