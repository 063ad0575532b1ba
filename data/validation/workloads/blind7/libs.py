"""torch.matmul of FP32 matrices on the H200 with TF32 off: the cuBLAS FP32 GEMM (blind7 gallery).

    python3 libs.py NAME                build, check, 3 warm-up calls, one call inside cudaProfilerStart/Stop
    python3 libs.py --sanity NAME...    plain timings of the call and its controls, and the kernels it launches

sgemm8192   C = A @ B, A, B, C [8192, 8192] FP32, torch.backends.cuda.matmul.allow_tf32 = False (1.1 TFLOP).
            Controls (the lever, they change the precision): the same product with allow_tf32 = True, and
            with BF16 operands (converted beforehand, BF16 out). The check prints each one's relative error
            against float64 on 256 rows.
sgemm4096   the same at 4096^3 FP32 (TF32 off): cuBLAS as the reference for the CUDA C++ SGEMMs of kernels.py.
"""

from __future__ import annotations

import sys

import torch

from _tcommon import main

torch.backends.cuda.matmul.allow_tf32 = False


def _gemm(n: int, controls: bool):
    torch.manual_seed(0)
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    c = torch.empty(n, n, device="cuda")

    def fn():
        torch.matmul(a, b, out=c)

    def tf32():
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.matmul(a, b, out=c_tf32)
        torch.backends.cuda.matmul.allow_tf32 = False

    def bf16():
        torch.matmul(a16, b16, out=c16)

    if controls:
        c_tf32 = torch.empty_like(c)
        a16, b16 = a.bfloat16(), b.bfloat16()
        c16 = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)

    def check():
        c.fill_(float("nan"))
        fn()
        rows = slice(0, 256)
        ref = a[rows].double() @ b.double()
        rel = lambda got: float((got[rows].double() - ref).norm() / ref.norm())  # noqa: E731
        assert not bool(torch.isnan(c).any()), "unwritten outputs"
        msg = f"TF32 allowed: {torch.backends.cuda.matmul.allow_tf32}; rel err vs float64 (256 rows): fp32 {rel(c):.2e}"
        if controls:
            tf32()
            bf16()
            msg += f", tf32 {rel(c_tf32):.2e}, bf16 operands {rel(c16):.2e}"
        assert rel(c) < 1e-4
        return msg

    w = {"fn": fn, "label": f"torch.matmul fp32 {n}^3 (TF32 off)", "check": check, "flops": 2 * n ** 3}
    if controls:
        w["controls"] = [("the same with allow_tf32=True (TF32 tensor cores)", tf32, None),
                         ("the same with BF16 operands and output (converted beforehand)", bf16, None)]
    return w


def sgemm8192():
    return _gemm(8192, True)


def sgemm4096():
    return _gemm(4096, False)


if __name__ == "__main__":
    sys.exit(main({"sgemm8192": sgemm8192, "sgemm4096": sgemm4096}, sys.argv[1:]))
