"""PyTorch eager torch.softmax(x, dim=1) of a 16 x 2^20 FP32 tensor (64 MB): few, very long rows.

PyTorch's softmax for rows this long (cunn_SoftMaxForward) gives each row one thread block, so the
grid is 16 blocks on a 132-SM GPU."""

from __future__ import annotations

import torch

from _common import main


def make(argv: list[str]):
    x = torch.randn(16, 1 << 20, device="cuda")
    return (lambda: torch.softmax(x, dim=1)), {"label": "torch softmax 16 x 2^20 fp32", "bytes": 2 * x.numel() * 4,
                                               "regex": "SoftMax"}


if __name__ == "__main__":
    main(make)
