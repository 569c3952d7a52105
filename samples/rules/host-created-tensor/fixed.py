"""host-created-tensor/fixed.py - bad.py with the noise tensor made on the device.

The same MLP, data and steps as bad.py; the noise is `torch.rand(BATCH, WIDTH, device="cuda")`, as the guide
advises: one kernel of microseconds, no host work and no copy.

Seen at the CUDA level, per steady step: no host-to-device copy, no stretch without CUDA calls inside the
step. No host-created-tensor finding (nor pageable-memcpy).

    python3 fixed.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, StepTimer, done, parse_args  # noqa: E402

a = parse_args(__doc__)
WIDTH, CLASSES, BATCH, NB = 2048, 100, 4096, 8

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
    with torch.autocast("cuda", dtype=torch.bfloat16):
        h = first(x)
        noise = torch.rand(BATCH, WIDTH, device=DEV)  # made on the device
        loss = F.cross_entropy(rest(h * (0.9 + 0.2 * noise)), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    with torch.no_grad():
        loss_sum += loss.detach()
step_ms = timer.stop(a.steps)
done(a.steps, mean_loss=loss_sum.item() / a.steps, step_ms=step_ms)
