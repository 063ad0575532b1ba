"""A long start-up, then a GPU-bound loop (whole process, no NVTX).

Start-up: import torch, context creation, a 512 MiB host "checkpoint" filled on the CPU and copied to
the GPU once from pageable memory, cuBLAS initialisation and lazy kernel loading on the first GEMMs.
Loop: 60 steps of 8 back-to-back 4096^3 bf16 GEMMs (cuBLAS, tensor cores) with no host
synchronization: the host enqueues far ahead and the GPU runs GEMMs continuously. The loop is a small
share of the process's wall time, but it is the repeated work: its verdict is the capture's.
"""

import numpy as np

from _whole import run, torch


def setup():
    torch.manual_seed(0)
    ckpt = torch.from_numpy(np.full(128 * 2**20, 0.01, dtype=np.float32))  # 512 MiB, pageable
    weights_gpu = ckpt.to("cuda")  # one-time pageable H2D copy
    w = (torch.randn(4096, 4096, device="cuda") / 64).to(torch.bfloat16)
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    return {"ckpt": weights_gpu, "w": w, "x": x}


def step(s, i):
    y = s["x"]
    for _ in range(8):
        y = torch.matmul(y, s["w"])
    s["y"] = y


run(setup, step, steps=60, nvtx=False)
