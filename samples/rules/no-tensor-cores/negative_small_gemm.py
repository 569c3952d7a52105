"""no-tensor-cores/negative_small_gemm.py - float32 GEMMs with TF32 off that are a tiny share of the step.

A linear probe on images preprocessed on the GPU: per step a batch of 64 uint8 images of 3 x 1024 x 1024 is
converted to float32, resized to 512 x 512 with antialiased bilinear interpolation, and average-pooled to
3 x 16 x 16 features; a float32 linear classifier (768 -> 10, TF32 off, precision "highest") is trained on them
with fused AdamW. The classifier's small GEMMs (forward and weight gradient) run on the CUDA cores (FP32 SIMT
kernels), but take a few microseconds of a step that the image work keeps busy for milliseconds.

Seen at the CUDA level, per steady step: 2 or 3 small FP32 GEMM launches (sgemm/simt/gemv kernels, well under
1% of the GPU time), next to the conversion, upsample_bilinear2d_aa and pooling kernels that take the rest. An
analyzer should not report no-tensor-cores: the float32 GEMM time is not a real share of the step.

    python3 negative_small_gemm.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, StepTimer, done, parse_args  # noqa: E402

a = parse_args(__doc__)
torch.backends.cuda.matmul.allow_tf32 = False
torch.set_float32_matmul_precision("highest")
BATCH, SIDE, NB, CLASSES = 64, 1024, 2, 10

g = torch.Generator(device=DEV).manual_seed(1)
images = torch.randint(0, 256, (NB, BATCH, 3, SIDE, SIDE), dtype=torch.uint8, device=DEV, generator=g)
labels = torch.randint(0, CLASSES, (NB, BATCH), device=DEV, generator=g)
mean = torch.tensor([0.485, 0.456, 0.406], device=DEV).view(1, 3, 1, 1) * 255
probe = nn.Linear(3 * 16 * 16, CLASSES).to(DEV)
opt = torch.optim.AdamW(probe.parameters(), lr=1e-3, fused=True)


def features(img):
    x = img.float()
    x = F.interpolate(x, size=(512, 512), mode="bilinear", antialias=True, align_corners=False)
    x = F.adaptive_avg_pool2d(x, 16) - mean
    return x.flatten(1) / 64.0


loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
    with torch.no_grad():
        f = features(images[i % NB])
    loss = F.cross_entropy(probe(f), labels[i % NB])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    loss_sum += loss.detach()
step_ms = timer.stop(a.steps)
done(a.steps, mean_loss=loss_sum.item() / a.steps, step_ms=step_ms)
