"""cuda-core-scan/negative_short_cumsum.py - a short cumsum that is a negligible share of the step.

A 4-layer d768 GPT (batch 32 x 256 tokens, bf16 autocast, fused AdamW) on left-padded batches computes its
position ids from the attention mask in every step, as Hugging Face models do:
`pos = (mask.cumsum(-1) - 1).clamp_min(0)`. That is a scan over [32, 256] int64 values: one
tensor_kernel_scan_innermost_dim<long> launch of a few microseconds, next to milliseconds of GEMMs and attention.

Seen at the CUDA level, per steady step: one short scan kernel (plus the usual transformer kernels); scan
kernels well under 1% of the GPU time. An analyzer should not report cuda-core-scan (nor anything else).

    python3 negative_short_cumsum.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, GPT, StepTimer, done, parse_args, token_batches  # noqa: E402

a = parse_args(__doc__)
VOCAB, D, LAYERS, HEADS, BATCH, SEQ, NB = 8192, 768, 4, 12, 32, 256, 8

model = GPT(VOCAB, D, LAYERS, HEADS, SEQ).to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01, fused=True)
tokens = token_batches(NB, BATCH, SEQ, VOCAB).to(DEV)
# Left padding: row r of every batch starts with (r % 8) * 4 padding tokens.
masks = torch.ones(NB, BATCH, SEQ, dtype=torch.long, device=DEV)
for r in range(BATCH):
    masks[:, r, : (r % 8) * 4] = 0

loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
    x, y, mask = tokens[i % NB, :, :-1], tokens[i % NB, :, 1:], masks[i % NB]
    pos = (mask.cumsum(-1) - 1).clamp_min(0)  # the short scan
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(x, pos)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.masked_fill(mask == 0, -100).reshape(-1),
                               ignore_index=-100)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    loss_sum += loss.detach()
step_ms = timer.stop(a.steps)
done(a.steps, mean_loss=loss_sum.item() / a.steps, step_ms=step_ms)
