"""FP8 GEMM through torch._scaled_mm (cuBLASLt): C (bf16) = (A * sa) @ (B * sb), A 8192 x 8192 e4m3 row-major,
B 8192 x 8192 e4m3 column-major (the layout _scaled_mm requires), per-tensor FP32 scales."""

from __future__ import annotations

import torch

from _tcommon import main

M = N = K = 8192
torch.manual_seed(0)
a32 = torch.randn(M, K, device="cuda")
b32 = torch.randn(N, K, device="cuda")
sa = (a32.abs().max() / 448.0).float()
sb = (b32.abs().max() / 448.0).float()
a = (a32 / sa).to(torch.float8_e4m3fn)
b = (b32 / sb).to(torch.float8_e4m3fn).t()  # K x N, column-major
del a32, b32


def fn():
    return torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)


def check():
    c = fn()
    ref = (a[:128].float() * sa) @ (b.float() * sb)
    err = float((c[:128].float() - ref).abs().max() / ref.abs().max())
    assert err < 0.02, err
    return f"max |err| / max |ref| of 128 rows vs FP32 of the same FP8 values {err:.2e}"


main(fn, f"torch._scaled_mm e4m3 {M}x{N}x{K} -> bf16", check, flops=2 * M * N * K)
