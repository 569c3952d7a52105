"""torch_eager.py - N training steps of a fixed MLP in eager PyTorch, with what a trace must hold.

Everything is made on the GPU (parameters, data), and the update is a hand-written SGD step, so that the only
copies are the ones the program asks for: one `.item()` per step, which is one device-to-host copy and one
stream synchronization. Each step is an NVTX range "eager_step<N>".

    python3 torch_eager.py [--steps 20]
"""
import argparse

from common import expect, torch_cuda

torch = torch_cuda()
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=20)
a = p.parse_args()

torch.manual_seed(0)
dev = torch.device("cuda")
model = nn.Sequential(nn.Linear(128, 256, device=dev), nn.ReLU(), nn.Linear(256, 256, device=dev), nn.ReLU(),
                      nn.Linear(256, 1, device=dev))
params = list(model.parameters())
x = torch.randn(64, 128, device=dev)
y = torch.randn(64, 1, device=dev)
lr = 0.01

losses = []
for i in range(a.steps):
    torch.cuda.nvtx.range_push(f"eager_step{i}")
    loss = F.mse_loss(model(x), y)
    loss.backward()
    with torch.no_grad():
        for prm in params:
            prm.add_(prm.grad, alpha=-lr)
            prm.grad = None
    losses.append(loss.item())  # one DtoH copy + one stream synchronization
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()  # one device synchronization

print(f"steps={a.steps} first_loss={losses[0]:.4f} last_loss={losses[-1]:.4f}")
n = a.steps
# Each step launches at least 10 kernels (3 forward GEMMs, activations, loss, backward GEMMs, 6 updates).
expect(f"memcpy_dtoh={n}", "memcpy_htod=0", f"host_waits_stream>={n}", f"host_waits>={n + 1}",
       f"nvtx_text.eager_step={n}", f"nvtx_ranges>={n}", "nvtx_open=0", f"kernels>={10 * n}",
       f"kernels_in_nvtx.eager_step>={10 * n}", "kernels_graph=0", "processes_cuda=1", "exit_code=0")
