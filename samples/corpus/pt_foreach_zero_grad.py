"""pt_foreach_zero_grad.py - Adam with foreach=True and zero_grad(set_to_none=False): zeros written by multi-tensor kernels.

A 24-layer MLP (width 1024, batch 4096, bf16 autocast) trained with `Adam(foreach=True)`; every step starts with
`opt.zero_grad(set_to_none=False)`, which with foreach writes zeros into all the gradients with
`torch._foreach_zero_` (a few multi-tensor kernels, not one fill per tensor) where set_to_none=True (the
default) writes nothing: the backward then allocates or overwrites the gradients anyway.
Labels: zero-grad-memset (must); unfused-optimizer (foreach), d2h-sync, sync-call, empty-cache-in-loop,
memory-ceiling-thrash, cuda-core-scan, host-created-tensor, pageable-memcpy, no-tensor-cores, dataloader-stall,
allocator-churn must not.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import mlp, need_torch, parse_args, timed_loop  # noqa: E402

args = parse_args(__doc__, steps=30)
torch = need_torch()
model = mlp(torch, 1024, 24)
opt = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=True)
g = torch.Generator(device="cuda").manual_seed(1)
x = torch.randn(4096, 1024, device="cuda", generator=g)
y = torch.randn(4096, 1024, device="cuda", generator=g)


def step(i):
    opt.zero_grad(set_to_none=False)  # the trap
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = model(x)
    loss = torch.nn.functional.mse_loss(out.float(), y)
    loss.backward()
    opt.step()


timed_loop(torch, step, args, params=len(list(model.parameters())))
