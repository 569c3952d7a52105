"""stacks_helper.py - run by tests/unit/test_launch_sites.c: the launch sites of the injection library.

Usage: python3 stacks_helper.py PROBE_LIBRARY

Loads the probe (tests/unit/stacks_probe.c, src/collectors/stacks.c inside) with ctypes, whose calls release
the GIL as PyTorch's do, and launches from known places. Prints one line each:

    init RC PYTHON                  cs_stacks_init's result, and whether Python frames are read
    site-a IDS NONZERO              1000 launches from one line: distinct stack ids, all nonzero
    site-b IDS DIFFERENT            1000 from another line: distinct ids, differs from site-a's
    records N                       stack records written by those 2000 launches
    loop IDS                        launches from two lines inside one loop, 500 times: distinct ids
    native-paths IDS                launches from one line through two native paths (a different native
                                    stack each): distinct ids (1: the call site's key decides, not the stack)
    native WITH100 WITH1000         launches of two kernel functions on a thread without Python frames:
                                    how many of 100 and of 1000 got a stack
"""
import ctypes
import sys

probe = ctypes.CDLL(sys.argv[1])
probe.cs_test_launch.argtypes = [ctypes.c_void_p]
probe.cs_test_launch.restype = ctypes.c_uint
probe.cs_test_launch_native.argtypes = [ctypes.c_void_p, ctypes.c_int]
python = ctypes.c_int(0)
rc = probe.cs_test_stacks_init(ctypes.byref(python))
sys.stdout.write("init {} {}\n".format(rc, python.value))


def launch_a():
    return probe.cs_test_launch(0x1000)


def launch_b():
    return probe.cs_test_launch(0x1000)


ids_a = [launch_a() for _ in range(1000)]
ids_b = [launch_b() for _ in range(1000)]
sys.stdout.write("site-a {} {}\n".format(len(set(ids_a)), int(0 not in ids_a)))
sys.stdout.write("site-b {} {}\n".format(len(set(ids_b)), int(ids_b[0] != ids_a[0])))
sys.stdout.write("records {}\n".format(probe.cs_test_stack_records()))
seen = set()
for i in range(500):
    seen.add(probe.cs_test_launch(0x2000))
    seen.add(probe.cs_test_launch(0x2000))
sys.stdout.write("loop {}\n".format(len(seen)))
probe.cs_test_launch_deep.argtypes = [ctypes.c_void_p]
probe.cs_test_launch_deep.restype = ctypes.c_uint
paths = set()
for i in range(10):
    paths.add((probe.cs_test_launch if i % 2 else probe.cs_test_launch_deep)(0x5000))
sys.stdout.write("native-paths {}\n".format(len(paths)))
sys.stdout.write("native {} {}\n".format(probe.cs_test_launch_native(0x3000, 100),
                                       probe.cs_test_launch_native(0x4000, 1000)))
sys.stdout.flush()
