"""optim_foreach_host.py - AdamW(foreach=False) vs AdamW(fused=True) on a model of many small tensors (unfused-optimizer).

Model: tiny_net(6) (LayerNorm/Linear(256)/GELU residual blocks, batch 64, fp32): 30 parameter tensors of at
most 256 x 256; forward and backward are about 80 short kernels.

bad:   `AdamW(foreach=False)`: the optimizer step loops over the parameters in Python, about a dozen small
       element-wise kernels per tensor (moment updates, bias corrections, sqrt, division, weight decay), each
       launched by the host: ~350 launches of microsecond kernels, the GPU idle between them.
fixed: `AdamW(fused=True)`: one multi-tensor kernel (a few launches) updates all 30 tensors.

Expected saving: large (the optimizer's launches are most of the step).

    python3 optim_foreach_host.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from savings_common import Trainer, adamw, class_data, main, tiny_net  # noqa: E402


def make(variant, a):
    model = tiny_net(6)
    xs, ys = class_data(8, 64, 256, 10)
    return Trainer(model, adamw(model.parameters(), "single" if variant == "bad" else "fused"), xs, ys)


main(__doc__, make)
