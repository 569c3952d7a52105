"""pt_epoch_sync.py - negative: one read-back per epoch of 10 steps in a GPU-bound loop.

MLP steps of ~10 ms of GEMMs; the loss is summed on the GPU and read with `.item()` once per epoch of 10 steps
(4 reads in 40 steady steps), then the epoch's summary is printed. Each read drains the queue; under cuscope
the host prints and relaunches 0.4-1.0 ms later (0.25 ms when cuscope's flush after the read is left to its
flush thread; measured on the H200, docs/performance.md, "The flush after sparse waits, with a share of the
time"; the committed trace, recorded earlier, shows 1.5-2 ms), under 2% of a 110 ms epoch, d2h-sync's floor:
a run may report it as info near the threshold (counted "near" by the scorer, not false), never warning or
error.
Labels: nothing of the five (d2h-sync must not: periodic, cheap).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, Trainer, done, info, need_torch, parse_args  # noqa: E402

args = parse_args(__doc__)
torch = need_torch()
tr = Trainer(torch, depth=4, batch=16384, nbatches=2)
timer = Timer(torch)
epoch_loss = torch.zeros((), device="cuda")
epochs = 0
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        timer.start()
    epoch_loss += tr.step()
    if i % 10 == 9:
        info(f"epoch {epochs} mean loss {epoch_loss.item() / 10:.5f}")
        epoch_loss.zero_()
        epochs += 1
step_ms = timer.stop(args.steps)
info(f"step_ms={step_ms:.3f}")
done(args.steps, epochs=epochs)
