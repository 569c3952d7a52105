"""host-created-tensor/bad.py - a random tensor made on the host and copied to the GPU in the middle of each step.

An MLP (3 layers of 2048, batch 4096, bf16 autocast, fused AdamW: about a millisecond of matrix products per
step) trained on batches that already live on the GPU, with a noise regularizer before its last layer: `torch.rand(BATCH, WIDTH).cuda()`, as the guide's example writes it. The CPU fills 32 MiB with random
numbers (milliseconds) while the training thread calls nothing on the GPU, which finishes the first layer and
idles; then the 32 MiB go to the device from pageable memory, and the step goes on.

Seen at the CUDA level, per steady step: a stretch of milliseconds without a CUDA call of the training thread
in the middle of the step's kernels (after the first two GEMMs), the GPU idle during it, then one HtoD memcpy of 32
MiB with srcKind PAGEABLE. An analyzer should report host-created-tensor in every steady step (the idle while
the host made the data); pageable-memcpy may report the idle while the copy's call held the host, and
launch-starvation the same gap as host work. No dataloader-stall: the batch is on the device.

    python3 bad.py [--steps 40] [--warmup 5]
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
        noise = torch.rand(BATCH, WIDTH).cuda()  # made on the host, copied every step
        loss = F.cross_entropy(rest(h * (0.9 + 0.2 * noise)), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    with torch.no_grad():
        loss_sum += loss.detach()
step_ms = timer.stop(a.steps)
done(a.steps, mean_loss=loss_sum.item() / a.steps, step_ms=step_ms)
