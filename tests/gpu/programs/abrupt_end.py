"""abrupt_end.py - a GPU-bound PyTorch loop that ends abruptly right after a synchronize (tests/gpu/abrupt.sh).

    python3 abrupt_end.py MODE [--iters N] [--child]

One fill of a 1 GiB tensor, then N (default 600) in-place multiplications of it (one elementwise kernel each,
about 0.4 ms of GPU time: the host runs far ahead), no wait in between, then torch.cuda.synchronize(); prints
"kernels N pid P" (flushed) and ends by MODE:
  normal  return        term  os.kill(own pid, SIGTERM)   int  os.kill(own pid, SIGINT) (Python's handler)
  exit    os._exit(3)   wait  print "synced" and sleep until killed from outside (SIGKILL)
With --child, a child process started with the multiprocessing "spawn" method runs the loop and ends by MODE,
and the parent waits for it and exits 0.
"""
import argparse
import multiprocessing as mp
import os
import signal
import sys
import time


def run(mode, iters):
    import torch

    x = torch.empty(1 << 28, device="cuda")
    x.fill_(1.0)
    for _ in range(iters):
        x.mul_(1.0000001)
    torch.cuda.synchronize()
    print(f"kernels {iters + 1} pid {os.getpid()}", flush=True)
    if mode == "term":
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)
    elif mode == "int":
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(10)
    elif mode == "exit":
        os._exit(3)
    elif mode == "wait":
        print("synced", flush=True)
        while True:
            time.sleep(1)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["normal", "term", "int", "exit", "wait"])
    p.add_argument("--iters", type=int, default=600)
    p.add_argument("--child", action="store_true")
    a = p.parse_args()
    if a.child:
        ctx = mp.get_context("spawn")
        c = ctx.Process(target=run, args=(a.mode, a.iters))
        c.start()
        c.join()
        print(f"child exit {c.exitcode}", flush=True)
        sys.exit(0)
    run(a.mode, a.iters)
