"""pt_lagged_pinned_read.py - negative: the loss is read one step late from pinned memory, never draining the GPU.

GPU-bound MLP steps. Each step copies its loss with `non_blocking=True` into one of two pinned buffers and
records an event; the host then waits on the previous step's event (EVENT_SYNCHRONIZE every step) and logs
that value. By then the current step is queued behind it, so the wait costs no GPU time. Labels: nothing of
the five (d2h-sync must not: a DtoH copy and a host wait in every step, zero idle).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, Trainer, done, info, need_torch, parse_args  # noqa: E402

LAG = 1
args = parse_args(__doc__)
torch = need_torch()
tr = Trainer(torch)
ring = [torch.zeros((), pin_memory=True) for _ in range(LAG + 1)]
events = [torch.cuda.Event() for _ in range(LAG + 1)]
timer = Timer(torch)
total, n = 0.0, 0
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        timer.start()
    loss = tr.step()
    slot = i % (LAG + 1)
    ring[slot].copy_(loss, non_blocking=True)
    events[slot].record()
    if i >= LAG:
        old = (i - LAG) % (LAG + 1)
        events[old].synchronize()  # the previous step's: the current one is queued behind it
        total += float(ring[old])
        n += 1
step_ms = timer.stop(args.steps)
info(f"step_ms={step_ms:.3f} mean_logged_loss={total / max(1, n):.5f}")
done(args.steps, lagged_reads=n)
