"""allocator-churn/bad_no_caching.py - a GPT trained with PyTorch's caching allocator switched off.

A 4-layer d768 GPT (batch 16 x 512 tokens, vocabulary 8192, bf16 autocast, fused AdamW, data already on the
GPU, fixed shapes) run the way a program runs when `PYTORCH_NO_CUDA_MEMORY_CACHING=1` is left set in the
environment after a memory-debugging session (compute-sanitizer and memory checkers ask for it). The program
sets the variable in os.environ itself, BEFORE importing torch, so that it holds whatever the shell says.

With the cache off, every tensor PyTorch makes is a cudaMalloc and every tensor it drops a cudaFree:
activations, autocast's bf16 copies of the weights, gradients (zero_grad(set_to_none=True) drops them every
step), the optimizer's temporaries. cudaFree synchronizes the device: at each one the host waits for all the
queued kernels to finish, and the GPU then idles until the host has returned from the call and launched the
next kernel. The same program with the cache on (fixed_no_caching.py) makes no allocator call after its
first steps and queues its kernels well ahead of the GPU.

Seen at the CUDA level, per steady step: hundreds of cudaMalloc and cudaFree calls (device memory rows of
the activation, weight and gradient sizes, the same sizes every step), each cudaFree waiting for the GPU to
drain, short GPU bursts between them. A correct analyzer reports allocator-churn in every steady step, with
the GPU idle in the allocator calls as its cost; not empty-cache-in-loop (no emptyCache: the frees are the
tensors' own, spread through the step between allocations) and not memory-ceiling-thrash (no limit, no failed
allocation, no retry). The step time with and without the cache (bad_no_caching.py, fixed_no_caching.py) is
the cost; the sizes are to be confirmed on the GPU.

The final line says `caching=0` (the variable was set when torch started) and `reserved_mib`, the caching
allocator's `memory_reserved()` at the end: memory taken straight from cudaMalloc with the cache off is not
expected to be counted there (to be confirmed on the GPU with fixed_no_caching.py beside it).

    python3 bad_no_caching.py [--steps 40] [--warmup 5]
"""
import os
import sys

if __name__ == "__main__":
    # Left over from a memory-debugging session: set before torch is imported, the allocator reads it once.
    os.environ["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, GPT, StepTimer, done, parse_args, token_batches  # noqa: E402

VOCAB, D, LAYERS, HEADS, BATCH, SEQ, NB = 8192, 768, 4, 12, 16, 512, 4


def main(doc):
    """Train the GPT for --warmup + --steps steps and print the final line (shared with fixed_no_caching.py)."""
    a = parse_args(doc)
    caching = os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING", "") != "1"
    model = GPT(VOCAB, D, LAYERS, HEADS, SEQ).to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01, fused=True)
    tokens = token_batches(NB, BATCH, SEQ, VOCAB).to(DEV)

    loss_sum = torch.zeros((), device=DEV)
    timer = StepTimer()
    for i in range(a.warmup + a.steps):
        if i == a.warmup:
            timer.start()
            loss_sum.zero_()
        x, y = tokens[i % NB, :, :-1], tokens[i % NB, :, 1:]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        with torch.no_grad():
            loss_sum += loss.detach()
    step_ms = timer.stop(a.steps)
    done(a.steps, caching=int(caching), mean_loss=loss_sum.item() / a.steps,
         reserved_mib=torch.cuda.memory_reserved() >> 20, step_ms=step_ms)


if __name__ == "__main__":
    main(__doc__)
