"""nccl_payload.py - one rank's NCCL collectives, for the NVTX payloads NCCL sends with each call.

    cuscope record -o nccl.db -- python3 nccl_payload.py

Runs a process group of one rank on device 0 with the NCCL backend and calls all_reduce on 1024, 4096 and
65536 float32 elements (4 KiB, 16 KiB, 256 KiB), then all_gather and broadcast on the 4 KiB tensor. NCCL
annotates each call with a range in its NVTX domain "NCCL" whose payload holds the communicator, the message
size and the reduction: `record` writes the payload as JSON in NVTX_EVENTS.payloadId. Prints the sums it
computed, so that a run with and without cuscope can be compared; exits 77 when it cannot run (no GPU, no NCCL).
"""
import os
import sys

try:
    import torch
    import torch.distributed as dist
except ImportError:
    print("skip: no torch")
    sys.exit(77)

if not torch.cuda.is_available() or not dist.is_nccl_available():
    print("skip: no CUDA device or no NCCL")
    sys.exit(77)

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29517")
torch.cuda.set_device(0)
dist.init_process_group("nccl", rank=0, world_size=1)
sums = []
for n in (1024, 4096, 65536):
    x = torch.ones(n, device="cuda")
    dist.all_reduce(x)
    sums.append(float(x.sum()))
x = torch.arange(1024, dtype=torch.float32, device="cuda")
out = [torch.empty_like(x)]
dist.all_gather(out, x)
dist.broadcast(x, src=0)
torch.cuda.synchronize()
print("sums", sums, float(out[0].sum()), "nccl", torch.cuda.nccl.version())
dist.destroy_process_group()
