"""GPU waits while the host runs a pure-Python check between steps (whole process, no NVTX).

Each step enqueues 8 back-to-back 4096^3 bf16 GEMMs (~1.4 ms of GPU work, 8 launches, no sync), then
the host verifies its own bookkeeping in pure Python: a loop over a 150k-element Python list
(~10 ms, no CUDA call at all). The host cannot enqueue the next step until the check is done, so the
GPU idles for most of every step; the gaps hold no CUDA API calls (neither launches nor syncs).
"""

import random

from _whole import run, torch


def setup():
    torch.manual_seed(0)
    random.seed(0)
    w = (torch.randn(4096, 4096, device="cuda") / 64).to(torch.bfloat16)
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    rows = [random.random() for _ in range(150_000)]
    return {"w": w, "x": x, "rows": rows}


def step(s, i):
    y = s["x"]
    for _ in range(8):
        y = torch.matmul(y, s["w"])
    s["y"] = y
    # host-side verification of the step's bookkeeping: pure Python, no CUDA calls
    total, flagged = 0.0, 0
    for v in s["rows"]:
        total += v * v
        if v > 0.99999:
            flagged += 1
    s["check"] = (total, flagged)


run(setup, step, steps=30, nvtx=False)
