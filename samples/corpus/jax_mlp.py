"""jax_mlp.py - the jitted MLP training step that jax_float_every_step.py and jax_read_after_loop.py share.

4 layers of 2048, batch 8192, bf16 matmuls with float32 parameters: about a millisecond of GPU work per step.
`mlp(jax)` returns (params, x, y, step) with `step(params, x, y) -> (params, loss)`.
"""


def mlp(jax):
    import jax.numpy as jnp

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

    return params, x, y, step
