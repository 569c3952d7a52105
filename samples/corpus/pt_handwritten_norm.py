"""pt_handwritten_norm.py - layer norm and a sigmoid-GELU written out element by element, in float32.

A 4-layer MLP (width 4096, batch 8192, float32 activations with TF32 matmuls) whose normalization and activation
are hand-written: `mu = h.mean(-1, keepdim=True); d = h - mu; v = (d * d).mean(-1, keepdim=True);
h = d * torch.rsqrt(v + 1e-5) * gamma + beta; h = h * torch.sigmoid(1.702 * h)`. Each operator is its own
kernel reading and writing the whole 128 MiB activation; back to back on one stream they move several times
the data that one fused kernel (nn.LayerNorm + F.gelu, or torch.compile) would, in the forward and again in
the backward.
Labels: unfused-elementwise (must); d2h-sync, sync-call, empty-cache-in-loop, memory-ceiling-thrash,
cuda-core-scan, zero-grad-memset, unfused-optimizer, host-created-tensor, pageable-memcpy, no-tensor-cores
must not.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import need_torch, parse_args, timed_loop  # noqa: E402

args = parse_args(__doc__, steps=30)
torch = need_torch()
torch.backends.cuda.matmul.allow_tf32 = True
nn = torch.nn
W = 4096
lins = nn.ModuleList([nn.Linear(W, W) for _ in range(4)]).cuda()
gammas = nn.ParameterList([nn.Parameter(torch.ones(W, device="cuda")) for _ in range(3)])
betas = nn.ParameterList([nn.Parameter(torch.zeros(W, device="cuda")) for _ in range(3)])
params = list(lins.parameters()) + list(gammas) + list(betas)
opt = torch.optim.AdamW(params, lr=1e-4, fused=True)
g = torch.Generator(device="cuda").manual_seed(1)
x = torch.randn(8192, W, device="cuda", generator=g)
y = torch.randn(8192, W, device="cuda", generator=g)


def step(i):
    opt.zero_grad(set_to_none=True)
    h = x
    for i, lin in enumerate(lins):
        h = lin(h)
        if i < len(lins) - 1:
            mu = h.mean(-1, keepdim=True)
            d = h - mu
            v = (d * d).mean(-1, keepdim=True)
            h = d * torch.rsqrt(v + 1e-5) * gammas[i] + betas[i]
            h = h * torch.sigmoid(1.702 * h)
    loss = torch.nn.functional.mse_loss(h, y)
    loss.backward()
    opt.step()


timed_loop(torch, step, args)
