"""index-select-embedding/fixed.py - bad.py with nn.Embedding.

The same GPT, padded data and steps as bad.py, with the token embedding nn.Embedding (clean.py's model as
rules_common.GPT builds it): the backward is embedding_dense_backward, which sorts the ids and sums each row's
gradients once.

Seen at the CUDA level, per steady step: `vectorized_gather_kernel` first, EmbeddingBackwardKernel kernels in
the backward, no `indexFuncLargeIndex`. No index-select-embedding finding.

    python3 fixed.py [--steps 40] [--warmup 5] [--table-dtype float32|bfloat16]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, GPT, StepTimer, done, parse_args, token_batches  # noqa: E402

a = parse_args(__doc__, extra=lambda p: p.add_argument(
    "--table-dtype", choices=("float32", "bfloat16"), default="float32",
    help="dtype of the embedding table (bfloat16: its gradient rows are added with bf16 atomics)"))
VOCAB, D, LAYERS, HEADS, SEQ, BATCH, NB = 32768, 768, 4, 12, 256, 32, 8


model = GPT(VOCAB, D, LAYERS, HEADS, SEQ)
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
