"""index-select-embedding/negative_select_rows.py - index_select of activations, not of a table.

fixed.py's GPT (nn.Embedding) whose loss is computed on the non-pad positions only, picked with
`index_select` on the flattened logits (`logits.index_select(0, keep)`, keep: the positions whose target is
not the pad id, made once per batch). Its backward is index_select's too: a zero gradient of the logits and an
`index_add_` with atomics, but of activations in the middle of the step, not of a lookup table read first.

Seen at the CUDA level, per steady step: `vectorized_gather_kernel` first (nn.Embedding), EmbeddingBackwardKernel
kernels, and in the middle of the step a second gather and a `FillFunctor` + `indexFuncLargeIndex<...,
ReduceAdd>` pair. No index-select-embedding finding (the step runs nn.Embedding's backward; the atomic add
follows a gather that is not among the step's first kernels).

    python3 negative_select_rows.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, GPT, StepTimer, done, parse_args, token_batches  # noqa: E402

a = parse_args(__doc__)
VOCAB, D, LAYERS, HEADS, SEQ, BATCH, NB = 32768, 768, 4, 12, 256, 32, 8


model = GPT(VOCAB, D, LAYERS, HEADS, SEQ)
model = model.to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01, fused=True)
data = token_batches(NB, BATCH, SEQ, VOCAB)
data[:, :, 2 * SEQ // 3:] = 0  # padding: the last third of each sequence is the pad id
data = data.to(DEV)
keeps = [(data[k][:, 1:].reshape(-1) != 0).nonzero().squeeze(1) for k in range(NB)]

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
        keep = keeps[i % NB]
        picked = logits.reshape(-1, VOCAB).index_select(0, keep)
        loss = F.cross_entropy(picked.float(), y.reshape(-1).index_select(0, keep))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    with torch.no_grad():
        loss_sum += loss.detach()
step_ms = timer.stop(a.steps)
done(a.steps, mean_loss=loss_sum.item() / a.steps, step_ms=step_ms)
