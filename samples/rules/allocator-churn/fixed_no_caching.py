"""allocator-churn/fixed_no_caching.py - bad_no_caching.py with PyTorch's caching allocator on.

The model, data and steps of bad_no_caching.py (its `main`), with `PYTORCH_NO_CUDA_MEMORY_CACHING` removed
from the environment before torch is imported, as the fix is: unset the variable once the memory debugging is
over. The caching allocator takes its blocks from the driver in the first steps and serves every later
tensor from its cache; the host queues the kernels of a step well ahead of the GPU.

Seen at the CUDA level: cudaMalloc calls in the warm-up steps only, no cudaFree before the end, no allocator
call in the steady steps. An analyzer should report nothing for allocator-churn. The final line's `caching=1`
and a non-zero `reserved_mib` show that the cache was on.

    python3 fixed_no_caching.py [--steps 40] [--warmup 5]
"""
import os
import sys

# The fix: no PYTORCH_NO_CUDA_MEMORY_CACHING, even if the shell still has it.
os.environ.pop("PYTORCH_NO_CUDA_MEMORY_CACHING", None)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bad_no_caching import main  # noqa: E402

main(__doc__)
