"""mp_rank1_item.py - two torchrun-style ranks on one GPU; only rank 1 reads the loss every step.

Run without RANK in the environment, the program launches itself twice with RANK=0/1, WORLD_SIZE=2 (the way
torchrun does, without its rendezvous). Both ranks train the same launch-heavy MLP (~1 ms of GPU work per
step). Rank 0 also computes a GPU-side metric each step (more kernels: it is the process with the most
kernels) and never reads anything back; rank 1 calls `loss.item()` and logs on the host every step, so its
GPU work drains after every step. Labels: d2h-sync must be found (in rank 1, not the process with the most
kernels).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, Trainer, done, info, launch_ranks, need_torch, parse_args, spin  # noqa: E402

args = parse_args(__doc__)
if "RANK" not in os.environ:
    launch_ranks(os.path.abspath(__file__), 2, sys.argv[1:])
rank = int(os.environ["RANK"])
torch = need_torch()
torch.manual_seed(0)
tr = Trainer(torch, width=1024, depth=8, batch=2048)
metric = torch.zeros((), device="cuda")
timer = Timer(torch)
logged = []
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        timer.start()
    loss = tr.step()
    if rank == 0:
        with torch.no_grad():  # a GPU-side metric, never read in the loop
            metric += tr.model[0].weight.abs().mean() + tr.model[-1].bias.abs().max()
    else:
        logged.append(loss.item())  # rank 1 only
        spin(0.0003)
step_ms = timer.stop(args.steps)
info(f"rank={rank} step_ms={step_ms:.3f}")
done(args.steps, rank=rank, reads=len(logged))
