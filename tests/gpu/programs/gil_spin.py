"""gil_spin.py - backtraces while another thread holds the GIL.

One thread spins in pure Python (holding the GIL most of the time); the main thread runs steps that call
`.item()` (a DtoH copy and a stream sync with the GIL released) and `torch.cuda.empty_cache()`. With
`cuscope record --backtrace` the stacks of those calls must name this file's lines (ITEM_LINE, EMPTY_LINE)
and nothing may hang. The lines are printed so that the routine can look for them in the trace.
"""
import threading

from common import expect, info, torch_cuda

torch = torch_cuda()
stop = False


def spin():
    n = 0
    while not stop:
        n += 1  # pure Python: holds the GIL between switch intervals
    info(f"spin iterations {n}")


def step(x, w):
    y = (x @ w).relu()
    v = y.sum().item()  # ITEM_LINE
    del y
    torch.cuda.empty_cache()  # EMPTY_LINE
    return v


src = open(__file__).read().splitlines()
item_line = next(i + 1 for i, s in enumerate(src) if s.rstrip().endswith("# ITEM_LINE"))
empty_line = next(i + 1 for i, s in enumerate(src) if s.rstrip().endswith("# EMPTY_LINE"))

t = threading.Thread(target=spin)
t.start()
x = torch.randn(512, 512, device="cuda")
w = torch.randn(512, 512, device="cuda")
total = 0.0
for i in range(20):
    total += step(x, w)
stop = True
t.join()
print(f"steps=20 item_line={item_line} empty_line={empty_line}")
expect("memcpy_dtoh>=20", "processes_cuda=1", "exit_code=0")
