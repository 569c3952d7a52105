"""tiny_model.py - the deep, narrow network of the launch-starvation samples (bad.py and fixed.py share it).

48 residual blocks (LayerNorm -> Linear 256x256 -> GELU, plus the skip) between an input and an output Linear,
on a batch of 64 samples: every kernel works on 64 x 256 values and runs for a few microseconds, less than the
host needs to launch it from Python (about 10 us per op, more with autograd and autocast), and one training
step is several hundred such kernels. AdamW is capturable (its step count lives on the GPU) so that fixed.py
can capture the whole step in a CUDA graph; bad.py uses the same optimizer so both do the same work.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

D_IN, WIDTH, DEPTH, CLASSES, BATCH, NB = 256, 256, 48, 10, 64, 8


class TinyBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(WIDTH)
        self.fc = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        return x + F.gelu(self.fc(self.ln(x)))


def build(dev):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(D_IN, WIDTH), *[TinyBlock() for _ in range(DEPTH)],
                          nn.LayerNorm(WIDTH), nn.Linear(WIDTH, CLASSES)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, capturable=True)
    g = torch.Generator(device=dev).manual_seed(1)
    xs = torch.randn(NB, BATCH, D_IN, device=dev, generator=g)
    ys = (xs @ torch.randn(D_IN, CLASSES, device=dev, generator=g)).argmax(-1)
    return model, opt, xs, ys


def loss_of(model, x, y):
    # cache_enabled=False: autocast's weight-cast cache must be off under CUDA graph capture; each weight is
    # used once per forward, so it changes nothing for the eager loop either.
    with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
        return F.cross_entropy(model(x), y)
