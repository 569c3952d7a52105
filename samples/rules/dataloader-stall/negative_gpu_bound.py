"""dataloader-stall/negative_gpu_bound.py - the loader of bad.py feeding a model that needs longer than it.

The same DataLoader as bad.py (num_workers=0, pin_memory=False: the training process decodes each batch, a
few tens of milliseconds) and the same GPT twice as wide and 6 layers deep (d2048): about 100 ms of GPU work
per step against a few milliseconds for its few hundred launches, all of which fit in the launch queue. The host launches a step, decodes the next batch while the GPU still runs the queued
step, and launches again long before the GPU runs out of work: the decoding is hidden behind the GPU.

Seen at the CUDA level, per steady step: stretches of tens of milliseconds in which the training thread makes
no CUDA call (the decoding), but no GPU idle at step start: the next step's copy and kernels are queued while
the previous step still runs. An analyzer should not report dataloader-stall (the host is slow to build the
batch, but it costs no GPU time).

    python3 negative_gpu_bound.py [--steps 40] [--warmup 5]
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
    model, opt = build(d=2048, layers=6)
    data = TextDataset((a.warmup + a.steps) * BATCH)
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=False)  # as bad.py
    train(loader, model, opt, a.steps, a.warmup, num_workers=0, width=2048, layers=6)


if __name__ == "__main__":
    main()
