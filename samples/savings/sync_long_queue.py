"""sync_long_queue.py - torch.cuda.synchronize() after every step of a GPU-bound loop (sync-call, saves ~nothing).

Model: wide_mlp(4, 4096), batch 8192, bf16 autocast, fused AdamW (savings_common.gpu_parts): a step of
milliseconds of GPU work for about 60 launches, so the queue is long.

bad:   `torch.cuda.synchronize()` after each optimizer step (to "keep the loop in step" or time it). CUDA
       level: one cudaDeviceSynchronize per step, no copy: the host waits for the queue to drain, then the GPU
       idles only until the next step's first kernel is launched (tens of microseconds).
fixed: no synchronize inside the steps.

Expected saving: about zero (one launch latency per multi-millisecond step). Rule "none": the sync-call
pattern is there; a finding should predict no measurable saving.

    python3 sync_long_queue.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from savings_common import Trainer, gpu_parts, main, sync  # noqa: E402


class Pair(Trainer):
    def __init__(self, variant):
        super().__init__(*gpu_parts(), bf16=True)
        self.variant = variant

    def step(self, i):
        self.loss_sum += self.train(i).detach()
        if self.variant == "bad":
            sync()  # cudaDeviceSynchronize every step


main(__doc__, lambda variant, a: Pair(variant))
