"""launch-starvation/bad.py - a training step of several hundred tiny kernels: the GPU waits for the host.

The model of tiny_model.py (48 residual LayerNorm/Linear/GELU blocks of width 256, batch 64, bf16 autocast, AdamW)
trained eagerly. The forward pass launches about seven kernels per block (layer norm, casts of the input, weight
and bias to bf16, GEMM, GELU, add), the backward pass about ten: 700 to 900 launches per step, each kernel a few
microseconds on an H200, each launch about 10 microseconds or more of Python, dispatcher and autograd time. The host cannot keep up:
the GPU finishes each kernel before the next one has been launched and sits idle most of the step.

Seen at the CUDA level, in every steady step: hundreds of kernels of a few microseconds, each launched
(host time of cudaLaunchKernel / cuLaunchKernel, or `queued`) after the previous kernel on the stream had
already ended; GPU busy for well under half of the step. No synchronization inside the step. An analyzer
should report launch-starvation in every steady step, with the cause "between tiny kernels".

    python3 bad.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402

from tiny_model import NB, build, loss_of  # noqa: E402
from rules_common import DEV, StepTimer, done, parse_args  # noqa: E402

a = parse_args(__doc__)
model, opt, xs, ys = build(DEV)

loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
    opt.zero_grad(set_to_none=True)
    loss = loss_of(model, xs[i % NB], ys[i % NB])
    loss.backward()
    opt.step()
    loss_sum += loss.detach()
step_ms = timer.stop(a.steps)
done(a.steps, mean_loss=loss_sum.item() / a.steps, step_ms=step_ms)
