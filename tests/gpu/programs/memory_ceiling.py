"""memory_ceiling.py - fill the GPU until an allocation fails, then keep training near the ceiling.

Runs a first step (so that cuBLAS has its memory), allocates 1 GiB blocks through PyTorch's caching allocator
until torch.OutOfMemoryError (the failed cudaMalloc, or with expandable segments the failed cuMemCreate, must be
in the trace), gives two blocks back to the allocator's cache and runs the other steps in them. Prints, on info
lines, the free memory at start and how many blocks it got: the difference with and without the profiler is
the device memory the profiler holds (CUPTI's buffers, capped by `cuscope record --cupti-buffers`).

    python3 memory_ceiling.py [--expandable] [--steps 5]

--expandable sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True before torch starts (unless set already).
"""
import argparse
import os
import sys

p = argparse.ArgumentParser()
p.add_argument("--expandable", action="store_true", help="use PyTorch's expandable segments (VMM calls)")
p.add_argument("--steps", type=int, default=5)
p.add_argument("--block-gib", type=float, default=1.0)
a = p.parse_args()
if a.expandable:
    os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")

from common import expect, info, torch_cuda  # noqa: E402

torch = torch_cuda()

dev = torch.device("cuda")
torch.manual_seed(0)
w = torch.randn(2048, 2048, device=dev)
x = torch.randn(512, 2048, device=dev)


def step(i):
    global x
    torch.cuda.nvtx.range_push(f"ceiling_step{i}")
    x = torch.tanh(x @ w) * 0.5
    v = x.float().abs().mean().item()
    torch.cuda.nvtx.range_pop()
    return v


# One step before the GPU is full: cuBLAS allocates its handle with cudaMalloc of its own, outside PyTorch's
# cache, which would fail at the ceiling.
total = step(0)
block = int(a.block_gib * (1 << 30))
free0, total_mem = torch.cuda.mem_get_info()
info(f"free_mib_at_start={free0 >> 20} total_mib={total_mem >> 20} "
     f"PYTORCH_CUDA_ALLOC_CONF={os.environ.get('PYTORCH_CUDA_ALLOC_CONF', '')}")

blocks, oom = [], False
limit = int(total_mem // block) + 2
try:
    for _ in range(limit):
        blocks.append(torch.empty(block, dtype=torch.uint8, device=dev))
except torch.OutOfMemoryError:
    oom = True
info(f"blocks={len(blocks)} of {a.block_gib:g} GiB before the failure")
print(f"out_of_memory={oom}")
if not oom:
    print("the GPU never ran out of memory", file=sys.stderr)
    sys.exit(1)

# Give two blocks back to the caching allocator and train in them.
del blocks[-2:]
for i in range(1, a.steps):
    total += step(i)
print(f"steps={a.steps} total={total:.4f}")
del blocks
torch.cuda.empty_cache()

tokens = [f"nvtx_text.ceiling_step={a.steps}", f"kernels_in_nvtx.ceiling_step>={2 * a.steps}", "processes_cuda=1",
          "exit_code=0"]
if "expandable_segments:True" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""):
    tokens += ["vmm_creates>=1", "vmm_maps>=1", "vmm_failed>=1"]
else:
    tokens += ["alloc_failed>=1"]
expect(*tokens)
