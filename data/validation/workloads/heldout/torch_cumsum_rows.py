"""torch.cumsum(x, dim=1) over a 32768 x 1024 FP32 matrix (128 MB in, 128 MB out): an inclusive scan
along the innermost dimension (PyTorch's own scan kernel, no library)."""

from __future__ import annotations

import torch

from _tcommon import main

x = torch.rand(32768, 1024, device="cuda")
out = torch.empty_like(x)


def fn():
    torch.cumsum(x, dim=1, out=out)


def check():
    fn()
    ref = torch.cumsum(x.double(), dim=1)
    err = float((out.double() - ref).abs().max())
    assert err < 1e-1, err
    return f"max |err| vs FP64 cumsum {err:.1e} (row sums ~512)"


main(fn, "torch.cumsum 32768x1024 fp32 dim=1", check, bytes_moved=2 * x.numel() * 4)
