"""pt_compile_cumsum.py - a long prefix sum inside a torch.compile'd function.

A compiled "cumulative feature" function over 16 series of 262144 points: `x.cumsum(-1)` weighted and
normalised by the position, forward and backward (the weight's gradient goes through the scan's output). Inductor either generates Triton scan kernels (their names carry "cumsum",
with the elementwise work fused into them) or falls back to PyTorch's scan kernel; either way scan kernels on
the CUDA cores take most of the GPU time of the step. Labels: cuda-core-scan must be found. Compilation takes tens of seconds in the warm-up.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, done, info, need_torch, parse_args  # noqa: E402

args = parse_args(__doc__, warmup=4)
torch = need_torch()
S, N = 16, 262144
g = torch.Generator(device="cuda").manual_seed(1)
series = torch.randn(2, S, N, device="cuda", generator=g)
w = torch.ones(S, 1, device="cuda", requires_grad=True)
pos = torch.arange(1, N + 1, device="cuda", dtype=torch.float32)
opt = torch.optim.SGD([w], lr=1e-3)


def feature_loss_eager(x, w):
    run = x.cumsum(-1) * w / pos
    return (run - x).pow(2).mean()


# Inductor generates the scan; should this PyTorch's Inductor fail on it, the same function runs through
# AOTAutograd without Inductor (PyTorch's own scan kernels), and the final line says which one ran.
path = "inductor"
feature_loss = torch.compile(feature_loss_eager)
try:
    feature_loss(series[0], w).backward()
except Exception as e:  # noqa: BLE001 - any compiler failure
    info(f"inductor failed ({type(e).__name__}); using aot_eager")
    path = "aot_eager"
    torch._dynamo.reset()
    feature_loss = torch.compile(feature_loss_eager, backend="aot_eager")

timer = Timer(torch)
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        timer.start()
    opt.zero_grad(set_to_none=True)
    loss = feature_loss(series[i % 2], w)
    loss.backward()
    opt.step()
step_ms = timer.stop(args.steps)
info(f"step_ms={step_ms:.3f} loss={loss.item():.5f} path={path}")
done(args.steps)
