"""ceiling_common.py - model, step and memory sizing shared by the memory-ceiling-thrash samples.

The training loop: a 4-block residual MLP (d1024, hidden 4096, 1000 classes, bf16 autocast, fused AdamW) on
32768 tokens per step. Its steps alternate between two CUDA streams (step i runs on stream i % 2, each waiting
for the previous one): a ping-pong loop of the kind written to let the host queue one step while another runs.

Why two streams. PyTorch's caching allocator keeps one cache per stream: a block freed by a step on stream A
can only be reused by allocations on stream A. With one stream, a loop whose working set sits at a memory limit
reaches a steady state after a few steps even when the activation sizes change from step to step: the cache
keeps its largest segments, best-fit splits them for smaller requests and merges the pieces again when they
are freed, so the same cached segments serve every later step (this was checked with a model of the allocator:
alternating, cyclic and random activation sizes on one stream stop triggering the free-and-retry path after a
few steps, or run out of memory). With two streams, each step finds its own stream's cache empty and the other
stream's cache full:

  step on stream B: allocation k does not fit in B's (empty) cache -> cudaMalloc, or the fraction check, fails
      because A's cache still holds the previous step's W bytes -> release_cached_blocks(): synchronize, then
      cudaFree (or unmap, with expandable segments) every entirely free segment, i.e. all of A's cache ->
      retry (num_alloc_retries += 1) -> succeeds; the rest of the step allocates fresh segments on B.
  next step on stream A: the same with the roles swapped.

So every step: one drain of the GPU, a burst of releases of the other stream's W bytes, and W bytes of new
allocations; reserved memory climbs to the limit and drops back in every step.

Sizing. A probe step (the first warm-up step, on stream 0, full batch) measures the working set W of one step
(the growth of reserved memory). The cache is then emptied once and the limit is placed at
reserved + 1.5 W: one stream's step always fits (W <= 1.5 W), two streams' caches never do (2 W > 1.5 W). The
limit is either PyTorch's own (set_per_process_memory_fraction: the allocator refuses before calling CUDA, so no
failed CUDA call is visible) or the real device limit (a filler tensor takes all free memory but 1.5 W; the
failed cudaMalloc, or cuMemCreate with expandable segments, is visible in the trace).

The fix (fixed.py): gradient accumulation over 2 micro-batches of half the tokens, same tokens per optimizer
step, same limit. A micro-batch's working set W' is about W/2 plus the gradients (small here), so both streams'
caches fit (2 W' <= 1.5 W) and the allocator stops releasing after the warm-up.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, StepTimer, done  # noqa: E402

D, HID, BLOCKS, CLASSES, TOKENS, NB = 1024, 4096, 4, 1000, 32768, 2
GIB = 2**30


class MLPBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(D)
        self.fc1 = nn.Linear(D, HID)
        self.fc2 = nn.Linear(HID, D)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x))))


def build():
    """Model, optimizer with its state allocated up front (default stream), data on the GPU."""
    torch.manual_seed(0)
    model = nn.Sequential(*[MLPBlock() for _ in range(BLOCKS)], nn.LayerNorm(D), nn.Linear(D, CLASSES)).to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, fused=True)
    # Allocate AdamW's state now, on the default stream and before any activation exists, so that it never
    # shares a segment with a step's activations (as large trainers do): a zero-gradient step only applies the
    # weight decay.
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    opt.step()
    opt.zero_grad(set_to_none=True)
    g = torch.Generator(device=DEV).manual_seed(1)
    xs = torch.randn(NB, TOKENS, D, device=DEV, generator=g)
    ys = (xs[:, :, :256] @ torch.randn(256, CLASSES, device=DEV, generator=g)).argmax(-1)
    return model, opt, xs, ys


def train_step(model, opt, x, y, micro, loss_sum):
    """One optimizer step over x, as `micro` micro-batches (gradient accumulation); adds the loss to loss_sum."""
    opt.zero_grad(set_to_none=True)
    n = x.shape[0] // micro
    for m in range(micro):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x[m * n:(m + 1) * n]), y[m * n:(m + 1) * n]) / micro
        loss.backward()
        loss_sum += loss.detach()
    opt.step()


def run(args, ceiling, micro):
    """Probe, place the memory limit (ceiling: 'fraction' or 'real'), train, print the final line."""
    args.warmup = max(args.warmup, 3)  # the probe, a first step per stream, then the pattern is established
    model, opt, xs, ys = build()
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    loss_sum = torch.zeros((), device=DEV)
    prev = torch.cuda.current_stream()

    def step(i, micro_):
        nonlocal prev
        s = streams[i % 2]
        s.wait_stream(prev)
        with torch.cuda.stream(s):
            train_step(model, opt, xs[i % NB], ys[i % NB], micro_, loss_sum)
        prev = s

    # Probe: the first warm-up step, full batch on stream 0, measures one step's working set W.
    torch.cuda.synchronize()
    base = torch.cuda.memory_reserved()
    torch.cuda.reset_peak_memory_stats()
    step(0, 1)
    torch.cuda.synchronize()
    w = torch.cuda.max_memory_reserved() - base
    torch.cuda.empty_cache()  # once, at setup
    reserved = torch.cuda.memory_reserved()
    free, total = torch.cuda.mem_get_info()
    limit = reserved + w * 3 // 2
    filler = None
    if ceiling == "fraction":
        torch.cuda.set_per_process_memory_fraction(limit / total)
    else:
        # Fill the device but 1.5 W (and 64 MiB of slack for page rounding) with one big tensor, shrinking it
        # until the driver accepts it.
        size = free - w * 3 // 2 - 64 * 2**20
        while filler is None and size > 0:
            try:
                filler = torch.empty(size, dtype=torch.uint8, device=DEV)
            except torch.OutOfMemoryError:
                size -= 256 * 2**20
        torch.cuda.synchronize()

    timer = StepTimer()
    for i in range(1, args.warmup + args.steps):
        if i == args.warmup:
            torch.cuda.current_stream().wait_stream(prev)
            loss_sum.zero_()
            timer.start()  # synchronizes: the zeroing is done before the next step starts
            torch.cuda.reset_accumulated_memory_stats()  # count retries in the steady steps only
        step(i, micro)
    torch.cuda.current_stream().wait_stream(prev)
    step_ms = timer.stop(args.steps)

    st = torch.cuda.memory_stats()
    free_after, _ = torch.cuda.mem_get_info()
    done(args.steps, mean_loss=loss_sum.item() / args.steps,
         num_alloc_retries=st.get("num_alloc_retries", -1), num_ooms=st.get("num_ooms", -1),
         num_sync_all_streams=st.get("num_sync_all_streams", -1), num_device_alloc=st.get("num_device_alloc", -1),
         num_device_free=st.get("num_device_free", -1),
         step_working_set_gib=round(w / GIB, 3), limit_gib=round(limit / GIB, 3),
         filler_gib=round((filler.numel() if filler is not None else 0) / GIB, 3),
         free_gib_at_end=round(free_after / GIB, 3), step_ms=step_ms)
