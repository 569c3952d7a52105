"""savings_common.py - what the Python pairs of samples/savings share: arguments, timing, the A/B rounds, models.

Every pair is one program with a mode argument:

    python3 PAIR.py bad|fixed|ab [--steps N] [--rounds R] [--warmup W]

A pair module defines `make(variant, args)`, which builds everything one variant needs and returns an object
with `step(i)` (one training step; `i` counts the steps of a block from 0, warm-up included) and, optionally,
`begin()` (called before the warm-up of every block: global switches such as TF32 are set there, so that the
two variants of an `ab` run never see each other's) and `end()` (called after the block's last synchronize:
reads that the fixed loop does once after its steps; returns numbers for the final line).

- `bad` / `fixed`: W warm-up steps (default 4), one synchronize, N steady steps (default 30), one synchronize.
  Final line `done variant=bad step_ms=X steps=N ...`, X = the block's wall time / N (there is one block; no
  synchronize inside a step, so the timing adds no wait of its own).
- `ab`: both variants are built in one process, then R rounds (default 5) of one block of each, as above
  (warm-up, synchronize, N steps, synchronize); bad runs first in odd rounds and fixed first in even rounds
  (A B B A ...), so that a slow drift of the machine does not favour one. One line per round
  `round=K bad_ms=X fixed_ms=Y`, then `done ab saving=S bad_ms=.. fixed_ms=.. spread=.. rounds=R steps=N`:
  S is the median over the rounds of (bad - fixed) / bad, bad_ms and fixed_ms the medians, spread the
  largest minus the smallest per-round saving.

SAVINGS_DEVICE=cpu runs a program on the CPU with small shapes (`size(gpu, cpu)`): a check of the Python
code on a machine without a GPU, not a measurement; CUDA-only features (streams, events, graphs, pinned
memory) are not available there.
"""
import argparse
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

DEV = torch.device(os.environ.get("SAVINGS_DEVICE", "cuda"))
CUDA = DEV.type == "cuda"


def size(gpu, cpu):
    """The shape constant for the GPU, or the small one for a CPU check (SAVINGS_DEVICE=cpu)."""
    return gpu if CUDA else cpu


def sync():
    if CUDA:
        torch.cuda.synchronize()


def pinned(t):
    """t in page-locked host memory (the CPU check has none: t itself)."""
    return t.pin_memory() if CUDA else t


def autocast():
    return torch.autocast(DEV.type, dtype=torch.bfloat16)


def adamw(params, kind, lr=1e-3, **kw):
    """AdamW as one kernel per few parameters ('single': foreach=False), multi-tensor ('foreach') or 'fused'."""
    if kind == "fused" and CUDA:
        return torch.optim.AdamW(params, lr=lr, weight_decay=0.01, fused=True, **kw)
    return torch.optim.AdamW(params, lr=lr, weight_decay=0.01, foreach=(kind != "single"), **kw)


def parse(doc, steps=30, rounds=5, warmup=4, extra=None):
    p = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    p.add_argument("mode", choices=["bad", "fixed", "ab"])
    p.add_argument("--steps", type=int, default=steps, help="steady steps per block (default %(default)s)")
    p.add_argument("--rounds", type=int, default=rounds, help="ab rounds (default %(default)s)")
    p.add_argument("--warmup", type=int, default=warmup, help="warm-up steps before each block (default %(default)s)")
    if extra:
        extra(p)
    a = p.parse_args()
    if CUDA and not torch.cuda.is_available():
        raise SystemExit("this program needs a CUDA GPU")
    torch.manual_seed(0)
    return a


def fmt(v):
    if isinstance(v, float):
        return f"{v:.4f}" if v == 0 or 1e-3 <= abs(v) < 1e6 else f"{v:.4e}"
    return str(v)


def block(v, warmup, steps):
    """Run one block of a variant: warm-up, synchronize, `steps` steps, synchronize. Returns (ms per step, extra)."""
    if hasattr(v, "begin"):
        v.begin()
    for i in range(warmup):
        v.step(i)
    sync()
    t0 = time.perf_counter()
    for i in range(warmup, warmup + steps):
        v.step(i)
    sync()
    ms = (time.perf_counter() - t0) * 1e3 / max(1, steps)
    extra = v.end() if hasattr(v, "end") else None
    return ms, (extra or {})


def ab_rounds(run_block, rounds):
    """run_block(variant) -> ms per step; prints the round lines and the final ab line."""
    rows = []
    for r in range(1, rounds + 1):
        order = ("bad", "fixed") if r % 2 == 1 else ("fixed", "bad")
        ms = {}
        for name in order:
            ms[name] = run_block(name)
        rows.append((ms["bad"], ms["fixed"]))
        print(f"round={r} bad_ms={ms['bad']:.4f} fixed_ms={ms['fixed']:.4f}", flush=True)
    sav = [(b - f) / b for b, f in rows]
    med = statistics.median
    return (f"done ab saving={med(sav):.4f} bad_ms={med([b for b, _ in rows]):.4f} "
            f"fixed_ms={med([f for _, f in rows]):.4f} spread={max(sav) - min(sav):.4f} rounds={rounds}")


def main(doc, make, steps=30, rounds=5, warmup=4, extra=None):
    """Parse the arguments and run the mode; `make(variant, args)` builds a variant."""
    a = parse(doc, steps=steps, rounds=rounds, warmup=warmup, extra=extra)
    if a.mode == "ab":
        vs = {name: make(name, a) for name in ("bad", "fixed")}
        line = ab_rounds(lambda name: block(vs[name], a.warmup, a.steps)[0], a.rounds)
        print(f"{line} steps={a.steps}", flush=True)
    else:
        v = make(a.mode, a)
        ms, extra_numbers = block(v, a.warmup, a.steps)
        words = [f"variant={a.mode}", f"step_ms={ms:.4f}", f"steps={a.steps}", f"warmup={a.warmup}"]
        words += [f"{k}={fmt(x)}" for k, x in extra_numbers.items()]
        print("done " + " ".join(words), flush=True)


class HostText:
    """Host-side work of a training thread: tokenize the next batch's text (Python dictionary lookups, then a
    CPU tensor). About a few milliseconds for 24,000 words; no CUDA call."""

    def __init__(self, words=24000, seed=3):
        import random
        rnd = random.Random(seed)
        self.vocab = {f"w{i}": i for i in range(5000)}
        self.texts = [" ".join(f"w{rnd.randrange(6000)}" for _ in range(words)) for _ in range(4)]

    def __call__(self, i):
        ids = [self.vocab.get(w, 0) for w in self.texts[i % len(self.texts)].split()]
        return torch.tensor(ids)


# ---- models ------------------------------------------------------------------------------------------------

class TinyBlock(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.ln = nn.LayerNorm(width)
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return x + F.gelu(self.fc(self.ln(x)))


def tiny_net(depth, width=256, d_in=256, classes=10):
    """Deep and narrow (batch 64 in the pairs): every kernel runs a few microseconds, less than its launch."""
    return nn.Sequential(nn.Linear(d_in, width), *[TinyBlock(width) for _ in range(depth)],
                         nn.LayerNorm(width), nn.Linear(width, classes)).to(DEV)


def wide_mlp(depth, width, d_in=None, classes=1024):
    """Wide MLP (GELU between layers): matrix products of milliseconds under bf16 autocast."""
    d_in = d_in or width
    layers = [nn.Linear(d_in, width), nn.GELU()]
    for _ in range(depth - 2):
        layers += [nn.Linear(width, width), nn.GELU()]
    layers.append(nn.Linear(width, classes))
    return nn.Sequential(*layers).to(DEV)


def class_data(nb, batch, d_in, classes, seed=1):
    """nb batches of inputs on the device and labels that depend on them (a learnable task)."""
    g = torch.Generator(device=DEV).manual_seed(seed)
    xs = torch.randn(nb, batch, d_in, device=DEV, generator=g)
    ys = (xs[..., :32] @ torch.randn(32, classes, device=DEV, generator=g)).argmax(-1)
    return xs, ys


GPU_WIDTH, GPU_BATCH = size(4096, 64), size(8192, 128)


def gpu_parts(opt_kind="fused", nb=4):
    """The GPU-bound setup of several pairs: wide_mlp(4, 4096) trained on batches of 8192 under bf16 autocast
    (about 2.7 TFLOP of matrix products, some milliseconds per step, for about 60 kernel launches)."""
    model = wide_mlp(4, GPU_WIDTH)
    xs, ys = class_data(nb, GPU_BATCH, GPU_WIDTH, 1024)
    return model, adamw(model.parameters(), opt_kind), xs, ys


class Trainer:
    """A plain training step on batches already on the device: forward, loss, backward, optimizer step.

    `bf16` wraps the forward in bf16 autocast; `zero` is how gradients are cleared ('none': set_to_none,
    'loop': p.grad.zero_() per parameter). Subclasses override step() and add the pattern.
    """

    def __init__(self, model, opt, xs, ys, bf16=False, zero="none"):
        self.model, self.opt, self.xs, self.ys = model, opt, xs, ys
        self.bf16, self.zero = bf16, zero
        self.params = [p for p in model.parameters()]
        self.loss_sum = torch.zeros((), device=DEV)

    def loss(self, i):
        x, y = self.xs[i % len(self.xs)], self.ys[i % len(self.ys)]
        if self.bf16:
            with autocast():
                return F.cross_entropy(self.model(x), y)
        return F.cross_entropy(self.model(x), y)

    def zero_grad(self):
        if self.zero == "loop":
            for p in self.params:
                if p.grad is not None:
                    p.grad.zero_()
        else:
            self.opt.zero_grad(set_to_none=True)

    def train(self, i):
        """One step; returns the loss tensor (on the device)."""
        self.zero_grad()
        loss = self.loss(i)
        loss.backward()
        self.opt.step()
        return loss

    def step(self, i):
        self.loss_sum += self.train(i).detach()

    def end(self):
        return {"loss_sum": self.loss_sum.item()}
