"""pt_compile_item.py - torch.compile'd model with loss.item() and a host-side schedule in every step.

A 6-layer MLP of 2048 (batch 4096) compiled with torch.compile (fused Triton kernels, a couple of milliseconds
of GPU work per step). Each step reads the loss with `.item()` to drive a Python loss-scale / learning-rate
rule, which the next step needs: the GPU idles while the compiled wrapper launches the next step. Labels:
d2h-sync must be found. Compilation takes tens of seconds in the warm-up.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, done, info, mlp, need_torch, parse_args  # noqa: E402

args = parse_args(__doc__, warmup=4)
torch = need_torch()
model = mlp(torch, 2048, 6)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
g = torch.Generator(device="cuda").manual_seed(1)
xs = torch.randn(2, 4096, 2048, device="cuda", generator=g)


@torch.compile
def fwd_loss(x):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = model(x)
    return (y.float() - x).pow(2).mean()


timer = Timer(torch)
lr, best = 1e-4, float("inf")
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        timer.start()
    opt.zero_grad(set_to_none=True)
    loss = fwd_loss(xs[i % 2])
    loss.backward()
    opt.step()
    v = loss.item()  # drives the schedule below
    if v < best:
        best = v
    else:
        lr *= 0.999
    for pg in opt.param_groups:
        pg["lr"] = lr
step_ms = timer.stop(args.steps)
info(f"step_ms={step_ms:.3f} best={best:.5f}")
done(args.steps)
