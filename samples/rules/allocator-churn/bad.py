"""allocator-churn/bad.py - a sequence-length curriculum: every step longer, new device blocks every step.

A 4-layer d768 GPT (batch 16, bf16 autocast, fused AdamW, data already on the GPU) trained with a sequence
length that grows every step (128 + 32 per step up to 1536 tokens, a common curriculum). The activations of
each step are larger than anything the caching allocator holds, so every step asks the driver for new
segments (cudaMalloc) while the host launches nothing and the GPU, with a short queue, idles.

Seen at the CUDA level, per steady step: several cudaMalloc calls of new sizes (device memory rows of growing
size) with no release burst around them, and GPU idle during the calls. An analyzer should report
allocator-churn in most steady steps; not empty-cache-in-loop or memory-ceiling-thrash (no bursts of
releases).

    python3 bad.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, GPT, StepTimer, done, parse_args, token_batches  # noqa: E402

# cuDNN's attention builds a new execution plan for every new sequence length (about 140 ms of host time per
# step on the H200, recorded 2026-12-01), which would hide the allocator's own cost: flash attention does not.
torch.backends.cuda.enable_cudnn_sdp(False)

a = parse_args(__doc__)
VOCAB, D, LAYERS, HEADS, BATCH, SEQ, NB = 8192, 768, 4, 12, 16, 1536, 4
START, GROW = 128, 32

model = GPT(VOCAB, D, LAYERS, HEADS, SEQ).to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01, fused=True)
tokens = token_batches(NB, BATCH, SEQ, VOCAB).to(DEV)


def length(i):
    return min(START + GROW * i, SEQ)


loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
    n = length(i)  # longer every step: new shapes
    x, y = tokens[i % NB, :, :n], tokens[i % NB, :, 1:n + 1]
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    with torch.no_grad():
        loss_sum += loss.detach()
step_ms = timer.stop(a.steps)
done(a.steps, mean_loss=loss_sum.item() / a.steps, step_ms=step_ms)
