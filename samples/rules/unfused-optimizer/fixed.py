"""unfused-optimizer/fixed.py - bad.py with a multi-tensor optimizer: a few kernels per step for all 52 tensors.

The same model, data and steps as bad.py, with the optimizer the guides advise: `fused=True` (default here: one
fused AdamW kernel, or SGD kernel, per launch of at most a few hundred tensor chunks) or, with `--fix foreach`,
`foreach=True` (one multi-tensor kernel per elementwise operation, each covering all the tensors; this is what
PyTorch picks by default for CUDA parameters when neither option is given).

Seen at the CUDA level, per steady step: after the backward pass, a handful of `multi_tensor_apply_kernel`
launches (fused: 1 or 2; foreach: about ten for AdamW, a few for SGD) instead of hundreds of per-tensor
kernels. An analyzer should report nothing (no unfused-optimizer).

    python3 fixed.py [--steps 40] [--warmup 5] [--opt adamw|sgd] [--fix fused|foreach]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from resmlp import ResMLP, batches  # noqa: E402
from rules_common import DEV, StepTimer, done, parse_args  # noqa: E402


def extra(p):
    p.add_argument("--opt", choices=["adamw", "sgd"], default="adamw")
    p.add_argument("--fix", choices=["fused", "foreach"], default="fused")


a = parse_args(__doc__, extra=extra)

model = ResMLP().to(DEV)
params = list(model.parameters())
how = {"fused": True} if a.fix == "fused" else {"foreach": True}
if a.opt == "adamw":
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, **how)
else:
    opt = torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-4, **how)
xs, ys = batches(DEV)

loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(xs[i % len(xs)]), ys[i % len(ys)])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()  # all 52 tensors in multi-tensor kernels
    with torch.no_grad():
        loss_sum += loss.detach()
step_ms = timer.stop(a.steps)
done(a.steps, params=len(params), mean_loss=loss_sum.item() / a.steps, last_loss=loss.item(), step_ms=step_ms)
