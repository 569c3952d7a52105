"""zero-grad-memset/negative_buffer_reset.py - fills every step that are not gradients: loss scaling, a buffer reset.

The residual MLP of ../unfused-optimizer/resmlp.py (52 parameter tensors) trained in float16 autocast with
`torch.amp.GradScaler` and fused AdamW, gradients released with `zero_grad(set_to_none=True)`. Two legitimate
kinds of fills happen every step: the scaler's (`torch.full` of its found-inf flag and inverse scale before
unscaling, a few scalars) and a per-step confusion matrix (512 x 512 float32, 1 MiB) reset with `zero_()`
before the step's predictions are counted into it with `scatter_add_` and added to the epoch's total.

Seen at the CUDA level, per steady step: 3 or 4 fill kernels (2 or 3 of one value on scalars, 1 over the
1 MiB buffer), each among other kernels or in a pair, the same every step; no fill over the gradients.
An analyzer should report nothing (no zero-grad-memset): a fill per step is not a gradient reset.

    python3 negative_buffer_reset.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "unfused-optimizer"))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from resmlp import CLASSES, ResMLP, batches  # noqa: E402
from rules_common import DEV, StepTimer, done, parse_args  # noqa: E402

a = parse_args(__doc__)

model = ResMLP().to(DEV)
params = list(model.parameters())
opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, fused=True)
scaler = torch.amp.GradScaler("cuda")
xs, ys = batches(DEV)
conf = torch.zeros(CLASSES, CLASSES, device=DEV)  # this step's confusion matrix
conf_total = torch.zeros(CLASSES, CLASSES, device=DEV)
ones = torch.ones(xs.shape[1], device=DEV)

loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
        conf_total.zero_()
    x, y = xs[i % len(xs)], ys[i % len(ys)]
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.float16):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
    scaler.scale(loss).backward()
    scaler.step(opt)  # fused AdamW takes the scale and the found-inf flag on the GPU: no read-back
    scaler.update()
    with torch.no_grad():
        conf.zero_()  # reset the per-step buffer: one fill of 1 MiB
        conf.view(-1).scatter_add_(0, y * CLASSES + logits.argmax(-1), ones)
        conf_total += conf
        loss_sum += loss.detach()
step_ms = timer.stop(a.steps)
acc = (conf_total.diagonal().sum() / conf_total.sum()).item()
done(a.steps, params=len(params), mean_loss=loss_sum.item() / a.steps, train_acc=acc, step_ms=step_ms)
