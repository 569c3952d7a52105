"""corpus_common.py - what the Python programs of the accuracy corpus share.

Conventions (samples/corpus/README.md, docs/accuracy.md):
- `--steps N` steady steps (default 40) after `--warmup W` warm-up steps (default 5); seeds fixed.
- No NVTX: the analyzers must find the steps from the kernel sequence.
- The last stdout line is `done steps=N key=value ...`; lines that vary from run to run start with "info:".
- Exit status 77 when the program cannot run here (torch or jax missing, no GPU): the corpus counts it as
  skipped, not as a result.
This module imports neither torch nor jax at load time, so that a missing framework is a clean skip.
"""
import argparse
import sys
import time

SKIP = 77


def info(msg):
    print(f"info: {msg}", flush=True)


def skip(reason):
    info(f"skipped: {reason}")
    sys.exit(SKIP)


def parse_args(doc, steps=40, warmup=5, extra=None):
    p = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    p.add_argument("--steps", type=int, default=steps, help="steady steps (default %(default)s)")
    p.add_argument("--warmup", type=int, default=warmup, help="warm-up steps (default %(default)s)")
    if extra:
        extra(p)
    return p.parse_args()


def need_torch():
    """Import torch, check it sees a GPU, seed it; skip (exit 77) otherwise."""
    try:
        import torch
    except ImportError:
        skip("torch is not installed")
    if not torch.cuda.is_available():
        skip("torch sees no CUDA device")
    torch.manual_seed(0)
    return torch


def need_jax():
    """Import jax with a GPU backend (no preallocation of 75% of the GPU); skip otherwise."""
    import os

    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        import jax
    except ImportError:
        skip("jax is not installed")
    try:
        gpus = [d for d in jax.devices() if d.platform == "gpu"]
    except RuntimeError:
        gpus = []
    if not gpus:
        skip("JAX has no GPU backend")
    return jax


def mlp(torch, width, depth, out=None):
    """A plain GELU MLP of `depth` Linear layers of `width` (last one to `out`), on the GPU."""
    nn = torch.nn
    layers = []
    for i in range(depth):
        last = i == depth - 1
        layers.append(nn.Linear(width, out if (last and out) else width))
        if not last:
            layers.append(nn.GELU())
    return nn.Sequential(*layers).cuda()


def spin(seconds):
    """Busy host work of a fixed duration (stands for host-side processing: logging, metrics, parsing)."""
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1
    return x


class Timer:
    def __init__(self, torch):
        self.torch = torch

    def start(self):
        self.torch.cuda.synchronize()
        self.t0 = time.perf_counter()

    def stop(self, steps):
        self.torch.cuda.synchronize()
        return (time.perf_counter() - self.t0) * 1e3 / max(1, steps)


def timed_loop(torch, step, args, after=None, **numbers):
    """Call step(i) for i in 0..warmup+steps-1, the last `steps` calls timed; print their mean step time
    (an info line), call after() when given (more info lines), and print the done line with `numbers`."""
    for i in range(args.warmup):
        step(i)
    t = Timer(torch)
    t.start()
    for i in range(args.warmup, args.warmup + args.steps):
        step(i)
    info(f"step_ms={t.stop(args.steps):.3f}")
    if after:
        after()
    done(args.steps, **numbers)


def done(steps, **numbers):
    """The last line. Floats are printed with 3 decimals; step_ms and other timings belong in info lines."""
    parts = [f"steps={steps}"]
    for k, v in numbers.items():
        parts.append(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}")
    print("done " + " ".join(parts), flush=True)


class Trainer:
    """A GPU-bound regression MLP step (bf16 autocast, fused AdamW): about 4-6 ms of GEMMs per step on an H200
    at the defaults, with a few dozen launches queued far ahead of the GPU. `step()` returns the loss as a GPU
    tensor and reads nothing back."""

    def __init__(self, torch, width=4096, depth=4, batch=8192, nbatches=4):
        self.torch = torch
        self.model = mlp(torch, width, depth)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4, fused=True)
        g = torch.Generator(device="cuda").manual_seed(1)
        self.xs = torch.randn(nbatches, batch, width, device="cuda", generator=g)
        self.ys = torch.randn(nbatches, batch, width, device="cuda", generator=g) * 0.1
        self.i = 0

    def step(self, x=None, y=None):
        torch = self.torch
        if x is None:
            x, y = self.xs[self.i % len(self.xs)], self.ys[self.i % len(self.ys)]
        self.i += 1
        self.opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = self.model(x)
        loss = torch.nn.functional.mse_loss(out.float(), y)
        loss.backward()
        self.opt.step()
        return loss.detach()


def launch_ranks(script, world, argv):
    """torchrun-style launcher on one GPU: run `script` `world` times with RANK, LOCAL_RANK, WORLD_SIZE set
    (all on device 0), print each rank's output in rank order, and exit with 77 when a rank skipped, 1 when
    one failed, else 0. The launcher itself never touches the GPU."""
    import importlib.util
    import os
    import subprocess

    if importlib.util.find_spec("torch") is None:
        skip("torch is not installed")
    procs = []
    for r in range(world):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(world))
        procs.append(subprocess.Popen([sys.executable, script] + argv, env=env, stdout=subprocess.PIPE,
                                      text=True))
    outs = [p.communicate()[0] for p in procs]
    codes = [p.returncode for p in procs]
    for r, out in enumerate(outs):
        for line in out.splitlines():
            print(line if line.startswith("info:") else f"rank{r}: {line}", flush=True)
    if any(c == SKIP for c in codes):
        sys.exit(SKIP)
    if any(c != 0 for c in codes):
        print(f"ranks exited with {codes}", flush=True)
        sys.exit(1)
    print(f"done ranks={world}", flush=True)
    sys.exit(0)
