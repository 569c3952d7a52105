"""zero-grad-memset/fixed.py - bad.py with the gradients released (`set_to_none=True`) instead of zeroed.

The same model, data, optimizer and steps as bad.py; before each backward pass `opt.zero_grad(set_to_none=True)`
(the default since PyTorch 2.0) sets every `.grad` to None, and the backward pass stores the new gradients
instead of adding them into zeroed ones.

Seen at the CUDA level, per steady step: no fill kernel over the gradients and no add of the new gradients
into old ones. An analyzer should report nothing (no zero-grad-memset).

    python3 fixed.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "unfused-optimizer"))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from resmlp import ResMLP, batches  # noqa: E402
from rules_common import DEV, StepTimer, done, parse_args  # noqa: E402

a = parse_args(__doc__)

model = ResMLP().to(DEV)
params = list(model.parameters())
opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, fused=True)
xs, ys = batches(DEV)

loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
    opt.zero_grad(set_to_none=True)  # release the gradients: nothing written
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(xs[i % len(xs)]), ys[i % len(ys)])
    loss.backward()
    opt.step()
    with torch.no_grad():
        loss_sum += loss.detach()
step_ms = timer.stop(a.steps)
done(a.steps, params=len(params), mean_loss=loss_sum.item() / a.steps, last_loss=loss.item(), step_ms=step_ms)
