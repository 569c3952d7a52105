"""sync-call/bad.py - torch.cuda.synchronize() inside every step, to time its phases: the GPU drains each time.

A 4-layer d768 GPT (batch 32x256, bf16 autocast, fused AdamW, data already on the GPU) whose step is timed
phase by phase the naive way: `torch.cuda.synchronize()` and `time.perf_counter()` after the forward pass, after
the backward pass and after the optimizer step, and the phase times kept in a Python list. Nothing is read back
from the GPU: there is no device-to-host copy in the step.

Seen at the CUDA level, per steady step: 3 CONTEXT_SYNCHRONIZE (cudaDeviceSynchronize) with no DtoH copy before
them; each returns when the GPU has run everything queued, and the GPU then idles until the host has launched
the next kernel (tens to hundreds of microseconds of Python each time). An analyzer should report sync-call in
every steady step (3 draining waits per step, with backtraces the three lines), not d2h-sync (no copy);
launch-starvation may list the idle as "host waits".

    python3 bad.py [--steps 40] [--warmup 5]
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, GPT, StepTimer, done, parse_args, token_batches  # noqa: E402

a = parse_args(__doc__)
VOCAB, D, LAYERS, HEADS, BATCH, SEQ, NB = 8192, 768, 4, 12, 32, 256, 8

model = GPT(VOCAB, D, LAYERS, HEADS, SEQ).to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01, fused=True)
tokens = token_batches(NB, BATCH, SEQ, VOCAB).to(DEV)

phases = []
loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
        phases.clear()
    x, y = tokens[i % NB, :, :-1], tokens[i % NB, :, 1:]
    t0 = time.perf_counter()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
    torch.cuda.synchronize()  # time the forward pass: drains the GPU
    t1 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.cuda.synchronize()  # time the backward pass: drains the GPU
    t2 = time.perf_counter()
    opt.step()
    torch.cuda.synchronize()  # time the optimizer step: drains the GPU
    phases.append((t1 - t0, t2 - t1, time.perf_counter() - t2))
    with torch.no_grad():
        loss_sum += loss.detach()
step_ms = timer.stop(a.steps)
fwd, bwd, upd = (sum(p[k] for p in phases) * 1e3 / len(phases) for k in range(3))
done(a.steps, mean_loss=loss_sum.item() / a.steps, fwd_ms=fwd, bwd_ms=bwd, opt_ms=upd, step_ms=step_ms)
