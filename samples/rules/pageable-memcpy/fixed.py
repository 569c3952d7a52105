"""pageable-memcpy/fixed.py - the same inputs pinned once, copied with non_blocking=True.

The model, data and steps of bad.py, with the host dataset pinned once before the loop
(`feats.pin_memory()`, as DataLoader(pin_memory=True) would give it). `x.to("cuda", non_blocking=True)` from
pinned memory is a true asynchronous copy: the call returns at once, the copy runs on the GPU ahead of the
step's kernels, and the host goes on launching.

Seen at the CUDA level, per steady step: one HtoD memcpy of 32 MiB with srcKind PINNED, a short API call, no
GPU idle while the host is in it. An analyzer should report nothing for pageable-memcpy.

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

model = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, WIDTH), nn.GELU(),
                      nn.Linear(WIDTH, CLASSES)).to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, fused=True)
# the dataset on the host, pinned once
feats = torch.randn(NB, BATCH, WIDTH)
labels = (feats[:, :, :32] @ torch.randn(32, CLASSES)).argmax(-1)
feats, labels = feats.pin_memory(), labels.pin_memory()

loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
    x = feats[i % NB].to(DEV, non_blocking=True)  # pinned: asynchronous
    y = labels[i % NB].to(DEV, non_blocking=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    with torch.no_grad():
        loss_sum += loss.detach()
step_ms = timer.stop(a.steps)
done(a.steps, mean_loss=loss_sum.item() / a.steps, step_ms=step_ms)
