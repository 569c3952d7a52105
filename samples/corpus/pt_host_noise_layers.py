"""pt_host_noise_layers.py - noise made with the CPU's generator inside the forward, copied to the GPU per layer.

A 6-layer MLP (width 2048, batch 4096, bf16 autocast, fused AdamW) whose forward adds Gaussian noise to every
hidden activation as a regularizer, written `h + 0.01 * torch.randn(h.shape).to("cuda")`: the noise comes from
the CPU's generator (4096 x 2048 floats, 32 MiB, a few ms of host work each), in pageable memory, copied to the
device five times a step in the middle of the forward. While the host fills the buffer the GPU runs out of
queued work and idles. Made on the device (`torch.randn_like(h)`) each is one kernel of microseconds.
Labels: host-created-tensor (must); d2h-sync, sync-call, empty-cache-in-loop, memory-ceiling-thrash,
cuda-core-scan, zero-grad-memset, unfused-optimizer, no-tensor-cores must not.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import need_torch, parse_args, timed_loop  # noqa: E402

args = parse_args(__doc__, steps=30)
torch = need_torch()
torch.set_num_threads(4)
nn = torch.nn
layers = nn.ModuleList([nn.Linear(2048, 2048) for _ in range(6)]).cuda()
opt = torch.optim.AdamW(layers.parameters(), lr=1e-4, fused=True)
g = torch.Generator(device="cuda").manual_seed(1)
x = torch.randn(4096, 2048, device="cuda", generator=g)
y = torch.randn(4096, 2048, device="cuda", generator=g)


def step(i):
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        h = x
        for i, lin in enumerate(layers):
            h = lin(h)
            if i < len(layers) - 1:
                h = torch.relu(h)
                h = h + 0.01 * torch.randn(h.shape).to("cuda")  # the trap: CPU generator, pageable copy
    loss = torch.nn.functional.mse_loss(h.float(), y)
    loss.backward()
    opt.step()


timed_loop(torch, step, args, copies_per_step=5)
