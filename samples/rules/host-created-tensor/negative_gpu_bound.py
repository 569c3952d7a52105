"""host-created-tensor/negative_gpu_bound.py - bad.py's host-made noise, hidden behind queued GPU work.

The noise of bad.py is still made on the host with `torch.rand(BATCH, 64).cuda()` (1 MiB: a per-sample
scale), but the model is wide (8192, float32 matrix products of tens of milliseconds per step): while the CPU
makes the noise, the GPU still runs the first layers queued before it, and nothing idles.

Seen at the CUDA level, per steady step: one HtoD memcpy of 1 MiB with srcKind PAGEABLE inside the step,
launched while earlier kernels still run. No host-created-tensor finding (the GPU never ran out of work before
the copy). pageable-memcpy may report the blocking copy's wait (its stream synchronize drains the queue), as
its own negative_gpu_bound does.

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
WIDTH, CLASSES, BATCH, NB = 8192, 100, 4096, 4

first = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, WIDTH), nn.GELU()).to(DEV)
rest = nn.Linear(WIDTH, CLASSES).to(DEV)
params = list(first.parameters()) + list(rest.parameters())
opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01, fused=True)
# the dataset on the device: no input copy in the steps
feats = torch.randn(NB, BATCH, WIDTH, device=DEV)
labels = (feats[:, :, :32] @ torch.randn(32, CLASSES, device=DEV)).argmax(-1)

loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
    x, y = feats[i % NB], labels[i % NB]
    if True:  # float32: the matrix products take long
        h = first(x)
        noise = torch.rand(BATCH, 64).cuda()  # made on the host while the GPU is busy
        loss = F.cross_entropy(rest(h * (0.9 + 0.2 * noise.mean(1, keepdim=True))), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    with torch.no_grad():
        loss_sum += loss.detach()
step_ms = timer.stop(a.steps)
done(a.steps, mean_loss=loss_sum.item() / a.steps, step_ms=step_ms)
