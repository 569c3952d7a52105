"""no-tensor-cores/negative_odd_shapes.py - odd matrix sizes under bf16 autocast: still on the tensor cores.

The MLP of wide_mlp.py with widths that are not multiples of 8 (4001 -> 3003 -> 2999 -> 1000 classes) on
batches of 8191 rows, under bf16 autocast. The guides advise dimensions that are multiples of 8 because
misaligned operands force cuBLAS to narrower loads and less efficient kernels; on an H200 the bf16 GEMMs still
run on the tensor cores (kernels with bf16 tokens, MMA shapes, `align1`/`align2` variants), just with fewer
bytes per load.

Seen at the CUDA level, per steady step: about a dozen GEMM launches with tensor-core names (bf16 type
tokens, tensorop/gmma/nvjet) and a few milliseconds of GPU time. An analyzer should not report no-tensor-cores
(the kernels are tensor-core kernels; a rule that only read the shapes would be wrong here).

    python3 negative_odd_shapes.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from rules_common import DEV, done, parse_args  # noqa: E402
from wide_mlp import run  # noqa: E402

a = parse_args(__doc__)
mean_loss, step_ms = run(a, DEV, autocast_dtype=torch.bfloat16, widths=(4001, 3003, 2999), batch=8191,
                         classes=1000)
done(a.steps, mean_loss=mean_loss, step_ms=step_ms, precision="bf16")
