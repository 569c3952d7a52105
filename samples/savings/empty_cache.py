"""empty_cache.py - torch.cuda.empty_cache() after every optimizer step (empty-cache-in-loop; measured in separate runs).

Model: wide_mlp(4, 4096), batch 8192, bf16 autocast, fused AdamW (savings_common.gpu_parts): about a GiB of
activations, gradients and temporaries allocated and freed by the caching allocator in every step.

bad:   `torch.cuda.empty_cache()` after each optimizer step. CUDA level: the cached segments that hold no live
       tensor are released, a burst of cudaFree calls (the first waits for the GPU to finish the step, so the
       queue drains); the next step's forward and backward passes then cudaMalloc the same segments again, each
       allocation a slow driver call that holds the host while the GPU idles.
fixed: no empty_cache() in the loop; after the first step every allocation is served from the cache.

Expected saving: moderate to large. Marked `separate` in pairs.json: the cache that one variant leaves behind
(emptied or full) would change the other's first steps, so measure.sh alternates separate processes.

    python3 empty_cache.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from savings_common import CUDA, Trainer, gpu_parts, main  # noqa: E402


class Pair(Trainer):
    def __init__(self, variant):
        super().__init__(*gpu_parts(), bf16=True)
        self.variant = variant

    def step(self, i):
        self.loss_sum += self.train(i).detach()
        if self.variant == "bad" and CUDA:
            torch.cuda.empty_cache()  # release the cached segments: cudaFree now, cudaMalloc in the next step


main(__doc__, lambda variant, a: Pair(variant))
