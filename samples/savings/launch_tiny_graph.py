"""launch_tiny_graph.py - hundreds of tiny kernels launched one by one vs the same step replayed as a CUDA graph (launch-starvation).

Model: tiny_net(16) (LayerNorm/Linear(256)/GELU residual blocks, batch 64, fp32), AdamW with capturable=True
(its step count on the device, so that a graph can hold it): about 200 kernels per step, each running a few
microseconds, less than the host needs to launch it from Python.

bad:   the eager step. CUDA level: ~200 cudaLaunchKernel calls per step; each kernel starts only once the host
       has launched it, the GPU idles between them (busy well under half the step); no wait, no copy.
fixed: the same step (forward, backward, AdamW, loss sum) captured once into a torch.cuda.CUDAGraph after
       eager warm-up steps on a side stream; each step copies its batch into the graph's static inputs (two
       device-to-device copies) and calls replay(): one cudaGraphLaunch, the kernels back to back on the GPU.

Expected saving: large (the step becomes the GPU time of its kernels).

    python3 launch_tiny_graph.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from savings_common import DEV, adamw, class_data, main, tiny_net  # noqa: E402

NB = 8


class Eager:
    def __init__(self):
        self.model = tiny_net(16)
        self.opt = adamw(self.model.parameters(), "foreach", capturable=True)
        self.xs, self.ys = class_data(NB, 64, 256, 10)
        self.loss_sum = torch.zeros((), device=DEV)

    def train(self, x, y):
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        self.opt.step()
        self.loss_sum.add_(loss.detach())

    def step(self, i):
        self.opt.zero_grad(set_to_none=True)
        self.train(self.xs[i % NB], self.ys[i % NB])

    def end(self):
        return {"loss_sum": self.loss_sum.item()}


class Graphed(Eager):
    def __init__(self):
        super().__init__()
        self.sx, self.sy = self.xs[0].clone(), self.ys[0].clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # eager warm-up (lazy init, optimizer state), as graph capture requires
            for i in range(3):
                self.opt.zero_grad(set_to_none=True)
                self.train(self.sx, self.sy)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        self.opt.zero_grad(set_to_none=True)  # the captured backward allocates the gradients from the graph pool
        with torch.cuda.graph(self.graph, capture_error_mode="thread_local"):
            self.train(self.sx, self.sy)

    def step(self, i):
        self.sx.copy_(self.xs[i % NB])
        self.sy.copy_(self.ys[i % NB])
        self.graph.replay()  # forward, backward, AdamW, loss sum; gradients overwritten in place


main(__doc__, lambda variant, a: Eager() if variant == "bad" else Graphed())
