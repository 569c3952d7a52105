"""cumsum_scan.py - prefix sums with torch.cumsum over a long dimension vs a triangular-matrix product (cuda-core-scan).

Model: a "running statistics" mixer on one sequence of 262144 steps: Linear(64 -> 192) projects the input
series, the 192 channels get their running mean along the sequence (prefix sum / position), Linear(192 -> 64)
projects back onto a residual, a linear head predicts a target series (MSE). fp32 except the projections (bf16
autocast), fused AdamW. The prefix sums are [192, 262144] float32 tensors summed along dim 1, in the forward
pass and (reversed) in the backward pass.

bad:   `torch.cumsum(v, dim=1)`. CUDA level: scan kernels (tensor_kernel_scan_innermost_dim or CUB's
       DeviceScan) on the CUDA cores, 192 rows of 262144 elements each, forward and backward: most of the step.
fixed: the sequence viewed as 1024 blocks of 256, multiplied by the 256 x 256 upper-triangular matrix of ones in
       bf16 on the tensor cores (prefix sums inside each block: one GEMM), plus a short exclusive cumsum over the
       1024 block totals added to each block; the backward pass is a GEMM with the transposed matrix. Relative
       error about 1e-3 (bf16 inputs).

Expected saving: moderate to large (the scans are replaced by memory-speed GEMMs).

    python3 cumsum_scan.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from savings_common import DEV, Trainer, adamw, autocast, main, size  # noqa: E402

T, D, H, BLOCK, NB = size(262144, 4096), 64, 192, 256, 2
TRI = torch.triu(torch.ones(BLOCK, BLOCK, device=DEV)).to(torch.bfloat16)  # TRI[i, j] = 1 for i <= j


def scan_cumsum(v):
    return torch.cumsum(v, dim=1)


def scan_matmul(v):
    """Inclusive prefix sum along dim 1 of v [R, T] (T a multiple of BLOCK) with tensor-core GEMMs."""
    r, t = v.shape
    with torch.autocast(DEV.type, enabled=False):
        blk = torch.matmul(v.view(r, t // BLOCK, BLOCK).to(torch.bfloat16), TRI).float()  # sums inside blocks
        tot = blk[:, :, -1]  # block totals [R, T / BLOCK]
        offs = tot.cumsum(-1) - tot  # exclusive prefix over the 1024 blocks: a short scan
        return (blk + offs.unsqueeze(-1)).view(r, t)


class Mixer(nn.Module):
    def __init__(self, prefix_sum):
        super().__init__()
        self.prefix_sum = prefix_sum
        self.inp = nn.Linear(D, H)
        self.out = nn.Linear(H, D)
        self.head = nn.Linear(D, 1)
        self.register_buffer("inv_t", 1.0 / torch.arange(1, T + 1, dtype=torch.float32))

    def forward(self, x):  # x [T, D]
        v = self.inp(x).float().t().contiguous()  # [H, T]
        mean = self.prefix_sum(v) * self.inv_t  # running mean of each channel
        y = x + self.out(mean.t())
        return self.head(y).squeeze(-1)


class Pair(Trainer):
    def __init__(self, variant):
        model = Mixer(scan_cumsum if variant == "bad" else scan_matmul).to(DEV)
        g = torch.Generator(device=DEV).manual_seed(1)
        xs = torch.randn(NB, T, D, device=DEV, generator=g)
        ys = xs[..., :4].cumsum(1).sum(-1) / T  # a target that needs the running sums
        super().__init__(model, adamw(model.parameters(), "fused"), xs, ys)

    def loss(self, i):
        with autocast():
            pred = self.model(self.xs[i % NB])
        return F.mse_loss(pred.float(), self.ys[i % NB])


main(__doc__, lambda variant, a: Pair(variant))
