"""backward_blame.py - backtraces of the CUDA calls that autograd's engine thread makes in backward().

A small model trains for 10 steps on CUDA with the caching allocator off (PYTORCH_NO_CUDA_MEMORY_CACHING=1), so
that backward() allocates and frees device memory with cudaMalloc/cudaFree on the autograd engine thread, which
has no Python frames. With `cuscope record --backtrace` those calls' stacks must carry the note frame (kind 3)
and then the main thread's Python frames, whose first frame outside torch is this file's BACKWARD_LINE; the
forward pass (FORWARD_LINE) allocates on the main thread with its own frames. The lines are printed so that the
check can look for them in the trace.
"""
import os

os.environ["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"

import threading  # noqa: E402

from common import expect, info, torch_cuda  # noqa: E402

torch = torch_cuda()


def step(model, x, target):
    out = model(x)  # FORWARD_LINE
    loss = torch.nn.functional.mse_loss(out, target)
    loss.backward()  # BACKWARD_LINE
    with torch.no_grad():
        for p in model.parameters():
            p -= 1e-3 * p.grad
            p.grad = None


src = open(__file__).read().splitlines()
forward_line = next(i + 1 for i, s in enumerate(src) if s.rstrip().endswith("# FORWARD_LINE"))
backward_line = next(i + 1 for i, s in enumerate(src) if s.rstrip().endswith("# BACKWARD_LINE"))

model = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 1024)).cuda()
x = torch.randn(256, 1024, device="cuda")
target = torch.randn(256, 1024, device="cuda")
for i in range(10):
    step(model, x, target)
torch.cuda.synchronize()
info(f"main thread {threading.get_native_id()}")
print(f"steps=10 forward_line={forward_line} backward_line={backward_line}")
expect("processes_cuda=1", "exit_code=0")
