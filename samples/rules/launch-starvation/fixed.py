"""launch-starvation/fixed.py - the same training step captured once in a CUDA graph and replayed.

Same model, optimizer and data as bad.py (tiny_model.py). After the warm-up steps (run eagerly on a side stream, as
torch.cuda.graphs requires), the whole step (forward, backward, AdamW update, loss accumulation) is captured
into one torch.cuda.CUDAGraph. Each steady step copies its batch into the graph's static input tensors and
replays the graph: one cudaGraphLaunch instead of 700 to 900 kernel launches, so the GPU runs the kernels back to
back while the host is already done (guide 001 6.4: cut the per-step host overhead; the same kernels, no
longer launched one by one).

Seen at the CUDA level, per steady step: two small device-to-device copies, one cudaGraphLaunch, then the graph's
kernels (graph id set) with gaps of about a microsecond between them; the host time of every graph kernel is
that of the graph launch, long before it starts. An analyzer should not report launch-starvation (the GPU never
waits for a launch; `queued` is meaningless for graph kernels and must not be used). Short gaps between graph
kernels are device-side launch latency, not host starvation.

    python3 fixed.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402

from tiny_model import NB, build, loss_of  # noqa: E402
from rules_common import DEV, StepTimer, done, parse_args  # noqa: E402

a = parse_args(__doc__)
model, opt, xs, ys = build(DEV)

static_x = xs[0].clone()
static_y = ys[0].clone()
loss_sum = torch.zeros((), device=DEV)


def step():
    loss = loss_of(model, static_x, static_y)
    loss.backward()
    opt.step()
    loss_sum.add_(loss.detach())


# Warm-up: eager steps on a side stream (lazy initialisation, optimizer state), then capture one step.
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for i in range(a.warmup):
        static_x.copy_(xs[i % NB])
        static_y.copy_(ys[i % NB])
        opt.zero_grad(set_to_none=True)
        step()
torch.cuda.current_stream().wait_stream(side)

graph = torch.cuda.CUDAGraph()
opt.zero_grad(set_to_none=True)  # backward in the capture allocates the gradients from the graph's pool
# thread_local: a CUDA call that another thread of the process makes meanwhile (a profiler's flush thread, for
# one) must not invalidate the capture; this thread's own calls are still checked.
with torch.cuda.graph(graph, capture_error_mode="thread_local"):
    step()

timer = StepTimer()
timer.start()
loss_sum.zero_()
for i in range(a.warmup, a.warmup + a.steps):
    static_x.copy_(xs[i % NB])
    static_y.copy_(ys[i % NB])
    graph.replay()  # forward, backward, optimizer step; gradients are overwritten in place
step_ms = timer.stop(a.steps)
done(a.steps, mean_loss=loss_sum.item() / a.steps, step_ms=step_ms)
