"""cuda-core-scan/negative_nonzero_select.py - torch.nonzero and masked_select in every step: CUB select kernels.

A per-token classifier (MLP 16 -> 64 -> 64 -> 32 classes over 2^20 tokens per step, bf16 autocast, fused AdamW)
with online hard-example mining and a confusion statistic:

- `torch.nonzero(pred != y)` finds the misclassified tokens, whose loss is added again (index_select);
- `torch.nonzero(confused)` on the [2^20, 32] mask of confidently predicted wrong classes gives (token, class)
  pairs, counted per class with index_add_;
- `probs.masked_select(confused)` collects those probabilities for a running mean.

nonzero runs cub::DeviceReduce (count), copies the count to the host and waits, then cub::DeviceSelect::Flagged;
masked_select does the same through nonzero, then a gather. The select kernels' names carry "Scan" in their
template arguments (DeviceSelectSweepKernel<..., ScanTileState<...>, ...>, DeviceCompactInitKernel<
ScanTileState<...>>), and on 32M-element masks they are a noticeable share of the step; but they are stream
compaction at memory speed, not a prefix sum along a long dimension, and the matrix-product rewrite does not
apply to them.

Seen at the CUDA level, per steady step: CUB reduce and select kernels (3 nonzero runs), 3 DtoH copies of the
counts (pinned) each followed by a stream synchronize, index/gather kernels, no tensor_kernel_scan_* kernel. An
analyzer should not report cuda-core-scan. It should report d2h-sync (3 count reads per step, GPU idle after
each: nonzero and masked_select are in the guides' list of syncing operations), and may report launch-starvation
idle time after those syncs.

    python3 negative_nonzero_select.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, StepTimer, done, parse_args  # noqa: E402

a = parse_args(__doc__)
N, D_IN, HID, C, NB = 2**20, 16, 64, 32, 2

model = nn.Sequential(nn.Linear(D_IN, HID), nn.GELU(), nn.Linear(HID, HID), nn.GELU(), nn.Linear(HID, C)).to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01, fused=True)
g = torch.Generator(device=DEV).manual_seed(1)
xs = torch.randn(NB, N, D_IN, device=DEV, generator=g)
ys = (xs @ torch.randn(D_IN, C, device=DEV, generator=g)).argmax(-1)
onehots = F.one_hot(ys, C).bool()

loss_sum = torch.zeros((), device=DEV)
hard_sum = torch.zeros((), device=DEV)
conf_sum = torch.zeros((), device=DEV)
confusion = torch.zeros(C, device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        for t in (loss_sum, hard_sum, conf_sum, confusion):
            t.zero_()
    x, y, onehot = xs[i % NB], ys[i % NB], onehots[i % NB]
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(x).float()
    loss = F.cross_entropy(logits, y)
    rows = torch.nonzero(logits.detach().argmax(-1) != y).squeeze(1)  # misclassified tokens
    if rows.numel() > 0:
        loss = loss + 0.5 * F.cross_entropy(logits.index_select(0, rows), y.index_select(0, rows))
    with torch.no_grad():
        probs = logits.softmax(-1)
        confused = (probs > 2.0 / C) & ~onehot
        pairs = torch.nonzero(confused)  # (token, wrong class) pairs
        confusion.index_add_(0, pairs[:, 1], torch.ones(pairs.shape[0], device=DEV))
        conf_sum += probs.masked_select(confused).sum()
        hard_sum += rows.numel()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    loss_sum += loss.detach()
step_ms = timer.stop(a.steps)
top = confusion.argmax().item()
done(a.steps, mean_loss=loss_sum.item() / a.steps, hard_per_step=hard_sum.item() / a.steps,
     confused_prob_sum=conf_sum.item() / a.steps, most_confused_class=top, step_ms=step_ms)
