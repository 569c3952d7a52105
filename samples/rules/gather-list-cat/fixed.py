"""gather-list-cat/fixed.py - the same training, gathering the hidden states with all_gather_into_tensor.

Same model, data, steps and statistics as bad.py (`torchrun --nproc-per-node 2 fixed.py`); the hidden states
of every rank are gathered into one preallocated tensor with `dist.all_gather_into_tensor` (the guide's
`_all_gather_base`): no list, no copy-out, no cat. Seen at the CUDA level: the all-gather kernel alone. An
analyzer should report no gather-list-cat.

    torchrun --nproc-per-node 2 fixed.py [--steps 40] [--warmup 5]
"""
import os
import runpy
import sys

sys.argv.append("--into-tensor")
runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "bad.py"), run_name="__main__")
