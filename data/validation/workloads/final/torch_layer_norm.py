"""torch.nn.functional.layer_norm over 32768 rows of 4096 BF16 values with BF16 weight and bias
(268 MB in, 268 MB out): one PyTorch forward kernel."""

from __future__ import annotations

import torch

from _tcommon import main

rows, n = 32768, 4096
torch.manual_seed(0)
x = torch.randn(rows, n, device="cuda", dtype=torch.bfloat16)
w = (torch.rand(n, device="cuda") + 0.5).to(torch.bfloat16)
b = torch.randn(n, device="cuda", dtype=torch.bfloat16)


def fn():
    return torch.nn.functional.layer_norm(x, (n,), w, b, 1e-5)


def check():
    y = fn()
    ref = torch.nn.functional.layer_norm(x[:256].float(), (n,), w.float(), b.float(), 1e-5)
    err = float((y[:256].float() - ref).abs().max())
    assert err < 0.1, err
    return f"max |err| of 256 rows vs FP32 {err:.1e}"


main(fn, f"F.layer_norm {rows}x{n} bf16", check, bytes_moved=2 * x.numel() * 2)
