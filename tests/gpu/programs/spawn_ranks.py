"""spawn_ranks.py - a job of 2 ranks on the one GPU: every rank's process must land in the one trace.

    python3 spawn_ranks.py --mode spawn      multiprocessing "spawn": 2 fresh processes set RANK, LOCAL_RANK and
                                             WORLD_SIZE, then run GPU steps; the parent never uses the GPU
    python3 spawn_ranks.py --mode torchrun   `python3 -m torch.distributed.run --standalone --nproc_per_node=2`
                                             runs this file with --worker; the ranks meet over gloo (CPU only,
                                             on the loopback interface) unless --collectives none
    python3 spawn_ranks.py --mode torchrun --gpus 2 --collectives nccl
                                             rank r on GPU r, and an NCCL all-reduce of the checksums on the
                                             GPUs (the nvidia-h200-x2 machine)
Exit 77 when torch.distributed.run is not there. Rank lines are printed in rank order by the parent (spawn) or
by rank 0 after an all-gather (torchrun), so stdout is the same on every run.
"""
import argparse
import importlib.util
import os
import queue as queue_mod
import subprocess
import sys

from common import expect, info, skip

WORLD = 2


def run_steps(rank, steps, gpus=1):
    """The GPU work of one rank; returns a checksum that depends only on the rank."""
    import torch

    torch.cuda.set_device(rank % gpus)
    torch.manual_seed(rank)
    w = torch.randn(128, 128, device="cuda")
    x = torch.randn(16, 128, device="cuda")
    total = 0.0
    for i in range(steps):
        torch.cuda.nvtx.range_push(f"spawn_step{i}_rank{rank}")
        x = torch.tanh(x @ w)
        total += x.sum().item()
        torch.cuda.nvtx.range_pop()
    return total


def spawn_worker(rank, steps, queue):
    # Set before CUDA starts: the injection library reads them when it starts in this process.
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(WORLD))
    queue.put((rank, run_steps(rank, steps)))


def torchrun_worker(steps, collectives, gpus):
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    total = run_steps(rank, steps, gpus)
    results = [(rank, total)]
    if collectives in ("gloo", "nccl"):
        import torch
        import torch.distributed as dist

        dist.init_process_group(collectives)
        if collectives == "nccl":
            # the sum of the checksums, on the GPUs: NCCL kernels in both ranks
            t = torch.tensor([total], device="cuda", dtype=torch.float64)
            dist.all_reduce(t)
            if rank == 0:
                print(f"all-reduce sum={t.item():.3f}", flush=True)
        gathered = [None] * world
        dist.all_gather_object(gathered, (rank, total))
        results = sorted(gathered)
        dist.barrier()
        dist.destroy_process_group()
    if rank == 0:
        for r, t in results:
            print(f"rank {r} checksum={t:.3f}", flush=True)


def job_expect(steps, gpus=1, collectives="gloo"):
    """What the trace of the whole job holds: two ranks that used the GPU, each with its steps."""
    want = ["processes_cuda=2", "ranks=2", f"nvtx_text.spawn_step={WORLD * steps}",
            f"memcpy_dtoh{'>' if collectives == 'nccl' else ''}={WORLD * steps}", "exit_code=0"]
    if gpus == 2:
        want.append("devices=2")
    if collectives == "nccl":
        want.append(f"kname.nccl>={WORLD}")
    return want


def main():
    """Spawned children import this file too (as __mp_main__): nothing runs at import."""
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["spawn", "torchrun"], default="spawn")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--collectives", choices=["gloo", "nccl", "none"], default="gloo")
    p.add_argument("--gpus", type=int, choices=[1, 2], default=1, help="GPUs the ranks share (rank r on r %% gpus)")
    p.add_argument("--worker", action="store_true", help="(internal) run as one torchrun rank")
    a = p.parse_args()

    if a.worker:
        torchrun_worker(a.steps, a.collectives, a.gpus)
        return 0

    if importlib.util.find_spec("torch") is None:
        skip("torch is not installed")
    if a.mode == "spawn":
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        queue = ctx.Queue()
        procs = [ctx.Process(target=spawn_worker, args=(r, a.steps, queue)) for r in range(WORLD)]
        for pr in procs:
            pr.start()
        # The results are a few bytes: the workers can exit before the queue is read.
        for pr in procs:
            pr.join(timeout=300)
        codes = [pr.exitcode for pr in procs]
        results = []
        while not queue.empty() or len(results) < codes.count(0):
            try:
                results.append(queue.get(timeout=10))
            except queue_mod.Empty:  # a worker died before it could answer
                break
        results.sort()
        for r, t in results:
            print(f"rank {r} checksum={t:.3f}")
        print(f"exit codes {codes}")
        expect(*job_expect(a.steps))
        return 0 if codes == [0] * WORLD else 1

    # --mode torchrun: this process only launches torchrun and never uses the GPU.
    try:
        have_run = importlib.util.find_spec("torch.distributed.run") is not None
    except ImportError:
        have_run = False
    if not have_run:
        skip("torch.distributed.run is not available")
    env = dict(os.environ)
    env.setdefault("GLOO_SOCKET_IFNAME", "lo")  # no network on the GPU machine: stay on the loopback interface
    env.setdefault("NCCL_SOCKET_IFNAME", "lo")
    env.setdefault("OMP_NUM_THREADS", "1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={WORLD}",
           os.path.abspath(__file__), "--worker", "--steps", str(a.steps), "--collectives", a.collectives,
           "--gpus", str(a.gpus)]
    info("running " + " ".join(cmd[1:4]) + " ...")
    sys.stdout.flush()
    rc = subprocess.run(cmd, env=env).returncode
    print(f"torchrun exit {rc}")
    expect(*job_expect(a.steps, a.gpus, a.collectives))
    return rc


if __name__ == "__main__":
    sys.exit(main())
