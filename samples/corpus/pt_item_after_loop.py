"""pt_item_after_loop.py - negative: every step's loss is kept on the GPU and read only after the loop.

GPU-bound MLP steps; the losses are appended to a Python list of GPU tensors (no copy), and the norm of the
first layer's weight is tracked in a GPU tensor. After the loop: one `torch.stack(...).tolist()` and one
`.item()`. Labels: nothing of the five (d2h-sync must not: the reads are outside the steps).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, Trainer, done, info, need_torch, parse_args  # noqa: E402

args = parse_args(__doc__)
torch = need_torch()
tr = Trainer(torch)
timer = Timer(torch)
losses = []
wnorm = torch.zeros((), device="cuda")
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        timer.start()
    losses.append(tr.step())
    wnorm = torch.maximum(wnorm, tr.model[0].weight.detach().norm())
step_ms = timer.stop(args.steps)
values = torch.stack(losses).tolist()
info(f"step_ms={step_ms:.3f} first={values[0]:.5f} last={values[-1]:.5f} max_wnorm={wnorm.item():.3f}")
done(args.steps, losses=len(values))
