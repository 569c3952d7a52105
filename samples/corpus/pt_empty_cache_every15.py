"""pt_empty_cache_every15.py - a rare but costly empty_cache(): every 15th step empties a cache of a few GiB.

GPU-bound MLP (8 layers of 4096, 16384 rows, ~20 ms per step) whose activations fill the caching allocator
with a few GiB in dozens of segments. Every 15th step calls `torch.cuda.empty_cache()` "to keep memory low":
the release burst waits for the GPU, and the next step allocates every segment again with cudaMalloc while the
GPU waits. 3 of 40 steady steps (7.5%), each costing a large part of a step. Labels: empty-cache-in-loop must
be found (rare, not cheap); memory-ceiling-thrash must not (no limit is near, nothing fails).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, Trainer, done, info, need_torch, parse_args  # noqa: E402

args = parse_args(__doc__)
torch = need_torch()
tr = Trainer(torch, width=4096, depth=8, batch=16384, nbatches=2)
timer = Timer(torch)
calls = 0
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        timer.start()
    tr.step()
    if i % 15 == 14:
        torch.cuda.empty_cache()
        calls += 1
step_ms = timer.stop(args.steps)
info(f"step_ms={step_ms:.3f} reserved_gib={torch.cuda.memory_reserved() / 2**30:.2f}")
done(args.steps, empty_cache_calls=calls)
