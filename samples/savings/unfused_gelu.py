"""unfused_gelu.py - a GELU written as a chain of element-wise ops vs the fused F.gelu (unfused-elementwise).

Model: wide_mlp(4, 4096)'s layers (batch 8192, bf16 autocast, fused AdamW) with the activation written out:
gelu(x) = 0.5 * x * (1 + tanh(0.79788456 * (x + 0.044715 * x^3))), applied to three [8192, 4096] activations.

bad:   the formula in PyTorch ops. CUDA level: per activation about 7 element-wise kernels in the forward pass
       (pow, mul, add, mul, tanh, add, mul...) and twice as many in the backward pass, each reading and writing
       the whole 64 MiB tensor, back to back on the stream; autograd also keeps their intermediates.
fixed: `F.gelu(x, approximate="tanh")`: the same function in one kernel forward and one backward.

Expected saving: moderate to large (tens of memory-bound passes over 64 MiB per step removed).

    python3 unfused_gelu.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from savings_common import DEV, GPU_BATCH, GPU_WIDTH, Trainer, adamw, class_data, main  # noqa: E402

C = math.sqrt(2.0 / math.pi)


def gelu_unfused(x):
    return 0.5 * x * (1.0 + torch.tanh(C * (x + 0.044715 * torch.pow(x, 3))))


def gelu_fused(x):
    return F.gelu(x, approximate="tanh")


class MLP(nn.Module):
    def __init__(self, act):
        super().__init__()
        self.act = act
        self.layers = nn.ModuleList([nn.Linear(GPU_WIDTH, GPU_WIDTH) for _ in range(3)])
        self.head = nn.Linear(GPU_WIDTH, 1024)

    def forward(self, x):
        for lin in self.layers:
            x = self.act(lin(x))
        return self.head(x)


def make(variant, a):
    model = MLP(gelu_unfused if variant == "bad" else gelu_fused).to(DEV)
    xs, ys = class_data(4, GPU_BATCH, GPU_WIDTH, 1024)
    return Trainer(model, adamw(model.parameters(), "fused"), xs, ys, bf16=True)


main(__doc__, make)
