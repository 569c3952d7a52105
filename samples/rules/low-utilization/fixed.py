"""low-utilization/fixed.py - bad.py with both causes removed: worker processes, and no read-back per step.

Model, dataset and steps of bad.py; the DataLoader of dataloader-stall/fixed.py (`num_workers=4`,
`prefetch_factor=4`, `pin_memory=True`, `persistent_workers=True`), and the loss accumulated on the GPU and
read once after the steps. The host launches the steps ahead of the GPU, which runs them back to back.

Seen at the CUDA level, per steady step: one pinned HtoD copy and the step's kernels queued ahead, no host
wait, no idle at step start; the GPU is busy nearly all of the step. An analyzer should report nothing for
low-utilization (nor dataloader-stall or d2h-sync).

    python3 fixed.py [--steps 40] [--warmup 5]
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(here), "dataloader-stall"))
sys.path.insert(0, os.path.dirname(here))
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
