"""sync_bound: a loop that reads one value back with .item() after every kernel.

Each of the 32 inner iterations launches one 1024^3 FP32 matmul (tens of microseconds on the GPU) and
then reads one element back with .item(): a 4-byte device-to-host copy followed by a blocking
synchronize. The host cannot run ahead, so it spends most of each iteration blocked, and after every
read-back the GPU idles while Python resumes and launches the next matmul. Without the per-iteration
read-back the host (about 10 us to launch a matmul) would stay ahead of the GPU (tens of us per
matmul) and the GPU would be busy. (The fix: keep the values on the GPU, read them once per step.)
"""
import torch

from _harness import main

torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = False
w = torch.randn(1024, 1024, device="cuda") / 32
x0 = torch.randn(1024, 1024, device="cuda")
history = []


def step(i: int) -> None:
    for _ in range(32):
        y = torch.mm(x0, w)
        history.append(y[0, 0].item())  # blocking device-to-host read after every kernel


main(step, warmup=3, steps=6)
