"""torch_profiler_inside.py - the program starts torch.profiler itself, around a few of its steps.

Under cuscope, CUPTI belongs to cuscope, so the profiler's Kineto cannot get it: the program must still run to
the end, exit 0, and cuscope must go on recording after the profiler stopped (Kineto may re-register CUPTI's
activity callbacks or turn activity kinds off). Steps before, inside and after the profiler are NVTX ranges
"pre_step<N>", "prof_step<N>" and "post_step<N>". Prints how many CUDA events the profiler saw (on an info
line: many without cuscope, none with it).

    python3 torch_profiler_inside.py [--steps 5]
"""
import argparse

from common import expect, info, torch_cuda

torch = torch_cuda()
from torch.profiler import ProfilerActivity, profile  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=5)
a = p.parse_args()

torch.manual_seed(0)
dev = torch.device("cuda")
w = torch.randn(256, 256, device=dev)
x = torch.randn(64, 256, device=dev)


def step(tag, i):
    global x
    torch.cuda.nvtx.range_push(f"{tag}{i}")
    x = torch.tanh(x @ w) * 0.5 + 0.1
    v = x.sum().item()
    torch.cuda.nvtx.range_pop()
    return v


total = 0.0
for i in range(a.steps):
    total += step("pre_step", i)
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    for i in range(a.steps):
        total += step("prof_step", i)
    torch.cuda.synchronize()
events = prof.events()
cuda_events = sum(1 for e in events if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA)
info(f"profiler saw {len(events)} events, {cuda_events} of them on the GPU")
for i in range(a.steps):
    total += step("post_step", i)
print(f"steps={3 * a.steps} total={total:.3f}")
n = a.steps
# Each step launches at least 3 kernels (matmul, pointwise, sum); the ones after the profiler must be recorded.
expect(f"kernels_in_nvtx.pre_step>={3 * n}", f"kernels_in_nvtx.post_step>={3 * n}", f"nvtx_text.post_step={n}",
       f"memcpy_dtoh>={3 * n}", "processes_cuda=1", "exit_code=0")
