"""pt_clean_pipeline.py - negative: the input pipeline and the step written the way the guides ask.

A DataLoader with 4 worker processes and pinned memory (batches of 2048 x 1024 made in the workers), copies with
non_blocking=True from the pinned batches, a 6-layer bf16 MLP of width 4096, fused AdamW, zero_grad with
set_to_none, losses kept on the GPU and read once after the loop. The GPU is busy nearly all the step.
Labels: nothing of the issue's rules: d2h-sync, sync-call, empty-cache-in-loop, memory-ceiling-thrash,
cuda-core-scan, zero-grad-memset, unfused-optimizer, host-created-tensor, pageable-memcpy, no-tensor-cores,
dataloader-stall, unfused-elementwise, allocator-churn, low-utilization must not.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, done, info, mlp, need_torch, parse_args  # noqa: E402


def main():
    args = parse_args(__doc__, steps=30)
    torch = need_torch()

    class Batches(torch.utils.data.Dataset):
        def __len__(self):
            return args.warmup + args.steps

        def __getitem__(self, i):
            gen = torch.Generator().manual_seed(i)
            return torch.randn(2048, 1024, generator=gen), torch.randn(2048, 1, generator=gen)

    loader = torch.utils.data.DataLoader(Batches(), batch_size=None, num_workers=4, pin_memory=True,
                                         prefetch_factor=4, persistent_workers=False)
    model = mlp(torch, 4096, 6, out=1)
    inp = torch.nn.Linear(1024, 4096).cuda()
    opt = torch.optim.AdamW(list(model.parameters()) + list(inp.parameters()), lr=1e-4, fused=True)
    losses = []
    t = Timer(torch)
    for i, (xb, yb) in enumerate(loader):
        if i == args.warmup:
            t.start()
        xb = xb.cuda(non_blocking=True)
        yb = yb.cuda(non_blocking=True)
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(inp(xb).repeat(4, 1))
        loss = torch.nn.functional.mse_loss(out.float().view(4, -1, 1).mean(0), yb)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    info(f"step_ms={t.stop(args.steps):.3f}")
    done(args.steps, mean_loss=float(torch.stack(losses).mean()))


if __name__ == "__main__":
    main()
