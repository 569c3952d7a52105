"""scan_model.py - the long-sequence model of the cuda-core-scan samples (bad.py and fixed.py share it).

A 2-layer "running statistics" token mixer on one sequence of 262144 steps with 64 features (a long-context
time-series model; the same prefix sums appear in linear-attention and state-space layers, e.g. the cumulative
log-decay of gated models). Each layer projects the features to 64 per-head gates and 64 per-head values and
computes, along the sequence, three prefix sums per head: of the log-gates (running mean log-decay), of the
values and of their squares (running mean and variance). These are [64, 262144] tensors summed along dim 1:
64 rows, each 262144 long. The statistics, projected back and gated, are added to the features; a linear head
predicts a target series (MSE).

`prefix_sum` is the only difference between bad.py (torch.cumsum) and fixed.py (a matrix product with a
triangular matrix on tensor cores). Shapes: rows R = 64, length T = 262144 = 1024 blocks of 256.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

T, D, H, LAYERS, BLOCK, NB = 262144, 64, 64, 2, 256, 2


class RunningStatsMixer(nn.Module):
    def __init__(self, prefix_sum):
        super().__init__()
        self.prefix_sum = prefix_sum
        self.ln = nn.LayerNorm(D)
        self.inp = nn.Linear(D, D + 2 * H)
        self.out = nn.Linear(3 * H, D)

    def forward(self, x, inv_t):  # x [1, T, D] float32, inv_t [T] = 1 / (1..T)
        z = self.inp(self.ln(x))  # bf16 under autocast
        u, g, v = z.split([D, H, H], dim=-1)
        g = F.logsigmoid(g.float()).transpose(1, 2).reshape(H, T)  # [64, T], contiguous
        v = v.float().transpose(1, 2).reshape(H, T)
        mean_g = self.prefix_sum(g) * inv_t
        mean_v = self.prefix_sum(v) * inv_t
        var_v = (self.prefix_sum(v * v) * inv_t - mean_v * mean_v).clamp_min(0)
        stats = torch.stack([mean_g, mean_v, var_v], dim=1).view(1, 3 * H, T).transpose(1, 2)  # [1, T, 3H]
        return x + self.out(stats) * torch.sigmoid(u)


class Model(nn.Module):
    def __init__(self, prefix_sum):
        super().__init__()
        self.layers = nn.ModuleList(RunningStatsMixer(prefix_sum) for _ in range(LAYERS))
        self.head = nn.Linear(D, 1)

    def forward(self, x, inv_t):
        for layer in self.layers:
            x = layer(x, inv_t)
        return self.head(x).squeeze(-1)


def build(dev, prefix_sum):
    torch.manual_seed(0)
    model = Model(prefix_sum).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, fused=True)
    g = torch.Generator(device=dev).manual_seed(1)
    xs = torch.randn(NB, 1, T, D, device=dev, generator=g)
    inv_t = 1.0 / torch.arange(1, T + 1, device=dev, dtype=torch.float32)
    # Target: a running mean of one input feature plus a slow sine; computed once, outside the steps.
    ts = torch.arange(T, device=dev, dtype=torch.float32)
    ys = torch.stack([torch.cumsum(xs[k, 0, :, 0], 0) * inv_t + 0.5 * torch.sin(ts / 4096) for k in range(NB)])
    return model, opt, xs, ys.unsqueeze(1), inv_t


def step(model, opt, x, y, inv_t):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.mse_loss(model(x, inv_t).float(), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.detach()
