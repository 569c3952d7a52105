"""two_fixes.py - two patterns in one program, each fixed alone: the order of the two findings (d2h-sync, unfused-optimizer).

Model: the GPU-bound wide_mlp(4, 4096) of savings_common.gpu_parts (milliseconds of matrix products per step),
and on the host, every step, a few milliseconds of Python work that uses no CUDA call (savings_common.HostText).

bad:   both patterns: `loss.item()` after the optimizer step, then the host work (the host waits for the whole
       step, then works while the GPU idles: d2h-sync), and `AdamW(foreach=False)`, a dozen element-wise
       kernels per parameter tensor, one tensor at a time (unfused-optimizer).
fixed: one pattern fixed, the other kept (`--fix`):
       --fix sync: the loss summed on the device and read once after the steps (AdamW stays foreach=False);
       --fix optimizer: `AdamW(fused=True)` (loss.item() stays every step).

The pairs two_fixes_sync and two_fixes_optimizer measure the two against the same bad program: the report of
one recording of it must put its two findings in the order of the two measured savings.

Expected saving: large for --fix sync (the host work no longer adds to the GPU's), small for --fix optimizer
(the optimizer's extra passes over 67M parameters on a multi-millisecond step).

    python3 two_fixes.py bad|fixed|ab --fix sync|optimizer [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from savings_common import HostText, Trainer, gpu_parts, main  # noqa: E402


class Pair(Trainer):
    def __init__(self, variant, fix):
        self.sync = variant == "bad" or fix != "sync"  # loss.item() every step
        fused = variant == "fixed" and fix == "optimizer"
        super().__init__(*gpu_parts("fused" if fused else "single"), bf16=True)
        self.host = HostText()
        self.total, self.tokens = 0.0, 0

    def step(self, i):
        loss = self.train(i)
        if self.sync:
            self.total += loss.item()  # DtoH copy + stream synchronize: wait for the whole step
        else:
            self.loss_sum += loss.detach()
        self.tokens += len(self.host(i))  # host work of the next batch, no CUDA call

    def end(self):
        return {"loss_sum": self.total if self.sync else self.loss_sum.item(), "tokens": self.tokens}


def options(p):
    p.add_argument("--fix", choices=["sync", "optimizer"], required=True,
                   help="the pattern the fixed variant fixes (the bad variant has both)")


main(__doc__, lambda variant, a: Pair(variant, a.fix), extra=options)
