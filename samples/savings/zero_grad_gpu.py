"""zero_grad_gpu.py - `p.grad.zero_()` for every parameter each step of a GPU-bound loop (zero-grad-memset, small).

Model: wide_mlp(4, 4096), batch 8192, bf16 autocast, fused AdamW (savings_common.gpu_parts): 8 parameter
tensors, four of them 16M-element weights; milliseconds of matrix products per step.

bad:   `for p in model.parameters(): p.grad.zero_()` before each backward pass. CUDA level: 8 fill kernels
       (or memsets) writing about 200 MiB of zeros per step, and the backward pass then adds each new gradient
       into the zeroed one (an extra read and write of every gradient) instead of writing it.
fixed: `opt.zero_grad(set_to_none=True)`.

Expected saving: small (memory-bound fills and adds of a few hundred MiB on a multi-millisecond step).

    python3 zero_grad_gpu.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from savings_common import Trainer, gpu_parts, main  # noqa: E402


def make(variant, a):
    return Trainer(*gpu_parts(), bf16=True, zero="loop" if variant == "bad" else "none")


main(__doc__, make)
