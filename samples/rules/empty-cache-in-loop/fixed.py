"""empty-cache-in-loop/fixed.py - bad.py with `torch.cuda.empty_cache()` called once, after setup.

Same model, data and steps as bad.py. The cache is emptied once, after the setup evaluation that leaves
temporaries behind (guide 000 #6: clear the cache when training starts, not during it). In the steps the
caching allocator reuses its cached segments: after the first step there are no more device allocations or
frees.

Seen at the CUDA level: cudaFree calls only in the setup; in the steady steps no allocation, no release and no
GPU idle time. An analyzer should report nothing.

    python3 fixed.py [--steps 40] [--warmup 5]
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

# Setup: a first evaluation of the untrained model leaves cached temporaries behind; release them once.
with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
    init_loss = F.cross_entropy(model(tokens[:2, :, :-1].reshape(-1, SEQ)).reshape(-1, VOCAB),
                                tokens[:2, :, 1:].reshape(-1))
init_loss = init_loss.item()
torch.cuda.empty_cache()  # once, after setup

loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
    x, y = tokens[i % NB, :, :-1], tokens[i % NB, :, 1:]
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    loss_sum += loss.detach()
    del logits, loss
step_ms = timer.stop(a.steps)
done(a.steps, init_loss=init_loss, mean_loss=loss_sum.item() / a.steps,
     reserved_mib=torch.cuda.memory_reserved() // 2**20, step_ms=step_ms)
