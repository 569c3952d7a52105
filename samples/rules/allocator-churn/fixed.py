"""allocator-churn/fixed.py - the same curriculum after one step at the longest length: no new blocks.

The model, data and steps of bad.py, with the pre-allocation the guides advise: before the loop, one forward
and backward pass at the longest length the curriculum reaches (1536 tokens), its gradients dropped. The
caching allocator then holds blocks large enough for every later step and splits them for the shorter ones:
no allocator call in the steady steps.

Seen at the CUDA level: cudaMalloc calls before the first step only. An analyzer should report nothing for
allocator-churn.

    python3 fixed.py [--steps 40] [--warmup 5]
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


# pre-allocate: one pass at the longest length, so that the cache holds blocks large enough
with torch.autocast("cuda", dtype=torch.bfloat16):
    F.cross_entropy(model(tokens[0, :, :SEQ]).reshape(-1, VOCAB), tokens[0, :, 1:].reshape(-1)).backward()
opt.zero_grad(set_to_none=True)

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
