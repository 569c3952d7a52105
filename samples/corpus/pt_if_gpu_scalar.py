"""pt_if_gpu_scalar.py - hidden syncs: Python `if` on GPU scalars, no .item() anywhere in the source.

A small MLP (8 layers of 1024, batch 2048: ~1 ms of GPU work, launch-heavy) with two checks per step written
as plain Python conditions on GPU tensors: `if not torch.isfinite(loss):` and, after gradient clipping,
`if total_norm > 10:`. Each `bool()` of a GPU tensor is a DtoH copy and a stream synchronize; the GPU then
waits while the host launches the rest of the step. Labels: d2h-sync must be found.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, Trainer, done, info, need_torch, parse_args  # noqa: E402

args = parse_args(__doc__)
torch = need_torch()
tr = Trainer(torch, width=1024, depth=8, batch=2048)
timer = Timer(torch)
skipped = clipped_big = 0
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        timer.start()
    x, y = tr.xs[i % len(tr.xs)], tr.ys[i % len(tr.ys)]
    tr.opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = tr.model(x)
    loss = torch.nn.functional.mse_loss(out.float(), y)
    if not torch.isfinite(loss):  # bool() of a GPU tensor: copy + sync
        skipped += 1
        continue
    loss.backward()
    total_norm = torch.nn.utils.clip_grad_norm_(tr.model.parameters(), 1.0)
    if total_norm > 10:  # another one
        clipped_big += 1
    tr.opt.step()
step_ms = timer.stop(args.steps)
info(f"step_ms={step_ms:.3f}")
done(args.steps, skipped=skipped)
