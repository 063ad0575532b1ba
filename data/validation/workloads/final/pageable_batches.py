"""A loop that moves fresh pageable batches to the GPU and results back, whole process (Kineto).

Each step: a new 64 MiB FP32 CPU tensor (torch.empty: ordinary pageable memory, allocated anew each
step like a batch handed over by a reader), .to("cuda") (pageable H2D), a tiny affine + relu on the GPU
(2 elementwise kernels), and a 16 MiB slice of the result back with .cpu() (pageable D2H into a new
CPU tensor). No pinned memory, no streams, no overlap.
"""

from _driver import run, torch


def setup():
    torch.manual_seed(0)
    return {"w": torch.randn(4096, device="cuda"), "out": []}


def step(s, i):
    xb = torch.empty(4096, 4096)  # 64 MiB, pageable, new every step
    xg = xb.to("cuda")
    yg = torch.relu(xg * s["w"] + 1.0)
    s["out"] = yg[:1024].cpu()  # 16 MiB back, pageable


if __name__ == "__main__":
    run(setup, step, steps=16)
