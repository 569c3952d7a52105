"""pt_empty_cache_expandable.py - empty_cache() in every step with expandable segments.

PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (set before torch starts): the allocator maps 20 MiB pages
into reserved address ranges, and `torch.cuda.empty_cache()` after each optimizer step unmaps and releases
them (cuMemUnmap / cuMemRelease, no cudaFree), to be created and mapped again (cuMemCreate / cuMemMap) in the
next forward pass. Labels: empty-cache-in-loop must be found; memory-ceiling-thrash must not.
"""
import os
import sys

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, Trainer, done, info, need_torch, parse_args  # noqa: E402

args = parse_args(__doc__)
torch = need_torch()
tr = Trainer(torch, width=2048, depth=6, batch=8192)
timer = Timer(torch)
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        timer.start()
    tr.step()
    torch.cuda.empty_cache()
step_ms = timer.stop(args.steps)
info(f"step_ms={step_ms:.3f}")
done(args.steps)
