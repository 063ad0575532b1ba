"""A loop that reads one value back with .item() after every GEMM (whole process, NVTX "step N").

Each step: one bf16 GEMM (4096x4096 @ 4096x1536, ~65 us on the GPU), then ``h[0, 0].item()``: a
2-byte device-to-host copy and a blocking stream synchronize. Enqueueing one GEMM takes the host less
time than the GPU needs to run it, so without the read-back the host would run ahead and keep the GPU
busy; with it, the host blocks until the GEMM is done, and the GPU idles while Python returns from the
sync and launches the next GEMM. (item_each_step.py is the same idea with four smaller kernels per
step, where the host's dispatch, not the sync, turned out to be the limit.)
"""

from _whole import run, torch


def setup():
    torch.manual_seed(0)
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = (torch.randn(4096, 1536, device="cuda") / 64).to(torch.bfloat16)
    return {"a": a, "b": b, "vals": []}


def step(s, i):
    h = torch.matmul(s["a"], s["b"])
    s["vals"].append(h[0, 0].item())


run(setup, step, steps=400, nvtx=True)
