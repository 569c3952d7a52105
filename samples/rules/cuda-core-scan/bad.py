"""cuda-core-scan/bad.py - prefix sums along a very long dimension with torch.cumsum, on CUDA cores.

The model of scan_model.py: per layer, three torch.cumsum(s, dim=1) over [64, 262144] float32 tensors (64 rows
of 262144), and three more in the backward pass (cumsum's gradient is a reversed cumsum: flip, cumsum, flip).
PyTorch runs each as one `tensor_kernel_scan_innermost_dim` launch: one thread block of 512 threads per row,
so 64 blocks on an H200's 132 SMs, each walking its row serially in 256 chunks of 1024 values with a
shared-memory tree scan and barriers per chunk. Each scan takes a few hundred microseconds for 1 MiB per row,
a few percent of the memory bandwidth, and the twelve scans per step take a large share of the step (guide
000 #13: "when the cumsum dimension is large the cost is abnormally high").

Seen at the CUDA level, per steady step: 12 launches of at::native::tensor_kernel_scan_innermost_dim<float,
std::plus<float>> (the name does not say cumsum), each far longer than the element-wise kernels around it,
together a large share of the step's GPU time (expected 30-60%); with backtraces, cumsum / cumsum_backward.
An analyzer should report cuda-core-scan in every steady step; fixed.py is the tensor-core version.

    python3 bad.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402

from rules_common import DEV, StepTimer, done, parse_args  # noqa: E402
from scan_model import NB, build, step  # noqa: E402

a = parse_args(__doc__)


def prefix_sum(s):
    return torch.cumsum(s, dim=1)


model, opt, xs, ys, inv_t = build(DEV, prefix_sum)
loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
    loss_sum += step(model, opt, xs[i % NB], ys[i % NB], inv_t)
step_ms = timer.stop(a.steps)
done(a.steps, mean_loss=loss_sum.item() / a.steps, step_ms=step_ms)
