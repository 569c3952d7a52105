"""rank_job.py - run a program as a job of several ranks on the one GPU, started the way torchrun starts them.

For the gate's noise study (tests/gpu/gate_noise.sh):

    python3 rank_job.py [--world 2] SCRIPT [ARGS...]

Starts WORLD processes of `python3 SCRIPT ARGS` at once, each with the variables torchrun sets (RANK,
LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, ROLE_RANK, MASTER_ADDR, MASTER_PORT), all on device 0.
The launcher itself never touches the GPU. Prints each rank's lines in rank order ("info:" lines as they are,
the others as "rankN: LINE"), then "done ranks=N"; exits 1 when a rank failed (77 when the ranks that did not succeed
all skipped, tests/gpu/programs/common.py).
"""
import argparse
import os
import socket
import subprocess
import sys


def free_port():
    """A TCP port on the loopback interface that nothing listens on now (for MASTER_PORT)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--world", type=int, default=2, help="number of ranks (default %(default)s)")
    p.add_argument("script", help="the Python program each rank runs")
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    a = p.parse_args()
    if a.world < 1:
        p.error("--world must be at least 1")
    port = str(free_port())
    procs = []
    for r in range(a.world):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(a.world),
                   LOCAL_WORLD_SIZE=str(a.world), GROUP_RANK="0", ROLE_RANK=str(r), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=port)
        env.setdefault("OMP_NUM_THREADS", "1")  # as torchrun does with several ranks per host
        procs.append(subprocess.Popen([sys.executable, a.script] + a.args, env=env, stdout=subprocess.PIPE,
                                      text=True))
    outs = [pr.communicate()[0] for pr in procs]
    codes = [pr.returncode for pr in procs]
    for r, out in enumerate(outs):
        for line in out.splitlines():
            print(line if line.startswith("info:") else f"rank{r}: {line}", flush=True)
    if any(c != 0 for c in codes):
        print(f"ranks exited with {codes}", flush=True)
        return 77 if all(c in (0, 77) for c in codes) else 1
    print(f"done ranks={a.world}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
