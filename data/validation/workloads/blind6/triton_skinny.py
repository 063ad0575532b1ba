"""A skinny GEMM in Triton: C[16, 4096] = A[16, 16384] @ B[16384, 4096], BF16 in and out, FP32 accumulation.

    python3 triton_skinny.py bm128 [--sanity]

The kernel is a textbook Triton matmul; `bm128` launches it with the tile a large-M GEMM would use
(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, 8 warps, 3 stages): with M=16 the grid is cdiv(16,128) x cdiv(4096,128)
= 1 x 32 programs on 132 SMs, and 7/8 of every MMA tile is masked-off rows. The work is a weight stream:
B is 128 MiB (floor ~ 28 us at 4.8 TB/s), 2.1 GFLOP. Controls (--sanity only): the same kernel with
BLOCK_M=16 and BLOCK_N=32 or 16 (128 / 256 programs), and torch.matmul.
"""

from __future__ import annotations

import sys

import torch
import triton
import triton.language as tl

from _tcommon import main


@triton.jit
def skinny_mm(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k0 + rk)[None, :], mask=rm[:, None] < M, other=0.0)
        b = tl.load(b_ptr + (k0 + rk)[:, None] * stride_bk + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.bfloat16), mask=rm[:, None] < M)


M, N, K = 16, 4096, 16384
torch.manual_seed(0)
A = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
B = torch.randn(K, N, device="cuda", dtype=torch.bfloat16) / 64
C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)


def launch(bm, bn, bk, warps, stages):
    grid = (triton.cdiv(N, bn), triton.cdiv(M, bm))
    skinny_mm[grid](A, B, C, M, N, K, A.stride(0), B.stride(0), C.stride(0),
                    BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=warps, num_stages=stages)


def check():
    ref = A.float() @ B.float()
    err = float((C.float() - ref).abs().max() / ref.abs().max())
    assert err < 2e-2, err
    return f"max |err| / max |ref| vs FP32 torch {err:.1e}"


def bm128():
    fn = lambda: launch(128, 128, 64, 8, 3)  # noqa: E731

    def chk():
        fn()
        return check()

    return {"fn": fn, "label": "triton skinny_mm M=16 N=4096 K=16384 BLOCK_M=128 BLOCK_N=128 (32 programs)",
            "check": chk, "bytes": 2 * (K * N + M * K + M * N), "flops": 2 * M * N * K,
            "controls": [("skinny_mm BLOCK_M=16 BLOCK_N=32 BLOCK_K=128 4 warps 4 stages (128 programs)",
                          lambda: launch(16, 32, 128, 4, 4), 2 * K * N),
                         ("skinny_mm BLOCK_M=16 BLOCK_N=16 BLOCK_K=256 4 warps 4 stages (256 programs)",
                          lambda: launch(16, 16, 256, 4, 4), 2 * K * N),
                         ("torch.matmul (cuBLAS)", lambda: torch.matmul(A, B, out=C), 2 * K * N)]}


if __name__ == "__main__":
    sys.exit(main({"bm128": bm128}, sys.argv[1:]))
