"""empty-cache-in-loop/negative_train_eval_switch.py - empty_cache only when switching between train and eval.

The GPT of bad.py/fixed.py trains as in fixed.py, and every 20 training steps it evaluates 4 held-out batches of
64 sequences (model.eval(), no_grad: a forward-only kernel sequence with a larger batch). The cache is emptied
at each switch, before the evaluation (the training activations' segments are of no use to it) and after it
(nor are the evaluation's to training): the case guide 000 #6 allows ("unless switching tasks such as
train/eval").

Decision: this must not be reported. The calls happen at phase changes, not in steps: 4 calls in a default run
(2 evaluations), one per 10 training steps at most, each costing one drain and one set of re-allocations
amortised over 20 steps. A rule that flags empty_cache in (nearly) every steady step, or whose estimated cost is
a noticeable share of run time, stays silent here; listing the calls as information (count, times, phase
boundary) without a finding is fine.

Seen at the CUDA level: release bursts (cudaFree) and the matching re-allocations (cudaMalloc) around each
evaluation phase only; none in the training steps between them.

    python3 negative_train_eval_switch.py [--steps 40] [--warmup 5] [--eval-every 20]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, GPT, StepTimer, done, parse_args, token_batches  # noqa: E402

a = parse_args(__doc__, extra=lambda p: p.add_argument(
    "--eval-every", type=int, default=20, help="evaluate after every N steady training steps"))
VOCAB, D, LAYERS, HEADS, BATCH, SEQ, NB = 8192, 768, 4, 12, 32, 256, 8
EVAL_BATCH, EVAL_NB = 64, 4

model = GPT(VOCAB, D, LAYERS, HEADS, SEQ).to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01, fused=True)
tokens = token_batches(NB, BATCH, SEQ, VOCAB).to(DEV)
eval_tokens = token_batches(EVAL_NB, EVAL_BATCH, SEQ, VOCAB, seed=2).to(DEV)
torch.cuda.empty_cache()  # once after setup, as in fixed.py


def evaluate():
    model.eval()
    total = torch.zeros((), device=DEV)
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        for j in range(EVAL_NB):
            logits = model(eval_tokens[j, :, :-1])
            total += F.cross_entropy(logits.reshape(-1, VOCAB), eval_tokens[j, :, 1:].reshape(-1))
    model.train()
    return total / EVAL_NB


loss_sum = torch.zeros((), device=DEV)
eval_losses = []
timer = StepTimer()
for i in range(a.warmup + a.steps):
    if i == a.warmup:
        timer.start()
        loss_sum.zero_()
    x, y = tokens[i % NB, :, :-1], tokens[i % NB, :, 1:]
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    loss_sum += loss.detach()
    del logits, loss
    done_steps = i + 1 - a.warmup
    if done_steps > 0 and a.eval_every and done_steps % a.eval_every == 0:
        torch.cuda.empty_cache()  # train -> eval switch
        eval_losses.append(evaluate())
        torch.cuda.empty_cache()  # eval -> train switch
step_ms = timer.stop(a.steps)
ev = torch.stack(eval_losses).tolist() if eval_losses else [float("nan")]
done(a.steps, mean_loss=loss_sum.item() / a.steps, evals=len(eval_losses), last_eval_loss=ev[-1],
     step_ms=step_ms)
