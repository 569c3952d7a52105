"""probe_gap.py - the GPU's time from the end of a step's work to the host's start of the next step.

    python3 samples/savings/probe/probe_gap.py PAIR bad|fixed

Builds the variant of samples/savings/PAIR.py (a pair whose step calls self.train(i)), runs 4 warm-up steps, a
synchronize, then 30 steps. A timing event is recorded after each step's launches, before its wait (it
completes when the step's GPU work ends), and one at each step's start, before any launch (with the GPU
idle, it completes when the host gets there). Their elapsed time is the part of the GPU's idle after a wait
that the host spends between the wait's return and the next step; without a wait it is the GPU's own gap
(a few us). Run without a profiler and under `cuscope record`, it says what recording adds there, and the
steps' wall time gives the pair's saving in the same call. Prints one line:

    gap PAIR VARIANT prof=0|1 step_ms=.. end_to_next_start_us median=.. p10=.. p90=..
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


def main():
    name, variant = sys.argv[1], sys.argv[2]
    made = {}
    savings_common.main = lambda doc, make, **kw: made.setdefault("make", make)
    runpy.run_path(os.path.join(HERE, name + ".py"), run_name="pair")
    v = made["make"](variant, argparse.Namespace(steps=STEPS, rounds=1, warmup=WARMUP))
    train, ends = v.train, []

    def timed_train(i):
        loss = train(i)
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        ends.append(e)
        return loss

    v.train = timed_train
    for i in range(WARMUP):
        v.step(i)
    torch.cuda.synchronize()
    ends.clear()
    starts = []
    t0 = time.perf_counter()
    for i in range(WARMUP, WARMUP + STEPS):
        s = torch.cuda.Event(enable_timing=True)
        s.record()
        starts.append(s)
        v.step(i)
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3 / STEPS
    gaps = sorted(ends[k].elapsed_time(starts[k + 1]) * 1e3 for k in range(len(starts) - 1))
    print(f"gap {name} {variant} prof={int('CUDA_INJECTION64_PATH' in os.environ)} step_ms={ms:.3f} "
          f"end_to_next_start_us median={statistics.median(gaps):.0f} p10={gaps[len(gaps) // 10]:.0f} "
          f"p90={gaps[len(gaps) * 9 // 10]:.0f}", flush=True)


if __name__ == "__main__":
    main()
