"""allocator-churn/negative_buckets.py - lengths from four buckets, all met in the warm-up: no new blocks.

The model and data of bad.py, with variable sequence lengths as a bucketing sampler gives them: every step
takes one of four lengths (256, 512, 768, 1024 tokens). The warm-up steps visit the four buckets in turn,
longest last, so the caching allocator holds blocks for all of them before the steady steps; after that the
lengths change every step (pseudo-random order) without a new allocation. At the CUDA level the steps'
shapes vary as in bad.py, but no allocator call is made in them. An analyzer should report nothing for
allocator-churn.

    python3 negative_buckets.py [--steps 40] [--warmup 5]
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
BUCKETS = (256, 512, 768, 1024)

model = GPT(VOCAB, D, LAYERS, HEADS, SEQ).to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01, fused=True)
tokens = token_batches(NB, BATCH, SEQ, VOCAB).to(DEV)


def length(i):
    if i < len(BUCKETS):  # warm-up: every bucket once, longest last
        return BUCKETS[i]
    return BUCKETS[(i * 7 + 3) % len(BUCKETS)]


loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
    n = length(i)  # one of four lengths
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
