"""pt_host_preprocess.py - host-bound: ~15 ms of CPU preprocessing before each ~2 ms GPU step.

Each step builds its batch on the host (a CPU augmentation of a 4096x1024 tensor plus decoding time), copies
it to the GPU from pinned memory, and runs a small MLP step. The GPU is idle at the start of every step while
the host prepares data; the launches themselves are few. Labels: launch-starvation must be found (the GPU
waits for the host at each step start); d2h-sync must not.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, Trainer, done, info, need_torch, parse_args, spin  # noqa: E402

args = parse_args(__doc__, steps=30)
torch = need_torch()
tr = Trainer(torch, width=1024, depth=4, batch=4096, nbatches=1)
gen = torch.Generator().manual_seed(3)
base = torch.randn(4096, 1024, generator=gen)
pinned = torch.empty(4096, 1024).pin_memory()
ys = tr.ys[0]
timer = Timer(torch)
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        timer.start()
    # host-side preprocessing: a random crop-and-scale of the features, then "decoding"
    shift = (i * 37) % 1024
    pinned.copy_(torch.roll(base, shift, 1).mul_(1.0 + 0.01 * (i % 5)).clamp_(-3, 3))
    spin(0.012)
    x = pinned.to("cuda", non_blocking=True)
    tr.step(x, ys)
step_ms = timer.stop(args.steps)
info(f"step_ms={step_ms:.3f}")
done(args.steps)
