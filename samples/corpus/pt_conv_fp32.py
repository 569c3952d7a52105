"""pt_conv_fp32.py - a float32 convolutional network; with --no-tf32 cuDNN may not use the tensor cores.

Six 3x3 convolutions of 256 channels on 64 images of 56x56 (float32, no autocast), SGD with momentum (foreach).
PyTorch lets cuDNN compute float32 convolutions in TF32 by default (`torch.backends.cudnn.allow_tf32 = True`):
the convolutions run on the tensor cores. With `--no-tf32` (`torch.backends.cudnn.allow_tf32 = False`) every
convolution and its two gradients must be computed in full float32, on the CUDA cores, and they take most of
the step.
Labels: with --no-tf32 (pt_conv_fp32_no_tf32): no-tensor-cores must; without (pt_conv_fp32): no-tensor-cores
must not. Both: d2h-sync, sync-call, empty-cache-in-loop, memory-ceiling-thrash, cuda-core-scan,
zero-grad-memset, unfused-optimizer, host-created-tensor, pageable-memcpy must not.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import need_torch, parse_args, timed_loop  # noqa: E402

args = parse_args(__doc__, steps=30, extra=lambda p: p.add_argument("--no-tf32", action="store_true"))
torch = need_torch()
torch.backends.cudnn.allow_tf32 = not args.no_tf32
torch.backends.cudnn.benchmark = True
nn = torch.nn
blocks = []
for _ in range(6):
    blocks += [nn.Conv2d(256, 256, 3, padding=1, bias=False), nn.BatchNorm2d(256), nn.ReLU()]
model = nn.Sequential(*blocks, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, foreach=True)
g = torch.Generator(device="cuda").manual_seed(1)
x = torch.randn(64, 256, 56, 56, device="cuda", generator=g)
y = torch.randint(0, 10, (64,), device="cuda", generator=g)


def step(i):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()


timed_loop(torch, step, args, tf32=int(not args.no_tf32))
