"""Triton vector add with a badly chosen launch: BLOCK = 32 elements and num_warps = 1.

out = x + y over 2^26 FP32 elements (768 MB moved). Each program is one warp handling 32 elements
(one 4-byte element per thread): 2M programs, each living for one load-load-add-store, so an SM
holds at most 32 such blocks (32 warps, half of its 64) with one 128-byte load per warp in flight.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from _common import main


@triton.jit
def add_tiny_block_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


BLOCK, NUM_WARPS = 32, 1


def add(x: torch.Tensor, y: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    add_tiny_block_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK, num_warps=NUM_WARPS)
    return out


def make(argv: list[str]):
    n = 1 << 26
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.empty_like(x)

    def check() -> float:
        return float((add(x, y, out) - (x + y)).abs().max())

    return (lambda: add(x, y, out)), {"label": f"triton add 2^26 fp32, BLOCK={BLOCK}, num_warps={NUM_WARPS}",
                                      "bytes": 3 * n * 4, "check": check, "regex": "add_tiny_block_kernel"}


if __name__ == "__main__":
    main(make)
