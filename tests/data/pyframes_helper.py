"""pyframes_helper.py - run by tests/unit/test_pyframes.c under every Python interpreter found.

Usage: python3 pyframes_helper.py PROBE_LIBRARY

Loads the probe library (tests/unit/pyframes_probe.c) with ctypes, whose calls release the GIL,
and has it read the calling thread's Python frames from known places: nested functions, a method
with a local function, a generator, a coroutine, a comprehension, generated code with long line
jumps and wide columns, code run under a trace function, deep recursion, and a second thread while
the main thread runs Python code holding the GIL. Prints what the probe saw, one section a place:

    begin NAME FRAMES
    file:func:line        (innermost first, as the probe wrote them)
    check ok|mismatch     (the frames above capture() against the interpreter's own view)
    end NAME

Then the main thread blocks in a call into the probe, without the GIL, from inside the fake
torch autograd entry points (tests/data/fake_torch) and from elsewhere, while a thread of the probe
with no Python frames reads the frames it borrows from the main thread:

    borrowed NAME OWN FRAMES SAME
    file:func:line        (the borrowed frames, innermost first)
    end NAME

OWN is what that thread's own walk found (always 0), SAME how many of its 100 captures were equal.
"chain-key SAME DIFFERENT NONZERO": the call-site keys of three calls from one line and one from another.
Last, "borrow-hammer TRIES HITS BAD": a thread borrowing without pause while the main thread comes
and goes; BAD counts borrowed stacks that did not start in the engine call.

Lines that the test checks carry a "# mark:NAME" comment; the test finds their numbers in this
file (and in the fake torch files). Keep the syntax valid for old interpreters (3.6): those must
run too and see no frames.
"""
import ctypes
import os
import sys
import sysconfig
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_torch"))
import torch.autograd as autograd  # noqa: E402 (the fake tree above, not PyTorch)

probe = ctypes.CDLL(sys.argv[1])
probe.cs_test_capture.argtypes = [ctypes.c_char_p, ctypes.c_int]
probe.cs_test_capture.restype = ctypes.c_int
BUF_SIZE = 1 << 16


def python_view(skip):
    """The calling thread's frames as the interpreter reports them, innermost first."""
    f = sys._getframe(skip)
    out = []
    while f is not None:
        co = f.f_code
        name = getattr(co, "co_qualname", co.co_name)
        out.append("{}:{}:{}".format(co.co_filename, name, f.f_lineno))
        f = f.f_back
    return out


def capture():
    buf = ctypes.create_string_buffer(BUF_SIZE)
    n = probe.cs_test_capture(buf, BUF_SIZE)  # mark:capture
    text = buf.value.decode("utf-8", "replace")
    # Every frame above this one is still at the line of its call: compare with the probe's.
    expect = python_view(2)
    got = text.splitlines()[1:]
    ok = got == expect[: len(got)] and (n == len(expect) + 1 or n == 128)
    if n and not ok:
        sys.stderr.write("probe:\n  {}\ninterpreter:\n  {}\n".format(
            "\n  ".join(got), "\n  ".join(expect)))
    return n, text, ok


def report(name, result):
    n, text, ok = result
    check = "ok" if ok or not n else "mismatch"
    sys.stdout.write("begin {} {}\n{}check {}\nend {}\n".format(name, n, text, check, name))


def nested_inner():
    return capture()  # mark:nested_inner


def nested_outer():
    return nested_inner()  # mark:nested_outer


class Model:
    def forward(self):
        def step():
            return capture()  # mark:method_local

        return step()  # mark:method_forward


def gen():
    yield capture()  # mark:gen


async def coro():
    return capture()  # mark:coro


def run_coro():
    c = coro()
    try:
        c.send(None)  # mark:run_coro
    except StopIteration as e:
        return e.value


def recurse(depth):
    if depth == 0:
        return capture()  # mark:recurse_leaf
    return recurse(depth - 1)  # mark:recurse


def comprehension():
    return [capture() for _ in range(1)][0]  # mark:comprehension


# Generated code: line jumps past what one line-table entry holds (127 lines on 3.10) and columns
# past 255, which need the long entries of the 3.11+ location table.
GENERATED = (
    "def generated_outer():\n"
    + "\n" * 300
    + "    x = 1\n"
    + "\n" * 3000
    + "    return generated_inner(" + " " * 300 + ")\n"
    + "def generated_inner(" + " " * 400 + "):\n"
    + "\n" * 200
    + "    y = [1, 2]\n"
    + "    return (" + " " * 500 + "capture())\n"
)
generated = {"capture": capture}
exec(compile(GENERATED, "<generated>", "exec"), generated)


# Names of each string width: latin-1, two-byte and four-byte code points, in a file name too.
UNICODE = (
    "def caf\u00e9():\n"
    "    return \u51fd\u6570()\n"
    "def \u51fd\u6570():\n"
    "    return \U00020000()\n"
    "def \U00020000():\n"
    "    return capture()\n"
)
exec(compile(UNICODE, "<\u00fcnicode-\u540d-\U00020000>", "exec"), generated)


def in_handler():
    try:
        raise ValueError("x")
    except ValueError:
        return capture()  # mark:handler


def traced():
    def tracer(frame, event, arg):
        return tracer

    sys.settrace(tracer)
    try:
        return nested_outer()
    finally:
        sys.settrace(None)


spinning = threading.Event()
worker_results = []


def worker_inner():
    return capture()  # mark:worker_inner


def worker():
    spinning.wait()
    for _ in range(200):
        worker_results.append(worker_inner())  # mark:worker


def spin_step(x):
    return x + 1


# ---- borrowed frames ----

def borrow_args(with_state):
    out = ctypes.create_string_buffer(BUF_SIZE)
    scratch = ctypes.create_string_buffer(BUF_SIZE)
    own = ctypes.c_int(-1)
    same = ctypes.c_int(-1)
    return out, (out, scratch, BUF_SIZE, with_state, ctypes.byref(own), ctypes.byref(same)), own, same


def report_borrowed(name, how, with_state=0):
    out, args, own, same = borrow_args(with_state)
    n = how(probe.cs_test_borrow, args)  # mark:report_borrowed
    sys.stdout.write("borrowed {} {} {} {}\n{}end {}\n".format(
        name, own.value, n, same.value, out.value.decode("utf-8", "replace"), name))


def train_step(engine, args):
    return autograd.backward(engine, args)  # mark:backward_call


def train_step_old(engine, args):
    return autograd.backward(engine, args, direct=True)  # mark:backward_call_old


def blocked_elsewhere(engine, args):
    return engine(*args)  # mark:elsewhere


def _engine_run_backward(engine, args):
    # the right name in the wrong file
    return engine(*args)


sys.stdout.write("python {} {}\n".format(sys.version_info[0], sys.version_info[1]))
if hasattr(sys, "gettotalrefcount"):
    flavor = "debug"
elif sysconfig.get_config_var("Py_GIL_DISABLED"):
    flavor = "free-threaded"
else:
    flavor = "release"
sys.stdout.write("build {}\n".format(flavor))
sys.stdout.write("init {}\n".format(probe.cs_test_init_result()))
sys.stdout.write("version {}\n".format(probe.cs_test_version()))
sys.stdout.write("native {}\n".format(probe.cs_test_capture_native_thread()))
report("nested", nested_outer())  # mark:main_nested
report("method", Model().forward())  # mark:main_method
report("gen", next(gen()))  # mark:main_gen
report("coro", run_coro())  # mark:main_coro
report("recurse", recurse(200))  # mark:main_recurse
report("comprehension", comprehension())
report("generated", generated["generated_outer"]())
report("traced", traced())
report("unicode", generated["caf\u00e9"]())
report("handler", in_handler())

# The key of a call site (cs_py_chain_key): the same from the same line reached the same way, another
# from another line, 0 without frames. "chain-key SAME DIFFERENT NONZERO".
probe.cs_test_chain_key.restype = ctypes.c_ulonglong


def key_here():
    return probe.cs_test_chain_key()


def key_from_a():
    return key_here()


def key_from_b():
    return key_here()


keys = []
for i in range(3):
    keys.append(key_from_a())
key_b = key_from_b()
sys.stdout.write("chain-key {} {} {}\n".format(int(len(set(keys)) == 1), int(key_b != keys[0]),
                                               int(keys[0] != 0 and key_b != 0)))

probe.cs_test_borrow.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int,
                                 ctypes.c_void_p, ctypes.c_void_p]
probe.cs_test_borrow.restype = ctypes.c_int
report_borrowed("backward", train_step)  # mark:main_backward
report_borrowed("backward-state", train_step, 1)  # mark:main_backward_state
report_borrowed("backward-old", train_step_old)  # mark:main_backward_old
report_borrowed("elsewhere", blocked_elsewhere)
report_borrowed("impostor", _engine_run_backward)

# A thread blocked in a call (as in a CUDA wait) read by another thread (--hang-after's notice).
probe.cs_test_walk_blocked.argtypes = probe.cs_test_borrow.argtypes
probe.cs_test_walk_blocked.restype = ctypes.c_int


def wait_for_gpu(f, args):
    return f(*args)  # mark:blocked_call


report_borrowed("blocked", lambda f, args: wait_for_gpu(probe.cs_test_walk_blocked, args))
sys.stdout.write("borrow-on-main {}\n".format(
    autograd.backward(probe.cs_test_borrow_here, ())))

# A thread borrows over and over while this one enters and leaves the engine call (where it
# sleeps without the GIL) and runs Python code in between: no crash, and every borrowed stack
# starts in the engine call.
libc = ctypes.CDLL(None)
probe.cs_test_hammer_stop.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
probe.cs_test_hammer_stop.restype = ctypes.c_long
probe.cs_test_hammer_start()
for i in range(300):
    autograd.backward(libc.usleep, (200,))
    recurse(i % 50)
tries = ctypes.c_long(0)
hits = ctypes.c_long(0)
bad = probe.cs_test_hammer_stop(ctypes.byref(tries), ctypes.byref(hits))
sys.stdout.write("borrow-hammer {} {} {}\n".format(tries.value, hits.value, bad))

# The second thread reads its frames while this one keeps pushing and popping frames of its own
# with the GIL held (released only at the interpreter's switch interval).
t = threading.Thread(target=worker)
t.start()
x = 0
spinning.set()
while t.is_alive():
    x = spin_step(x)
t.join()
report("thread", worker_results[0])
same = sum(1 for r in worker_results if r == worker_results[0])
sys.stdout.write("thread-repeat {} {}\n".format(len(worker_results), same))
sys.stdout.flush()
