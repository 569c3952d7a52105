"""pt_growing_batch.py - negative: a batch that grows every step, the allocator's cudaMalloc calls hidden by a full queue.

A curriculum that lengthens the sequences a little every step (a bf16 MLP of width 4096 over `batch x length`
tokens, the length growing by 64 tokens a step from 2048): every activation is a little larger than the step
before, no cached block fits, and PyTorch's caching allocator calls cudaMalloc for new blocks in every steady
step (the old ones stay cached, too small to reuse): recorded on the H200, 6.6 calls a step of 152 us each.
Written as allocator-churn's positive, it is not one: the step is GPU-bound (97% busy), cudaMalloc does not wait
for the GPU, and the host makes its calls while the GPU still runs work queued ahead, so no GPU time is lost to
them (the reserved memory grows to 42 GiB, which is not a time cost). A host-bound loop would pay them.
Labels: allocator-churn must not, with d2h-sync, sync-call, empty-cache-in-loop, memory-ceiling-thrash,
cuda-core-scan, zero-grad-memset, unfused-optimizer, host-created-tensor, pageable-memcpy, no-tensor-cores,
dataloader-stall.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import info, mlp, need_torch, parse_args, timed_loop  # noqa: E402

args = parse_args(__doc__, steps=30)
torch = need_torch()
model = mlp(torch, 4096, 4)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
g = torch.Generator(device="cuda").manual_seed(1)


def step(i):
    n = 4 * (2048 + 64 * i)  # the trap: a new size every step
    x = torch.randn(n, 4096, device="cuda", generator=g)
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = model(x)
    loss = out.float().pow(2).mean()
    loss.backward()
    opt.step()


timed_loop(torch, step, args, after=lambda: info(f"reserved_mib={torch.cuda.memory_reserved() >> 20}"))
