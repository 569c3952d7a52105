"""launch_tiny_batch.py - 4 micro-batches of 64 per step vs one batch of 256 (launch-starvation; fix: a larger batch).

Model: tiny_net(6) (LayerNorm/Linear(256)/GELU residual blocks, fp32, fused AdamW). A step trains on 256
samples either way, with the same loss (the mean over the 256).

bad:   gradient accumulation over 4 micro-batches of 64: four forward and backward passes of about 80 tiny
       kernels each, then one AdamW step. CUDA level: ~330 launches per step of kernels that each run a few
       microseconds, shorter than their launch; the GPU idles between them.
fixed: one forward and backward pass on the 256 samples at once: ~85 launches of kernels that do 4x the work
       each, still about as short as their launch.

Expected saving: large (about 4x fewer launches for the same samples).

    python3 launch_tiny_batch.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch.nn.functional as F  # noqa: E402

from savings_common import Trainer, adamw, class_data, main, tiny_net  # noqa: E402

MICRO, NMICRO, NB = 64, 4, 4


class Pair(Trainer):
    def __init__(self, variant):
        model = tiny_net(6)
        xs, ys = class_data(NB, MICRO * NMICRO, 256, 10)
        super().__init__(model, adamw(model.parameters(), "fused"), xs, ys)
        self.variant = variant

    def train(self, i):
        self.zero_grad()
        x, y = self.xs[i % NB], self.ys[i % NB]
        if self.variant == "bad":
            total = 0
            for k in range(NMICRO):
                sl = slice(k * MICRO, (k + 1) * MICRO)
                loss = F.cross_entropy(self.model(x[sl]), y[sl]) / NMICRO
                loss.backward()
                total = total + loss.detach()
            loss = total
        else:
            loss = F.cross_entropy(self.model(x), y)
            loss.backward()
        self.opt.step()
        return loss


main(__doc__, lambda variant, a: Pair(variant))
