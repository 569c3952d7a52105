"""pageable-memcpy/negative_item.py - loss.item() every step: a pageable DtoH copy that is d2h-sync's.

A 4-layer d768 GPT (batch 32x256, bf16 autocast, fused AdamW, data already on the GPU) that logs
`loss.item()` every step. The 4-byte copy lands in pageable host memory (srcKind DEVICE, dstKind PAGEABLE), and
the host waits for it: the GPU drains and idles until the next launch. That idle is the read-back's, which
d2h-sync reports; pinning memory would not remove it (the fix is to read the loss less often).

Seen at the CUDA level, per steady step: one DtoH memcpy of 4 B to pageable memory and its host wait, GPU idle
after it. An analyzer should report d2h-sync and not pageable-memcpy (one idle, one finding).

    python3 negative_item.py [--steps 40] [--warmup 5]
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

losses = []
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        losses.clear()
    x, y = tokens[i % NB, :, :-1], tokens[i % NB, :, 1:]
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    losses.append(loss.item())  # 4 B to pageable memory, and a wait
step_ms = timer.stop(a.steps)
done(a.steps, mean_loss=sum(losses) / len(losses), step_ms=step_ms)
