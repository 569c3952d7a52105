"""small-allreduce-buckets/fixed.py - the same data-parallel GPT training with the gradients in large DDP buckets.

Same model, data and steps as bad.py (`torchrun --nproc-per-node 2 fixed.py`), wrapped in
DistributedDataParallel with `bucket_cap_mb=25` (the default) and `gradient_as_bucket_view=True`: the
gradients live in a few contiguous buckets (the guide's contiguous buffer) and each bucket is all-reduced
once, during the backward pass, as soon as its gradients are ready.

Seen at the CUDA level, per steady step and rank: a few `ncclDevKernel_AllReduce_*` kernels (one per
bucket), each much longer than a latency, most of them beside the backward kernels. An analyzer should
report no small-allreduce-buckets.

    torchrun --nproc-per-node 2 fixed.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

from rules_common import GPT, StepTimer, done, parse_args, token_batches  # noqa: E402

a = parse_args(__doc__)
dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
dev = torch.device("cuda", torch.cuda.current_device())
VOCAB, D, LAYERS, HEADS, BATCH, SEQ, NB = 8192, 768, 4, 12, 16, 256, 8

model = DDP(GPT(VOCAB, D, LAYERS, HEADS, SEQ).to(dev), device_ids=[dev.index], bucket_cap_mb=25,
            gradient_as_bucket_view=True)  # DDP broadcasts rank 0's parameters
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01, fused=True)
tokens = token_batches(NB, BATCH, SEQ, VOCAB, seed=1 + rank).to(dev)

losses = []
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
    x, y = tokens[i % NB, :, :-1], tokens[i % NB, :, 1:]
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()  # DDP all-reduces the buckets here
    opt.step()
    if i >= a.warmup:
        losses.append(loss.detach())

step_ms = timer.stop(a.steps)
mean = torch.stack(losses).mean()
dist.all_reduce(mean)
if rank == 0:
    done(a.steps, mean_loss=float(mean) / world, step_ms=step_ms)
dist.destroy_process_group()
