"""index-select-embedding/skewed.py - a recommender table read with index_select, a few ids very hot.

A recommender-style model: one table of 2^20 x 128 float32 parameters (512 MiB), each sample 8 categorical
fields whose ids are looked up in it with `weight.index_select(0, ids)` on the parameter (a hand-written
embedding layer), the 8 vectors concatenated and fed to an MLP 1024-512-256-1 (bf16 autocast) with a binary
cross-entropy loss, plain SGD. Each step looks up 2^21 ids (262144 samples). The ids follow a Zipf-like law,
seeded: the row of rank k is drawn with probability proportional to 1 / k^s (s = --skew, 1.2 by default, the
ranks scattered over the table by a fixed permutation, as hashing does), so a few rows receive most lookups:
the hottest row takes 18.9% of them (the final line's `hot_share`), 133,936 distinct rows a batch.

Written to be the costly case of the pattern, it is not one: index_select's backward (a zero gradient of the
table, then `index_add_` of every looked-up row with atomic adds, hundreds of thousands on the hot rows) is
faster here than nn.Embedding's sorted backward. Measured on the H200 (2026-12-02, 40 steps each): 8.25 ms a
step with index_select, 11.40 ms with F.embedding (skewed_embedding.py, the same model and data): the
sort of 2^21 ids costs more than the contended adds. A correct analyzer reports the pattern (the atomic
backward is a third of the step) as information with no cost claimed and no promise that nn.Embedding is
faster: index-select-embedding at severity info. (Recorded as negative_skewed.py, the trace's command.)

Seen at the CUDA level, per steady step: `vectorized_gather_kernel` first (the lookup), the MLP's GEMMs, then
in the backward a `FillFunctor` kernel (the zero gradient, 512 MiB) followed by
`indexFuncLargeIndex<..., ReduceAdd>` over the 2^21 gradient rows; no EmbeddingBackwardKernel kernel.

    python3 skewed.py [--steps 40] [--warmup 5] [--ids N] [--rows N] [--dim N] [--fields N] [--skew S]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, StepTimer, done, parse_args  # noqa: E402

NB = 4  # batches of ids, cycled


def arguments(p):
    p.add_argument("--ids", type=int, default=1 << 21, help="ids looked up per step, a multiple of --fields "
                   "(default %(default)s)")
    p.add_argument("--rows", type=int, default=1 << 20, help="rows of the table (default %(default)s)")
    p.add_argument("--dim", type=int, default=128, help="floats per row (default %(default)s)")
    p.add_argument("--fields", type=int, default=8, help="ids per sample (default %(default)s)")
    p.add_argument("--skew", type=float, default=1.2, help="Zipf exponent s: the row of rank k is drawn with "
                   "probability proportional to 1/k^s; 0 is uniform (default %(default)s)")


class Recommender(nn.Module):
    """A table looked up by `fields` ids per sample, the vectors concatenated, an MLP to one logit."""

    def __init__(self, rows, dim, fields, lookup):
        super().__init__()
        self.lookup = lookup
        self.weight = nn.Parameter(torch.randn(rows, dim) * 0.01)
        self.mlp = nn.Sequential(nn.Linear(fields * dim, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                                 nn.Linear(256, 1))

    def forward(self, ids):
        flat = ids.reshape(-1)
        if self.lookup == "index_select":
            vec = self.weight.index_select(0, flat)  # the anti-pattern: atomic index_add_ in the backward
        else:
            vec = F.embedding(flat, self.weight)  # sorted embedding_dense_backward
        return self.mlp(vec.view(ids.shape[0], -1)).squeeze(1)


def skewed_ids(batches, n, rows, skew, seed=1):
    """[batches, n] int64 row ids (CPU): rank k drawn with probability ~ 1/k^skew, ranks permuted over rows."""
    g = torch.Generator().manual_seed(seed)
    cdf = torch.arange(1, rows + 1, dtype=torch.float64).pow(-skew).cumsum(0)
    cdf /= cdf[-1].item()
    perm = torch.randperm(rows, generator=g)
    u = torch.rand(batches, n, generator=g, dtype=torch.float64)
    return perm[torch.searchsorted(cdf, u).clamp_(max=rows - 1)]


def main(doc, lookup):
    """Train for --warmup + --steps steps with the given lookup and print the final line (both programs)."""
    a = parse_args(doc, extra=arguments)
    if min(a.ids, a.rows, a.dim, a.fields) < 1 or a.ids % a.fields or a.skew < 0:
        raise SystemExit("need positive --ids, --rows, --dim and --fields, --ids a multiple of --fields, "
                         "and --skew >= 0")
    batch = a.ids // a.fields
    ids = skewed_ids(NB, a.ids, a.rows, a.skew)
    counts = torch.bincount(ids[0], minlength=a.rows)
    hot_share = counts.max().item() / a.ids
    distinct = int((counts > 0).sum())
    ids = ids.view(NB, batch, a.fields)
    labels = (ids[:, :, 0] % 3 == 0).float()  # learnable from the first field's row
    ids, labels = ids.to(DEV), labels.to(DEV)

    model = Recommender(a.rows, a.dim, a.fields, lookup).to(DEV)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)

    loss_sum = torch.zeros((), device=DEV)
    timer = StepTimer()
    for i in range(a.warmup + a.steps):
        if i == a.warmup:
            timer.start()
            loss_sum.zero_()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(ids[i % NB])
        loss = F.binary_cross_entropy_with_logits(logits.float(), labels[i % NB])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        with torch.no_grad():
            loss_sum += loss.detach()
    step_ms = timer.stop(a.steps)
    done(a.steps, lookup=lookup, ids=a.ids, rows=a.rows, dim=a.dim, skew=a.skew, hot_share=hot_share,
         distinct_rows=distinct, mean_loss=loss_sum.item() / a.steps, step_ms=step_ms)


if __name__ == "__main__":
    main(__doc__, "index_select")
