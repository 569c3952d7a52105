"""memory-ceiling-thrash/bad_expandable.py - bad_real.py with PyTorch's expandable segments.

Sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True before torch is imported, then runs the loop of
bad_real.py: the device filled but 1.5 times one step's working set, steps alternating between two streams.
With expandable segments the allocator maps physical memory (cuMemCreate + cuMemMap + cuMemSetAccess, in
20 MiB pages) into one growing virtual segment per stream instead of calling cudaMalloc. In every step mapping
more pages for the current stream fails (cuMemCreate: out of memory), the allocator synchronizes, unmaps and
releases the free pages of the other stream's segment (cuMemUnmap + cuMemRelease) and retries.

Seen at the CUDA level, per steady step: one failed cuMemCreate, a burst of cuMemUnmap/cuMemRelease (about the
previous step's working set, in 20 MiB pages) with the GPU idle, then cuMemCreate/cuMemMap of about the same
bytes. Setting up the filler maps about 130 GiB in 20 MiB pages (several thousand VMM calls) before training.
An analyzer should report memory-ceiling-thrash in every steady step, citing the failed cuMemCreate.

The final line prints `num_alloc_retries` and `num_sync_all_streams` (expected: one per steady step) and
`num_ooms` (expected: 0).

    python3 bad_expandable.py [--steps 40] [--warmup 5]
"""
import os

conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
if "expandable_segments" not in conf:
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = ",".join(x for x in (conf, "expandable_segments:True") if x)

import ceiling_common  # noqa: E402  (imports torch: after the allocator configuration is set)
from rules_common import parse_args  # noqa: E402

args = parse_args(__doc__)
ceiling_common.run(args, ceiling="real", micro=1)
