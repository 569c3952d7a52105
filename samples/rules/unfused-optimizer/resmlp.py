"""resmlp.py - the model and data that the unfused-optimizer and zero-grad-memset samples share.

A residual MLP classifier with 52 parameter tensors: an input projection (weight, bias), 12 blocks of
LayerNorm (weight, bias) + Linear (weight, bias) + GELU with a residual connection, and a classifier head
(weight, bias). About 13.5 M parameters in tensors from 512 values (biases) to 1 M (the blocks' weights); with
batch 4096 and bf16 autocast one forward and backward pass is a few milliseconds of GPU work on an H200.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

IN, WIDTH, CLASSES, BLOCKS = 256, 1024, 512, 12


class ResMLP(nn.Module):
    def __init__(self, blocks=BLOCKS):
        super().__init__()
        self.inp = nn.Linear(IN, WIDTH)
        self.norms = nn.ModuleList(nn.LayerNorm(WIDTH) for _ in range(blocks))
        self.fcs = nn.ModuleList(nn.Linear(WIDTH, WIDTH) for _ in range(blocks))
        self.head = nn.Linear(WIDTH, CLASSES)

    def forward(self, x):
        x = self.inp(x)
        for norm, fc in zip(self.norms, self.fcs):
            x = x + fc(F.gelu(norm(x)))
        return self.head(x)


def batches(dev, n=8, batch=4096, seed=1):
    """n batches (features float32 [batch, IN], labels int64 [batch]) on `dev`, labels a function of the features."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, batch, IN, generator=g)
    w = torch.randn(IN, CLASSES, generator=g)
    return x.to(dev), (x @ w).argmax(-1).to(dev)
