"""dataloader-stall/fixed.py - the same batches built by 4 worker processes ahead of the GPU, pinned.

Model, dataset and steps of bad.py, with the DataLoader set up as the guides advise (001 5.4 and 6.1):
`num_workers=4` (four processes decode batches in parallel with the training), `prefetch_factor=4` (each
worker keeps up to four batches ready), `pin_memory=True` (batches land in pinned memory, so that the
`non_blocking=True` copy is truly asynchronous) and `persistent_workers=True` (the workers live across epochs).
Four workers build a batch every few milliseconds, faster than the GPU runs a step (about 21 ms), so a batch
is always ready when the training process asks for one; all steps are one epoch.

Seen at the CUDA level, per steady step: one pinned HtoD copy of the batch (128 KiB) and the step's kernels,
queued well ahead of the GPU; no idle at step start (the host waits in launch calls for a full queue, not
for data). The pin-memory thread of the training process allocates pinned memory (cudaHostAlloc) only while
the cache of pinned blocks grows, in the first steps. An analyzer should report nothing for dataloader-stall.

    python3 fixed.py [--steps 40] [--warmup 5]
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
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=False, num_workers=4,
                                         prefetch_factor=4, pin_memory=True, persistent_workers=True)
    train(loader, model, opt, a.steps, a.warmup, num_workers=4)


if __name__ == "__main__":
    main()
