"""index-select-embedding/bad.py - a GPT whose token embedding is a lookup with index_select.

The d768 GPT of clean.py (vocabulary 32768, 4 layers, batches of 32 x 256 tokens, bf16 autocast, fused AdamW)
with its token embedding written as `weight.index_select(0, ids)` on a parameter, as Megatron-LM once did,
instead of nn.Embedding. The batches are padded: each sequence's last third is the pad id 0, so a third of
the 8192 looked-up rows are the same row. The forward is the kernel nn.Embedding would run (PyTorch's
embedding calls index_select); the backward is index_select's: a zero gradient of the whole table (96 MiB),
then `index_add_` of the 8192 gradient rows with atomic adds, the pad row's 2730 of them contending on one
address each.

Seen at the CUDA level, per steady step: `vectorized_gather_kernel` first, and at the end of the backward a
`FillFunctor` kernel followed by `indexFuncLargeIndex<..., ReduceAdd>`; no EmbeddingBackwardKernel kernel. An
analyzer reports index-select-embedding in every steady step where the atomic kernel's time is a cost.

The index_select backward's atomic adds of float32 rows measured 46.6 us a step on the H200, less than
nn.Embedding's sorted backward (fixed.py): at this size the pattern costs nothing and no finding is the right
answer. With --table-dtype bfloat16 (a table kept in bf16, as in pure-bf16 training) the adds are bf16 atomics.

    python3 bad.py [--steps 40] [--warmup 5] [--table-dtype float32|bfloat16]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, GPT, StepTimer, done, parse_args, token_batches  # noqa: E402

a = parse_args(__doc__, extra=lambda p: p.add_argument(
    "--table-dtype", choices=("float32", "bfloat16"), default="float32",
    help="dtype of the embedding table (bfloat16: its gradient rows are added with bf16 atomics)"))
VOCAB, D, LAYERS, HEADS, SEQ, BATCH, NB = 32768, 768, 4, 12, 256, 32, 8


class IndexSelectEmbedding(nn.Module):
    """A lookup table read with index_select (the anti-pattern)."""

    def __init__(self, num, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num, dim) * 0.02)

    def forward(self, ids):
        return self.weight.index_select(0, ids.reshape(-1)).view(*ids.shape, -1)


model = GPT(VOCAB, D, LAYERS, HEADS, SEQ)
model.tok = IndexSelectEmbedding(VOCAB, D)
model = model.to(DEV)
model.tok.to(getattr(torch, a.table_dtype))
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01, fused=True)
data = token_batches(NB, BATCH, SEQ, VOCAB)
data[:, :, 2 * SEQ // 3:] = 0  # padding: the last third of each sequence is the pad id
data = data.to(DEV)

loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
    batch = data[i % NB]
    x, y = batch[:, :-1], batch[:, 1:]
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB).float(), y.reshape(-1), ignore_index=0)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    with torch.no_grad():
        loss_sum += loss.detach()
step_ms = timer.stop(a.steps)
done(a.steps, mean_loss=loss_sum.item() / a.steps, step_ms=step_ms)
