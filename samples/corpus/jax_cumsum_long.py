"""jax_cumsum_long.py - JAX: a long prefix sum inside a jitted step, under kernel names that never say scan.

`jnp.cumsum` over 16 series of 262144 points, forward and backward (the backward is a reversed cumsum), in a
jitted step with a tiny projection. XLA lowers the cumulative sum on GPU to its own fusions (an associative
scan of slices and adds, or a reduce-window): the kernel names carry neither "scan" nor "cumsum", yet the
prefix sums take most of the step on the CUDA cores. Labels: cuda-core-scan must be found.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import done, info, need_jax, parse_args  # noqa: E402

args = parse_args(__doc__)
jax = need_jax()
import jax.numpy as jnp  # noqa: E402
import time  # noqa: E402

S, N = 16, 262144
k1, k2 = jax.random.split(jax.random.PRNGKey(0))
series = jax.random.normal(k1, (S, N), jnp.float32)
w = jnp.ones((S, 1), jnp.float32)
pos = jnp.arange(1, N + 1, dtype=jnp.float32)


def loss_fn(w, x):
    run = jnp.cumsum(x * w, axis=-1) / pos
    return jnp.mean((run - x) ** 2)


@jax.jit
def step(w, x):
    loss, g = jax.value_and_grad(loss_fn)(w, x)
    return w - 1e-3 * g, loss


losses = []
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        jax.block_until_ready(w)
        t0 = time.perf_counter()
    w, loss = step(w, series)
    losses.append(loss)
jax.block_until_ready(w)
info(f"step_ms={(time.perf_counter() - t0) * 1e3 / args.steps:.3f} last={float(losses[-1]):.5f}")
done(args.steps)
