"""fork_child.py - fork() after CUDA is initialized: the children must not disturb the profiled parent.

    python3 fork_child.py --mode fork         the parent uses CUDA, forks a child that calls sys.exit(5) without
                                              touching CUDA, checks the child's status and goes on with GPU steps
    python3 fork_child.py --mode dataloader   a DataLoader with 2 forked workers reads a CPU dataset that feeds
                                              GPU steps

Both exit 0. Only the parent uses the GPU, so the trace has one process that used CUDA.
"""
import argparse
import os
import sys

from common import expect, torch_cuda

torch = torch_cuda()

p = argparse.ArgumentParser()
p.add_argument("--mode", choices=["fork", "dataloader"], default="fork")
p.add_argument("--steps", type=int, default=8)
a = p.parse_args()

torch.manual_seed(0)
dev = torch.device("cuda")
w = torch.randn(32, 4, device=dev)


def gpu_step(i, xb, tag):
    torch.cuda.nvtx.range_push(f"{tag}{i}")
    v = torch.relu(xb @ w).sum().item()  # one DtoH copy
    torch.cuda.nvtx.range_pop()
    return v


if a.mode == "fork":
    first = gpu_step(0, torch.ones(8, 32, device=dev), "fork_step")
    sys.stdout.flush()  # the child must not print the parent's buffered output again
    pid = os.fork()
    if pid == 0:
        sys.exit(5)  # the child: no CUDA at all
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    print(f"child exit {code}")
    total = first
    for i in range(1, a.steps):
        total += gpu_step(i, torch.full((8, 32), float(i), device=dev), "fork_step")
    print(f"steps={a.steps} total={total:.3f}")
    expect(f"nvtx_text.fork_step={a.steps}", f"memcpy_dtoh={a.steps}", "processes_cuda=1", "exit_code=0")
    sys.exit(0 if code == 5 else 1)

# --mode dataloader
from torch.utils.data import DataLoader, Dataset  # noqa: E402


class CpuData(Dataset):
    """64 samples made on the CPU from their index (the same in any worker)."""

    def __len__(self):
        return 64

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(32, generator=g), i % 4


loader = DataLoader(CpuData(), batch_size=8, num_workers=2, shuffle=False)
total, batches = 0.0, 0
for i, (xb, yb) in enumerate(loader):
    total += gpu_step(i, xb.to(dev) + yb.to(dev).unsqueeze(1).float(), "dl_step")
    batches += 1
print(f"batches={batches} total={total:.3f}")
# Each batch: two host-to-device copies (inputs, labels) and one device-to-host read.
expect(f"nvtx_text.dl_step={batches}", f"memcpy_htod>={2 * batches}", f"memcpy_dtoh={batches}",
       "processes_cuda=1", "exit_code=0")
