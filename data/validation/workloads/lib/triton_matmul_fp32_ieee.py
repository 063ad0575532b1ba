"""Triton FP32 matmul with tl.dot(..., input_precision="ieee"): C = A @ B, M = N = K = 3072.

"ieee" asks for exact FP32 products, which the tensor cores cannot give (they take TF32, BF16, FP16,
FP8 inputs), so Triton lowers tl.dot to FFMA on the FP32 pipes. Block 64x64x32, 4 warps, 3 stages.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from _common import main


@triton.jit
def matmul_fp32_ieee_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                            stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                            GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K // BLOCK_K):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc = tl.dot(a, b, acc, input_precision="ieee")
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc)


CONFIG = dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=3)


def matmul(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    _, N = b.shape
    cfg = CONFIG
    assert M % cfg["BLOCK_M"] == 0 and N % cfg["BLOCK_N"] == 0 and K % cfg["BLOCK_K"] == 0
    grid = (M // cfg["BLOCK_M"] * (N // cfg["BLOCK_N"]),)
    matmul_fp32_ieee_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                  c.stride(0), c.stride(1), **cfg)
    return c


def make(argv: list[str]):
    n = int(argv[0]) if argv else 3072
    a = torch.randn(n, n, device="cuda", dtype=torch.float32)
    b = torch.randn(n, n, device="cuda", dtype=torch.float32)
    c = torch.empty(n, n, device="cuda", dtype=torch.float32)

    def check() -> float:
        ref = torch.matmul(a.double(), b.double()).float()
        return float((matmul(a, b, c) - ref).abs().max() / ref.abs().max())

    return (lambda: matmul(a, b, c)), {"label": f"triton fp32 ieee matmul {n}^3", "flops": 2 * n**3,
                                       "check": check, "regex": "matmul_fp32_ieee_kernel"}


if __name__ == "__main__":
    main(make)
