"""probe_host.py - the host time of a pair's steps outside their waits, timed by the program itself.

    python3 samples/savings/probe/probe_host.py PAIR bad|fixed

Builds the variant of samples/savings/PAIR.py, runs 4 warm-up steps, a synchronize, then 30 steps, each timed
with time.perf_counter() less the time spent inside the calls that wait for the GPU (Tensor.item, __bool__,
tolist, cpu; torch.cuda.synchronize, Stream.synchronize, Event.synchronize). Run once without a profiler and
once under `cuscope record` (probe.sh), the difference is the time the profiler added to the host's work
between waits: what the model of the run must take out of a recorded trace. Prints one line:

    probe PAIR VARIANT prof=0|1 step_ms=.. host_us median=.. p10=.. p90=..
"""
import argparse
import os
import runpy
import statistics
import sys
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, HERE)
import savings_common  # noqa: E402
import torch  # noqa: E402

STEPS, WARMUP = 30, 4
waited = [0.0]


def timed(obj, attr):
    """Wrap obj.attr so that the time spent inside it is added to waited[0]."""
    f = getattr(obj, attr)

    def w(*a, **k):
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            waited[0] += time.perf_counter() - t

    setattr(obj, attr, w)


def main():
    name, variant = sys.argv[1], sys.argv[2]
    made = {}
    savings_common.main = lambda doc, make, **kw: made.setdefault("make", make)
    runpy.run_path(os.path.join(HERE, name + ".py"), run_name="pair")
    for obj, attr in [(torch.Tensor, "item"), (torch.Tensor, "__bool__"), (torch.Tensor, "tolist"),
                      (torch.Tensor, "cpu"), (torch.cuda, "synchronize"), (torch.cuda.Stream, "synchronize"),
                      (torch.cuda.Event, "synchronize")]:
        timed(obj, attr)
    v = made["make"](variant, argparse.Namespace(steps=STEPS, rounds=1, warmup=WARMUP))
    for i in range(WARMUP):
        v.step(i)
    torch.cuda.synchronize()
    host = []
    t00 = time.perf_counter()
    for i in range(WARMUP, WARMUP + STEPS):
        waited[0] = 0.0
        t0 = time.perf_counter()
        v.step(i)
        host.append((time.perf_counter() - t0 - waited[0]) * 1e6)
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t00) * 1e3 / STEPS
    host.sort()
    print(f"probe {name} {variant} prof={int('CUDA_INJECTION64_PATH' in os.environ)} step_ms={ms:.3f} "
          f"host_us median={statistics.median(host):.0f} p10={host[STEPS // 10]:.0f} "
          f"p90={host[STEPS * 9 // 10 - 1]:.0f}", flush=True)


if __name__ == "__main__":
    main()
