"""tf32_matmul.py - float32 matrix products on the CUDA cores vs TF32 on the tensor cores (no-tensor-cores).

Model: wide_mlp(4, 2048) trained in float32 (no autocast) on batches of 4096, fused AdamW: about 0.4 TFLOP of
matrix products per step, nearly all of the step.

bad:   `torch.backends.cuda.matmul.allow_tf32 = False` (PyTorch's default): cuBLAS runs the float32 GEMMs with
       SIMT kernels on the CUDA cores (tens of TFLOP/s at best). CUDA level: sgemm-type kernels (no tensor-core
       instructions) take most of the GPU time of the step; the host is far ahead.
fixed: `torch.backends.cuda.matmul.allow_tf32 = True`: the same float32 tensors, GEMMs on the tensor cores in
       TF32 (10-bit mantissa inputs, float32 accumulation), several times faster. The flag is global: each
       block sets it before its warm-up, so the two variants of an ab run do not share it.

Expected saving: large (most of the step is these GEMMs).

    python3 tf32_matmul.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from savings_common import Trainer, adamw, class_data, main, size, wide_mlp  # noqa: E402

WIDTH, BATCH = size(2048, 64), size(4096, 64)


class Pair(Trainer):
    def __init__(self, variant):
        model = wide_mlp(4, WIDTH)
        xs, ys = class_data(4, BATCH, WIDTH, 1024)
        super().__init__(model, adamw(model.parameters(), "fused"), xs, ys)
        self.tf32 = variant == "fixed"

    def begin(self):
        torch.backends.cuda.matmul.allow_tf32 = self.tf32


main(__doc__, lambda variant, a: Pair(variant))
