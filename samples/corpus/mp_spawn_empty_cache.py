"""mp_spawn_empty_cache.py - multiprocessing spawn: the smaller of two workers calls empty_cache() every step.

Two workers started with multiprocessing "spawn" share the GPU. Worker 0 trains an 8-layer MLP (the process
with the most kernels) and is clean. Worker 1 trains a 3-layer MLP and calls `torch.cuda.empty_cache()` after
every optimizer step: release bursts and re-allocations in every one of its steps. The parent never uses the
GPU. Labels: empty-cache-in-loop must be found (in worker 1, not the process with the most kernels);
memory-ceiling-thrash must not.
"""
import importlib.util
import multiprocessing as mp
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import SKIP, Timer, Trainer, done, info, need_torch, parse_args, skip  # noqa: E402


def worker(rank, steps, warmup):
    torch = need_torch()
    if rank == 0:
        tr = Trainer(torch, width=4096, depth=8, batch=4096)
    else:
        tr = Trainer(torch, width=4096, depth=3, batch=8192)
    timer = Timer(torch)
    for i in range(warmup + steps):
        if i == warmup:
            timer.start()
        tr.step()
        if rank == 1:
            torch.cuda.empty_cache()
    info(f"worker={rank} step_ms={timer.stop(steps):.3f}")


if __name__ == "__main__":
    args = parse_args(__doc__)
    if importlib.util.find_spec("torch") is None:
        skip("torch is not installed")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=worker, args=(r, args.steps, args.warmup)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    codes = [p.exitcode for p in procs]
    if SKIP in codes:
        sys.exit(SKIP)
    if any(codes):
        print(f"workers exited with {codes}", flush=True)
        sys.exit(1)
    done(args.steps, workers=2)
