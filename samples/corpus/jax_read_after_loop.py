"""jax_read_after_loop.py - negative: JAX keeps every loss on the device and reads them once after the loop.

The same jitted step as jax_float_every_step.py; the losses stay device arrays in a list and
`jax.device_get` reads them all after the last step. Dispatch runs ahead of the GPU the whole time. Labels:
nothing of the five.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import done, info, need_jax, parse_args  # noqa: E402

args = parse_args(__doc__)
jax = need_jax()
import jax.numpy as jnp  # noqa: E402
import time  # noqa: E402

W, B = 2048, 8192
keys = jax.random.split(jax.random.PRNGKey(0), 6)
params = [jax.random.normal(keys[i], (W, W), jnp.float32) * (1.0 / W ** 0.5) for i in range(4)]
x = jax.random.normal(keys[4], (B, W), jnp.bfloat16)
y = jax.random.normal(keys[5], (B, W), jnp.float32) * 0.1


def loss_fn(ps, x, y):
    h = x
    for w in ps:
        h = jax.nn.gelu(h @ w.astype(jnp.bfloat16))
    return jnp.mean((h.astype(jnp.float32) - y) ** 2)


@jax.jit
def step(ps, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(ps, x, y)
    return [p - 1e-3 * g for p, g in zip(ps, grads)], loss


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
