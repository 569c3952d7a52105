"""d2h-sync/fixed.py - bad.py with the host reads taken out of the step, as the guides advise.

Same model, data and steps as bad.py. The three reads are replaced by work that stays on the GPU:

1. no branch on the mask: padded positions always get the target -100, which cross_entropy ignores (a
   masked_fill that is a no-op on unpadded batches);
2. the loss is added to a GPU accumulator, and a non-finite loss is counted on the GPU instead of being checked
   on the host;
3. the accuracy is accumulated on the GPU as well.

The accumulators are read every --log-every steps (50, so never inside a default run of 45 steps) and once
after the last step: one device-to-host copy and one wait for the whole run.

Seen at the CUDA level: no DtoH copy and no host wait in the steady steps; the host runs ahead of the GPU, so
the GPU never waits for a launch. An analyzer should report nothing.

    python3 fixed.py [--steps 40] [--warmup 5] [--log-every 50]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, GPT, StepTimer, done, parse_args, token_batches  # noqa: E402

a = parse_args(__doc__, extra=lambda p: p.add_argument(
    "--log-every", type=int, default=50, help="read the running loss on the host every N steps (0: never)"))
VOCAB, D, LAYERS, HEADS, BATCH, SEQ, NB = 8192, 768, 4, 12, 32, 256, 8

model = GPT(VOCAB, D, LAYERS, HEADS, SEQ).to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01, fused=True)
tokens = token_batches(NB, BATCH, SEQ, VOCAB).to(DEV)
masks = torch.ones(NB, BATCH, SEQ, dtype=torch.long, device=DEV)
masks[3::4, ::2, -32:] = 0  # every fourth batch: the last 32 tokens of every other row are padding

loss_sum = torch.zeros((), device=DEV)
last_loss = torch.zeros((), device=DEV)
acc_sum = torch.zeros((), device=DEV)
nonfinite = torch.zeros((), dtype=torch.long, device=DEV)
log = []
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        for t in (loss_sum, acc_sum, nonfinite):
            t.zero_()
    x, y, mask = tokens[i % NB, :, :-1], tokens[i % NB, :, 1:], masks[i % NB]
    targets = y.masked_fill(mask == 0, -100)

    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1), ignore_index=-100)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()

    with torch.no_grad():
        loss_sum += loss.detach()
        last_loss.copy_(loss.detach())
        nonfinite += (~torch.isfinite(loss)).long()
        acc_sum += ((logits.argmax(-1) == y) & (mask != 0)).sum() / mask.sum()
    if a.log_every and (i + 1) % a.log_every == 0:
        log.append(loss_sum.item())  # one read every log_every steps

step_ms = timer.stop(a.steps)
vals = torch.stack([loss_sum, last_loss, acc_sum, nonfinite.float()]).tolist()  # the one read at the end
done(a.steps, mean_loss=vals[0] / a.steps, last_loss=vals[1], mean_acc=vals[2] / a.steps, nonfinite=int(vals[3]),
     step_ms=step_ms)
