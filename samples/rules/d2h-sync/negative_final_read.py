"""d2h-sync/negative_final_read.py - one device-to-host read after training: not the d2h-sync pattern.

An MLP classifier (1024 -> 4096 -> 4096 -> 4096 -> 1000, batch 4096, bf16 autocast, fused AdamW) trains on
synthetic data kept on the GPU. Each step writes its loss into a preallocated GPU tensor (`history[i]`, a
device-side copy); after the last step the program copies the whole history to the host with one `.tolist()`
and evaluates the accuracy once with `.item()`.

Seen at the CUDA level: no DtoH copy and no host wait inside the steps; after them, two small DtoH copies, each
with a stream synchronize. An analyzer should report nothing: the copies are outside the steady state and the
GPU has nothing left to run when the host waits.

    python3 negative_final_read.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, StepTimer, done, parse_args  # noqa: E402

a = parse_args(__doc__)
D_IN, HID, CLASSES, BATCH, NB = 1024, 4096, 1000, 4096, 8

model = nn.Sequential(nn.Linear(D_IN, HID), nn.GELU(), nn.Linear(HID, HID), nn.GELU(), nn.Linear(HID, HID),
                      nn.GELU(), nn.Linear(HID, CLASSES)).to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, fused=True)
g = torch.Generator(device=DEV).manual_seed(1)
xs = torch.randn(NB, BATCH, D_IN, device=DEV, generator=g)
ys = (xs @ torch.randn(D_IN, CLASSES, device=DEV, generator=g)).argmax(-1)

history = torch.zeros(a.warmup + a.steps, device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(xs[i % NB]), ys[i % NB])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    history[i] = loss.detach()
step_ms = timer.stop(a.steps)

losses = history[a.warmup:].tolist()  # the one copy of the losses to the host
with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
    acc = (model(xs[0]).argmax(-1) == ys[0]).float().mean().item()
done(a.steps, first_loss=losses[0], last_loss=losses[-1], train_acc=acc, step_ms=step_ms)
