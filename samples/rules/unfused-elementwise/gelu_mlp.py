"""gelu_mlp.py - the model the unfused-elementwise samples share (not a program).

A residual MLP of LAYERS blocks, x + fc2(act(fc1(ln(x)))), 1024 wide with a 4096-wide hidden layer, trained
with bf16 autocast and fused AdamW on batches of 8192 rows; the activation `act` is what each program chooses.
The hidden activations are [8192, 4096] tensors (32 Mi elements, 64-128 MiB each), so each element-wise kernel
over them reads and writes hundreds of MiB: tens of microseconds of memory traffic per kernel on an H200.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

D, HIDDEN, LAYERS, BATCH, NB = 1024, 4096, 4, 8192, 2


class Block(nn.Module):
    def __init__(self, act):
        super().__init__()
        self.ln = nn.LayerNorm(D)
        self.fc1 = nn.Linear(D, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, D)
        self.act = act

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(self.ln(x))))


def build(dev, act):
    """Model, optimizer, NB input batches and regression targets (seeded, on the GPU)."""
    model = nn.Sequential(*[Block(act) for _ in range(LAYERS)]).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, fused=True)
    g = torch.Generator(device=dev).manual_seed(1)
    xs = torch.randn(NB, BATCH, D, device=dev, generator=g)
    ys = torch.tanh(xs @ (torch.randn(D, D, device=dev, generator=g) / D ** 0.5))
    return model, opt, xs, ys


def step(model, opt, x, y):
    """One training step; returns the detached loss (no host read)."""
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.mse_loss(model(x).float(), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.detach()


def run(a, act, dev, extra=None):
    """Warm-up, timed steady steps; returns (mean_loss, step_ms)."""
    from rules_common import StepTimer
    model, opt, xs, ys = build(dev, act)
    loss_sum = torch.zeros((), device=dev)
    timer = StepTimer()
    for i in range(a.warmup + a.steps):
        if i == a.warmup:
            timer.start()
            loss_sum.zero_()
        loss_sum += step(model, opt, xs[i % NB], ys[i % NB])
    step_ms = timer.stop(a.steps)
    return loss_sum.item() / a.steps, step_ms
