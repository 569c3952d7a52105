"""dataloader-stall/negative_epoch_boundary.py - a good loader that stalls once, when a new epoch starts.

Model and dataset of bad.py; the DataLoader of fixed.py (num_workers=4, prefetch_factor=4, pin_memory=True)
but with the default `persistent_workers=False` and a dataset of 24 batches, so that the 45 steps are two
epochs. Within an epoch the workers keep batches ready; at the start of the second epoch (step 24, a steady
step) `iter(loader)` shuts the old workers down and starts four new ones, and the first batch of the epoch
takes their start-up plus one batch's decoding (a fraction of a second to seconds, depending on the
multiprocessing start method). The GPU idles once, at that step, and never again.

Seen at the CUDA level: one long GPU idle gap without CUDA calls from the training thread, at the start of
one steady step of 40; the other steps as fixed.py. An analyzer should not report dataloader-stall as a
per-step pattern (one stall per epoch; in a real run of thousands of steps per epoch it is a negligible
share); at most an info finding that names the one step, its cost and `persistent_workers=True`.

    python3 negative_epoch_boundary.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402

from rules_common import parse_args  # noqa: E402
from stall_common import BATCH, TextDataset, build, train  # noqa: E402

EPOCH_BATCHES = 24


def main():
    a = parse_args(__doc__)
    model, opt = build()
    data = TextDataset(EPOCH_BATCHES * BATCH)
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=False, num_workers=4,
                                         prefetch_factor=4, pin_memory=True)  # persistent_workers=False
    train(loader, model, opt, a.steps, a.warmup, num_workers=4)


if __name__ == "__main__":
    main()
