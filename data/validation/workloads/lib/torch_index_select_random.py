"""PyTorch eager torch.index_select(table, 0, idx): 2^24 random int64 indices into a 1-D FP32 table of
2^28 elements (1 GB, 20x the L2). Each output element is one 4-byte load at a random address."""

from __future__ import annotations

import torch

from _common import main


def make(argv: list[str]):
    table = torch.randn(1 << 28, device="cuda")
    idx = torch.randint(0, 1 << 28, (1 << 24,), device="cuda")
    return (lambda: torch.index_select(table, 0, idx)), {
        "label": "torch index_select 2^24 random indices into 2^28 fp32", "regex": "scatter_gather|index"}


if __name__ == "__main__":
    main(make)
