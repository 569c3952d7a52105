"""memory-ceiling-thrash/bad_real.py - a training loop whose working set sits at the device's real memory limit.

The loop of ceiling_common.py (4-block residual MLP, 32768 tokens per step, steps alternating between two CUDA
streams) after the program has filled the GPU with one large tensor, leaving free only 1.5 times one step's
working set (computed from torch.cuda.mem_get_info after a probe step). Each step fits, but not together with
the cache the previous step left on the other stream: in every step a cudaMalloc fails with
cudaErrorMemoryAllocation, the caching allocator synchronizes, cudaFree()s every entirely free cached segment
and retries the cudaMalloc, which then succeeds.

Seen at the CUDA level, per steady step: one failed cudaMalloc (out of memory), then a burst of cudaFree (tens
of segments, about the previous step's working set) with the GPU idle, then successful cudaMalloc calls for
about the same bytes; reserved memory climbs to the device limit and drops in every step. An analyzer should
report memory-ceiling-thrash in every steady step, citing the failed allocations.

The final line prints `num_alloc_retries` and `num_sync_all_streams` (expected: one per steady step) and
`num_ooms` (expected: 0). The filler takes nearly all of the GPU's 139 GiB for the whole run; device memory
that a profiler allocates later (CUPTI buffers) comes out of what is left.

    python3 bad_real.py [--steps 40] [--warmup 5]
"""
import ceiling_common  # noqa: F401  (imports torch and the shared sample helpers)
from rules_common import parse_args

args = parse_args(__doc__)
ceiling_common.run(args, ceiling="real", micro=1)
