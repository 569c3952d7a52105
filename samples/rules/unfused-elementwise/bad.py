"""unfused-elementwise/bad.py - a hand-written tanh GELU: eight element-wise kernels where one would do.

The residual MLP of gelu_mlp.py (4 blocks, hidden activations [8192, 4096], bf16 autocast, fused AdamW) with
the activation written out as GPT-2 and early BERT code did ("gelu_new"):
`0.5 * h * (1 + tanh(sqrt(2/pi) * (h + 0.044715 * h**3)))`. Eager PyTorch runs every operator as its own
kernel: pow, mul, add, mul, tanh, add, mul, mul in the forward pass (each reading and writing the whole
[8192, 4096] tensor, `pow` promoting to float32 under autocast), and autograd runs a dozen more in the backward
pass, one per derivative term. Each kernel is short (tens of microseconds) and memory-bound; together they move
several GiB per step that one fused kernel would read and write once (guide 000 #11, 001 6.2.2 / 9.3).

Seen at the CUDA level, per steady step: per block, runs of 8+ `vectorized_elementwise_kernel` /
`elementwise_kernel` launches back to back on one stream, all with the same grid (the hidden tensor's size),
between the fc1 and fc2 GEMMs, and longer runs in the backward pass; together a large share of the step's GPU
time. An analyzer should report unfused-elementwise in every steady step; fixed.py uses the fused built-in.

    python3 bad.py [--steps 40] [--warmup 5]
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from gelu_mlp import run  # noqa: E402
from rules_common import DEV, done, parse_args  # noqa: E402

a = parse_args(__doc__)
C = math.sqrt(2.0 / math.pi)


def gelu_by_hand(h):
    return 0.5 * h * (1.0 + torch.tanh(C * (h + 0.044715 * torch.pow(h, 3))))


mean_loss, step_ms = run(a, gelu_by_hand, DEV)
done(a.steps, mean_loss=mean_loss, step_ms=step_ms)
