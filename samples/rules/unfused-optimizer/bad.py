"""unfused-optimizer/bad.py - the optimizer step as a Python loop over the parameters: a few kernels per tensor.

The residual MLP of resmlp.py (52 parameter tensors, batch 4096, bf16 autocast, data already on the GPU)
trained with `torch.optim.AdamW(..., foreach=False)` (or `--opt sgd`: `torch.optim.SGD(..., momentum=0.9,
weight_decay=1e-4, foreach=False)`), the per-parameter implementation: for every parameter tensor the step
launches its own small elementwise kernels (AdamW: weight decay `mul_`, `lerp_`, `mul_`, `addcmul_`, `sqrt`,
`div`, `add_`, `addcdiv_`; SGD: `add`, `mul_`, `add_`, `add_`), one after the other from Python.
Gradients are released with `zero_grad(set_to_none=True)`.

Seen at the CUDA level, per steady step: after the backward pass, a run of about 400 (AdamW; SGD: about 200)
short elementwise kernels whose name sequence repeats once per parameter tensor, 52 times, the same number of
times every step, each launched after the previous one, so the run lasts about as long as the host takes to
launch it and the GPU idles between the kernels. An analyzer should report unfused-optimizer in every steady
step (cost: the run's launch time and GPU idle beyond what one multi-tensor kernel per operation would take);
launch-starvation may list the same idle.

    python3 bad.py [--steps 40] [--warmup 5] [--opt adamw|sgd]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from resmlp import ResMLP, batches  # noqa: E402
from rules_common import DEV, StepTimer, done, parse_args  # noqa: E402

a = parse_args(__doc__, extra=lambda p: p.add_argument("--opt", choices=["adamw", "sgd"], default="adamw"))

model = ResMLP().to(DEV)
params = list(model.parameters())
if a.opt == "adamw":
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, foreach=False)  # one tensor at a time
else:
    opt = torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-4, foreach=False)
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
    opt.step()  # 52 tensors, each its own kernels
    with torch.no_grad():
        loss_sum += loss.detach()
step_ms = timer.stop(a.steps)
done(a.steps, params=len(params), mean_loss=loss_sum.item() / a.steps, last_loss=loss.item(), step_ms=step_ms)
