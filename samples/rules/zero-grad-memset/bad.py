"""zero-grad-memset/bad.py - the gradients zeroed every step (`zero_grad(set_to_none=False)`) instead of released.

The residual MLP of ../unfused-optimizer/resmlp.py (52 parameter tensors, 13.5 M values, batch 4096, bf16
autocast, fused AdamW, data already on the GPU) with the gradients zeroed in place before each backward pass:
by default `model.zero_grad(set_to_none=False)` (nn.Module's loop: one `p.grad.zero_()` per parameter); with
`--how optimizer`, `opt.zero_grad(set_to_none=False)` (the optimizer's: per tensor like the module's, or
grouped into `torch._foreach_zero_` when the optimizer runs with foreach); with `--how foreach`,
`torch._foreach_zero_` on all gradients by hand. Each writes zeros over every gradient (54 MB), and the backward
pass then adds into the zeroed gradients instead of storing them.

Seen at the CUDA level, per steady step: before the forward pass, a run of 52 fill kernels
(`vectorized_elementwise_kernel<4, FillFunctor<float>>`), one per gradient, with the sizes of the parameter
tensors, launched back to back (for `--how foreach`: one or a few `multi_tensor_apply_kernel` with ZeroFunctor);
the same count every step. An analyzer should report zero-grad-memset in every steady step (cost: the fills'
GPU time and launch time per step).

    python3 bad.py [--steps 40] [--warmup 5] [--how module|optimizer|foreach]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "unfused-optimizer"))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from resmlp import ResMLP, batches  # noqa: E402
from rules_common import DEV, StepTimer, done, parse_args  # noqa: E402

a = parse_args(__doc__, extra=lambda p: p.add_argument("--how", choices=["module", "optimizer", "foreach"],
                                                      default="module"))

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
    # zero every gradient in place (the first step has none yet)
    if a.how == "module":
        model.zero_grad(set_to_none=False)
    elif a.how == "optimizer":
        opt.zero_grad(set_to_none=False)
    elif i > 0:
        torch._foreach_zero_([p.grad for p in params])
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(xs[i % len(xs)]), ys[i % len(ys)])
    loss.backward()
    opt.step()
    with torch.no_grad():
        loss_sum += loss.detach()
step_ms = timer.stop(a.steps)
done(a.steps, params=len(params), mean_loss=loss_sum.item() / a.steps, last_loss=loss.item(), step_ms=step_ms)
