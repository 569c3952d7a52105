"""pt_numpy_batches.py - batches sliced from a NumPy array and copied with non_blocking=True from pageable memory.

The dataset is a float32 NumPy array in host memory (8 batches of 4096 x 2048, 32 MiB each). Every step slices
the next batch and calls `torch.from_numpy(batch).to("cuda", non_blocking=True)`: the memory is pageable, so the
copy is not asynchronous; the driver stages it through its own pinned buffer while the calling thread waits,
behind the work already queued on the stream. The model (5 layers of 2048, bf16 autocast, fused AdamW) is about
a millisecond of GPU work, less than the copy. No host work makes the data: the slice is a view.
With --pinned (pt_numpy_batches_pinned) the array is pinned once before the loop
(`torch.from_numpy(data).pin_memory()`) and each batch is copied from it: the fix, and the measure of what
the pageable copies cost.
Labels: pageable-memcpy (must); host-created-tensor (nothing is made on the host inside the step),
dataloader-stall (the host waits inside the copy call, not making data), d2h-sync,
sync-call, empty-cache-in-loop, memory-ceiling-thrash, cuda-core-scan, zero-grad-memset, unfused-optimizer,
no-tensor-cores must not.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import mlp, need_torch, parse_args, timed_loop  # noqa: E402

args = parse_args(__doc__, steps=30, extra=lambda p: p.add_argument("--pinned", action="store_true"))
torch = need_torch()
import numpy as np  # noqa: E402

rng = np.random.default_rng(0)
data = rng.standard_normal((8, 4096, 2048), dtype=np.float32)
pinned = torch.from_numpy(data).pin_memory() if args.pinned else None
target = torch.randn(4096, 2048, device="cuda")
model = mlp(torch, 2048, 5)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)


def step(i):
    if pinned is not None:
        xb = pinned[i % len(data)].to("cuda", non_blocking=True)
    else:
        xb = torch.from_numpy(data[i % len(data)]).to("cuda", non_blocking=True)  # the trap: pageable source
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = model(xb)
    loss = torch.nn.functional.mse_loss(out.float(), target)
    loss.backward()
    opt.step()


timed_loop(torch, step, args, batch_mib=32, pinned=int(args.pinned))
