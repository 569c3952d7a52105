"""pinned_copy_gpu.py - a small pageable batch copy `.cuda()` in a GPU-bound loop vs pinned non_blocking (saves ~nothing).

Model: wide_mlp(4, 4096) with 16 input features, batch 8192, bf16 autocast, fused AdamW: milliseconds of
matrix products per step. The batches (8192 x 16 float32, 512 KiB) live in host memory.

bad:   `x = batch.cuda()` from pageable memory. CUDA level: one pageable host-to-device copy of 512 KiB per
       step (staged by the driver; PyTorch's blocking copy then synchronizes the stream): the host waits for
       the queue to drain, the copy runs (tens of microseconds), then the GPU idles until the next launches.
fixed: the batches pinned once (`pin_memory()`), copied with `.cuda(non_blocking=True)`: an async copy in
       stream order, no host wait.

Expected saving: about zero (a copy and one launch latency of a multi-millisecond step). Rule "none": the
pageable-memcpy pattern is there; a finding should predict no measurable saving.

    python3 pinned_copy_gpu.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from savings_common import (CUDA, DEV, GPU_BATCH, GPU_WIDTH, Trainer, adamw, autocast, main, pinned,  # noqa: E402
                            wide_mlp)

D_IN = 16


class Pair(Trainer):
    def __init__(self, variant):
        model = wide_mlp(4, GPU_WIDTH, d_in=D_IN)
        g = torch.Generator().manual_seed(1)
        xs = torch.randn(4, GPU_BATCH, D_IN, generator=g)  # host memory, pageable
        ys = (xs[..., :8] @ torch.randn(8, 1024, generator=g)).argmax(-1).to(DEV)
        if variant == "fixed":
            xs = pinned(xs)
        super().__init__(model, adamw(model.parameters(), "fused"), xs, ys, bf16=True)
        self.variant = variant

    def loss(self, i):
        x = self.xs[i % 4]
        if CUDA:
            x = x.cuda() if self.variant == "bad" else x.cuda(non_blocking=True)
        with autocast():
            return F.cross_entropy(self.model(x), self.ys[i % 4])


main(__doc__, lambda variant, a: Pair(variant))
