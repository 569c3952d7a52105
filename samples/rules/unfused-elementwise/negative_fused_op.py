"""unfused-elementwise/negative_fused_op.py - element-wise-heavy, but already fused: one custom op each way.

The residual MLP of gelu_mlp.py with the hand-written tanh GELU of bad.py (the same formula, computed in
float32 registers) as one custom operator: a torch.autograd.Function whose forward and backward are each one
Triton kernel (`gelu_tanh_fwd`, `gelu_tanh_bwd`) that reads the hidden tensor once and writes the result once.
The arithmetic per element is the same as in bad.py (pow, tanh, the derivative terms); the memory traffic and
the launches are those of a single kernel, as torch.compile would generate.

Seen at the CUDA level, per steady step: per block, fc1 GEMM, one `gelu_tanh_fwd` kernel, fc2 GEMM, and in the
backward pass one `gelu_tanh_bwd` kernel between the GEMMs: no runs of same-grid element-wise kernels beyond
the residual add and layer norm. An analyzer should not report unfused-elementwise (nor anything else).
Needs Triton (shipped with the CUDA builds of PyTorch on Linux).

    python3 negative_fused_op.py [--steps 40] [--warmup 5]
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from gelu_mlp import run  # noqa: E402
from rules_common import DEV, done, parse_args  # noqa: E402

a = parse_args(__doc__)
try:
    import triton
    import triton.language as tl
except ImportError:
    raise SystemExit("this sample needs Triton (pip install triton)")

C = math.sqrt(2.0 / math.pi)
BLOCK = 1024


@triton.jit
def gelu_tanh_fwd(x_ptr, y_ptr, n, c, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32)
    u = c * (x + 0.044715 * x * x * x)
    t = 2.0 / (1.0 + tl.exp(-2.0 * u)) - 1.0  # tanh(u)
    y = 0.5 * x * (1.0 + t)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def gelu_tanh_bwd(x_ptr, g_ptr, dx_ptr, n, c, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=m, other=0.0).to(tl.float32)
    u = c * (x + 0.044715 * x * x * x)
    t = 2.0 / (1.0 + tl.exp(-2.0 * u)) - 1.0
    d = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x)
    tl.store(dx_ptr + offs, (g * d).to(dx_ptr.dtype.element_ty), mask=m)


class GeluTanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        gelu_tanh_fwd[(triton.cdiv(n, BLOCK),)](x, y, n, C, BLOCK=BLOCK)
        ctx.save_for_backward(x)
        return y

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        g = g.contiguous()
        dx = torch.empty_like(x)
        n = x.numel()
        gelu_tanh_bwd[(triton.cdiv(n, BLOCK),)](x, g, dx, n, C, BLOCK=BLOCK)
        return dx


mean_loss, step_ms = run(a, GeluTanh.apply, DEV)
done(a.steps, mean_loss=mean_loss, step_ms=step_ms)
