"""One forward pass and exit (whole process): nothing is repeated.

Import torch, build a 3-layer MLP on the GPU, run it once on one batch, read the result with .item(),
exit. All of the capture is one-time work: interpreter start, imports, context creation, lazy kernel
loading, cuBLAS initialisation, a handful of kernels, exit.
"""

from _whole import run, torch


def setup():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 1024), torch.nn.GELU(),
        torch.nn.Linear(1024, 10),
    ).cuda().eval()
    x = torch.randn(8, 1024, device="cuda")
    return {"model": model, "x": x}


def step(s, i):
    with torch.no_grad():
        print("result", s["model"](s["x"]).sum().item())


run(setup, step, steps=1, nvtx=False)
