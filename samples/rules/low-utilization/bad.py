"""low-utilization/bad.py - two causes of idle in one loop: batches decoded in the training process, and the
loss read back after every step.

The GPT and dataset of the dataloader-stall samples (../dataloader-stall/stall_common.py: about 21 ms of GPU
work per step; tens of milliseconds of CPU decoding per batch) with the DataLoader defaults (`num_workers=0`,
`pin_memory=False`) and `loss.item()` after every step, as a progress print would do. Each step the GPU waits
for the host twice: for the batch at the start of the step (no CUDA call meanwhile), and, after the optimizer
step, the `.item()` wait drains the queue so that the next step's work is launched only once the GPU is idle.
The GPU is busy well under half of the step.

Seen at the CUDA level, per steady step: a long GPU idle gap at the step start with no CUDA call from the
training thread, then the batch's HtoD copy and the step's kernels; at the end a 4-byte DtoH copy and a
stream synchronize. An analyzer should report low-utilization in every steady step, naming the idle at step
start (dataloader-stall) as its largest cause; dataloader-stall reports on its own, and d2h-sync may (its
idle after the read is short next to the stall, since the host goes on to decode the next batch anyway).

    python3 bad.py [--steps 40] [--warmup 5]
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
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=False)  # num_workers=0
    train(loader, model, opt, a.steps, a.warmup, read_loss=True, num_workers=0)


if __name__ == "__main__":
    main()
