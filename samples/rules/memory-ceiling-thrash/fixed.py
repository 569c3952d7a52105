"""memory-ceiling-thrash/fixed.py - the loop of the bad_*.py samples with a peak that fits under the same limit.

Same model, data, streams and limit as bad_fraction.py (default), bad_real.py (--ceiling real) or
bad_expandable.py (--ceiling real --expandable): the limit is sized from the same full-batch probe step. The
fix is the one the guides give for a working set at the limit: gradient accumulation over 2 micro-batches of
16384 tokens, the same 32768 tokens per optimizer step. A micro-batch needs about half the activations, so the
caches of both streams fit under the limit: once each stream has run one step, the allocator neither releases
nor allocates device memory.

Seen at the CUDA level: no failed allocation, no release burst and no allocation in the steady steps; reserved
memory flat below the limit. An analyzer should report nothing. The final line's `num_alloc_retries` and
`num_ooms` (steady steps only) are expected to be 0.

    python3 fixed.py [--steps 40] [--warmup 5] [--ceiling fraction|real] [--expandable]
"""
import os
import sys

if "--expandable" in sys.argv[1:]:
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    if "expandable_segments" not in conf:
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = ",".join(x for x in (conf, "expandable_segments:True") if x)

import ceiling_common  # noqa: E402  (imports torch: after the allocator configuration is set)
from rules_common import parse_args  # noqa: E402


def extra(p):
    p.add_argument("--ceiling", choices=("fraction", "real"), default="fraction",
                   help="fraction: set_per_process_memory_fraction (default); real: fill the device")
    p.add_argument("--expandable", action="store_true", help="PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")


args = parse_args(__doc__, extra=extra)
ceiling_common.run(args, ceiling=args.ceiling, micro=2)
