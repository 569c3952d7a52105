"""launch_lines.py - kernels launched from known lines, for the launch sites of `cuscope record`.

Each step launches a prefix sum (CUMSUM_LINE), an in-place multiply (MUL_LINE) and a matrix product
(MM_LINE) from this file's main thread, through two helper functions so that the same kernel is also
reached from two lines (the multiply from MUL_LINE and MUL2_LINE), then runs a backward pass (BACKWARD_LINE)
whose kernels autograd's engine thread launches. The lines are printed so that
tests/gpu/check_launch_lines.py can compare every launch's stack with them.
"""
from common import info, torch_cuda

torch = torch_cuda()


def scan(x):
    return torch.cumsum(x, dim=1)  # CUMSUM_LINE


def scale(x):
    x.mul_(1.0001)  # MUL_LINE
    return x


def scale_again(x):
    x.mul_(0.9999)  # MUL2_LINE
    return x


src = open(__file__).read().splitlines()
lines = {tag: next(i + 1 for i, s in enumerate(src) if s.rstrip().endswith("# " + tag))
         for tag in ("CUMSUM_LINE", "MUL_LINE", "MUL2_LINE", "MM_LINE", "BACKWARD_LINE")}

x = torch.randn(256, 4096, device="cuda")
w = torch.randn(4096, 256, device="cuda", requires_grad=True)
steps = 50
for i in range(steps):
    y = scan(x)
    scale(y)
    scale_again(y)
    z = y @ w  # MM_LINE
    z.square().sum().backward()  # BACKWARD_LINE
torch.cuda.synchronize()
info("steps=%d " % steps + " ".join(f"{k.lower()}={v}" for k, v in lines.items()))
