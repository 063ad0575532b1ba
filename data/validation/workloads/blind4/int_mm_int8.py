"""INT8 GEMM through torch._int_mm (cuBLASLt): C (int32) = A @ B, A 8192 x 8192 int8 row-major,
B 8192 x 8192 int8 column-major (B = Bt.t(), the "TN" layout integer tensor-core GEMMs read)."""

from __future__ import annotations

import torch

from _tcommon import main

M = N = K = 8192
torch.manual_seed(0)
a = torch.randint(-127, 128, (M, K), device="cuda", dtype=torch.int8)
b = torch.randint(-127, 128, (N, K), device="cuda", dtype=torch.int8).t()


def fn():
    return torch._int_mm(a, b)


def check():
    c = fn()
    ref = a[:64].double() @ b.double()
    ok = bool((c[:64].double() == ref).all())
    assert ok
    return "first 64 rows equal to an FP64 product (exact)"


main(fn, f"torch._int_mm int8 {M}x{N}x{K} -> int32", check, flops=2 * M * N * K)
