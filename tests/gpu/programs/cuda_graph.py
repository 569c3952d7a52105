"""cuda_graph.py - torch.cuda graphs: capture a forward pass once, replay it K times.

The trace must hold the kernels of every replay, each with its graph id and the host time of the
cudaGraphLaunch that ran it; every replay runs the same kernels.

    python3 cuda_graph.py [--replays 5]
"""
import argparse

from common import expect, torch_cuda

torch = torch_cuda()
import torch.nn as nn  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--replays", type=int, default=5)
a = p.parse_args()

torch.manual_seed(0)
dev = torch.device("cuda")
model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 16)).to(dev)
model.eval()
static_x = torch.randn(32, 256, device=dev)
inputs = [torch.randn(32, 256, device=dev) for _ in range(a.replays)]

with torch.no_grad():
    # Warm up on a side stream, as torch.cuda.graphs asks, then capture.
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            model(static_x)
    torch.cuda.current_stream().wait_stream(s)

    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_y = model(static_x)

    sums = []
    for i in range(a.replays):
        torch.cuda.nvtx.range_push(f"replay{i}")
        static_x.copy_(inputs[i])
        g.replay()
        sums.append(static_y.sum())
        torch.cuda.nvtx.range_pop()
    total = torch.stack(sums).sum().item()

print(f"replays={a.replays} checksum={total:.3f}")
k = a.replays
expect(f"graph_launches={k}", "graphs=1", "graph_launch_sizes_equal=1", f"kernels_graph>={3 * k}",
       f"nvtx_text.replay={k}", "processes_cuda=1", "exit_code=0")
