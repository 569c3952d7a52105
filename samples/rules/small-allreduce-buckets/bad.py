"""small-allreduce-buckets/bad.py - data-parallel GPT training whose gradients are all-reduced one tensor at a time.

Two ranks (`torchrun --nproc-per-node 2 bad.py`, one GPU each, NCCL) train a 4-layer d768 GPT (batch 16 x 256
tokens per rank, vocabulary 8192, bf16 autocast, fused AdamW). After the backward pass each rank all-reduces
every parameter's gradient on its own, the way hand-written data parallelism (or DDP with `bucket_cap_mb`
far too small) does: about 50 gradient tensors, most of them a few KB (biases, layer norms), each one NCCL
all-reduce that pays the fixed latency of a collective.

Seen at the CUDA level, per steady step and rank: about 50 `ncclDevKernel_AllReduce_*` kernels after the
backward kernels, most of them as short as the shortest one (tens of microseconds), none beside compute.
An analyzer should report small-allreduce-buckets on both ranks (and comm-not-overlapped, since the
all-reduces wait for the whole backward pass). fixed.py is the same training with the gradients in one
contiguous buffer, all-reduced as a few large buckets by DDP during the backward pass.

    torchrun --nproc-per-node 2 bad.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import GPT, StepTimer, done, parse_args, token_batches  # noqa: E402

a = parse_args(__doc__)
dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
dev = torch.device("cuda", torch.cuda.current_device())
VOCAB, D, LAYERS, HEADS, BATCH, SEQ, NB = 8192, 768, 4, 12, 16, 256, 8

model = GPT(VOCAB, D, LAYERS, HEADS, SEQ).to(dev)
for p in model.parameters():  # the same start on every rank
    dist.broadcast(p.data, 0)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01, fused=True)
tokens = token_batches(NB, BATCH, SEQ, VOCAB, seed=1 + rank).to(dev)
params = [p for p in model.parameters() if p.requires_grad]

losses = []
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
    x, y = tokens[i % NB, :, :-1], tokens[i % NB, :, 1:]
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    for p in params:  # the anti-pattern: one all-reduce per gradient tensor
        dist.all_reduce(p.grad)
        p.grad.div_(world)
    opt.step()
    if i >= a.warmup:
        losses.append(loss.detach())

step_ms = timer.stop(a.steps)
mean = torch.stack(losses).mean()
dist.all_reduce(mean)
if rank == 0:
    done(a.steps, allreduces_per_step=len(params), mean_loss=float(mean) / world, step_ms=step_ms)
dist.destroy_process_group()
