"""d2h-sync/bad.py - a GPT training loop that reads GPU results on the host three times in every step.

A 4-layer d768 GPT (batch 32 x 256 tokens, vocabulary 8192, bf16 autocast, fused AdamW) trains on synthetic
batches that live on the GPU; every fourth batch has padding. Each step reads GPU values on the host where
real training loops do:

1. `if (mask != 0).all():` at the start of the step decides whether the loss must ignore padding: Python control
   flow on a CUDA tensor. Tensor.__bool__ calls `.item()` (`_local_scalar_dense_cuda`): cudaMemcpyAsync
   device-to-host into pageable memory, then cudaStreamSynchronize.
2. `loss.item()` right after the forward pass, to skip the step on a NaN loss and to log the loss.
3. `.cpu()` of the token accuracy after the optimizer step (`copy_`: device-to-host copy, then a stream sync).

Each read waits until the GPU has run everything queued so far, so the GPU queue drains three times per step;
after each wait the GPU idles until the host has launched the next kernels (the first ones of a step are small:
embedding, layer norm, the autograd engine's start of the backward pass).

Seen at the CUDA level, per steady step: 3 DtoH memcpy records (a few bytes, pageable destination), each
followed by a host wait (STREAM_SYNCHRONIZE); a GPU idle gap after each. An analyzer should report d2h-sync in
every steady step, with the lost GPU time, and with backtraces the lines of the three reads. fixed.py is the
same program without them.

    python3 bad.py [--steps 40] [--warmup 5]
"""
import math
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
masks = torch.ones(NB, BATCH, SEQ, dtype=torch.long, device=DEV)
masks[3::4, ::2, -32:] = 0  # every fourth batch: the last 32 tokens of every other row are padding

losses, accs, nonfinite = [], [], 0
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
    x, y, mask = tokens[i % NB, :, :-1], tokens[i % NB, :, 1:], masks[i % NB]

    if (mask != 0).all():  # host read 1: data-dependent control flow
        targets = y
    else:
        targets = y.masked_fill(mask == 0, -100)

    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1), ignore_index=-100)
    loss_val = loss.item()  # host read 2: NaN check and loss log
    if not math.isfinite(loss_val):
        nonfinite += 1
        continue
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()

    with torch.no_grad():
        hit = ((logits.argmax(-1) == y) & (mask != 0)).sum() / mask.sum()
    acc = hit.cpu()  # host read 3: a metric copied to the host
    if i >= a.warmup:
        losses.append(loss_val)
        accs.append(float(acc))

step_ms = timer.stop(a.steps)
done(a.steps, mean_loss=sum(losses) / len(losses), last_loss=losses[-1], mean_acc=sum(accs) / len(accs),
     nonfinite=nonfinite, step_ms=step_ms)
