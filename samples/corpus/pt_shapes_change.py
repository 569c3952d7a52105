"""pt_shapes_change.py - negative: the batch shape changes every step; GPU-bound, no sync, no cache release.

Variable-length batches (token counts from a fixed pseudo-random sequence over 5 sizes, 3072 to 8192 rows)
through a 4-layer MLP of 4096: the GEMM kernels and grid sizes change from step to step, so the kernel
sequence does not repeat with a fixed period, and the allocator may still create segments for new sizes. No
read-back, no empty_cache, no limit. Labels: nothing of the five.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, Trainer, done, info, need_torch, parse_args  # noqa: E402

SIZES = [3072, 8192, 4096, 6144, 5120, 8192, 3072, 6144, 4096, 5120, 7168]
args = parse_args(__doc__)
torch = need_torch()
tr = Trainer(torch, batch=8192, nbatches=2)
timer = Timer(torch)
rows = 0
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        timer.start()
    n = SIZES[(i * 7) % len(SIZES)]
    b = i % 2
    tr.step(tr.xs[b, :n], tr.ys[b, :n])
    rows += n
step_ms = timer.stop(args.steps)
info(f"step_ms={step_ms:.3f}")
done(args.steps, rows=rows)
