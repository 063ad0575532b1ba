"""torch.cumsum of a 1-D FP32 tensor of 2^27 elements (512 MiB in, 512 MiB out): python3 cumsum_cub.py [--sanity].
ATen sends a 1-D inclusive scan to CUB's single-pass decoupled look-back scan (DeviceScanInitKernel, then
DeviceScanKernel). The floor is 1 GiB of DRAM traffic."""

from __future__ import annotations

import torch

from _tcommon import main

N = 1 << 27
torch.manual_seed(0)
x = torch.rand(N, device="cuda", dtype=torch.float32)
out = torch.empty_like(x)


def fn():
    torch.cumsum(x, 0, out=out)


def check():
    fn()
    ref = torch.cumsum(x[: 1 << 20].double(), 0)
    err = float((out[: 1 << 20].double() - ref).abs().max() / ref[-1])
    assert err < 1e-4, err
    return f"first 2^20: max |err| / total {err:.1e} vs float64"


main(fn, "torch.cumsum fp32 2^27", check, bytes_moved=8 * N)
