"""launch_torch.py - a host-bound PyTorch loop of tiny kernels, to measure what a profiler adds to each launch.

    python3 launch_torch.py [LAUNCHES] [--torch-profiler]      (default 100000)

Each iteration is one `x.add_(1.0)` on a 256-element CUDA tensor: one kernel of about 2 us that the host launches
more slowly than the GPU runs it. Prints the wall time and the process CPU time (user + system) per launch of the
timed loop, on one line: `us_per_launch=W cpu_us_per_launch=C launches=N`. With --torch-profiler the timed loop
runs inside torch.profiler.profile(activities=[CPU, CUDA]), which records every aten op and every kernel; the
profiler's start and its processing after the loop are outside the timing.
"""
import argparse
import resource
import time

import torch


def cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def loop(x, n):
    torch.cuda.synchronize()
    c0, t0 = cpu_seconds(), time.perf_counter()
    for _ in range(n):
        x.add_(1.0)
    torch.cuda.synchronize()
    return time.perf_counter() - t0, cpu_seconds() - c0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("launches", type=int, nargs="?", default=100000)
    p.add_argument("--torch-profiler", action="store_true")
    a = p.parse_args()
    x = torch.ones(256, device="cuda")
    for _ in range(2000):
        x.add_(1.0)
    if a.torch_profiler:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            wall, cpu = loop(x, a.launches)
        n = sum(1 for e in prof.events() if e.device_type.name == "CUDA")
        print(f"torch.profiler recorded {n} GPU events")
    else:
        wall, cpu = loop(x, a.launches)
    expect = 1.0 + 2000 + a.launches
    assert x[0].item() == expect, (x[0].item(), expect)
    print(f"us_per_launch={wall / a.launches * 1e6:.3f} cpu_us_per_launch={cpu / a.launches * 1e6:.3f} "
          f"launches={a.launches}")


if __name__ == "__main__":
    main()
