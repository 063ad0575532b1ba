"""PyTorch eager x.permute(0, 2, 1).contiguous() of a 64 x 1024 x 1024 FP32 tensor (256 MB in, 256 MB out).

A batched transpose through TensorIterator's generic copy (elementwise_kernel): the output is walked
contiguously, so consecutive threads read input elements 1024 floats (4 KB) apart.
"""

from __future__ import annotations

import torch

from _common import main


def make(argv: list[str]):
    x = torch.randn(64, 1024, 1024, device="cuda")
    return (lambda: x.permute(0, 2, 1).contiguous()), {"label": "torch permute(0,2,1).contiguous() 64x1024x1024",
                                                      "bytes": 2 * x.numel() * 4, "regex": "elementwise_kernel"}


if __name__ == "__main__":
    main(make)
