"""lagged_read_gpu.py - the loss read back one step late, through pinned memory and an event (costs ~nothing).

Model: wide_mlp(4, 4096), batch 8192, bf16 autocast, fused AdamW (savings_common.gpu_parts), GPU-bound.

bad:   every step copies its loss into a slot of a pinned host buffer (`copy_(non_blocking=True)`: an async
       device-to-host copy) and records an event; then it waits for the PREVIOUS step's event
       (cudaEventSynchronize) and reads that loss. CUDA level: one async DtoH copy, one event record and one
       host wait per step, but the wait is for a point of the stream one step back, while the current step
       is still queued: the GPU never runs dry.
fixed: no read at all inside the loop (the losses summed on the device, read after the steps).

Expected saving: about zero. Rule "none": a d2h-sync look-alike (a copy and a host wait every step) that a
correct analysis prices at zero.

    python3 lagged_read_gpu.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from savings_common import Trainer, gpu_parts, main, pinned  # noqa: E402


class Pair(Trainer):
    def __init__(self, variant):
        super().__init__(*gpu_parts(), bf16=True)
        self.variant = variant
        self.buf = pinned(torch.zeros(2))
        self.events = [torch.cuda.Event(), torch.cuda.Event()]
        self.pending = None
        self.total = 0.0

    def begin(self):
        self.pending = None

    def step(self, i):
        loss = self.train(i).detach()
        if self.variant == "bad":
            slot = i % 2
            self.buf[slot].copy_(loss, non_blocking=True)  # async DtoH into pinned memory
            self.events[slot].record()
            if self.pending is not None:  # the previous step's loss: its event is one step back in the queue
                self.events[self.pending].synchronize()
                self.total += float(self.buf[self.pending])
            self.pending = slot
        else:
            self.loss_sum += loss

    def end(self):
        return {"loss_sum": self.total if self.variant == "bad" else self.loss_sum.item()}


main(__doc__, lambda variant, a: Pair(variant))
