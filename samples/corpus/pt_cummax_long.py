"""pt_cummax_long.py - scans that are not cumsum: cummax and logcumsumexp over 131072 positions.

A "running extremes" feature layer: for 32 series of 131072 points, `torch.cummax` (a scan with indices) and
`torch.logcumsumexp` (its backward is another scan) over the long dimension, plus a small projection. The
scan kernels take most of the GPU time of the step. Labels: cuda-core-scan must be found (the scans are
cummax and logcumsumexp, no cumsum in the source).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, done, info, need_torch, parse_args  # noqa: E402

args = parse_args(__doc__)
torch = need_torch()
S, N = 32, 131072
proj = torch.nn.Linear(2, 1).cuda()
opt = torch.optim.SGD(proj.parameters(), lr=1e-3)
g = torch.Generator(device="cuda").manual_seed(1)
series = torch.randn(2, S, N, device="cuda", generator=g)
scale = torch.ones(S, 1, device="cuda", requires_grad=True)
timer = Timer(torch)
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        timer.start()
    opt.zero_grad(set_to_none=True)
    x = series[i % 2] * scale
    peak, _ = torch.cummax(x, dim=-1)
    soft = torch.logcumsumexp(x, dim=-1)
    feat = torch.stack([peak - x, soft - x], -1)
    loss = proj(feat).pow(2).mean()
    loss.backward()
    opt.step()
step_ms = timer.stop(args.steps)
info(f"step_ms={step_ms:.3f} loss={loss.item():.4f}")
done(args.steps)
