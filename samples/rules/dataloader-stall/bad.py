"""dataloader-stall/bad.py - the batches are decoded in the training process: the GPU waits for each one.

The GPT of clean.py (about 21 ms of GPU work per step) fed by a torch.utils.data.DataLoader with the defaults
`num_workers=0` and `pin_memory=False` over a dataset that decodes, tokenizes and augments every item on the
CPU (stall_common.py: about a millisecond per item, a few tens of milliseconds per batch of 32). The training
process itself builds each batch when it asks for it: while it does, it makes no CUDA call, the GPU finishes
the little work queued ahead (the previous step) and then idles until the batch is copied and the next step's
kernels are launched.

Seen at the CUDA level, per steady step: a GPU idle gap at the start of the step, tens of milliseconds long,
during which the training thread makes no CUDA call at all; it ends with the HtoD copy of the batch (128 KiB,
pageable) and the step's kernels. An analyzer should report dataloader-stall in every steady step, with about
the fetch time minus the GPU time per step as the idle at step start; not d2h-sync or sync-call (no wait), not
pageable-memcpy (a 128 KiB copy takes microseconds).

    python3 bad.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402

from rules_common import parse_args  # noqa: E402
from stall_common import BATCH, TextDataset, build, train  # noqa: E402


def main():
    a = parse_args(__doc__)
    model, opt = build()
    data = TextDataset((a.warmup + a.steps) * BATCH)
    # the defaults: num_workers=0 (batches built in this process, on demand), pin_memory=False
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=False)
    train(loader, model, opt, a.steps, a.warmup, num_workers=0)


if __name__ == "__main__":
    main()
