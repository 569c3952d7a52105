"""host_bound.py - an eager PyTorch training loop whose GPU is busy well under 40% of the step: host-bound.

For the gate's noise study (tests/gpu/gate_noise.sh): a small GPT (d 256, 6 layers, 8 sequences of 128
tokens) in bf16 autocast with a per-parameter AdamW (foreach=False, as an optimizer written in Python would
be), so that a step is about a thousand kernels of a few microseconds each, and the host's launches, not the
GPU, set the pace. It never reads anything back during the steps.

    python3 host_bound.py [--steps 25] [--warmup 5] [--slower-host PCT]

--slower-host PCT adds host work (a busy wait before the step's launches) worth PCT percent of the step time
measured in warm-up; in a host-bound loop the GPU waits for it, so the step gets about that much longer.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../samples/rules"))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, GPT, StepTimer, done, parse_args, token_batches  # noqa: E402


def extra(p):
    p.add_argument("--slower-host", type=float, default=0.0, help="add host work worth PCT%% of a step")


a = parse_args(__doc__, steps=25, extra=extra)
VOCAB, D, LAYERS, HEADS, BATCH, SEQ, NB = 2048, 256, 6, 4, 8, 128, 4

model = GPT(VOCAB, D, LAYERS, HEADS, SEQ).to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01, foreach=False, fused=False)
batches = token_batches(NB, BATCH, SEQ, VOCAB).to(DEV)  # on the GPU once: no copy in the steps

loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
host_s = 0.0
warm_t = None
for i in range(a.warmup + a.steps):
    if i == 1:
        torch.cuda.synchronize()
        warm_t = time.perf_counter()
    if i == a.warmup:
        torch.cuda.synchronize()
        step_ms = (time.perf_counter() - warm_t) * 1e3 / max(1, a.warmup - 1) if warm_t else 0.0
        host_s = step_ms * a.slower_host / 100.0 / 1e3
        timer.start()
        loss_sum.zero_()
    if host_s:
        t_end = time.perf_counter() + host_s
        while time.perf_counter() < t_end:
            pass
    batch = batches[i % NB]
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    loss_sum += loss.detach()
step_ms = timer.stop(a.steps)
done(a.steps, mean_loss=float(loss_sum) / a.steps, step_ms=step_ms)
