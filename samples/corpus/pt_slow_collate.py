"""pt_slow_collate.py - a DataLoader without workers whose per-sample transform runs in the training thread.

A map-style dataset whose `__getitem__` builds each sample with NumPy (a 1024-point signal, normalized,
windowed and its spectrum's magnitude taken: about 40 us a sample), DataLoader(batch_size=256, num_workers=0):
every step the training thread spends ~10 ms making the batch, calling nothing on the GPU, then copies it
(pinned, non_blocking) and runs a ~3 ms bf16 MLP step. The GPU idles at the start of each step while the host
prepares the input.
Labels: dataloader-stall and low-utilization (must); d2h-sync, sync-call, empty-cache-in-loop,
memory-ceiling-thrash, cuda-core-scan, zero-grad-memset, unfused-optimizer, host-created-tensor, no-tensor-cores
must not.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, done, info, mlp, need_torch, parse_args  # noqa: E402

args = parse_args(__doc__, steps=30)
torch = need_torch()
import numpy as np  # noqa: E402


class Signals(torch.utils.data.Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        s = rng.standard_normal(1024).astype(np.float32)
        s = (s - s.mean()) / (s.std() + 1e-6)
        s = s * np.hanning(1024).astype(np.float32)
        f = np.abs(np.fft.rfft(s))[:512].astype(np.float32)
        return torch.from_numpy(np.concatenate([s[:512], f])), np.float32(f.mean())


loader = torch.utils.data.DataLoader(Signals(256 * (args.warmup + args.steps)), batch_size=256,
                                     num_workers=0, pin_memory=True)
model = mlp(torch, 1024, 6, out=1)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
t = Timer(torch)
for i, (xb, yb) in enumerate(loader):
    if i == args.warmup:
        t.start()
    xb = xb.cuda(non_blocking=True)
    yb = yb.cuda(non_blocking=True)
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = model(xb.repeat(16, 1))
    loss = torch.nn.functional.mse_loss(out.float().view(16, -1).mean(0), yb)
    loss.backward()
    opt.step()
info(f"step_ms={t.stop(args.steps):.3f}")
done(args.steps)
