"""no-tensor-cores/fixed.py - the same float32 model with its matmuls on the tensor cores.

The MLP of bad.py (four 4096-wide layers, batch 8192, fused AdamW, float32 weights) with one change:
by default the forward pass runs under `torch.autocast("cuda", dtype=torch.bfloat16)` (bf16 GEMMs with float32
accumulation, float32 master weights); with `--tf32` it stays in float32 and sets
`torch.backends.cuda.matmul.allow_tf32 = True` (`torch.set_float32_matmul_precision("high")`) instead, so that
cuBLAS may use TF32 tensor-core kernels. Either way the GEMMs take a fraction of bad.py's time.

Seen at the CUDA level, per steady step: the same GEMM launches, with tensor-core kernels (`nvjet`, `tensorop`,
`gmma`, MMA shapes, bf16/tf32 type tokens in their names; Hopper kernels of 384-thread blocks with large
shared memory), and bf16 cast kernels under autocast. An analyzer should not report no-tensor-cores.

    python3 fixed.py [--steps 40] [--warmup 5] [--tf32]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from rules_common import DEV, done, parse_args  # noqa: E402
from wide_mlp import run  # noqa: E402

a = parse_args(__doc__, extra=lambda p: p.add_argument(
    "--tf32", action="store_true", help="float32 with TF32 matmuls instead of bf16 autocast"))
if a.tf32:
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.set_float32_matmul_precision("high")
    mean_loss, step_ms = run(a, DEV, autocast_dtype=None)
else:
    mean_loss, step_ms = run(a, DEV, autocast_dtype=torch.bfloat16)
done(a.steps, mean_loss=mean_loss, step_ms=step_ms, precision="tf32" if a.tf32 else "bf16")
