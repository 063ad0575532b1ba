"""F.embedding: 32768 random token ids into a 131072 x 1024 BF16 table (256 MB, 5x the L2).
Each id selects one contiguous 2 KB row; the output is 32768 x 1024 BF16 (64 MB)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from _tcommon import main

torch.manual_seed(0)
weight = torch.randn(131072, 1024, device="cuda", dtype=torch.bfloat16)
ids = torch.randint(0, 131072, (32768,), device="cuda")


def fn():
    return F.embedding(ids, weight)


def check():
    out = fn()
    assert torch.equal(out[123], weight[ids[123]])
    return f"row check ok; {int(ids.unique().numel())} distinct ids of 32768"


main(fn, "F.embedding 32768 ids, 131072x1024 bf16 table", check, bytes_moved=2 * 32768 * 1024 * 2)
