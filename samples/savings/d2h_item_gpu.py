"""d2h_item_gpu.py - loss.item() every step of a GPU-bound loop (d2h-sync, with little to save).

Model: wide_mlp(4, 4096) on batches of 8192 under bf16 autocast, fused AdamW (savings_common.gpu_parts):
milliseconds of matrix products per step for about 60 launches, so without a wait the host runs a step or
more ahead of the GPU.

bad:   `loss.item()` after each optimizer step. CUDA level: one device-to-host copy of 4 bytes (pageable) and a
       stream synchronize per step: the host waits for the whole queue; after it the GPU idles only until the
       next step's first kernel is launched (tens of microseconds), then the host is ahead again.
fixed: the losses summed on the device and read once after the steps.

Expected saving: well under a few percent (one launch latency per multi-millisecond step).

    python3 d2h_item_gpu.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from savings_common import Trainer, gpu_parts, main  # noqa: E402


class Pair(Trainer):
    def __init__(self, variant):
        super().__init__(*gpu_parts(), bf16=True)
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
