"""d2h-sync/negative_sync_long_step.py - `.item()` in every step of a long, GPU-bound step: present but negligible.

An MLP of three 8192-wide layers (batch 8192, bf16 autocast, fused AdamW) spends about 20 ms of matrix products
per step on an H200 and a few hundred microseconds of host time launching them. Each step ends with
`loss.item()`: a device-to-host copy and a stream synchronize, like bad.py. Because the step is long, the cost
is small: after each wait the GPU idles only until the host has launched the first kernel of the next step
(tens of microseconds, well under 1% of the step), and each kernel then runs far longer than the host needs
to launch the next one.

A per-step wait can never cost exactly nothing (torch.cuda.synchronize() would be the same: it empties the
queue); negative_lagged_read.py shows the variant that costs nothing.

Seen at the CUDA level, per steady step: one DtoH copy (pageable) and one STREAM_SYNCHRONIZE, then a GPU gap of
tens of microseconds. An analyzer should not report d2h-sync at its default thresholds (estimated loss below
0.5% of the step); an implementation that lists it anyway must give it the lowest severity and a lost time of
tens of microseconds per step.

    python3 negative_sync_long_step.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, StepTimer, done, parse_args  # noqa: E402

a = parse_args(__doc__)
WIDTH, CLASSES, BATCH, NB = 8192, 1024, 8192, 2

model = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, WIDTH), nn.GELU(),
                      nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, CLASSES)).to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, fused=True)
g = torch.Generator(device=DEV).manual_seed(1)
xs = torch.randn(NB, BATCH, WIDTH, device=DEV, generator=g)
ys = (xs[:, :, :256] @ torch.randn(256, CLASSES, device=DEV, generator=g)).argmax(-1)

losses = []
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(xs[i % NB]), ys[i % NB])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    v = loss.item()  # a host read per step: costs one host round trip, tiny next to the step
    if i >= a.warmup:
        losses.append(v)
step_ms = timer.stop(a.steps)
done(a.steps, first_loss=losses[0], last_loss=losses[-1], mean_loss=sum(losses) / len(losses), step_ms=step_ms)
