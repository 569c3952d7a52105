"""d2h-sync/negative_event_query.py - event polling and GPU-side waits: sync records that are not host waits.

A GPU-bound MLP (1024 -> 4096 -> 4096 -> 4096 -> 1000, batch 8192, bf16 autocast, fused AdamW) trains on
batches that come from pinned host memory. The loop uses the asynchronous tools the guides recommend:

- input prefetch on a second stream into two preallocated GPU buffers: the copy of batch i+1 starts while step
  i computes; `copy_stream.wait_event(consumed)` keeps a buffer from being overwritten before the step that
  reads it has finished, and `current_stream().wait_event(loaded)` makes the step wait for its batch. Both are
  GPU-side waits (cudaStreamWaitEvent): the host never blocks;
- each step's loss is copied to pinned host memory with a non-blocking copy and an event is recorded after it;
  the host polls the events with `Event.query()` (cudaEventQuery, returns at once) and logs the losses whose
  copies have finished. How many it finds per step depends on timing; the printed numbers do not.

Seen at the CUDA level, per steady step: two HtoD copies (pinned, async) on the copy stream, one DtoH copy
(4 bytes, pinned, async), two STREAM_WAIT_EVENT, event records and queries (with all sync records enabled), and
no host wait; the GPU never waits for the host. After the steps, one synchronize. An analyzer should report
nothing: a query is not a wait, and a stream waiting on an event is not the host waiting.

    python3 negative_event_query.py [--steps 40] [--warmup 5]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, StepTimer, done, parse_args  # noqa: E402

a = parse_args(__doc__)
D_IN, HID, CLASSES, BATCH, NB = 1024, 4096, 1000, 8192, 4

model = nn.Sequential(nn.Linear(D_IN, HID), nn.GELU(), nn.Linear(HID, HID), nn.GELU(), nn.Linear(HID, HID),
                      nn.GELU(), nn.Linear(HID, CLASSES)).to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, fused=True)

# The data set lives in pinned host memory (made on the GPU once, for speed, and copied down).
g = torch.Generator(device=DEV).manual_seed(1)
x_dev = torch.randn(NB, BATCH, D_IN, device=DEV, generator=g)
y_dev = (x_dev @ torch.randn(D_IN, CLASSES, device=DEV, generator=g)).argmax(-1)
x_host = torch.empty(x_dev.shape, pin_memory=True).copy_(x_dev)
y_host = torch.empty(y_dev.shape, dtype=torch.long, pin_memory=True).copy_(y_dev)
del x_dev, y_dev

copy_stream = torch.cuda.Stream()
xbuf = torch.empty(2, BATCH, D_IN, device=DEV)
ybuf = torch.empty(2, BATCH, dtype=torch.long, device=DEV)
loaded = [torch.cuda.Event(), torch.cuda.Event()]    # batch in buffer k is on the GPU
consumed = [torch.cuda.Event(), torch.cuda.Event()]  # the step that read buffer k has finished with it


def prefetch(j, k):
    """Queue the copy of batch j into buffer k on the copy stream."""
    with torch.cuda.stream(copy_stream):
        copy_stream.wait_event(consumed[k])
        xbuf[k].copy_(x_host[j % NB], non_blocking=True)
        ybuf[k].copy_(y_host[j % NB], non_blocking=True)
        loaded[k].record(copy_stream)


total = a.warmup + a.steps
loss_host = torch.zeros(total, pin_memory=True)
copied = [torch.cuda.Event() for _ in range(total)]
logged = []
prefetch(0, 0)
timer = StepTimer()
for i in range(total):
    if i == a.warmup:
        timer.start()
    k = i % 2
    prefetch(i + 1, 1 - k)
    torch.cuda.current_stream().wait_event(loaded[k])
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(xbuf[k]), ybuf[k])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    consumed[k].record()
    loss_host[i].copy_(loss.detach(), non_blocking=True)
    copied[i].record()
    while len(logged) <= i and copied[len(logged)].query():  # poll, never block
        logged.append(float(loss_host[len(logged)]))
step_ms = timer.stop(a.steps)
logged += loss_host[len(logged):].tolist()  # everything has finished after the final synchronize

steady = logged[a.warmup:]
done(a.steps, first_loss=steady[0], last_loss=steady[-1], mean_loss=sum(steady) / len(steady), step_ms=step_ms)
