"""jax_prog.py - a few jitted JAX training steps (XLA launches through the driver API, and may use CUDA graphs).

Run with XLA_PYTHON_CLIENT_PREALLOCATE=false (set here too, before JAX starts), so that XLA does not take 75%
of the GPU at start. Exits 77 (skipped) when JAX has no GPU backend.

    python3 jax_prog.py [--steps 10]
"""
import argparse
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

from common import expect, info, skip  # noqa: E402

try:
    import jax
    import jax.numpy as jnp
except ImportError:
    skip("jax is not installed")

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=10)
a = p.parse_args()

try:
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
except RuntimeError as e:
    gpus = []
    info(f"jax.devices() failed: {e}")
if not gpus:
    skip("JAX has no GPU backend")
info(f"jax {jax.__version__} on {gpus[0].device_kind}")

key = jax.random.PRNGKey(0)
k1, k2, k3, k4 = jax.random.split(key, 4)
params = {"w1": jax.random.normal(k1, (128, 256)) * 0.05, "w2": jax.random.normal(k2, (256, 8)) * 0.05}
x = jax.random.normal(k3, (64, 128))
y = jax.random.normal(k4, (64, 8))


def loss_fn(params, x, y):
    h = jnp.tanh(x @ params["w1"])
    return jnp.mean((h @ params["w2"] - y) ** 2)


@jax.jit
def step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p_, g: p_ - 0.1 * g, params, grads), loss


loss = None
for i in range(a.steps):
    params, loss = step(params, x, y)
final = float(loss)  # the one device-to-host read
print(f"steps={a.steps} final_loss={final:.3f}")
expect(f"kernels>={a.steps}", "memcpy_dtoh>=1", "processes_cuda=1", "exit_code=0")
