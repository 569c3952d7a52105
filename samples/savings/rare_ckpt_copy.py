"""rare_ckpt_copy.py - every 10th step, a snapshot of the weights with .cpu() vs async copies into pinned buffers (pageable-memcpy).

Model: wide_mlp(4, 4096), batch 8192, bf16 autocast, fused AdamW (savings_common.gpu_parts): 67M float32
parameters (268 MiB), milliseconds of matrix products per step. Every 10th step (steps 9, 19, 29 of a block)
the weights are snapshotted to host memory (an in-memory checkpoint, as for an EMA or a fault-tolerance copy).

bad:   `{k: v.detach().cpu() for k, v in model.state_dict().items()}`. CUDA level, on those steps: 8
       device-to-host copies into freshly allocated pageable memory (268 MiB), each blocking: the first waits
       for the queue to drain, the rest run at the pageable rate with the host held; the GPU idles for tens of
       milliseconds. The other 9 steps of 10 are untouched.
fixed: the weights copied with `copy_(non_blocking=True)` into pinned buffers allocated once, on a side stream
       that waits for the optimizer step (an event); the main stream waits for the copy's event only before the
       next optimizer step writes the weights: the copy overlaps the next forward and backward passes.

Expected saving: moderate (a rare, costly event: one long stall every 10 steps, averaged over the block).

    python3 rare_ckpt_copy.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from savings_common import CUDA, Trainer, gpu_parts, main  # noqa: E402

EVERY = 10


class Pair(Trainer):
    def __init__(self, variant):
        super().__init__(*gpu_parts(), bf16=True)
        self.variant = variant
        self.snapshots = 0
        if variant == "fixed":
            self.bufs = {k: torch.empty(v.shape, dtype=v.dtype, pin_memory=CUDA)
                         for k, v in self.model.state_dict().items()}
            self.copy_stream = torch.cuda.Stream() if CUDA else None
            self.copied = torch.cuda.Event() if CUDA else None
            self.pending = False

    def train(self, i):
        self.zero_grad()
        loss = self.loss(i)
        loss.backward()
        if self.variant == "fixed" and self.pending:
            torch.cuda.current_stream().wait_event(self.copied)  # the weights may change once copied
            self.pending = False
        self.opt.step()
        return loss

    def snapshot(self):
        if self.variant == "bad":
            snap = {k: v.detach().cpu() for k, v in self.model.state_dict().items()}  # blocking, pageable
            self.snapshots += len(snap)
            return
        if not CUDA:
            return
        self.copy_stream.wait_stream(torch.cuda.current_stream())  # after this step's optimizer update
        with torch.cuda.stream(self.copy_stream):
            for k, v in self.model.state_dict().items():
                self.bufs[k].copy_(v.detach(), non_blocking=True)
            self.copied.record()
        self.pending = True
        self.snapshots += len(self.bufs)

    def step(self, i):
        self.loss_sum += self.train(i).detach()
        if i % EVERY == EVERY - 1:
            self.snapshot()

    def end(self):
        return {"loss_sum": self.loss_sum.item(), "tensors_copied": self.snapshots}


main(__doc__, lambda variant, a: Pair(variant))
