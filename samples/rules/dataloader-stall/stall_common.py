"""stall_common.py - the dataset, model and training loop that the dataloader-stall samples share.

The dataset holds 64 compressed text documents (128 KiB of bytes each, zlib) and does per item what an input
pipeline does on the CPU: it decodes one document (zlib inflate), tokenizes the whole of it (byte pairs to ids
with NumPy), augments it (5% of the tokens replaced at random) and takes a random window of SEQ + 1 tokens,
the way an image pipeline decodes a whole JPEG to take a random crop. That is about a millisecond of CPU per
item, a few tens of milliseconds per batch of 32 when one process does it.

The model is the GPT of clean.py (4 layers, d1024, 16 heads, batch 32 x 512 tokens, vocabulary 16384; bf16
autocast, fused AdamW, zero_grad(set_to_none=True)): about 21 ms of GPU work per step on an H200 for about
2 ms of launches, so the GPU keeps up only when a batch is ready every 21 ms.

`train()` runs the loop: it takes the batch from the loader (timing the wait, `fetch_ms`), copies it with
`non_blocking=True`, and steps; the loss is accumulated on the GPU and read once after the steps (and also
after every step with read_loss=True). When the loader runs out, a new epoch starts (`iter(loader)` again).

The programs are guarded by `if __name__ == "__main__"`: DataLoader workers started with the spawn or
forkserver method import the main module, which must not train again.
"""
import time
import zlib

import numpy as np
import torch
import torch.nn.functional as F

from rules_common import DEV, GPT, StepTimer, done

VOCAB, D, LAYERS, HEADS, BATCH, SEQ = 16384, 1024, 4, 16, 32, 512
DOCS, DOC_BYTES = 64, 128 * 1024


class TextDataset(torch.utils.data.Dataset):
    """`length` items; item i decodes document i % DOCS and augments it with a generator seeded by i."""

    def __init__(self, length, doc_bytes=DOC_BYTES):
        rng = np.random.default_rng(1)
        self.length = length
        # lowercase "text" with a little structure, stored compressed as a dataset on disk would be
        self.blobs = []
        for _ in range(DOCS):
            text = rng.integers(97, 123, size=doc_bytes, dtype=np.uint8)
            text[rng.random(doc_bytes) < 0.15] = 32  # spaces
            self.blobs.append(zlib.compress(text.tobytes(), 6))

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        raw = np.frombuffer(zlib.decompress(self.blobs[i % DOCS]), dtype=np.uint8)  # decode
        rng = np.random.default_rng(i)
        ids = (raw[:-1].astype(np.int64) * 131 + raw[1:].astype(np.int64) * 7) % VOCAB  # tokenize byte pairs
        noise = rng.random(ids.shape[0]) < 0.05  # augment: replace 5% of the tokens
        ids[noise] = rng.integers(0, VOCAB, size=int(noise.sum()))
        start = int(rng.integers(0, ids.shape[0] - SEQ - 1))  # random window
        return torch.from_numpy(ids[start:start + SEQ + 1].copy())


def build(d=D, layers=LAYERS):
    """The GPT (width d, `layers` blocks) and its fused AdamW."""
    torch.manual_seed(0)
    model = GPT(VOCAB, d, layers, HEADS, SEQ).to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01, fused=True)
    return model, opt


def train(loader, model, opt, steps, warmup, read_loss=False, **numbers):
    """warmup + steps training steps on batches from `loader` (new epochs as needed); prints the done line.

    read_loss: read the loss on the host after every step (`loss.item()`: a DtoH copy and a wait).
    """
    it = iter(loader)
    epochs = 1
    fetch_s = 0.0
    loss_sum = torch.zeros((), device=DEV)
    timer = StepTimer()
    for i in range(warmup + steps):
        if i == warmup:
            timer.start()
            loss_sum.zero_()
            fetch_s = 0.0
        t0 = time.perf_counter()
        try:
            batch = next(it)
        except StopIteration:  # end of an epoch: a new iterator
            it = iter(loader)
            epochs += 1
            batch = next(it)
        fetch_s += time.perf_counter() - t0
        batch = batch.to(DEV, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(batch[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss_sum += loss.detach()
        if read_loss:
            last_loss = loss.item()  # noqa: F841 (what a progress print would read)
    step_ms = timer.stop(steps)
    done(steps, mean_loss=loss_sum.item() / steps, epochs=epochs, **numbers,
         fetch_ms=fetch_s * 1e3 / max(1, steps), step_ms=step_ms)
