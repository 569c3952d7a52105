"""memory-ceiling-thrash/bad_fraction.py - a training loop whose working set sits at PyTorch's memory cap.

The loop of ceiling_common.py (4-block residual MLP, 32768 tokens per step, steps alternating between two CUDA
streams) runs under `torch.cuda.set_per_process_memory_fraction`, placed at 1.5 times one step's working set
above what is already reserved: each step fits, but not together with the cache the previous step left on the
other stream. In every step an allocation is refused by PyTorch's own check (before any CUDA call), so the
caching allocator frees every cached segment it can (cudaFree, after a synchronize) and retries: guide 000 #10,
"memory use jumping up and down at the limit, a Stream Synchronize at every block release".

Seen at the CUDA level, per steady step: no failed CUDA call; a burst of cudaFree (MEMORY2 releases, tens of
segments, about the previous step's working set), the GPU idle while they run, then cudaMalloc of about the
same bytes during the rest of the step; reserved memory (running sum of allocations minus releases) climbs to
the cap and drops in every step. An analyzer should report memory-ceiling-thrash in every steady step.

The final line prints `num_alloc_retries` and `num_sync_all_streams` (expected: one per steady step) and
`num_ooms` (expected: 0) from
torch.cuda.memory_stats(), counted over the steady steps.

    python3 bad_fraction.py [--steps 40] [--warmup 5]
"""
import ceiling_common  # noqa: F401  (imports torch and the shared sample helpers)
from rules_common import parse_args

args = parse_args(__doc__)
ceiling_common.run(args, ceiling="fraction", micro=1)
