"""pt_nonblocking_then_sync.py - looks like an asynchronous read, is a full sync: non_blocking copy, then wait.

A small launch-heavy MLP (~1 ms of GPU work per step). Each step copies the loss into a pinned buffer with
`non_blocking=True` (the look of the lagged read) but then calls `torch.cuda.current_stream().synchronize()`
right away and reads the value: the host waits for the tail of the queue every step and the GPU idles while
it launches the next step. Labels: d2h-sync must be found.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, Trainer, done, info, need_torch, parse_args  # noqa: E402

args = parse_args(__doc__)
torch = need_torch()
tr = Trainer(torch, width=1024, depth=8, batch=2048)
buf = torch.zeros((), pin_memory=True)
timer = Timer(torch)
total = 0.0
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        timer.start()
    loss = tr.step()
    buf.copy_(loss, non_blocking=True)
    torch.cuda.current_stream().synchronize()  # defeats the non_blocking copy
    total += float(buf)
step_ms = timer.stop(args.steps)
info(f"step_ms={step_ms:.3f} total={total:.4f}")
done(args.steps)
