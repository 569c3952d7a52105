"""launch_torch.py - a host-bound PyTorch loop of tiny kernels, to measure what a profiler adds to each launch.

    python3 launch_torch.py [LAUNCHES] [--torch-profiler]      (default 100000)

Each iteration is one `x.add_(1.0)` on a 256-element CUDA tensor: one kernel of about 2 us that the host launches
more slowly than the GPU runs it. Prints the wall time and the process CPU time (user + system) per launch of the
timed loop, on one line: `us_per_launch=W cpu_us_per_launch=C launches=N`, and on a second line how the loop
went: `chunks: ...` the wall time per launch of each tenth of the loop (a slow run slow throughout, or slow in
bursts), the page faults (minor, major) and the context switches (voluntary, involuntary) of the process during
it. With --torch-profiler the timed loop runs inside torch.profiler.profile(activities=[CPU, CUDA]), which records
every aten op and every kernel; the profiler's start and its processing after the loop are outside the timing.
"""
import argparse
import resource
import time

import torch


def cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def loop(x, n):
    """wall and CPU seconds of n launches, and the `chunks:` line of the loop"""
    torch.cuda.synchronize()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    c0, t0 = cpu_seconds(), time.perf_counter()
    marks = [t0]
    for k in range(10):
        for _ in range(n // 10 + (1 if k < n % 10 else 0)):
            x.add_(1.0)
        marks.append(time.perf_counter())
    torch.cuda.synchronize()
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    per = [(b - a) / max(1, n // 10) * 1e6 for a, b in zip(marks, marks[1:])]
    chunks = ("chunks: " + " ".join(f"{u:.2f}" for u in per) +
              f" minflt={r1.ru_minflt - r0.ru_minflt} majflt={r1.ru_majflt - r0.ru_majflt}"
              f" nvcsw={r1.ru_nvcsw - r0.ru_nvcsw} nivcsw={r1.ru_nivcsw - r0.ru_nivcsw}")
    return wall, cpu, chunks


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
            wall, cpu, chunks = loop(x, a.launches)
        n = sum(1 for e in prof.events() if e.device_type.name == "CUDA")
        print(f"torch.profiler recorded {n} GPU events")
    else:
        wall, cpu, chunks = loop(x, a.launches)
    expect = 1.0 + 2000 + a.launches
    assert x[0].item() == expect, (x[0].item(), expect)
    print(f"us_per_launch={wall / a.launches * 1e6:.3f} cpu_us_per_launch={cpu / a.launches * 1e6:.3f} "
          f"launches={a.launches}")
    print(chunks)


if __name__ == "__main__":
    main()
