"""no-tensor-cores/bad.py - float32 matmuls with TF32 off: the GEMMs run on the CUDA cores.

An MLP of four 4096-wide layers on batches of 8192 samples, trained in float32 with
`torch.backends.cuda.matmul.allow_tf32 = False` and `torch.set_float32_matmul_precision("highest")` (PyTorch's
default for matmuls): cuBLAS must compute every product in full float32, which on an H200 means FFMA
(SIMT) kernels at a few tens of TFLOP/s instead of the tensor cores' hundreds. The eleven GEMMs of a step
(4 forward, 4 weight gradients, 3 input gradients; 2 x 8192 x 4096 x 4096 flops each but the 1000-class
head's) take almost all of the step (guide 000 #13, 002 3.4, 001 9.1).

Seen at the CUDA level, per steady step: 11 GEMM launches whose names carry no tensor-core token (no MMA
shape like 1688/16816, no tensorop/gmma/wgmma, no h/bf16/tf32 type): `sgemm`/`simt` kernels (cuBLAS or
CUTLASS), each several milliseconds, together most of the step's GPU time. An analyzer should report
no-tensor-cores in every steady step; fixed.py runs the same model under bf16 autocast (or `--tf32`).

    python3 bad.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from rules_common import DEV, done, parse_args  # noqa: E402
from wide_mlp import run  # noqa: E402

a = parse_args(__doc__)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision("highest")

mean_loss, step_ms = run(a, DEV, autocast_dtype=None)
done(a.steps, mean_loss=mean_loss, step_ms=step_ms, precision="fp32")
