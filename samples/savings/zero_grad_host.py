"""zero_grad_host.py - `p.grad.zero_()` for every parameter each step of a host-bound loop (zero-grad-memset).

Model: tiny_net(16) (LayerNorm/Linear(256)/GELU blocks, batch 64, fp32, fused AdamW): 70 parameter tensors,
a host-bound step of about 200 short kernels.

bad:   `for p in model.parameters(): p.grad.zero_()` before each backward pass. CUDA level: one fill kernel
       (or memset) per parameter tensor, 70 launches of microseconds each; then the backward pass adds every
       new gradient into the zeroed one (one more add kernel per parameter instead of writing it).
fixed: `opt.zero_grad(set_to_none=True)`: the gradients are released and the backward pass writes fresh ones
       from the caching allocator: no fill and no accumulate kernels.

Expected saving: moderate (about 140 launches fewer per step in a loop that the launches limit).

    python3 zero_grad_host.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from savings_common import Trainer, adamw, class_data, main, tiny_net  # noqa: E402


def make(variant, a):
    model = tiny_net(16)
    xs, ys = class_data(8, 64, 256, 10)
    return Trainer(model, adamw(model.parameters(), "fused"), xs, ys,
                   zero="loop" if variant == "bad" else "none")


main(__doc__, make)
