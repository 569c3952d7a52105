"""dataloader_workers.py - a DataLoader decoding batches in the training process vs in worker processes (dataloader-stall).

The dataset keeps 64 compressed records (zlib, 32 KiB of bytes each) and, per item, does what an input
pipeline does on the CPU: it decompresses one record and turns its bytes into a 64 x 512 float32 feature
array (tenths of a millisecond per item, tens of milliseconds per batch of 128 items in one process).
Model: wide_mlp(4, 4096) with 512 inputs on the 128 x 64 = 8192 rows of a batch, bf16 autocast, fused AdamW:
milliseconds of GPU work per step.

bad:   `DataLoader(num_workers=0)`: the training thread decodes and collates each batch itself, then copies it
       with a blocking `.cuda()` from pageable memory. CUDA level: at the start of every step a stretch of
       milliseconds with no CUDA call from the training thread (the GPU idle), then a 16 MiB pageable
       host-to-device copy, then the step's kernels.
fixed: `DataLoader(num_workers=8, pin_memory=True, prefetch_factor=4)`: worker processes decode ahead, the
       batches arrive pinned and go to the device with `non_blocking=True`; the GPU runs step after step.

Expected saving: large (the decoding is longer than the GPU step). The loader's iterator is made anew at the
start of every block (the workers start in the warm-up steps and stop at the end of the block), so the bad
block never competes with idle workers.

    python3 dataloader_workers.py bad|fixed|ab [--steps 30] [--rounds 5]
"""
import os
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from savings_common import CUDA, Trainer, adamw, autocast, main, size, wide_mlp  # noqa: E402

ROWS, FEAT, ITEMS, RECORDS = 64, 512, size(128, 8), 64
WIDTH = size(4096, 64)


class Records(torch.utils.data.Dataset):
    """Item i: record i % 64 decompressed and turned into [64, 512] features, and its class."""

    def __init__(self, length):
        rng = np.random.default_rng(1)
        self.length = length
        self.blobs = []
        for _ in range(RECORDS):
            raw = rng.integers(0, 256, size=ROWS * FEAT, dtype=np.uint8)
            raw[rng.random(raw.size) < 0.5] = 0  # some redundancy, as real records have
            self.blobs.append(zlib.compress(raw.tobytes(), 6))

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        raw = np.frombuffer(zlib.decompress(self.blobs[i % RECORDS]), dtype=np.uint8)
        x = raw.reshape(ROWS, FEAT).astype(np.float32) * (1.0 / 255.0) - 0.25
        return torch.from_numpy(x), int(raw[:8].sum() % 1024)


class Pair(Trainer):
    def __init__(self, variant):
        model = wide_mlp(4, WIDTH, d_in=FEAT)
        super().__init__(model, adamw(model.parameters(), "fused"), None, None, bf16=True)
        self.variant = variant
        ds = Records(ITEMS * 10000)
        if variant == "bad":
            self.loader = torch.utils.data.DataLoader(ds, batch_size=ITEMS, num_workers=0)
        else:
            self.loader = torch.utils.data.DataLoader(ds, batch_size=ITEMS, num_workers=8, pin_memory=CUDA,
                                                      prefetch_factor=4)
        self.it = None

    def begin(self):
        self.it = iter(self.loader)  # a new epoch per block: the workers start here, in the warm-up

    def loss(self, i):
        x, y = next(self.it)
        if CUDA:
            nb = self.variant == "fixed"
            x, y = x.cuda(non_blocking=nb), y.cuda(non_blocking=nb)
        y = y.repeat_interleave(ROWS)  # every row of an item has the item's class
        with autocast():
            return F.cross_entropy(self.model(x.view(-1, FEAT)), y)

    def end(self):
        self.it = None  # shuts the workers down
        return {"loss_sum": self.loss_sum.item()}


if __name__ == "__main__":  # workers started by spawn or forkserver import this module
    main(__doc__, lambda variant, a: Pair(variant))
