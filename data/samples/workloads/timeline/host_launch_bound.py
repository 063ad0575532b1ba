"""host_launch_bound: an unfused, per-parameter SGD-with-momentum update over 100 small tensors.

Each step launches ~300 tiny elementwise kernels (4096 elements each, about 2 us of GPU work) one
Python call at a time; the host needs longer to dispatch each one than the GPU needs to run it, so
the GPU sits idle between launches. (The fix: a fused/foreach update, torch.compile or a CUDA graph.)
"""
import torch

from _harness import main

torch.manual_seed(0)
params = [torch.randn(4096, device="cuda") for _ in range(100)]
grads = [torch.randn(4096, device="cuda") * 1e-3 for _ in range(100)]
moms = [torch.zeros(4096, device="cuda") for _ in range(100)]


def step(i: int) -> None:
    with torch.no_grad():
        for p, g, m in zip(params, grads, moms):
            m.mul_(0.9).add_(g)       # 2 kernels
            p.add_(m, alpha=-0.01)    # 1 kernel


main(step, warmup=5, steps=10)
