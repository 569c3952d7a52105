"""pt_cumsum64.py - negative: a cumsum over 64 elements, eight times per step, in a GPU-bound step.

A "running mean" gate: after each of 4 layers, the first 64 features of each of the 8192 rows are cumulatively
summed ([8192, 64]: tensor_kernel_scan kernels, forward and backward, 8 per step) to scale the layer's output,
inside a few ms of GEMMs. The scans take microseconds: well under 1% of the GPU time. Labels: nothing of the
five (cuda-core-scan must not: scan kernels in every step, negligible share).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, done, info, mlp, need_torch, parse_args  # noqa: E402

args = parse_args(__doc__)
torch = need_torch()
W = 4096
layers = [mlp(torch, W, 1) for _ in range(4)]
params = [p for m in layers for p in m.parameters()]
opt = torch.optim.AdamW(params, lr=1e-4, fused=True)
g = torch.Generator(device="cuda").manual_seed(1)
x0 = torch.randn(8192, W, device="cuda", generator=g)
pos = torch.arange(1, 65, device="cuda", dtype=torch.float32)
timer = Timer(torch)
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        timer.start()
    opt.zero_grad(set_to_none=True)
    x = x0
    with torch.autocast("cuda", dtype=torch.bfloat16):
        for m in layers:
            h = m(x)
            run = h[:, :64].float().cumsum(-1) / pos  # running mean over 64 features
            x = x + h * torch.sigmoid(run.mean(-1, keepdim=True)).to(h.dtype)
    loss = x.float().pow(2).mean()
    loss.backward()
    opt.step()
step_ms = timer.stop(args.steps)
info(f"step_ms={step_ms:.3f} loss={loss.item():.4f}")
done(args.steps)
