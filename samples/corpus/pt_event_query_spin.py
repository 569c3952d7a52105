"""pt_event_query_spin.py - a host wait without a sync call: polling an event until the loss has arrived.

A small launch-heavy MLP (~1 ms of GPU work per step). Each step copies the loss into pinned memory with
`non_blocking=True`, records an event, and spins on `event.query()` until it is done, then reads the value:
no cudaStreamSynchronize or cudaEventSynchronize is ever called (only cudaEventQuery), yet the host waits for
the tail of the queue every step and the GPU idles while it launches the next step. Labels: d2h-sync must be
found (the wait is a polling loop).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, Trainer, done, info, need_torch, parse_args  # noqa: E402

args = parse_args(__doc__)
torch = need_torch()
tr = Trainer(torch, width=1024, depth=8, batch=2048)
buf = torch.zeros((), pin_memory=True)
ev = torch.cuda.Event()
timer = Timer(torch)
total, polls = 0.0, 0
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        timer.start()
    loss = tr.step()
    buf.copy_(loss, non_blocking=True)
    ev.record()
    while not ev.query():  # cudaEventQuery in a loop: a wait all the same
        polls += 1
    total += float(buf)
step_ms = timer.stop(args.steps)
info(f"step_ms={step_ms:.3f} total={total:.4f} polls={polls}")
done(args.steps)
