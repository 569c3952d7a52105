"""host_randn_gpu.py - a small torch.rand on the host, then .cuda(), every step of a GPU-bound loop (saves ~nothing).

Model: wide_mlp(4, 4096), batch 8192, bf16 autocast, fused AdamW (savings_common.gpu_parts): milliseconds of
matrix products per step, the host far ahead of the GPU.

bad:   a per-feature dropout-like scale `torch.rand(4096).cuda()` (16 KiB) made on the host each step. CUDA
       level: microseconds of CPU work, then a small pageable host-to-device copy; PyTorch's blocking copy
       synchronizes the stream, so the host waits for the queue to drain and the GPU then idles until the copy
       and the next kernels are launched (tens of microseconds).
fixed: `torch.rand(4096, device="cuda")`.

Expected saving: about zero. Rule "none": the host-created-tensor pattern is there (a tensor made on the host
and copied every step) but the GPU-bound step hides all of it but one launch latency.

    python3 host_randn_gpu.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from savings_common import DEV, GPU_WIDTH, Trainer, autocast, gpu_parts, main  # noqa: E402


class Pair(Trainer):
    def __init__(self, variant):
        super().__init__(*gpu_parts(), bf16=True)
        self.variant = variant

    def loss(self, i):
        x, y = self.xs[i % 4], self.ys[i % 4]
        if self.variant == "bad":
            scale = torch.rand(GPU_WIDTH).cuda() if DEV.type == "cuda" else torch.rand(GPU_WIDTH)
        else:
            scale = torch.rand(GPU_WIDTH, device=DEV)
        with autocast():
            return F.cross_entropy(self.model(x * (0.9 + 0.2 * scale)), y)


main(__doc__, lambda variant, a: Pair(variant))
