"""pt_graph_item.py - a whole training step in one CUDA graph, then loss.item() after every replay.

A small model (24 residual blocks of width 512, batch 256) captured with its backward and a capturable AdamW
in one CUDA graph: each step is one cudaGraphLaunch whose kernels run back to back. After each replay the loop
reads the loss with `.item()` and does ~0.5 ms of host-side bookkeeping before the next replay, so the GPU
idles after every step. The kernels' launch time is the graph launch. Labels: d2h-sync must be found.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, done, info, need_torch, parse_args, spin  # noqa: E402

args = parse_args(__doc__)
torch = need_torch()
nn = torch.nn
blocks = nn.ModuleList(nn.Sequential(nn.LayerNorm(512), nn.Linear(512, 512), nn.GELU()) for _ in range(24)).cuda()
opt = torch.optim.AdamW(blocks.parameters(), lr=1e-4, capturable=True)
g = torch.Generator(device="cuda").manual_seed(1)
data = torch.randn(4, 256, 512, device="cuda", generator=g)
static_x = torch.zeros(256, 512, device="cuda")


def train_step():
    h = static_x
    for b in blocks:
        h = h + b(h)
    loss = (h - static_x).pow(2).mean()
    loss.backward()
    opt.step()
    return loss


side = torch.cuda.Stream()  # warm up on a side stream before capture, as capture requires
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(3):
        opt.zero_grad(set_to_none=True)
        train_step()
torch.cuda.current_stream().wait_stream(side)
opt.zero_grad(set_to_none=True)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    static_loss = train_step()

timer = Timer(torch)
seen = []
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        timer.start()
    static_x.copy_(data[i % 4])
    graph.replay()
    seen.append(static_loss.item())  # waits for the whole graph
    spin(0.0005)  # bookkeeping on the host (averages, checks)
step_ms = timer.stop(args.steps)
info(f"step_ms={step_ms:.3f} last={seen[-1]:.5f}")
done(args.steps, reads=len(seen))
