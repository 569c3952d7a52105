"""pt_item_every15.py - a rare but costly read-back: every 15th step reads the loss and logs for ~50 ms.

GPU-bound MLP steps (~5 ms of GEMMs, launches queued far ahead). On every 15th step the loop calls
`loss.item()` (DtoH + stream synchronize) and then spends about 50 ms on host-side logging before it launches
the next step: the GPU idles for those 50 ms. Only 3 of 40 steady steps do it (7.5%), but they cost about as
much GPU time as 10 ordinary steps. Labels: d2h-sync must be found (rare, not cheap).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, Trainer, done, info, need_torch, parse_args, spin  # noqa: E402

args = parse_args(__doc__)
torch = need_torch()
tr = Trainer(torch)
timer = Timer(torch)
logged = []
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        timer.start()
    loss = tr.step()
    if i % 15 == 14:
        logged.append(loss.item())  # waits for the whole queue
        spin(0.05)  # formatting and writing the log line, metrics upload: the GPU has nothing queued
step_ms = timer.stop(args.steps)
info(f"step_ms={step_ms:.3f}")
done(args.steps, reads=len(logged))
