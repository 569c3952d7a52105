"""pt_moe_nonzero.py - mixture-of-experts routing with nonzero(): 8 hidden syncs per step, CUB select kernels.

8 experts (MLP 1024-4096-1024) over 16384 tokens; the router's argmax assigns tokens, and each expert gathers
its tokens with `(assign == e).nonzero()`: the size of the result is read back (DtoH + stream synchronize)
before the gather can be launched, 8 times per forward pass. nonzero runs CUB select kernels whose template
arguments mention ScanTileState; no prefix sum of the program's data is computed. Labels: d2h-sync must be
found; cuda-core-scan must not.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, done, info, need_torch, parse_args  # noqa: E402

args = parse_args(__doc__)
torch = need_torch()
nn = torch.nn
E, D, H, T = 8, 1024, 4096, 16384
router = nn.Linear(D, E).cuda()
experts = nn.ModuleList(nn.Sequential(nn.Linear(D, H), nn.GELU(), nn.Linear(H, D)) for _ in range(E)).cuda()
opt = torch.optim.AdamW(list(router.parameters()) + list(experts.parameters()), lr=1e-4, fused=True)
g = torch.Generator(device="cuda").manual_seed(1)
xs = torch.randn(2, T, D, device="cuda", generator=g)
timer = Timer(torch)
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        timer.start()
    x = xs[i % 2]
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = router(x)
        assign = logits.argmax(-1)
        gate = torch.softmax(logits.float(), -1)
        out = torch.zeros_like(x)
        for e in range(E):
            idx = (assign == e).nonzero().squeeze(1)  # the count goes to the host
            y = experts[e](x[idx]) * gate[idx, e:e + 1]
            out = out.index_add(0, idx, y.float())
    loss = (out - x).pow(2).mean()
    loss.backward()
    opt.step()
step_ms = timer.stop(args.steps)
info(f"step_ms={step_ms:.3f} loss={loss.item():.4f}")
done(args.steps)
