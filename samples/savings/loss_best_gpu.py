"""loss_best_gpu.py - `if loss < best:` on a device scalar in a GPU-heavy loop (a d2h-sync pattern that costs ~nothing).

Model: wide_mlp(4, 4096), batch 8192, bf16 autocast, fused AdamW (savings_common.gpu_parts): milliseconds of
matrix products per step, the host a step or more ahead of the GPU.

bad:   `if loss < best: best = loss.detach()` after each step keeps the best loss. CUDA level: the comparison is
       a kernel; `if` on its result is Tensor.__bool__ -> .item(): a 1-byte device-to-host copy (pageable) and a
       stream synchronize per step. The host waits for the queue to drain, then the GPU idles only until the
       next step's first launch (tens of microseconds of a multi-millisecond step).
fixed: `best = torch.minimum(best, loss.detach())` on the device, read after the steps.

Expected saving: about zero (within the run-to-run noise). Rule "none": the d2h-sync pattern is there, and a
finding should predict no measurable saving.

    python3 loss_best_gpu.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from savings_common import DEV, Trainer, gpu_parts, main  # noqa: E402


class Pair(Trainer):
    def __init__(self, variant):
        super().__init__(*gpu_parts(), bf16=True)
        self.variant = variant
        self.best = torch.full((), float("inf"), device=DEV)

    def step(self, i):
        loss = self.train(i).detach()
        if self.variant == "bad":
            if loss < self.best:  # Tensor.__bool__: DtoH copy + wait
                self.best = loss
        else:
            self.best = torch.minimum(self.best, loss)

    def end(self):
        return {"best": self.best.item()}


main(__doc__, lambda variant, a: Pair(variant))
