"""pt_sync_no_copy.py - negative: torch.cuda.synchronize() at every step end for timing, no read-back.

GPU-bound MLP steps (~5 ms); each step ends with `torch.cuda.synchronize()` to time it on the host. A host
wait every step, but no DtoH copy before it, and the refill after it is tens of microseconds against 5 ms.
Labels: nothing of the five (d2h-sync must not: no copy; launch-starvation must not: GPU-bound).
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Trainer, done, info, need_torch, parse_args  # noqa: E402

args = parse_args(__doc__)
torch = need_torch()
tr = Trainer(torch)
times = []
for i in range(args.warmup + args.steps):
    t0 = time.perf_counter()
    tr.step()
    torch.cuda.synchronize()
    if i >= args.warmup:
        times.append(time.perf_counter() - t0)
info(f"step_ms={1e3 * sum(times) / len(times):.3f}")
done(args.steps)
