"""d2h-sync/negative_lagged_read.py - a loss read and a host wait in every step that never leave the GPU idle.

A GPU-bound MLP (4096 wide, batch 8192, bf16 autocast, fused AdamW: several milliseconds of matrix products per
step, a fraction of a millisecond of launches) logs the loss of every step, but one step late: after queuing
step i, the host copies step i's loss into pinned host memory with a non-blocking copy, records an event, and
then waits (Event.synchronize) for the event of step i-1 and reads that step's loss. While the host waits,
step i is already queued, so the GPU keeps running; when the wait returns the host queues step i+1 long before
step i ends.

This is the only way a per-step host wait can cost nothing: `torch.cuda.synchronize()` (or `.item()`) waits
for everything queued, so after it the GPU idles at least until the host launches again (see
negative_sync_long_step.py for that case); a wait on an older point of the stream keeps the queue full.

Seen at the CUDA level, per steady step: one DtoH copy (4 bytes, pinned destination, async) and one host wait
(EVENT_SYNCHRONIZE on the previous step's event), and no GPU idle time between steps. An analyzer should not
report d2h-sync (nor launch-starvation): the estimated GPU time lost is zero. A sync-call rule that flags the
cudaEventSynchronize without measuring idle time would be a false positive here.

    python3 negative_lagged_read.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, StepTimer, done, parse_args  # noqa: E402

a = parse_args(__doc__)
WIDTH, CLASSES, BATCH, NB = 4096, 1000, 8192, 4

model = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, WIDTH), nn.GELU(),
                      nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, CLASSES)).to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, fused=True)
g = torch.Generator(device=DEV).manual_seed(1)
xs = torch.randn(NB, BATCH, WIDTH, device=DEV, generator=g)
ys = (xs[:, :, :256] @ torch.randn(256, CLASSES, device=DEV, generator=g)).argmax(-1)

total = a.warmup + a.steps
loss_host = torch.zeros(total, pin_memory=True)  # one pinned slot per step: never overwritten before it is read
ready = [torch.cuda.Event() for _ in range(total)]
logged = []
timer = StepTimer()
for i in range(total):
    if i == a.warmup:
        timer.start()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(xs[i % NB]), ys[i % NB])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    loss_host[i].copy_(loss.detach(), non_blocking=True)  # queued behind step i, no wait
    ready[i].record()
    if i > 0:
        ready[i - 1].synchronize()  # wait for step i-1 only: step i is still queued behind it
        logged.append(float(loss_host[i - 1]))
step_ms = timer.stop(a.steps)
logged.append(float(loss_host[total - 1]))

steady = logged[a.warmup:]
done(a.steps, first_loss=steady[0], last_loss=steady[-1], mean_loss=sum(steady) / len(steady), step_ms=step_ms)
