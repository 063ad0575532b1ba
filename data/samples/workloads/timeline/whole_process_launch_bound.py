"""whole process, launch-bound loop: a short training run captured from process start to exit.

A 13-layer MLP of width 256 (batch 64) trained for 25 steps with SGD (momentum, foreach=False): each
step dispatches ~160 tiny kernels (GEMMs of 64x256x256, ReLUs, their backward, the per-parameter
optimizer update) one PyTorch call at a time, a few microseconds of GPU work each, less than the host
needs to dispatch them: the GPU idles between launches. Captured without a capture range
(`nsys profile python3 ...`), so imports, context creation, lazy module loading and cuBLAS set-up,
which take most of the process's wall time, are in the capture before the ~4000 launches of the loop.
"""

from _whole import run, torch


def setup():
    torch.manual_seed(0)
    layers = []
    for _ in range(12):
        layers += [torch.nn.Linear(256, 256), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(256, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, foreach=False)
    x = torch.randn(64, 256, device="cuda")
    y = torch.randint(0, 10, (64,), device="cuda")
    return {"model": model, "opt": opt, "x": x, "y": y}


def step(s, i):
    s["opt"].zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(s["model"](s["x"]), s["y"])
    loss.backward()
    s["opt"].step()


run(setup, step, steps=25, nvtx=True)
