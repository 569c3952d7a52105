"""sync-call/negative_side_stream.py - a stream.synchronize() per step on a side stream while the GPU stays busy.

A GPU-bound MLP (4 layers of 4096, batch 8192, bf16 autocast, fused AdamW: several milliseconds of matrix
products per step). Each step, after launching its forward and backward passes, the host prepares the next
batch on a side stream (a small device-side gather of the next inputs) and waits for that stream alone with
`side.synchronize()` before the optimizer step. The wait returns as soon as the small gather is done, while the
main stream's queue of matrix products still runs for milliseconds: the GPU never drains.

Seen at the CUDA level, per steady step: one STREAM_SYNCHRONIZE on the side stream, no DtoH copy, no GPU idle
after it (the work queued before it is still running when it returns). An analyzer should report nothing:
flagging a per-step host wait without measuring the idle it caused is the false positive this tests.

    python3 negative_side_stream.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, StepTimer, done, parse_args  # noqa: E402

a = parse_args(__doc__)
WIDTH, CLASSES, BATCH, POOL = 4096, 1000, 8192, 4 * 8192

model = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, WIDTH), nn.GELU(),
                      nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, CLASSES)).to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, fused=True)
g = torch.Generator(device=DEV).manual_seed(1)
pool = torch.randn(POOL, WIDTH, device=DEV, generator=g)
labels = (pool[:, :64] @ torch.randn(64, CLASSES, device=DEV, generator=g)).argmax(-1)
order = torch.randperm(POOL, device=DEV, generator=g)
side = torch.cuda.Stream()

x, y = pool[:BATCH].clone(), labels[:BATCH].clone()
loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    # the next batch, gathered on the side stream while the main stream computes
    idx = order[((i + 1) * BATCH) % POOL:][:BATCH]
    with torch.cuda.stream(side):
        nx, ny = pool.index_select(0, idx), labels.index_select(0, idx)
    side.synchronize()  # waits for the gather only; the main stream's queue keeps running
    opt.step()
    torch.cuda.current_stream().wait_stream(side)
    nx.record_stream(torch.cuda.current_stream())
    ny.record_stream(torch.cuda.current_stream())
    with torch.no_grad():
        loss_sum += loss.detach()
    x, y = nx, ny
step_ms = timer.stop(a.steps)
done(a.steps, mean_loss=loss_sum.item() / a.steps, step_ms=step_ms)
