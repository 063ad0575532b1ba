"""A loop that reads a loss back with .item() every step (whole process, NVTX "step N" ranges).

Each step: two bf16 GEMMs (4096x4096 @ 4096x1024, ~50 us each on the GPU) and a mean, then
``.item()``: a 4-byte device-to-host copy and a blocking stream synchronize. The host needs only a few
tens of microseconds to enqueue a step, less than the GPU needs to run it, so without the read-back it
would run ahead; with it, the host blocks until the GPU drains and the GPU then idles while Python
returns from the sync and launches the next step.
"""

from _whole import run, torch


def setup():
    torch.manual_seed(0)
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = (torch.randn(4096, 1024, device="cuda") / 64).to(torch.bfloat16)
    c = (torch.randn(1024, 1024, device="cuda") / 32).to(torch.bfloat16)
    return {"a": a, "b": b, "c": c, "losses": []}


def step(s, i):
    h = torch.matmul(s["a"], s["b"])
    h = torch.matmul(h, s["c"])
    s["losses"].append(h.float().mean().item())


run(setup, step, steps=500, nvtx=True)
