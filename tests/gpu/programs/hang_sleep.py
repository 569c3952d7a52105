"""hang_sleep.py - a step that hangs for a while, for `cuscope record --hang-after`.

A few ordinary steps, then one kernel that spins on the GPU for --seconds (torch.cuda._sleep) while the host
waits for it: in torch.cuda.synchronize() (--mode wait) or polling the stream's query() every 0.1 ms (--mode spin). No GPU
work completes meanwhile, so a recording with --hang-after shorter than --seconds reports a hang. The kernel then
ends and the program exits 0.

    python3 hang_sleep.py [--seconds 6] [--mode wait|spin]
"""
import argparse
import time

from common import info, torch_cuda

torch = torch_cuda()

p = argparse.ArgumentParser()
p.add_argument("--seconds", type=float, default=6.0)
p.add_argument("--mode", choices=("wait", "spin"), default="wait")
a = p.parse_args()

dev = torch.device("cuda")
x = torch.randn(256, 256, device=dev)
for i in range(20):
    torch.cuda.nvtx.range_push(f"step{i}")
    x = torch.tanh(x @ x.T) / 16
    x.sum().item()
    torch.cuda.nvtx.range_pop()

# the spin's clock: measured, so that the kernel runs about --seconds on any GPU
t0 = time.time()
torch.cuda._sleep(100_000_000)
torch.cuda.synchronize()
cycles_per_s = 100_000_000 / max(time.time() - t0, 1e-3)
info(f"about {cycles_per_s / 1e9:.2f} G sleep cycles a second")

torch.cuda.nvtx.range_push("hang")
torch.cuda._sleep(int(cycles_per_s * a.seconds))
t0 = time.time()
if a.mode == "wait":
    torch.cuda.synchronize()
else:
    s = torch.cuda.current_stream()
    while not s.query():
        time.sleep(0.0001)
torch.cuda.nvtx.range_pop()
info(f"the hang lasted {time.time() - t0:.1f} s")
print("done", flush=True)
