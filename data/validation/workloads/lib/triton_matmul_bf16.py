"""Triton BF16 matmul (FP32 accumulate): C = A @ B with bf16 A, B, C.

--config good (default): M = N = 8192, K = 4096, block 128x256x64, 8 warps, 3 stages, grouped
  program order: on sm_90 Triton emits warpgroup MMA (HGMMA) fed from shared memory, the
  configuration Triton's own matmul tutorial picks on Hopper.
--config tiny: M = N = K = 2048 with block 16x16x16, 1 warp, 2 stages: a badly chosen block; each
  program loads a 16x16 A tile and a 16x16 B tile per 16-deep step for 16x16x16 multiply-adds,
  and one warp cannot use warpgroup MMA (Triton falls back to mma.sync).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from _common import main


@triton.jit
def matmul_bf16_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
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
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(tl.bfloat16))


CONFIGS = {
    "good": dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3),
    "tiny": dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=8, num_warps=1, num_stages=2),
}
SHAPES = {"good": (8192, 8192, 4096), "tiny": (2048, 2048, 2048)}


def matmul(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, cfg: dict) -> torch.Tensor:
    M, K = a.shape
    _, N = b.shape
    assert M % cfg["BLOCK_M"] == 0 and N % cfg["BLOCK_N"] == 0 and K % cfg["BLOCK_K"] == 0
    grid = (M // cfg["BLOCK_M"] * (N // cfg["BLOCK_N"]),)
    matmul_bf16_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                             c.stride(0), c.stride(1), **cfg)
    return c


def make(argv: list[str]):
    which = "good"
    if "--config" in argv:
        which = argv[argv.index("--config") + 1]
    cfg = CONFIGS[which]
    M, N, K = SHAPES[which]
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)

    def check() -> float:
        ref = torch.matmul(a, b).float()
        return float((matmul(a, b, c, cfg).float() - ref).abs().max() / ref.abs().max())

    return (lambda: matmul(a, b, c, cfg)), {"label": f"triton bf16 matmul {M}x{N}x{K} config {which}",
                                            "flops": 2 * M * N * K, "check": check,
                                            "regex": "matmul_bf16_kernel"}


if __name__ == "__main__":
    main(make)
