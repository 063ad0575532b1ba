"""transfer_bound: each step copies two 32 MB pageable (not pinned) CPU tensors to the GPU.

The copies go through the driver's pageable staging path (synchronous, far below the link's pinned
bandwidth) and take milliseconds, while the compute on the copied data takes tens of microseconds.
(The fix: pin the host buffers, copy with non_blocking=True on a side stream, overlap, or keep the
data on the GPU.)
"""
import torch

from _harness import main

torch.manual_seed(0)
host = [torch.randn(8 << 20) for _ in range(2)]  # 2 x 32 MB, pageable
w = torch.randn(8 << 20, device="cuda")


def step(i: int) -> None:
    a, b = (h.to("cuda") for h in host)          # pageable H2D, blocks the host
    _ = (a * w + b).sum()


main(step, warmup=3, steps=6)
