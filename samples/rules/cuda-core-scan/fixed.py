"""cuda-core-scan/fixed.py - the same prefix sums as a matrix product with a triangular matrix, on tensor cores.

Same model, data and steps as bad.py (scan_model.py); only the prefix sum differs. As guide 000 #13 shows, the
[64, 262144] tensor is viewed as [64, 1024, 256] (1024 blocks of 256) and multiplied by the 256 x 256 upper
triangular matrix of ones (bf16, tensor cores): that gives the prefix sums inside each block in one GEMM of
[65536, 256] x [256, 256]. The block totals (the last column) then get a short exclusive prefix sum over the
1024 blocks (a cumsum of [64, 1024]: tiny), which is added to every block. The backward pass is a GEMM with the
transposed matrix. Far more arithmetic, far less time: the GEMM uses the whole GPU at memory speed.

Seen at the CUDA level, per steady step: bf16 GEMM kernels (nvjet_* / sm90 tensor-core kernels) where bad.py
had the long scans; the only scan kernels left are the short [64, 1024] cumsums of the block totals, a
negligible share of the step. An analyzer should not report cuda-core-scan.

The final line also prints `max_rel_err`: the largest error of this prefix sum against torch.cumsum on one
batch, relative to the largest prefix sum (bf16 inputs: about 1e-3), computed once after training.

    python3 fixed.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402

from rules_common import DEV, StepTimer, done, parse_args  # noqa: E402
from scan_model import BLOCK, H, NB, T, build, step  # noqa: E402

a = parse_args(__doc__)
TRI = torch.triu(torch.ones(BLOCK, BLOCK, device=DEV)).to(torch.bfloat16)  # TRI[i, j] = 1 for i <= j


def prefix_sum(s):
    """Inclusive prefix sum along dim 1 of s [R, T] (T a multiple of BLOCK) with tensor-core GEMMs."""
    r, t = s.shape
    with torch.autocast("cuda", enabled=False):
        blk = torch.matmul(s.view(r, t // BLOCK, BLOCK).to(torch.bfloat16), TRI).float()  # sums inside blocks
        tot = blk[:, :, -1]  # block totals [R, T / BLOCK]
        offs = tot.cumsum(-1) - tot  # exclusive prefix over the blocks: a short scan
        return (blk + offs.unsqueeze(-1)).view(r, t)


model, opt, xs, ys, inv_t = build(DEV, prefix_sum)
loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
    loss_sum += step(model, opt, xs[i % NB], ys[i % NB], inv_t)
step_ms = timer.stop(a.steps)

with torch.no_grad():
    s = xs[0, 0, :, :H].t().contiguous()  # a [64, T] sample of the data
    ref = torch.cumsum(s, dim=1)
    err = ((prefix_sum(s) - ref).abs().max() / ref.abs().max()).item()
done(a.steps, mean_loss=loss_sum.item() / a.steps, max_rel_err=err, step_ms=step_ms)
