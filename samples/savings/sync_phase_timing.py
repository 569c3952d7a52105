"""sync_phase_timing.py - torch.cuda.synchronize() three times a step to time its phases (sync-call).

Model: wide_mlp(6, 2048) on batches of 2048 under bf16 autocast, fused AdamW: matrix products of tens of
microseconds, about as long as the host takes to launch them, so host and GPU run nearly in step and each
phase (forward, backward, optimizer) is host-bound in parts and GPU-bound in others.

bad:   `torch.cuda.synchronize()` after the forward pass, the backward pass and the optimizer step, with
       time.perf_counter() around each, to log phase times. CUDA level: three cudaDeviceSynchronize calls per
       step, no copy: each waits for the GPU to drain, after which the GPU idles until the host launches the
       next phase; no phase's GPU work can overlap the next phase's launches.
fixed: the phases timed with CUDA events (cudaEventRecord, no wait), their elapsed times read once after the
       steps.

Expected saving: moderate (the overlap of host launches and GPU work lost at each of the three waits).

    python3 sync_phase_timing.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from savings_common import Trainer, adamw, class_data, main, size, sync, wide_mlp  # noqa: E402

WIDTH, BATCH = size(2048, 64), size(2048, 64)


class Pair(Trainer):
    def __init__(self, variant):
        model = wide_mlp(6, WIDTH)
        xs, ys = class_data(4, BATCH, WIDTH, 1024)
        super().__init__(model, adamw(model.parameters(), "fused"), xs, ys, bf16=True)
        self.variant = variant
        self.phase_ms = [0.0, 0.0, 0.0]
        self.pool = []  # 4 timing events per step of a block, created once
        self.marks = []

    def begin(self):
        self.marks = []

    def events(self, i):
        while len(self.pool) <= i:
            self.pool.append([torch.cuda.Event(enable_timing=True) for _ in range(4)])
        return self.pool[i]

    def step(self, i):
        if self.variant == "bad":
            t0 = time.perf_counter()
            self.zero_grad()
            loss = self.loss(i)
            sync()
            t1 = time.perf_counter()
            loss.backward()
            sync()
            t2 = time.perf_counter()
            self.opt.step()
            sync()
            t3 = time.perf_counter()
            for k, d in enumerate((t1 - t0, t2 - t1, t3 - t2)):
                self.phase_ms[k] += d * 1e3
        else:
            ev = self.events(i)
            ev[0].record()
            self.zero_grad()
            loss = self.loss(i)
            ev[1].record()
            loss.backward()
            ev[2].record()
            self.opt.step()
            ev[3].record()
            self.marks.append(ev)
        self.loss_sum += loss.detach()

    def end(self):
        for ev in self.marks:  # after the block's synchronize: every event has completed
            for k in range(3):
                self.phase_ms[k] += ev[k].elapsed_time(ev[k + 1])
        self.marks = []
        return {"fwd_ms": self.phase_ms[0], "bwd_ms": self.phase_ms[1], "opt_ms": self.phase_ms[2]}


main(__doc__, lambda variant, a: Pair(variant))
