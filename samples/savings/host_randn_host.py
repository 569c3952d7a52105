"""host_randn_host.py - torch.randn on the host, then .cuda(), every step; the host sets the pace (host-created-tensor).

Model: wide_mlp(3, 1024) on batches of 4096 under bf16 autocast, fused AdamW: well under a millisecond of GPU
work per step. A Gaussian noise of the batch's shape (4096 x 1024, 16 MiB in float32) is added to the input
each step (noise augmentation).

bad:   `torch.randn(4096, 1024).cuda()`. CUDA level: the training thread fills 16 MiB with random numbers on
       the CPU (milliseconds, no CUDA call, the GPU idle), then a pageable host-to-device copy (staged through a
       driver buffer, the host held until it is done; PyTorch's blocking copy also synchronizes the stream).
fixed: `torch.randn(4096, 1024, device="cuda")`: one random-number kernel of microseconds; nothing on the host.

Expected saving: large (the step is mostly the host's random numbers and the copy).

    python3 host_randn_host.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from savings_common import DEV, Trainer, adamw, autocast, class_data, main, size, wide_mlp  # noqa: E402

WIDTH, BATCH = size(1024, 64), size(4096, 64)


class Pair(Trainer):
    def __init__(self, variant):
        model = wide_mlp(3, WIDTH, classes=100)
        xs, ys = class_data(4, BATCH, WIDTH, 100)
        super().__init__(model, adamw(model.parameters(), "fused"), xs, ys, bf16=True)
        self.variant = variant

    def loss(self, i):
        x, y = self.xs[i % 4], self.ys[i % 4]
        if self.variant == "bad":
            noise = torch.randn(BATCH, WIDTH)  # made on the host ...
            noise = noise.cuda() if DEV.type == "cuda" else noise  # ... and copied from pageable memory
        else:
            noise = torch.randn(BATCH, WIDTH, device=DEV)
        with autocast():
            return F.cross_entropy(self.model(x + 0.1 * noise), y)


main(__doc__, lambda variant, a: Pair(variant))
