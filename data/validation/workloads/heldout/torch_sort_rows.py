"""torch.sort(x, dim=-1) of 16384 rows of 1024 FP32 values (values and int64 indices out): each row
fits one block, so PyTorch sorts it in place inside shared memory (no cub device-wide sort)."""

from __future__ import annotations

import torch

from _tcommon import main

x = torch.rand(16384, 1024, device="cuda")
vals = torch.empty_like(x)
idx = torch.empty(16384, 1024, device="cuda", dtype=torch.int64)


def fn():
    torch.sort(x, dim=-1, out=(vals, idx))


def check():
    fn()
    assert bool((vals[:, 1:] >= vals[:, :-1]).all()) and torch.equal(torch.gather(x, 1, idx), vals)
    return "rows ascending, gather(x, idx) == values"


main(fn, "torch.sort 16384x1024 fp32 dim=-1", check, bytes_moved=x.numel() * (4 + 4 + 8))
