"""Training a wide BF16 MLP (3 x Linear(8192, 8192), batch 8192) with SGD, whole process, Kineto.
Each step is ~13 TFLOP of GEMMs (forward + backward, ~20 ms on an H200); the host enqueues a step
in well under a millisecond and never waits (no read-back), so the GPU runs back to back."""

from _kineto import run, torch


def setup():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(8192, 8192), torch.nn.GELU(),
        torch.nn.Linear(8192, 8192), torch.nn.GELU(),
        torch.nn.Linear(8192, 8192),
    ).to(device="cuda", dtype=torch.bfloat16)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    return {"model": model, "opt": opt, "x": x, "y": y}


def step(s, i):
    s["opt"].zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(s["model"](s["x"]), s["y"])
    loss.backward()
    s["opt"].step()


run(setup, step, steps=20)
