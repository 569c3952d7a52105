"""launch-starvation/negative_gpu_bound.py - a GPU-bound training loop: the host is far ahead of the GPU.

An MLP of four 4096-wide layers on batches of 16384 samples (bf16 autocast, fused AdamW): each GEMM runs for
hundreds of microseconds to a few milliseconds, the whole step for over ten milliseconds, while the host needs
well under a millisecond to launch the step's few dozen kernels. The host fills the launch queue and blocks on
it; every kernel is queued long before the previous one ends.

Seen at the CUDA level: in every steady step the GPU is busy back to back; every kernel's launch (host time)
precedes the end of the previous kernel by milliseconds. An analyzer should not report launch-starvation.

    python3 negative_gpu_bound.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, StepTimer, done, parse_args  # noqa: E402

a = parse_args(__doc__)
WIDTH, CLASSES, BATCH, NB = 4096, 1000, 16384, 2

model = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, WIDTH), nn.GELU(),
                      nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, CLASSES)).to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, fused=True)
g = torch.Generator(device=DEV).manual_seed(1)
xs = torch.randn(NB, BATCH, WIDTH, device=DEV, generator=g)
ys = (xs[:, :, :256] @ torch.randn(256, CLASSES, device=DEV, generator=g)).argmax(-1)

loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(xs[i % NB]), ys[i % NB])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    loss_sum += loss.detach()
step_ms = timer.stop(a.steps)
done(a.steps, mean_loss=loss_sum.item() / a.steps, step_ms=step_ms)
