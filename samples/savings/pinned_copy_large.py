"""pinned_copy_large.py - a 64 MiB pageable batch copy `.cuda()` every step vs pinned non_blocking (pageable-memcpy).

Model: wide_mlp(2, 1024) on batches of 16384 x 1024 float32 features (64 MiB) under bf16 autocast, fused
AdamW: under a millisecond of GPU work per step. The batches live in host memory.

bad:   `x = batch.cuda()` from pageable memory. CUDA level: one 64 MiB pageable host-to-device copy per step:
       the driver stages it through a pinned buffer chunk by chunk while the calling thread is held (and
       PyTorch's blocking copy synchronizes the stream); the host launches nothing meanwhile, and the copy runs
       at the staged rate, well below the link's.
fixed: the batches pinned once, copied with `.cuda(non_blocking=True)`: one DMA at the link's rate, in stream
       order, the host free to launch the step behind it.

Expected saving: large (the step is mostly the copy; pinned copies run at several times the pageable rate).

    python3 pinned_copy_large.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from savings_common import CUDA, DEV, Trainer, adamw, autocast, main, pinned, size, wide_mlp  # noqa: E402

WIDTH, BATCH, NB = size(1024, 64), size(16384, 64), 3


class Pair(Trainer):
    def __init__(self, variant):
        model = wide_mlp(2, WIDTH, classes=100)
        g = torch.Generator().manual_seed(1)
        xs = torch.randn(NB, BATCH, WIDTH, generator=g)  # host memory, pageable: 3 x 64 MiB
        ys = (xs[..., :32] @ torch.randn(32, 100, generator=g)).argmax(-1).to(DEV)
        if variant == "fixed":
            xs = pinned(xs)
        super().__init__(model, adamw(model.parameters(), "fused"), xs, ys, bf16=True)
        self.variant = variant

    def loss(self, i):
        x = self.xs[i % NB]
        if CUDA:
            x = x.cuda() if self.variant == "bad" else x.cuda(non_blocking=True)
        with autocast():
            return F.cross_entropy(self.model(x), self.ys[i % NB])


main(__doc__, lambda variant, a: Pair(variant))
