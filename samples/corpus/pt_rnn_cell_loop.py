"""pt_rnn_cell_loop.py - host-bound: a hand-written LSTM cell stepped over 64 time steps in Python.

Batch 32, hidden 256: each time step launches about ten tiny kernels (a few microseconds each), forward and
backward, so a training step is a couple of thousand launches that the GPU runs faster than Python issues
them. No sync inside the step. Labels: launch-starvation must be found; d2h-sync must not.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, done, info, need_torch, parse_args  # noqa: E402

args = parse_args(__doc__, steps=30)
torch = need_torch()
nn = torch.nn
B, T, I, H = 32, 64, 128, 256
wx = nn.Linear(I, 4 * H).cuda()
wh = nn.Linear(H, 4 * H, bias=False).cuda()
head = nn.Linear(H, 10).cuda()
params = list(wx.parameters()) + list(wh.parameters()) + list(head.parameters())
opt = torch.optim.SGD(params, lr=0.01)
g = torch.Generator(device="cuda").manual_seed(1)
xs = torch.randn(T, B, I, device="cuda", generator=g)
ys = torch.randint(0, 10, (B,), device="cuda", generator=g)
timer = Timer(torch)
for it in range(args.warmup + args.steps):
    if it == args.warmup:
        timer.start()
    opt.zero_grad(set_to_none=True)
    h = torch.zeros(B, H, device="cuda")
    c = torch.zeros(B, H, device="cuda")
    for t in range(T):
        gates = wx(xs[t]) + wh(h)
        i_, f_, g_, o_ = gates.chunk(4, 1)
        c = torch.sigmoid(f_) * c + torch.sigmoid(i_) * torch.tanh(g_)
        h = torch.sigmoid(o_) * torch.tanh(c)
    loss = nn.functional.cross_entropy(head(h), ys)
    loss.backward()
    opt.step()
step_ms = timer.stop(args.steps)
info(f"step_ms={step_ms:.3f} loss={loss.item():.4f}")
done(args.steps)
