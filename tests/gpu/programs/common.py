"""common.py - what the GPU test programs share: the expect line, info lines, skipping.

Conventions (tests/gpu/run.sh relies on them):
- The last stdout line is `expect key=value ...` (keys: tests/gpu/check_trace.py --list-keys).
- Lines that may differ from run to run (timings, pids, counts that depend on free memory) start with "info:";
  every other stdout line must be the same with and without the profiler.
- Exit status 77 means "cannot run here" (no GPU backend, no torchrun): the scenario is skipped, not failed.
"""
import sys

SKIP = 77


def info(msg):
    print(f"info: {msg}", flush=True)


def expect(*tokens):
    """Print the expect line; call it last."""
    print("expect " + " ".join(tokens), flush=True)


def skip(reason):
    info(f"skipped: {reason}")
    sys.exit(SKIP)


def torch_cuda():
    """Import torch and make sure it sees a GPU (skip otherwise)."""
    try:
        import torch
    except ImportError:
        skip("torch is not installed")
    if not torch.cuda.is_available():
        skip("torch sees no CUDA device")
    return torch
