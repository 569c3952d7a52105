"""pt_log_every_step.py - metrics logged every step: loss.item(), accuracy from argmax compared on the host.

A classifier (bf16 MLP, width 2048, batch 8192, 1000 classes, fused AdamW) whose loop logs, every step,
`loss.item()` and the batch accuracy computed as `(logits.argmax(1) == y).float().mean().item()`, and appends
both to Python lists: two read-backs per step, each waiting for the GPU to finish everything queued, then
the host launches the next step into an empty queue. Keeping the metrics on the GPU (and reading them every N
steps) removes the waits.
Labels: d2h-sync (must); sync-call (the waits are read-backs), empty-cache-in-loop, memory-ceiling-thrash,
cuda-core-scan, zero-grad-memset, unfused-optimizer, host-created-tensor, pageable-memcpy, no-tensor-cores,
dataloader-stall, allocator-churn must not.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import mlp, need_torch, parse_args, timed_loop  # noqa: E402

args = parse_args(__doc__, steps=30)
torch = need_torch()
model = mlp(torch, 2048, 4, out=1000)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
g = torch.Generator(device="cuda").manual_seed(1)
x = torch.randn(8192, 2048, device="cuda", generator=g)
y = torch.randint(0, 1000, (8192,), device="cuda", generator=g)
losses, accs = [], []


def step(i):
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits.float(), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())  # the trap: a read-back every step
    accs.append((logits.argmax(1) == y).float().mean().item())  # and a second one


timed_loop(torch, step, args, reads_per_step=2)
