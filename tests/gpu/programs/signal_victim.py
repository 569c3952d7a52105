"""signal_victim.py - runs GPU steps until it is killed, to check what a trace keeps of a killed program.

Each step is an NVTX range "step<N>" around a small forward pass and a `.item()`; after the step the program
prints "step N" (flushed) and sleeps --step-ms. tests/gpu/run.sh sends SIGTERM, SIGINT or SIGKILL after a few
seconds and then checks that the trace holds the steps up to shortly before the signal. With --exit-at N the
program calls os._exit(3) in the middle of step N (kernels launched, range open, no exit handlers run).

With --slow-at N the step N sleeps --slow-ms inside its range (a slow step for `record --dump-on slow-step`).

    python3 signal_victim.py [--pidfile FILE] [--step-ms 20] [--exit-at N] [--max-steps N]
                             [--slow-at N --slow-ms MS]
"""
import argparse
import os
import time

from common import info, torch_cuda

torch = torch_cuda()

p = argparse.ArgumentParser()
p.add_argument("--pidfile", help="write this process's pid here once CUDA is up")
p.add_argument("--step-ms", type=float, default=20.0, help="sleep after each step")
p.add_argument("--exit-at", type=int, help="os._exit(3) in the middle of this step")
p.add_argument("--max-steps", type=int, default=100000, help="stop (exit 0) after this many steps")
p.add_argument("--slow-at", type=int, help="make this step slow")
p.add_argument("--slow-ms", type=float, default=200.0, help="how much the slow step sleeps")
a = p.parse_args()

torch.manual_seed(0)
dev = torch.device("cuda")
w = torch.randn(512, 512, device=dev)
x = torch.randn(64, 512, device=dev)
torch.cuda.synchronize()
if a.pidfile:
    with open(a.pidfile + ".tmp", "w") as f:
        f.write(f"{os.getpid()}\n")
    os.replace(a.pidfile + ".tmp", a.pidfile)
info(f"pid {os.getpid()}")

for i in range(a.max_steps):
    torch.cuda.nvtx.range_push(f"step{i}")
    y = torch.tanh(x @ w) @ w.T
    if a.exit_at is not None and i == a.exit_at:
        os._exit(3)
    y.sum().item()
    if a.slow_at is not None and i == a.slow_at:
        time.sleep(a.slow_ms / 1000.0)
    torch.cuda.nvtx.range_pop()
    print(f"step {i}", flush=True)
    time.sleep(a.step_ms / 1000.0)
