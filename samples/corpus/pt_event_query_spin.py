"""pt_event_query_spin.py - a host wait without a sync call: polling an event until the loss has arrived.

An MLP of 8 layers of 1024 with 32768 rows per step (~8 ms of GPU work, more than the ~3 ms the host needs
to launch it, so that the host is ahead and has to wait). Each step copies the loss into pinned memory with
`non_blocking=True`, records an event, and spins on `event.query()` until it is done, then reads the value
and does ~0.5 ms of host bookkeeping with it: no cudaStreamSynchronize or cudaEventSynchronize is ever called
(only cudaEventQuery, not ready many times, then done), yet the host waits for the tail of the queue every
step and the GPU idles while the host works and launches the next step. The final line gives the number of
not-ready polls (ground truth that the host waited). Labels: d2h-sync must be found (the wait is a polling
loop).
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, Trainer, done, info, need_torch, parse_args  # noqa: E402

args = parse_args(__doc__)
torch = need_torch()
tr = Trainer(torch, width=1024, depth=8, batch=32768)
buf = torch.zeros((), pin_memory=True)
ev = torch.cuda.Event()
timer = Timer(torch)
total, polls = 0.0, 0
history = []
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        timer.start()
    loss = tr.step()
    buf.copy_(loss, non_blocking=True)
    ev.record()
    while not ev.query():  # cudaEventQuery in a loop: a wait all the same
        polls += 1
    total += float(buf)
    history.append(total)
    t_end = time.perf_counter() + 0.0005  # host bookkeeping with the value: ~0.5 ms
    while time.perf_counter() < t_end:
        pass
step_ms = timer.stop(args.steps)
info(f"step_ms={step_ms:.3f} total={total:.4f} polls={polls}")
done(args.steps)
