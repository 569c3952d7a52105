"""mp_ranks_share_gpu.py - negative: two torchrun-style ranks share one GPU, both GPU-bound, no read-back.

The program launches itself twice (RANK=0/1, WORLD_SIZE=2), and each rank trains a GPU-bound MLP (~5 ms of
GEMMs per step) on the same GPU. The GPU time-slices between the two processes, so each process's own GPU
work shows gaps while the other one runs, though every launch was queued long before. Labels: nothing of the
five (launch-starvation must not: the gaps are the other process's turn, not the host's).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, Trainer, done, info, launch_ranks, need_torch, parse_args  # noqa: E402

args = parse_args(__doc__, steps=30)
if "RANK" not in os.environ:
    launch_ranks(os.path.abspath(__file__), 2, sys.argv[1:])
rank = int(os.environ["RANK"])
torch = need_torch()
torch.manual_seed(rank)
tr = Trainer(torch)
timer = Timer(torch)
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        timer.start()
    tr.step()
step_ms = timer.stop(args.steps)
info(f"rank={rank} step_ms={step_ms:.3f}")
done(args.steps, rank=rank)
