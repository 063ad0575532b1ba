"""Triton row softmax over a 32768 x 4096 FP32 matrix (512 MB in, 512 MB out).

One program per row (the Triton tutorial's kernel): the row is loaded once into registers, max,
exp, sum, divide, stored once. Nothing to do but move 1 GB; 8 warps, BLOCK = 4096.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from _common import main


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_row_stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + offs, num / den, mask=mask)


def softmax(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    softmax_kernel[(rows,)](y, x, x.stride(0), y.stride(0), cols, BLOCK=triton.next_power_of_2(cols),
                            num_warps=8)
    return y


def make(argv: list[str]):
    rows, cols = 32768, 4096
    x = torch.randn(rows, cols, device="cuda", dtype=torch.float32)
    y = torch.empty_like(x)

    def check() -> float:
        return float((softmax(x, y) - torch.softmax(x, dim=1)).abs().max())

    return (lambda: softmax(x, y)), {"label": f"triton softmax {rows}x{cols} fp32", "bytes": 2 * x.numel() * 4,
                                     "check": check, "regex": "softmax_kernel"}


if __name__ == "__main__":
    main(make)
