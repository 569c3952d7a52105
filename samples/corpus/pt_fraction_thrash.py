"""pt_fraction_thrash.py - the working set at a memory cap: the allocator frees and retries in every step.

A residual MLP (width 2048, 24576 rows) whose steps alternate between two CUDA streams (a ping-pong loop).
The caching allocator keeps one cache per stream; a cap set with `set_per_process_memory_fraction` at 1.5x
one step's working set (measured by a probe step) lets one stream's cache fit but not both, so every step
finds its allocation refused by PyTorch (no CUDA call fails), synchronizes, frees the other stream's cache and
allocates it again. Labels: memory-ceiling-thrash must be found; empty-cache-in-loop must not (no
empty_cache call).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, done, info, mlp, need_torch, parse_args  # noqa: E402

args = parse_args(__doc__)
torch = need_torch()
F = torch.nn.functional
W, ROWS = 2048, 24576
blocks = [mlp(torch, W, 2) for _ in range(6)]
params = [p for b in blocks for p in b.parameters()]
opt = torch.optim.AdamW(params, lr=1e-4, fused=True)
for p in params:  # optimizer state now, on the default stream, apart from any activation
    p.grad = torch.zeros_like(p)
opt.step()
opt.zero_grad(set_to_none=True)
g = torch.Generator(device="cuda").manual_seed(1)
xs = torch.randn(2, ROWS, W, device="cuda", generator=g)
streams = [torch.cuda.Stream(), torch.cuda.Stream()]
prev = torch.cuda.current_stream()
loss_sum = torch.zeros((), device="cuda")


def step(i):
    global prev
    s = streams[i % 2]
    s.wait_stream(prev)
    with torch.cuda.stream(s):
        opt.zero_grad(set_to_none=True)
        x = xs[i % 2]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            h = x
            for b in blocks:
                h = h + b(h)
        loss = F.mse_loss(h.float(), x)
        loss.backward()
        opt.step()
        loss_sum.add_(loss.detach())
    prev = s


torch.cuda.synchronize()
base = torch.cuda.memory_reserved()
torch.cuda.reset_peak_memory_stats()
step(0)  # probe: one step's working set
torch.cuda.synchronize()
w = torch.cuda.max_memory_reserved() - base
torch.cuda.empty_cache()  # once, at setup
_, total = torch.cuda.mem_get_info()
limit = torch.cuda.memory_reserved() + w * 3 // 2
torch.cuda.set_per_process_memory_fraction(limit / total)
timer = Timer(torch)
warm = max(args.warmup, 3)
for i in range(1, warm + args.steps):
    if i == warm:
        torch.cuda.current_stream().wait_stream(prev)
        timer.start()
        torch.cuda.reset_accumulated_memory_stats()
    step(i)
torch.cuda.current_stream().wait_stream(prev)
step_ms = timer.stop(args.steps)
st = torch.cuda.memory_stats()
info(f"step_ms={step_ms:.3f} working_set_gib={w / 2**30:.3f} limit_gib={limit / 2**30:.3f}")
info(f"num_alloc_retries={st.get('num_alloc_retries', -1)} num_ooms={st.get('num_ooms', -1)}")
done(args.steps)
