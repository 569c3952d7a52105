"""pt_sgd_loop_zero.py - many small parameter tensors, a per-parameter SGD step and zero_grad(set_to_none=False).

A deep narrow network (32 blocks of Linear(512, 512) + LayerNorm: 128 parameter tensors), batch 1024, bf16
autocast. The optimizer is SGD with momentum and `foreach=False`: a few small kernels per parameter tensor, each
launched from Python one after the other; and `opt.zero_grad(set_to_none=False)` writes zeros into every gradient
each step (one fill kernel per tensor) where set_to_none=True (the default) writes nothing.
Labels: unfused-optimizer and zero-grad-memset (must); d2h-sync, sync-call, empty-cache-in-loop,
memory-ceiling-thrash, cuda-core-scan, host-created-tensor, pageable-memcpy, no-tensor-cores must not.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import need_torch, parse_args, timed_loop  # noqa: E402

args = parse_args(__doc__, steps=30)
torch = need_torch()
nn = torch.nn
blocks = []
for _ in range(32):
    blocks += [nn.Linear(512, 512), nn.LayerNorm(512), nn.ReLU()]
model = nn.Sequential(*blocks, nn.Linear(512, 1)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, foreach=False)
g = torch.Generator(device="cuda").manual_seed(1)
x = torch.randn(1024, 512, device="cuda", generator=g)
y = torch.randn(1024, 1, device="cuda", generator=g)


def step(i):
    opt.zero_grad(set_to_none=False)  # the trap: fills every gradient with zeros
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = model(x)
    loss = torch.nn.functional.mse_loss(out.float(), y)
    loss.backward()
    opt.step()


timed_loop(torch, step, args, params=len(list(model.parameters())))
