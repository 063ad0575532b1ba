"""sync_bound: a loop that reads a scalar back with .item() after every moderate kernel.

Each of the 16 inner iterations runs a 1024^3 FP32 matmul + tanh + mean (~tens of microseconds on the
GPU) and then calls .item(), which blocks the host until the GPU is done and copies 4 bytes back;
the GPU then idles while Python resumes and launches the next kernels. Each step also ends in
torch.cuda.synchronize(). (The fix: keep the value on the GPU and read it once per step or less.)
"""
import torch

from _harness import main

torch.manual_seed(0)
w = torch.randn(1024, 1024, device="cuda") / 32
x0 = torch.randn(1024, 1024, device="cuda")
history = []


def step(i: int) -> None:
    x = x0
    for _ in range(16):
        x = torch.tanh(x @ w)
        history.append(x.mean().item())  # blocking device-to-host read every iteration
    torch.cuda.synchronize()


main(step, warmup=5, steps=8)
