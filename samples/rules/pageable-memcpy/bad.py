"""pageable-memcpy/bad.py - each step's inputs copied from pageable host memory with non_blocking=True.

An MLP (3 layers of 2048, batch 4096, bf16 autocast, fused AdamW: about a millisecond of matrix products per
step) trained on features that live on the host in ordinary (pageable) tensors, as a dataset kept in a NumPy
array or a DataLoader without pin_memory gives them: 8 batches of 4096 x 2048 float32 (32 MiB each). Every step
copies its batch with `x.to("cuda", non_blocking=True)`, believing the copy overlaps the compute; as the
memory is pageable, the call stages the data through the driver's pinned buffer and returns only when the 32
MiB have been copied: the host launches nothing meanwhile, and the GPU, done with the previous step, idles.

Seen at the CUDA level, per steady step: one HtoD memcpy of 32 MiB with srcKind PAGEABLE (isAsync 1: a
cudaMemcpyAsync) whose API call lasts milliseconds, and GPU idle for most of it. An analyzer should report
pageable-memcpy in every steady step (1 copy, non_blocking, 32 MiB per step); launch-starvation, if it
reports, names the same idle "pageable copy".

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

model = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, WIDTH), nn.GELU(),
                      nn.Linear(WIDTH, CLASSES)).to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, fused=True)
# the dataset on the host, in pageable memory
feats = torch.randn(NB, BATCH, WIDTH)
labels = (feats[:, :, :32] @ torch.randn(32, CLASSES)).argmax(-1)

loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
    x = feats[i % NB].to(DEV, non_blocking=True)  # pageable: synchronous in spite of the flag
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
