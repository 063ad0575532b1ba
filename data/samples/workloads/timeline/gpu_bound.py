"""gpu_bound: back-to-back 4096^3 bf16 matmuls (cuBLAS, tensor cores), no host synchronization.

The host enqueues 8 GEMMs per step far faster than the GPU runs them (~0.2 ms each), so the GPU is
busy continuously: the time is in the kernels, which are themselves near the tensor-core roofline.
"""
import torch

from _harness import main

torch.manual_seed(0)
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16) / 64


def step(i: int) -> None:
    x = a
    for _ in range(8):
        x = torch.matmul(x, b)


main(step, warmup=5, steps=10)
