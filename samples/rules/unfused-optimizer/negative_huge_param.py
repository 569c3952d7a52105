"""unfused-optimizer/negative_huge_param.py - a per-tensor optimizer on a model of two tensors, one of them huge.

A low-rank factorization model: a 16384 x 4096 float32 weight matrix (64 M values, 256 MiB) and a bias of 4096,
trained with `torch.optim.AdamW(..., foreach=False)` on a regression target (batch 8192, bf16 autocast).
The optimizer runs its per-parameter code, as in bad.py, but for two tensors only: the elementwise kernels on
the big weight each stream hundreds of MiB and run for tens to hundreds of microseconds, so launching them one
by one costs nothing next to their GPU time.

Seen at the CUDA level, per steady step: after the backward pass, the AdamW kernel sequence twice (about 16
elementwise kernels), 8 of them long, queued ahead of the GPU; no GPU idle between them. An analyzer should
report nothing: a per-tensor loop of two iterations is not the anti-pattern, and a multi-tensor kernel would
save no measurable time.

    python3 negative_huge_param.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, StepTimer, done, parse_args  # noqa: E402

a = parse_args(__doc__)
IN, OUT, BATCH, NB = 16384, 4096, 8192, 2

model = nn.Linear(IN, OUT).to(DEV)  # 2 parameter tensors: 64 M + 4096 values
params = list(model.parameters())
opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01, foreach=False)
g = torch.Generator().manual_seed(1)
xs = torch.randn(NB, BATCH, IN, generator=g).to(DEV)
proj = torch.randn(IN, OUT, generator=g).to(DEV) / IN ** 0.5
ys = xs @ proj

loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.mse_loss(model(xs[i % NB]).float(), ys[i % NB])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()  # per-tensor code, two tensors
    with torch.no_grad():
        loss_sum += loss.detach()
step_ms = timer.stop(a.steps)
done(a.steps, params=len(params), mean_loss=loss_sum.item() / a.steps, last_loss=loss.item(), step_ms=step_ms)
