"""stack_cost.py - what one stack capture (`cuscope record --backtrace`) costs the calling thread.

    CUSCOPE_PYFRAMES_PROBE=build/tests/libpyframes-probe.so python3 tests/bench/stack_cost.py [N]

Calls the test probe library (tests/unit/pyframes_probe.c, built with the tests) through ctypes, which
releases the GIL as PyTorch's bindings do, from Python call depths 1, 10, 30 and 60, and prints the average
nanoseconds per capture of the native return addresses (glibc backtrace, at most 48 frames) plus the Python
frames with their lines, over N captures (default 20000). The deduplication and the write of a new stack,
which follow in stacks.c, are not included: a training loop hits the same few stacks every step.
"""
import ctypes
import os
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
lib = ctypes.CDLL(os.environ["CUSCOPE_PYFRAMES_PROBE"])
lib.cs_test_capture_cost.restype = ctypes.c_double
lib.cs_test_capture_cost.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]


def at_depth(d):
    if d > 1:
        return at_depth(d - 1)
    nat, py = ctypes.c_int(), ctypes.c_int()
    lib.cs_test_capture_cost(n // 10, ctypes.byref(nat), ctypes.byref(py))  # warm the caches
    ns = lib.cs_test_capture_cost(n, ctypes.byref(nat), ctypes.byref(py))
    return ns, nat.value, py.value


print(f"python {sys.version.split()[0]}, {n} captures each")
print(f"{'python depth':>12} {'native frames':>14} {'python frames':>14} {'us per capture':>15}")
for d in (1, 10, 30, 60):
    ns, nat, py = at_depth(d)
    print(f"{d:12d} {nat:14d} {py:14d} {ns / 1000:15.2f}")
