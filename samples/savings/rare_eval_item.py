"""rare_eval_item.py - every 10th step, an evaluation that reads each prediction with int(), vs one read after the loop (d2h-sync).

Model: wide_mlp(4, 4096), batch 8192, bf16 autocast, fused AdamW (savings_common.gpu_parts). Every 10th step
(steps 9, 19, 29 of a block) a small evaluation runs: 4 batches of 256 held-out samples, forward only.

bad:   the evaluation collects its predictions in Python, `[int(p) for p in pred]`, and counts the correct
       ones on the host. CUDA level, on those steps: 1024 device-to-host copies of 8 bytes, each followed by a
       stream synchronize (`_local_scalar_dense`): the GPU idles between them while the host goes round the
       Python loop. The other 9 steps of 10 are untouched.
fixed: the correct predictions counted on the device (`(pred == y).sum()`), kept in a tensor and read once
       after the steps.

Expected saving: moderate (a rare, costly event: about a thousand waits every 10 steps).

    python3 rare_eval_item.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from savings_common import DEV, GPU_WIDTH, Trainer, autocast, class_data, gpu_parts, main, size  # noqa: E402

EVERY, EVAL_BATCHES, EVAL_BATCH = 10, 4, size(256, 16)


class Pair(Trainer):
    def __init__(self, variant):
        super().__init__(*gpu_parts(), bf16=True)
        self.variant = variant
        self.ex, self.ey = class_data(EVAL_BATCHES, EVAL_BATCH, GPU_WIDTH, 1024, seed=5)
        self.correct_host = 0
        self.correct_dev = torch.zeros((), dtype=torch.long, device=DEV)

    @torch.no_grad()
    def evaluate(self):
        for b in range(EVAL_BATCHES):
            with autocast():
                pred = self.model(self.ex[b]).argmax(-1)
            if self.variant == "bad":
                labels = self.ey[b].tolist()  # one copy for the labels
                preds = [int(p) for p in pred]  # one DtoH copy + wait per sample
                self.correct_host += sum(int(p == y) for p, y in zip(preds, labels))
            else:
                self.correct_dev += (pred == self.ey[b]).sum()

    def step(self, i):
        self.loss_sum += self.train(i).detach()
        if i % EVERY == EVERY - 1:
            self.evaluate()

    def end(self):
        return {"correct": self.correct_host if self.variant == "bad" else self.correct_dev.item()}


main(__doc__, lambda variant, a: Pair(variant))
