"""PyTorch eager x.sum(dim=1) of a 16384 x 8192 FP32 tensor (512 MB read, 64 KB written): reduce_kernel."""

from __future__ import annotations

import torch

from _common import main


def make(argv: list[str]):
    x = torch.randn(16384, 8192, device="cuda")
    return (lambda: x.sum(dim=1)), {"label": "torch x.sum(dim=1), 16384x8192 fp32", "bytes": x.numel() * 4,
                                    "regex": "reduce_kernel"}


if __name__ == "__main__":
    main(make)
