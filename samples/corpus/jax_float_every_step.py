"""jax_float_every_step.py - JAX: float(loss) after every jitted step.

A jitted MLP training step (jax_mlp.py: 4 layers of 2048, batch 8192, about a millisecond of GPU work). JAX dispatches
asynchronously, but the loop calls `float(loss)` after each step to print a running average: a DtoH copy and
a wait for the step, after which the GPU idles until the next step is dispatched. Labels: d2h-sync must be
found.
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


running = 0.0
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        jax.block_until_ready(params)
        t0 = time.perf_counter()
    params, loss = step(params, x, y)
    running = 0.9 * running + 0.1 * float(loss)  # DtoH + wait, every step
jax.block_until_ready(params)
info(f"step_ms={(time.perf_counter() - t0) * 1e3 / args.steps:.3f} running={running:.5f}")
done(args.steps)
