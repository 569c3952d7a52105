"""compile_item.py - loss.item() every step in the loop of a torch.compile'd model (d2h-sync under torch.compile).

Model: tiny_net(8) (LayerNorm/Linear(256)/GELU residual blocks, batch 256, fp32) compiled with
`torch.compile` (inductor, default mode): Triton kernels that fuse the norms and activations, forward and
backward each a few dozen launches from one compiled graph; fused AdamW (not compiled). The two variants of
an ab run train the same compiled model (one compilation), so they differ only in the loop.

bad:   `loss.item()` after each optimizer step. CUDA level: one 4-byte device-to-host copy and a stream
       synchronize per step; the compiled step's host overhead (guards, graph launch of Triton kernels) then
       starts with the GPU idle, so host and GPU never overlap across steps.
fixed: the losses summed on the device, read once after the steps.

Expected saving: moderate (a short compiled step, whose host part is no longer hidden).

    python3 compile_item.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# compile in this process (no pool of compile workers, which would be more processes in the trace); inductor's
# on-disk cache makes the later runs' compilations short
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
import torch  # noqa: E402

from savings_common import Trainer, adamw, class_data, main, tiny_net  # noqa: E402

SHARED = {}


def parts():
    if not SHARED:
        model = tiny_net(8)
        SHARED["model"] = torch.compile(model)
        SHARED["opt"] = adamw(model.parameters(), "fused")
        SHARED["data"] = class_data(8, 256, 256, 10)
    return SHARED["model"], SHARED["opt"], *SHARED["data"]


class Pair(Trainer):
    def __init__(self, variant):
        super().__init__(*parts())
        self.variant = variant
        self.total = 0.0

    def step(self, i):
        loss = self.train(i)
        if self.variant == "bad":
            self.total += loss.item()  # DtoH copy + stream synchronize every step
        else:
            self.loss_sum += loss.detach()

    def end(self):
        return {"loss_sum": self.total if self.variant == "bad" else self.loss_sum.item()}


main(__doc__, lambda variant, a: Pair(variant))
