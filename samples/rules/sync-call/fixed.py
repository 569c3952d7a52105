"""sync-call/fixed.py - bad.py with the phases timed by CUDA events, read once after the loop: no wait in the step.

The same GPT, data and steps as bad.py. Each phase boundary records a CUDA event (cudaEventRecord: a marker in
the stream, no host wait); the events are kept and their elapsed times read after the loop's final
synchronize. The host runs ahead of the GPU through the whole step.

Seen at the CUDA level, per steady step: kernels, event records, no host wait. An analyzer should report
nothing (fwd_ms, bwd_ms, opt_ms are GPU times here, the host-side times of bad.py there).

    python3 fixed.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, GPT, StepTimer, done, parse_args, token_batches  # noqa: E402

a = parse_args(__doc__)
VOCAB, D, LAYERS, HEADS, BATCH, SEQ, NB = 8192, 768, 4, 12, 32, 256, 8

model = GPT(VOCAB, D, LAYERS, HEADS, SEQ).to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01, fused=True)
tokens = token_batches(NB, BATCH, SEQ, VOCAB).to(DEV)

marks = []
loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
        marks.clear()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
    x, y = tokens[i % NB, :, :-1], tokens[i % NB, :, 1:]
    ev[0].record()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
    ev[1].record()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    ev[2].record()
    opt.step()
    ev[3].record()
    marks.append(ev)
    with torch.no_grad():
        loss_sum += loss.detach()
step_ms = timer.stop(a.steps)  # synchronizes: every event has completed
fwd, bwd, upd = (sum(e[k].elapsed_time(e[k + 1]) for e in marks) / len(marks) for k in range(3))
done(a.steps, mean_loss=loss_sum.item() / a.steps, fwd_ms=fwd, bwd_ms=bwd, opt_ms=upd, step_ms=step_ms)
