"""torch_compile.py - a torch.compile'd training step: Triton kernels, launched through cuLaunchKernelEx.

The compiled function is a small MLP's forward and loss with pointwise work around the matrix products, which
Inductor fuses into Triton kernels ("triton_..."); the backward is compiled too. Each step is an NVTX range
"compile_step<N>". Compilation runs in the first step (and may start compile worker processes, which never use
the GPU).

    python3 torch_compile.py [--steps 10]
"""
import argparse

from common import expect, info, torch_cuda

torch = torch_cuda()
import torch.nn.functional as F  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=10)
a = p.parse_args()

torch.manual_seed(0)
dev = torch.device("cuda")
w1 = (torch.randn(256, 512, device=dev) * 0.05).requires_grad_()
w2 = (torch.randn(512, 64, device=dev) * 0.05).requires_grad_()
x = torch.randn(128, 256, device=dev)
y = torch.randn(128, 64, device=dev)


@torch.compile
def loss_fn(x, y, w1, w2):
    h = torch.sin(x @ w1) * torch.sigmoid(x @ w1 + 1.0)
    out = torch.tanh(h @ w2) * 2.0 + 0.1 * h.mean(dim=-1, keepdim=True)
    return F.mse_loss(out, y)


loss = None
for i in range(a.steps):
    torch.cuda.nvtx.range_push(f"compile_step{i}")
    loss = loss_fn(x, y, w1, w2)
    loss.backward()
    with torch.no_grad():
        w1 -= 0.05 * w1.grad
        w2 -= 0.05 * w2.grad
        w1.grad = None
        w2.grad = None
    torch.cuda.nvtx.range_pop()
final = loss.item()
info(f"torch {torch.__version__}")
print(f"steps={a.steps} final_loss={final:.3f}")
n = a.steps
# Forward and backward each run at least one Triton kernel per step.
expect(f"kname.triton>={2 * n}", f"nvtx_text.compile_step={n}", f"kernels_in_nvtx.compile_step>={2 * n}",
       "memcpy_dtoh>=1", "processes_cuda>=1", "exit_code=0")
