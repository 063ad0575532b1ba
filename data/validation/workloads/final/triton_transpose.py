"""Triton 2-D transpose: y = x.T for an 8192 x 8192 FP32 matrix (268 MB in, 268 MB out).

Each program loads a 64 x 64 tile along x's rows (contiguous) and stores tl.trans(tile) along y's rows;
the change of which dimension is contiguous happens inside the kernel (Triton converts the tile's
register layout through shared memory)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from _tcommon import main


@triton.jit
def transpose_kernel(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tile = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=mask)
    # y is N x M: y[j, i] = x[i, j]
    tl.store(y_ptr + rn[:, None] * M + rm[None, :], tl.trans(tile), mask=tl.trans(mask))


M = N = 8192
BM = BN = 64
torch.manual_seed(0)
x = torch.randn(M, N, device="cuda")
y = torch.empty(N, M, device="cuda")


def fn():
    transpose_kernel[(M // BM, N // BN)](x, y, M, N, BM=BM, BN=BN, num_warps=4)


def check():
    fn()
    assert torch.equal(y, x.t())
    return "y == x.t() exactly"


main(fn, f"triton transpose {M}x{N} fp32 (64x64 tiles)", check, bytes_moved=2 * x.numel() * 4)
