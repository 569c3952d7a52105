"""gather-list-cat/bad.py - data-parallel GPT training that gathers every rank's hidden states into a list, then cats.

Two ranks (`torchrun --nproc-per-node 2 bad.py`, one GPU each, NCCL) train a 4-layer d768 GPT (batch 16 x 256
tokens per rank, vocabulary 8192, bf16 autocast, fused AdamW; gradients averaged by DDP). Each step also
tracks activation statistics over the global batch: the last hidden states of every rank (16 x 256 x 768
bf16, 6 MiB per rank) are gathered with `dist.all_gather(list, h)` and joined with `torch.cat(list)`, and a
running mean of the per-token norms is kept on the GPU (read once, at the end).

Seen at the CUDA level, per steady step and rank: one `ncclDevKernel_AllGather_*` kernel, then one
device-to-device copy per rank on the NCCL stream (the process group copies the gathered buffer out into
the list's tensors), then a `CatArrayBatchedCopy*` kernel on the compute stream that copies it all once
more. An analyzer should report gather-list-cat on both ranks. fixed.py gathers into one tensor with
`dist.all_gather_into_tensor` and has neither copy.

    torchrun --nproc-per-node 2 bad.py [--steps 40] [--warmup 5] [--into-tensor]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

from rules_common import GPT, StepTimer, done, parse_args, token_batches  # noqa: E402

a = parse_args(__doc__, extra=lambda p: p.add_argument(
    "--into-tensor", action="store_true", help="gather with all_gather_into_tensor (what fixed.py runs)"))
dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
dev = torch.device("cuda", torch.cuda.current_device())
VOCAB, D, LAYERS, HEADS, BATCH, SEQ, NB = 8192, 768, 4, 12, 16, 256, 8

gpt = GPT(VOCAB, D, LAYERS, HEADS, SEQ).to(dev)
hidden = {}
gpt.blocks[-1].register_forward_hook(lambda m, i, o: hidden.__setitem__("h", o))
model = DDP(gpt, device_ids=[dev.index])
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01, fused=True)
tokens = token_batches(NB, BATCH, SEQ, VOCAB, seed=1 + rank).to(dev)
norm_sum = torch.zeros((), device=dev)
gathered = None

losses = []
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
    x, y = tokens[i % NB, :, :-1], tokens[i % NB, :, 1:]
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
    h = hidden["h"].detach().to(torch.bfloat16).contiguous()
    if a.into_tensor:  # the guide's way: one preallocated output, no list, no cat
        if gathered is None:
            gathered = torch.empty((world * h.shape[0],) + tuple(h.shape[1:]), dtype=h.dtype, device=dev)
        dist.all_gather_into_tensor(gathered, h)
        h_all = gathered
    else:  # the anti-pattern: a list of tensors, then a concatenation
        parts = [torch.empty_like(h) for _ in range(world)]
        dist.all_gather(parts, h)
        h_all = torch.cat(parts, dim=0)
    norm_sum += h_all.float().norm(dim=-1).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if i >= a.warmup:
        losses.append(loss.detach())

step_ms = timer.stop(a.steps)
mean = torch.stack(losses).mean()
dist.all_reduce(mean)
if rank == 0:
    done(a.steps, mean_loss=float(mean) / world, mean_norm=float(norm_sum) / (a.warmup + a.steps),
         step_ms=step_ms)
dist.destroy_process_group()
