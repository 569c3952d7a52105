"""jax_read_after_loop.py - negative: JAX keeps every loss on the device and reads them once after the loop.

The same jitted step as jax_float_every_step.py (jax_mlp.py); the losses stay device arrays in a list and
`jax.device_get` reads them all after the last step. Dispatch runs ahead of the GPU the whole time. Labels:
nothing of the five.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import done, info, need_jax, parse_args  # noqa: E402

args = parse_args(__doc__)
jax = need_jax()
import time  # noqa: E402

from jax_mlp import mlp  # noqa: E402

params, x, y, step = mlp(jax)


losses = []
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        jax.block_until_ready(params)
        t0 = time.perf_counter()
    params, loss = step(params, x, y)
    losses.append(loss)
jax.block_until_ready(params)
ms = (time.perf_counter() - t0) * 1e3 / args.steps
values = jax.device_get(losses)  # the one read, after the loop
info(f"step_ms={ms:.3f} first={float(values[0]):.5f} last={float(values[-1]):.5f}")
done(args.steps, losses=len(values))
