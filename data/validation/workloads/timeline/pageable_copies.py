"""Pageable host<->device copies every step (whole process, NVTX "step N" ranges).

Each step copies two 32 MiB CPU tensors that live in ordinary (pageable) memory to the GPU with
.to("cuda"), does a few microseconds of elementwise work on them, and brings 16 MiB of the result back
with .cpu() into pageable memory. Pageable copies are staged by the driver and run far below the link's
pinned bandwidth; kernels are a tiny share of the step.
"""

import numpy as np

from _whole import run, torch


def setup():
    n = 8 * 2**20  # 32 MiB of float32
    host = [torch.from_numpy(np.full(n, float(k + 1), dtype=np.float32)) for k in range(2)]
    return {"host": host}


def step(s, i):
    a = s["host"][0].to("cuda")
    b = s["host"][1].to("cuda")
    c = a * 0.5 + b
    s["out"] = c[: 4 * 2**20].cpu()  # 16 MiB device -> pageable host


run(setup, step, steps=15, nvtx=True)
