"""PyTorch eager a + b over 2^27 FP32 elements (512 MB per tensor, 1.5 GB moved): vectorized_elementwise_kernel."""

from __future__ import annotations

import torch

from _common import main


def make(argv: list[str]):
    n = 1 << 27
    a = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    return (lambda: a + b), {"label": "torch a + b, 2^27 fp32", "bytes": 3 * n * 4, "regex": "elementwise"}


if __name__ == "__main__":
    main(make)
