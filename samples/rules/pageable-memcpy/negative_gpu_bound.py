"""pageable-memcpy/negative_gpu_bound.py - a pageable copy per step while the GPU is busy for milliseconds.

A GPU-bound MLP (4 layers of 8192, batch 4096, bf16 autocast, fused AdamW: over ten milliseconds of matrix
products per step). The next batch (4096 x 256 float32, 4 MiB, in ordinary pageable host memory) is copied at
the end of each step, after the step's work has been launched: the copy call holds the host for a fraction of
a millisecond while the GPU still runs the queued matrix products, so the GPU never waits for it.

Seen at the CUDA level, per steady step: one HtoD memcpy of 4 MiB with srcKind PAGEABLE whose API call
overlaps queued GPU work: no GPU idle while the host is in it. An analyzer should report nothing: flagging
pageable copies without measuring the idle they cause is the false positive this tests (pinning would be
tidier, but it saves no GPU time here).

Measured on the H200 (2026-12-01): not a negative. `.to(DEV)` without non_blocking is a copy followed by a
synchronize of the stream, which waits for all the queued matrix products; the GPU then idles ~0.3 ms per step
while the host launches the next step, and cuscope reports pageable-memcpy (4.2% of the step). Kept as the
blocking-copy case of the rule.

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
IN, WIDTH, CLASSES, BATCH, NB = 256, 8192, 1000, 4096, 8

model = nn.Sequential(nn.Linear(IN, WIDTH), nn.GELU(), nn.Linear(WIDTH, WIDTH), nn.GELU(),
                      nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, CLASSES)).to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, fused=True)
feats = torch.randn(NB, BATCH, IN)  # pageable
labels = (feats[:, :, :32] @ torch.randn(32, CLASSES)).argmax(-1)

x, y = feats[0].to(DEV), labels[0].to(DEV)
loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    with torch.no_grad():
        loss_sum += loss.detach()
    # the next batch, from pageable memory, while the GPU runs this step's queue
    x, y = feats[(i + 1) % NB].to(DEV), labels[(i + 1) % NB].to(DEV)
step_ms = timer.stop(a.steps)
done(a.steps, mean_loss=loss_sum.item() / a.steps, step_ms=step_ms)
