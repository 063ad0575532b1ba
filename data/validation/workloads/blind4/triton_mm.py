"""Triton BF16 matmul C = A @ B, 4096 x 4096 x 4096 (row-major A, B, C; FP32 accumulation), with a config
chosen on the command line: python3 triton_mm.py {poor|good} [--sanity].

poor: BLOCK 128 x 128 x 16, num_stages=1, num_warps=4 (a config copied from an older GPU's tuning table:
      a K step of 16 and no software pipelining, so every K step waits for its own loads)
good: BLOCK 128 x 256 x 64, num_stages=3, num_warps=8 (the tutorial's Hopper config)."""

from __future__ import annotations

import sys

import torch
import triton
import triton.language as tl

from _tcommon import main


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % size_m
    pid_n = (pid % group) // size_m
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * K + rk[None, :]
    b = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(tl.load(a), tl.load(b), acc)
        a += BK
        b += BK * N
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16))


CONFIGS = {
    "poor": dict(BM=128, BN=128, BK=16, num_stages=1, num_warps=4),
    "good": dict(BM=128, BN=256, BK=64, num_stages=3, num_warps=8),
}
cfg = CONFIGS[sys.argv[1]]
M = N = K = 4096
torch.manual_seed(0)
a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)


def fn():
    grid = (triton.cdiv(M, cfg["BM"]) * triton.cdiv(N, cfg["BN"]),)
    matmul_kernel[grid](a, b, c, M, N, K, GROUP_M=8, **cfg)


def check():
    fn()
    ref = a[:256].float() @ b.float()
    err = float((c[:256].float() - ref).abs().max())
    assert err < 1.0, err  # bf16 output of sums of 4096 products of N(0,1) (|c| ~ 64)
    return f"max |err| of 256 rows vs FP32 {err:.2e}"


main(fn, f"triton matmul {M}^3 bf16 ({sys.argv[1]}: {cfg})", check, flops=2 * M * N * K)
