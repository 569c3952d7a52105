"""mask_index_host.py - boolean-mask indexing x[mask] every step of a host-bound loop (d2h-sync).

Model: tiny_net(12) (LayerNorm/Linear(256)/GELU blocks, batch 64, fp32, fused AdamW), a host-bound step of
about 150 short kernels. A tenth of the labels are -100 ("no label").

bad:   the loss keeps the labelled rows with `logits[mask]` and `y[mask]` (mask = y >= 0). CUDA level: each
       boolean index is a nonzero(): a kernel counting the true entries, a device-to-host copy of the count
       (pageable, a few bytes) and a stream synchronize, since the output's shape depends on it; then the
       gather kernels. Two waits per step, the GPU idle after each until the host launches again.
fixed: `F.cross_entropy(logits, y, ignore_index=-100)`: the same loss with shapes known in advance, no copy
       and no wait.

Expected saving: small to moderate (two waits per step in a loop whose GPU mostly waits for launches anyway).

    python3 mask_index_host.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from savings_common import DEV, Trainer, adamw, class_data, main, tiny_net  # noqa: E402


class Pair(Trainer):
    def __init__(self, variant):
        model = tiny_net(12)
        xs, ys = class_data(8, 64, 256, 10)
        g = torch.Generator(device=DEV).manual_seed(2)
        ys = torch.where(torch.rand(ys.shape, device=DEV, generator=g) < 0.1, torch.full_like(ys, -100), ys)
        super().__init__(model, adamw(model.parameters(), "fused"), xs, ys)
        self.variant = variant

    def loss(self, i):
        x, y = self.xs[i % 8], self.ys[i % 8]
        logits = self.model(x)
        if self.variant == "bad":
            mask = y >= 0
            return F.cross_entropy(logits[mask], y[mask])  # two nonzero(): DtoH + wait each
        return F.cross_entropy(logits, y, ignore_index=-100)


main(__doc__, lambda variant, a: Pair(variant))
