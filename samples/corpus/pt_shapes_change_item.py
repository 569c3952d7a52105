"""pt_shapes_change_item.py - shapes change every step and the loss is read each step before building the next batch.

As pt_shapes_change.py (variable batch sizes, GPU-bound steps of a few ms), but each step reads the loss with
`.item()` and only then prepares the next batch on the host (~1.5 ms of Python: the length bucketing of a
real loader). Without the read, that host work would overlap the queued GPU work; with it, the GPU idles for
it every step. The period detection of steps has no fixed kernel sequence to lean on. Labels: d2h-sync must
be found.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, Trainer, done, info, need_torch, parse_args, spin  # noqa: E402

SIZES = [3072, 8192, 4096, 6144, 5120, 8192, 3072, 6144, 4096, 5120, 7168]
args = parse_args(__doc__)
torch = need_torch()
tr = Trainer(torch, batch=8192, nbatches=2)
timer = Timer(torch)
hist = []
n = SIZES[0]
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        timer.start()
    b = i % 2
    hist.append(tr.step(tr.xs[b, :n], tr.ys[b, :n]).item())  # sync
    spin(0.0015)  # next batch: bucketing, padding plan (host)
    n = SIZES[(i * 7 + 7) % len(SIZES)]
step_ms = timer.stop(args.steps)
info(f"step_ms={step_ms:.3f} last_loss={hist[-1]:.5f}")
done(args.steps, reads=len(hist))
