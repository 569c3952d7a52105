"""optim_foreach_gpu.py - AdamW(foreach=False) vs AdamW(fused=True) on a few large tensors (unfused-optimizer, small).

Model: wide_mlp(4, 4096), batch 8192, bf16 autocast (savings_common.gpu_parts): 8 parameter tensors (67M
float32 parameters), milliseconds of matrix products per step.

bad:   `AdamW(foreach=False)`: about a dozen element-wise kernels per tensor, each a memory-bound pass over the
       tensor and its moments (several GiB of traffic per step), launched one by one; the host keeps ahead.
fixed: `AdamW(fused=True)`: one pass over parameters, gradients and moments.

Expected saving: small to moderate (the extra passes over 67M parameters, on a multi-millisecond step).

    python3 optim_foreach_gpu.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from savings_common import Trainer, gpu_parts, main  # noqa: E402


def make(variant, a):
    return Trainer(*gpu_parts("single" if variant == "bad" else "fused"), bf16=True)


main(__doc__, make)
