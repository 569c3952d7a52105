#!/usr/bin/env python3
"""Check a cuscope trace: against what the recorded program says it did, and against invariants any trace keeps.

    check_trace.py TRACE [--expect-file OUT] [--expect "k=v k>=v ..."] [--scope NAME] [--allow-dropped]
    check_trace.py --list-keys

The test programs (samples/cuda/counts.cu, tests/gpu/programs/*) print as their last stdout line
`expect key=value ...`; --expect-file takes the last such line of a saved stdout, --expect takes the tokens
directly (both may be given, and --expect may repeat). A token is `[scope:]key OP value` with OP one of
    =   the trace must hold exactly value
    >=  at least value          <=  at most value
    ~=  informational: printed as INFO, never a failure (for numbers that depend on the driver)
Tokens with a scope ("prof:kernels=3") are used only with --scope prof, and unscoped tokens only without
--scope: one program states what several recordings of it (--capture=profiler-api, --api=all) must hold.

Every check prints one line, `PASS name detail` or `FAIL name detail` (INFO lines carry numbers only), then a
final `SUMMARY` line. Exit status: 0 when nothing failed, 1 when a check failed, 2 when the trace cannot be
read at all or the arguments are wrong.

The table and column names are those of docs/trace-format.md (src/trace/schema.c); NULL timestamps and ids
mean unknown / none and are skipped by the comparisons. Only Python's sqlite3 module is needed.
"""

import argparse
import bisect
import os
import re
import sqlite3
import sys

# ---- the schema's names (src/trace/schema.c, src/trace/names.c, include/cuscope/trace.h) ----

T_KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
T_MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
T_MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
T_MEMORY = "CUDA_GPU_MEMORY_USAGE_EVENTS"
T_SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
T_API = "CUPTI_ACTIVITY_KIND_RUNTIME"
T_NVTX = "NVTX_EVENTS"
T_STRINGS = "StringIds"
T_PROCESSES = "PROCESSES"
T_GPUS = "TARGET_INFO_GPU"
T_STREAMS = "TARGET_INFO_CUDA_STREAM"
T_META = "META"
T_TABLE_INFO = "EVENT_TABLE_INFO"

# Columns this script reads, per table; a missing one fails the "schema" check by name.
REQUIRED_COLUMNS = {
    T_KERNEL: ["start", "end", "launchStart", "launchEnd", "pid", "launchCbid", "deviceId",
               "correlationId", "graphId", "graphNodeId", "nameId"],
    T_MEMCPY: ["start", "end", "launchStart", "launchEnd", "pid", "launchCbid", "deviceId",
               "correlationId", "copyKind", "isAsync", "bytes", "graphId"],
    T_MEMSET: ["start", "end", "launchStart", "launchEnd", "pid", "launchCbid", "correlationId",
               "bytes", "graphId"],
    T_MEMORY: ["start", "pid", "memoryOperationType", "memKind", "isVmm", "returnValue", "bytes"],
    T_SYNC: ["start", "end", "pid", "syncType"],
    T_API: ["start", "end", "pid", "correlationId", "nameId"],
    T_NVTX: ["start", "end", "pid", "tid", "endTid", "nvtxType", "depth", "textId"],
    T_STRINGS: ["id", "value"],
    T_PROCESSES: ["pid", "rank", "usedCuda", "droppedRecords"],
    T_GPUS: ["pid", "deviceId", "uuid"],
    T_META: ["key", "value"],
}

# Event tables with start/end columns, and the GPU tables that carry launch times.
SPAN_TABLES = [T_KERNEL, T_MEMCPY, T_MEMSET, T_SYNC, T_API, T_NVTX]
LAUNCH_TABLES = [("kernel", T_KERNEL), ("memcpy", T_MEMCPY), ("memset", T_MEMSET)]
EVENT_TABLES = [T_KERNEL, T_MEMCPY, T_MEMSET, T_MEMORY, T_SYNC, T_API, T_NVTX]

# enum cs_copy_kind
COPY_HTOD, COPY_DTOH, COPY_DTOD, COPY_HTOH, COPY_PTOP = 1, 2, 8, 9, 10
# enum cs_mem_kind
MEM_PAGEABLE, MEM_PINNED, MEM_DEVICE = 1, 2, 3
# enum cs_mem_op
MEMOP = {"alloc": 1, "free": 2, "vmm_create": 3, "vmm_release": 4, "vmm_map": 5, "vmm_unmap": 6,
         "vmm_reserve": 7, "vmm_address_free": 8}
# enum cs_sync_type
SYNC_EVENT_SYNCHRONIZE, SYNC_STREAM_WAIT_EVENT, SYNC_STREAM_SYNCHRONIZE, SYNC_CONTEXT_SYNCHRONIZE = 1, 2, 3, 4
SYNC_MEMCPY, SYNC_EVENT_QUERY, SYNC_STREAM_QUERY = 100, 101, 102
SYNC_TYPES = {0, 1, 2, 3, 4, 100, 101, 102}
HOST_WAITS = "(1, 3, 4, 100)"  # cs_sync_type_is_host_wait()
# enum cs_nvtx_type
NVTX_PUSHPOP, NVTX_STARTEND, NVTX_MARK = 1, 2, 3

# Device allocations and frees made by the program's cudaMalloc/cudaMallocAsync/cudaFree: MEMORY2 rows (and,
# for failures, API rows) that are neither VMM operations nor host (pageable / pinned) memory nor a module's
# static variables (memKind 6 and 7, one allocation per module and context).
_DEVICE_MEM = "COALESCE(isVmm, 0) = 0 AND COALESCE(memKind, 0) NOT IN (1, 2, 6, 7)"

# ---- metrics: what an expect key measures ----

# Plain keys: name -> (SQL returning one number, description).
SIMPLE_METRICS = {
    "kernels": (f"SELECT COUNT(*) FROM {T_KERNEL}", "kernel executions"),
    "kernels_graph": (f"SELECT COUNT(*) FROM {T_KERNEL} WHERE graphId IS NOT NULL",
                      "kernel executions replayed from CUDA graphs"),
    "kernels_nongraph": (f"SELECT COUNT(*) FROM {T_KERNEL} WHERE graphId IS NULL",
                         "kernel executions not from graphs"),
    "graph_launches": (f"SELECT COUNT(*) FROM (SELECT DISTINCT pid, correlationId FROM {T_KERNEL} "
                       "WHERE graphId IS NOT NULL)",
                       "graph launches that ran kernels (distinct correlation ids of graph kernels)"),
    "graphs": (f"SELECT COUNT(*) FROM (SELECT DISTINCT pid, graphId FROM {T_KERNEL} WHERE graphId IS NOT NULL)",
               "distinct graphs whose kernels ran"),
    "graph_launch_sizes_equal": (
        f"SELECT CASE WHEN COUNT(DISTINCT n) = 1 THEN 1 ELSE 0 END FROM (SELECT COUNT(*) AS n FROM {T_KERNEL} "
        "WHERE graphId IS NOT NULL GROUP BY pid, correlationId)",
        "1 when every graph launch ran the same number of kernels (0 also when there is none)"),
    "memcpy": (f"SELECT COUNT(*) FROM {T_MEMCPY}", "copies of any kind"),
    "memcpy_htod": (f"SELECT COUNT(*) FROM {T_MEMCPY} WHERE copyKind = {COPY_HTOD}", "host to device copies"),
    "memcpy_dtoh": (f"SELECT COUNT(*) FROM {T_MEMCPY} WHERE copyKind = {COPY_DTOH}", "device to host copies"),
    "memcpy_dtod": (f"SELECT COUNT(*) FROM {T_MEMCPY} WHERE copyKind = {COPY_DTOD}",
                    "device to device copies"),
    "memcpy_htoh": (f"SELECT COUNT(*) FROM {T_MEMCPY} WHERE copyKind = {COPY_HTOH}", "host to host copies"),
    "memcpy_ptop": (f"SELECT COUNT(*) FROM {T_MEMCPY} WHERE copyKind = {COPY_PTOP}", "peer copies"),
    "memcpy_async": (f"SELECT COUNT(*) FROM {T_MEMCPY} WHERE isAsync = 1", "copies made by *Async calls"),
    "memcpy_sync": (f"SELECT COUNT(*) FROM {T_MEMCPY} WHERE COALESCE(isAsync, 0) = 0",
                    "copies made by synchronous calls"),
    "bytes_htod": (f"SELECT COALESCE(SUM(bytes), 0) FROM {T_MEMCPY} WHERE copyKind = {COPY_HTOD}",
                   "bytes copied host to device"),
    "bytes_dtoh": (f"SELECT COALESCE(SUM(bytes), 0) FROM {T_MEMCPY} WHERE copyKind = {COPY_DTOH}",
                   "bytes copied device to host"),
    "bytes_dtod": (f"SELECT COALESCE(SUM(bytes), 0) FROM {T_MEMCPY} WHERE copyKind = {COPY_DTOD}",
                   "bytes copied device to device"),
    "memset": (f"SELECT COUNT(*) FROM {T_MEMSET}", "memsets"),
    "bytes_memset": (f"SELECT COALESCE(SUM(bytes), 0) FROM {T_MEMSET}", "bytes set"),
    "host_waits": (f"SELECT COUNT(*) FROM {T_SYNC} WHERE syncType IN {HOST_WAITS}",
                   "host waits: event, stream, context synchronizations and synchronous host copies"),
    "host_waits_event": (f"SELECT COUNT(*) FROM {T_SYNC} WHERE syncType = {SYNC_EVENT_SYNCHRONIZE}",
                         "cudaEventSynchronize-like waits"),
    "host_waits_stream": (f"SELECT COUNT(*) FROM {T_SYNC} WHERE syncType = {SYNC_STREAM_SYNCHRONIZE}",
                          "cudaStreamSynchronize-like waits"),
    "host_waits_device": (f"SELECT COUNT(*) FROM {T_SYNC} WHERE syncType = {SYNC_CONTEXT_SYNCHRONIZE}",
                          "cudaDeviceSynchronize / cuCtxSynchronize waits"),
    "host_waits_memcpy": (f"SELECT COUNT(*) FROM {T_SYNC} WHERE syncType = {SYNC_MEMCPY}",
                          "synchronous copies to or from the host (the host waited for the copy)"),
    "stream_wait_events": (f"SELECT COUNT(*) FROM {T_SYNC} WHERE syncType = {SYNC_STREAM_WAIT_EVENT}",
                           "cudaStreamWaitEvent: GPU-side waits, not host waits"),
    "event_queries": (f"SELECT COUNT(*) FROM {T_SYNC} WHERE syncType = {SYNC_EVENT_QUERY}",
                      "cudaEventQuery calls"),
    "stream_queries": (f"SELECT COUNT(*) FROM {T_SYNC} WHERE syncType = {SYNC_STREAM_QUERY}",
                       "cudaStreamQuery calls"),
    "sync_unknown": (f"SELECT COUNT(*) FROM {T_SYNC} WHERE syncType = 0", "synchronizations of unknown type"),
    "allocs": (f"SELECT COUNT(*) FROM {T_MEMORY} WHERE memoryOperationType = 1 AND "
               f"COALESCE(returnValue, 0) = 0 AND {_DEVICE_MEM}",
               "successful device allocations (cudaMalloc, cudaMallocAsync, cuMemAlloc)"),
    "alloc_bytes": (f"SELECT COALESCE(SUM(bytes), 0) FROM {T_MEMORY} WHERE memoryOperationType = 1 AND "
                    f"COALESCE(returnValue, 0) = 0 AND {_DEVICE_MEM}",
                    "bytes of successful device allocations, as recorded"),
    "alloc_failed": (f"SELECT COUNT(*) FROM {T_MEMORY} WHERE memoryOperationType = 1 AND "
                     "COALESCE(returnValue, 0) != 0 AND COALESCE(isVmm, 0) = 0",
                     "failed allocation calls"),
    "frees": (f"SELECT COUNT(*) FROM {T_MEMORY} WHERE memoryOperationType = 2 AND "
              f"COALESCE(returnValue, 0) = 0 AND {_DEVICE_MEM}",
              "device frees (cudaFree, cudaFreeAsync, cuMemFree)"),
    "free_failed": (f"SELECT COUNT(*) FROM {T_MEMORY} WHERE memoryOperationType = 2 AND "
                    "COALESCE(returnValue, 0) != 0 AND COALESCE(isVmm, 0) = 0", "failed free calls"),
    "static_allocs": (f"SELECT COUNT(*) FROM {T_MEMORY} WHERE memoryOperationType = 1 AND memKind IN (6, 7)",
                      "static memory of loaded modules (__device__ variables), per module and context"),
    "pinned_allocs": (f"SELECT COUNT(*) FROM {T_MEMORY} WHERE memoryOperationType = 1 AND memKind = {MEM_PINNED}",
                      "pinned host allocations (cudaMallocHost), when CUPTI reports them"),
    "vmm_creates": (f"SELECT COUNT(*) FROM {T_MEMORY} WHERE memoryOperationType = {MEMOP['vmm_create']} "
                    "AND COALESCE(returnValue, 0) = 0", "successful cuMemCreate calls"),
    "vmm_releases": (f"SELECT COUNT(*) FROM {T_MEMORY} WHERE memoryOperationType = {MEMOP['vmm_release']}",
                     "cuMemRelease calls"),
    "vmm_maps": (f"SELECT COUNT(*) FROM {T_MEMORY} WHERE memoryOperationType = {MEMOP['vmm_map']}",
                 "cuMemMap calls"),
    "vmm_unmaps": (f"SELECT COUNT(*) FROM {T_MEMORY} WHERE memoryOperationType = {MEMOP['vmm_unmap']}",
                   "cuMemUnmap calls"),
    "vmm_reserves": (f"SELECT COUNT(*) FROM {T_MEMORY} WHERE memoryOperationType = {MEMOP['vmm_reserve']}",
                     "cuMemAddressReserve calls"),
    "vmm_failed": (f"SELECT COUNT(*) FROM {T_MEMORY} WHERE isVmm = 1 AND COALESCE(returnValue, 0) != 0",
                   "failed VMM calls (cuMemCreate at the memory ceiling, ...)"),
    "nvtx": (f"SELECT COUNT(*) FROM {T_NVTX}", "NVTX events of any type"),
    "nvtx_ranges": (f"SELECT COUNT(*) FROM {T_NVTX} WHERE nvtxType = {NVTX_PUSHPOP}", "push/pop ranges"),
    "nvtx_start_end": (f"SELECT COUNT(*) FROM {T_NVTX} WHERE nvtxType = {NVTX_STARTEND}", "start/end ranges"),
    "nvtx_marks": (f"SELECT COUNT(*) FROM {T_NVTX} WHERE nvtxType = {NVTX_MARK}", "marks"),
    "nvtx_depth": (f"SELECT COALESCE(MAX(depth) + 1, 0) FROM {T_NVTX} WHERE nvtxType = {NVTX_PUSHPOP}",
                   "deepest push/pop nesting (1 = no nesting)"),
    "nvtx_cross_thread": (f"SELECT COUNT(*) FROM {T_NVTX} WHERE nvtxType = {NVTX_STARTEND} AND "
                          "endTid IS NOT NULL AND endTid != 0 AND endTid != tid",
                          "start/end ranges ended on another thread"),
    "nvtx_open": (f'SELECT COUNT(*) FROM {T_NVTX} WHERE nvtxType IN (1, 2) AND "end" IS NULL',
                  "ranges that never ended"),
    "api_calls": (f"SELECT COUNT(*) FROM {T_API}", "API rows"),
    "processes": (f"SELECT COUNT(*) FROM {T_PROCESSES}", "process rows"),
    "processes_cuda": (f"SELECT COUNT(*) FROM {T_PROCESSES} WHERE usedCuda = 1", "processes that used the GPU"),
    "ranks": (f"SELECT COUNT(DISTINCT rank) FROM {T_PROCESSES} WHERE rank IS NOT NULL AND rank >= 0",
              "distinct RANK values of the processes"),
    "devices": (f"SELECT COUNT(DISTINCT uuid) FROM {T_GPUS}", "distinct GPUs (by UUID)"),
    "dropped": (f"SELECT COALESCE(SUM(droppedRecords), 0) FROM {T_PROCESSES}", "records lost"),
}

# Keys with an argument: prefix -> description. The argument follows the prefix ("kname.cs_add").
PARAM_METRICS = {
    "kname.": "kernels whose (mangled) name contains the text",
    "kernels_device.": "kernels that ran on the device with this CUDA device id (kernels_device.1)",
    "memcpy_device.": "copies made on the device with this CUDA device id (the device of the copy's stream)",
    "nvtx_text.": "NVTX events whose text contains the text",
    "nvtx_max.": "largest N among NVTX texts of the form <text>N (the last step a killed program recorded)",
    "kernels_in_nvtx.": "kernels launched (launchStart) inside an NVTX range of the same process whose text "
                        "starts with the text",
    "api.": "API rows of the function (also its _vNNNN, _ptsz, _ptds variants); the default recording keeps rows "
            "for waits, queries, synchronous copies, allocations and profiler calls, --api=all for every call",
}
OTHER_METRICS = {"exit_code": "the exit status record stored in META (exit_code)"}

TOKEN_RE = re.compile(r"^(?:([a-z][a-z0-9_]*):)?([^\s=<>~!:]+)(=|>=|<=|~=)(-?\d+)$")


class Report:
    """Collects PASS / FAIL / INFO lines and prints them as they come."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, name, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print(f"{'PASS' if ok else 'FAIL'} {name} {detail}".rstrip(), flush=True)
        return ok

    def info(self, name, detail):
        print(f"INFO {name} {detail}", flush=True)


class Trace:
    def __init__(self, path):
        self.path = path
        self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        self.tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        self._cols = {}

    def columns(self, table):
        if table not in self._cols:
            self._cols[table] = [r[1] for r in self.db.execute(f'PRAGMA table_info("{table}")')]
        return self._cols[table]

    def scalar(self, sql, args=()):
        row = self.db.execute(sql, args).fetchone()
        return row[0] if row else None

    def rows(self, sql, args=()):
        return self.db.execute(sql, args).fetchall()

    def meta(self, key):
        if T_META not in self.tables:
            return None
        return self.scalar(f"SELECT value FROM {T_META} WHERE key = ?", (key,))


def q(name):
    """Quote an identifier (end, rank, ... are SQL keywords)."""
    return '"' + name + '"'


def metric(trace, key):
    """The value of an expect key, or raise KeyError for an unknown key."""
    if key in SIMPLE_METRICS:
        return trace.scalar(SIMPLE_METRICS[key][0])
    if key == "exit_code":
        v = trace.meta("exit_code")
        if v is None:
            raise ValueError("META has no exit_code")
        return int(v)
    for prefix in PARAM_METRICS:
        if key.startswith(prefix) and len(key) > len(prefix):
            arg = key[len(prefix):]
            return PARAM_FUNCS[prefix](trace, arg)
    raise KeyError(key)


def m_kname(trace, text):
    return trace.scalar(f"SELECT COUNT(*) FROM {T_KERNEL} k JOIN {T_STRINGS} s ON s.id = k.nameId "
                        "WHERE instr(s.value, ?) > 0", (text,))


def m_nvtx_text(trace, text):
    return trace.scalar(f"SELECT COUNT(*) FROM {T_NVTX} n JOIN {T_STRINGS} s ON s.id = n.textId "
                        "WHERE instr(s.value, ?) > 0", (text,))


def m_nvtx_max(trace, prefix):
    best = -1
    pat = re.compile(re.escape(prefix) + r"(\d+)$")
    for (value,) in trace.rows(f"SELECT DISTINCT s.value FROM {T_NVTX} n JOIN {T_STRINGS} s ON s.id = n.textId "
                               "WHERE substr(s.value, 1, length(?)) = ?", (prefix, prefix)):
        m = pat.match(value)
        if m:
            best = max(best, int(m.group(1)))
    return best


def m_kernels_in_nvtx(trace, prefix):
    # Ranges per process, merged into disjoint intervals, then one binary search per kernel.
    ranges = {}
    for pid, start, end in trace.rows(
            f"SELECT n.pid, n.start, n.{q('end')} FROM {T_NVTX} n JOIN {T_STRINGS} s ON s.id = n.textId "
            f"WHERE n.nvtxType IN (1, 2) AND n.start IS NOT NULL AND n.{q('end')} IS NOT NULL "
            "AND substr(s.value, 1, length(?)) = ? ORDER BY n.pid, n.start", (prefix, prefix)):
        iv = ranges.setdefault(pid, [])
        if iv and start <= iv[-1][1]:
            iv[-1][1] = max(iv[-1][1], end)
        else:
            iv.append([start, end])
    starts = {pid: [a for a, _ in iv] for pid, iv in ranges.items()}
    n = 0
    for pid, ls in trace.rows(f"SELECT pid, launchStart FROM {T_KERNEL} WHERE launchStart IS NOT NULL"):
        iv = ranges.get(pid)
        if not iv:
            continue
        i = bisect.bisect_right(starts[pid], ls) - 1
        if i >= 0 and ls <= iv[i][1]:
            n += 1
    return n


def m_api(trace, name):
    return trace.scalar(f"SELECT COUNT(*) FROM {T_API} a JOIN {T_STRINGS} s ON s.id = a.nameId "
                        "WHERE s.value = ? OR substr(s.value, 1, length(?) + 1) = ? || '_'", (name, name, name))


def m_kernels_device(trace, dev):
    return trace.scalar(f"SELECT COUNT(*) FROM {T_KERNEL} WHERE deviceId = ?", (int(dev),))


def m_memcpy_device(trace, dev):
    return trace.scalar(f"SELECT COUNT(*) FROM {T_MEMCPY} WHERE deviceId = ?", (int(dev),))


PARAM_FUNCS = {"kname.": m_kname, "kernels_device.": m_kernels_device, "memcpy_device.": m_memcpy_device, "nvtx_text.": m_nvtx_text, "nvtx_max.": m_nvtx_max,
               "kernels_in_nvtx.": m_kernels_in_nvtx, "api.": m_api}


# ---- the expect line ----

def parse_expect(text, scope, report):
    """Tokens of an expect line that apply to scope: a list of (key, op, value)."""
    out = []
    for tok in text.split():
        if tok == "expect":
            continue
        m = TOKEN_RE.match(tok)
        if not m:
            report.check(False, "expect.parse", f"cannot read token '{tok}'")
            continue
        tok_scope, key, op, value = m.group(1) or "", m.group(2), m.group(3), int(m.group(4))
        if tok_scope == (scope or ""):
            out.append((key, op, value))
    return out


def expect_line_of(path, report):
    """The last line of a saved stdout that starts with 'expect ' (None when there is none)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [ln.strip() for ln in f if ln.startswith("expect ")]
    except OSError as e:
        report.check(False, "expect.file", f"cannot read {path}: {e.strerror}")
        return None
    if not lines:
        report.check(False, "expect.file", f"{path} has no 'expect ...' line (did the program finish?)")
        return None
    return lines[-1]


def check_expect(trace, items, report):
    explained = set()
    for key, op, want in items:
        name = f"expect.{key}"
        try:
            got = metric(trace, key)
        except KeyError:
            report.check(False, name, f"unknown key '{key}' (check_trace.py --list-keys)")
            continue
        except (ValueError, sqlite3.Error) as e:
            report.check(False, name, f"cannot measure: {e}")
            continue
        got = 0 if got is None else got
        if op == "~=":
            report.info(name, f"{got} (program says {want}; informational)")
            continue
        ok = {"=": got == want, ">=": got >= want, "<=": got <= want}[op]
        report.check(ok, name, f"{got} (expected {want})" if op == "=" else f"{got} (expected {op} {want})")
        if not ok:
            explain(trace, key, report, explained)


def explain(trace, key, report, explained):
    """After a failed count, print (once per kind of key) the breakdown that helps to see why."""
    kind = key.split(".")[0].split("_")[0]
    if kind in explained:
        return
    explained.add(kind)
    try:
        if key.startswith("host_waits") or key in ("stream_queries", "event_queries", "stream_wait_events"):
            rows = trace.rows(f"SELECT syncType, COUNT(*) FROM {T_SYNC} GROUP BY syncType ORDER BY syncType")
            report.info(f"explain.{key}", "sync rows by type: " + ", ".join(f"{t}:{n}" for t, n in rows))
        elif key.startswith("memcpy") or key.startswith("bytes_"):
            rows = trace.rows(f"SELECT copyKind, isAsync, COUNT(*), SUM(bytes) FROM {T_MEMCPY} "
                              "GROUP BY copyKind, isAsync ORDER BY copyKind, isAsync")
            report.info(f"explain.{key}", "memcpy rows by (copyKind, isAsync): " +
                        ", ".join(f"({k},{a}):{n} rows/{b} B" for k, a, n, b in rows))
        elif key in ("allocs", "frees", "alloc_failed", "free_failed", "alloc_bytes", "pinned_allocs",
                     "static_allocs") or \
                key.startswith("vmm_"):
            rows = trace.rows(f"SELECT memoryOperationType, memKind, isVmm, returnValue, COUNT(*) FROM {T_MEMORY} "
                              "GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4")
            report.info(f"explain.{key}", "memory rows by (op, memKind, isVmm, returnValue): " +
                        ", ".join(f"({o},{k},{v},{r}):{n}" for o, k, v, r, n in rows))
        elif key.startswith("kernels") or key.startswith("kname.") or key.startswith("graph"):
            rows = trace.rows(f"SELECT s.value, k.graphId IS NOT NULL, COUNT(*) FROM {T_KERNEL} k "
                              f"LEFT JOIN {T_STRINGS} s ON s.id = k.nameId GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 12")
            report.info(f"explain.{key}", "kernels by (name, from graph): " +
                        ", ".join(f"({(nm or '?')[:60]},{g}):{n}" for nm, g, n in rows))
        elif key.startswith("nvtx"):
            rows = trace.rows(f"SELECT nvtxType, depth, COUNT(*) FROM {T_NVTX} GROUP BY 1, 2 ORDER BY 1, 2")
            report.info(f"explain.{key}", "nvtx rows by (type, depth): " +
                        ", ".join(f"({t},{d}):{n}" for t, d, n in rows))
        elif key.startswith("api."):
            rows = trace.rows(f"SELECT s.value, COUNT(*) FROM {T_API} a LEFT JOIN {T_STRINGS} s ON s.id = a.nameId "
                              "GROUP BY 1 ORDER BY 2 DESC LIMIT 20")
            report.info(f"explain.{key}", "API rows by name: " + ", ".join(f"{nm}:{n}" for nm, n in rows))
        elif key.startswith("process") or key == "ranks":
            rows = trace.rows(f"SELECT pid, rank, usedCuda, commandLine FROM {T_PROCESSES}")
            report.info(f"explain.{key}", "processes (pid, rank, usedCuda, command): " +
                        "; ".join(f"({p},{r},{u},{(c or '')[:60]})" for p, r, u, c in rows))
    except sqlite3.Error:
        pass


# ---- invariants every trace keeps ----

def check_schema(trace, report):
    missing = []
    for table, cols in REQUIRED_COLUMNS.items():
        if table not in trace.tables:
            missing.append(f"table {table}")
            continue
        have = set(trace.columns(table))
        missing += [f"{table}.{c}" for c in cols if c not in have]
    version = trace.meta("schema_version")
    report.check(not missing, "schema",
                 f"schema_version {version}, all tables and columns present" if not missing
                 else "missing: " + ", ".join(missing))
    return not missing


def check_table_info(trace, report):
    if T_TABLE_INFO not in trace.tables:
        report.info("table_info", f"no {T_TABLE_INFO} table")
        return
    bad = []
    for table, count in trace.rows(f"SELECT tableName, rowCount FROM {T_TABLE_INFO}"):
        if table in trace.tables:
            real = trace.scalar(f'SELECT COUNT(*) FROM "{table}"')
            if real != count:
                bad.append(f"{table} says {count}, holds {real}")
    report.check(not bad, "table_info", "row counts match" if not bad else "; ".join(bad))


def check_time_order(trace, report):
    """docs/trace-format.md: event rows are sorted by start (unknown starts first), rowids 1..N without gaps."""
    bad = []
    for table in EVENT_TABLES:
        n, top = trace.rows(f"SELECT COUNT(*), MAX(rowid) FROM {table}")[0]
        if n and top != n:
            bad.append(f"{table}: {n} rows, max rowid {top}")
            continue
        out = trace.scalar(f"SELECT COUNT(*) FROM {table} a JOIN {table} b ON b.rowid = a.rowid + 1 "
                           "WHERE a.start IS NOT NULL AND (b.start IS NULL OR b.start < a.start)")
        if out:
            bad.append(f"{table}: {out} rows start before the row above them")
    report.check(not bad, "time_order", "event tables are in start order, rowids without gaps" if not bad
                 else "; ".join(bad))


def check_launch_joined(trace, report):
    """Every GPU row has the host time of the call that launched it (a graph's replayed rows: the graph launch)."""
    for kind, table in LAUNCH_TABLES:
        total = trace.scalar(f"SELECT COUNT(*) FROM {table}")
        unjoined = trace.scalar(f"SELECT COUNT(*) FROM {table} WHERE launchStart IS NULL AND launchCbid IS NULL")
        dropped = trace.scalar(f"SELECT COUNT(*) FROM {table} WHERE (launchStart IS NULL OR launchEnd IS NULL) "
                               "AND launchCbid IS NOT NULL")
        if not unjoined and not dropped:
            graph = trace.scalar(f"SELECT COUNT(*) FROM {table} WHERE graphId IS NOT NULL")
            report.check(True, f"launch_joined.{kind}",
                         f"all {total} rows have launch times ({graph} from graph launches)")
            continue
        if kind == "kernel":
            ex = trace.rows(f"SELECT s.value, k.correlationId, k.graphId, k.launchCbid, k.start FROM {table} k "
                            f"LEFT JOIN {T_STRINGS} s ON s.id = k.nameId WHERE k.launchStart IS NULL "
                            "OR k.launchEnd IS NULL LIMIT 3")
            ex_s = "; ".join(f"{(n or '?')[:50]} corr={c} graph={g} cbid={cb} start={st}" for n, c, g, cb, st in ex)
        else:
            ex = trace.rows(f"SELECT correlationId, graphId, launchCbid, bytes, start FROM {table} "
                            "WHERE launchStart IS NULL OR launchEnd IS NULL LIMIT 3")
            ex_s = "; ".join(f"corr={c} graph={g} cbid={cb} bytes={b} start={st}" for c, g, cb, b, st in ex)
        report.check(False, f"launch_joined.{kind}",
                     f"{unjoined + dropped} of {total} rows lack launch times: {unjoined} never joined a launch "
                     f"call, {dropped} joined one whose times were dropped as implausible; e.g. {ex_s}")


def check_spans(trace, report, slack_ns):
    end = q("end")
    for table in SPAN_TABLES:
        n = trace.scalar(f"SELECT COUNT(*) FROM {table} WHERE start IS NOT NULL AND {end} IS NOT NULL "
                         f"AND {end} < start")
        report.check(n == 0, f"end_after_start.{table}", "no row ends before it starts" if n == 0
                     else f"{n} rows end before they start")
    for kind, table in LAUNCH_TABLES:
        n1 = trace.scalar(f"SELECT COUNT(*) FROM {table} WHERE launchEnd < launchStart")
        n2, worst = trace.rows(f"SELECT COUNT(*), MAX(launchStart - start) FROM {table} WHERE launchStart IS NOT NULL "
                               "AND start IS NOT NULL AND launchStart > start + ?", (slack_ns,))[0]
        ok = n1 == 0 and n2 == 0
        report.check(ok, f"launch_before_gpu.{kind}",
                     "every launch call starts before its GPU work and ends after it starts" if ok else
                     f"{n1} launch calls end before they start, {n2} start after their GPU work "
                     f"(worst by {worst} ns, slack {slack_ns} ns)")
    # Graph replays: all rows of one graph launch come from the same call.
    n = trace.scalar(f"SELECT COUNT(*) FROM (SELECT pid, correlationId FROM {T_KERNEL} WHERE graphId IS NOT NULL "
                     "AND launchStart IS NOT NULL GROUP BY pid, correlationId HAVING COUNT(DISTINCT launchStart) > 1)")
    launches = trace.scalar(SIMPLE_METRICS["graph_launches"][0])
    report.check(n == 0, "graph_launch_call", f"each of {launches} graph launches has one launch call" if n == 0
                 else f"{n} graph launches have kernels with different launch times")
    # With every API call recorded (--api=all), a graph kernel's call must be a graph launch.
    rows = trace.rows(f"SELECT s.value, COUNT(*) FROM {T_KERNEL} k JOIN {T_API} a ON a.pid = k.pid AND "
                      f"a.correlationId = k.correlationId JOIN {T_STRINGS} s ON s.id = a.nameId "
                      "WHERE k.graphId IS NOT NULL GROUP BY s.value")
    if rows:
        bad = [(nm, c) for nm, c in rows if "GraphLaunch" not in (nm or "")]
        report.check(not bad, "graph_launch_api", "graph kernels join " + ", ".join(f"{nm} ({c})" for nm, c in rows))
    no = trace.scalar(f"SELECT COUNT(*) FROM {T_KERNEL} WHERE graphId IS NOT NULL AND graphNodeId IS NULL")
    report.check(no == 0, "graph_node_ids", "graph kernels have node ids" if no == 0
                 else f"{no} graph kernels have no graphNodeId")
    # Time is relative to the trace start.
    neg = []
    for table in EVENT_TABLES:
        v = trace.scalar(f"SELECT MIN(start) FROM {table}")
        if v is not None and v < 0:
            neg.append(f"{table} {v}")
    report.check(not neg, "timestamps_nonnegative", "no event before the trace start" if not neg
                 else "negative starts: " + ", ".join(neg))


def check_references(trace, report):
    """Ids point at rows that exist: names, texts, processes, devices; enum values are known."""
    for name, table, col in (("names.kernel", T_KERNEL, "nameId"), ("names.nvtx", T_NVTX, "textId"),
                             ("names.api", T_API, "nameId")):
        null_ok = "" if table == T_KERNEL else f"{col} IS NOT NULL AND "
        n = trace.scalar(f"SELECT COUNT(*) FROM {table} WHERE {null_ok}({col} IS NULL OR {col} NOT IN "
                         f"(SELECT id FROM {T_STRINGS}))")
        report.check(n == 0, name, f"every {col} resolves in {T_STRINGS}" if n == 0 else f"{n} rows with a bad {col}")
    pids = {r[0] for r in trace.rows(f"SELECT pid FROM {T_PROCESSES}")}
    orphans = set()
    for table in EVENT_TABLES:
        orphans |= {r[0] for r in trace.rows(f"SELECT DISTINCT pid FROM {table}")} - pids
    report.check(bool(pids) and not orphans, "processes",
                 f"{len(pids)} process rows, every event's pid among them" if pids and not orphans
                 else f"{len(pids)} process rows; pids with events but no process row: {sorted(orphans)}")
    kernels = trace.scalar(f"SELECT COUNT(*) FROM {T_KERNEL}")
    if kernels:
        cuda = trace.scalar(f"SELECT COUNT(*) FROM {T_PROCESSES} WHERE usedCuda = 1")
        report.check(cuda > 0, "processes_used_cuda", f"{cuda} processes marked as using CUDA")
        missing = trace.rows(f"SELECT DISTINCT k.pid, k.deviceId FROM {T_KERNEL} k WHERE NOT EXISTS (SELECT 1 FROM "
                             f"{T_GPUS} g WHERE g.pid = k.pid AND g.deviceId = k.deviceId)")
        nouuid = trace.scalar(f"SELECT COUNT(*) FROM {T_GPUS} WHERE uuid IS NULL OR uuid = ''")
        ok = not missing and nouuid == 0
        report.check(ok, "devices", "every kernel's (pid, device) has a GPU row with a UUID" if ok
                     else f"(pid, device) without GPU row: {missing[:5]}; GPU rows without UUID: {nouuid}")
    bad_sync = [r[0] for r in trace.rows(f"SELECT DISTINCT syncType FROM {T_SYNC}") if r[0] not in SYNC_TYPES]
    bad_copy = [r[0] for r in trace.rows(f"SELECT DISTINCT copyKind FROM {T_MEMCPY}")
                if r[0] is None or not 0 <= r[0] <= 10]
    nobytes = trace.scalar(f"SELECT COUNT(*) FROM {T_MEMCPY} WHERE bytes IS NULL OR bytes <= 0")
    ok = not bad_sync and not bad_copy and nobytes == 0
    report.check(ok, "enum_values", "sync types, copy kinds and copy sizes are valid" if ok
                 else f"unknown sync types {bad_sync}, copy kinds {bad_copy}, {nobytes} copies without bytes")
    neg = trace.scalar(f"SELECT COUNT(*) FROM {T_NVTX} WHERE depth < 0")
    report.check(neg == 0, "nvtx_depth_valid", "no negative depth" if neg == 0 else f"{neg} rows with depth < 0")


def check_dropped(trace, report, allow):
    dropped = metric(trace, "dropped")
    if allow:
        report.check(True, "dropped_records", f"{dropped} records lost (allowed here)")
    else:
        report.check(dropped == 0, "dropped_records", "no record lost" if dropped == 0
                     else f"{dropped} records lost (PROCESSES.droppedRecords)")


def check_window(trace, report, window, slack_ns=20_000_000):
    """--window DELAY:DURATION (seconds): every kernel, copy, memset, wait and API call starts inside
    [record start + DELAY, record start + DELAY + DURATION), within slack_ns for the clocks' conversion."""
    delay, duration = (float(x) for x in window.split(":"))
    t0 = int(trace.meta("record_start_realtime_ns")) + int(delay * 1e9)
    t1 = t0 + int(duration * 1e9) if duration > 0 else None
    base = int(trace.meta("realtime_base_ns"))
    total = 0
    for table in (T_KERNEL, T_MEMCPY, T_MEMSET, T_SYNC, T_API):
        if table not in trace.tables:
            continue
        lo, hi, n = trace.rows(f"SELECT MIN(start), MAX(start), COUNT(*) FROM {table} WHERE start IS NOT NULL")[0]
        if not n:
            continue
        total += n
        ok = lo + base >= t0 - slack_ns and (t1 is None or hi + base < t1 + slack_ns)
        report.check(ok, f"window.{table}", f"{n} rows start {(lo + base - t0) / 1e9:+.3f}..{(hi + base - t0) / 1e9:+.3f} s "
                     f"from the window's start (window {duration:g} s)")
    report.check(total > 0, "window.nonempty", f"{total} rows in the window")


def print_counts(trace, report):
    """One INFO line with the sizes of the trace, which tests/gpu/run.sh puts into its summary."""
    parts = []
    for label, table in (("kernels", T_KERNEL), ("memcpy", T_MEMCPY), ("memset", T_MEMSET), ("memory", T_MEMORY),
                         ("sync", T_SYNC), ("api", T_API), ("nvtx", T_NVTX)):
        parts.append(f"{label}={trace.scalar(f'SELECT COUNT(*) FROM {table}') if table in trace.tables else '-'}")
    for key in ("processes", "processes_cuda", "dropped"):
        try:
            parts.append(f"{key}={metric(trace, key)}")
        except sqlite3.Error:
            parts.append(f"{key}=-")
    nulls = 0
    for table in (T_KERNEL, T_MEMCPY, T_MEMSET):
        if table in trace.tables:
            nulls += trace.scalar(f"SELECT COUNT(*) FROM {table} WHERE start IS NULL OR {q('end')} IS NULL")
    parts.append(f"unknown_gpu_times={nulls}")
    parts.append(f"bytes={os.path.getsize(trace.path)}")
    report.info("counts", " ".join(parts))


def list_keys():
    print("expect keys (token: [scope:]key OP value, OP one of = >= <= ~=):")
    for key, (_, desc) in SIMPLE_METRICS.items():
        print(f"  {key:26} {desc}")
    for key, desc in PARAM_METRICS.items():
        print(f"  {key + 'TEXT':26} {desc}")
    for key, desc in OTHER_METRICS.items():
        print(f"  {key:26} {desc}")


def main():
    ap = argparse.ArgumentParser(description="Check a cuscope trace against a program's expect line and invariants.")
    ap.add_argument("trace", nargs="?", help="the .db file")
    ap.add_argument("--expect-file", action="append", default=[],
                    help="a saved stdout whose last 'expect ...' line is checked")
    ap.add_argument("--expect", action="append", default=[], help="expect tokens, e.g. 'kernels=3 memcpy_dtoh>=1'")
    ap.add_argument("--scope", default="", help="use the tokens of this scope (prof:..., api:...) instead of unscoped ones")
    ap.add_argument("--allow-dropped", action="store_true", help="lost records are not a failure (killed programs)")
    ap.add_argument("--slack-ns", type=int, default=0,
                    help="how far a launch call may start after its GPU work before it is a failure (default 0)")
    ap.add_argument("--no-invariants", action="store_true", help="check only the expect tokens")
    ap.add_argument("--window", metavar="DELAY:DURATION",
                    help="recorded with --delay/--duration: every event starts inside that window")
    ap.add_argument("--list-keys", action="store_true", help="list the expect keys and exit")
    a = ap.parse_args()

    if a.list_keys:
        list_keys()
        return 0
    if not a.trace:
        ap.error("a trace is needed")
    report = Report()
    if not os.path.isfile(a.trace):
        print(f"FAIL open {a.trace}: no such file")
        return 2
    try:
        trace = Trace(a.trace)
        trace.scalar("SELECT COUNT(*) FROM sqlite_master")
    except sqlite3.Error as e:
        print(f"FAIL open {a.trace}: {e}")
        return 2
    report.check(True, "open", f"{a.trace} ({os.path.getsize(a.trace)} bytes)")

    items = []
    for path in a.expect_file:
        line = expect_line_of(path, report)
        if line:
            items += parse_expect(line, a.scope, report)
    for text in a.expect:
        items += parse_expect(text, a.scope, report)
    if (a.expect_file or a.expect) and not items and report.failed == 0:
        report.check(False, "expect.scope", f"no expect token for scope '{a.scope}'")

    if not check_schema(trace, report):
        print(f"SUMMARY {report.passed} passed, {report.failed} failed (schema mismatch: nothing else checked)")
        return 1
    steps = [lambda: print_counts(trace, report)]
    if not a.no_invariants:
        steps += [lambda: check_table_info(trace, report), lambda: check_time_order(trace, report),
                  lambda: check_launch_joined(trace, report),
                  lambda: check_spans(trace, report, a.slack_ns), lambda: check_references(trace, report),
                  lambda: check_dropped(trace, report, a.allow_dropped)]
    if a.window:
        steps.append(lambda: check_window(trace, report, a.window))
    steps.append(lambda: check_expect(trace, items, report))
    for step in steps:
        try:
            step()
        except sqlite3.Error as e:
            report.check(False, "sql", f"{type(e).__name__}: {e}")
    print(f"SUMMARY {report.passed} passed, {report.failed} failed")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
