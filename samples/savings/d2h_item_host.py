"""d2h_item_host.py - loss.item() and an accuracy .cpu() every step of a host-bound loop (d2h-sync).

Model: 12 residual LayerNorm/Linear(256)/GELU blocks, batch 64, fp32, fused AdamW (savings_common.tiny_net):
about 150 kernels of a few microseconds per step, launched slower than they run, so the GPU trails the host by
a few microseconds and idles between launches anyway.

bad:   `loss.item()` and `(pred == y).float().mean().cpu()` each step, for logging. CUDA level: per step two
       device-to-host copies of a few bytes into pageable memory, each followed by a stream synchronize; the
       host waits for the tail of the queue (short here), and the GPU then idles until the next launch.
fixed: loss and accuracy summed into device tensors, read once after the steps: no copy and no wait inside
       the steps.

The GPU has little queued work to drain, so the fix is expected to save a few percent at most: the cost is the
wait's own latency (the copy, the synchronize's return) twice per step.

    python3 d2h_item_host.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from savings_common import DEV, Trainer, adamw, class_data, main, tiny_net  # noqa: E402


class Pair(Trainer):
    def __init__(self, variant):
        model = tiny_net(12)
        xs, ys = class_data(8, 64, 256, 10)
        super().__init__(model, adamw(model.parameters(), "fused"), xs, ys)
        self.variant = variant
        self.acc_sum = torch.zeros((), device=DEV)
        self.logged = []

    def loss(self, i):
        x, y = self.xs[i % 8], self.ys[i % 8]
        logits = self.model(x)
        self.acc = (logits.detach().argmax(-1) == y).float().mean()
        return F.cross_entropy(logits, y)

    def step(self, i):
        loss = self.train(i)
        if self.variant == "bad":
            self.logged.append((loss.item(), float(self.acc.cpu())))  # two DtoH copies + waits
        else:
            self.loss_sum += loss.detach()
            self.acc_sum += self.acc

    def end(self):
        if self.variant == "bad":
            n = len(self.logged) or 1
            return {"mean_loss": sum(v for v, _ in self.logged) / n}
        return {"loss_sum": self.loss_sum.item(), "acc_sum": self.acc_sum.item()}


main(__doc__, lambda variant, a: Pair(variant))
