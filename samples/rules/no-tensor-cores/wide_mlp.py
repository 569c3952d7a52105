"""wide_mlp.py - the model bad.py, fixed.py and negative_odd_shapes.py share (not a program).

An MLP of linear layers with ReLU between them, trained with fused AdamW on NB seeded batches held on the GPU
(a classification of 1000 classes made from a random projection of the input). `run` takes the widths, the
batch size and the autocast dtype (None: plain float32).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from rules_common import StepTimer

NB = 2


def build(dev, widths, batch, classes):
    layers = []
    for i in range(len(widths) - 1):
        layers += [nn.Linear(widths[i], widths[i + 1]), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(widths[-1], classes)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, fused=True)
    g = torch.Generator(device=dev).manual_seed(1)
    xs = torch.randn(NB, batch, widths[0], device=dev, generator=g)
    proj = torch.randn(widths[0], classes, device=dev, generator=g)
    ys = (xs @ proj).argmax(-1)
    return model, opt, xs, ys


def run(a, dev, autocast_dtype, widths=(4096, 4096, 4096, 4096), batch=8192, classes=1000):
    """Warm-up, timed steady steps; returns (mean_loss, step_ms)."""
    model, opt, xs, ys = build(dev, widths, batch, classes)
    loss_sum = torch.zeros((), device=dev)
    timer = StepTimer()
    for i in range(a.warmup + a.steps):
        if i == a.warmup:
            timer.start()
            loss_sum.zero_()
        with torch.autocast("cuda", dtype=autocast_dtype or torch.bfloat16, enabled=autocast_dtype is not None):
            loss = F.cross_entropy(model(xs[i % NB]), ys[i % NB])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss_sum += loss.detach()
    step_ms = timer.stop(a.steps)
    return loss_sum.item() / a.steps, step_ms
