"""pt_empty_cache_eval_switch.py - negative: empty_cache() only around evaluation, every 10 training steps.

GPU-bound MLP training; every 10 training steps a forward-only evaluation over 3 batches of another size runs
under torch.no_grad(), with `torch.cuda.empty_cache()` before and after it (the train/eval switch the guides
allow). In 40 steady steps that is 4 evaluations and 8 calls, each followed by allocations of the next phase:
release bursts in 10-20% of the steps, all at phase changes. Labels: nothing of the five (empty-cache-in-loop
must not).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_common import Timer, Trainer, done, info, need_torch, parse_args  # noqa: E402

args = parse_args(__doc__)
torch = need_torch()
tr = Trainer(torch, batch=8192)
g = torch.Generator(device="cuda").manual_seed(2)
evx = torch.randn(3, 12288, 4096, device="cuda", generator=g)
timer = Timer(torch)
evals = 0
ev_loss = torch.zeros((), device="cuda")
for i in range(args.warmup + args.steps):
    if i == args.warmup:
        timer.start()
    tr.step()
    if i % 10 == 9:
        torch.cuda.empty_cache()  # leaving training
        tr.model.eval()
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            for b in range(len(evx)):
                ev_loss += tr.model(evx[b]).float().pow(2).mean()
        tr.model.train()
        torch.cuda.empty_cache()  # back to training
        evals += 1
step_ms = timer.stop(args.steps)
info(f"step_ms={step_ms:.3f} eval_loss={ev_loss.item():.4f}")
done(args.steps, evals=evals)
