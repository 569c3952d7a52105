"""jax_float_loss.py - float(loss) every step of a jitted JAX training loop vs reading the losses after it (d2h-sync, JAX).

Model: a 4-layer MLP (1024 wide, GELU, batch 4096, float32 parameters, bf16 matrix products) with plain SGD
with momentum, the whole training step one `jax.jit` function; JAX dispatches it asynchronously, so without
a read the host queues the next steps while the GPU runs.

bad:   `float(loss)` after each step (for a log line). CUDA level: per step the jitted executable's kernels,
       then a device-to-host copy of the loss and a host wait for it: the GPU drains, and idles while Python
       and JAX dispatch the next step (tens to hundreds of microseconds: argument handling, the executable's
       launch).
fixed: the losses kept as device arrays and read once after the steps (`jax.device_get` of the list).

Expected saving: small to moderate (one dispatch latency per step of a step of about a millisecond).

    python3 jax_float_loss.py bad|fixed|ab [--steps 30] [--rounds 5]

Timing as in savings_common.py: `jax.block_until_ready` on the parameters at the ends of each block only.
"""
import argparse
import os
import statistics
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # take GPU memory as needed, not 75% up front
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

WIDTH, BATCH, LAYERS, NB = 1024, 4096, 4, 4


def init(key):
    params = []
    for k in jax.random.split(key, LAYERS):
        params.append((jax.random.normal(k, (WIDTH, WIDTH), jnp.float32) / WIDTH ** 0.5, jnp.zeros(WIDTH)))
    return params


def forward(params, x):
    for w, b in params[:-1]:
        x = jax.nn.gelu(jnp.dot(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16)).astype(jnp.float32) + b)
    w, b = params[-1]
    return jnp.dot(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16)).astype(jnp.float32) + b


def loss_fn(params, x, y):
    return jnp.mean((forward(params, x) - y) ** 2)


@jax.jit
def train_step(params, mom, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    mom = jax.tree_util.tree_map(lambda m, g: 0.9 * m + g, mom, grads)
    params = jax.tree_util.tree_map(lambda p, m: p - 1e-3 * m, params, mom)
    return params, mom, loss


class Variant:
    def __init__(self, name):
        self.name = name
        key = jax.random.PRNGKey(0)
        self.params = init(key)
        self.mom = jax.tree_util.tree_map(jnp.zeros_like, self.params)
        kx, ky = jax.random.split(jax.random.PRNGKey(1))
        xs = jax.random.normal(kx, (NB, BATCH, WIDTH), jnp.float32)
        ys = jnp.tanh(xs @ (jax.random.normal(ky, (WIDTH, WIDTH), jnp.float32) / WIDTH ** 0.5))
        self.xs, self.ys = list(xs), list(ys)  # one array per batch: no slicing dispatch inside the steps
        self.logged, self.pending = [], []

    def step(self, i):
        self.params, self.mom, loss = train_step(self.params, self.mom, self.xs[i % NB], self.ys[i % NB])
        if self.name == "bad":
            self.logged.append(float(loss))  # DtoH copy + wait every step
        else:
            self.pending.append(loss)

    def sync(self):
        jax.block_until_ready(self.params)

    def end(self):
        if self.pending:
            self.logged += [float(v) for v in jax.device_get(self.pending)]
            self.pending = []
        return sum(self.logged)


def block(v, warmup, steps):
    for i in range(warmup):
        v.step(i)
    v.sync()
    t0 = time.perf_counter()
    for i in range(warmup, warmup + steps):
        v.step(i)
    v.sync()
    ms = (time.perf_counter() - t0) * 1e3 / steps
    return ms, v.end()


def main():
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("mode", choices=["bad", "fixed", "ab"])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--warmup", type=int, default=4)
    a = p.parse_args()
    if a.mode != "ab":
        ms, total = block(Variant(a.mode), a.warmup, a.steps)
        print(f"done variant={a.mode} step_ms={ms:.4f} steps={a.steps} warmup={a.warmup} loss_sum={total:.4f}",
              flush=True)
        return
    vs = {n: Variant(n) for n in ("bad", "fixed")}
    rows = []
    for r in range(1, a.rounds + 1):
        ms = {}
        for n in (("bad", "fixed") if r % 2 == 1 else ("fixed", "bad")):
            ms[n] = block(vs[n], a.warmup, a.steps)[0]
        rows.append((ms["bad"], ms["fixed"]))
        print(f"round={r} bad_ms={ms['bad']:.4f} fixed_ms={ms['fixed']:.4f}", flush=True)
    sav = [(b - f) / b for b, f in rows]
    med = statistics.median
    print(f"done ab saving={med(sav):.4f} bad_ms={med([b for b, _ in rows]):.4f} "
          f"fixed_ms={med([f for _, f in rows]):.4f} spread={max(sav) - min(sav):.4f} rounds={a.rounds} "
          f"steps={a.steps}", flush=True)


main()
