"""sync_bound: a loop that reads a scalar back with .item() after every moderate kernel.

Each of the 16 inner iterations runs a 2048^3 FP32 matmul + tanh + mean (a few hundred microseconds
on the GPU) and then calls .item(), which blocks the host in cudaStreamSynchronize until the GPU is
done and copies 4 bytes back. The host cannot run ahead, so after every sync the GPU idles while
Python resumes and dispatches the next kernels; each step also ends in torch.cuda.synchronize().
Without the per-iteration read-back the host would stay ahead of the GPU (its dispatch work per
iteration is shorter than the GPU work). (The fix: keep the value on the GPU, read it once per step.)
"""
import torch

from _harness import main

torch.manual_seed(0)
w = torch.randn(2048, 2048, device="cuda") / 45
x0 = torch.randn(2048, 2048, device="cuda")
history = []


def step(i: int) -> None:
    x = x0
    for _ in range(16):
        x = torch.tanh(x @ w)
        history.append(x.mean().item())  # blocking device-to-host read every iteration
    torch.cuda.synchronize()


main(step, warmup=3, steps=6)
