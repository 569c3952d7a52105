"""rules_common.py - what the rule samples share: arguments, seeds, a GPT, synthetic data, timing, the last line.

Every sample under samples/rules/ imports this module (it puts samples/rules/ on sys.path first), so that each
program shows only its pattern. Conventions:

- `--steps N` is the number of steady-state steps; `--warmup W` (default 5) steps run first and are not counted.
- Seeds are fixed (torch.manual_seed(0), data from seeded generators); no deterministic-algorithms mode, because
  that mode changes which kernels some operations use (cumsum among them) and fills new memory. The printed
  numbers are therefore the same from run to run up to the last digit or two (atomics in some backward kernels).
- No NVTX anywhere: analyzers must find the steps from the kernel sequence.
- The programs synchronize once after the warm-up and once after the last step to time the steady steps, and
  print one final line: `done steps=N key=value ...` (step_ms varies from run to run; the rest should not).
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

DEV = torch.device("cuda")


def parse_args(doc, steps=40, warmup=5, extra=None):
    """Parse --steps/--warmup plus the arguments `extra(parser)` adds; seed torch; return the namespace."""
    p = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    p.add_argument("--steps", type=int, default=steps, help="steady-state steps (default %(default)s)")
    p.add_argument("--warmup", type=int, default=warmup, help="warm-up steps before them (default %(default)s)")
    if extra:
        extra(p)
    a = p.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("this sample needs a CUDA GPU")
    torch.manual_seed(0)
    return a


class Block(nn.Module):
    """Pre-norm transformer block: causal self-attention (SDPA) and a GELU MLP."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        qkv = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    """A small GPT language model: token and learned position embeddings, blocks, final norm, LM head."""

    def __init__(self, vocab, d, layers, heads, seq):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx, pos=None):
        if pos is None:
            x = self.tok(idx) + self.pos.weight[: idx.shape[1]]
        else:
            x = self.tok(idx) + self.pos(pos)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def token_batches(n, batch, seq, vocab, seed=1):
    """n batches of `batch` sequences of seq+1 tokens (CPU, int64) that a model can learn to predict.

    Each sequence follows next = (31 * prev + 7) mod vocab, with 10% of the tokens replaced at random.
    Slice [:, :-1] is the input and [:, 1:] the target.
    """
    g = torch.Generator().manual_seed(seed)
    out = torch.empty(n, batch, seq + 1, dtype=torch.long)
    out[:, :, 0] = torch.randint(vocab, (n, batch), generator=g)
    for j in range(1, seq + 1):
        out[:, :, j] = (out[:, :, j - 1] * 31 + 7) % vocab
    noise = torch.rand(n, batch, seq + 1, generator=g) < 0.1
    out[noise] = torch.randint(vocab, (int(noise.sum()),), generator=g)
    return out


class StepTimer:
    """Wall time of the steady steps: one synchronize before the first and one after the last."""

    def start(self):
        torch.cuda.synchronize()
        self.t0 = time.perf_counter()

    def stop(self, steps):
        torch.cuda.synchronize()
        return (time.perf_counter() - self.t0) * 1e3 / max(1, steps)


def fmt(v):
    if isinstance(v, float):
        if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
            return f"{v:.4e}"
        return f"{v:.4f}"
    return str(v)


def done(steps, **numbers):
    """Print the final line: done steps=N key=value ..."""
    print("done " + " ".join([f"steps={steps}"] + [f"{k}={fmt(v)}" for k, v in numbers.items()]), flush=True)
