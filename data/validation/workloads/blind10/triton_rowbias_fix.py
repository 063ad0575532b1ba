"""Controls for triton_rowbias.py (plain timing only): n_rows / n_cols as tl.constexpr (division by a
constant), and a 2-D grid (one (batch, row) per program_id(0), column blocks on program_id(1))."""

import triton
import triton.language as tl


@triton.jit
def causal_rowbias_cx(x_ptr, bias_ptr, out_ptr, n_elements, n_rows: tl.constexpr, n_cols: tl.constexpr,
                      BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    brow = offs // n_cols
    col = offs % n_cols
    row = brow % n_rows
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    b = tl.load(bias_ptr + brow, mask=mask, other=0.0)
    y = tl.where(col <= row, x.to(tl.float32) + b, 0.0)
    tl.store(out_ptr + offs, y.to(tl.bfloat16), mask=mask)


@triton.jit
def causal_rowbias_2d(x_ptr, bias_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    brow = tl.program_id(0)
    row = brow % n_rows
    col = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = col < n_cols
    x = tl.load(x_ptr + brow * n_cols + col, mask=mask, other=0.0)
    b = tl.load(bias_ptr + brow)
    y = tl.where(col <= row, x.to(tl.float32) + b, 0.0)
    tl.store(out_ptr + brow * n_cols + col, y.to(tl.bfloat16), mask=mask)


def controls(X, BIAS, OUT, check):
    batch, rows, cols = X.shape
    n = X.numel()

    def cx():
        causal_rowbias_cx[(triton.cdiv(n, 1024),)](X, BIAS, OUT, n, rows, cols, BLOCK=1024, num_warps=4)

    def two_d():
        causal_rowbias_2d[(batch * rows, triton.cdiv(cols, 1024))](X, BIAS, OUT, rows, cols, BLOCK=1024,
                                                                    num_warps=4)

    def checked(fn):
        fn()
        check()
        return fn

    nb = 4 * n
    return [("n_rows, n_cols: tl.constexpr (division by constants)", checked(cx), nb),
            ("2-D grid (a program per (batch, row) x 1024 columns, no division)", checked(two_d), nb),
            ("OUT.copy_(X) (the same bytes as a copy)", lambda: OUT.copy_(X), nb)]
