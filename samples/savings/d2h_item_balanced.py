"""d2h_item_balanced.py - loss.item() every step, then host work: the wait serializes host and GPU (d2h-sync).

Model: the GPU-bound wide_mlp(4, 4096) of savings_common.gpu_parts (milliseconds of matrix products per step),
and on the host, every step, a few milliseconds of Python work that uses no CUDA call (tokenizing the next
batch's text: savings_common.HostText).

bad:   after the optimizer step, `loss.item()` (for a log line), then the host work. CUDA level: one 4-byte
       device-to-host copy and a stream synchronize per step; the host waits until the GPU has run the whole
       step, then does its Python work while the GPU has nothing queued and idles. Step = GPU time + host work.
fixed: the loss summed on the device and read once after the steps; the host work runs while the GPU executes
       the queued step. Step = max(GPU time, host time).

Expected saving: large (host work / (GPU time + host work), tens of percent).

    python3 d2h_item_balanced.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from savings_common import HostText, Trainer, gpu_parts, main  # noqa: E402


class Pair(Trainer):
    def __init__(self, variant):
        super().__init__(*gpu_parts(), bf16=True)
        self.variant = variant
        self.host = HostText()
        self.total, self.tokens = 0.0, 0

    def step(self, i):
        loss = self.train(i)
        if self.variant == "bad":
            self.total += loss.item()  # DtoH copy + stream synchronize: wait for the whole step
        else:
            self.loss_sum += loss.detach()
        self.tokens += len(self.host(i))  # host work of the next batch, no CUDA call

    def end(self):
        return {"loss_sum": self.total if self.variant == "bad" else self.loss_sum.item(), "tokens": self.tokens}


main(__doc__, lambda variant, a: Pair(variant))
