"""gate_probe.py - the clean training loop of samples/rules/clean.py, with regressions to switch on.

For measuring the gate's run-to-run noise and checking that real regressions fail it
(tests/gpu/gate_noise.sh):

    python3 gate_probe.py [--steps 40] [--warmup 5] [--extra-sync] [--slower PCT] [--slower-host PCT]
                          [--pageable-copy] [--start-barrier DIR]

--extra-sync reads the loss with .item() in every step (one DtoH copy and one host wait per step);
--slower PCT adds GPU work (torch.cuda._sleep) worth PCT percent of the step time measured in warm-up;
--slower-host PCT adds host work (a busy wait) worth PCT percent of that step time;
--pageable-copy copies a 64 KiB tensor made on the host (torch.randn, not pinned) to the GPU in every step,
  with .cuda(non_blocking=True): the copy is from pageable memory whatever non_blocking says, and
  non_blocking keeps PyTorch from adding a stream synchronization, so the pageable copy is the only change;
--start-barrier DIR: in a job of several ranks (WORLD_SIZE > 1, RANK set, as torchrun or rank_job.py start
  them), every rank waits after its warm-up until all ranks got there (a file per rank in DIR), so that the
  ranks' steady steps share the GPU from the first to the last.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../samples/rules"))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from rules_common import DEV, GPT, StepTimer, done, parse_args, token_batches  # noqa: E402


def extra(p):
    p.add_argument("--extra-sync", action="store_true", help="read the loss with .item() every step")
    p.add_argument("--slower", type=float, default=0.0, help="add GPU work worth PCT%% of a step")
    p.add_argument("--slower-host", type=float, default=0.0, help="add host work worth PCT%% of a step")
    p.add_argument("--pageable-copy", action="store_true", help="copy a pageable host tensor to the GPU every step")
    p.add_argument("--start-barrier", metavar="DIR", help="ranks of a job wait for each other after warm-up")


a = parse_args(__doc__, extra=extra)
VOCAB, D, LAYERS, HEADS, BATCH, SEQ, NB = 16384, 1024, 4, 16, 32, 512, 8

model = GPT(VOCAB, D, LAYERS, HEADS, SEQ).to(DEV)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01, fused=True)
host_batches = token_batches(NB, BATCH, SEQ, VOCAB).pin_memory()


def start_barrier(path, timeout_s=60.0):
    """Wait until every rank of the job (WORLD_SIZE, RANK) has put its file in `path`."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return
    rank = int(os.environ.get("RANK", "0"))
    os.makedirs(path, exist_ok=True)
    open(os.path.join(path, f"rank{rank}.ready"), "w").close()
    end = time.monotonic() + timeout_s
    while sum(os.path.exists(os.path.join(path, f"rank{r}.ready")) for r in range(world)) < world:
        if time.monotonic() > end:
            raise SystemExit(f"rank {rank}: the other ranks did not reach the start barrier in {timeout_s:.0f} s")
        time.sleep(0.001)


def sleep_cycles_per_ms():
    """GPU clock cycles of torch.cuda._sleep per millisecond, measured."""
    torch.cuda._sleep(1000)  # load the kernel first (lazy loading): not part of the timing
    torch.cuda.synchronize()
    t = time.perf_counter()
    torch.cuda._sleep(10_000_000)
    torch.cuda.synchronize()
    return 10_000_000 / ((time.perf_counter() - t) * 1e3)


loss_sum = torch.zeros((), device=DEV)
timer = StepTimer()
sleep_cycles = 0
host_s = 0.0
warm_t = None
for i in range(a.warmup + a.steps):
    if i == 1:
        torch.cuda.synchronize()
        warm_t = time.perf_counter()
    if i == a.warmup:
        torch.cuda.synchronize()
        step_ms = (time.perf_counter() - warm_t) * 1e3 / max(1, a.warmup - 1)
        if a.slower > 0:
            sleep_cycles = int(sleep_cycles_per_ms() * step_ms * a.slower / 100.0)
        host_s = step_ms * a.slower_host / 100.0 / 1e3
        if a.start_barrier:
            start_barrier(a.start_barrier)
        timer.start()
        loss_sum.zero_()
    batch = host_batches[i % NB].to(DEV, non_blocking=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if sleep_cycles:
        torch.cuda._sleep(sleep_cycles)
    if host_s:
        t_end = time.perf_counter() + host_s
        while time.perf_counter() < t_end:
            pass
    if a.pageable_copy:
        torch.randn(16384).cuda(non_blocking=True)  # 64 KiB from pageable memory, left unused
    if a.extra_sync:
        loss_sum += loss.item()
    else:
        loss_sum += loss.detach()
step_ms = timer.stop(a.steps)
done(a.steps, mean_loss=float(loss_sum) / a.steps, step_ms=step_ms)
