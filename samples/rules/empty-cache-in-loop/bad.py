"""empty-cache-in-loop/bad.py - `torch.cuda.empty_cache()` at the end of every training step.

A 4-layer d768 GPT (batch 32 x 256 tokens, vocabulary 8192, bf16 autocast, fused AdamW) on synthetic batches
kept on the GPU. After each optimizer step the loop deletes the logits and the loss and calls
`torch.cuda.empty_cache()` "to free memory for the next step", as guide 000 #6 says not to do.

What it does: empty_cache (emptyCache -> release_cached_blocks) first synchronizes the events of cross-stream
frees, then cudaFree()s every cached segment that is entirely free: the step's activations and temporaries
(tens of segments, from 2 MiB small-pool segments to the 130+ MiB logits). cudaFree waits for the GPU, so the
queue drains; the next step then cudaMalloc()s the same segments again as its forward pass allocates, each
cudaMalloc blocking the host while the GPU waits for launches. Gradients, parameters and optimizer state stay
allocated and are not released.

Seen at the CUDA level, per steady step: a burst of cudaFree calls (MEMORY2 releases, tens per step) at the end
of the step, after which the GPU is idle, then as many cudaMalloc calls (same sizes) during the next forward
pass. An analyzer should report empty-cache-in-loop in every steady step (with backtraces: emptyCache /
THCPModule_emptyCache and this file's line), and may also see launch-starvation idle time caused by it.

    python3 bad.py [--steps 40] [--warmup 5]
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
torch.cuda.empty_cache()

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
    torch.cuda.empty_cache()  # the anti-pattern: every step
step_ms = timer.stop(a.steps)
done(a.steps, init_loss=init_loss, mean_loss=loss_sum.item() / a.steps,
     reserved_mib=torch.cuda.memory_reserved() // 2**20, step_ms=step_ms)
