"""train_small.py - a small, deterministic PyTorch training loop: the baseline the other samples differ from.

A 3-layer MLP classifier on synthetic data made on the GPU, trained with AdamW for 30 steps. Each step is an
NVTX range named "step<N>" (so `cuscope report --step-range 'step*'` finds the steps), the loss stays on the GPU
during training and is read once at the end. With --sync-every-step it reads the loss with .item() in every step
instead: the per-step device-to-host copy and host wait that training guides warn about.

    python3 train_small.py [--steps 30] [--sync-every-step]
    cuscope record -o train_small.db -- python3 train_small.py

Prints the steps run and the final loss (the same on every run: fixed seeds, deterministic algorithms), and as
its last line what a trace of it must hold (`expect ...`, checked by tests/gpu/check_trace.py).
"""
import argparse
import os

# cuBLAS is deterministic only with a fixed workspace configuration; it must be set before CUDA starts.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--steps", type=int, default=30)
p.add_argument("--batch", type=int, default=256)
p.add_argument("--sync-every-step", action="store_true", help="read the loss with .item() in every step")
a = p.parse_args()

torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
dev = torch.device("cuda")
D_IN, D_HID, CLASSES = 256, 1024, 10

model = nn.Sequential(nn.Linear(D_IN, D_HID), nn.GELU(), nn.Linear(D_HID, D_HID), nn.GELU(),
                      nn.Linear(D_HID, CLASSES)).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)

# Synthetic data made on the GPU: labels come from a fixed random projection, so the loss goes down.
g = torch.Generator(device=dev).manual_seed(1)
x_all = torch.randn(a.steps, a.batch, D_IN, device=dev, generator=g)
w_true = torch.randn(D_IN, CLASSES, device=dev, generator=g)
y_all = (x_all @ w_true).argmax(dim=-1)

loss = None
for i in range(a.steps):
    torch.cuda.nvtx.range_push(f"step{i}")
    logits = model(x_all[i])
    loss = F.cross_entropy(logits, y_all[i])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if a.sync_every_step:
        loss.item()
    torch.cuda.nvtx.range_pop()

print(f"steps={a.steps}")
print(f"final_loss={loss.item():.4f}")
# The loss is read once at the end, or in every step too; each read is one device-to-host copy and one wait.
reads = a.steps + 1 if a.sync_every_step else 1
# Recorded with --capture=nvtx:step1* (scope nvtxcap): only the ranges step1, step10, step11, ... and what
# they launched; the final read is outside them. Recorded with --size-limit 64K (scope sizecap): records lost.
cap = sum(1 for i in range(a.steps) if str(i).startswith("1"))
print(f"expect nvtx_text.step={a.steps} nvtx_open=0 kernels_in_nvtx.step>={10 * a.steps} memcpy_dtoh={reads} "
      f"host_waits_stream>={reads} processes_cuda=1 exit_code=0 "
      f"nvtxcap:nvtx_text.step={cap} nvtxcap:kernels_in_nvtx.step1>={10 * cap} "
      f"nvtxcap:memcpy_dtoh={reads - 1} sizecap:dropped>=1")
