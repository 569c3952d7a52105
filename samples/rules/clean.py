"""clean.py - a well-written training loop: none of the five rules' anti-patterns, no finding expected.

A 4-layer d1024 GPT (16 heads, batch 32 x 512 tokens, vocabulary 16384) trained the way the guides advise:

- batches come from pinned host memory and are copied with `.to(device, non_blocking=True)` (asynchronous
  HtoD copies that overlap the previous step's compute);
- bf16 autocast (tensor-core GEMMs), fused scaled-dot-product attention, fused AdamW (a few kernels per step for
  all parameters), `zero_grad(set_to_none=True)`;
- nothing in the step waits for the GPU: no `.item()`, `.cpu()`, `print(tensor)` or data-dependent branch; the
  loss is accumulated on the GPU and read once after the last step;
- no `empty_cache()`, a working set far from the memory limit, no long scans, and steps long enough (about
  ten milliseconds of GPU work against about two of launches) that the host stays ahead of the GPU.

Seen at the CUDA level, per steady step: one pinned async HtoD copy of the batch, a few hundred kernels queued
well before they run, no host wait, no device allocation or release; one DtoH copy and one wait after the
steps. An analyzer should report nothing for the five rules (d2h-sync, empty-cache-in-loop,
memory-ceiling-thrash, launch-starvation, cuda-core-scan).

    python3 clean.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, GPT, StepTimer, done, parse_args, token_batches  # noqa: E402

a = parse_args(__doc__)
VOCAB, D, LAYERS, HEADS, BATCH, SEQ, NB = 16384, 1024, 4, 16, 32, 512, 8

model = GPT(VOCAB, D, LAYERS, HEADS, SEQ).to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01, fused=True)
host_batches = token_batches(NB, BATCH, SEQ, VOCAB).pin_memory()  # the "data loader": pinned host memory

loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
    batch = host_batches[i % NB].to(DEV, non_blocking=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    loss_sum += loss.detach()
step_ms = timer.stop(a.steps)
done(a.steps, mean_loss=loss_sum.item() / a.steps, step_ms=step_ms)
