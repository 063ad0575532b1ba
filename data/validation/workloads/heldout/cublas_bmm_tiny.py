"""torch.bmm of 32768 independent 32x32 @ 32x32 FP32 matrices (TF32 off: true FP32), through cuBLAS's
batched GEMM. 2.1 GFLOP against 403 MB of operands and results: 5.3 FLOP per byte."""

from __future__ import annotations

import torch

from _tcommon import main

torch.backends.cuda.matmul.allow_tf32 = False
torch.set_float32_matmul_precision("highest")
a = torch.randn(32768, 32, 32, device="cuda")
b = torch.randn(32768, 32, 32, device="cuda")
c = torch.empty(32768, 32, 32, device="cuda")


def fn():
    torch.bmm(a, b, out=c)


def check():
    fn()
    err = float((c[:64].double() - torch.bmm(a[:64].double(), b[:64].double())).abs().max())
    assert err < 1e-3, err
    return f"max |err| vs FP64 {err:.1e}"


main(fn, "torch.bmm 32768 x (32x32 @ 32x32) fp32", check, bytes_moved=3 * a.numel() * 4,
     flops=2 * 32768 * 32 ** 3)
