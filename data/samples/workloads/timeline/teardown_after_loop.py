"""teardown: a short GPU-bound loop, then a long teardown (whole process).

Start-up allocates 1500 tensors of 12 MiB (each its own cudaMalloc in PyTorch's caching allocator:
requests of 10 MiB or more are not packed together) and three 256 MiB arrays. The loop: 40 steps of
three large elementwise kernels (each reads/writes 512-768 MiB, ~0.15 ms), no host sync. Teardown:
the tensors are dropped and torch.cuda.empty_cache() returns every segment (1500+ cudaFree calls,
each of which synchronizes and unmaps), then cudaDeviceReset (through ctypes on the process's own
libcudart; nsys mode only, since the PyTorch profiler cannot outlive the context). No cuBLAS/cuDNN
is used, so nothing calls into the reset context at exit.
The teardown is one-time work after the loop, not a synchronization problem of the loop.
"""

import ctypes
import sys

from _whole import run, torch


def setup():
    torch.manual_seed(0)
    shards = [torch.empty(3 * 2**20, device="cuda") for _ in range(1500)]  # 1500 x 12 MiB
    n = 64 * 2**20
    a = torch.ones(n, device="cuda")
    b = torch.full((n,), 2.0, device="cuda")
    c = torch.empty(n, device="cuda")
    return {"shards": shards, "a": a, "b": b, "c": c}


def step(s, i):
    torch.add(s["a"], s["b"], alpha=0.5, out=s["c"])
    s["a"].mul_(0.999)
    s["b"].add_(s["c"], alpha=1e-3)


def _cudart():
    with open("/proc/self/maps") as f:
        paths = sorted({line.split()[-1] for line in f if "libcudart" in line and line.split()[-1].startswith("/")})
    return ctypes.CDLL(paths[0]) if paths else None


def teardown(s):
    s.clear()
    torch.cuda.empty_cache()  # one cudaFree per segment
    if "--mode" in sys.argv and sys.argv[sys.argv.index("--mode") + 1] == "nsys":
        lib = _cudart()
        if lib is None:
            print("libcudart not found in /proc/self/maps: no cudaDeviceReset", flush=True)
        else:
            print("cudaDeviceReset ->", lib.cudaDeviceReset(), flush=True)


run(setup, step, steps=40, teardown=teardown, nvtx=True)
